"""tensorboard is an optional extra: nbtorch imports without it, and importing
nbtorch.utils.tensorboard then fails with PyTorch's ImportError."""
import os
import subprocess
import sys

_PROGRAM = """
import sys
sys.modules["tensorboard"] = None           # as if it were not installed
import nbtorch, nbtorch.utils
assert "nbtorch.utils.tensorboard" not in sys.modules
try:
    from nbtorch.utils.tensorboard import SummaryWriter
except ImportError as err:
    print("ImportError:", err)
    print("notes:", getattr(err, "__notes__", []))
"""


def test_import_without_tensorboard():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", _PROGRAM], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == ("ImportError: TensorBoard logging requires TensorBoard version 1.15 "
                        "or above")
    if sys.version_info >= (3, 11):
        assert "nbtorch[tensorboard]" in lines[1]
