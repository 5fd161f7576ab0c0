"""CUDA graphs (emulated: nbtorch records the kernels a capture runs and replays them on the
same buffers): PyTorch's static-buffer contract, fresh random numbers per replay, refused
host copies, raw numba kernels, data-dependent results, make_graphed_callables."""
import pytest
from numba import cuda as numba_cuda

import nbtorch
from nbtorch import cuda

pytestmark = pytest.mark.cuda


def test_replay_rewrites_static_outputs_from_static_inputs():
    g = cuda.CUDAGraph()
    static_x = nbtorch.zeros(4, device="cuda")
    with cuda.graph(g):
        assert cuda.is_current_stream_capturing()
        static_y = static_x * 2 + 1
        static_s = static_y.sum()
    assert not cuda.is_current_stream_capturing() and len(g) > 0
    assert static_y.cpu().tolist() == [1.0] * 4
    for k in range(2):
        static_x.copy_(nbtorch.arange(4.0, device="cuda") + k)
        g.replay()
        expect = [2.0 * (i + k) + 1 for i in range(4)]
        assert static_y.cpu().tolist() == expect
        assert static_s.item() == sum(expect)
    g.reset()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()


def test_random_ops_draw_fresh_numbers_on_each_replay():
    g = cuda.CUDAGraph()
    with cuda.graph(g):
        r = nbtorch.rand(6, device="cuda")
    first = r.cpu().tolist()
    g.replay()
    second = r.cpu().tolist()
    assert first != second and all(0.0 <= v < 1.0 for v in second)


def test_host_copies_during_capture_are_refused_and_abort_the_capture():
    x = nbtorch.ones(3, device="cuda")
    g = cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="operation not permitted when stream is capturing"):
        with cuda.graph(g):
            x.sum().item()
    assert not cuda.is_current_stream_capturing()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()
    with pytest.raises(RuntimeError, match="not permitted"):
        with cuda.graph(cuda.CUDAGraph()):
            nbtorch.tensor([1.0, 2.0], device="cuda")
    emb = nbtorch.nn.Embedding(5, 2).cuda()            # reads its indices on the host
    with pytest.raises(RuntimeError, match="embedding, gather"):
        with cuda.graph(cuda.CUDAGraph()):
            emb(nbtorch.tensor([1, 2], device="cuda"))
    with cuda.graph(cuda.CUDAGraph()):               # a 0-d host scalar is frozen in, allowed
        y = x * nbtorch.tensor(2.0).to("cuda")
    assert y.cpu().tolist() == [2.0] * 3


def test_capture_errors_match_pytorch():
    g = cuda.CUDAGraph()
    with cuda.graph(g):
        nbtorch.ones(2, device="cuda").add_(1)
    with pytest.raises(RuntimeError, match="already owns a captured graph"):
        g.capture_begin()
    with pytest.raises(RuntimeError, match="Unknown capture error mode"):
        cuda.CUDAGraph().capture_begin(capture_error_mode="strict")
    g2 = cuda.CUDAGraph()
    g2.capture_begin()
    try:
        with pytest.raises(RuntimeError, match="another capture is underway"):
            cuda.CUDAGraph().capture_begin()
    finally:
        g2.capture_end()
    assert isinstance(cuda.graph_pool_handle(), tuple) and g.pool() is not None


@numba_cuda.jit
def _add_one(a):
    i = numba_cuda.grid(1)
    if i < a.size:
        a[i] += 1.0


def test_raw_numba_kernels_are_recorded_and_relaunched():
    x = nbtorch.zeros(5, device="cuda")
    g = cuda.CUDAGraph()
    with cuda.graph(g):
        _add_one[1, 32](x._array)
    assert [n[0] for n in g._nodes] == ["kernel"]
    g.replay()
    g.replay()
    assert x.cpu().tolist() == [3.0] * 5


def test_a_data_dependent_host_result_that_changes_is_an_error():
    x = nbtorch.tensor([1.0, 1.0, 2.0], device="cuda")
    g = cuda.CUDAGraph()
    with cuda.graph(g):
        u = nbtorch.unique(x)
    assert u.cpu().tolist() == [1.0, 2.0]
    g.replay()                                          # same data: same count, fine
    x.copy_(nbtorch.tensor([1.0, 2.0, 3.0], device="cuda"))
    with pytest.raises(RuntimeError, match="depends on the data"):
        g.replay()


def test_make_graphed_callables_matches_eager_forward_and_backward():
    nbtorch.manual_seed(0)
    model = nbtorch.nn.Sequential(nbtorch.nn.Linear(3, 4), nbtorch.nn.Tanh(),
                                  nbtorch.nn.Linear(4, 2)).cuda()
    sample = nbtorch.randn(5, 3, device="cuda", requires_grad=True)
    graphed = cuda.make_graphed_callables(model, (sample,), num_warmup_iters=1)
    assert graphed is model
    for _ in range(2):
        x = nbtorch.randn(5, 3, device="cuda", requires_grad=True)
        model.zero_grad()
        out = graphed(x)
        (out * out).sum().backward()
        got = (out.cpu(), x.grad.cpu(), [p.grad.cpu() for p in model.parameters()])
        x2 = x.detach().clone().requires_grad_(True)
        model.zero_grad()
        model.eval()                                    # the other mode runs eagerly
        ref = model(x2)
        model.train()
        (ref * ref).sum().backward()
        assert nbtorch.allclose(got[0], ref.cpu(), atol=1e-6)
        assert nbtorch.allclose(got[1], x2.grad.cpu(), atol=1e-6)
        for a, p in zip(got[2], model.parameters()):
            assert nbtorch.allclose(a, p.grad.cpu(), atol=1e-6)


def test_make_graphed_callables_for_a_function_and_checks():
    def f(a, b):
        return a * b + 1
    a = nbtorch.randn(3, device="cuda", requires_grad=True)
    b = nbtorch.randn(3, device="cuda")
    gf = cuda.make_graphed_callables(f, (a, b), num_warmup_iters=1)
    a2, b2 = nbtorch.randn(3, device="cuda", requires_grad=True), nbtorch.randn(3, device="cuda")
    out = gf(a2, b2)
    assert nbtorch.allclose(out.cpu(), (a2 * b2 + 1).detach().cpu())
    out.sum().backward()
    assert nbtorch.allclose(a2.grad.cpu(), b2.cpu())
    m = nbtorch.nn.Linear(2, 2).cuda()
    m.register_forward_hook(lambda *a: None)
    with pytest.raises(AssertionError, match="Modules must not have hooks"):
        cuda.make_graphed_callables(m, (nbtorch.zeros(1, 2, device="cuda"),))
    with pytest.raises(AssertionError, match="must contain only Tensors"):
        cuda.make_graphed_callables(f, (a, 2.0))
    with nbtorch.autocast("cuda"):
        with pytest.raises(RuntimeError, match="does not support the autocast caching"):
            cuda.make_graphed_callables(f, (a, b))


def test_whole_training_step_capture_matches_eager_training():
    """PyTorch's whole-network example: warm up on a side stream, capture forward, backward
    and an SGD step, then replay on new data copied into the static tensors."""
    def make():
        nbtorch.manual_seed(0)
        return nbtorch.nn.Sequential(nbtorch.nn.Linear(3, 4), nbtorch.nn.ReLU(),
                                     nbtorch.nn.Linear(4, 1)).cuda()

    def step(model, opt, x, y):
        opt.zero_grad(set_to_none=True)
        nbtorch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()

    data = [(nbtorch.randn(5, 3, device="cuda"), nbtorch.randn(5, 1, device="cuda"))
            for _ in range(3)]
    eager = make()
    opt = nbtorch.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
    for x, y in [data[0]] * 3 + data:
        step(eager, opt, x, y)

    model = make()
    opt = nbtorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sx, sy = data[0][0].clone(), data[0][1].clone()
    side = cuda.Stream()
    side.wait_stream(cuda.current_stream())
    with cuda.stream(side):
        for _ in range(3):
            step(model, opt, sx, sy)
    cuda.current_stream().wait_stream(side)
    g = cuda.CUDAGraph()
    with cuda.graph(g):                                 # the 4th step, on data[0]
        step(model, opt, sx, sy)
    for x, y in data[1:]:
        sx.copy_(x)
        sy.copy_(y)
        g.replay()
    for a, b in zip(eager.parameters(), model.parameters()):
        assert nbtorch.equal(a.cpu(), b.cpu())


def test_capturing_a_step_that_is_not_capturable_is_refused():
    """Adam's step count lives on the host unless capturable: replays would keep the
    captured step's bias correction, so capture is refused as PyTorch refuses it."""
    w = nbtorch.zeros(3, device="cuda", requires_grad=True)
    w.grad = nbtorch.ones(3, device="cuda")
    opt = nbtorch.optim.Adam([w], lr=0.1)
    with pytest.raises(RuntimeError, match="CUDA graph capture of step\\(\\) for an instance "
                                           "of Adam but param_groups' capturable is False"):
        with cuda.graph(cuda.CUDAGraph()):
            opt.step()
    sgd = nbtorch.optim.SGD([w], lr=0.1)            # no host state: allowed
    with cuda.graph(cuda.CUDAGraph()):
        sgd.step()
