"""SummaryWriter takes CUDA tensors (requiring grad or not): they are copied to the host."""
import numpy as np
import pytest

import nbtorch

pytest.importorskip("tensorboard")
pytestmark = pytest.mark.skipif(not nbtorch.cuda.is_available(),
                                reason="needs CUDA or the simulator")


def test_cuda_tensors_are_logged_from_the_host(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util
    from nbtorch.utils.tensorboard import SummaryWriter
    x = nbtorch.rand(3, 4, 5, device="cuda", requires_grad=True)
    host = x.detach().cpu().numpy()
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("s", x.sum() * 2, 0)
        w.add_histogram("h", x, 0)
        w.add_image("i", x, 0)
        w.add_tensor("t", x.detach(), 0)
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    assert acc.Scalars("s")[0].value == pytest.approx(2 * host.sum(), rel=1e-6)
    assert acc.Histograms("h")[0].histogram_value.num == 60
    assert (acc.Images("i")[0].width, acc.Images("i")[0].height) == (5, 4)
    assert np.array_equal(tensor_util.make_ndarray(acc.Tensors("t")[0].tensor_proto), host)
