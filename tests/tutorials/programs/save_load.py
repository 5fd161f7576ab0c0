"""Saving and loading models: state_dict, a general checkpoint with the optimizer, resuming training."""
import os
import tempfile

import nbtorch as torch
import nbtorch.nn as nn
import nbtorch.nn.functional as F
import nbtorch.optim as optim

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 5 * 5)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


net = Net()
optimizer = optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
criterion = nn.CrossEntropyLoss()

print("Optimizer's state_dict:")
for var_name in optimizer.state_dict():
    print(var_name, "\t", optimizer.state_dict()[var_name])

# A few steps on random CIFAR-sized images, so the optimizer has momentum buffers
inputs = torch.randn(8, 3, 32, 32)
labels = torch.randint(0, 10, (8,))
for step in range(3):
    optimizer.zero_grad()
    loss = criterion(net(inputs), labels)
    loss.backward()
    optimizer.step()
    print(step, loss.item())

print("Optimizer's state after the steps:", sorted(optimizer.state_dict()['state'][0]))
print("Model's state_dict:")
for param_tensor in net.state_dict():
    print(param_tensor, "\t", net.state_dict()[param_tensor].size())


folder = tempfile.mkdtemp()

# Save/load the state_dict for inference
PATH = os.path.join(folder, "model_weights.pth")
torch.save(net.state_dict(), PATH)
model = Net()
model.load_state_dict(torch.load(PATH, weights_only=True))
model.eval()
print(torch.equal(model(inputs), net(inputs)))

# A general checkpoint for inference and/or resuming training
PATH = os.path.join(folder, "model.pt")
EPOCH = 5
LOSS = loss.item()
torch.save({
    'epoch': EPOCH,
    'model_state_dict': net.state_dict(),
    'optimizer_state_dict': optimizer.state_dict(),
    'loss': LOSS,
}, PATH)

model = Net()
optimizer = optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
checkpoint = torch.load(PATH, weights_only=True)
model.load_state_dict(checkpoint['model_state_dict'])
optimizer.load_state_dict(checkpoint['optimizer_state_dict'])
epoch = checkpoint['epoch']
loss = checkpoint['loss']
print(epoch, loss)

model.train()
for step in range(3):
    optimizer.zero_grad()
    loss = criterion(model(inputs), labels)
    loss.backward()
    optimizer.step()
    print(step, loss.item())

# Several models in one file, and warmstarting a model with a partial state_dict
PATH = os.path.join(folder, "two.pt")
netA, netB = Net(), Net()
torch.save({'modelA_state_dict': netA.state_dict(), 'modelB_state_dict': netB.state_dict()}, PATH)
checkpoint = torch.load(PATH, weights_only=True)
netB.load_state_dict(checkpoint['modelA_state_dict'])
print(torch.equal(netA.fc3.weight, netB.fc3.weight))


class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.head = nn.Linear(6, 2)


small = SmallNet()
result = small.load_state_dict(netA.state_dict(), strict=False)
print(sorted(result.missing_keys), len(result.unexpected_keys))
print(torch.equal(small.conv1.weight, netA.conv1.weight))
