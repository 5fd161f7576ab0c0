"""All layer Modules, re-exported as `nbtorch.nn.<Name>`."""
from .activation import *  # noqa: F401,F403
from .activation import __all__ as _activation
from .container import *  # noqa: F401,F403
from .container import __all__ as _container
from .conv import *  # noqa: F401,F403
from .conv import __all__ as _conv
from .dropout import *  # noqa: F401,F403
from .dropout import __all__ as _dropout
from .flatten import *  # noqa: F401,F403
from .flatten import __all__ as _flatten
from .linear import *  # noqa: F401,F403
from .linear import __all__ as _linear
from .loss import *  # noqa: F401,F403
from .loss import __all__ as _loss
from .module import Module
from .pooling import *  # noqa: F401,F403
from .pooling import __all__ as _pooling

__all__ = (["Module"] + _activation + _container + _conv + _dropout + _flatten + _linear
           + _loss + _pooling)
