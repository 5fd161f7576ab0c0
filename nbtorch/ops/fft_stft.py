"""torch.stft and torch.istft (and the Tensor methods), as aten's SpectralOps writes them:
frames cut with `unfold`, windowed, transformed by the FFT primitives of `ops/fft.py`;
the inverse overlap-adds its frames with `fold` (col2im) and divides by the summed
squared window. Every step is an op with a gradient, so both are differentiable.

PyTorch's errors are kept, with the tail of its message (after its argument dump).
Imported by `nbtorch/__init__` for torch.stft and the Tensor methods: the FFT modules
load on the first call.
"""
import warnings

from ._common import tensor_method

__all__ = ["stft", "istft"]

_NO_WINDOW = ("A window was not provided. A rectangular window will be applied,which is known "
              "to cause spectral leakage. Other windows such as torch.hann_window or "
              "torch.hamming_window are recommended to reduce spectral leakage.To suppress "
              "this warning and use a rectangular window, explicitly set "
              "`window=torch.ones(n_fft, device=<device>)`.")
_NO_WINDOW_INVERSE = ("A window was not provided. A rectangular window will be applied.Please "
                      "provide the same window used by stft to make the inversion lossless.To "
                      "suppress this warning and use a rectangular window, explicitly set "
                      "`window=torch.ones(n_fft, device=<device>)`.")


def _fail(op, message):
    raise RuntimeError(f"{op}(...) : {message}")


def _centered_window(window, n_fft, win_length, like):
    """The window zero-padded on both sides to n_fft (ones of win_length when None)."""
    from ..nn.functional import pad
    from .creation import ones
    if window is None:
        if win_length == n_fft:
            return None
        window = ones(win_length, dtype=like.dtype, device=like.device)
    if win_length == n_fft:
        return window
    left = (n_fft - win_length) // 2
    return pad(window, (left, n_fft - win_length - left))


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
         align_to_window=None):
    """The short-time Fourier transform: (B?, n_fft // 2 + 1 or n_fft, frames) complex.

    Frames of n_fft samples every `hop_length` (default n_fft // 4), multiplied by
    `window` (zero-padded to n_fft; rectangular when None), each transformed by an FFT;
    `center` pads the signal by n_fft // 2 on both sides with `pad_mode` first.

    Example:
        >>> x = nbtorch.arange(16.)
        >>> nbtorch.stft(x, 8, window=nbtorch.hann_window(8), return_complex=True).shape
        nbtorch.Size([5, 9])
    """
    from ..nn.functional import pad
    from .fft import C2C, R2C
    from .fft_args import BY_ROOT_N, NONE
    win_complex = window is not None and window.dtype.is_complex
    if return_complex is None and not win_complex and not input.dtype.is_complex:
        raise RuntimeError("stft requires the return_complex parameter be given for real "
                           "inputs, and will further require that return_complex=True in a "
                           "future PyTorch release.")
    if window is None:
        warnings.warn(_NO_WINDOW, UserWarning, stacklevel=2)
    x = input
    if center:
        if align_to_window is not None:
            raise RuntimeError("stft align_to_window should only be set when center = false")
        extra = max(3, x.dim()) - x.dim()
        x = pad(x.reshape((1,) * extra + tuple(x.shape)), (n_fft // 2, n_fft // 2), pad_mode)
        x = x.reshape(tuple(x.shape[extra:]))
    hop_length = n_fft >> 2 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        _fail("stft", "expected a tensor of floating point or complex values")
    if x.dim() not in (1, 2):
        _fail("stft", "expected a 1D or 2D tensor")
    if align_to_window and win_length < n_fft:
        left = (n_fft - win_length) // 2
        x = pad(x, (left, n_fft - win_length - left))
    frames = x.unsqueeze(0) if x.dim() == 1 else x
    length = frames.shape[1]
    if n_fft <= 0 or n_fft > length:
        _fail("stft", f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop_length <= 0:
        _fail("stft", f"expected hop_length > 0, but got hop_length={hop_length}")
    if win_length <= 0 or win_length > n_fft:
        _fail("stft", f"expected 0 < win_length <= n_fft, but got win_length={win_length}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win_length):
        _fail("stft", f"expected a 1D window tensor of size equal to win_length={win_length}, "
                      f"but got window with size {list(window.shape)}")
    w = _centered_window(window, n_fft, win_length, x)
    frames = frames.unfold(1, n_fft, hop_length)           # (B, n_frames, n_fft)
    if w is not None:
        frames = frames * w
    mode = BY_ROOT_N if normalized else NONE
    if frames.dtype.is_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        out = C2C.apply(frames, (2,), mode, True)
    else:
        out = R2C.apply(frames, (2,), mode, True if onesided is None else bool(onesided))
    out = out.transpose(1, 2)
    if input.dim() == 1:
        out = out.squeeze(0)
    if return_complex is False:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch "
                      "release, stft will return complex tensors for all inputs, and "
                      "return_complex=False will raise an error.\nNote: you can still call "
                      "torch.view_as_real on the complex output to recover the old return "
                      "format.", UserWarning, stacklevel=2)
        from .. import view_as_real
        return view_as_real(out)
    return out


def _overlap_add(frames, total, n_fft, hop):
    """(B, n_frames, n_fft) summed into (B, total): frame t added at t * hop (fold, the
    col2im of convolution; a complex tensor by its real and imaginary parts)."""
    from ..nn.functional import fold
    if frames.dtype.is_complex:
        from .. import complex as make_complex, view_as_real
        parts = view_as_real(frames)
        return make_complex(_overlap_add(parts[..., 0], total, n_fft, hop),
                            _overlap_add(parts[..., 1], total, n_fft, hop))
    y = fold(frames.transpose(1, 2), (1, total), (1, n_fft), stride=(1, hop))
    return y.reshape(frames.shape[0], total)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """The inverse of `stft` (least squares overlap-add): a (B?, length) signal.

    Example:
        >>> x = nbtorch.randn(64)
        >>> w = nbtorch.hann_window(16)
        >>> s = nbtorch.stft(x, 16, window=w, return_complex=True)
        >>> nbtorch.allclose(nbtorch.istft(s, 16, window=w, length=64), x, atol=1e-5)
        True
    """
    from ..nn.functional import pad
    from .creation import ones
    from .fft import C2C, C2R
    from .fft_args import BY_N, BY_ROOT_N
    hop_length = n_fft >> 2 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    if window is None:
        warnings.warn(_NO_WINDOW_INVERSE, UserWarning, stacklevel=2)
    n_frames, fft_size = input.shape[-1], input.shape[-2] if input.dim() >= 2 else None
    if input.dim() < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(input.dim(), 1)}, {max(input.dim(), 1) - 1}], but got -3)")
    if input.numel() == 0:
        _fail("istft", "input tensor cannot be empty.")
    if input.dim() not in (2, 3):
        _fail("istft", f"expected a tensor with 3 or 4 dimensions of real, or 2 or 3 "
                       f"dimensions of  complex, but got {input.dim() + 1}")
    onesided = fft_size != n_fft if onesided is None else onesided
    if onesided and n_fft // 2 + 1 != fft_size:
        _fail("istft", "expected the frequency dimension (3rd to the last) of the input tensor "
                       f"to match n_fft / 2 + 1 when onesided=True, but got {fft_size}")
    if not onesided and n_fft != fft_size:
        _fail("istft", "expected the frequency dimension (3rd to the last) of the input tensor "
                       f"to match n_fft when onesided=False, but got {fft_size}")
    if not 0 < hop_length <= win_length:
        _fail("istft", "expected 0 < hop_length <= win_length")
    if not 0 < win_length <= n_fft:
        _fail("istft", "expected 0 < win_length <= n_fft")
    if window is not None and (window.dim() != 1 or window.shape[0] != win_length):
        _fail("istft", "Invalid window shape. window has to be 1D and length of `win_length`")
    real_dtype = input.dtype.to_real()
    w = window if window is not None else ones(win_length, dtype=real_dtype,
                                               device=input.device)
    if win_length != n_fft:
        left = (n_fft - win_length) // 2
        w = pad(w, (left, n_fft - win_length - left))
    x = input.unsqueeze(0) if input.dim() == 2 else input
    x = x.transpose(1, 2)                                   # (B, n_frames, fft_size)
    mode = BY_ROOT_N if normalized else BY_N
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = C2C.apply(x, (2,), mode, False)
    else:
        if window is not None and window.dtype.is_complex:
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not onesided:
            x = x.narrow(2, 0, n_fft // 2 + 1)
        frames = C2R.apply(x, (2,), mode, n_fft)
    frames = frames * w
    total = n_fft + hop_length * (n_frames - 1)
    y = _overlap_add(frames, total, n_fft, hop_length)
    envelope = _overlap_add((w * w).expand(1, n_frames, n_fft), total, n_fft, hop_length)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (total - n_fft // 2 if center else total)
    stop = min(end, total)
    y = y.narrow(1, start, max(stop - start, 0))
    envelope = envelope.narrow(1, start, max(stop - start, 0))
    if bool((envelope.abs() < 1e-11).any()):
        _fail("istft", "window overlap add min: 1")
    y = y / envelope
    if input.dim() == 2:
        y = y.squeeze(0)
    if end > total:
        warnings.warn("The length of signal is shorter than the length parameter. Result is "
                      "being padded with zeros in the tail. Please check your center and "
                      "hop_length settings.", UserWarning, stacklevel=2)
        y = pad(y, (0, end - total))
    return y


@tensor_method("stft")
def _tensor_stft(self, n_fft, hop_length=None, win_length=None, window=None, center=True,
                 pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
                 align_to_window=None):
    """`nbtorch.stft` of this tensor."""
    return stft(self, n_fft, hop_length, win_length, window, center, pad_mode, normalized,
                onesided, return_complex, align_to_window)


@tensor_method("istft")
def _tensor_istft(self, n_fft, hop_length=None, win_length=None, window=None, center=True,
                  normalized=False, onesided=None, length=None, return_complex=False):
    """`nbtorch.istft` of this tensor."""
    return istft(self, n_fft, hop_length, win_length, window, center, normalized, onesided,
                 length, return_complex)

