"""Fused LSTM kernels for the CPU: the gate nonlinearities and the cell update of one
time step in one pass, and the time loops of one layer around them (the matmuls go
to the matmul kernel the caller passes: BLAS by default).

Layout, all C-contiguous float32 or float64: a step's gates are (N, 4H), the
pre-activations of the gates i, f, g, o side by side (PyTorch's order), given as
two addends ``mm + add`` (h W_hh^T and the projected input); ``c``, ``c_new``,
``h`` and ``tc`` are (N, H); a layer's arrays add a leading time dim T. The
scalar bodies are those of the elementwise ops (`kernels/scalar.py`), so a fused
step rounds as the eager ops do (up to contracted multiply-adds).
"""
import numba
import numpy as np

from nbtorch.kernels.cpu import contiguous as _contiguous  # noqa: F401 - makes the bodies jitable
from nbtorch.kernels.cpu.copy import transpose_into
from nbtorch.kernels.cpu.simd import _own_function_with_512bit_vectors
from nbtorch.kernels.f32math import c as _c
from nbtorch.kernels.scalar import sigmoid, tanh

__all__ = ["lstm_cell_forward", "lstm_cell_backward", "lstm_layer_forward",
           "lstm_layer_backward"]

_OPTS = dict(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})


def _step_matmul(matmul):
    """The per-step matmul: `cblas.matmul` (NumPy's, float32 on nbtorch's OpenBLAS copy)
    when `matmul` is the default BLAS kernel (the step operands are float32/64 with a
    unit-stride dim, so its dtype routing and layout checks only cost time: ~8 us a call,
    200 calls per 2-layer fwd+bwd), else `matmul`."""
    from nbtorch.kernels.cpu import cblas
    from nbtorch.kernels.cpu.matmul import matmul_blas
    if matmul is matmul_blas:
        return cblas.matmul
    return matmul


@numba.njit(**_OPTS)
def lstm_cell_forward(mm, add, c, act, c_new, h, tc):
    """For every row n and unit j (H = c.shape[1]), with gates = mm + add::

        i, f, g, o = sigmoid(gates[n, j]), sigmoid(gates[n, H + j]),
                     tanh(gates[n, 2H + j]), sigmoid(gates[n, 3H + j])
        c_new[n, j] = f * c[n, j] + i * g
        tc[n, j] = tanh(c_new[n, j]);  h[n, j] = o * tc[n, j]

    and act[n] = (i, f, g, o) for the backward. Reads each input once. Vectorised at 512
    bits (five sigmoid/tanh per element: 44 -> 31 us for 32x256, same bits; the
    backward, multiply-adds only, gains nothing).
    """
    _own_function_with_512bit_vectors()
    N, H = c.shape
    for n in range(N):
        mr, sr, ar = mm[n], add[n], act[n]
        mi, mf, mg, mo = mr[0:H], mr[H:2 * H], mr[2 * H:3 * H], mr[3 * H:4 * H]
        si, sf, sg, so = sr[0:H], sr[H:2 * H], sr[2 * H:3 * H], sr[3 * H:4 * H]
        ai, af, ag, ao = ar[0:H], ar[H:2 * H], ar[2 * H:3 * H], ar[3 * H:4 * H]
        cr, cn, hr, tr = c[n], c_new[n], h[n], tc[n]
        for j in range(H):
            i = sigmoid(si[j] + mi[j])
            f = sigmoid(sf[j] + mf[j])
            g = tanh(sg[j] + mg[j])
            o = sigmoid(so[j] + mo[j])
            ai[j] = i
            af[j] = f
            ag[j] = g
            ao[j] = o
            cv = f * cr[j] + i * g
            cn[j] = cv
            t = tanh(cv)
            tr[j] = t
            hr[j] = o * t


@numba.njit(**_OPTS)
def lstm_cell_backward(act, c, tc, gh, gh2, gc, dgates, dc):
    """The gradients of one step from those of h' (gh + gh2: two addends) and c' (gc)::

        dcn = gc + gh * o * (1 - tc^2)
        dgates[n] = (dcn * g * i * (1 - i), dcn * c * f * (1 - f),
                     dcn * i * (1 - g^2), gh * tc * o * (1 - o))
        dc = dcn * f

    `dc` may be `gc` itself (each element is read before it is written).
    """
    N, H = c.shape
    for n in range(N):
        ar, dr = act[n], dgates[n]
        ai, af, ag, ao = ar[0:H], ar[H:2 * H], ar[2 * H:3 * H], ar[3 * H:4 * H]
        di, df, dg, do = dr[0:H], dr[H:2 * H], dr[2 * H:3 * H], dr[3 * H:4 * H]
        cr, tr, ghr, gh2r, gcr, dcr = c[n], tc[n], gh[n], gh2[n], gc[n], dc[n]
        for j in range(H):       # products in the order the eager backward forms them
            i, f, g, o, t = ai[j], af[j], ag[j], ao[j], tr[j]
            one = _c(i, 1.0)
            dh = ghr[j] + gh2r[j]
            dcn = gcr[j] + dh * o * (one - t * t)
            di[j] = dcn * g * i * (one - i)
            df[j] = dcn * cr[j] * f * (one - f)
            dg[j] = dcn * i * (one - g * g)
            do[j] = dh * t * o * (one - o)
            dcr[j] = dcn * f


def lstm_layer_forward(matmul, xw, h0, c0, w_hh, out, h_T, c_T, act, tc, h_prev, c_prev,
                       reverse):
    """One layer, one direction: for each time t (T-1 .. 0 when `reverse`)::

        h_prev[t], c_prev[t] = h, c
        out[t], c = lstm_cell(h @ w_hh^T + xw[t], c);   h = out[t]

    then h_T, c_T = h, c. act, tc: each step's gates and tanh(c') (for backward).
    `matmul(a, b, out)` is the CPU matmul kernel. The step product runs in the layout
    OpenBLAS splits best (`_step_product`).
    """
    T, N, G = xw.shape
    gates = np.empty((N, G), xw.dtype)
    step = _step_product(_step_matmul(matmul), w_hh, gates)
    t = T - 1 if reverse else 0
    h_prev[t] = h0
    c_prev[t] = c0
    for k in range(T):
        t = T - 1 - k if reverse else k
        tn = t - 1 if reverse else t + 1
        step(h_prev[t])
        c_new = c_T if k == T - 1 else c_prev[tn]
        lstm_cell_forward(gates, xw[t], c_prev[t], act[t], c_new, out[t], tc[t])
        if k < T - 1:
            h_prev[tn] = out[t]
    h_T[...] = out[t]


SWAP_MIN_HIDDEN = 256     # step products from this hidden size run as w_hh @ h^T ...
SWAP_MAX_BATCH = 64       # ... for batches up to this many rows


def _step_product(step_mm, w_hh, gates):
    """`step(h)`: gates = h @ w_hh^T for one time step (h: (N, H), gates: (N, 4H)).

    OpenBLAS (two threads) splits a product between the columns of its column-major
    output, which for gates (N, 4H) row-major are only the N rows of a small batch; the
    transposed product gates^T = w_hh @ h^T gives it the 4H rows to split, and a tiled
    copy (`copy.transpose_into`, ~10 us for 32x1024 float32) transposes it back. Measured
    (AMD EPYC, 2 threads, float32, us per step, direct / transposed + copy): H=256 N=8
    84/51, N=32 145/115, N=64 224/214, N=128 401/407; H=512 N=32 533/416; H=128 N=32
    31/36. The same bits in every case tried (each element is one dot product either
    way). Otherwise h @ w_hh^T with w_hh^T copied once to a C-contiguous (H, 4H) array:
    OpenBLAS's sgemm on h (32, 256) @ that runs ~1.4x the speed of the transposed view
    (150 vs 210 us per step, one thread)."""
    N, G = gates.shape
    H = G // 4
    if H < SWAP_MIN_HIDDEN or N > SWAP_MAX_BATCH:
        w_t = np.ascontiguousarray(w_hh.T)   # (H, 4H) row-major: BLAS's no-transpose path
        return lambda h: step_mm(h, w_t, gates)
    w = np.ascontiguousarray(w_hh)           # (4H, H)
    gates_t = np.empty((G, N), gates.dtype)

    def step(h):
        step_mm(w, h.T, gates_t)
        transpose_into(gates_t, gates)
    return step


def lstm_layer_backward(matmul, act, tc, h_prev, c_prev, w_hh, g_out, g_hT, g_cT, dxw, dh0,
                        dc0, dw_hh, reverse):
    """The gradients of `lstm_layer_forward` from those of out, h_T and c_T (arrays of
    zeros where none flowed), walking time backward::

        dxw[t], dc = lstm_cell_backward(..., g_out[t] + dh, dc);   dh = dxw[t] @ w_hh

    then dh0, dc0 = dh, dc and dw_hh = sum_t dxw[t]^T @ h_prev[t] as one matmul.
    """
    T, N, G = act.shape
    H = G // 4
    dh = g_hT.copy()
    dc = g_cT.copy()
    step_mm = _step_matmul(matmul)
    for k in range(T - 1, -1, -1):
        t = T - 1 - k if reverse else k
        lstm_cell_backward(act[t], c_prev[t], tc[t], g_out[t], dh, dc, dxw[t], dc)
        step_mm(dxw[t], w_hh, dh)
    dh0[...] = dh
    dc0[...] = dc
    matmul(dxw.reshape(T * N, G).T, h_prev.reshape(T * N, H), dw_hh)
