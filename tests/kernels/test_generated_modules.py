"""Generated kernel modules: real files named by the hash of their source, imported once.

The CUDA elementwise kernels are generated this way so that Numba's disk cache
holds them. Without a GPU nothing compiles for CUDA, so the cache test saves a
stand-in entry into a generated kernel's own cache index and checks that a
second process finds it: same file, same index, same source stamp (the
generated file plus the nbtorch modules it imports).
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from nbtorch.kernels import _generated


@pytest.fixture
def gen_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(_generated, "_DIR", [str(tmp_path)])
    return tmp_path


def test_load_writes_a_file_once_and_imports_it_as_a_module(gen_dir):
    source = "VALUE = 41 + 1\n"
    m = _generated.load("probe", source)
    files = sorted(p.name for p in gen_dir.glob("probe_*.py"))
    assert len(files) == 1 and m.VALUE == 42
    assert m.__file__ == str(gen_dir / files[0])
    assert m.__name__ == "nbtorch.kernels._generated." + files[0][:-3]
    mtime = os.stat(m.__file__).st_mtime_ns
    assert _generated.load("probe", source) is m                 # once per process
    fresh = _generated.load("probe", source, fresh=True)          # executed again
    assert fresh is not m and fresh.VALUE == 42 and fresh.__file__ == m.__file__
    assert os.stat(m.__file__).st_mtime_ns == mtime               # never rewritten
    other = _generated.load("probe", "VALUE = 7\n")
    assert other.VALUE == 7 and len(list(gen_dir.glob("probe_*.py"))) == 2


def test_a_damaged_file_is_rewritten(gen_dir):
    m = _generated.load("probe2", "VALUE = 1\n")
    path = m.__file__
    del sys.modules[m.__name__]
    with open(path, "w") as f:
        f.write("VALUE = 666\n")
    assert _generated.load("probe2", "VALUE = 1\n").VALUE == 1


PROGRAM = textwrap.dedent("""
    import json, sys
    from nbtorch.kernels.cuda import gridstride
    k = gridstride._build("gelu", "A", "flat")
    f = k._cache._cache_file
    if sys.argv[1] == "save":
        f.save(("probe-key",), {"machine code": "a stand-in"})
    json.dump({"file": k.py_func.__code__.co_filename, "index": f._index_path,
               "stamp": repr(k._cache._impl.locator.get_source_stamp()),
               "loaded": f.load(("probe-key",))}, sys.stdout)
""")


def _run(mode, cache_dir):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["NUMBA_CACHE_DIR"] = str(cache_dir)
    out = subprocess.run([sys.executable, "-c", PROGRAM, mode], capture_output=True,
                         text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") == "1",
                    reason="the simulator caches nothing")
def test_second_process_finds_a_generated_cuda_kernels_cache_index(tmp_path):
    first = _run("save", tmp_path)
    second = _run("load", tmp_path)
    assert first["file"].startswith(str(tmp_path / "nbtorch_generated"))
    assert first["index"].startswith(str(tmp_path)) and os.path.exists(first["index"])
    assert "nbtorch-dependencies" in first["stamp"]
    assert (second["file"], second["index"], second["stamp"]) == (
        first["file"], first["index"], first["stamp"])
    assert second["loaded"] == {"machine code": "a stand-in"}
