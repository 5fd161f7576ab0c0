"""Datasets, random_split and samplers: order, coverage, reproducibility, errors."""
import collections

import numpy as np
import pytest

import nbtorch
from nbtorch.utils.data import (
    BatchSampler, ChainDataset, ConcatDataset, Dataset, IterableDataset, RandomSampler,
    SequentialSampler, Subset, SubsetRandomSampler, TensorDataset, WeightedRandomSampler,
    random_split,
)


def seeded(seed):
    return nbtorch.Generator().manual_seed(seed)


# ---- datasets -----------------------------------------------------------------------

def test_base_classes_raise_not_implemented():
    with pytest.raises(NotImplementedError):
        Dataset()[0]
    with pytest.raises(NotImplementedError):
        iter(IterableDataset())


def test_tensor_dataset_rows_and_length():
    x = nbtorch.arange(12).reshape(4, 3)
    y = nbtorch.arange(4)
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    row, label = ds[2]
    assert row.tolist() == [6, 7, 8] and label.item() == 2


def test_tensor_dataset_size_mismatch_is_an_error():
    with pytest.raises(AssertionError, match="^Size mismatch between tensors$"):  # PyTorch's
        TensorDataset(nbtorch.zeros(4, 2), nbtorch.zeros(3))


def test_subset_and_list_indexing():
    sub = Subset(list("abcdef"), [5, 1, 3])
    assert len(sub) == 3
    assert [sub[i] for i in range(3)] == ["f", "b", "d"]


def test_concat_dataset_indexing():
    ds = ConcatDataset([[0, 1, 2], [3], [4, 5]])
    assert len(ds) == 6
    assert [ds[i] for i in range(6)] == [0, 1, 2, 3, 4, 5]
    assert ds[-1] == 5 and ds[-6] == 0
    assert ds.cumulative_sizes == [3, 4, 6]
    with pytest.raises(ValueError, match="absolute value of index"):
        ds[-7]
    with pytest.raises(IndexError):
        ds[6]


def test_concat_dataset_errors_and_add_operator():
    class Three(Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return i

    assert [(Three() + Three())[i] for i in range(6)] == [0, 1, 2, 0, 1, 2]
    with pytest.raises(AssertionError, match="should not be an empty iterable"):  # PyTorch's
        ConcatDataset([])

    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(2))

    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        ConcatDataset([Stream()])
    assert list(Stream() + Stream()) == [0, 1, 0, 1]
    assert list(ChainDataset([Stream(), Stream()])) == [0, 1, 0, 1]
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(ChainDataset([range(2), range(1)]))              # as PyTorch


def test_random_split_lengths_are_disjoint_and_cover():
    parts = random_split(range(10), [3, 7], generator=seeded(0))
    assert [len(p) for p in parts] == [3, 7]
    values = [p[i] for p in parts for i in range(len(p))]
    assert sorted(values) == list(range(10))


def test_random_split_fractions_distribute_remainder():
    parts = random_split(range(10), [0.33, 0.33, 0.34], generator=seeded(0))
    assert [len(p) for p in parts] == [4, 3, 3]  # floors 3,3,3; the leftover goes to the first


def test_random_split_is_reproducible_with_a_generator():
    first = random_split(range(20), [10, 10], generator=seeded(3))[0].indices
    again = random_split(range(20), [10, 10], generator=seeded(3))[0].indices
    other = random_split(range(20), [10, 10], generator=seeded(4))[0].indices
    assert first == again and first != other


def test_random_split_errors():
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="not between 0 and 1"):
        random_split(range(10), [1.5, -0.5])


# ---- samplers -----------------------------------------------------------------------

def test_sequential_sampler():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    assert len(SequentialSampler(range(4))) == 4


def test_random_sampler_is_a_permutation_reproducible_per_generator():
    first = list(RandomSampler(range(50), generator=seeded(0)))
    assert sorted(first) == list(range(50)) and first != list(range(50))
    assert list(RandomSampler(range(50), generator=seeded(0))) == first
    sampler = RandomSampler(range(50), generator=seeded(0))
    assert list(sampler) == first and list(sampler) != first  # a new order each epoch


def test_random_sampler_global_seed():
    nbtorch.manual_seed(11)
    first = list(RandomSampler(range(30)))
    nbtorch.manual_seed(11)
    assert list(RandomSampler(range(30))) == first


def test_random_sampler_num_samples_without_replacement_chains_permutations():
    drawn = list(RandomSampler(range(4), num_samples=10, generator=seeded(1)))
    assert len(drawn) == 10
    assert sorted(drawn[:4]) == sorted(drawn[4:8]) == [0, 1, 2, 3]
    assert len(set(drawn[8:])) == 2


def test_random_sampler_with_replacement():
    drawn = list(RandomSampler(range(3), replacement=True, num_samples=60, generator=seeded(2)))
    assert len(drawn) == 60 and set(drawn) == {0, 1, 2}


def test_random_sampler_errors():
    with pytest.raises(TypeError, match="replacement should be a boolean value"):  # PyTorch's
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        RandomSampler([])


def test_subset_random_sampler():
    drawn = list(SubsetRandomSampler([10, 20, 30, 40], generator=seeded(0)))
    assert sorted(drawn) == [10, 20, 30, 40]
    assert len(SubsetRandomSampler([1, 2])) == 2


def test_weighted_sampler_follows_the_weights():
    drawn = list(WeightedRandomSampler([1.0, 3.0, 0.0], 4000, generator=seeded(0)))
    counts = collections.Counter(drawn)
    assert counts[2] == 0
    assert abs(counts[1] / 4000 - 0.75) < 0.03
    again = list(WeightedRandomSampler([1.0, 3.0, 0.0], 4000, generator=seeded(0)))
    assert again == drawn


def test_weighted_sampler_without_replacement_and_tensor_weights():
    weights = nbtorch.tensor([1.0, 2.0, 3.0, 4.0])
    drawn = list(WeightedRandomSampler(weights, 4, replacement=False, generator=seeded(0)))
    assert sorted(drawn) == [0, 1, 2, 3]


def test_weighted_sampler_errors():
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        WeightedRandomSampler([1.0], 0)
    with pytest.raises(ValueError, match="replacement should be a boolean"):
        WeightedRandomSampler([1.0], 1, replacement=None)
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler(np.ones((2, 2)), 1)
    # PyTorch checks the weights' values when it draws, not when it builds the sampler
    with pytest.raises(RuntimeError, match="invalid multinomial distribution"):
        list(WeightedRandomSampler([1.0, -1.0], 1))
    with pytest.raises(RuntimeError, match="sum of probabilities"):
        list(WeightedRandomSampler([0.0, 0.0], 1))
    drawn = list(WeightedRandomSampler([1.0, 0.0], 2, replacement=False))  # then zero weights
    assert drawn == [0, 1]


def test_batch_sampler_lengths_and_drop_last():
    assert list(BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3
    assert len(BatchSampler(range(7), 3, True)) == 2


def test_batch_sampler_errors():
    with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
        BatchSampler(range(3), True, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        BatchSampler(range(3), 2, "no")
