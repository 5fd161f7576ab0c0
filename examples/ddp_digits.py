"""Train the demo's Digits CNN with DistributedDataParallel on N processes (MPI ranks).

Plain PyTorch DDP code run by nbtorch: each rank reads its share of the data through a
DistributedSampler, DDP averages the gradients over the ranks during backward, so with a
global batch of 32 (32 / N per rank) every rank takes the step one process would take on
the whole batch. Rank 0 prints the loss, the test accuracy and the time per epoch; at the
end the ranks check that their replicas are still identical.

Usage (the distributed extra installs mpi4py and mpich, whose mpiexec is in .venv/bin):
    python -m nbtorch.distributed.run --nproc-per-node 2 examples/ddp_digits.py [--epochs N]
    mpiexec -n 2 python examples/ddp_digits.py            # the same, started by MPI directly
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import nbtorch as torch  # noqa: E402
import nbtorch.distributed as dist  # noqa: E402
import nbtorch.nn.functional as F  # noqa: E402
from demo import DigitsCNN  # noqa: E402
from nbtorch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from nbtorch.utils.data import DataLoader, DistributedSampler, Subset  # noqa: E402
from nbtorch.vision.datasets import Digits  # noqa: E402


def evaluate(model, test_set, rank, world):
    """Accuracy on the whole test set: each rank scores every world-th image."""
    model.eval()
    shard = Subset(test_set, range(rank, len(test_set), world))
    counts = torch.zeros(2, dtype=torch.float64)
    with torch.no_grad():
        for images, labels in DataLoader(shard, batch_size=256):
            counts[0] += (model(images).argmax(1) == labels).sum().item()
            counts[1] += labels.shape[0]
    dist.all_reduce(counts)
    return (counts[0] / counts[1]).item()


def train_epoch(model, loader, optimizer):
    """One pass over this rank's share; returns (mean loss over all ranks, seconds/step)."""
    model.train()
    totals = torch.zeros(2, dtype=torch.float64)
    start = time.perf_counter()
    for images, labels in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        totals[0] += loss.item() * labels.shape[0]
        totals[1] += labels.shape[0]
    step = (time.perf_counter() - start) / max(1, len(loader))
    dist.all_reduce(totals)
    return (totals[0] / totals[1]).item(), step


def replicas_identical(model):
    """True when every rank holds the same parameters (DDP keeps them in step)."""
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    lo, hi = flat.clone(), flat.clone()
    dist.all_reduce(lo, dist.ReduceOp.MIN)
    dist.all_reduce(hi, dist.ReduceOp.MAX)
    return bool((lo == hi).all())


def main(epochs=5, batch_size=32, seed=0):
    dist.init_process_group("gloo")                 # runs on MPI
    rank, world = dist.get_rank(), dist.get_world_size()
    if batch_size % world:
        raise ValueError(f"--batch-size {batch_size} must be a multiple of the {world} ranks")
    torch.manual_seed(seed + rank)                  # DDP broadcasts rank 0's weights anyway
    train_set, test_set = Digits(train=True), Digits(train=False)
    sampler = DistributedSampler(train_set, shuffle=True, seed=seed)
    loader = DataLoader(train_set, batch_size=batch_size // world, sampler=sampler)
    model = DDP(DigitsCNN())
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    if rank == 0:
        print(f"{world} rank(s), global batch {batch_size} ({batch_size // world} per rank), "
              f"{len(loader)} steps per epoch")
    accuracy = 0.0
    for epoch in range(1, epochs + 1):
        sampler.set_epoch(epoch)                    # a new shuffle each epoch
        t0 = time.perf_counter()
        loss, step = train_epoch(model, loader, optimizer)
        scheduler.step()
        accuracy = evaluate(model, test_set, rank, world)
        if rank == 0:
            print(f"epoch {epoch}/{epochs}: train loss {loss:.4f}  test accuracy "
                  f"{100 * accuracy:.2f}%  ({time.perf_counter() - t0:.2f} s, "
                  f"{1000 * step:.1f} ms/step)")
    same = replicas_identical(model.module)
    if rank == 0:
        print(f"replicas identical on all ranks: {same}")
    dist.destroy_process_group()
    return accuracy, same


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=32, help="global batch (all ranks)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


if __name__ == "__main__":
    args = parse_args()
    acc, same = main(args.epochs, args.batch_size, args.seed)
    sys.exit(0 if same else 1)
