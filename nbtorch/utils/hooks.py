"""``torch.utils.hooks``: `RemovableHandle`, the handle hook registrations return (the
modules' class; tensor and optimizer hooks return autograd's lighter one, which has the
same ``remove()`` and context-manager use)."""
from ..nn.modules._hooks import RemovableHandle

__all__ = ["RemovableHandle"]
