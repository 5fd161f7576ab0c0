"""nn.attention.flex_attention: values, block-mask layout and errors as PyTorch 2.13's
(forward; PyTorch has no CPU backward), gradients by gradcheck and a math-path reference."""
import math
import warnings

import numpy as np
import pytest

import nbtorch
from nbtorch.nn.attention import flex_attention as nfa


@pytest.fixture(autouse=True)
def _keep_pytorchs_distribution_validation():
    """PyTorch's flex_attention compiles with dynamo, which turns off
    torch.distributions' default argument validation for the whole process: later tests
    comparing validation errors with PyTorch's saw none. Put the default back."""
    import sys
    torch = sys.modules.get("torch")
    before = torch.distributions.Distribution._validate_args if torch else None
    yield
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "distributions"):
        torch.distributions.Distribution.set_default_validate_args(
            True if before is None else before)

B, H, L, S, E = 2, 4, 70, 90, 8


def causal(b, h, q, k):
    return q >= k


def sliding(b, h, q, k):
    return (q - k).abs() <= 10


def _reference(q, k, v, scale, keep, score_add=None):
    """softmax over kept scores (NumPy, float64); zero rows and -inf lse where none is kept."""
    s = q @ np.swapaxes(k, -1, -2) * scale
    if score_add is not None:
        s = s + score_add
    s = np.where(keep, s, -np.inf)
    m = s.max(-1, keepdims=True)
    m = np.where(np.isinf(m), 0, m)
    w = np.exp(s - m)
    tot = w.sum(-1, keepdims=True)
    out = (w / np.where(tot == 0, 1, tot)) @ v
    with np.errstate(divide="ignore"):
        return out, (np.log(tot) + m)[..., 0]


@pytest.fixture(scope="module")
def qkv():
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s) for s in [(B, H, L, E), (B, H, S, E), (B, H, S, E)]]


@pytest.mark.parametrize("block", [128, 16, (32, 8)])
@pytest.mark.parametrize("name", ["causal", "and", "or"])
def test_block_masks_against_reference(qkv, name, block):
    mod = {"causal": causal, "and": nfa.and_masks(causal, sliding),
           "or": nfa.or_masks(causal, sliding)}[name]
    q, k, v = qkv
    bm = nfa.create_block_mask(mod, None, None, L, S, device="cpu", BLOCK_SIZE=block)
    out, lse = nfa.flex_attention(*(nbtorch.tensor(a) for a in qkv), block_mask=bm,
                                  return_lse=True, scale=0.3)
    qi, ki = np.arange(L)[:, None], np.arange(S)[None]
    keep = {"causal": qi >= ki, "and": (qi >= ki) & (abs(qi - ki) <= 10),
            "or": (qi >= ki) | (abs(qi - ki) <= 10)}[name]
    ref_out, ref_lse = _reference(q, k, v, 0.3, keep)
    np.testing.assert_allclose(out.numpy(), ref_out, atol=1e-12)
    np.testing.assert_allclose(lse.numpy(), ref_lse, atol=1e-12)


def test_score_mods_gqa_and_empty_rows(qkv):
    q, k, v = qkv
    rng = np.random.default_rng(1)
    bias = rng.standard_normal((H, L, S))
    tq, tk, tv, tb = (nbtorch.tensor(a) for a in (q, k, v, bias))
    out = nfa.flex_attention(tq, tk, tv, score_mod=lambda s, b, h, qi, ki: s + tb[h, qi, ki])
    np.testing.assert_allclose(out.numpy(), _reference(q, k, v, 1 / math.sqrt(E), True,
                                                       bias)[0], atol=1e-12)
    out = nfa.flex_attention(tq, tk[:, :2], tv[:, :2], enable_gqa=True)
    kk, vv = np.repeat(k[:, :2], 2, axis=1), np.repeat(v[:, :2], 2, axis=1)
    np.testing.assert_allclose(out.numpy(), _reference(q, kk, vv, 1 / math.sqrt(E), True)[0],
                               atol=1e-12)
    bm = nfa.create_block_mask(lambda b, h, qi, ki: ki < qi - 75, None, None, L, S)
    out, lse = nfa.flex_attention(tq, tk, tv, block_mask=bm, return_lse=True)
    assert np.all(out.numpy()[:, :, :76] == 0) and np.all(np.isneginf(lse.numpy()[:, :, :76]))
    out, aux = nfa.flex_attention(tq, tk, tv, return_aux=nfa.AuxRequest(lse=True))
    assert aux.max_scores is None and aux.lse.shape == (B, H, L)


def test_matches_pytorch_forward_and_block_layout(qkv):
    torch = pytest.importorskip("torch")
    from torch.nn.attention import flex_attention as tfa
    doc = np.sort(np.random.default_rng(2).integers(0, 3, size=100))
    results = []
    for lib, fa in ((torch, tfa), (nbtorch, nfa)):
        d = lib.tensor(doc)
        bm = fa.create_block_mask(lambda b, h, qi, ki: (d[qi] == d[ki]) & (qi >= ki), B, None,
                                  L, S, device="cpu", BLOCK_SIZE=16)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out, lse = fa.flex_attention(*(lib.tensor(a) for a in qkv), block_mask=bm,
                                         return_lse=True)
        results.append([out, lse, bm.kv_num_blocks, bm.kv_indices, bm.full_kv_num_blocks,
                        bm.full_kv_indices, bm.q_indices, bm.full_q_num_blocks, bm.to_dense(),
                        lib.tensor(bm.sparsity())])
        results[-1].append(fa.create_mask(causal, 1, 1, 5, 6, device="cpu"))
    for want, got in zip(*results):
        assert want.dtype.__repr__().split(".")[-1] == repr(got.dtype).split(".")[-1]
        np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-12)


def test_gradients():
    gen = nbtorch.Generator().manual_seed(0)
    q, k = (nbtorch.randn(1, 2, 6, 4, dtype=nbtorch.float64, generator=gen).requires_grad_()
            for _ in range(2))
    k = nbtorch.randn(1, 2, 7, 4, dtype=nbtorch.float64, generator=gen).requires_grad_()
    v = nbtorch.randn(1, 2, 7, 3, dtype=nbtorch.float64, generator=gen).requires_grad_()
    head_scale = nbtorch.tensor([0.5, 2.0], dtype=nbtorch.float64, requires_grad=True)
    bm = nfa.create_block_mask(causal, None, None, 6, 7, BLOCK_SIZE=2)

    def f(q, k, v, hs):
        out, lse = nfa.flex_attention(q, k, v, block_mask=bm, return_lse=True,
                                      score_mod=lambda s, b, h, qi, ki: s * hs[h])
        return out.sin().sum() + lse.sum()
    assert nbtorch.autograd.gradcheck(f, (q, k, v, head_scale))


def test_half_inputs_and_repr():
    x = nbtorch.randn(1, 1, 4, 8).half()
    out, lse = nfa.flex_attention(x, x, x, return_lse=True)
    assert out.dtype == nbtorch.float16 and lse.dtype == nbtorch.float32
    bm = nfa.create_block_mask(causal, 1, 1, 512, 512)
    assert str(bm) == ("BlockMask(shape=(1, 1, 512, 512), sparsity=37.50%, \n(0, 0)\n"
                       "██      \n████    \n██████  \n████████\n)")
    sub = bm._adjust(256, 256)
    assert sub.shape == (1, 1, 256, 256) and sub.kv_num_blocks.tolist() == [[[1, 1]]]


def test_errors():
    q = nbtorch.randn(1, 1, 4, 8)
    kv = nbtorch.randn(1, 1, 5, 8)
    with pytest.raises(ValueError, match="same number of heads but got Hq=1 and Hkv=2"):
        nfa.flex_attention(q, nbtorch.randn(1, 2, 5, 8), nbtorch.randn(1, 2, 5, 8))
    with pytest.raises(ValueError, match="same embedding dimension but got E=8 and E=4"):
        nfa.flex_attention(q, nbtorch.randn(1, 1, 5, 4), kv)
    with pytest.raises(ValueError, match="multiple of kv heads for GQA but got Hq=4 and Hkv=3"):
        nfa.flex_attention(nbtorch.randn(1, 4, 4, 8), nbtorch.randn(1, 3, 5, 8),
                           nbtorch.randn(1, 3, 5, 8), enable_gqa=True)
    with pytest.raises(NotImplementedError, match="4D"):
        nfa.flex_attention(q[0], kv[0], kv[0])
    bm = nfa.create_block_mask(causal, 1, 1, 512, 512)
    with pytest.raises(ValueError, match=r"block_mask was created for .* q_len=4 and kv_len=5"):
        nfa.flex_attention(q, kv, kv, block_mask=bm)
    with pytest.raises(ValueError, match="both return_lse and return_aux"):
        nfa.flex_attention(q, kv, kv, return_lse=True, return_aux=nfa.AuxRequest(lse=True))
