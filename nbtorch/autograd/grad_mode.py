"""Grad mode: whether ops record on the tape (`no_grad`, `enable_grad`, ...).

The mode is per thread, as PyTorch's: `no_grad` in one thread leaves the others
recording, and every new thread starts with grad enabled and inference mode off.
"""
import functools
import inspect
import sys
import threading

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_grad_enabled", "is_inference_mode_enabled"]


class _State(threading.local):
    """This thread's mode; the class attributes are what a new thread starts with.

    Every op reads `STATE.enabled` on its hot path: a `threading.local` attribute
    costs a few tens of ns more than a plain one.
    """

    enabled = True
    inference = False
    accumulate = True       # False while the engine runs for autograd.grad / inputs=
    first_order = False     # True while a graph capture records a backward (see fx lower)


STATE = _State()


def is_grad_enabled():
    return STATE.enabled


def is_inference_mode_enabled():
    return STATE.inference


class _GradModeContext:
    """Base for context managers that also work as decorators."""

    _mode = True

    def __new__(cls, *args, **kwargs):
        if cls in (no_grad, enable_grad, inference_mode) and args and callable(args[0]):
            return cls()(args[0])          # bare decorator: @no_grad, @inference_mode
        return super().__new__(cls)

    def __call__(self, fn):
        make = functools.partial(self.__class__, *self._args())
        if inspect.isgeneratorfunction(fn):
            return _generator_in(make, fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with make():
                return fn(*args, **kwargs)
        return wrapper

    def _args(self):
        return ()

    def __enter__(self):
        self._prev = STATE.enabled
        STATE.enabled = self._mode

    def __exit__(self, *exc):
        STATE.enabled = self._prev
        return False


def _generator_in(make, fn):
    """A generator function whose every step runs inside a fresh `make()` context (the
    caller's mode in between, as PyTorch's decorated generators)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        gen = fn(*args, **kwargs)
        try:
            with make():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with make():
                        gen.close()
                    raise
                except BaseException:
                    with make():
                        response = gen.throw(*sys.exc_info())
                else:
                    with make():
                        response = gen.send(request)
        except StopIteration as e:
            return e.value
    return wrapper


class no_grad(_GradModeContext):
    """Ops inside record no graph: ``with nbtorch.no_grad(): ...`` or ``@no_grad()``."""

    _mode = False


class enable_grad(_GradModeContext):
    """Turn recording back on inside a `no_grad` block."""

    _mode = True


class set_grad_enabled(_GradModeContext):
    """Set grad mode to `mode`; takes effect at once and also works as a context manager."""

    def __init__(self, mode):
        self._prev = STATE.enabled
        self._mode = bool(mode)
        STATE.enabled = self._mode

    def _args(self):
        return (self._mode,)

    def __call__(self, fn):
        STATE.enabled = self._prev          # as a decorator: the mode is the call's only
        return super().__call__(fn)

    def __enter__(self):
        STATE.enabled = self._mode

    def __exit__(self, *exc):
        STATE.enabled = self._prev
        return False


class inference_mode(_GradModeContext):
    """Like `no_grad` (nbtorch has no separate inference tensors)."""

    def __init__(self, mode=True):
        self._mode = not mode
        self._inf = bool(mode)

    def _args(self):
        return (self._inf,)

    def __enter__(self):
        self._prev, self._prev_inf = STATE.enabled, STATE.inference
        STATE.enabled, STATE.inference = self._mode, self._inf

    def __exit__(self, *exc):
        STATE.enabled, STATE.inference = self._prev, self._prev_inf
        return False
