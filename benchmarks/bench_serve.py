"""Load test of nbtorch.serve on loopback (issue 14 part 5): the demo's CNN exported to
ONNX, run on nbtorch's kernels (``--runtime nbtorch``: nbtorch.onnx.load) and on
onnxruntime, by the same server in its own process.

For each model and for dynamic batching on and off: requests/s and p50/p99 latency at
concurrency 1, 8 and 64 (bounded by --requests per point and --seconds per point),
then a robustness round: --robust requests of which 10% are malformed (bad JSON, wrong
shape, wrong type, unknown model, oversized), counting crashes, every malformed one's
status, and the server's RSS before and after.

    python benchmarks/bench_serve.py [--requests 400] [--seconds 10] [--robust 10000]

Measured on the project's 2-core machine (shared with other work, load ~3; the Python
client threads share the two cores with the server, so the client often limits the
rate), --requests 1000, 2 inference threads, --max-delay-ms 2:

    runtime     batching  conc   req/s  p50 ms  p99 ms
    nbtorch     on           1     671    1.18    5.74
    nbtorch     on           8    1135    7.06   13.44
    nbtorch     on          64    1737   24.12  224.20
    nbtorch     off          1    1007    0.96    1.17
    nbtorch     off          8    1492    4.84   10.94
    nbtorch     off         64    1502   37.73   79.09
    onnxruntime on           1    1139    0.61    4.55
    onnxruntime on           8    1425    5.08   16.31
    onnxruntime on          64    2302   19.42   72.79
    onnxruntime off          1    1333    0.54    5.79
    onnxruntime off          8    2252    3.03    7.55
    onnxruntime off         64    2370   20.79   50.15
    robustness: 10000 requests in 5.3 s, 1000 malformed (400: 600, 404: 200, 413: 200)
    all answered 4xx, 9000/9000 good answered 200, no connection errors, server alive,
    RSS 223 MB -> 223 MB
"""
import argparse
import collections
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _model(tmp):
    """The demo CNN (fixed seed) exported to ONNX with a dynamic batch axis."""
    sys.path.insert(0, str(ROOT / "examples"))
    import nbtorch as torch
    import demo
    torch.manual_seed(0)
    net = demo.DigitsCNN().eval()
    x = torch.randn(1, 1, 8, 8)
    path = os.path.join(tmp, "cnn.onnx")
    torch.onnx.export(net, x, path, input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    return path


class ServerProcess:
    def __init__(self, path, runtime, batch, threads=2):
        self.port = _free_port()
        args = [sys.executable, "-m", "nbtorch.serve", f"cnn={path}", "--port", str(self.port),
                "--runtime", runtime, "--max-batch-size", str(batch), "--max-delay-ms", "2",
                "--threads", str(threads), "--log-level", "warning",
                "--max-body-bytes", "65536"]
        self.proc = subprocess.Popen(args, cwd=str(ROOT))
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                if self.get("/ready")[0] == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("server did not start")

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()

    def rss_mb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def _load(port, bodies, concurrency, seconds):
    """Send `bodies` with `concurrency` keep-alive clients; (latencies, statuses in the
    order of `bodies` (None: not sent in time), wall seconds)."""
    lat, statuses, lock = [], [None] * len(bodies), threading.Lock()
    it = iter(enumerate(bodies))
    stop_at = time.perf_counter() + seconds

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        while time.perf_counter() < stop_at:
            with lock:
                item = next(it, None)
            if item is None:
                return
            i, (path, body, ctype) = item
            t0 = time.perf_counter()
            try:
                conn.request("POST", path, body, {"Content-Type": ctype})
                r = conn.getresponse()
                r.read()
                status = r.status
            except (OSError, http.client.HTTPException):
                status = -1
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            dt = time.perf_counter() - t0
            with lock:
                lat.append(dt)
                statuses[i] = status
    start = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return np.array(lat), statuses, time.perf_counter() - start


def _good(rng):
    x = rng.standard_normal((1, 1, 8, 8)).astype(np.float32)
    return "/v1/models/cnn:predict", json.dumps({"inputs": x.tolist()}).encode(), \
        "application/json"


def _bad(rng, i):
    kind = (i // 10) % 5
    if kind == 0:
        return "/v1/models/cnn:predict", b'{"inputs": [[[', "application/json"
    if kind == 1:
        return "/v1/models/cnn:predict", json.dumps({"inputs": [[1, 2, 3]]}).encode(), \
            "application/json"
    if kind == 2:
        return "/v1/models/cnn:predict", json.dumps({"inputs": [["a"] * 8] * 8}).encode(), \
            "application/json"
    if kind == 3:
        return "/v1/models/nope:predict", json.dumps({"inputs": [[1]]}).encode(), \
            "application/json"
    return "/v1/models/cnn:predict", b"[" * 70000, "application/json"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--requests", type=int, default=400)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--robust", type=int, default=10000)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = _model(tmp)
        print(f"{'runtime':<12}{'batching':<10}{'conc':>5}{'req/s':>9}{'p50 ms':>9}"
              f"{'p99 ms':>9}{'ok':>7}")
        for runtime in ("nbtorch", "onnxruntime"):
            for batch in (32, 1):
                server = ServerProcess(path, runtime, batch)
                try:
                    for conc in (1, 8, 64):
                        bodies = [_good(rng) for _ in range(args.requests)]
                        _load(server.port, bodies[:20], conc, 5)          # warm up
                        lat, st, wall = _load(server.port, bodies, conc, args.seconds)
                        ok = sum(s == 200 for s in st if s is not None)
                        print(f"{runtime:<12}{'on' if batch > 1 else 'off':<10}{conc:>5}"
                              f"{len(lat) / wall:>9.0f}{np.percentile(lat, 50) * 1e3:>9.2f}"
                              f"{np.percentile(lat, 99) * 1e3:>9.2f}{ok:>7}")
                finally:
                    server.stop()
        server = ServerProcess(path, "nbtorch", 32)
        try:
            _load(server.port, [_good(rng) for _ in range(50)], 8, 10)
            before = server.rss_mb()
            items = [(_bad(rng, i), True) if i % 10 == 0 else (_good(rng), False)
                     for i in range(args.robust)]
            lat, st, wall = _load(server.port, [b for b, _ in items], 16, 600)
            bad = [s for (_, is_bad), s in zip(items, st) if is_bad]
            good = [s for (_, is_bad), s in zip(items, st) if not is_bad]
            after = server.rss_mb()
            alive = server.proc.poll() is None and server.get("/health")[0] == 200
            sent = [x for x in st if x is not None]
            print(f"robustness: {len(sent)} requests in {wall:.1f} s, {len(bad)} malformed: "
                  f"{sum(400 <= s < 500 for s in bad)} answered 4xx, "
                  f"{sum(s == 200 for s in good)}/{len(good)} good answered 200, "
                  f"connection errors {st.count(-1)}, server alive: {alive}, "
                  f"RSS {before:.0f} MB -> {after:.0f} MB")
            print("statuses of the malformed requests:", dict(collections.Counter(bad)))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
