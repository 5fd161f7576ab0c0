"""60-minute blitz, A Gentle Introduction to torch.autograd (the part without a pretrained model)."""
import nbtorch as torch

a = torch.tensor([2., 3.], requires_grad=True)
b = torch.tensor([6., 4.], requires_grad=True)

Q = 3 * a ** 3 - b ** 2

external_grad = torch.tensor([1., 1.])
Q.backward(gradient=external_grad)

# check that the collected gradients are correct
print(9 * a ** 2 == a.grad)
print(-2 * b == b.grad)
print(a.grad, b.grad)

x = torch.rand(5, 5)
y = torch.rand(5, 5)
z = torch.rand((5, 5), requires_grad=True)

a = x + y
print(f"Does `a` require gradients?: {a.requires_grad}")
b = x + z
print(f"Does `b` require gradients?: {b.requires_grad}")

# Frozen parameters: only a new classifier head is trained
from nbtorch import nn, optim

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
for param in model.parameters():
    param.requires_grad = False
model[2] = nn.Linear(32, 10)
optimizer = optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)

data = torch.rand(4, 16)
labels = torch.rand(4, 10)
for step in range(3):
    prediction = model(data)
    loss = (prediction - labels).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss.item())
print(model[0].weight.grad is None, model[2].weight.grad.shape)
print(model[2].weight.sum().item(), model[2].bias.sum().item())
