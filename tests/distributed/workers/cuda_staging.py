"""Run under mpiexec with NUMBA_ENABLE_CUDASIM=1: collectives and a DDP step on CUDA
tensors (staged through host copies; with NBTORCH_MPI_CUDA_AWARE=1 the device arrays
go to MPI directly, which the simulator's host-backed arrays allow)."""
import sys

import numpy as np
from _report import run_checks

import nbtorch
import nbtorch.distributed as dist
from nbtorch import nn


def cuda_collectives():
    r, n = dist.get_rank(), dist.get_world_size()
    for dtype in (nbtorch.float32, nbtorch.float16):
        t = (nbtorch.arange(6).reshape(2, 3) + r).to(dtype).to("cuda")
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        want = np.arange(6).reshape(2, 3) + (n - 1) / 2
        assert t.device.type == "cuda" and np.allclose(t.float().cpu().numpy(), want)
    b = nbtorch.full((4,), float(r), device="cuda")
    dist.broadcast(b, src=1)
    assert b.cpu().tolist() == [1.0] * 4
    m = (nbtorch.arange(6.0).reshape(2, 3) * (r + 1)).to("cuda")
    dist.all_reduce(m.T)                               # a non-contiguous CUDA view
    assert np.array_equal(m.cpu().numpy(), np.arange(6.0).reshape(2, 3) * n * (n + 1) / 2)
    outs = [nbtorch.empty(2, device="cuda") for _ in range(n)]
    dist.all_gather(outs, nbtorch.full((2,), float(r), device="cuda"))
    assert [o.cpu().tolist() for o in outs] == [[float(k)] * 2 for k in range(n)]
    big = nbtorch.empty(2 * n, device="cuda")
    dist.all_gather_into_tensor(big, nbtorch.full((2,), float(r), device="cuda"))
    assert big.cpu().tolist() == [float(k) for k in range(n) for _ in range(2)]
    if r == 0:
        dist.send(nbtorch.ones(3, device="cuda") * 7, dst=1)
    elif r == 1:
        got = nbtorch.zeros(3, device="cuda")
        dist.recv(got, src=0)
        assert got.cpu().tolist() == [7.0] * 3


def cuda_ddp_step():
    from nbtorch.nn.parallel import DistributedDataParallel as DDP
    nbtorch.manual_seed(dist.get_rank())
    model = nn.Linear(3, 2).to("cuda")
    net = DDP(model)
    x = nbtorch.ones(2, 3, device="cuda") * (dist.get_rank() + 1)
    net(x).sum().backward()
    w = model.weight.grad.cpu().numpy()
    assert np.allclose(w, np.full((2, 3), 2 * (1 + dist.get_world_size()) / 2)), w


if __name__ == "__main__":
    dist.init_process_group("nccl")     # an alias: MPI, CUDA tensors through the host
    run_checks([cuda_collectives, cuda_ddp_step])
    dist.destroy_process_group()
    sys.exit(0)
