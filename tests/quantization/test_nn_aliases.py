"""torch.nn.quantized / qat / intrinsic: PyTorch's older names of ao.nn.* (same classes)."""
import importlib
import sys

import nbtorch
import nbtorch.ao.nn as aonn


def test_older_names_are_the_ao_classes_and_load_lazily():
    assert nbtorch.nn.quantized.Linear is aonn.quantized.Linear
    assert nbtorch.nn.quantized.dynamic.LSTM is aonn.quantized.dynamic.LSTM
    assert nbtorch.nn.quantized.functional is aonn.quantized.functional
    assert nbtorch.nn.qat.Linear is aonn.qat.Linear
    assert nbtorch.nn.intrinsic.ConvReLU2d is aonn.intrinsic.ConvReLU2d
    assert nbtorch.nn.intrinsic.qat.ConvBn2d is aonn.intrinsic.qat.ConvBn2d
    assert importlib.import_module("nbtorch.nn.quantized.dynamic").GRU is \
        aonn.quantized.dynamic.GRU
    assert "nbtorch.nn.quantized" in sys.modules


def test_unknown_nn_attribute_is_an_attribute_error():
    try:
        nbtorch.nn.no_such_thing
    except AttributeError as e:
        assert "no_such_thing" in str(e)
    else:
        raise AssertionError("expected AttributeError")
