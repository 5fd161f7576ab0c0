"""`is_scripting()`'s state, apart so that asking it imports nothing else."""
import threading

STATE = threading.local()           # .depth: scripts being traced in this thread


def is_scripting():
    """True while `nbtorch.jit.script` traces the code (in this thread), as in PyTorch."""
    return getattr(STATE, "depth", 0) > 0
