#!/usr/bin/env bash
# The CUDA test suite on Numba's CUDA simulator (no GPU needed), in its own process:
# NUMBA_ENABLE_CUDASIM must be set before Numba is imported. Extra arguments go to pytest.
#   scripts/run_cuda_tests.sh            # whole suite, ~1 minute
#   scripts/run_cuda_tests.sh -k copy    # a subset
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
NUMBA_ENABLE_CUDASIM=1 "$PY" -m pytest tests/cuda tests/ops tests/nn -q -p no:cacheprovider "$@"
