"""A batch from a worker process to the main process: pickled by value vs shared memory.

The question behind it (issue 19): should DataLoader workers return batches through
shared memory, as PyTorch's do, instead of pickling their bytes? A forked worker makes
fresh batches of one shape (a copy of a source tensor: what collate does) and sends
them through a multiprocessing Queue; the main process unpickles each and reads it.

- ``pickle``: today's DataLoader path (`pickle.dumps` in the worker, bytes through the
  queue's pipe, `pickle.loads`, which copies the values once more);
- ``shm fd``: the batch is made in a new 'file_descriptor' segment (memfd) and sent as
  a handle; the main process receives the descriptor over a Unix socket and maps it;
- ``shm fs``: the same with a named /dev/shm segment ('file_system': no descriptor sent,
  a reference count updated under a lock instead).

Rounds alternate the three methods (same machine load); the table gives the median
and the best milliseconds per batch over the rounds.

    python benchmarks/bench_mp_transfer.py [--rounds 3]
"""
import argparse
import pickle
import statistics
import time

import numpy as np

import nbtorch
import nbtorch.multiprocessing as mp
from nbtorch.multiprocessing._sharing import empty_shared

SHAPES = [(64, 784), (64, 3, 32, 32), (256, 3, 64, 64)]
METHODS = ["pickle", "shm fd", "shm fs"]


def _worker(queue, done, method, shape, count):
    src = nbtorch.randn(*shape)
    if method != "pickle":
        mp.set_sharing_strategy("file_system" if method == "shm fs" else "file_descriptor")
    for _ in range(count + 1):
        if method == "pickle":
            queue.put(pickle.dumps(src.clone(), protocol=pickle.HIGHEST_PROTOCOL))
        else:
            batch = empty_shared(shape, src.dtype)
            batch.copy_(src)
            queue.put(batch)
    queue.put(None)
    done.get(timeout=60)       # stay alive until every descriptor was fetched


def _run(method, shape, count):
    # the parent picks the strategy too: 'file_system' needs the resource tracker that
    # the parent starts to be shared with its children
    mp.set_sharing_strategy("file_system" if method == "shm fs" else "file_descriptor")
    ctx = mp.get_context("fork")
    results, done = ctx.Queue(maxsize=4), ctx.Queue()
    process = ctx.Process(target=_worker, args=(results, done, method, shape, count), daemon=True)
    process.start()
    results.get(timeout=60)                       # the first batch: start-up, not timed
    start, total = time.perf_counter(), 0.0
    while True:
        item = results.get(timeout=60)
        if item is None:
            break
        batch = pickle.loads(item) if method == "pickle" else item
        total += float(batch._array.reshape(-1)[::256].sum())   # touch every page
    per_batch = (time.perf_counter() - start) / count
    done.put(True)
    process.join(10)
    return per_batch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"{'batch shape':>18} {'MB':>6}  " + "  ".join(f"{m:>17}" for m in METHODS))
    for shape in SHAPES:
        megabytes = np.prod(shape) * 4 / 1e6
        count = 200 if megabytes < 1 else 30
        times = {m: [] for m in METHODS}
        for _ in range(args.rounds):
            for method in METHODS:
                times[method].append(_run(method, shape, count) * 1e3)
        cells = [f"{statistics.median(times[m]):7.2f} ({min(times[m]):6.2f})" for m in METHODS]
        print(f"{str(shape):>18} {megabytes:6.2f}  " + "  ".join(cells))
    print("ms per batch: median (best) over rounds")


if __name__ == "__main__":
    main()
