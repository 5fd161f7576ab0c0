"""Without Python (issue 14 part 6): a trained nbtorch model exported to ONNX runs in a
Node.js script on onnxruntime-node and gives nbtorch's outputs. Skipped cleanly where
node or the npm package is absent (install: ``npm install --ignore-scripts --prefix
.venv/node onnxruntime-node``, or set NBTORCH_NODE_MODULES to a node_modules folder)."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nbtorch as torch
import nbtorch.nn as nn

pytest.importorskip("onnx")
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "deploy" / "run_onnx.js"


def _node_modules():
    for candidate in (os.environ.get("NBTORCH_NODE_MODULES"),
                      str(Path(sys.prefix) / "node" / "node_modules")):
        if candidate and (Path(candidate) / "onnxruntime-node").is_dir():
            return candidate
    return None


def test_trained_model_runs_in_node(tmp_path):
    node = shutil.which("node")
    modules = _node_modules()
    if node is None or modules is None:
        pytest.skip("node or the onnxruntime-node package is not installed")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 3))
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    x = torch.randn(64, 4)
    y = (x[:, :3] * 2).sum(1, keepdim=True) * torch.ones(1, 3)
    first = None
    for _ in range(60):
        loss = ((model(x) - y) ** 2).mean()
        first = loss.item() if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < first / 4                      # it learned something
    model.eval()
    path = tmp_path / "model.onnx"
    torch.onnx.export(model, x[:2], str(path), input_names=["x"],
                      dynamic_axes={"x": {0: "batch"}})
    probe = torch.randn(5, 4)
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"x": {"dims": [5, 4],
                                        "data": probe.numpy().ravel().tolist()}}))
    env = dict(os.environ, NODE_PATH=modules)
    out = subprocess.run([node, str(SCRIPT), str(path), str(inputs)], capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)["output"]
    assert got["dims"] == [5, 3]
    np.testing.assert_allclose(np.array(got["data"]).reshape(5, 3),
                               model(probe).detach().numpy(), rtol=1e-4, atol=1e-5)
