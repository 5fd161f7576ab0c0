"""CUDA graphs (``torch.cuda.CUDAGraph``, ``graph``, ``make_graphed_callables``), emulated.

Numba exposes no stream capture, so nbtorch records the capture itself
(`_capture.py`): each kernel the captured code runs is kept with the device
arrays it read and wrote, and `replay()` runs those kernels again on the same
arrays. PyTorch's contract holds:

- tensors made during capture are the graph's static outputs: replay rewrites
  them in place (the graph keeps their memory alive, like PyTorch's private pool);
- new inputs go in by copying into the static input tensors before `replay()`;
- host-side Python ran once, at capture (shapes, branches, checks are frozen);
  a host <-> device copy or ``.item()`` during capture raises, as in PyTorch;
- random ops draw fresh numbers on each replay (the generator advances);
- only the capturing thread's kernels are recorded (whatever `capture_error_mode`).

What cannot be captured: ops whose CUDA path reads data on the host (embedding,
gather, index_select, tensor indexing, nll_loss/cross_entropy read their indices;
exponential_/cauchy_... sample on the host) raise the capture error rather than
replay stale indices.

What it does not do: remove launch overhead. A replay still launches each kernel
from Python (it only skips the op layer: argument checks, dispatch, autograd), so
it is a correctness-preserving way to run PyTorch programs that use graphs, not a
speed-up. nbtorch's optimizers keep their step count on the host, so capture
forward and backward (``make_graphed_callables``), not ``optimizer.step()`` of
Adam-like optimizers, whose bias correction would stay at the captured step.

Example:
    >>> g = nbtorch.cuda.CUDAGraph()
    >>> static_x = nbtorch.zeros(8, device='cuda')
    >>> with nbtorch.cuda.graph(g):
    ...     static_y = static_x * 2 + 1
    >>> static_x.copy_(nbtorch.arange(8.0, device='cuda')); g.replay()   # static_y updated
"""
import gc
import itertools

from . import _capture, _runtime

__all__ = ["CUDAGraph", "graph", "make_graphed_callables", "is_current_stream_capturing",
           "graph_pool_handle"]

_POOLS = itertools.count(1)
_MODES = ("global", "thread_local", "relaxed")


def is_current_stream_capturing():
    """True while this thread is inside a CUDA graph capture (never raises)."""
    rec = _capture.ACTIVE[0]
    return rec is not None and rec.here()


def graph_pool_handle():
    """An opaque memory-pool handle; accepted where PyTorch takes one (every graph here
    keeps the memory of its own buffers, so pools are not shared)."""
    return (next(_POOLS), 0)


class CUDAGraph:
    """A captured sequence of kernels to replay on the same buffers (see the module)."""

    def __init__(self, keep_graph=False):
        _runtime.lazy_init()                 # RuntimeError without CUDA, as PyTorch's
        self._keep_graph = keep_graph
        self._nodes = None
        self._recorder = None
        self._pool = None
        self._debug = False

    def capture_begin(self, pool=None, capture_error_mode="global", check_input_liveness=False):
        """Start recording this thread's kernels (prefer ``with nbtorch.cuda.graph(g):``)."""
        if capture_error_mode not in _MODES:
            raise RuntimeError(f"Unknown capture error mode. Expected `global`, "
                               f"`thread_local`, or `relaxed`, got {capture_error_mode}")
        if self._nodes is not None:
            raise RuntimeError("This CUDAGraph instance already owns a captured graph. To "
                               "capture a new graph, create a new instance.")
        if _capture.ACTIVE[0] is not None:
            raise RuntimeError("Cannot begin a CUDA graph capture while another capture is "
                               "underway")
        _runtime.lazy_init()
        self._pool = pool if pool is not None else graph_pool_handle()
        rec = self._recorder = _capture.Recorder()
        rec.start(_runtime.simulator())
        _capture.ACTIVE[0] = rec

    def capture_end(self):
        """Stop recording; the graph can then be replayed."""
        rec = self._recorder
        if rec is None or _capture.ACTIVE[0] is not rec:
            raise RuntimeError("capture_end() called without a capture_begin() on this graph")
        rec.stop()
        _capture.ACTIVE[0] = None
        self._nodes = tuple(rec.nodes)
        self._recorder = None

    def _abort(self):
        """End a capture that failed (the graph stays empty)."""
        rec = self._recorder
        if rec is not None:
            rec.stop()
            if _capture.ACTIVE[0] is rec:
                _capture.ACTIVE[0] = None
            self._recorder = None

    def instantiate(self):
        """Nothing to build: replay runs the recorded kernels (kept for PyTorch's API)."""
        self._check_captured()

    def _check_captured(self):
        if self._nodes is None:
            raise RuntimeError("Called CUDAGraph::replay without a preceding successful "
                               "capture.")

    def replay(self):
        """Run the captured kernels again on the same buffers, on the current stream."""
        self._check_captured()
        stream = _runtime.raw_stream()
        sim = _runtime.simulator()
        outer = _capture.ACTIVE[0]           # replay inside another capture is recorded
        if outer is not None and not outer.here():
            outer = None
        for node in self._nodes:
            if node[0] == "kernel":
                _capture.relaunch(node, stream, sim)
                continue
            _, launcher, args, captured = node
            if outer is not None:
                result = outer.launch(launcher, args, stream)
            else:
                result = launcher(*args, stream=stream)
            _same_result(launcher, captured, result)

    def reset(self):
        """Drop the recorded kernels and the buffers they held."""
        self._abort()
        self._nodes = None

    def pool(self):
        return self._pool

    def enable_debug_mode(self):
        self._debug = True

    def debug_dump(self, debug_path):
        """Write the recorded kernels, one a line."""
        self._check_captured()
        with open(debug_path, "w") as f:
            for node in self._nodes:
                name = getattr(node[1], "__name__", type(node[1]).__name__)
                f.write(f"{node[0]} {name}\n")

    def raw_cuda_graph(self):
        raise RuntimeError("nbtorch's CUDA graphs are recorded by nbtorch, not by CUDA: there "
                           "is no cudaGraph_t")

    raw_cuda_graph_exec = raw_cuda_graph

    def __len__(self):
        return 0 if self._nodes is None else len(self._nodes)


def _same_result(launcher, captured, result):
    """Check a replayed launcher's result against the capture's: device arrays it made are
    copied into the captured ones (the static outputs); host values must not change."""
    if result is captured or (result is None and captured is None):
        return
    if isinstance(captured, tuple) and isinstance(result, tuple) and \
            len(captured) == len(result):
        for c, r in zip(captured, result):
            _same_result(launcher, c, r)
        return
    if hasattr(captured, "copy_to_device") and hasattr(result, "copy_to_device"):
        if captured.size:
            captured.copy_to_device(result, stream=_runtime.raw_stream())
        return
    try:
        same = bool(captured == result)
    except Exception:
        same = False
    if not same:
        name = getattr(launcher, "__name__", "a kernel")
        raise RuntimeError(f"CUDA graph replay: {name} gave the host a different value "
                           f"({captured!r} at capture, {result!r} now): its result depends "
                           "on the data, which a CUDA graph cannot replay")


class graph:
    """``with nbtorch.cuda.graph(g):`` captures the block's kernels into CUDAGraph `g`
    (on a side stream, as PyTorch's), ready for ``g.replay()``."""

    default_capture_stream = None

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global",
                 enable_annotations=False, check_input_liveness=False):
        from .streams import Stream, stream as stream_ctx
        if stream is None and graph.default_capture_stream is None:
            graph.default_capture_stream = Stream()
        self.pool = pool
        self.capture_stream = stream if stream is not None else graph.default_capture_stream
        self.stream_ctx = stream_ctx(self.capture_stream)
        self.cuda_graph = cuda_graph
        self.capture_error_mode = capture_error_mode

    def __enter__(self):
        from .memory import empty_cache
        from .streams import synchronize
        synchronize()
        gc.collect()
        empty_cache()
        self.stream_ctx.__enter__()
        try:
            self.cuda_graph.capture_begin(self.pool, capture_error_mode=self.capture_error_mode)
        except BaseException:
            self.stream_ctx.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is not None:
                self.cuda_graph._abort()
            else:
                self.cuda_graph.capture_end()
        finally:
            self.stream_ctx.__exit__(exc_type, exc, tb)
        return False


def make_graphed_callables(callables, sample_args, num_warmup_iters=3,
                           allow_unused_input=False, pool=None):
    """Graphed versions of callables (modules or functions): forward and backward each
    captured once from `sample_args`, replayed on every call (`_graphed_callables.py`)."""
    from ._graphed_callables import make
    return make(callables, sample_args, num_warmup_iters, allow_unused_input, pool)
