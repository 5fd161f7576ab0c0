"""Graph passes (fx's ``torch.fx.passes``): `shape_prop.ShapeProp` fills ``node.meta``."""
from . import shape_prop  # noqa: F401
