"""nbtorch.vision transforms on CUDA tensors give the CPU results (tiny images; the
simulator runs them in the CUDA phase)."""
import numpy as np
import pytest

import nbtorch
from nbtorch.vision.transforms import functional as F

pytestmark = pytest.mark.skipif(not nbtorch.cuda.is_available(), reason="needs CUDA or the simulator")

OPS = {
    "resize": lambda t: F.resize(t, [4, 5]),
    "rotate": lambda t: F.rotate(t, 30, fill=[1, 2, 3]),
    "pad_reflect": lambda t: F.pad(t, 2, padding_mode="reflect"),
    "pad_symmetric": lambda t: F.pad(t, 2, padding_mode="symmetric"),
    "hflip": F.hflip,
    "brightness": lambda t: F.adjust_brightness(t, 1.3),
    "hue": lambda t: F.adjust_hue(t, 0.2),
    "blur": lambda t: F.gaussian_blur(t, 3),
    "normalize": lambda t: F.normalize(t.float() / 255, [0.5] * 3, [0.2] * 3),
    "equalize": F.equalize,
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_vision_op_on_cuda_matches_cpu(name):
    image = nbtorch.from_numpy(np.random.default_rng(0).integers(0, 256, (3, 6, 7), dtype=np.uint8))
    on_cpu, on_gpu = OPS[name](image), OPS[name](image.cuda())
    assert on_gpu.device.type == "cuda"
    np.testing.assert_allclose(on_gpu.cpu().numpy().astype(float), on_cpu.numpy().astype(float),
                               atol=1e-5)
