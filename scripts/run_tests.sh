#!/usr/bin/env bash
# `make test`: the main suite (CPU tests, notebooks, PTX type checks of every CUDA kernel),
# then the CUDA tests on Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM must be set before
# Numba is imported, so that suite has a process of its own): tests/cuda plus every
# device-generic test of tests/ops and tests/nn (those taking the `device` fixture). Each phase runs on every
# core with pytest-xdist; the workers share Numba's on-disk cache (its writes are locked,
# see kernels/_numba_cache.py). Ends with the wall time of each phase, so a slower suite
# shows in every CI log. Extra arguments go to both pytest runs:
#   scripts/run_tests.sh                 # what `make test` runs (no `slow` tests)
#   scripts/run_tests.sh -m ""           # everything, `slow` dtype sweeps included (make test-all)
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
WORKERS="${NBTORCH_TEST_WORKERS:-auto}"

# Bytecode is written during the tests even where the environment says not to: pytest
# keeps its assertion-rewritten test modules as bytecode only where it may write it, and
# without it every pytest worker of both phases rewrites all ~420 test modules (15 s of
# CPU each, measured: collection 15.0 s with PYTHONDONTWRITEBYTECODE=1, 6.6 s once cached).
unset PYTHONDONTWRITEBYTECODE
# Subprocesses (notebook kernels, DataLoader workers, the PTX check, the cache tests) import
# nbtorch afresh: its bytecode written once here, not by several of them at once (only
# files changed since the last run).
"$PY" -m compileall -q nbtorch kernels >/dev/null

declare -a NAMES TIMES
status=0
phase() {
    local name=$1; shift
    local start=$SECONDS
    echo "== $name"
    "$@" || status=1
    NAMES+=("$name"); TIMES+=($((SECONDS - start)))
}

phase "main suite" "$PY" -m pytest -n "$WORKERS" --dist worksteal -q "$@"
phase "CUDA simulator suite" env NUMBA_ENABLE_CUDASIM=1 \
    "$PY" -m pytest tests/cuda tests/ops tests/nn -n "$WORKERS" --dist worksteal -q \
    -p no:cacheprovider "$@"

echo "== wall time per phase"
total=0
for i in "${!NAMES[@]}"; do
    printf '  %-22s %4d s\n' "${NAMES[$i]}" "${TIMES[$i]}"
    total=$((total + TIMES[i]))
done
printf '  %-22s %4d s\n' "total" "$total"
exit $status
