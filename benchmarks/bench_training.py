"""Training steps and model blocks, float32: the cases (see _driver.py).

- LeNet-5 on 1x28x28, batch 64, SGD momentum 0.9, CrossEntropyLoss: one step
  (zero_grad, forward, loss, backward, step).
- MLP 784-512-256-10, batch 128, Adam, CrossEntropyLoss: one step.
- Transformer encoder block (d_model 128, 4 heads, feed-forward 512, dropout 0.1,
  batch_first) on batch 16 x seq 64, training mode: forward + backward from a
  given output gradient (parameter and input gradients).
- LSTM, 2 layers, input and hidden 256, seq 50 x batch 32: forward + backward of
  the output sequence from a given gradient.
- DataLoader: one epoch of 10 shuffled batches of 64x1x28x28 (default collate).

nbtorch and PyTorch run the same code (`lib` swapped). LeNet, the MLP and the
Transformer block also get a peak-memory row (each in a fresh worker).

    python benchmarks/bench_training.py [--only lstm] [--rounds 5]
"""
from _case import Case, both

_GROUP = "training steps and blocks, float32"


def _rng():
    import numpy as np
    return np, np.random.default_rng(0)


def _classifier_step(model_fn, opt_fn, shape, batch):
    def setup(lib):
        np, rng = _rng()
        lib.manual_seed(0)
        model = model_fn(lib.nn)
        opt = opt_fn(lib.optim, model.parameters())
        x = lib.tensor(rng.standard_normal((batch,) + shape, dtype=np.float32))
        y = lib.tensor(rng.integers(0, 10, batch))
        loss_fn = lib.nn.CrossEntropyLoss()

        def step():
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
        return step
    return setup


def _lenet(nn):
    return nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(16 * 4 * 4, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                         nn.Linear(84, 10))


def _mlp(nn):
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def _fwd_bwd(module_fn, x_shape):
    """Forward + backward of module_fn(nn) on a standard-normal input of x_shape."""
    def setup(lib):
        np, rng = _rng()
        lib.manual_seed(0)
        module = module_fn(lib.nn)
        module.train()
        x = lib.tensor(rng.standard_normal(x_shape, dtype=np.float32), requires_grad=True)
        out = module(x)
        out = out[0] if isinstance(out, tuple) else out
        g = lib.tensor(rng.standard_normal(tuple(out.shape), dtype=np.float32))

        def step():
            module.zero_grad()
            x.grad = None
            out = module(x)
            (out[0] if isinstance(out, tuple) else out).backward(g)
        return step
    return setup


def _transformer(nn):
    return nn.TransformerEncoderLayer(128, 4, dim_feedforward=512, dropout=0.1,
                                      batch_first=True)


def _lstm(nn):
    return nn.LSTM(256, 256, num_layers=2)


def _dataloader(lib):
    np, rng = _rng()
    ds = lib.utils.data.TensorDataset(
        lib.tensor(rng.standard_normal((640, 1, 28, 28), dtype=np.float32)),
        lib.tensor(rng.integers(0, 10, 640)))
    loader = lib.utils.data.DataLoader(ds, batch_size=64, shuffle=True)

    def epoch():
        for _ in loader:
            pass
    return epoch


CASES = [
    Case("LeNet-5 step, batch 64, SGD momentum", _GROUP, memory=True, **both(_classifier_step(
        _lenet, lambda optim, p: optim.SGD(p, lr=0.01, momentum=0.9), (1, 28, 28), 64))),
    Case("MLP 784-512-256-10 step, batch 128, Adam", _GROUP, memory=True, **both(
        _classifier_step(_mlp, lambda optim, p: optim.Adam(p, lr=1e-3), (784,), 128))),
    Case("Transformer block d128 h4 ff512, b16 s64, fwd+bwd", _GROUP, memory=True,
         **both(_fwd_bwd(_transformer, (16, 64, 128)))),
    Case("LSTM 2x256, seq 50 batch 32, fwd+bwd", _GROUP, **both(_fwd_bwd(_lstm, (50, 32, 256)))),
    Case("DataLoader epoch, 10 batches of 64x1x28x28", _GROUP, **both(_dataloader)),
]

if __name__ == "__main__":
    import _driver
    raise SystemExit(_driver.main(["bench_training"]))
