"""Top-level namespaces a PyTorch user reaches for."""
import numpy as np

import nbtorch as torch


def test_linalg_namespace_and_return_types():
    x = torch.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(torch.linalg.norm(x).item(), np.linalg.norm(x.numpy()),
                               rtol=1e-6)
    np.testing.assert_allclose(torch.linalg.vector_norm(x, 1, dim=1).numpy(), [3.0, 12.0])
    r = torch.max(x, dim=1)
    assert isinstance(r, torch.return_types.max)
    assert r.values.tolist() == [2.0, 5.0] and r.indices.tolist() == [2, 2]


def test_subpackages_importable_from_top_level():
    for name in ("nn", "optim", "utils", "autograd", "cuda", "library", "profiler", "linalg",
                 "random"):
        assert hasattr(torch, name), name
    assert torch.broadcast_shapes((2, 1), (3,)) == torch.Size([2, 3])
