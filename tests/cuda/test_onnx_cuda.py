"""nbtorch.onnx.load(..., device='cuda'): an exported model runs on nbtorch's CUDA kernels
(the simulator without a GPU; tiny shapes) and matches the CPU result."""
import numpy as np
import pytest

import nbtorch as torch
import nbtorch.nn as nn
import nbtorch.nn.functional as F

pytest.importorskip("onnx")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA or the simulator")


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return F.softmax(F.relu(self.fc(x)) * 2 + 1, -1)


def test_exported_model_runs_on_cuda():
    torch.manual_seed(0)
    model = Small().eval()
    x = torch.randn(2, 4)
    loaded = torch.onnx.load(torch.onnx.export(model, x, None), device="cuda")
    y = loaded(x.cuda())
    assert y.device.type == "cuda"
    np.testing.assert_allclose(y.cpu().numpy(), model(x).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
