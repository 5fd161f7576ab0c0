"""PyTorch 2.13's autocast op lists, per device type, in nbtorch's names.

Taken from the ops PyTorch registers under its AutocastCPU / AutocastCUDA dispatch
keys (``torch._C._dispatch_get_registrations_for_dispatch_key``) and their cast
policies (checked against PyTorch's output dtypes by tests/amp). A bare name means
every one of ``nbtorch.<name>``, ``Tensor.<name>`` and ``nn.functional.<name>`` that
exists; ``linalg.``, ``fft.`` and ``Tensor.`` prefixes name one place.

Policies: ``lower`` casts floating inputs to the autocast dtype; ``fp32`` to
float32; ``fp32_first`` casts only the first input, and only when no ``dtype=`` is
given (PyTorch's fp32_set_opt_dtype / fp32_append_dtype: sum, softmax, norm...);
``promote`` casts to the widest floating input type; ``banned`` raises; ``keep`` casts
nothing (PyTorch runs the op below its autocast layer: torch.convolution on the CPU,
which nbtorch implements with F.conv2d, stays float32). Float64
tensors are never cast. Ops not listed run in whatever dtypes they receive.

Where PyTorch reaches a listed op only for some arguments, `CHOOSE` picks the policy
from them: F.pad's reflect/replicate modes (reflection_pad1d/2d, replication_pad1d/2d/3d
on the CPU), einsum of two or more operands (a bmm on the CPU), and an LSTM layer
(mkldnn_rnn_layer on the CPU; nbtorch's LSTM layer is `nn.modules.rnn._run_direction`).
"""

_MATMULS = """conv1d conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d
    conv_transpose3d prelu addmm addbmm baddbmm bmm mm matmul Tensor.__matmul__
    Tensor.__rmatmul__ linalg.vecdot linear scaled_dot_product_attention"""

CPU = {
    "lower": _MATMULS,
    "fp32": """avg_pool3d binary_cross_entropy grid_sample grid_sampler grid_sampler_2d
        grid_sampler_3d polar prod quantile nanquantile stft cdist trace view_as_complex
        cholesky cholesky_inverse cholesky_solve inverse lu_solve orgqr ormqr pinverse max_pool3d max_unpool2d max_unpool3d
        adaptive_avg_pool3d adaptive_max_pool3d fractional_max_pool2d
        fractional_max_pool3d mse_loss cosine_embedding_loss nll_loss
        hinge_embedding_loss poisson_nll_loss smooth_l1_loss cross_entropy l1_loss
        huber_loss margin_ranking_loss soft_margin_loss triplet_margin_loss
        multi_margin_loss ctc_loss kl_div multilabel_margin_loss
        binary_cross_entropy_with_logits geqrf qr svd triangular_solve
        linalg.cholesky linalg.cholesky_ex linalg.cond linalg.eig linalg.eigh
        linalg.eigvals linalg.eigvalsh linalg.householder_product linalg.inv
        linalg.inv_ex linalg.lstsq linalg.matrix_rank linalg.qr linalg.solve linalg.svd
        linalg.svdvals linalg.tensorinv linalg.tensorsolve fft.fft fft.ifft fft.fft2
        fft.ifft2 fft.fftn fft.ifftn fft.rfft fft.irfft fft.rfft2 fft.irfft2 fft.rfftn
        fft.irfftn fft.hfft fft.ihfft fake_quantize_per_tensor_affine""",
    "promote": "cat concat concatenate stack index_copy",
    "keep": "convolution",
    "pad": "pad",
    "einsum": "einsum",
    "lstm": "rnn._run_direction",
}


def _pad_policy(args, kwargs):
    pad = args[1] if len(args) > 1 else kwargs.get("pad", ())
    mode = args[2] if len(args) > 2 else kwargs.get("mode", "constant")
    if (mode == "reflect" and len(pad) in (2, 4)) or (mode == "replicate"
                                                      and len(pad) in (2, 4, 6)):
        return "fp32"
    return None


def _einsum_policy(args, kwargs):
    operands = args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    return "lower" if len(operands) >= 2 else None


# policy name -> the policy for the call's (args, kwargs), or None: the op runs as given
CHOOSE = {
    "pad": _pad_policy,
    "einsum": _einsum_policy,
    "lstm": lambda args, kwargs: "lower" if args and args[0] == "LSTM" else None,
}

CUDA = {
    "lower": _MATMULS + """ convolution addmv addr einsum mv chain_matmul linalg.multi_dot
        lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell""",
    "fp32": """acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh
        tan pow Tensor.__pow__ Tensor.__rpow__ softplus layer_norm native_layer_norm
        group_norm rms_norm frobenius_norm nuclear_norm
        cosine_similarity poisson_nll_loss cosine_embedding_loss nll_loss
        hinge_embedding_loss kl_div l1_loss smooth_l1_loss huber_loss mse_loss
        margin_ranking_loss multilabel_margin_loss soft_margin_loss triplet_margin_loss
        multi_margin_loss binary_cross_entropy_with_logits dist pdist cdist renorm
        logsumexp interpolate upsample upsample_nearest upsample_bilinear""",
    "fp32_first": """prod softmax log_softmax cumprod cumsum sum norm linalg.vector_norm
        linalg.matrix_norm""",
    "promote": """addcdiv addcmul atan2 bilinear cross dot vdot grid_sample grid_sampler
        index_put
        tensordot scatter_add""",
    "banned": "binary_cross_entropy",
}

POLICIES = {"cpu": CPU, "cuda": CUDA}

BANNED_MESSAGE = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using "
    "torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits "
    "are\nsafe to autocast.")
