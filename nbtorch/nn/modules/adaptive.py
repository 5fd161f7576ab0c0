"""AdaptiveLogSoftmaxWithLoss: Grave et al.'s efficient softmax for large vocabularies (a
head over the frequent classes plus one entry per cluster, a small tail per cluster)."""
from collections import namedtuple

import numpy as np

from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Log-probabilities of the target classes and their mean negative (the loss).

    Classes below ``cutoffs[0]`` are scored by the head alone; a class in cluster i
    (between two cutoffs) gets head[shortlist + i] + its log-probability in the cluster's
    tail, a projection of width in_features // div_value**(i + 1).

    Example:
        >>> asm = nn.AdaptiveLogSoftmaxWithLoss(16, 100, cutoffs=[10, 50])
        >>> out = asm(torch.randn(4, 16), torch.tensor([1, 20, 70, 99]))
        >>> out.output.shape, out.loss.shape
        (torch.Size([4]), torch.Size([]))
    """

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False,
                 device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        kw = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, **kw),
                                        Linear(hsz, osz, bias=False, **kw)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        from ... import tensor
        if target_.dim() == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input_.dim() != 2:
                raise RuntimeError("1D target tensor expects 2D input tensors, but found inputs "
                                   f"with size {input_.shape}")
        elif target_.dim() == 0:
            if input_.dim() != 1:
                raise RuntimeError("0D target tensor expects 1D input tensors, but found inputs "
                                   f"with size {input_.shape}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.dim() > 0
        input = input_ if batched else input_.unsqueeze(0)
        t = target_.detach().cpu().numpy().reshape(-1).astype(np.int64)
        if t.size and (t.min() < 0 or t.max() >= self.n_classes):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{t.min()}, {t.max()}] were found. ")
        dev = input.device
        cluster = np.searchsorted(self.cutoffs, t, side="right")   # 0: the shortlist
        head_col = np.where(cluster == 0, t, self.shortlist_size + cluster - 1)
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = head_logprob.gather(1, tensor(head_col, device=dev).unsqueeze(1)).squeeze(1)
        for i in range(1, self.n_clusters + 1):
            rows = np.flatnonzero(cluster == i)
            if rows.size == 0:
                continue
            rows_t = tensor(rows, device=dev)
            rel = tensor(t[rows] - self.cutoffs[i - 1], device=dev).unsqueeze(1)
            logp = F.log_softmax(self.tail[i - 1](input.index_select(0, rows_t)), dim=1)
            output = output.index_add(0, rows_t, logp.gather(1, rel).squeeze(1))
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, input, head_output):
        from ... import cat
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logprob
                         + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, 1)

    def log_prob(self, input):
        """Log-probabilities of all n_classes: (N, n_classes)."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most probable class of each row (= log_prob(input).argmax(1), skipping the
        tails when every row's head argmax is in the shortlist)."""
        head_output = self.head(input)
        output = head_output.argmax(1)
        outside = output >= self.shortlist_size
        if not bool(outside.any()):
            return output
        full = self._full_log_prob(input, head_output).argmax(1)
        return full.where(outside, output)
