"""Training end to end: the issue's snippet, XOR with an MLP, linear regression."""
import numpy as np
import pytest

import nbtorch as torch
import nbtorch.nn as nn
import nbtorch.nn.functional as F


def _sgd_step(params, lr):
    """Plain SGD by hand (keeps these tests independent of nbtorch.optim)."""
    with torch.no_grad():
        for p in params:
            p -= lr * p.grad
            p.grad = None


def test_issue_snippet_runs_and_converges():
    optim = pytest.importorskip("nbtorch.optim")

    class Net(nn.Module):
        def __init__(self):
            super(Net, self).__init__()
            self.linear = nn.Linear(2, 1)

        def forward(self, x):
            return self.linear(x)

    torch.manual_seed(0)
    net = Net()
    criterion = nn.MSELoss()
    optimizer = optim.SGD(net.parameters(), lr=0.01)
    x = torch.tensor([[1.0, 2.0], [2.0, 3.0]])
    y = torch.tensor([[1.0], [2.0]])
    first = None
    for epoch in range(100):
        optimizer.zero_grad()
        loss = criterion(net(x), y)
        loss.backward()
        optimizer.step()
        first = loss.item() if first is None else first
    assert loss.item() < 0.05 and loss.item() < first


def test_linear_regression_recovers_weights():
    rng = np.random.default_rng(0)
    true_w = np.array([[2.0, -3.0, 0.5]], dtype=np.float32)
    true_b = np.array([0.7], dtype=np.float32)
    x = rng.standard_normal((256, 3)).astype(np.float32)
    y = x @ true_w.T + true_b
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    model = nn.Linear(3, 1)
    for _ in range(300):
        loss = F.mse_loss(model(xt), yt)
        loss.backward()
        _sgd_step(model.parameters(), lr=0.1)
    np.testing.assert_allclose(model.weight.detach().numpy(), true_w, atol=1e-3)
    np.testing.assert_allclose(model.bias.detach().numpy(), true_b, atol=1e-3)


def test_mlp_solves_xor():
    torch.manual_seed(1)
    x = torch.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    y = torch.tensor([0, 1, 1, 0])
    model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(500):
        loss = loss_fn(model(x), y)
        loss.backward()
        _sgd_step(model.parameters(), lr=0.5)
    pred = model(x).detach().numpy().argmax(1)
    assert pred.tolist() == [0, 1, 1, 0]
    assert loss.item() < 0.05


def test_binary_classifier_with_bce_logits_and_dropout():
    torch.manual_seed(2)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((200, 2)).astype(np.float32)
    y = (x[:, :1] + x[:, 1:] > 0).astype(np.float32)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    model = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Dropout(0.1), nn.Linear(8, 1))
    loss_fn = nn.BCEWithLogitsLoss()
    for _ in range(200):
        loss = loss_fn(model(xt), yt)
        loss.backward()
        _sgd_step(model.parameters(), lr=0.5)
    model.eval()
    acc = ((model(xt).detach().numpy() > 0) == (y > 0.5)).mean()
    assert acc > 0.95


def test_state_dict_checkpoint_restores_predictions():
    torch.manual_seed(3)
    a = nn.Sequential(nn.Linear(3, 4), nn.GELU(), nn.Linear(4, 2))
    b = nn.Sequential(nn.Linear(3, 4), nn.GELU(), nn.Linear(4, 2))
    x = torch.randn(5, 3)
    b.load_state_dict(a.state_dict())
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())
