"""nbtorch.serve against a real uvicorn on loopback: predictions (JSON, .npy, safetensors),
versions, dynamic batching, metrics, every kind of bad input answered 4xx while the server
keeps serving, a raising model as 500, graceful shutdown, and the CLI."""
import io
import json
import threading
import time

import numpy as np
import pytest

import nbtorch as torch
import nbtorch.nn as nn

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")
pytest.importorskip("onnxruntime")
from nbtorch.serve import create_app, load_model  # noqa: E402
from nbtorch.serve._models import InputSpec, ServedModel  # noqa: E402


@pytest.fixture(scope="module")
def onnx_model(tmp_path_factory):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).eval()
    path = tmp_path_factory.mktemp("serve") / "mlp.onnx"
    torch.onnx.export(net, torch.randn(2, 4), str(path), input_names=["x"],
                      dynamic_axes={"x": {0: "batch"}})
    return net, path


def _slow_model(seconds, fail=False, started=None):
    def predict(arrays):
        if started is not None:
            started.set()
        time.sleep(seconds)
        if fail:
            raise RuntimeError("boom")
        return [arrays[0] * 2]
    return ServedModel("slow" if not fail else "bad", "1",
                       [InputSpec("x", np.dtype(np.float32), [None, 2])], ["y"], predict,
                       True, "test")


def test_predict_json_npy_safetensors_and_versions(serve_app, onnx_model):
    net, path = onnx_model
    app = create_app([load_model(str(path), "mlp", "1"),
                      load_model(str(path), "mlp", "2", runtime="nbtorch")])
    s = serve_app(app)
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    want = net(torch.tensor(x)).detach().numpy()
    assert s.request("/health")[0] == 200
    assert json.loads(s.request("/ready")[2])["models"] == ["mlp"]
    status, _, body = s.request("/v1/models/mlp:predict", {"inputs": x.tolist()})
    doc = json.loads(body)
    assert status == 200 and doc["version"] == "2"          # the newest version
    np.testing.assert_allclose(doc["outputs"], want, rtol=1e-4, atol=1e-6)
    status, _, body = s.request("/v1/models/mlp/versions/1:predict",
                                {"inputs": {"x": x.tolist()}})
    assert status == 200 and json.loads(body)["version"] == "1"
    buf = io.BytesIO()
    np.save(buf, x)
    status, headers, body = s.request("/v1/models/mlp:predict", buf.getvalue(),
                                      "application/x-npy", {"Accept": "application/x-npy"})
    assert status == 200 and headers["content-type"] == "application/x-npy"
    np.testing.assert_allclose(np.load(io.BytesIO(body)), want, rtol=1e-4, atol=1e-6)
    st = pytest.importorskip("safetensors.numpy")
    status, _, body = s.request("/v1/models/mlp:predict", st.save({"x": x}),
                                "application/x-safetensors")
    np.testing.assert_allclose(json.loads(body)["outputs"], want, rtol=1e-4, atol=1e-6)
    models = json.loads(s.request("/v1/models")[2])["models"]
    assert {m["version"] for m in models} == {"1", "2"}


def test_bad_input_is_4xx_and_server_keeps_serving(serve_app, onnx_model):
    _, path = onnx_model
    s = serve_app(create_app([load_model(str(path), "mlp")], max_body_bytes=2000))
    cases = [
        (b"{not json", "application/json", 400, "malformed JSON"),
        (json.dumps({"inputs": [[1, 2, 3]]}).encode(), "application/json", 400, "shape"),
        (json.dumps({"inputs": [["a", "b", "c", "d"]]}).encode(), "application/json", 400,
         "input 'x'"),
        (json.dumps({"inputs": [[1, 2], [3]]}).encode(), "application/json", 400, "input 'x'"),
        (json.dumps({"nope": 1}).encode(), "application/json", 400, '"inputs"'),
        (json.dumps({"inputs": [[0.0] * 4] * 200}).encode(), "application/json", 413,
         "limit"),
        (b"\x93NUMPY garbage", "application/x-npy", 400, ".npy"),
        (b"x", "text/plain", 415, "Content-Type"),
        (b"[" * 100000 + b"]" * 100000, "application/json", 413, "limit"),
    ]
    for body, ct, code, words in cases:
        status, _, reply = s.request("/v1/models/mlp:predict", body, ct)
        assert status == code, (body[:40], reply)
        assert words in json.loads(reply)["error"]
    deep = b'{"inputs": ' + b"[" * 900 + b"]" * 900 + b"}"
    assert s.request("/v1/models/mlp:predict", deep)[0] == 400
    status, _, reply = s.request("/v1/models/nope:predict", {"inputs": [[1, 2, 3, 4]]})
    assert status == 404 and "unknown model 'nope'" in json.loads(reply)["error"]
    assert s.request("/v1/models/mlp:predict", {"inputs": [[1, 2, 3, 4]]})[0] == 200
    metrics = s.request("/metrics")[2].decode()
    assert 'nbtorch_requests_total{model="mlp",code="400"}' in metrics
    assert 'nbtorch_requests_total{model="_unknown",code="404"}' in metrics


def test_dynamic_batching_and_raising_model(serve_app):
    s = serve_app(create_app([_slow_model(0.05), _slow_model(0.0, fail=True)],
                             max_batch_size=16, max_delay_ms=30, workers=2))
    results = [None] * 12

    def call(i):
        results[i] = s.request("/v1/models/slow:predict", {"inputs": [[i, i]]})
    threads = [threading.Thread(target=call, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, (status, _, body) in enumerate(results):
        assert status == 200 and json.loads(body)["outputs"] == [[2 * i, 2 * i]]
    metrics = s.request("/metrics")[2].decode()
    count = float(metrics.split('nbtorch_batch_size_count{model="slow"}')[1].split()[0])
    assert count < 12                                 # some requests shared a run
    status, _, body = s.request("/v1/models/bad:predict", {"inputs": [[1, 2]]})
    assert status == 500 and "boom" in json.loads(body)["error"]
    assert s.request("/v1/models/slow:predict", {"inputs": [[1, 2]]})[0] == 200


def test_graceful_shutdown_finishes_in_flight(serve_app):
    started = threading.Event()
    s = serve_app(create_app([_slow_model(0.5, started=started)], max_batch_size=1))
    out = {}
    t = threading.Thread(target=lambda: out.update(r=s.request("/v1/models/slow:predict",
                                                                {"inputs": [[1, 2]]})))
    t.start()
    assert started.wait(30)                   # the request is running in the model
    s.server.should_exit = True
    t.join(timeout=10)
    assert out["r"][0] == 200


def test_traced_model_and_cli_helpers(serve_app, tmp_path):
    from nbtorch.serve.__main__ import main, parse_model_arg
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def forward(self, x):
            return self.fc(x).tanh()
    net = Net().eval()
    path = tmp_path / "net.pt"
    torch.jit.save(torch.jit.trace(net, torch.randn(3, 2)), str(path))
    s = serve_app(create_app([load_model(str(path))]))
    x = [[0.5, -1.0]]
    status, _, body = s.request("/v1/models/net:predict", {"inputs": x})
    assert status == 200
    np.testing.assert_allclose(json.loads(body)["outputs"],
                               net(torch.tensor(x)).detach().numpy(), rtol=1e-5)
    assert parse_model_arg("cnn@3=/m/a.onnx") == ("cnn", "3", "/m/a.onnx")
    assert parse_model_arg("/m/a.onnx") == (None, "1", "/m/a.onnx")
    assert main([str(tmp_path / "missing.onnx")]) == 2


@pytest.mark.slow
def test_cli_with_two_worker_processes(onnx_model):
    import socket
    import subprocess
    import sys
    import urllib.request
    net, path = onnx_model
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "nbtorch.serve", f"mlp={path}", "--port",
                             str(port), "--workers", "2", "--log-level", "warning"])
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(600):
            try:
                if urllib.request.urlopen(url + "/ready", timeout=1).status == 200:
                    break
            except OSError:
                time.sleep(0.1)
        x = [[0.1, 0.2, 0.3, 0.4]]
        for _ in range(6):
            req = urllib.request.Request(url + "/v1/models/mlp:predict",
                                         json.dumps({"inputs": x}).encode(),
                                         {"Content-Type": "application/json"})
            out = json.loads(urllib.request.urlopen(req, timeout=30).read())["outputs"]
            np.testing.assert_allclose(out, net(torch.tensor(x)).detach().numpy(),
                                       rtol=1e-5, atol=1e-6)
    finally:
        proc.terminate()
        assert proc.wait(timeout=60) in (0, -15)
