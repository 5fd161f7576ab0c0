"""The fast paths of the matrix products (issue 17): the plain 2-D matmul/mm path, the
gradients when one operand only requires grad (each saves only what the other needs),
and the one-thread OpenBLAS policy for small products (kernels/cpu/blas.py)."""
import time

import numpy as np
import pytest

import nbtorch as torch
from nbtorch.autograd import gradcheck, gradgradcheck
from nbtorch.kernels.cpu import blas


def _pair(shape_a, shape_b, dtype=torch.float64, grads=(True, True), seed=0):
    rng = np.random.default_rng(seed)
    return (torch.tensor(rng.standard_normal(shape_a), dtype=dtype, requires_grad=grads[0]),
            torch.tensor(rng.standard_normal(shape_b), dtype=dtype, requires_grad=grads[1]))


@pytest.mark.parametrize("grads", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("shapes", [((3, 4), (4, 2)), ((2, 3, 4), (4, 5)), ((4,), (4, 3))])
def test_gradients_when_one_side_requires_grad(grads, shapes):
    a, b = _pair(*shapes, grads=grads)
    assert gradcheck(torch.matmul, (a, b))
    assert gradgradcheck(torch.matmul, (a, b))


@pytest.mark.filterwarnings("ignore:Input #0 requires gradient")   # (says so for complex128)
def test_complex_gradient_with_one_side():
    rng = np.random.default_rng(1)
    a = torch.tensor(rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4)),
                     dtype=torch.complex128, requires_grad=True)
    b = torch.tensor(rng.standard_normal((4, 2)) + 1j * rng.standard_normal((4, 2)),
                     dtype=torch.complex128)
    assert gradcheck(torch.mm, (a, b))


def test_plain_path_keeps_checks_and_names():
    a, b = _pair((2, 3), (3, 4), grads=(True, False))
    assert type(torch.mm(a, b).grad_fn).__name__ == "MmBackward0"
    assert type((a @ b).grad_fn).__name__ == "MmBackward0"
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(2x3 and 4x3\)"):
        torch.mm(a, b.t())
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.mm(a, b.float())
    with pytest.raises(NotImplementedError, match="Bool"):
        torch.mm(torch.ones(2, 2, dtype=torch.bool), torch.ones(2, 2, dtype=torch.bool))


def test_operator_fast_path_keeps_matmuls_rules():
    """``a @ b`` on two plain matrices skips matmul's layers (`__matmul__`): the same node,
    values and errors as torch.matmul."""
    a, b = _pair((2, 3), (3, 4), grads=(False, False))
    np.testing.assert_array_equal((a @ b).numpy(), torch.matmul(a, b).numpy())
    with pytest.raises(RuntimeError, match=r"\(2x3 and 4x3\)"):
        a @ b.t()
    with pytest.raises(RuntimeError, match="same dtype"):
        a @ b.float()
    with pytest.raises(NotImplementedError, match="Bool"):
        torch.ones(2, 2, dtype=torch.bool) @ torch.ones(2, 2, dtype=torch.bool)
    with pytest.raises((RuntimeError, NotImplementedError), match="UInt16"):
        torch.ones(2, 2, dtype=torch.uint16) @ torch.ones(2, 2, dtype=torch.uint16)
    dense = torch.tensor([[0.0, 2.0], [3.0, 0.0]])
    got = dense.to_sparse() @ dense                     # a sparse operand: nbtorch.sparse's
    got = got.to_dense() if got.is_sparse else got
    np.testing.assert_array_equal(got.numpy(), dense.numpy() @ dense.numpy())
    a.requires_grad_()
    assert type((a @ b).grad_fn).__name__ == "MmBackward0"


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("batch, m, k, n", [((), 128, 128, 128), ((3,), 80, 90, 100),
                                            ((), 2, 1, 300)])
def test_small_products_on_one_blas_thread(dtype, batch, m, k, n):
    """Products in OpenBLAS's threaded range up to SMALL_WORK run on one thread: same
    values as NumPy, and OpenBLAS's thread count is left as it was."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal(batch + (m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    before = blas.threads()
    out = torch.matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    assert blas.threads() == before
    np.testing.assert_allclose(out, np.matmul(a, b), rtol=1e-4, atol=1e-4)


def test_one_thread_restores_on_error():
    before = blas.threads()

    def fail():
        raise ValueError("boom")
    with pytest.raises(ValueError):
        blas.one_thread(fail)
    assert blas.threads() == before


@pytest.mark.parametrize("grads", [(True, True, True), (False, True, True), (True, False, False)])
def test_linear_node_gradients(grads):
    """F.linear's fused node (bare transposed views and the in-place bias add where no
    node is recorded): first and second derivatives."""
    import nbtorch.nn.functional as F
    rng = np.random.default_rng(3)
    x, w, b = (torch.tensor(rng.standard_normal(s), requires_grad=r)
               for s, r in zip(((5, 3), (4, 3), (4,)), grads))
    assert type(F.linear(x, w, b).grad_fn).__name__ == "AddmmBackward0"
    assert gradcheck(F.linear, (x, w, b))
    assert gradgradcheck(F.linear, (x, w, b))


def _batched_cases(dtype):
    rng = np.random.default_rng(4)

    def r(*s):
        return rng.standard_normal(s).astype(dtype)
    return [(r(16, 64, 80), r(16, 80, 72)),                      # plain bmm
            (r(16, 64, 80), r(1, 80, 72)),                       # broadcast second operand
            (r(16, 80, 64).transpose(0, 2, 1), r(16, 80, 72)),   # transposed first operand
            (r(16, 64, 80), r(16, 72, 80).transpose(0, 2, 1)),   # transposed second operand
            (r(2, 8, 64, 80), r(1, 1, 80, 72)),                  # 4-D, broadcast batch
            (r(8, 2, 64, 80).transpose(1, 0, 2, 3), r(2, 8, 80, 72)),   # permuted batch
            (r(16, 64, 160)[:, :, ::2], r(16, 80, 72))]          # no unit stride: a copy


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batched_products_split_over_threads(dtype, monkeypatch):
    """Batches of mid-size products split over the CPU helper threads (ranges of the
    first dim, OpenBLAS on one thread): NumPy's values, broadcast and strided operands
    included, OpenBLAS's thread count unchanged, at two threads and at one."""
    from nbtorch.kernels.cpu import batch_threads, workers
    monkeypatch.setattr(workers, "helpers_usable", lambda key=None: True)   # no back-off
    runs = []
    run = batch_threads.run
    monkeypatch.setattr(batch_threads, "run",
                        lambda fn, parts, key=None: runs.append(1) or run(fn, parts, key))
    before = torch.get_num_threads()
    try:
        for n in (2, 1):
            torch.set_num_threads(n)
            threads = blas.threads()
            for a, b in _batched_cases(dtype):
                out = torch.matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy()
                np.testing.assert_allclose(out, np.matmul(a, b), rtol=1e-5, atol=1e-4)
                assert blas.threads() == threads
            assert len(runs) == (len(_batched_cases(dtype)) if n > 1 else 0)
            runs.clear()
    finally:
        torch.set_num_threads(before)


def test_thread_count_survives_concurrent_callers():
    """Python threads multiplying at once leave OpenBLAS's thread count as it was."""
    import threading
    before = blas.threads()
    rng = np.random.default_rng(5)
    a2 = torch.from_numpy(rng.standard_normal((100, 100)).astype(np.float32))
    a3 = torch.from_numpy(rng.standard_normal((8, 96, 96)).astype(np.float32))

    def work():
        for _ in range(20):
            a2 @ a2
            a3 @ a3
    workers = [threading.Thread(target=work) for _ in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert blas.threads() == before


def test_overlapping_one_thread_calls_each_run_on_one_thread():
    """A call entering one_thread while another is inside still runs on one thread to
    its end (the first to leave must not restore the count under it), and a count set
    meanwhile (set_num_threads) is the one restored."""
    import threading
    if blas.threads() == 1 and blas._get is None:
        pytest.skip("NumPy has no OpenBLAS here")
    before = blas.threads()
    blas.set_threads(2)
    inside, release, seen = threading.Event(), threading.Event(), []

    def first():
        inside.set()
        release.wait(5)

    def second():
        release.set()
        time.sleep(0.05)                 # `first` leaves meanwhile
        seen.append(blas.threads())
    try:
        t = threading.Thread(target=blas.one_thread, args=(first,))
        t.start()
        inside.wait(5)
        blas.one_thread(second)
        t.join()
        assert seen == [1]
        assert blas.threads() == 2
        blas.one_thread(lambda: blas.set_threads(3))
        assert blas.threads() == 3
    finally:
        blas.set_threads(before)


def _one_blas_call(a, b):
    """a @ b as one call of the BLAS nbtorch's products use (NumPy's OpenBLAS, or for
    float32 nbtorch's own copy of it: kernels/cpu/blas_private.py)."""
    from nbtorch.kernels.cpu import cblas
    out = np.empty(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1]),
                   np.result_type(a, b))
    cblas.matmul(a, b, out)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_big_single_products_stay_with_openblas_threads(dtype, monkeypatch):
    """Single products above SMALL_WORK (also a 3-D product with a batch of one) go to
    OpenBLAS's own threads whatever the machine's load: exactly one BLAS call's values,
    never the helpers' split (OpenBLAS's one-thread results differ in the last bits)."""
    from nbtorch.kernels.cpu import batch_threads, workers
    monkeypatch.setattr(workers, "helpers_usable", lambda key=None: True)
    runs = []
    run = batch_threads.run
    monkeypatch.setattr(batch_threads, "run",
                        lambda fn, parts, key=None: runs.append(1) or run(fn, parts, key))
    rng = np.random.default_rng(6)
    x = rng.standard_normal((128, 300)).astype(dtype)
    w = rng.standard_normal((200, 300)).astype(dtype)
    tall = rng.standard_normal((400, 150)).astype(dtype)
    for a, b in ((x, w.T), (tall, rng.standard_normal((150, 40)).astype(dtype)),
                 (x[None], w.T[None])):
        out = torch.matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy()
        assert np.array_equal(out, _one_blas_call(a, b))
    assert not runs


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_few_rows_times_a_wide_matrix_run_transposed(dtype, monkeypatch):
    """A product of SWAP_MIN_ROWS..SWAP_MAX_ROWS rows and a wide result runs as
    (b^T @ a^T)^T (`matmul._transposed_pays`), above SMALL_WORK and on one thread:
    NumPy's values (float32 above SMALL_WORK: the same bits in the shapes tried with
    NumPy's SkylakeX kernels, within rounding with nbtorch's Haswell copy),
    C-contiguous; a taller or narrower product, one row, or a row-major b (not a
    transposed weight) keeps the direct call."""
    from nbtorch.kernels.cpu import matmul as mm
    swapped = []
    run = mm._transposed_product
    monkeypatch.setattr(mm, "_transposed_product",
                        lambda a, b, out: swapped.append(out.shape) or run(a, b, out))
    rng = np.random.default_rng(7)
    w = rng.standard_normal((1024, 512)).astype(dtype)            # a Linear's (out, in)
    for rows in (8, 33, 64):
        x = rng.standard_normal((rows, 512)).astype(dtype)
        got = (torch.from_numpy(x) @ torch.from_numpy(w).t()).numpy()
        want = _one_blas_call(x, w.T)
        assert got.flags.c_contiguous
        if dtype == np.float32 and blas.private_library() is None:
            np.testing.assert_array_equal(got, want)
        elif dtype == np.float32:        # the Haswell kernels of nbtorch's copy round the
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)   # swap differently
        else:
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-12)
    assert swapped == [(8, 1024), (33, 1024), (64, 1024)]
    torch.from_numpy(rng.standard_normal((128, 512)).astype(dtype)) @ torch.from_numpy(w).t()
    narrow = rng.standard_normal((1024, 200)).astype(dtype)
    torch.from_numpy(rng.standard_normal((64, 1024)).astype(dtype)) @ torch.from_numpy(narrow)
    assert len(swapped) == 3                   # 128 rows; 200 columns for 64 rows
    for rows, k, n in ((4, 256, 512), (2, 128, 1024), (16, 256, 512)):  # one thread / NumPy's
        x = rng.standard_normal((rows, k)).astype(dtype)
        wide = rng.standard_normal((n, k)).astype(dtype)
        got = (torch.from_numpy(x) @ torch.from_numpy(wide).t()).numpy()
        np.testing.assert_allclose(got, np.matmul(x, wide.T), rtol=1e-5 if dtype == np.float32
                                   else 1e-13, atol=1e-4 if dtype == np.float32 else 1e-12)
    assert swapped[3:] == [(4, 512), (2, 1024), (16, 512)]
    vec = rng.standard_normal((1, 1024)).astype(dtype)                   # a GEMV: direct
    torch.from_numpy(vec) @ torch.from_numpy(rng.standard_normal((1024, 1024)).astype(dtype))
    x = torch.from_numpy(rng.standard_normal((8, 512)).astype(dtype))
    x @ torch.from_numpy(np.ascontiguousarray(w.T))                      # b row-major: direct
    assert len(swapped) == 6


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_outer_products_take_blas_through_gemm_rows(dtype, monkeypatch):
    """k = 1 (a batch of one's weight gradient, g.t() @ x): NumPy's matmul would run its
    own loop (~17x slower for 1024x784); gemm_rows' cblas ranges give the same bits."""
    from nbtorch.kernels.cpu import gemm_rows, workers
    if not gemm_rows.SUPPORTED or workers.NUM_THREADS < 2:
        pytest.skip("needs the spinning helpers")
    calls = []
    run = gemm_rows.matmul
    monkeypatch.setattr(gemm_rows, "matmul", lambda *a: calls.append(a[2].shape) or run(*a))
    rng = np.random.default_rng(8)
    g = rng.standard_normal((1, 300)).astype(dtype)
    x = rng.standard_normal((1, 70)).astype(dtype)
    x[0, 3] = 0.0
    g[0, 5] = -1.0
    got = (torch.from_numpy(g).t() @ torch.from_numpy(x)).numpy()
    want = np.matmul(g.T, x)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))   # signed zeros too
    assert calls == [(300, 70)]
