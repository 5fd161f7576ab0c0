"""`nn.utils`: gradient clipping, parameter/vector conversion, sequences (rnn), pruning,
parametrizations, weight/spectral norm, conv-bn fusion, memory formats, skip_init."""
from . import fusion, init, memory_format, parametrizations, parametrize, prune, rnn  # noqa: F401
from . import stateless  # noqa: F401
from .clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_,
                        get_total_norm)
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import (fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval,
                     fuse_linear_bn_weights)
from .init import skip_init
from .memory_format import (convert_conv2d_weight_memory_format,
                            convert_conv3d_weight_memory_format)
from .norm_hooks import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "parameters_to_vector", "vector_to_parameters", "weight_norm", "remove_weight_norm",
           "spectral_norm", "remove_spectral_norm", "clip_grads_with_norm_", "fuse_conv_bn_eval",
           "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights", "skip_init",
           "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]
