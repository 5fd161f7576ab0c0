"""An embedding lookup with nothing to record (inference, no_grad) skips Function.apply and
checks its index range in one pass: the same rows, errors and dtypes as the recorded path."""
import numpy as np
import pytest

import nbtorch as torch
import nbtorch.nn.functional as F


@pytest.mark.parametrize("idx_dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("shape", [(8,), (2, 3), (1,), (0,), (2, 0, 3)])
def test_same_rows_as_the_recorded_path(idx_dtype, shape):
    w = torch.randn(10, 4)
    idx = torch.randint(0, 10, shape).to(idx_dtype)
    with torch.no_grad():
        fast = F.embedding(idx, w)
    slow = F.embedding(idx, w.clone().requires_grad_(True)).detach()
    assert fast.shape == slow.shape == shape + (4,)
    np.testing.assert_array_equal(fast.numpy(), slow.numpy())
    np.testing.assert_array_equal(fast.numpy(), w.numpy()[idx.numpy().astype(np.int64)])


def test_out_of_range_and_strided_indices():
    w = torch.randn(5, 3)
    for bad, shown in (([0, 5, 1], 5), ([-1, 2], -1), ([4, 9, -3], -3)):
        with torch.no_grad(), pytest.raises(IndexError, match=f"index {shown} with "
                                                              "num_embeddings=5"):
            F.embedding(torch.tensor(bad), w)
    idx = torch.tensor([[0, 4], [3, 1]]).t()                 # non-contiguous indices
    with torch.no_grad():
        np.testing.assert_array_equal(F.embedding(idx, w).numpy(), w.numpy()[idx.numpy()])


def test_module_and_training_still_record():
    emb = torch.nn.Embedding(6, 2, padding_idx=0)
    out = emb(torch.tensor([0, 3, 3]))
    out.sum().backward()
    np.testing.assert_array_equal(emb.weight.grad.numpy()[[0, 3]], [[0, 0], [2, 2]])
    with torch.no_grad():
        assert emb(torch.tensor([1])).grad_fn is None
