"""int8 quantization on Digits: accuracy, size on disk and inference time, nbtorch vs PyTorch.

Two models on the bundled 8x8 Digits (1,438 train / 359 test images):

- CNN: examples/demo.py's DigitsCNN (conv 1->16, relu, maxpool, conv 16->32, relu,
  linear 512->10) with module ReLUs, so conv+relu fuse, and quant/dequant stubs.
- MLP: 64-512-256-10 with ReLUs.
- WIDE (timings only): one Linear 1024 -> 1024 on random data, the GEMM on its own.

Each in four forms: float32; dynamic int8 (`quantize_dynamic`, the Linear layers);
static int8 (fuse, `prepare`, calibrate on the training set, `convert`; x86 default
qconfig: histogram observer with 7-bit activations, per-channel int8 weights); QAT int8
(`prepare_qat` from the trained float weights, 3 epochs of fine-tuning, `convert`).

`--accuracy` (the default when run as a script) trains the float models once in an
nbtorch process, then quantizes the same float weights in an nbtorch process and in a
PyTorch process (fbgemm/x86 engine) and prints test accuracy and state-dict size.
The timing cases (also in `make bench`) run one forward pass of a 256-image batch
through the driver: each framework in its own worker, rounds interleaved; QAT models
convert to the same modules as static ones and time the same.

Pruning (`nn.utils.prune.global_unstructured`, L1) of the same float weights at 50% and
90% sparsity: test accuracy right after pruning and after 3 epochs of fine-tuning.

    python benchmarks/bench_quant.py                 # accuracy tables, then timings
    python benchmarks/bench_quant.py --accuracy-only
    python benchmarks/bench_quant.py --rounds 5      # driver options go to the timings
"""
import gzip
import io
import json
import os
import subprocess
import sys
import tempfile

from _case import Case, both

_GROUP = "Digits inference, batch 256 (int8)"
BATCH = 256
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUSE = {"cnn": [["conv1", "relu1"], ["conv2", "relu2"]],
        "mlp": [["fc1", "relu1"], ["fc2", "relu2"]], "wide": []}


# ---- data and models (written once against the shared API) --------------------------

def digits():
    """(train_x, train_y, test_x, test_y) as NumPy arrays: the split of
    nbtorch.vision.datasets.Digits, read without importing either framework."""
    import numpy as np
    path = os.path.join(ROOT, "nbtorch", "vision", "data", "digits.csv.gz")
    with gzip.open(path, "rt") as handle:
        table = np.loadtxt(handle, delimiter=",", dtype=np.int64)
    images = (table[:, :64].astype(np.float32) / np.float32(16)).reshape(-1, 1, 8, 8)
    labels = table[:, 64]
    test = np.zeros(len(labels), bool)
    for label in np.unique(labels):                   # Digits' stratified fixed split
        members = sorted(np.flatnonzero(labels == label).tolist(),
                         key=lambda i: (i * 2654435761) % 2 ** 32)
        test[members[:int(round(len(members) * 0.2))]] = True
    return images[~test], labels[~test], images[test], labels[test]


def build(lib, kind):
    """The float model `kind` ('cnn' or 'mlp') in framework `lib`, with quant stubs."""
    nn, q = lib.nn, lib.ao.quantization

    class DigitsCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant, self.dequant = q.QuantStub(), q.DeQuantStub()
            self.conv1, self.relu1 = nn.Conv2d(1, 16, 3, padding=1), nn.ReLU()
            self.pool = nn.MaxPool2d(2)
            self.conv2, self.relu2 = nn.Conv2d(16, 32, 3, padding=1), nn.ReLU()
            self.fc = nn.Linear(32 * 4 * 4, 10)

        def forward(self, x):
            x = self.pool(self.relu1(self.conv1(self.quant(x))))
            x = self.relu2(self.conv2(x))
            return self.dequant(self.fc(x.flatten(1)))

    class DigitsMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant, self.dequant = q.QuantStub(), q.DeQuantStub()
            self.fc1, self.relu1 = nn.Linear(64, 512), nn.ReLU()
            self.fc2, self.relu2 = nn.Linear(512, 256), nn.ReLU()
            self.fc3 = nn.Linear(256, 10)

        def forward(self, x):
            x = self.relu1(self.fc1(self.quant(x.flatten(1))))
            return self.dequant(self.fc3(self.relu2(self.fc2(x))))
    class Wide(nn.Module):                # one 1024 x 1024 layer: the GEMM on its own
        def __init__(self):
            super().__init__()
            self.quant, self.dequant = q.QuantStub(), q.DeQuantStub()
            self.fc = nn.Linear(1024, 1024)

        def forward(self, x):
            return self.dequant(self.fc(self.quant(x)))
    return {"cnn": DigitsCNN, "mlp": DigitsMLP, "wide": Wide}[kind]()


def load_weights(lib, model, arrays):
    model.load_state_dict({k: lib.tensor(v) for k, v in arrays.items()})
    return model


def random_weights(lib, kind):
    """Deterministic float weights (same in every framework) for the timing cases."""
    import numpy as np
    rng = np.random.default_rng(0)
    shapes = {k: tuple(v.shape) for k, v in build(lib, kind).state_dict().items()}
    return {k: (rng.standard_normal(s) * (1 / np.sqrt(max(1, np.prod(s[1:]))))).astype(
        np.float32) for k, s in shapes.items()}


def quantize(lib, kind, arrays, variant, train_x, train_y=None):
    """The eval-mode model of `variant` built from float weights `arrays`."""
    q = lib.ao.quantization
    model = load_weights(lib, build(lib, kind), arrays).eval()
    if variant == "float32":
        return model
    if variant == "dynamic":
        return q.quantize_dynamic(model, {lib.nn.Linear}, dtype=lib.qint8)
    if variant == "static":
        model.qconfig = q.get_default_qconfig("x86")
        prepared = q.prepare(q.fuse_modules(model, FUSE[kind]) if FUSE[kind] else model)
        with lib.no_grad():
            for i in range(0, len(train_x), BATCH):
                prepared(lib.tensor(train_x[i:i + BATCH]))
        return q.convert(prepared)
    if variant == "qat":
        model.train()
        model.qconfig = q.get_default_qat_qconfig("x86")
        prepared = q.prepare_qat(q.fuse_modules_qat(model, FUSE[kind]) if FUSE[kind]
                                 else model)
        _train(lib, prepared, train_x, train_y, epochs=3, lr=1e-4, seed=1)
        prepared.eval()
        return q.convert(prepared)
    raise ValueError(variant)


def _train(lib, model, x, y, epochs, lr, seed):
    import numpy as np
    opt = lib.optim.Adam(model.parameters(), lr=lr)
    loss_fn = lib.nn.CrossEntropyLoss()
    rng = np.random.default_rng(seed)
    model.train()
    for _ in range(epochs):
        order = rng.permutation(len(x))
        for i in range(0, len(x), 64):
            idx = order[i:i + 64]
            opt.zero_grad()
            loss_fn(model(lib.tensor(x[idx])), lib.tensor(y[idx])).backward()
            opt.step()
    model.eval()


def accuracy(lib, model, x, y):
    with lib.no_grad():
        pred = model(lib.tensor(x)).argmax(1)
    return float((pred.numpy() == y).mean())


def size_on_disk(lib, model):
    buf = io.BytesIO()
    lib.save(model.state_dict(), buf)
    return buf.tell()


# ---- accuracy and size: each framework in its own process -------------------------

def _framework(name):
    import importlib
    lib = importlib.import_module(name)
    if name == "torch":
        import warnings
        warnings.filterwarnings("ignore")
        lib.backends.quantized.engine = "x86"
    lib.set_num_threads(1)
    return lib


def train_float(path):
    """Train both float models in nbtorch (Adam, 20 epochs) and save their weights."""
    lib = _framework("nbtorch")
    train_x, train_y, _, _ = digits()
    out = {}
    for kind in ("cnn", "mlp"):
        lib.manual_seed(0)
        model = build(lib, kind)
        _train(lib, model, train_x, train_y, epochs=20, lr=3e-3, seed=0)
        out.update({f"{kind}/{k}": v.detach().numpy() for k, v in model.state_dict().items()})
    import numpy as np
    np.savez(path, **out)


def report(name, path):
    """Accuracy and size of every variant in framework `name` (JSON on stdout)."""
    import time
    import numpy as np
    lib = _framework(name)
    train_x, train_y, test_x, test_y = digits()
    saved = np.load(path)
    rows = []
    for kind in ("cnn", "mlp"):
        arrays = {k.split("/", 1)[1]: saved[k] for k in saved.files if k.startswith(kind)}
        for variant in ("float32", "dynamic", "static", "qat"):
            t0 = time.perf_counter()
            model = quantize(lib, kind, arrays, variant, train_x, train_y)
            rows.append(dict(model=kind, variant=variant,
                             accuracy=accuracy(lib, model, test_x, test_y),
                             size=size_on_disk(lib, model),
                             seconds=time.perf_counter() - t0))
    json.dump(rows, sys.stdout)


def _run(args):
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run([sys.executable, "-c", f"import bench_quant as b; b.{args}"],
                         cwd=here, capture_output=True, text=True, timeout=1800,
                         env=dict(os.environ, OMP_NUM_THREADS="1"))
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    return out.stdout


def accuracy_table():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "float.npz")
        _run(f"train_float({path!r})")
        results = {"nbtorch": json.loads(_run(f"report('nbtorch', {path!r})"))}
        try:
            import importlib.util
            if importlib.util.find_spec("torch"):
                results["torch"] = json.loads(_run(f"report('torch', {path!r})"))
        except RuntimeError as e:
            print(f"PyTorch run failed: {e}")
    fws = list(results)
    print("\nDigits test accuracy (359 images) and state-dict size; the same float weights "
          "(trained in nbtorch) in every framework\n")
    head = "| model | variant | " + " | ".join(f"{f} acc" for f in fws) + " | " + \
        " | ".join(f"{f} size KB" for f in fws) + " | nbtorch size vs float |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    base = {}
    for i, row in enumerate(results["nbtorch"]):
        if row["variant"] == "float32":
            base[row["model"]] = row["size"]
        accs = " | ".join(f"{results[f][i]['accuracy'] * 100:.1f}%" for f in fws)
        sizes = " | ".join(f"{results[f][i]['size'] / 1024:.1f}" for f in fws)
        ratio = "-" if row["variant"] == "float32" else \
            f"{base[row['model']] / row['size']:.2f}x smaller"
        print(f"| {row['model']} | {row['variant']} | {accs} | {sizes} | {ratio} |")
    return results


# ---- pruning: accuracy at 50% and 90% sparsity, before and after fine-tuning --------

def prune_report(name, path):
    """Global L1 unstructured pruning of every Linear/Conv2d weight of the float models at
    50% and 90%, test accuracy right after pruning and after 3 epochs of fine-tuning with
    the masks in place (JSON on stdout)."""
    import numpy as np
    import importlib
    lib = _framework(name)
    prune = importlib.import_module(f"{name}.nn.utils.prune")   # torch needs the import
    train_x, train_y, test_x, test_y = digits()
    saved = np.load(path)
    rows = []
    for kind in ("cnn", "mlp"):
        arrays = {k.split("/", 1)[1]: saved[k] for k in saved.files if k.startswith(kind)}
        for amount in (0.5, 0.9):
            model = load_weights(lib, build(lib, kind), arrays).eval()
            params = [(m, "weight") for m in model.modules()
                      if isinstance(m, (lib.nn.Linear, lib.nn.Conv2d))]
            prune.global_unstructured(params, pruning_method=prune.L1Unstructured,
                                      amount=amount)
            zeros = sum(int((m.weight == 0).sum()) for m, _ in params)
            total = sum(m.weight.numel() for m, _ in params)
            before = accuracy(lib, model, test_x, test_y)
            _train(lib, model, train_x, train_y, epochs=3, lr=1e-3, seed=2)
            after = accuracy(lib, model, test_x, test_y)
            rows.append(dict(model=kind, amount=amount, sparsity=zeros / total,
                             pruned=before, tuned=after))
    json.dump(rows, sys.stdout)


def pruning_table():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "float.npz")
        _run(f"train_float({path!r})")
        results = {"nbtorch": json.loads(_run(f"prune_report('nbtorch', {path!r})"))}
        import importlib.util
        if importlib.util.find_spec("torch"):
            try:
                results["torch"] = json.loads(_run(f"prune_report('torch', {path!r})"))
            except RuntimeError as e:
                print(f"PyTorch run failed: {e}")
    fws = list(results)
    print("\nGlobal L1 pruning of the float models' weights: test accuracy right after "
          "pruning and after 3 epochs of fine-tuning (masks kept)\n")
    head = "| model | sparsity | " + " | ".join(
        f"{f} pruned | {f} fine-tuned" for f in fws) + " |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for i, row in enumerate(results["nbtorch"]):
        accs = " | ".join(f"{results[f][i]['pruned'] * 100:.1f}% | "
                          f"{results[f][i]['tuned'] * 100:.1f}%" for f in fws)
        print(f"| {row['model']} | {row['sparsity'] * 100:.0f}% | {accs} |")
    return results


# ---- timing cases (the driver) -----------------------------------------------------

def _timed(kind, variant):
    def setup(lib):
        import numpy as np
        if lib.__name__ == "torch":
            lib.backends.quantized.engine = "x86"
        train_x, train_y, test_x, _ = digits()
        if kind == "wide":
            rng = np.random.default_rng(0)
            train_x = rng.standard_normal((512, 1024)).astype(np.float32)
            test_x = rng.standard_normal((BATCH, 1024)).astype(np.float32)
        model = quantize(lib, kind, random_weights(lib, kind), variant, train_x[:512],
                         train_y[:512])
        x = lib.tensor(test_x[:BATCH])

        def step():
            with lib.no_grad():
                model(x)
        return step
    return setup


CASES = [Case(f"{kind.upper()} {variant}", _GROUP, **both(_timed(kind, variant)),
              flops=2 * BATCH * 1024 * 1024 if kind == "wide" else None)
         for kind in ("cnn", "mlp", "wide") for variant in ("float32", "dynamic", "static")]

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    argv = sys.argv[1:]
    if "--accuracy-only" in argv:
        accuracy_table()
        pruning_table()
        raise SystemExit(0)
    accuracy_table()
    pruning_table()
    import _driver
    raise SystemExit(_driver.main(["bench_quant"], argv))
