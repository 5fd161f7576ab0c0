"""A cached kernel is recompiled when a body it imports from another file changes.

Numba stamps a kernel's cache index with its own source file only, so a kernel
calling a function from another file loads stale machine code after that
file is edited. `nbtorch.kernels._numba_cache` stamps kernels of tracked
modules with every tracked file they reach. The edit happens in a temporary
package (never in the real tree): `kern.py` holds a cached kernel calling
`body.py`'s function; three fresh processes share one NUMBA_CACHE_DIR.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

PROGRAM = textwrap.dedent("""
    import json, sys
    from nbtorch.kernels import _numba_cache
    _numba_cache.track("probe_pkg")
    from probe_pkg import kern
    value = kern.twice_scaled(1.0)
    stats = kern.twice_scaled.stats
    json.dump({"value": value, "hits": sum(stats.cache_hits.values()),
               "misses": sum(stats.cache_misses.values())}, sys.stdout)
""")

BODY = textwrap.dedent("""
    from numba import njit

    @njit
    def scale(x):
        return x * {factor}
""")

KERNEL = textwrap.dedent("""
    from numba import njit
    from probe_pkg.body import scale

    @njit(cache=True)
    def twice_scaled(x):
        return 2.0 * scale(x)
""")


def _write_package(root, factor):
    pkg = root / "probe_pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "kern.py").write_text(KERNEL)
    (pkg / "body.py").write_text(BODY.format(factor=factor))


def _run(root, cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), NUMBA_DISABLE_JIT="0",
               PYTHONPATH=os.pathsep.join([str(root)] + sys.path))
    out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                         env=env, timeout=300, cwd=root)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def test_editing_an_imported_body_invalidates_the_cached_kernel(tmp_path):
    root, cache = tmp_path / "src", tmp_path / "cache"
    root.mkdir()
    _write_package(root, 3.0)
    first = _run(root, cache)
    second = _run(root, cache)
    assert (first["value"], first["misses"], first["hits"]) == (6.0, 1, 0)
    assert (second["value"], second["misses"], second["hits"]) == (6.0, 0, 1)
    _write_package(root, 5.0)                     # only body.py changes
    third = _run(root, cache)
    assert third["value"] == 10.0, "a stale kernel was loaded from the cache"
    assert (third["misses"], third["hits"]) == (1, 0)


def test_kernel_stamps_cover_the_files_bodies_come_from():
    """The real tree: an elementwise ufunc's body reaches the float32 math it calls, a
    contiguous loop reaches the bodies, that math and the SIMD machinery; an unrelated
    kernel family reaches none of them."""
    from nbtorch.kernels import _numba_cache
    from nbtorch.kernels.cpu import contiguous, ufuncs
    body = {"nbtorch.kernels.scalar", "nbtorch.kernels.f32math"}
    assert body <= _deps("nbtorch.kernels.scalar")
    assert body | {"nbtorch.kernels.cpu.simd"} <= _deps("nbtorch.kernels.cpu.contiguous")
    assert not body & _deps("nbtorch.kernels.cpu.conv")
    stamp = ufuncs.get("exp")._dispatcher.cache._impl.locator.get_source_stamp()
    assert stamp[0] == "nbtorch-dependencies"
    assert stamp[2] == _numba_cache.dependency_stamp("nbtorch.kernels.scalar")
    stamp = contiguous.exp_loop._cache._impl.locator.get_source_stamp()
    assert stamp[2] == _numba_cache.dependency_stamp("nbtorch.kernels.cpu.contiguous")


@pytest.mark.parametrize("name", ["numpy", "probe_unrelated"])
def test_untracked_modules_keep_numbas_own_locator(name):
    from nbtorch.kernels import _numba_cache
    assert not _numba_cache._tracked(name)


def test_cuda_kernels_are_stamped_too():
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        pytest.skip("the simulator caches nothing")
    from nbtorch.kernels.cuda import random
    stamp = random.uniform_kernel._cache._impl.locator.get_source_stamp()
    assert stamp[0] == "nbtorch-dependencies"
    assert "nbtorch.kernels.cuda._launch" in _deps("nbtorch.kernels.cuda.random")


def _deps(name):
    from nbtorch.kernels import _numba_cache
    return _numba_cache.dependencies(name)
