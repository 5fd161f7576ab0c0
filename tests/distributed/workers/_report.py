"""Run check functions on this rank and write one line per check ("[rank] PASS name" or
"[rank] FAIL name: traceback") to $NBTORCH_TEST_REPORT.<rank> (stdout when unset)."""
import os
import sys
import traceback

import nbtorch.distributed as dist


def run_checks(checks, barrier=True):
    r = dist.get_rank()
    path = os.environ.get("NBTORCH_TEST_REPORT")
    out = open(f"{path}.{r}", "w") if path else sys.stdout
    try:
        for fn in checks:
            try:
                fn()
                out.write(f"[{r}] PASS {fn.__name__}\n")
            except Exception:              # noqa: BLE001 - reported to the test
                msg = traceback.format_exc().replace("\n", " | ")
                out.write(f"[{r}] FAIL {fn.__name__}: {msg}\n")
            out.flush()
            if barrier:
                dist.barrier()
    finally:
        if out is not sys.stdout:
            out.close()
