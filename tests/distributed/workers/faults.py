"""Run under mpiexec (2 ranks) with one mode: how a job fails.

raise:    rank 1 raises before a collective rank 0 waits in -> the job aborts at once
timeout:  rank 1 never joins an all_reduce -> rank 0 raises DistBackendError after 1 s
kill:     rank 1 is killed by SIGKILL -> the job ends, no rank left behind
"""
import datetime
import os
import signal
import sys
import time

import nbtorch
import nbtorch.distributed as dist


def main(mode):
    dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=1))
    r = dist.get_rank()
    print(f"rank {r} pid {os.getpid()}", flush=True)
    if mode == "raise":
        if r == 1:
            raise ValueError("rank 1 breaks on purpose")
        dist.all_reduce(nbtorch.ones(3))
        time.sleep(60)                  # never reached: the job is aborted first
    elif mode == "timeout":
        if r == 1:
            time.sleep(60)              # killed when rank 0 aborts the job
        try:
            dist.all_reduce(nbtorch.ones(3))
        except dist.DistBackendError as e:
            print(f"rank {r} got: {e}", flush=True)
            return 3
    elif mode == "kill":
        if r == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        dist.barrier()
        time.sleep(60)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
