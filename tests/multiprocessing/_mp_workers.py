"""Functions the multiprocessing tests run in child processes (importable by name)."""
import os
import signal
import sys

import nbtorch
import nbtorch.nn.functional as F

TIMEOUT = 30.0   # seconds any child waits for anything; a bug fails, never hangs


def join_with_deadline(context, timeout=TIMEOUT):
    """Join a ProcessContext (ours or PyTorch's) or kill its processes and fail.

    Failures of the children are raised by ``context.join`` as usual.
    """
    for _ in range(int(timeout / 0.25)):
        if context.join(timeout=0.25):
            return
    for p in context.processes:
        p.kill()
    raise AssertionError(f"processes did not finish within {timeout} s")


def hogwild_train(rank, model, x, y, counts, steps):
    """Hogwild: SGD on the shared model with no lock; count steps in a shared view."""
    nbtorch.manual_seed(rank)
    opt = nbtorch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(steps):
        idx = nbtorch.randint(0, x.shape[0], (16,))
        opt.zero_grad()
        F.mse_loss(model(x[idx]), y[idx]).backward()
        opt.step()
        counts[rank] += 1
    assert model.weight.is_shared() and counts.is_shared()


def queue_child(inbox, outbox, strategy):
    """Receive shared tensors, write through a view, send a tensor of our own back."""
    import nbtorch.multiprocessing as mp
    t, v, plain = inbox.get(timeout=TIMEOUT)
    report = {"same_storage": v._storage is t._storage, "view": (v.storage_offset(), v.stride(),
              tuple(v.shape)), "shared": (t.is_shared(), v.is_shared(), plain.is_shared())}
    v.fill_(7.0)            # the parent must see this
    plain.fill_(-1.0)       # ... and not this (sent by value)
    mp.set_sharing_strategy(strategy)
    mine = nbtorch.zeros(3, dtype=nbtorch.int64).share_memory_()
    outbox.put((report, mine, mine[1:]))
    command = inbox.get(timeout=TIMEOUT)           # the parent wrote into `mine`
    outbox.put(("seen", mine.tolist(), command))


def raise_in(rank, bad_rank):
    if rank == bad_rank:
        raise ValueError(f"boom in {rank}")
    signal.pause() if hasattr(signal, "pause") else None


def exit_with(rank, code):
    sys.exit(code)


def kill_self(rank):
    os.kill(os.getpid(), signal.SIGKILL)


def wait_then_return(rank, event):
    event.wait(TIMEOUT)
