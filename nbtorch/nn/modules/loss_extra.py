"""Losses beyond `loss.py`: CTCLoss, MultiLabelMarginLoss, TripletMarginWithDistanceLoss."""
from .. import functional as F
from .loss import _Loss

__all__ = ["CTCLoss"]


class CTCLoss(_Loss):
    """Connectionist temporal classification loss (see `F.ctc_loss`).

    Example:
        >>> lp = torch.randn(10, 2, 5).log_softmax(2)
        >>> nn.CTCLoss()(lp, torch.tensor([[1, 2], [3, 4]]), [10, 8], [2, 2]).shape
        torch.Size([])
    """

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)
