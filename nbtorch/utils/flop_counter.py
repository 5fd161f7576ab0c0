"""torch.utils.flop_counter: count the flops of the code run inside ``with FlopCounterMode():``.

Counts are PyTorch's: per ATen op (``aten.mm``, ``aten.addmm``, ``aten.bmm``,
``aten.convolution``, ``aten.convolution_backward``, attention...), per module, forward and
backward, with PyTorch's formulas (`register_flop_formula`, ``custom_mapping``). Example::

    with FlopCounterMode(display=False) as fc:
        model(x).sum().backward()
    fc.get_total_flops()                  # 6 * params * tokens for a transformer...
    fc.get_flop_counts()["Global"]        # {aten.addmm: ..., aten.mm: ...}

How: PyTorch watches ATen ops from a TorchDispatchMode. nbtorch has no ATen level, so a
TorchFunctionMode sees the public calls (``F.linear``, ``torch.matmul``, ``x @ w``,
``F.conv2d``, ``F.scaled_dot_product_attention``, ``torch.einsum``...), `_flop_calls`
replays the ATen calls PyTorch makes for each, and a pre-hook on the call's autograd node
counts the backward ones when that node runs. `ModuleTracker` attributes both to modules
as PyTorch's does; nn.MultiheadAttention is counted as a whole as PyTorch runs it.

Differences from PyTorch: ops that nbtorch's own code calls internally, ops inside a custom
autograd.Function's backward and custom ops are not seen; a backward run outside the
``with`` block of the forward is not counted, nor one run inside it for a forward run
before; scaled_dot_product_attention on 4-D inputs counts as PyTorch counts on a GPU
(PyTorch's CPU kernel is missing from its table, so PyTorch on CPU counts 0, or the math
path's bmm's with dropout); PyTorch's fused kernels missing from its table (the inference
paths of MultiheadAttention and Transformer layers, LSTM on CPU (oneDNN) and cuDNN RNNs)
count nothing there, while nbtorch counts their matmuls. Backward attribution to modules
follows the order nodes run in: where a module is never left in backward (its inputs need
no gradient) and two branches are independent, the branch nbtorch's engine runs later is
attributed to it too, as PyTorch's is for the branch its engine runs later.
"""
from collections import defaultdict

from .. import _torch_function as _tf
from ..overrides import TorchFunctionMode
from . import _flop_calls as C, _flop_calls_nn as CN
from ._flop_formulas import (aten_key, flop_registry, register_flop_formula,  # noqa: F401
                             shape_wrapper)
from .module_tracker import ModuleTracker

__all__ = ["FlopCounterMode", "register_flop_formula"]


# -- the table -------------------------------------------------------------------------------

suffixes = ["", "K", "M", "B", "T"]


def get_suffix_str(number):
    """The suffix for `number` (1.01B shows as 1001M, as PyTorch's)."""
    return suffixes[max(0, min(len(suffixes) - 1, (len(str(number)) - 2) // 3))]


def convert_num_with_suffix(number, suffix):
    return f"{number / 1000 ** suffixes.index(suffix):.3f}" + suffix


def convert_to_percent_str(num, denom):
    return "0%" if denom == 0 else f"{num / denom:.2%}"


def _number(s):
    try:
        return int(s)
    except ValueError:
        try:
            return float(s)
        except ValueError:
            return None


def _tabulate(rows, headers):
    """tabulate's "simple" table (columns left, right, right; leading spaces kept): a
    column of numbers only is printed as numbers ('240.000' as '240')."""
    cols = list(zip(*rows))
    for j, col in enumerate(cols):
        nums = [_number(v) for v in col]
        if j and all(n is not None for n in nums):
            cols[j] = tuple(format(n, "g") if isinstance(n, float) else str(n) for n in nums)
    widths = [max([len(h) + 2] + [len(v) for v in col]) for h, col in zip(headers, cols)]

    def line(cells):
        return "  ".join(c.ljust(w) if j == 0 else c.rjust(w)
                         for j, (c, w) in enumerate(zip(cells, widths)))
    out = [line(headers), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in zip(*cols)]
    return "\n".join(out)


# -- which public functions are counted ------------------------------------------------------

def _m(t):
    return None if t is None else C.meta(t)


def _unbatched(x, w, out):
    """Unbatched conv input: counted with a batch of one, as PyTorch runs it."""
    if x.dim() == w.dim() - 1:
        return C.Meta((1,) + tuple(x.shape), None, x.requires_grad), (1,) + tuple(out.shape)
    return C.meta(x), tuple(out.shape)


def _tuple(v, n):
    return list(v) if isinstance(v, (tuple, list)) else (v if isinstance(v, str) else [v] * n)


def _conv_handler(n, transposed):
    def handler(out, input, weight, bias=None, stride=1, padding=0, *rest, **kw):
        if transposed:
            output_padding, groups, dilation = (list(rest) + [0, 1, 1][len(rest):])[:3]
            output_padding = kw.get("output_padding", output_padding)
        else:
            dilation, groups = (list(rest) + [1, 1][len(rest):])[:2]
            output_padding = 0
        dilation, groups = kw.get("dilation", dilation), kw.get("groups", groups)
        x, out_shape = _unbatched(input, weight, out)
        return CN.conv(x, C.meta(weight), _m(bias), _tuple(stride, n), _tuple(padding, n),
                       _tuple(dilation, n), transposed, _tuple(output_padding, n), groups,
                       out_shape)
    return handler


def _h_mm(out, a, b, **kw):
    return C.mm(C.meta(a), C.meta(b)) if a.dim() == 2 and b.dim() == 2 else ([], [])


def _h_matmul(out, a, b, **kw):
    return C.matmul(C.meta(a), C.meta(b))


def _h_rmatmul(out, a, b):
    return C.matmul(C.meta(b), C.meta(a))


def _h_bmm(out, a, b, **kw):
    return C.bmm(C.meta(a), C.meta(b))


def _h_addmm(out, input, a, b, **kw):
    return C.addmm(tuple(input.shape), C.meta(a), C.meta(b))


def _h_baddbmm(out, input, a, b, **kw):
    return C.baddbmm(tuple(input.shape), C.meta(a), C.meta(b))


def _h_linear(out, input, weight, bias=None):
    return C.linear(C.meta(input), C.meta(weight), _m(bias))


def _h_einsum(out, equation, *operands):
    if not isinstance(equation, str):       # sublist form: op, [0, 1], op, [1, 2], [0, 2]
        args = (equation,) + operands
        operands, subs = args[0:len(args) - len(args) % 2:2], args[1::2]

        def term(sub):
            return "".join("..." if i is Ellipsis else chr(ord("a") + i) for i in sub)
        equation = ",".join(term(sub) for sub in subs[:len(operands)])
        if len(args) % 2:
            equation += "->" + term(args[-1])
    elif len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    return CN.einsum(equation, [C.meta(t) for t in operands])


def _h_tensordot(out, a, b, dims=2, **kw):
    if isinstance(dims, int):
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    da, db = [d % a.dim() for d in da], [d % b.dim() for d in db]
    return C.tensordot(C.meta(a), C.meta(b), da, db)


def _h_inner(out, a, b, **kw):
    if a.dim() == 0 or b.dim() == 0:
        return [], []
    return C.tensordot(C.meta(a), C.meta(b), [a.dim() - 1], [b.dim() - 1])


def _h_multi_dot(out, tensors, **kw):
    return C.multi_dot([C.meta(t) for t in tensors])


def _h_chain_matmul(out, *matrices, **kw):
    return C.multi_dot([C.meta(t) for t in matrices])


def _h_sdpa(out, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
            scale=None, enable_gqa=False):
    return CN.sdpa(C.meta(query), C.meta(key), C.meta(value), enable_gqa)


def _h_mha(out, query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
           in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight,
           out_proj_bias, training=True, key_padding_mask=None, need_weights=True,
           attn_mask=None, use_separate_proj_weight=False, q_proj_weight=None,
           k_proj_weight=None, v_proj_weight=None, **kw):
    return CN.mha(C.meta(query), C.meta(key), C.meta(value), num_heads, _m(in_proj_weight),
                  _m(in_proj_bias), bias_k, add_zero_attn, _m(out_proj_weight),
                  _m(out_proj_bias), need_weights,
                  attn_mask is not None or key_padding_mask is not None,
                  use_separate_proj_weight, _m(q_proj_weight), _m(k_proj_weight),
                  _m(v_proj_weight), query is key, key is value)


def _transposed(m):
    s, st = list(m.shape), list(m.strides)
    s[0], s[1], st[0], st[1] = s[1], s[0], st[1], st[0]
    return C.Meta(s, st, m.rg)


def _mha_module(mod, args, kwargs):
    """nn.MultiheadAttention's call as PyTorch runs it (batch-first inputs transposed)."""
    names = ("query", "key", "value", "key_padding_mask", "need_weights", "attn_mask")
    bound = dict(zip(names, args), **kwargs)
    q, k, v = bound["query"], bound["key"], bound["value"]
    same_qk, same_kv = q is k, k is v
    metas = [C.meta(t) for t in (q, k, v)]
    if mod.batch_first and q.dim() == 3:
        metas = [_transposed(m) for m in metas]
    return CN.mha(*metas, mod.num_heads, _m(mod.in_proj_weight), _m(mod.in_proj_bias),
                  mod.bias_k, mod.add_zero_attn, _m(mod.out_proj.weight),
                  _m(mod.out_proj.bias), bound.get("need_weights", True),
                  bound.get("attn_mask") is not None
                  or bound.get("key_padding_mask") is not None,
                  not mod._qkv_same_embed_dim, _m(mod.q_proj_weight), _m(mod.k_proj_weight),
                  _m(mod.v_proj_weight), same_qk, same_kv)


_HANDLERS = {}


def _handlers():
    """{public function or Tensor method (the undecorated one): handler}."""
    if _HANDLERS:
        return _HANDLERS
    import nbtorch
    from ..nn import functional as F
    T = nbtorch.Tensor
    wrapped = dict(_tf._TENSOR_METHODS)           # Tensor's own methods while a mode runs

    def method(name):
        return wrapped.get(name, vars(T).get(name))

    table = [
        ((nbtorch.mm, method("mm")), _h_mm),
        ((nbtorch.matmul, method("matmul"), method("__matmul__"), nbtorch.linalg.matmul),
         _h_matmul),
        ((method("__rmatmul__"),), _h_rmatmul),
        ((nbtorch.bmm, method("bmm")), _h_bmm),
        ((nbtorch.addmm, method("addmm")), _h_addmm),
        ((nbtorch.baddbmm, method("baddbmm")), _h_baddbmm),
        ((F.linear,), _h_linear),
        ((nbtorch.einsum,), _h_einsum),
        ((nbtorch.tensordot,), _h_tensordot),
        ((nbtorch.inner, method("inner")), _h_inner),
        ((nbtorch.linalg.multi_dot,), _h_multi_dot),
        ((getattr(nbtorch, "chain_matmul", None),), _h_chain_matmul),
        ((F.scaled_dot_product_attention,), _h_sdpa),
        ((F.multi_head_attention_forward,), _h_mha),
        ((F.conv1d, getattr(nbtorch, "conv1d", None)), _conv_handler(1, False)),
        ((F.conv2d, getattr(nbtorch, "conv2d", None)), _conv_handler(2, False)),
        ((F.conv3d, getattr(nbtorch, "conv3d", None)), _conv_handler(3, False)),
        ((F.conv_transpose1d, getattr(nbtorch, "conv_transpose1d", None)),
         _conv_handler(1, True)),
        ((F.conv_transpose2d, getattr(nbtorch, "conv_transpose2d", None)),
         _conv_handler(2, True)),
        ((F.conv_transpose3d, getattr(nbtorch, "conv_transpose3d", None)),
         _conv_handler(3, True)),
    ]
    for functions, handler in table:
        for f in functions:
            if f is not None:
                _HANDLERS[getattr(f, "__torch_function_original__", f)] = handler
    return _HANDLERS


def _handler(func):
    table = _handlers()
    h = table.get(getattr(func, "__torch_function_original__", func))
    if h is None and getattr(func, "__wrapped__", None) is not None:
        h = table.get(func.__wrapped__)
    return h


def _first_node(out):
    """The autograd node of the call's (first) tensor result, if it has one."""
    if isinstance(out, (tuple, list)):
        for o in out:
            node = _first_node(o)
            if node is not None:
                return node
        return None
    return getattr(out, "grad_fn", None)


# -- the mode --------------------------------------------------------------------------------

class FlopCounterMode:
    """Counts the flops of what runs inside ``with FlopCounterMode(...) as fc:``.

    Args:
        mods: not needed (PyTorch warns and ignores it too).
        depth: module depth of the printed table.
        display: print the table when the block ends.
        custom_mapping: {``torch.ops.aten.<op>``: formula(*shapes, out_shape=...)} to add
            to or override the formulas.
    """

    def __init__(self, mods=None, depth=2, display=True, custom_mapping=None):
        import warnings
        self.flop_counts = defaultdict(lambda: defaultdict(int))
        self.depth = depth
        self.display = display
        self.mode = None
        if mods is not None:
            warnings.warn("mods argument is not needed anymore, you can stop passing it",
                          stacklevel=2)
        self.flop_registry = {**flop_registry, **{
            k: v if getattr(v, "_get_raw", False) else shape_wrapper(v)
            for k, v in (custom_mapping or {}).items()}}
        self.mod_tracker = ModuleTracker()
        self._active = False
        self._inside = 0            # depth of modules counted as a whole (attention)

    def get_total_flops(self):
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self):
        """{module name: {op: flops}}, "Global" holding everything."""
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_table(self, depth=None):
        """The per-module table PyTorch prints (modules deeper than `depth` left out)."""
        depth = self.depth if depth is None else depth
        if depth is None:
            depth = 999999
        global_flops = self.get_total_flops()
        suffix = get_suffix_str(global_flops)
        subsumed = [False]

        def process_mod(name, depth):
            total = sum(self.flop_counts[name].values())
            subsumed[0] |= total >= global_flops
            pad = " " * depth
            rows = [[pad + name, convert_num_with_suffix(total, suffix),
                     convert_to_percent_str(total, global_flops)]]
            for k, v in self.flop_counts[name].items():
                rows.append([pad + " - " + str(k), convert_num_with_suffix(v, suffix),
                             convert_to_percent_str(v, global_flops)])
            return rows

        values = []
        for mod in sorted(self.flop_counts.keys()):
            if mod == "Global":
                continue
            mod_depth = mod.count(".") + 1
            if mod_depth > depth:
                continue
            values.extend(process_mod(mod, mod_depth - 1))
        if "Global" in self.flop_counts and not subsumed[0]:
            for row in values:
                row[0] = " " + row[0]
            values = process_mod("Global", 0) + values
        if not values:
            values = [["Global", "0", "0%"]]
        return _tabulate(values, ["Module", "FLOP", "% Total"])

    # -- counting --
    def _count(self, calls):
        registry = self.flop_registry
        parents = set(self.mod_tracker.parents)
        for name, args, out in calls:
            key = aten_key(name)
            formula = registry.get(key)
            if formula is None:
                continue
            flops = formula(*args, out_val=out)
            for par in parents:
                self.flop_counts[par][key] += flops

    def _record(self, calls, out):
        fwd, bw = calls
        self._count(fwd)
        node = _first_node(out) if bw else None
        if node is not None:
            def count_backward(grad_outputs):
                if self._active:
                    self._count(bw)
            node.register_prehook(count_backward)

    def _on_call(self, func, args, kwargs):
        handler = None if self._inside else _handler(func)
        out = func(*args, **kwargs)
        if handler is not None:
            self._record(handler(out, *args, **kwargs), out)
        return out

    def _module_pre(self, mod, args):
        from ..nn import MultiheadAttention
        if isinstance(mod, MultiheadAttention):
            self._inside += 1

    def _module_post(self, mod, args, kwargs, output):
        from ..nn import MultiheadAttention
        if isinstance(mod, MultiheadAttention):
            self._inside -= 1
            if output is not None and not self._inside:
                self._record(_mha_module(mod, args, kwargs), output)

    def __enter__(self):
        from ..nn.modules.module import (register_module_forward_hook,
                                         register_module_forward_pre_hook)
        self.flop_counts.clear()
        # ours before the tracker's: its post-hook has not yet left the module
        self._handles = [register_module_forward_pre_hook(self._module_pre),
                         register_module_forward_hook(self._module_post, with_kwargs=True,
                                                      always_call=True)]
        self.mod_tracker.__enter__()
        self._active = True
        self.mode = _FlopCounterMode(self)
        self.mode.__enter__()
        return self

    def __exit__(self, *args):
        if self.mode is None:
            raise AssertionError("Internal error: FlopCounter.__exit__ called but mode is None")
        self.mode.__exit__(*args)
        self.mode = None
        self._active = False
        self.mod_tracker.__exit__()
        for h in self._handles:
            h.remove()
        if self.display:
            print(self.get_table(self.depth))
        return False


class _FlopCounterMode(TorchFunctionMode):
    """Sees the public calls and hands them to the counter."""

    def __init__(self, counter):
        super().__init__()
        self.counter = counter

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return self.counter._on_call(func, args, kwargs or {})
