"""tests/conftest.py switches the __torch_function__ protocol off after every test; nested
tensors switch it on when they are made, but an expression such as
``nbtorch.cat([nested_tensor(...)])`` looks ``nbtorch.cat`` up before it makes one: each
test here starts with the protocol on, as a program that imported nbtorch.nested is."""
import pytest


@pytest.fixture(autouse=True)
def _protocol_on():
    import nbtorch.nested  # noqa: F401
    from nbtorch import _torch_function
    _torch_function.activate()
    yield
