"""Run under mpiexec: every collective against NumPy on each rank. Prints one line per
check ("PASS name" / "FAIL name: error") for test_collectives.py to read."""
import sys

import numpy as np
from _report import run_checks

import nbtorch
import nbtorch.distributed as dist

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def data(rank, shape, dtype=nbtorch.float32):
    n = int(np.prod(shape)) if shape else 1
    a = (np.arange(n) % 7 + rank * 10 + 1).reshape(shape)
    return nbtorch.tensor(a).to(dtype)


def eq(t, want, tol=0):
    got = t.float().numpy() if t.dtype in (nbtorch.float16, nbtorch.bfloat16) else t.numpy()
    want = np.asarray(want, dtype=got.dtype if tol == 0 else np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.allclose(got, want, rtol=tol, atol=tol) if tol else np.array_equal(got, want), \
        (got, want)


@check
def all_reduce_ops_and_dtypes():
    r, n = dist.get_rank(), dist.get_world_size()
    for dtype in (nbtorch.float32, nbtorch.float64, nbtorch.int64, nbtorch.int32,
                  nbtorch.uint8, nbtorch.float16, nbtorch.bfloat16):
        for shape in ((5,), (2, 3), (), (0, 3)):
            parts = [data(k, shape, dtype) for k in range(n)]
            ref = [p.double().numpy() for p in parts]
            for op, fn in ((dist.ReduceOp.SUM, np.sum), (dist.ReduceOp.MAX, np.max),
                           (dist.ReduceOp.MIN, np.min), (dist.ReduceOp.PRODUCT, np.prod)):
                if dtype is nbtorch.uint8 and op is dist.ReduceOp.PRODUCT:
                    continue
                t = parts[r].clone()
                dist.all_reduce(t, op=op)
                eq(t, fn(np.stack(ref), axis=0), 1e-2 if dtype.itemsize == 2 else 0)
    t = data(r, (4,), nbtorch.float64)
    dist.all_reduce(t, dist.ReduceOp.AVG)
    eq(t, np.mean([data(k, (4,), nbtorch.float64).numpy() for k in range(n)], 0))
    for op, fn in ((dist.ReduceOp.BAND, np.bitwise_and), (dist.ReduceOp.BOR, np.bitwise_or),
                   (dist.ReduceOp.BXOR, np.bitwise_xor)):
        t = data(r, (6,), nbtorch.int64)
        dist.all_reduce(t, op)
        eq(t, fn.reduce([data(k, (6,), nbtorch.int64).numpy() for k in range(n)]))
    b = nbtorch.tensor([True, False, r == 0])
    dist.all_reduce(b)
    eq(b, [True, False, True])


@check
def all_reduce_noncontiguous_and_async():
    r, n = dist.get_rank(), dist.get_world_size()
    base = data(r, (4, 6))
    view = base[:, ::2]
    dist.all_reduce(view)
    want = sum(data(k, (4, 6)).numpy() for k in range(n))
    eq(base[:, ::2], want[:, ::2])
    eq(base[:, 1::2], data(r, (4, 6)).numpy()[:, 1::2])       # untouched
    t = data(r, (1000,))
    work = dist.all_reduce(t, async_op=True)
    assert work.wait() is True and work.is_completed()
    eq(t, sum(data(k, (1000,)).numpy() for k in range(n)))


@check
def all_reduce_errors():
    for op, dtype, msg in ((dist.ReduceOp.BAND, nbtorch.float32, "Cannot use ReduceOp.BAND"),
                           (dist.ReduceOp.AVG, nbtorch.int64, "AVG")):
        try:
            dist.all_reduce(nbtorch.ones(2, dtype=dtype), op)
        except RuntimeError as e:
            assert msg in str(e), e
        else:
            raise AssertionError("no error")
    try:
        dist.all_reduce([1, 2])
    except TypeError as e:
        assert "Tensor" in str(e)


@check
def broadcast_and_reduce():
    r, n = dist.get_rank(), dist.get_world_size()
    for src in range(n):
        for dtype in (nbtorch.float32, nbtorch.int64, nbtorch.bfloat16, nbtorch.bool):
            t = data(r, (3, 4), dtype)
            dist.broadcast(t.T, src=src)           # non-contiguous target
            eq(t, data(src, (3, 4), dtype).numpy() if dtype is not nbtorch.bfloat16
               else data(src, (3, 4), dtype).float().numpy())
    t = data(r, (5,))
    dist.reduce(t, dst=n - 1, op=dist.ReduceOp.SUM)
    if r == n - 1:
        eq(t, sum(data(k, (5,)).numpy() for k in range(n)))
    try:
        dist.broadcast(t, src=n + 3)
    except ValueError as e:
        assert f"{n + 3}" in str(e)
    else:
        raise AssertionError("broadcast from a missing rank did not raise")


@check
def gathers_and_scatters():
    r, n = dist.get_rank(), dist.get_world_size()
    x = data(r, (2, 3))
    out = [nbtorch.empty(2, 3) for _ in range(n)]
    dist.all_gather(out, x)
    for k in range(n):
        eq(out[k], data(k, (2, 3)).numpy())
    big = nbtorch.empty(2 * n, 3)
    dist.all_gather_into_tensor(big, x)
    eq(big, np.concatenate([data(k, (2, 3)).numpy() for k in range(n)]))
    got = [nbtorch.zeros(2, 3) for _ in range(n)] if r == 0 else None
    dist.gather(x, got, dst=0)
    if r == 0:
        for k in range(n):
            eq(got[k], data(k, (2, 3)).numpy())
    mine = nbtorch.empty(4, dtype=nbtorch.int64)
    dist.scatter(mine, [nbtorch.full((4,), k * 3, dtype=nbtorch.int64) for k in range(n)]
                 if r == 1 else None, src=1)
    eq(mine, np.full(4, r * 3))
    outs = nbtorch.empty(3)
    dist.reduce_scatter(outs, [data(r, (3,)) * (k + 1) for k in range(n)])
    eq(outs, sum(data(k, (3,)).numpy() for k in range(n)) * (r + 1))
    flat = nbtorch.empty(2)
    dist.reduce_scatter_tensor(flat, data(r, (2 * n,)), op=dist.ReduceOp.MAX)
    eq(flat, np.max([data(k, (2 * n,)).numpy() for k in range(n)], 0)[2 * r:2 * r + 2])
    try:
        dist.all_gather([nbtorch.empty(2, 3)], x)
    except ValueError as e:
        assert "one tensor per rank" in str(e)


@check
def data_movement_over_dtypes_layouts_and_async():
    """broadcast / all_gather / gather / scatter / reduce_scatter_tensor for several dtypes,
    empty and non-contiguous tensors, each also with async_op=True."""
    r, n = dist.get_rank(), dist.get_world_size()
    for dtype in (nbtorch.float64, nbtorch.int32, nbtorch.bfloat16, nbtorch.bool):
        for shape, strided in (((3,), False), ((0,), False), ((3, 2), True)):
            def mk(k):
                t = data(k, shape, dtype)
                return t.T.contiguous().T if strided else t     # a transposed layout

            def ref(k):
                return data(k, shape, dtype).float().numpy()
            for async_op in (False, True):
                t = mk(r)
                w = dist.broadcast(t, src=n - 1, async_op=async_op)
                if async_op:
                    w.wait()
                eq(t.float(), ref(n - 1))
                outs = [mk(0) * 0 if dtype is not nbtorch.bool else mk(0) for _ in range(n)]
                w = dist.all_gather(outs, mk(r), async_op=async_op)
                if async_op:
                    assert w.wait() and w.result() is outs
                for k in range(n):
                    eq(outs[k].float(), ref(k))
                got = [mk(0) for _ in range(n)] if r == 0 else None
                w = dist.gather(mk(r), got, dst=0, async_op=async_op)
                if async_op:
                    w.wait()
                if r == 0:
                    for k in range(n):
                        eq(got[k].float(), ref(k))
                mine = mk(0)
                w = dist.scatter(mine, [mk(k) for k in range(n)] if r == 0 else None, src=0,
                                 async_op=async_op)
                if async_op:
                    w.wait()
                eq(mine.float(), ref(r))
        if dtype is not nbtorch.bool:
            out = nbtorch.empty(2, dtype=dtype)
            dist.reduce_scatter_tensor(out, data(r, (2 * n,), dtype), async_op=True).wait()
            want = sum(data(k, (2 * n,), dtype).double().numpy() for k in range(n))
            eq(out.float(), want[2 * r:2 * r + 2], 1e-2 if dtype is nbtorch.bfloat16 else 0)


@check
def all_to_all_both_forms():
    r, n = dist.get_rank(), dist.get_world_size()
    inputs = [nbtorch.full((k + 1,), float(10 * r + k)) for k in range(n)]
    outputs = [nbtorch.empty(r + 1) for _ in range(n)]
    dist.all_to_all(outputs, inputs)
    for k in range(n):
        eq(outputs[k], np.full(r + 1, 10 * k + r))
    inp = nbtorch.arange(2 * n).float() + 100 * r
    out = nbtorch.empty(2 * n)
    dist.all_to_all_single(out, inp)
    eq(out, np.concatenate([np.arange(2 * r, 2 * r + 2) + 100 * k for k in range(n)]))


@check
def point_to_point():
    r, n = dist.get_rank(), dist.get_world_size()
    if r == 0:
        dist.send(nbtorch.arange(5).float(), dst=1)
        w = dist.isend(nbtorch.ones(3, 2, dtype=nbtorch.float16), dst=1, tag=7)
        w.wait()
        t = nbtorch.empty(2)
        src = dist.recv(t)                  # from any rank
        assert src == 1, src
        eq(t, [4, 2])
    elif r == 1:
        t = nbtorch.empty(5)
        assert dist.recv(t, src=0) == 0
        eq(t, np.arange(5))
        h = nbtorch.zeros(2, 3, dtype=nbtorch.float16).T      # non-contiguous target
        dist.irecv(h, src=0, tag=7).wait()
        eq(h, np.ones((3, 2)))
        ops = [dist.P2POp(dist.isend, nbtorch.tensor([4.0, 2.0]), 0)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
    try:
        dist.send(nbtorch.ones(1), dst=r)
    except ValueError as e:
        assert "should not be the same" in str(e)


@check
def objects_and_groups():
    r, n = dist.get_rank(), dist.get_world_size()
    objs = [None] * n
    dist.all_gather_object(objs, {"rank": r})
    assert objs == [{"rank": k} for k in range(n)], objs
    lst = [r, "x"] if r == 0 else [None, None]
    dist.broadcast_object_list(lst, src=0)
    assert lst == [0, "x"], lst
    out = [None]
    dist.scatter_object_list(out, [k * k for k in range(n)] if r == 0 else None, src=0)
    assert out == [r * r]
    got = [None] * n if r == 0 else None
    dist.gather_object(r + 0.5, got, dst=0)
    if r == 0:
        assert got == [k + 0.5 for k in range(n)]
    g = dist.new_group([n - 1])
    t = nbtorch.ones(2)
    dist.all_reduce(t, group=g)             # a one-rank group: no change, others skip
    eq(t, [1, 1])
    assert dist.get_rank(g) == (0 if r == n - 1 else -1)
    assert dist.get_world_size(g) == (1 if r == n - 1 else -1)
    dist.barrier()
    w = dist.barrier(async_op=True)
    w.wait()


@check
def mismatch_detected_in_debug_mode():
    """NBTORCH_DISTRIBUTED_DEBUG=DETAIL (read at each call): shapes differing across ranks
    raise on every rank, naming both fingerprints."""
    import os
    r = dist.get_rank()
    os.environ["NBTORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    try:
        dist.all_reduce(nbtorch.ones(3 + r))
    except RuntimeError as e:
        msg = str(e)
    else:
        msg = "no error"
    finally:
        del os.environ["NBTORCH_DISTRIBUTED_DEBUG"]
    assert "Detected mismatch between collectives on ranks" in msg, msg
    assert "TensorShape=[[3]]" in msg and "TensorShape=[[4]]" in msg, msg
    t = nbtorch.ones(2)
    dist.all_reduce(t)                     # the group still works after the check
    eq(t, [dist.get_world_size()] * 2)


@check
def launcher_environment():
    """Started by python -m nbtorch.distributed.run: torchrun's variables are set."""
    import os
    r, n = dist.get_rank(), dist.get_world_size()
    env = os.environ
    assert (env["RANK"], env["WORLD_SIZE"], env["LOCAL_RANK"], env["LOCAL_WORLD_SIZE"]) == \
        (str(r), str(n), str(r), str(n)), dict(env)
    assert env["MASTER_ADDR"] and env["MASTER_PORT"] and env["OMP_NUM_THREADS"] == "1"
    assert env["OPENBLAS_NUM_THREADS"] == "1"


@check
def sampler_partitions_the_dataset():
    from nbtorch.utils.data import DistributedSampler
    n = dist.get_world_size()
    for size, drop_last in ((10, False), (11, False), (11, True)):
        s = DistributedSampler(range(size), shuffle=True, seed=3, drop_last=drop_last)
        s.set_epoch(2)
        every = [None] * n
        dist.all_gather_object(every, list(s))
        seen = sorted(i for part in every for i in part)
        assert len({len(p) for p in every}) == 1, every        # as many steps on each rank
        if drop_last:
            assert len(seen) == size - size % n and len(set(seen)) == len(seen)
        else:
            assert set(seen) == set(range(size)) and len(seen) == -(-size // n) * n


def main():
    dist.init_process_group("gloo")
    run_checks(CHECKS)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
