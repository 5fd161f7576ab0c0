"""nbtorch.vision.models: torchvision's ResNets (parameter counts, state-dict keys, a
CIFAR-style training step)."""
import pytest

import nbtorch
from nbtorch.vision import models


def test_resnet_matches_torchvision_layout_and_trains():
    nbtorch.manual_seed(0)
    assert sum(p.numel() for p in models.resnet18().parameters()) == 11689512
    m = models.resnet18(num_classes=10, zero_init_residual=True)
    keys = list(m.state_dict())
    assert len(keys) == 122 and keys[:2] == ["conv1.weight", "bn1.weight"]
    assert "layer2.0.downsample.1.running_var" in keys and keys[-2:] == ["fc.weight", "fc.bias"]
    assert m.layer1[0].bn2.weight.abs().sum().item() == 0
    x, y = nbtorch.randn(4, 3, 32, 32), nbtorch.tensor([0, 1, 2, 3])
    opt = nbtorch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(3):
        loss = nbtorch.nn.functional.cross_entropy(m(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    with pytest.raises(RuntimeError, match="downloads no pretrained weights"):
        models.resnet50(weights="DEFAULT")


def test_bottleneck_resnet_shape():
    m = models.resnet50(num_classes=5).eval()
    assert sum(p.numel() for p in models.ResNet(models.Bottleneck, [3, 4, 6, 3])
               .parameters()) == 25557032
    with nbtorch.no_grad():
        assert m(nbtorch.randn(1, 3, 32, 32)).shape == (1, 5)
