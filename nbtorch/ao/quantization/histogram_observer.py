"""HistogramObserver: a running histogram, and the clipping range that minimises the
L2 quantization error over it (PyTorch's search, after caffe2's norm minimisation).

Each batch is binned (``bins`` bins over the running [min, max]); when the range grows
the old histogram is spread over the new bins (each old bin split into 16 sub-bins
assigned by their midpoints). ``calculate_qparams`` walks the clipping range inward
from whichever side drops fewer samples, while the estimated error keeps falling.
All arithmetic is float32 NumPy, like PyTorch's float32 tensors.
"""
import warnings

import numpy as np

import nbtorch
from nbtorch._qtensor import quint8, per_tensor_affine, per_tensor_symmetric

from .observer import UniformQuantizationObserverBase, _EPS, _host

__all__ = ["HistogramObserver"]

_F32 = np.float32


def _histc(x, bins, lo, hi):
    """torch.histc over [lo, hi] in float32 (the top edge falls in the last bin)."""
    lo, hi = _F32(lo), _F32(hi)
    if lo == hi:
        lo, hi = lo - _F32(1), hi + _F32(1)
    x = x[(x >= lo) & (x <= hi)]
    idx = ((x - lo) / (hi - lo) * _F32(bins)).astype(np.int64)
    idx = np.minimum(idx, bins - 1)
    return np.bincount(idx, minlength=bins).astype(_F32)


class HistogramObserver(UniformQuantizationObserverBase):
    """Per-tensor observer choosing min/max by minimising the quantization error."""

    def __init__(self, bins=2048, dtype=quint8, qscheme=per_tensor_affine,
                 reduce_range=False, quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=_EPS, is_dynamic=False, **kwargs):
        if qscheme not in (per_tensor_affine, per_tensor_symmetric):
            raise NotImplementedError("HistogramObserver's qscheme only support "
                                      "torch.per_tensor_symmetric and "
                                      "torch.per_tensor_affine.")
        if is_dynamic:
            raise NotImplementedError("HistogramObserver doesn't support dynamic "
                                      "quantization")
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max,
                         factory_kwargs, eps, is_dynamic, **kwargs)
        self.bins = bins
        self.register_buffer("histogram", nbtorch.zeros(bins))
        self.register_buffer("min_val", nbtorch.tensor(float("inf")))
        self.register_buffer("max_val", nbtorch.tensor(float("-inf")))
        self.dst_nbins = 256
        self.upsample_rate = 16

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = _host(x_orig).astype(_F32).ravel()
        if not np.isfinite(x).all():
            warnings.warn("torch.inf detected in input tensor, ignoring input",
                          stacklevel=2)
            x = x[np.isfinite(x)]
            if x.size == 0:
                return x_orig
        lo, hi = _F32(x.min()), _F32(x.max())
        cur_lo, cur_hi = _F32(self.min_val.item()), _F32(self.max_val.item())
        hist = _host(self.histogram)
        if np.isinf(cur_lo) or np.isinf(cur_hi):
            new_hist, new_lo, new_hi = _histc(x, self.bins, lo, hi), lo, hi
        else:
            new_lo, new_hi = min(cur_lo, lo), max(cur_hi, hi)
            update = _histc(x, self.bins, new_lo, new_hi)
            if new_lo == cur_lo and new_hi == cur_hi:
                new_hist = hist + update
            elif cur_lo == cur_hi:
                new_hist = update + _histc(np.array([cur_lo], _F32), self.bins, new_lo,
                                           new_hi) * hist.sum()
            else:
                new_hist = update + self._upscale(hist, cur_lo, cur_hi, new_lo, new_hi)
        self.histogram = nbtorch.tensor(new_hist.astype(_F32))
        self.min_val.fill_(float(new_lo))
        self.max_val.fill_(float(new_hi))
        return x_orig

    def _upscale(self, hist, lo, hi, new_lo, new_hi):
        """The old histogram over [lo, hi] re-binned over [new_lo, new_hi]."""
        n = self.bins * self.upsample_rate
        fine = np.repeat(hist, self.upsample_rate) / _F32(self.upsample_rate)
        size = (hi - lo) / _F32(n)
        mids = np.linspace(lo, hi, n + 1, dtype=_F32)[:-1] + _F32(0.5) * size
        edges = np.linspace(new_lo, new_hi, self.bins + 1, dtype=_F32)
        which = np.clip(np.searchsorted(edges, mids, side="right") - 1, 0, self.bins - 1)
        return np.bincount(which, weights=fine, minlength=self.bins).astype(_F32)

    def _quantization_error(self, hist, bin_width, start, end):
        """Estimated L2 error of quantizing the histogram clipped to bins [start, end]."""
        dst_width = bin_width * (end - start + 1) / self.dst_nbins
        if dst_width == 0.0:
            return 0.0
        w = _F32(bin_width)
        dw = _F32(dst_width)
        src_begin = (np.arange(self.bins) - start).astype(_F32) * w
        src_end = src_begin + w
        dst_begin = np.clip(np.floor(src_begin / dw), 0, self.dst_nbins - 1)
        dst_end = np.clip(np.floor(src_end / dw), 0, self.dst_nbins - 1)
        density = hist / w

        def norm(d0, d1):
            return density * ((d1 * d1 * d1 - d0 * d0 * d0) / _F32(3))
        half = dw / _F32(2)
        total = norm(src_begin - (dst_begin + _F32(0.5)) * dw, half)
        total += (dst_end - dst_begin - 1) * norm(-half, half)
        total += norm(-half, src_end - (dst_end * dw + half))
        return float(total.astype(_F32).sum(dtype=_F32))

    def _non_linear_param_search(self):
        hist = _host(self.histogram).astype(_F32)
        lo, hi = _F32(self.min_val.item()), _F32(self.max_val.item())
        bin_width32 = (hi - lo) / _F32(self.bins)
        bin_width = float(hi) - float(lo)
        bin_width /= self.bins
        total = float(hist.sum())
        csum = np.cumsum(hist, dtype=_F32)
        step, alpha, beta = 1e-5, 0.0, 1.0
        start, end = 0, self.bins - 1
        norm_min = float("inf")
        while alpha < beta:
            next_alpha, next_beta = alpha + step, beta - step
            left, right = start, end
            while left < end and csum[left] < next_alpha * total:
                left += 1
            while right > start and csum[right] > next_beta * total:
                right -= 1
            next_start, next_end = start, end
            if (left - start) > (end - right):
                next_start, alpha = left, next_alpha
            else:
                next_end, beta = right, next_beta
            if next_start == start and next_end == end:
                continue
            err = self._quantization_error(hist, bin_width, next_start, next_end)
            if err > norm_min:
                break
            norm_min, start, end = err, next_start, next_end
        return lo + bin_width32 * _F32(start), lo + bin_width32 * _F32(end + 1)

    def calculate_qparams(self):
        if np.isinf(self.min_val.item()) and np.isinf(self.max_val.item()):
            warnings.warn("must run observer before calling calculate_qparams. Returning "
                          "default scale and zero point ", stacklevel=2)
            return nbtorch.tensor([1.0]), nbtorch.tensor([0])
        new_lo, new_hi = self._non_linear_param_search()
        return self._calculate_qparams(new_lo, new_hi)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"
