"""All layer Modules, re-exported as `nbtorch.nn.<Name>`."""
from .activation import *  # noqa: F401,F403
from .activation import __all__ as _activation
from .activation_mha import *  # noqa: F401,F403
from .activation_mha import __all__ as _activation_mha
from .adaptive import *  # noqa: F401,F403
from .adaptive import __all__ as _adaptive
from .batchnorm import *  # noqa: F401,F403
from .batchnorm import __all__ as _batchnorm
from .container import *  # noqa: F401,F403
from .container import __all__ as _container
from .conv import *  # noqa: F401,F403
from .conv import __all__ as _conv
from .deprecated import *  # noqa: F401,F403
from .deprecated import __all__ as _deprecated
from .distance import *  # noqa: F401,F403
from .distance import __all__ as _distance
from .dropout import *  # noqa: F401,F403
from .dropout import __all__ as _dropout
from .embedding_bag import *  # noqa: F401,F403
from .embedding_bag import __all__ as _embedding_bag
from .flatten import *  # noqa: F401,F403
from .flatten import __all__ as _flatten
from .fold import *  # noqa: F401,F403
from .fold import __all__ as _fold
from .linear import *  # noqa: F401,F403
from .linear import __all__ as _linear
from .lazy import *  # noqa: F401,F403
from .lazy import __all__ as _lazy
from .linear_cross_entropy import *  # noqa: F401,F403
from .linear_cross_entropy import __all__ as _linear_cross_entropy
from .loss import *  # noqa: F401,F403
from .loss import __all__ as _loss
from .loss_extra import *  # noqa: F401,F403
from .loss_extra import __all__ as _loss_extra
from .module import Module
from . import utils  # noqa: F401  (torch.nn.modules.utils._pair, ...)
from .normalization import *  # noqa: F401,F403
from .normalization import __all__ as _normalization
from .padding import *  # noqa: F401,F403
from .padding import __all__ as _padding
from .pixelshuffle import *  # noqa: F401,F403
from .pixelshuffle import __all__ as _pixelshuffle
from .pooling import *  # noqa: F401,F403
from .pooling import __all__ as _pooling
from .pooling_extra import *  # noqa: F401,F403
from .pooling_extra import __all__ as _pooling_extra
from .rnn import *  # noqa: F401,F403
from .rnn import __all__ as _rnn
from .sparse import *  # noqa: F401,F403
from .sparse import __all__ as _sparse
from .transformer import *  # noqa: F401,F403
from .transformer import __all__ as _transformer
from .upsampling import *  # noqa: F401,F403
from .upsampling import __all__ as _upsampling

__all__ = (["Module"] + _activation + _activation_mha + _adaptive + _batchnorm + _container
           + _conv + _deprecated + _distance + _dropout + _embedding_bag + _flatten + _fold
           + _lazy + _linear + _linear_cross_entropy + _loss + _loss_extra + _normalization
           + _padding + _pixelshuffle + _pooling + _pooling_extra + _rnn + _sparse + _transformer
           + _upsampling)
