"""How much of PyTorch's `torch.nn` surface nbtorch has (needs PyTorch; skipped without it).

`pytest tests/api/test_nn_coverage.py -s` prints, per namespace (nn, nn.functional,
nn.init, nn.utils and its submodules), the in-scope names nbtorch has and the ones it
lacks; the figures also go into pytest's terminal summary (tests/api/conftest.py).
A public name counts unless it is another library's object (typing, functools...),
a docstring template, or listed in OUT_OF_SCOPE with its reason. Coverage is reported,
not enforced; a stale OUT_OF_SCOPE entry fails. `nn.utils.prune` and the quantized
modules (nn.quantized, qat, intrinsic...) are in scope: another part of the work owns them.
"""
import fnmatch
import importlib
import inspect

import pytest

NAMESPACES = ("nn", "nn.functional", "nn.init", "nn.utils", "nn.utils.rnn",
              "nn.utils.parametrize", "nn.utils.parametrizations", "nn.utils.stateless",
              "nn.utils.prune")

OUT_OF_SCOPE = {
    "nn.functional": [
        # TorchScript's annotation types and dispatch helpers
        "BroadcastingList*", "assert_int_or_pair",
        # the __torch_function__ protocol's entry points (no tensor subclass dispatch)
        "handle_torch_function", "has_torch_function*",
        # float8 / grouped GEMM backends (CUDA-only scaled matmuls)
        "scaled_mm", "scaled_grouped_mm", "grouped_mm", "ScalingType", "SwizzleType",
    ],
    "nn": [
        # typing aliases of the C++ modules' signatures
        "common_types",
    ],
}


def _module(root, label):
    try:
        return importlib.import_module(f"{root.__name__}.{label}")
    except ImportError:
        return None


def _is_api(torch, label, name, obj):
    """False for another library's object, PyTorch's private helpers, re-imports (torch,
    Tensor, nn's classes and modules in a submodule), flags and doc templates."""
    if obj is torch or obj is torch.Tensor or isinstance(obj, (str, bool)):
        return False
    if isinstance(obj, dict) and name.endswith("_notes"):
        return False
    if inspect.ismodule(obj):
        return obj.__name__ == f"torch.{label}.{name}"
    if label != "nn" and getattr(torch.nn, name, None) is obj:
        return False
    mod = getattr(obj, "__module__", None)
    if (inspect.isclass(obj) or inspect.isfunction(obj)) and mod is not None:
        return mod.startswith("torch") and not any(p.startswith("_") for p in mod.split("."))
    return not (mod or "").startswith(("typing", "collections", "functools", "copy", "enum"))


def public_names(torch, label):
    ns = _module(torch, label)
    out = []
    for name in dir(ns):
        if name.startswith("_"):
            continue
        try:
            obj = getattr(ns, name)
        except Exception:
            continue
        if _is_api(torch, label, name, obj):
            out.append(name)
    return sorted(out)


def _out_of_scope(label, name):
    return any(fnmatch.fnmatchcase(name, p) for p in OUT_OF_SCOPE.get(label, ()))


def coverage(torch, nbtorch):
    """{label: (in-scope names, names nbtorch has, names it lacks)}."""
    report = {}
    for label in NAMESPACES:
        nb = _module(nbtorch, label)
        scope = [n for n in public_names(torch, label) if not _out_of_scope(label, n)]
        have = [n for n in scope if nb is not None and hasattr(nb, n)]
        report[label] = (scope, have, [n for n in scope if n not in set(have)])
    return report


def test_nn_out_of_scope_entries_are_current():
    """Every entry names something PyTorch has and nbtorch lacks."""
    torch = pytest.importorskip("torch")
    import nbtorch
    stale = []
    for label, pats in OUT_OF_SCOPE.items():
        theirs = public_names(torch, label)
        ours = [n for n in dir(_module(nbtorch, label) or object()) if not n.startswith("_")]
        for p in pats:
            if not any(fnmatch.fnmatchcase(n, p) for n in theirs):
                stale.append(f"{label}: {p!r} (PyTorch has none)")
            stale += [f"{label}.{n} (implemented)" for n in ours if fnmatch.fnmatchcase(n, p)]
    assert not stale, "stale out-of-scope entries: " + ", ".join(stale)


def test_nn_coverage_report(request):
    torch = pytest.importorskip("torch")
    import nbtorch
    summary = []
    for label, (scope, have, missing) in coverage(torch, nbtorch).items():
        frac = len(have) / len(scope) if scope else 1.0
        line = f"{label:26s} {len(have):4d} / {len(scope):4d}  {100 * frac:5.1f}%"
        summary.append(line)
        print(f"\n{line}\n  missing: {' '.join(missing) or '-'}")
    prev = getattr(request.config, "_nbtorch_api_coverage", None) or []
    request.config._nbtorch_api_coverage = prev + summary
