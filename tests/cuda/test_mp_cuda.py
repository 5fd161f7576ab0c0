"""Sharing CUDA tensors between processes is a clear error, never a silent host copy."""
import pickle
from multiprocessing.reduction import ForkingPickler

import pytest

import nbtorch
import nbtorch.multiprocessing as mp  # noqa: F401  (registers the reducers)

pytestmark = pytest.mark.cuda


def test_cuda_tensors_are_not_shared():
    x = nbtorch.ones(3, device="cuda")
    assert not x.is_shared()
    with pytest.raises(RuntimeError, match="cannot share a cuda:0 tensor.*no CUDA IPC"):
        x.share_memory_()
    with pytest.raises(RuntimeError, match="Cannot send a cuda:0 tensor.*no CUDA IPC"):
        ForkingPickler.dumps(x)
    with pytest.raises(RuntimeError, match="no CUDA IPC"):
        ForkingPickler.dumps([nbtorch.zeros(1), x[1:]])
    model = nbtorch.nn.Linear(2, 2).to("cuda")
    with pytest.raises(RuntimeError, match="cannot share a cuda:0 tensor"):
        model.share_memory()
    assert pickle.loads(pickle.dumps(x)).device.type == "cuda"   # plain pickle: a saved copy
    assert x.cpu().share_memory_().is_shared()
