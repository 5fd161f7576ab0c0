"""CUDA elementwise kernels are generated once into real modules that a second process reuses.

Two fresh processes share one NUMBA_CACHE_DIR and run a few elementwise ops on
CUDA. On the simulator: the first writes one module per kernel (a module-level
``cuda.jit(cache=True)`` function) under ``$NUMBA_CACHE_DIR/nbtorch_generated``;
the second imports the same files and writes none. On a GPU (``gpu`` marker):
the second process compiles nothing, every kernel comes from Numba's cache.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.cuda

PROGRAM = textwrap.dedent("""
    import json, sys
    import nbtorch
    from nbtorch.kernels.cuda import gridstride
    x = nbtorch.linspace(-2, 2, 12, device="cuda").reshape(3, 4)
    y = (x + 1.5) * x.exp() - nbtorch.nn.functional.gelu(x)
    z = nbtorch.where(y > 0, y, 0.0).t().contiguous()          # where, copy (strided)
    total = float(z.sum())
    kernels = gridstride.compiled_kernels()
    files = sorted({k.py_func.__code__.co_filename for k in kernels.values()})
    stats = {}
    for key, k in kernels.items():
        s = getattr(k, "stats", None)
        if s is not None:
            stats["/".join(key)] = [sum(s.cache_hits.values()), sum(s.cache_misses.values())]
    json.dump({"files": files, "total": total, "stats": stats,
               "kernels": sorted("/".join(key) for key in kernels)}, sys.stdout)
""")


def _run(cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                         env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    cache = tmp_path_factory.mktemp("numba_cache")
    first = _run(cache)
    written = {p: os.stat(p).st_mtime_ns for p in first["files"]}
    second = _run(cache)
    return cache, first, second, written


def test_each_kernel_is_a_cached_module_level_function_in_a_generated_file(two_runs):
    cache, first, _, _ = two_runs
    assert {"add", "mul", "exp", "gelu", "where", "copy"} <= {
        k.split("/")[0] for k in first["kernels"]}
    assert len(first["files"]) == len(first["kernels"])
    for path in first["files"]:
        assert path.startswith(str(cache / "nbtorch_generated"))
        text = open(path).read()
        assert "@cuda.jit(cache=True)\ndef " in text and "exec(" not in text


def test_second_process_reuses_the_generated_modules(two_runs):
    cache, first, second, written = two_runs
    assert second["files"] == first["files"] and second["total"] == first["total"]
    assert {p: os.stat(p).st_mtime_ns for p in second["files"]} == written   # not rewritten
    on_disk = sorted(str(p) for p in (cache / "nbtorch_generated").glob("*.py"))
    assert on_disk == first["files"]                           # nothing new generated


@pytest.mark.gpu
def test_second_process_compiles_no_elementwise_kernel(two_runs):
    _, first, second, _ = two_runs
    assert any(miss for _, miss in first["stats"].values()), "the first run found a warm cache"
    assert second["stats"] and set(second["stats"]) == set(first["stats"])
    again = {k: v for k, v in second["stats"].items() if v[1] or not v[0]}
    assert not again, f"kernels compiled again in the second process: {again}"
