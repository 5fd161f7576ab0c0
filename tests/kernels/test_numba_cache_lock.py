"""Two processes saving to one Numba cache index must not cross their entries.

Numba's save is read index -> pick a free data file -> write index -> write
data; two writers that read the index before either wrote it pick the same
data file, and one signature's entry then names the other's machine code.
`nbtorch.kernels._numba_cache` serialises the save with a file lock. Threads
stand in for processes here: each save opens the lock file itself, and flock
excludes two open file descriptions even within one process.
"""
import threading
import time

import pytest
from numba.core import caching

import nbtorch.kernels  # noqa: F401  (installs the lock)


def _race(tmp_path, monkeypatch, save):
    """Two writers whose index reads overlap unless the save is serialised."""
    load_index = caching.IndexDataCacheFile._load_index

    def slow_load_index(self):
        overloads = load_index(self)
        time.sleep(0.2)                   # both writers hold a stale view of the index
        return overloads

    monkeypatch.setattr(caching.IndexDataCacheFile, "_load_index", slow_load_index)
    files = [caching.IndexDataCacheFile(str(tmp_path), "kernel", "stamp") for _ in range(2)]
    threads = [threading.Thread(target=save, args=(f, key, f"code for {key}"))
               for f, key in zip(files, ("float32", "float64"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    monkeypatch.setattr(caching.IndexDataCacheFile, "_load_index", load_index)
    return files[0]


def test_locked_save_keeps_each_signature_with_its_own_code(tmp_path, monkeypatch):
    f = _race(tmp_path, monkeypatch, caching.IndexDataCacheFile.save)
    assert f.load("float32") == "code for float32"
    assert f.load("float64") == "code for float64"


def test_unlocked_save_crosses_entries(tmp_path, monkeypatch):
    """The race the lock exists for (Numba's own save, unwrapped)."""
    unlocked = getattr(caching.IndexDataCacheFile.save, "__wrapped__", None)
    if unlocked is None:
        pytest.skip("no fcntl: the lock is not installed on this platform")
    f = _race(tmp_path, monkeypatch, unlocked)
    found = {k: f.load(k) for k in ("float32", "float64")}
    assert found != {"float32": "code for float32", "float64": "code for float64"}
