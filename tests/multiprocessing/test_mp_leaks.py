"""A child killed while holding shared memory leaks nothing once the parent exits."""
import json
import os
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="needs /dev/shm (Linux)")
def test_killed_child_leaks_no_segment():
    result = subprocess.run([sys.executable, os.path.join(HERE, "_mp_leak_script.py")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["exitcode"] == -9
    assert report["values"] == [[5.0, 3.0], [4.0, 4.0], 1.0, 1.0]
    prefixes = tuple(f"nbtorch_{report[who]}_" for who in ("parent", "child"))
    # file_system segments exist while running (one each); file_descriptor ones never do
    assert len([n for n in report["shm_while_running"] if n.startswith(prefixes)]) == 2
    deadline = time.monotonic() + 20   # the resource tracker exits after the parent
    while True:
        left = [n for n in os.listdir("/dev/shm") if n.startswith(prefixes)]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert left == []
