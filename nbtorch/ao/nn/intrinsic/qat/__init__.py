"""``torch.ao.nn.intrinsic.qat``: fused QAT modules."""
from ...qat import LinearReLU, ConvReLU2d, ConvBn2d, ConvBnReLU2d

__all__ = ["LinearReLU", "ConvReLU2d", "ConvBn2d", "ConvBnReLU2d", "freeze_bn_stats",
           "update_bn_stats"]


def freeze_bn_stats(mod):
    """``model.apply(freeze_bn_stats)``: freeze the BatchNorm statistics of QAT conv-bn."""
    if type(mod) in (ConvBn2d, ConvBnReLU2d):
        mod.freeze_bn_stats()


def update_bn_stats(mod):
    """``model.apply(update_bn_stats)``: let QAT conv-bn update its BatchNorm again."""
    if type(mod) in (ConvBn2d, ConvBnReLU2d):
        mod.update_bn_stats()
