"""torch.ao.quantization's smaller names: fixed-qparams observers and fake-quantize, the
recording observer, the -127..127 weight observers, mapping lookups, add_quant_dequant,
observer state dicts, default_eval_fn; against PyTorch where it is installed."""
import warnings

import numpy as np
import pytest

import nbtorch
from nbtorch import nn
import nbtorch.ao.quantization as nq

FAKE_QUANTS = ["default_fixed_qparams_range_0to1_fake_quant",
               "default_fixed_qparams_range_neg1to1_fake_quant",
               "default_dynamic_fake_quant", "default_histogram_fake_quant",
               "fused_wt_fake_quant_range_neg_127_to_127",
               "fused_per_channel_wt_fake_quant_range_neg_127_to_127"]
OBSERVERS = ["weight_observer_range_neg_127_to_127",
             "per_channel_weight_observer_range_neg_127_to_127",
             "default_fixed_qparams_range_0to1_observer"]


@pytest.mark.parametrize("name", FAKE_QUANTS + OBSERVERS)
def test_defaults_match_pytorch(name):
    torch = pytest.importorskip("torch")
    x = (np.random.default_rng(0).standard_normal((4, 5)) * 2).astype(np.float32)
    results = []
    for t in (torch, nbtorch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = getattr(t.ao.quantization, name)()
            out = m(t.from_numpy(x))
            results.append((out.detach().numpy().tolist(),
                            [v.tolist() for v in m.calculate_qparams()]))
    assert results[1] == results[0]


def test_recording_observer_and_mappings():
    rec = nq.default_debug_observer()
    rec(nbtorch.ones(2))
    assert len(rec.get_tensor_value()) == 1
    assert nq.get_static_quant_module_class(nn.Conv2d) is nbtorch.ao.nn.quantized.Conv2d
    assert nq.get_static_quant_module_class(nn.Embedding) is nbtorch.ao.nn.quantized.Embedding
    assert nq.get_dynamic_quant_module_class(nn.LSTM).__name__ == "LSTM"
    assert nn.Linear in nq.get_default_qconfig_propagation_list()
    with pytest.raises(AssertionError, match="does not have a corresponding"):
        nq.get_static_quant_module_class(nn.Bilinear)
    assert nq.get_default_qconfig_dict()[""].activation.p.func is nq.HistogramObserver
    assert int(nq.QuantType.QAT) == 2


def test_add_quant_dequant_and_observer_state_dict():
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    m[0].qconfig = nq.default_qconfig
    m = nq.add_quant_dequant(m)
    assert type(m[0]).__name__ == "QuantWrapper"
    p = nq.prepare(m)
    nq.default_eval_fn(p, [(nbtorch.randn(2, 3), None)])
    obs = nq.get_observer_state_dict(p)
    assert obs and all("activation_post_process" in k for k in obs)
    fresh = nq.prepare(nq.add_quant_dequant(_with_qconfig()))
    nq.load_observer_state_dict(fresh, obs)
    assert nbtorch.equal(fresh[0].module.activation_post_process.min_val,
                         p[0].module.activation_post_process.min_val)
    nq.load_observer_state_dict(fresh, {})         # PyTorch's is lenient here too
    assert list(obs) == ["0.quant.activation_post_process.eps",
                         "0.quant.activation_post_process.min_val",
                         "0.quant.activation_post_process.max_val",
                         "0.module.activation_post_process.eps",
                         "0.module.activation_post_process.min_val",
                         "0.module.activation_post_process.max_val"]      # PyTorch's keys


def _with_qconfig():
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    m[0].qconfig = nq.default_qconfig
    return m
