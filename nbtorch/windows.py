"""``torch.windows``: PyTorch exposes `torch.signal.windows` under this name too."""
from .signal.windows import *  # noqa: F401,F403
from .signal.windows import __all__  # noqa: F401
