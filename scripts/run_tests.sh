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

# Subprocesses (notebook kernels, DataLoader workers, the PTX check, the cache tests) import
# nbtorch afresh; where PYTHONDONTWRITEBYTECODE is set they would recompile its sources in
# every one of them. Write the bytecode once here (only files changed since the last run).
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
