#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: the CUDA tests on the real device (gpu-marked tests
# included), the compile-only type check, then the GPU benchmarks — one command, one log.
#   scripts/gpu_check.sh [--quick]
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
unset NUMBA_ENABLE_CUDASIM
status=0
"$PY" - <<'PYEOF' || exit 1
from numba import cuda
if not cuda.is_available():
    raise SystemExit("gpu_check: no CUDA GPU visible (numba.cuda.is_available() is False)")
d = cuda.get_current_device()
print(f"gpu_check: {d.name} cc={d.compute_capability}")
PYEOF
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || true
echo "== CUDA tests on the GPU"
NBTORCH_TEST_DEVICES=cuda "$PY" -m pytest tests/cuda tests/ops tests/nn -q -p no:cacheprovider -rs \
    --deselect tests/cuda/test_typecheck.py::test_every_cuda_kernel_compiles_for_sm90 || status=1
echo "== compile-only type check (sm_90)"
"$PY" -m nbtorch.cuda.typecheck || status=1
echo "== GPU benchmarks"
"$PY" benchmarks/bench_cuda.py "$@" || status=1
exit $status
