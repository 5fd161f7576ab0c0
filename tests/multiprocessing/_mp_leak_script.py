"""Run as a script by test_mp_leaks: a child dies (SIGKILL) holding shared memory.

The parent shares tensors with both strategies, forks a child that shares tensors of
its own (one of each strategy), sends them over a queue and is killed while the
parent holds them. The parent prints what it saw and exits normally; the test then
checks that /dev/shm holds nothing of either process.
"""
import json
import os
import signal
import sys

import nbtorch
import nbtorch.multiprocessing as mp

TIMEOUT = 30.0


def child(queue, received):
    mp.set_sharing_strategy("file_system")
    by_name = nbtorch.full((1000,), 3.0).share_memory_()
    mp.set_sharing_strategy("file_descriptor")
    by_fd = nbtorch.full((1000,), 4.0).share_memory_()
    queue.put((os.getpid(), by_name, by_fd))
    received.wait(TIMEOUT)              # the parent has mapped both
    os.kill(os.getpid(), signal.SIGKILL)


def main():
    mp.set_sharing_strategy("file_system")        # starts the resource tracker
    mine_by_name = nbtorch.ones(1000).share_memory_()
    mp.set_sharing_strategy("file_descriptor")
    mine_by_fd = nbtorch.ones(1000).share_memory_()
    ctx = mp.get_context("fork")
    queue, received = ctx.Queue(), ctx.Event()
    process = ctx.Process(target=child, args=(queue, received))
    process.start()
    child_pid, by_name, by_fd = queue.get(timeout=TIMEOUT)
    received.set()
    process.join(TIMEOUT)
    by_name[0] = 5.0                              # still mapped after the child died
    shm = sorted(n for n in os.listdir("/dev/shm") if n.startswith("nbtorch_"))
    json.dump({"parent": os.getpid(), "child": child_pid, "exitcode": process.exitcode,
               "values": [by_name[:2].tolist(), by_fd[:2].tolist(),
                          mine_by_name[0].item(), mine_by_fd[0].item()],
               "shm_while_running": shm}, sys.stdout)


if __name__ == "__main__":
    main()
