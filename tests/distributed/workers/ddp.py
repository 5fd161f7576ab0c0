"""Run under mpiexec (2 ranks): DistributedDataParallel against one process training on
the whole batch. Each rank computes the one-process reference itself (same seed), so the
check needs no communication beyond DDP's own."""
import sys

import numpy as np
from _report import run_checks

import nbtorch
import nbtorch.distributed as dist
from nbtorch import nn
from nbtorch.nn.parallel import DistributedDataParallel as DDP

B = 8          # the global batch; each rank takes B / world


def make_model(seed, bn=False):
    nbtorch.manual_seed(seed)
    layers = [nn.Linear(5, 16), nn.Tanh()]
    if bn:      # the reference: plain BatchNorm over the whole batch in one process
        layers += [nn.SyncBatchNorm(16) if bn == "sync" else nn.BatchNorm1d(16)]
    layers += [nn.Linear(16, 3)]
    return nn.Sequential(*layers).double()


def batch(step):
    g = nbtorch.Generator().manual_seed(1000 + step)
    return (nbtorch.randn(B, 5, generator=g).double(),
            nbtorch.randint(0, 3, (B,), generator=g))


def local(x, y):
    r, n = dist.get_rank(), dist.get_world_size()
    k = B // n
    return x[r * k:(r + 1) * k], y[r * k:(r + 1) * k]


def close(a, b, tol=1e-6):
    for p, q in zip(a, b):
        d = float((p.detach() - q.detach()).abs().max())
        assert d <= tol, d


def train(model, opt_cls, steps, ddp, **ddp_kw):
    net = DDP(model, **ddp_kw) if ddp else model
    opt = opt_cls(net.parameters())
    for s in range(steps):
        x, y = batch(s)
        if ddp:
            x, y = local(x, y)
        opt.zero_grad()
        nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    return list(model.parameters())


def sgd(params):
    return nbtorch.optim.SGD(params, lr=0.1, momentum=0.9)


def adam(params):
    return nbtorch.optim.Adam(params, lr=0.01)


def ddp_equals_one_process_sgd():
    ref = train(make_model(0), sgd, 20, False)
    # rank 1 starts from other weights: DDP must broadcast rank 0's at construction
    got = train(make_model(dist.get_rank()), sgd, 20, True)
    close(got, ref)


def ddp_equals_one_process_adam_small_buckets():
    ref = train(make_model(0), adam, 20, False)
    got = train(make_model(0), adam, 20, True, bucket_cap_mb=0.0005)   # several buckets
    close(got, ref)


def gradient_as_bucket_view():
    ref = train(make_model(0), sgd, 5, False)
    got = train(make_model(0), sgd, 5, True, gradient_as_bucket_view=True)
    close(got, ref)


def no_sync_accumulates_like_one_big_batch():
    ref_model = make_model(0)
    for s in range(3):
        x, y = batch(s)
        nn.functional.cross_entropy(ref_model(x), y).backward()
    model = make_model(0)
    net = DDP(model)
    with net.no_sync():
        for s in range(2):
            nn.functional.cross_entropy(net(*local(*batch(s))[:1]), local(*batch(s))[1]) \
                .backward()
    # grads differ across ranks until the synced step
    nn.functional.cross_entropy(net(local(*batch(2))[0]), local(*batch(2))[1]).backward()
    close([p.grad for p in model.parameters()], [p.grad for p in ref_model.parameters()])


def sync_batch_norm_equals_batch_norm_on_the_whole_batch():
    ref_model = make_model(0, bn="plain")
    ref = train(ref_model, sgd, 5, False)
    model = make_model(0, bn="sync")
    got = train(model, sgd, 5, True)
    close(got, ref)
    close(list(model.buffers())[:2], list(ref_model.buffers())[:2], 1e-10)


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 2)
        self.b = nn.Linear(3, 2)          # never used

    def forward(self, x):
        return self.a(x)


def unused_parameters():
    nbtorch.manual_seed(0)
    net = DDP(TwoHeads(), find_unused_parameters=True)
    x = nbtorch.randn(4, 3) + dist.get_rank()
    for _ in range(2):
        net(x).sum().backward()
    assert net.module.b.weight.grad is None
    want = nbtorch.randn(4, 3)  # noqa: F841 (keeps the streams aligned)
    net2 = DDP(TwoHeads())
    net2(x).sum().backward()
    try:
        net2(x)
    except RuntimeError as e:
        assert "Expected to have finished reduction in the prior iteration" in str(e), e
    else:
        raise AssertionError("no error for an unused parameter without find_unused_parameters")


def buckets_start_during_backward():
    """When the first layer's gradient (the last one backward makes) arrives, the buckets
    of the later layers are already being all-reduced."""
    model = make_model(0)
    net = DDP(model, bucket_cap_mb=0.0005)
    seen = []
    first = model[0].weight
    first.register_post_accumulate_grad_hook(
        lambda p: seen.append([b.work is not None for b in net.reducer.buckets]))
    x, y = local(*batch(0))
    nn.functional.cross_entropy(net(x), y).backward()
    buckets = net.reducer.buckets
    mine = next(i for i, b in enumerate(buckets) if any(p is first for p in b.params))
    assert len(buckets) >= 3 and mine == len(buckets) - 1, [len(b.params) for b in buckets]
    assert seen and all(seen[0][:mine]), seen


def mismatched_models_are_refused():
    model = nn.Linear(3, 2 + dist.get_rank())
    try:
        DDP(model)
    except RuntimeError as e:
        assert "DDP expects same model across all ranks" in str(e), e
    else:
        raise AssertionError("no error")


CHECKS = [ddp_equals_one_process_sgd, ddp_equals_one_process_adam_small_buckets,
          gradient_as_bucket_view, no_sync_accumulates_like_one_big_batch,
          sync_batch_norm_equals_batch_norm_on_the_whole_batch, unused_parameters,
          buckets_start_during_backward, mismatched_models_are_refused]


if __name__ == "__main__":
    dist.init_process_group("gloo")
    run_checks(CHECKS)
    dist.destroy_process_group()
    sys.exit(0)
