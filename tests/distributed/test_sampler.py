"""DistributedSampler in one process (explicit num_replicas/rank): partition, padding,
drop_last, epochs, and the same indices as PyTorch's."""
import pytest

from nbtorch.utils.data import DataLoader, DistributedSampler


@pytest.mark.parametrize("size,replicas,drop_last", [(10, 3, False), (11, 4, True),
                                                     (2, 4, False), (12, 4, False)])
def test_each_epoch_visits_every_index_once(size, replicas, drop_last):
    for epoch in range(2):
        parts = []
        for rank in range(replicas):
            s = DistributedSampler(range(size), replicas, rank, seed=5, drop_last=drop_last)
            s.set_epoch(epoch)
            parts.append(list(s))
            assert len(s) == len(parts[-1])
        assert len({len(p) for p in parts}) == 1
        flat = [i for p in parts for i in p]
        if drop_last:
            assert len(set(flat)) == len(flat) == size - size % replicas
        else:
            assert set(flat) == set(range(size)) and len(flat) == -(-size // replicas) * replicas


def test_epochs_reshuffle_and_no_shuffle_keeps_order():
    a = DistributedSampler(range(50), 2, 0)
    first = list(a)
    a.set_epoch(1)
    assert list(a) != first and sorted(list(a)) != list(a)
    assert list(DistributedSampler(range(7), 2, 1, shuffle=False)) == [1, 3, 5, 0]
    loader = DataLoader(range(8), batch_size=2, sampler=DistributedSampler(range(8), 2, 1))
    assert sum(len(b) for b in loader) == 4


def test_bad_rank():
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval"):
        DistributedSampler(range(4), num_replicas=2, rank=3)


def test_same_indices_as_pytorch():
    torch = pytest.importorskip("torch")
    for size, replicas, shuffle, drop_last, epoch in [(10, 3, True, False, 0),
                                                      (101, 4, True, True, 3),
                                                      (5, 2, False, False, 0)]:
        for rank in range(replicas):
            ours = DistributedSampler(range(size), replicas, rank, shuffle, 7, drop_last)
            theirs = torch.utils.data.DistributedSampler(range(size), replicas, rank, shuffle,
                                                         7, drop_last)
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs)
