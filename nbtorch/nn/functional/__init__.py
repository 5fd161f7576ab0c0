"""`nn.functional` (F): stateless layer functions, PyTorch-shaped, one module per family.

A thin layer over the op definitions, as `nn` is over `functional`: conv,
pooling, normalization, sampling (pad/interpolate), sparse (embedding) and
dropout re-export ops from `nbtorch/ops/` (checks, kernels, backward live
there); activation, loss, linear, distance, shuffle and attention are written
with those ops.
"""
from .activation import *  # noqa: F401,F403
from .activation import __all__ as _activation_all
from .attention import *  # noqa: F401,F403
from .attention import __all__ as _attention_all
from .conv import *  # noqa: F401,F403
from .conv import __all__ as _conv_all
from .distance import *  # noqa: F401,F403
from .distance import __all__ as _distance_all
from .dropout import *  # noqa: F401,F403
from .dropout import __all__ as _dropout_all
from .linear import *  # noqa: F401,F403
from .linear import __all__ as _linear_all
from .loss import *  # noqa: F401,F403
from .loss import __all__ as _loss_all
from .loss_extra import *  # noqa: F401,F403
from .loss_extra import __all__ as _loss_extra_all
from .normalization import *  # noqa: F401,F403
from .normalization import __all__ as _normalization_all
from .pooling import *  # noqa: F401,F403
from .pooling import __all__ as _pooling_all
from .sampling import *  # noqa: F401,F403
from .sampling import __all__ as _sampling_all
from .shuffle import *  # noqa: F401,F403
from .shuffle import __all__ as _shuffle_all
from .sparse import *  # noqa: F401,F403
from .sparse import __all__ as _sparse_all

__all__ = (_activation_all + _attention_all + _conv_all + _distance_all + _dropout_all
           + _linear_all + _loss_all + _loss_extra_all + _normalization_all + _pooling_all
           + _sampling_all + _shuffle_all + _sparse_all)
