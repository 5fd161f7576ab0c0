"""The ``make demo`` script: train a small CNN on the bundled 8x8 Digits, checkpoint, reload.

Plain PyTorch code run by nbtorch: a DataLoader with tqdm progress bars, a two-conv CNN
trained with Adam and a cosine learning-rate schedule, per-epoch train loss / test accuracy /
time, then a checkpoint (``nbtorch.save``) reloaded into a fresh model whose accuracy must match.

Usage:
    python examples/demo.py [--epochs N] [--seed S] [--device cpu|cuda] [--checkpoint PATH]
"""
import argparse
import os
import sys
import tempfile
import time

T_START = time.perf_counter()

import nbtorch as torch  # noqa: E402
import nbtorch.nn as nn  # noqa: E402
import nbtorch.nn.functional as F  # noqa: E402
import nbtorch.optim as optim  # noqa: E402
from nbtorch.utils.data import DataLoader  # noqa: E402
from nbtorch.vision.datasets import Digits  # noqa: E402
from tqdm import tqdm  # noqa: E402

IMPORT_SECONDS = time.perf_counter() - T_START


class DigitsCNN(nn.Module):
    """Conv(1->16)-ReLU-MaxPool-Conv(16->32)-ReLU-Flatten-Linear(512->10): 9,930 parameters."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))   # N x 16 x 4 x 4
        x = F.relu(self.conv2(x))              # N x 32 x 4 x 4
        return self.fc(torch.flatten(x, 1))    # N x 10


def cuda_available():
    """True when a CUDA GPU is usable (``torch.cuda.is_available()``, else Numba's own check)."""
    cuda = getattr(torch, "cuda", None)
    if cuda is not None:
        return cuda.is_available()
    from numba import cuda as numba_cuda
    return numba_cuda.is_available()


def pick_device(name):
    """Return ``torch.device(name)``; exit with a clear message if CUDA is asked for but absent."""
    if name == "cuda":
        if not cuda_available():
            sys.exit("demo: --device cuda was requested but no CUDA GPU is available "
                     "(numba.cuda could not find a device); run without --device or with "
                     "--device cpu.")
    return torch.device(name)


def evaluate(model, loader, device):
    """Fraction of correctly classified samples of ``loader``."""
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            correct += (model(images).argmax(1) == labels).sum().item()
            total += labels.shape[0]
    return correct / total


def train_epoch(model, loader, optimizer, device, epoch, epochs, quiet):
    """One pass over ``loader``; returns the mean training loss."""
    model.train()
    loss_sum, count = 0.0, 0
    bar = tqdm(loader, desc=f"epoch {epoch}/{epochs}", leave=False, disable=quiet)
    for images, labels in bar:
        images, labels = images.to(device), labels.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        loss_value = loss.item()
        loss_sum += loss_value * labels.shape[0]
        count += labels.shape[0]
        bar.set_postfix(loss=f"{loss_value:.3f}", refresh=False)
    return loss_sum / count


def save_and_reload(model, optimizer, epoch, path, device):
    """Checkpoint model + optimizer + epoch to ``path``, then load it into a fresh model."""
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "epoch": epoch}, path)
    checkpoint = torch.load(path, map_location=device)
    fresh = DigitsCNN().to(device)
    fresh.load_state_dict(checkpoint["model"])
    fresh_optimizer = optim.Adam(fresh.parameters(), lr=1e-2)
    fresh_optimizer.load_state_dict(checkpoint["optimizer"])
    return fresh, checkpoint["epoch"]


def main(epochs=10, seed=0, device="cpu", checkpoint=None, batch_size=32, quiet=False):
    """Train, checkpoint and reload; return a dict of the figures the demo prints."""
    t0 = time.perf_counter()
    device = pick_device(device)
    torch.manual_seed(seed)
    train_set, test_set = Digits(train=True), Digits(train=False)
    generator = torch.Generator().manual_seed(seed)
    train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, generator=generator)
    test_loader = DataLoader(test_set, batch_size=256)
    model = DigitsCNN().to(device)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    print(f"Digits: {len(train_set)} train / {len(test_set)} test images of 1x8x8, "
          f"device {device}, {sum(p.numel() for p in model.parameters())} parameters")

    epoch_seconds, accuracy, loss = [], 0.0, float("nan")
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        loss = train_epoch(model, train_loader, optimizer, device, epoch, epochs, quiet)
        scheduler.step()
        accuracy = evaluate(model, test_loader, device)
        epoch_seconds.append(time.perf_counter() - start)
        print(f"epoch {epoch:2d}/{epochs}: train loss {loss:.4f}  test accuracy "
              f"{100 * accuracy:.2f}%  ({epoch_seconds[-1]:.2f} s)")

    with tempfile.TemporaryDirectory() as tmp:
        path = checkpoint or os.path.join(tmp, "digits_cnn.pt")
        fresh, saved_epoch = save_and_reload(model, optimizer, epochs, path, device)
        reloaded = evaluate(fresh, test_loader, device)
    matches = reloaded == accuracy
    print(f"checkpoint {'at ' + path if checkpoint else '(temporary file)'}: epoch {saved_epoch}, "
          f"reloaded test accuracy {100 * reloaded:.2f}% "
          f"({'matches' if matches else 'DOES NOT MATCH'})")

    total = time.perf_counter() - t0
    rest = epoch_seconds[1:]
    first_vs_rest = f"first epoch {epoch_seconds[0]:.2f} s (includes Numba compilation/cache load)"
    if rest:
        first_vs_rest += f", later epochs {sum(rest) / len(rest):.2f} s on average"
    print(f"total {total:.2f} s (+ {IMPORT_SECONDS:.2f} s to import nbtorch); {first_vs_rest}")
    return {"accuracy": accuracy, "reloaded_accuracy": reloaded, "matches": matches,
            "loss": loss, "epoch_seconds": epoch_seconds, "total_seconds": total}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10, help="training epochs (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                        help="where to train (default cpu)")
    parser.add_argument("--checkpoint", default=None,
                        help="where to save the checkpoint (default: a temporary file)")
    parser.add_argument("--batch-size", type=int, default=32, help="training batch size")
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = parse_args()
    result = main(args.epochs, args.seed, args.device, args.checkpoint, args.batch_size)
    sys.exit(0 if result["matches"] else 1)
