"""Losses beyond `loss.py`: CTCLoss, MultiLabelMarginLoss, TripletMarginWithDistanceLoss."""
from .. import functional as F
from .distance import PairwiseDistance
from .loss import _Loss

__all__ = ["CTCLoss", "MultiLabelMarginLoss", "TripletMarginWithDistanceLoss"]


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


class MultiLabelMarginLoss(_Loss):
    """Multi-class multi-label hinge loss (see `F.multilabel_margin_loss`).

    Example:
        >>> loss = nn.MultiLabelMarginLoss()
        >>> loss(torch.tensor([[0.1, 0.2, 0.4, 0.8]]), torch.tensor([[3, 0, -1, 1]]))
        tensor(0.8500)
    """

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet margin loss over any distance (see `F.triplet_margin_with_distance_loss`);
    the default distance is a `PairwiseDistance` child module, as PyTorch's.

    Example:
        >>> loss = nn.TripletMarginWithDistanceLoss(distance_function=nn.CosineSimilarity())
        >>> a = torch.randn(4, 8)
        >>> loss(a, a, -a).shape
        torch.Size([])
    """

    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError("TripletMarginWithDistanceLoss: expected margin to be greater "
                             f"than 0, got {margin} instead")
        self.distance_function = (distance_function if distance_function is not None
                                  else PairwiseDistance())
        self.margin = margin
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)
