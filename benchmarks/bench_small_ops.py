"""What one call of a common op costs on small tensors (see _driver.py).

Inference, data preparation and small models spend their time in the Python around
each op, not in its arithmetic: a survey of 83 ops on 8x16 float32 (December 2026)
found 45 slower than 2x PyTorch, among them ``torch.tensor`` of a list of ints
(4x), ``x.repeat`` (2.2x), ``F.pad`` (6.7x), ``index_select`` (7.6x), ``torch.eye``
(10x), none of which a case measured. These cases keep a set of them measured, each
under no_grad on 8x16 float32 (x, y), a 16x16 weight, 8 int64 labels, a 2x3x8x8 image:

    python benchmarks/run.py --only "small ops" --rounds 5
"""
from _case import Case, both

_GROUP = "small ops on 8x16 float32, no grad"


def _setup(fn):
    def setup(lib):
        import numpy as np
        rng = np.random.default_rng(0)
        x = lib.tensor(rng.standard_normal((8, 16), dtype=np.float32))
        y = lib.tensor(rng.standard_normal((8, 16), dtype=np.float32))
        w = lib.tensor(rng.standard_normal((16, 16), dtype=np.float32))
        ctx = {"x": x, "y": y, "w": w, "idx": lib.tensor([0, 3, 5]),
               "labels": lib.tensor([1, 2, 3, 0, 1, 2, 3, 0]), "mask": x > 0,
               "img": lib.tensor(rng.standard_normal((2, 3, 8, 8), dtype=np.float32)),
               "ints": list(range(64)), "emb": lib.nn.Embedding(10, 16),
               "bn": lib.nn.BatchNorm1d(16).eval(), "ln": lib.nn.LayerNorm(16)}

        def step():
            with lib.no_grad():
                return fn(lib, ctx)
        return step
    return setup


_OPS = [
    ("torch.tensor(list of 64 ints)", lambda t, c: t.tensor(c["ints"])),
    ("torch.eye(16)", lambda t, c: t.eye(16)),
    ("torch.randn(8, 16)", lambda t, c: t.randn(8, 16)),
    ("torch.full((8, 16), 2.0)", lambda t, c: t.full((8, 16), 2.0)),
    ("x @ w", lambda t, c: c["x"] @ c["w"]),
    ("einsum('ij,jk->ik')", lambda t, c: t.einsum("ij,jk->ik", c["x"], c["w"])),
    ("x.clamp(0, 1)", lambda t, c: c["x"].clamp(0, 1)),
    ("x * 2", lambda t, c: c["x"] * 2),
    ("x == y", lambda t, c: c["x"] == c["y"]),
    ("x.copy_(y)", lambda t, c: c["x"].copy_(c["y"])),
    ("x.clone()", lambda t, c: c["x"].clone()),
    ("x.to(float64)", lambda t, c: c["x"].to(t.float64)),
    ("x.repeat(2, 1)", lambda t, c: c["x"].repeat(2, 1)),
    ("x.reshape(-1)", lambda t, c: c["x"].reshape(-1)),
    ("x[idx]", lambda t, c: c["x"][c["idx"]]),
    ("x.index_select(0, idx)", lambda t, c: c["x"].index_select(0, c["idx"])),
    ("x[:, 1:5]", lambda t, c: c["x"][:, 1:5]),
    ("x[0, 0].item()", lambda t, c: c["x"][0, 0].item()),
    ("F.pad(x, (1, 1))", lambda t, c: t.nn.functional.pad(c["x"], (1, 1))),
    ("x.min()", lambda t, c: c["x"].min()),
    ("x.argmax(-1)", lambda t, c: c["x"].argmax(-1)),
    ("x.cumsum(-1)", lambda t, c: c["x"].cumsum(-1)),
    ("x.std()", lambda t, c: c["x"].std()),
    ("F.layer_norm(x, (16,))", lambda t, c: t.nn.functional.layer_norm(c["x"], (16,))),
    ("nn.BatchNorm1d eval", lambda t, c: c["bn"](c["x"])),
    ("nn.Embedding, 8 labels", lambda t, c: c["emb"](c["labels"])),
    ("F.max_pool2d 2x3x8x8", lambda t, c: t.nn.functional.max_pool2d(c["img"], 2)),
    ("F.cross_entropy", lambda t, c: t.nn.functional.cross_entropy(c["x"], c["labels"])),
]

CASES = [Case(name, _GROUP, **both(_setup(fn))) for name, fn in _OPS]
