"""Execute every tutorial in notebooks/ top to bottom; a cell error fails the test.

Each notebook runs in a fresh kernel started with this interpreter (the venv's
python), through a kernelspec written to a temporary JUPYTER_PATH, so no global
Jupyter configuration is needed or consulted. Plots use the Agg backend.
Committed notebooks must carry no outputs (outputs stay out of the repository).
"""
import json
import os
import pathlib
import re
import signal
import sys

import pytest

NOTEBOOK_DIR = pathlib.Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
KERNEL_NAME = "nbtorch-tests"
# Timeouts catch hangs; they never bound a normal run. Measured with a cold Numba cache, each
# notebook in a fresh kernel pinned to one core of a 2-core machine while other work kept
# its load average near 4 (`taskset -c 0`, nbclient's cell timing): slowest cell 20 s (03's
# training loop), slowest notebook 27 s (05). The limits are 30x and 40x that.
TIMEOUT_PER_CELL_S = 600
TIMEOUT_PER_NOTEBOOK_S = 1200

# Notebooks that may not run here, with the reason (kept empty when all run).
SKIP = {}
# A notebook failing only because an op still lacks a CUDA kernel is an expected failure
# (the CUDA device is growing op by op); any other error fails the test.
MISSING_CUDA_KERNEL = "has no cuda kernel"


def test_notebooks_found():
    assert NOTEBOOKS, f"no notebooks in {NOTEBOOK_DIR}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_without_outputs(path):
    """Outputs are stripped before committing: they bloat diffs and go stale."""
    nb = json.loads(path.read_text())
    dirty = [i for i, cell in enumerate(nb["cells"]) if cell["cell_type"] == "code"
             and (cell.get("outputs") or cell.get("execution_count") is not None)]
    assert not dirty, (f"{path.name}: cells {dirty} carry outputs; strip them "
                       f"(e.g. jupyter nbconvert --clear-output --inplace {path.name})")


@pytest.fixture(scope="module")
def kernel_env(tmp_path_factory):
    """A private kernelspec for this interpreter, an empty IPython profile, Agg plots."""
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("matplotlib")
    root = tmp_path_factory.mktemp("jupyter")
    spec_dir = root / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "nbtorch tests", "language": "python"}
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    env = {"JUPYTER_PATH": str(root), "JUPYTER_CONFIG_DIR": str(root / "config"),
           "JUPYTER_RUNTIME_DIR": str(root / "runtime"), "JUPYTER_PLATFORM_DIRS": "1",
           "IPYTHONDIR": str(root / "ipython"), "MPLBACKEND": "Agg",
           "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    saved = {k: os.environ.get(k) for k in (*env, "NUMBA_ENABLE_CUDASIM")}
    os.environ.update(env)
    os.environ.pop("NUMBA_ENABLE_CUDASIM", None)   # each notebook picks GPU or simulator itself
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, kernel_env):
    if path.stem in SKIP:
        pytest.skip(SKIP[path.stem])
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name=KERNEL_NAME, timeout=TIMEOUT_PER_CELL_S,
                            startup_timeout=300,
                            resources={"metadata": {"path": str(NOTEBOOK_DIR)}})

    def out_of_time(signum, frame):
        raise TimeoutError(f"{path.name} ran past {TIMEOUT_PER_NOTEBOOK_S} s")

    previous = signal.signal(signal.SIGALRM, out_of_time)
    signal.alarm(TIMEOUT_PER_NOTEBOOK_S)
    try:
        client.execute()      # raises CellExecutionError naming the failing cell
    except CellExecutionError as err:
        if MISSING_CUDA_KERNEL in str(err):
            text = re.sub(r"\x1b\[[0-9;]*m", "", str(err))          # drop terminal colours
            line = [l for l in text.splitlines() if MISSING_CUDA_KERNEL in l][-1]   # the error
            pytest.xfail(f"{path.name} needs a CUDA kernel nbtorch lacks: {line.strip()}")
        raise
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
