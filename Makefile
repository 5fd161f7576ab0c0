# `make demo` and `make test` set everything up themselves on a fresh machine
# (Python 3.10+ only): a .venv with the project installed (editable) and its test extras.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-all test-cuda gpu-check bench clean

# After installing, the common CPU kernels compile once into Numba's disk cache
# (nbtorch/precompile.py, one process per core), so the demo's first run and a first
# Transformer-block call load them instead of compiling.
$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	$(PY) -m nbtorch.precompile || echo "precompile failed: kernels compile on first use instead"
	touch $(STAMP)

# onnxruntime-node for the test that runs an exported model without Python (tests only;
# without npm, or offline, that one test is skipped)
NODE_STAMP := $(VENV)/node/.installed
$(NODE_STAMP): $(STAMP)
	if command -v npm >/dev/null 2>&1; then \
	    npm install --silent --ignore-scripts --prefix $(VENV)/node onnxruntime-node \
	        || echo "npm install onnxruntime-node failed: the Node.js test will be skipped"; \
	else echo "no npm: the Node.js deployment test will be skipped"; fi
	mkdir -p $(VENV)/node && touch $(NODE_STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py $(ARGS)

# Two phases, each on every core (pytest-xdist): the main suite (CPU, notebooks, PTX type
# checks of every CUDA kernel), then the CUDA tests on Numba's CUDA simulator
# (NUMBA_ENABLE_CUDASIM must be set before numba loads). Prints each phase's wall time.
# `make test` leaves out the tests marked `slow` (full dtype sweeps); `make test-all` runs them.
test: $(STAMP) $(NODE_STAMP)
	scripts/run_tests.sh

test-all: $(STAMP) $(NODE_STAMP)
	scripts/run_tests.sh -m ""

test-cuda: $(STAMP)
	scripts/run_cuda_tests.sh

# On a machine with an NVIDIA GPU: CUDA tests on the device, type checks, GPU benchmarks.
gpu-check: $(STAMP)
	scripts/gpu_check.sh

# Each framework (nbtorch, NumPy, PyTorch when installed) in worker processes of its own (three,
# rounds pooled), rounds interleaved, medians with their spread (benchmarks/_driver.py). A subset:
# `make bench ARGS="--only matmul --rounds 5"` (then the multiprocessing transfer one is left out).
bench: $(STAMP)
	$(PY) benchmarks/run.py $(ARGS)
	$(if $(ARGS),,$(PY) benchmarks/bench_mp_transfer.py)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
	find . -name __pycache__ -prune -exec rm -rf {} +
