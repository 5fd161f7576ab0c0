"""`nn.parallel.DistributedDataParallel`: one model replica per process (rank), each on its
share of the batch; gradients are averaged over the ranks during backward, so every
replica takes the same optimizer step as one process on the whole batch would.

At construction the parameters and buffers of rank 0 are broadcast to every rank (after
checking that all ranks hold the same parameter shapes). The averaging runs in buckets
overlapped with backward (see `_reducer.py`). Needs `nbtorch.distributed` initialised
(``init_process_group``; ranks started by ``mpiexec`` or ``nbtorch.distributed.run``).
"""
import contextlib

from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    """Data-parallel training over a process group, like PyTorch's.

    Args:
        module: the model (its parameters already on their device).
        device_ids, output_device, dim: accepted for PyTorch's signature (one device per
            process: the module's own).
        broadcast_buffers: copy rank 0's buffers (e.g. BatchNorm running statistics) to
            every rank at the start of each training forward.
        process_group: the group to average over (default: the world).
        bucket_cap_mb: bucket size (default 25 MB; the first bucket 1 MB).
        find_unused_parameters: find, after each forward, the parameters its output does
            not depend on, and reduce them as zero instead of waiting for them forever.
        gradient_as_bucket_view: `.grad` of CPU parameters are views of the buckets (one
            copy less per step).

    Example (on every rank):
        >>> model = DistributedDataParallel(Net())
        >>> loss_fn(model(x_local), y_local).backward()   # grads averaged over the ranks
        >>> opt.step()
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, init_sync=True, process_group=None,
                 bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, **kwargs):
        super().__init__()
        import nbtorch.distributed as dist
        from nbtorch.distributed.process_group import resolve
        self.process_group = resolve(process_group)     # ValueError before init
        if not any(p.requires_grad for p in module.parameters()):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        self.module = module
        self.device_ids = list(device_ids) if device_ids else []
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb)
                                    * 1024 * 1024)
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        params = _unique_trainable(module)
        self._dist = dist
        self._verify_same_model(params)
        if init_sync:
            self._sync_module_states()
        from ._reducer import Reducer
        self.reducer = Reducer(params, self.process_group,
                               25 if bucket_cap_mb is None else bucket_cap_mb,
                               find_unused_parameters, gradient_as_bucket_view)

    def _verify_same_model(self, params):
        """Every rank must hold the same parameter shapes and dtypes, as in PyTorch."""
        dist = self._dist
        mine = [(tuple(p.shape), str(p.dtype)) for p in params]
        every = [None] * dist.get_world_size(self.process_group)
        dist.all_gather_object(every, mine, group=self.process_group)
        me = dist.get_rank(self.process_group)
        for r, theirs in enumerate(every):
            if theirs == mine:
                continue
            if len(theirs) != len(mine):
                raise RuntimeError(
                    f"DDP expects same model across all ranks, but Rank {me} has {len(mine)} "
                    f"params, while rank {r} has inconsistent {len(theirs)} params.")
            i = next(k for k, (a, b) in enumerate(zip(mine, theirs)) if a != b)
            raise RuntimeError(
                f"DDP expects same model across all ranks, but Rank {me} has parameter {i} "
                f"of shape {mine[i][0]} ({mine[i][1]}), while rank {r} has shape "
                f"{theirs[i][0]} ({theirs[i][1]}).")

    def _sync_module_states(self):
        """Parameters and buffers from the group's first rank to every other rank."""
        src = self.process_group.ranks[0]
        for t in list(self.module.parameters()) + list(self.module.buffers()):
            self._dist.broadcast(t.detach(), src=src, group=self.process_group)

    def forward(self, *inputs, **kwargs):
        from ... import is_grad_enabled
        self.reducer.check_prior_finished()
        sync = is_grad_enabled() and self.require_backward_grad_sync
        if self.broadcast_buffers and self.training and self.require_forward_param_sync:
            src = self.process_group.ranks[0]
            for b in self.module.buffers():
                self._dist.broadcast(b.detach(), src=src, group=self.process_group)
        out = self.module(*inputs, **kwargs)
        if sync:
            self.reducer.prepare(out)
        return out

    @contextlib.contextmanager
    def no_sync(self):
        """Backward inside this context accumulates gradients locally, without averaging;
        the first backward after it averages the accumulated total."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def join(self, *args, **kwargs):
        raise NotImplementedError("DistributedDataParallel.join (uneven inputs) is not "
                                  "implemented in nbtorch; give every rank as many batches "
                                  "(DistributedSampler pads to equal length)")

    def register_comm_hook(self, state, hook):
        raise NotImplementedError("DDP communication hooks are not implemented in nbtorch "
                                  "(buckets are averaged with all_reduce)")

    def _get_ddp_logging_data(self):
        return {"bucket_sizes": [b.flat.nbytes for b in self.reducer.buckets],
                "world_size": self._dist.get_world_size(self.process_group),
                "last_wait_s": self.reducer.wait_s,
                "last_reduced_before_wait": self.reducer.done_fraction}


def _unique_trainable(module):
    seen, out = set(), []
    for p in module.parameters():
        if p.requires_grad and id(p) not in seen:
            seen.add(id(p))
            out.append(p)
    return out
