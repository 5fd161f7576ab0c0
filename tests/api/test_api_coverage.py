"""How much of PyTorch's public op surface nbtorch has (needs PyTorch; skipped without it).

`pytest tests/api/test_api_coverage.py -s` prints the names nbtorch lacks per
namespace; the per-namespace figures also go into pytest's terminal summary.
Coverage below the target does not fail (the surface grows in steps); a stale
out-of-scope list does: every entry of api_scope.OUT_OF_SCOPE must name something
PyTorch has and nbtorch does not.
(Named test_api_coverage.py: tests/distributions/test_coverage.py holds the
basename `test_coverage`, and pytest's default import mode needs basenames unique.)
"""
import fnmatch

import pytest

import nbtorch
from api_scope import OUT_OF_SCOPE, coverage, nb_namespaces, public_names

TARGET = 0.90          # the target per namespace; reported, not enforced


def test_out_of_scope_names_absent_from_nbtorch():
    """An out-of-scope name that nbtorch implements must leave the list (no PyTorch needed)."""
    nb = nb_namespaces(nbtorch)
    clash = []
    for label, pats in OUT_OF_SCOPE.items():
        if nb[label] is None:
            continue
        names = [n for n in dir(nb[label]) if not n.startswith("_")]
        for pat in pats:
            clash += [f"{label}.{n} (out of scope as {pat!r})" for n in names
                      if fnmatch.fnmatchcase(n, pat)]
    assert not clash, "implemented but listed out of scope: " + ", ".join(clash)


def test_out_of_scope_names_exist_in_pytorch():
    torch = pytest.importorskip("torch")
    stale = []
    for label, pats in OUT_OF_SCOPE.items():
        names = public_names(torch, label)
        stale += [f"{label}: {p!r}" for p in pats
                  if not any(fnmatch.fnmatchcase(n, p) for n in names)]
    assert not stale, "out-of-scope entries PyTorch no longer has: " + ", ".join(stale)


def test_coverage_report(request):
    """Per namespace: in-scope names, how many nbtorch has, and the missing ones (printed)."""
    torch = pytest.importorskip("torch")
    report = coverage(torch, nbtorch)
    summary = []
    for label, (scope, have, missing) in report.items():
        frac = len(have) / len(scope) if scope else 1.0
        line = (f"{label:8s} {len(have):4d} / {len(scope):4d}  {100 * frac:5.1f}%"
                f"{'' if frac >= TARGET else f'  (target {100 * TARGET:.0f}%)'}")
        summary.append(line)
        print(f"\n{line}\n  missing: {' '.join(missing) or '-'}")
    request.config._nbtorch_api_coverage = summary
    assert all(scope for scope, _, _ in report.values())
