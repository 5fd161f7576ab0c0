"""Grad mode is per thread, as PyTorch's (no_grad, enable_grad, set_grad_enabled,
inference_mode): a mode set in one thread leaves the others alone, and a new
thread starts with grad enabled and inference mode off."""
import threading

import pytest

import nbtorch


def _in_thread(fn):
    """Run fn() in a new thread; return its result (or raise its exception)."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:          # noqa: BLE001 - re-raised in the caller
            box["error"] = e
    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _records(lib):
    x = lib.ones(2, requires_grad=True)
    return (x * 2).requires_grad


@pytest.mark.parametrize("mode", ["no_grad", "set_grad_enabled", "inference_mode"])
def test_new_thread_starts_with_grad_enabled(mode):
    ctx = {"no_grad": nbtorch.no_grad, "set_grad_enabled": lambda: nbtorch.set_grad_enabled(False),
           "inference_mode": nbtorch.inference_mode}[mode]
    with ctx():
        assert not nbtorch.is_grad_enabled()
        assert _in_thread(lambda: (nbtorch.is_grad_enabled(), _records(nbtorch),
                                   nbtorch.is_inference_mode_enabled())) == (True, True, False)
        assert not _records(nbtorch)
    assert nbtorch.is_grad_enabled()


def test_no_grad_in_one_thread_does_not_change_another():
    """Two threads interleave: one inside no_grad, the other keeps recording."""
    entered, checked = threading.Event(), threading.Event()
    seen = {}

    def quiet():
        with nbtorch.no_grad():
            entered.set()
            checked.wait(10)
            seen["quiet"] = (nbtorch.is_grad_enabled(), _records(nbtorch))

    t = threading.Thread(target=quiet)
    t.start()
    assert entered.wait(10)
    seen["main"] = (nbtorch.is_grad_enabled(), _records(nbtorch))
    checked.set()
    t.join()
    assert seen == {"quiet": (False, False), "main": (True, True)}
    assert nbtorch.is_grad_enabled()


def test_enable_grad_in_a_thread_leaves_the_callers_no_grad():
    with nbtorch.no_grad():
        def inner():
            with nbtorch.no_grad():
                with nbtorch.enable_grad():
                    return _records(nbtorch)
        assert _in_thread(inner) is True
        assert not nbtorch.is_grad_enabled()


def test_set_grad_enabled_as_a_function_is_per_thread():
    def off():
        nbtorch.set_grad_enabled(False)
        return nbtorch.is_grad_enabled()
    assert _in_thread(off) is False
    assert nbtorch.is_grad_enabled()


def test_backward_in_a_thread_uses_that_threads_mode():
    """The engine turns recording off in the thread that runs backward only."""
    x = nbtorch.tensor([1.0, 2.0], requires_grad=True)

    def step():
        (x * x).sum().backward()
        return nbtorch.is_grad_enabled()
    with nbtorch.no_grad():
        assert _in_thread(step) is True
        assert not nbtorch.is_grad_enabled()
    assert x.grad.tolist() == [2.0, 4.0]


def test_same_as_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, nbtorch):
        with lib.no_grad():
            got = _in_thread(lambda: (lib.is_grad_enabled(), _records(lib)))
            assert got == (True, True), lib.__name__
        with lib.inference_mode():
            assert _in_thread(lib.is_inference_mode_enabled) is False
