"""jit.save / jit.load of graphs calling a torch.library custom op: saved by name
(torch.ops.<ns>.<op>.<overload>), resolved to the op this process defined on load."""
import numpy as np
import pytest

import nbtorch as torch
from nbtorch._library_op import _OPS


@torch.library.custom_op("savetest::triple", mutates_args=())
def triple(x: torch.Tensor) -> torch.Tensor:
    return x * 3


def test_custom_op_graph_saves_and_loads(tmp_path, monkeypatch):
    traced = torch.jit.trace(lambda x: triple(x) + 1, (torch.ones(2),))
    path = tmp_path / "m.pt"
    torch.jit.save(traced, path)
    loaded = torch.jit.load(path)
    np.testing.assert_array_equal(loaded(torch.full((3,), 2.0)).numpy(), [7.0, 7.0, 7.0])
    assert any(n.target is triple for n in loaded.graph.nodes)
    monkeypatch.delitem(_OPS, "savetest::triple")
    with pytest.raises(RuntimeError, match="custom op savetest::triple, which is not defined"):
        torch.jit.load(path)
