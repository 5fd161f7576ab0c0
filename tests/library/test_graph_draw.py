"""nbtorch.autograd.graph.draw: the tape as SVG (valid XML, expected nodes and labels)."""
import xml.etree.ElementTree as ET

import pytest

import nbtorch

SVG = "{http://www.w3.org/2000/svg}"


def _texts(svg):
    root = ET.fromstring(svg)
    assert root.tag == SVG + "svg"
    return root, [t.text for t in root.iter(SVG + "text")]


def test_mlp_graph_nodes_edges_and_labels(tmp_path):
    lin = nbtorch.nn.Linear(4, 3)
    x = nbtorch.randn(2, 4)
    loss = (lin(x).tanh() * 2).sum()
    g = nbtorch.autograd.graph.draw(loss, params=dict(lin.named_parameters()))
    root, texts = _texts(g._repr_svg_())
    titles = [t.text for t in root.iter(SVG + "title")]
    for name in ("SumBackward0", "MulBackward0", "TanhBackward0", "weight", "bias"):
        assert name in titles
    assert texts.count("AccumulateGrad") == 2
    assert "(3, 4)" in texts and "(3,)" in texts               # leaf shapes
    assert "out (2, 3)" in texts                              # an op's output shape
    assert any(t.startswith("saved ") and t.endswith("B") for t in texts)
    assert "result ()" in texts
    n_boxes = len(list(root.iter(SVG + "rect")))
    n_arrows = len([p for p in root.iter(SVG + "path") if p.get("marker-end")])
    assert n_boxes == g.n_nodes + 1 and n_arrows == g.n_edges + 1   # + the result box
    path = tmp_path / "graph.svg"
    g.save(str(path))
    ET.parse(str(path))


def test_arrows_point_down_the_layers():
    a = nbtorch.randn(3, requires_grad=True)
    b = a * a
    c = (b + a).exp()                   # a feeds two layers: a's box goes below both
    g = nbtorch.autograd.graph.draw(c)
    root, _ = _texts(g.svg)
    for p in root.iter(SVG + "path"):
        if p.get("marker-end"):
            nums = [float(v.strip(",")) for v in p.get("d").split() if v[0].isdigit()]
            assert nums[-1] > nums[1]                            # end below start


def test_freed_saved_tensors_and_errors():
    a = nbtorch.randn(3, requires_grad=True)
    y = (a * a).sum()
    y.backward()
    _, texts = _texts(nbtorch.autograd.graph.draw(y).svg)
    assert "saved: freed" in texts
    with pytest.raises(RuntimeError, match="no graph to draw"):
        nbtorch.autograd.graph.draw(nbtorch.ones(2))


def test_deep_chain_draws_without_recursion():
    a = nbtorch.randn(2, requires_grad=True)
    y = a
    for _ in range(1500):
        y = y * 1.0
    g = nbtorch.autograd.graph.draw(y)
    assert g.n_nodes == 1501 and "1501 nodes" in repr(g)
