"""Datasets & DataLoaders and Transforms: a custom Dataset with transform and one-hot
target_transform (Lambda + scatter_), iterated by a shuffled DataLoader.

The image files are replaced by synthetic 28x28 images kept in memory (nothing can be downloaded).
"""
from _data import synthetic_images
import nbtorch as torch
from nbtorch.utils.data import Dataset
from nbtorch.utils.data import DataLoader

torch.manual_seed(0)

labels_map = {
    0: "T-Shirt", 1: "Trouser", 2: "Pullover", 3: "Dress", 4: "Coat",
    5: "Sandal", 6: "Shirt", 7: "Sneaker", 8: "Bag", 9: "Ankle Boot",
}


class Lambda:
    """torchvision.transforms.Lambda: apply a user function."""

    def __init__(self, lambd):
        self.lambd = lambd

    def __call__(self, value):
        return self.lambd(value)


class CustomImageDataset(Dataset):
    def __init__(self, images, labels, transform=None, target_transform=None):
        self.img_labels = labels
        self.images = images
        self.transform = transform
        self.target_transform = target_transform

    def __len__(self):
        return len(self.img_labels)

    def __getitem__(self, idx):
        image = torch.from_numpy(self.images[idx])
        label = int(self.img_labels[idx])
        if self.transform:
            image = self.transform(image)
        if self.target_transform:
            label = self.target_transform(label)
        return image, label


images, labels = synthetic_images(200, seed=3)
training_data = CustomImageDataset(
    images, labels,
    transform=Lambda(lambda image: image * 2 - 1),
    target_transform=Lambda(lambda y: torch.zeros(10, dtype=torch.float).scatter_(0, torch.tensor(y), value=1)),
)

for i in range(3):
    sample_idx = torch.randint(len(training_data), size=(1,)).item()
    img, label = training_data[sample_idx]
    print(sample_idx, labels_map[label.argmax().item()], img.squeeze().mean().item())

train_dataloader = DataLoader(training_data, batch_size=64, shuffle=True)

train_features, train_labels = next(iter(train_dataloader))
print(f"Feature batch shape: {train_features.size()}")
print(f"Labels batch shape: {train_labels.size()}")
img = train_features[0].squeeze()
label = train_labels[0]
print(img.shape, img.sum().item(), f"Label: {label}")

for epoch in range(2):
    total, order = 0.0, []
    for features, targets in train_dataloader:
        total += features.sum().item()
        order.append(targets.argmax(1)[:4].tolist())
    print(epoch, round(total, 2), order)
