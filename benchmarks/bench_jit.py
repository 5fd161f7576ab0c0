"""nbtorch.compile against eager nbtorch and PyTorch: the cases (see _driver.py).

Each case exists twice, "eager" and "compiled": the nbtorch column runs eager
nbtorch or `nbtorch.compile`d code, the PyTorch column PyTorch eager in both (so
the compiled row's ratio is compiled nbtorch / PyTorch eager), and a third row
puts `torch.compile` in the PyTorch column where it works on this machine.

1. Ten small ops on 64 float32, forward + backward (bench_ops' case).
2. A four-op elementwise chain ``gelu(x * w + b) * y`` on 10^7 float32: one
   fused kernel when compiled. Bytes = 5 x 4 x n (four inputs, one output: what
   the fused loop must move), printed as a fraction of the copy bandwidth.
3. MLP 784-512-256-10 training step (batch 128, Adam, cross entropy), the model
   compiled (forward and backward; the optimizer step runs eagerly).
4. LSTM 2 x 256, seq 50, batch 32, forward + backward, compiled.

Compile cost (printed after the table, `--no-compile-cost` skips it): the MLP's
first compiled training call in a fresh process with an empty Numba cache
(cold), then in a second process with the cache the first one wrote (warm), with
threads pinned as the table's (--threads).

    python benchmarks/bench_jit.py [--only chain] [--rounds 5]
"""
import os
import subprocess
import sys
import tempfile
import time

from _case import Case, Skip

_SMALL = "jit: ten small ops on 64 float32, fwd+bwd"
_CHAIN = "jit: gelu(x*w+b)*y on 1e7 float32"
_TRAIN = "jit: training steps, float32"
N_CHAIN = 10 ** 7


def _np_rng():
    import numpy as np
    return np, np.random.default_rng(0)


def _ten_ops(lib, x, w, b):
    h = x * w + b
    h = lib.tanh(h) * 0.5 + lib.sigmoid(h)
    h = (h - 0.1).relu() / 1.5
    h = lib.exp(h * 0.1)
    return (h * h).sum()


def _compiled(lib, fn, how):
    """fn as is ('eager') or `lib.compile(fn)`."""
    if how == "eager":
        return fn
    try:
        return lib.compile(fn)
    except Exception as e:                          # noqa: BLE001 - reported as a skip
        raise Skip(f"{lib.__name__}.compile failed: {type(e).__name__}: {e}") from None


def _ten(how):
    def setup(lib):
        np, rng = _np_rng()
        ts = [lib.tensor(rng.standard_normal(64, dtype=np.float32), requires_grad=True)
              for _ in range(3)]
        how_here = how if lib.__name__ == "nbtorch" or how == "torch" else "eager"
        fn = _compiled(lib, lambda x, w, b: _ten_ops(lib, x, w, b), how_here)

        def step():
            for t in ts:
                t.grad = None
            fn(*ts).backward()
        _check_runs(lib, step)
        return step
    return setup


def _check_runs(lib, step):
    """Call once here, so a torch.compile that fails on this machine becomes a skip."""
    try:
        step()
    except Exception as e:                          # noqa: BLE001
        if lib.__name__ == "torch":
            raise Skip(f"torch.compile does not run here: {type(e).__name__}: "
                       f"{str(e).splitlines()[0][:120]}") from None
        raise


def _chain(how):
    def setup(lib):
        np, rng = _np_rng()
        xs = [lib.tensor(rng.standard_normal(N_CHAIN, dtype=np.float32)) for _ in range(4)]
        F = lib.nn.functional
        how_here = how if lib.__name__ == "nbtorch" or how == "torch" else "eager"
        fn = _compiled(lib, lambda x, w, b, y: F.gelu(x * w + b) * y, how_here)

        def step():
            with lib.no_grad():
                fn(*xs)
        _check_runs(lib, step)
        return step
    return setup


def _mlp(how):
    def setup(lib):
        np, rng = _np_rng()
        lib.manual_seed(0)
        nn = lib.nn
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                              nn.Linear(256, 10))
        opt = lib.optim.Adam(model.parameters(), lr=1e-3)
        x = lib.tensor(rng.standard_normal((128, 784), dtype=np.float32))
        y = lib.tensor(rng.integers(0, 10, 128))
        loss_fn = nn.CrossEntropyLoss()
        how_here = how if lib.__name__ == "nbtorch" or how == "torch" else "eager"
        run = _compiled(lib, model, how_here)

        def step():
            opt.zero_grad()
            loss_fn(run(x), y).backward()
            opt.step()
        _check_runs(lib, step)
        return step
    return setup


def _lstm(how):
    def setup(lib):
        np, rng = _np_rng()
        lib.manual_seed(0)
        lstm = lib.nn.LSTM(256, 256, num_layers=2)
        x = lib.tensor(rng.standard_normal((50, 32, 256), dtype=np.float32),
                       requires_grad=True)
        g = lib.tensor(rng.standard_normal((50, 32, 256), dtype=np.float32))
        how_here = how if lib.__name__ == "nbtorch" or how == "torch" else "eager"
        run = _compiled(lib, lstm, how_here)

        def step():
            run(x)[0].backward(g)
        _check_runs(lib, step)
        return step
    return setup


def _np_chain(np):
    _, rng = _np_rng()
    x, w, b, y = (rng.standard_normal(N_CHAIN, dtype=np.float32) for _ in range(4))
    c = np.float32(0.5)

    def step():                                    # tanh-GELU: NumPy has no erf
        h = x * w + b
        return c * h * (1 + np.tanh(np.float32(0.7978845608) * (h + np.float32(0.044715)
                                                                  * h * h * h))) * y
    return step


def _cases():
    out = []
    for how, label in (("eager", "eager"), ("compile", "compiled"),
                       ("torch", "compiled vs torch.compile")):
        out.append(Case(f"ten ops fwd+bwd, {label}", _SMALL, nbtorch=_ten(how),
                        torch=_ten(how)))
    for how, label in (("eager", "eager"), ("compile", "compiled"),
                       ("torch", "compiled vs torch.compile")):
        out.append(Case(f"gelu chain 1e7, {label}", _CHAIN, nbtorch=_chain(how),
                        torch=_chain(how), numpy=_np_chain if how == "eager" else None,
                        bytes=5 * 4 * N_CHAIN, limit="copy"))
    for how, label in (("eager", "eager"), ("compile", "compiled")):
        out.append(Case(f"MLP 784-512-256-10 step b128 Adam, {label}", _TRAIN,
                        nbtorch=_mlp(how), torch=_mlp(how)))
    for how, label in (("eager", "eager"), ("compile", "compiled")):
        out.append(Case(f"LSTM 2x256 seq50 b32 fwd+bwd, {label}", _TRAIN,
                        nbtorch=_lstm(how), torch=_lstm(how)))
    return out


CASES = _cases()


# ---- compile cost: cold and warm Numba cache, fresh processes ------------------------------

_COST = """
import time, numpy as np
t0 = time.perf_counter()
import nbtorch as torch, nbtorch.nn as nn
t1 = time.perf_counter()
rng = np.random.default_rng(0)
model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                      nn.Linear(256, 10))
x = torch.tensor(rng.standard_normal((128, 784), dtype=np.float32))
y = torch.tensor(rng.integers(0, 10, 128))
step = lambda m: nn.CrossEntropyLoss()(m(x), y).backward()
step(model)                       # eager kernels loaded (or compiled) first: not counted
t2 = time.perf_counter()
cm = torch.compile(model)
step(cm)
t3 = time.perf_counter()
step(cm)
t4 = time.perf_counter()
print(f"{t3 - t2:.3f} {t4 - t3:.4f} {t1 - t0:.2f}")
"""


def compile_cost(threads=None):
    """(cold seconds, warm seconds) of the MLP's first compiled call; `threads` pins every
    library's threads as the driver's --threads does (on a busy machine the capture's
    real matmuls otherwise measure OpenBLAS thread contention more than the compiler)."""
    from _driver import THREAD_VARS
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    with tempfile.TemporaryDirectory(prefix="nbtorch-jit-bench-") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache,
                   PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
        if threads:
            env.update({v: str(threads) for v in THREAD_VARS})
        times = []
        for _ in range(2):
            r = subprocess.run([sys.executable, "-c", _COST], env=env, capture_output=True,
                               text=True, timeout=1800, cwd=root)
            if r.returncode != 0:
                raise RuntimeError(r.stderr[-2000:])
            times.append(float(r.stdout.split()[0]))
    return times


def main(argv=None):
    import _driver
    argv = list(sys.argv[1:] if argv is None else argv)
    cost = "--no-compile-cost" not in argv
    argv = [a for a in argv if a != "--no-compile-cost"]
    code = _driver.main(["bench_jit"], argv)
    if cost and code == 0 and not any(a.startswith("--list") for a in argv):
        threads = (int(argv[argv.index("--threads") + 1]) if "--threads" in argv
                   else os.cpu_count())
        t = time.perf_counter()
        cold, warm = compile_cost(threads)
        print(f"\ncompile cost, MLP first compiled training call (fresh processes, threads "
              f"{threads or 'default'}, load {os.getloadavg()[0]:.1f}, "
              f"{time.perf_counter() - t:.0f} s to measure): cold cache {cold:.2f} s "
              f"[target < 5 s], warm cache {warm:.2f} s [target < 0.5 s]")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
