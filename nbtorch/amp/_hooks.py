"""The cast hooks: autocast's place in the op layer.

Each op of the lists in `_policies` (the public functions, Tensor methods and
nn.functional entries, and every binding of those function objects in loaded
modules, nbtorch's and the user's) is replaced by a wrapper while autocast is in use anywhere
(`retain`/`release` count the users); with no user the original functions are put
back, so an op outside autocast pays nothing, and unlisted ops such as ``a + b``
are never wrapped. A wrapper reads one thread-local flag; when autocast is on for
the device of the op's first tensor, it casts the floating inputs as the op's
policy says and runs the op with autocast suspended (as PyTorch excludes its
Autocast dispatch key inside an autocast kernel). Backward passes run with
autocast suspended: their dtypes follow the forward's.
"""
import sys
import threading

from .. import _dtype
from ..autograd import grad_mode
from . import _policies

__all__ = ["STATE", "retain", "release", "refresh", "state_key"]


class _State(threading.local):
    """This thread's autocast state (`on`: some device enabled and not suspended)."""

    on = False
    suspended = 0
    cache_enabled = True
    nesting = 0
    pinned = False          # this thread switched autocast on: it holds the hooks in

    def __init__(self):
        self.enabled = {"cpu": False, "cuda": False}
        self.dtype = {"cpu": _dtype.bfloat16, "cuda": _dtype.float16}
        self.cache = {}     # id(weight) -> (weight, its low-precision copy)


STATE = _State()
_LOCK = threading.RLock()
_USERS = [0]                # open autocast regions (all threads) + pinned threads
_SITES = []                 # where the wrappers go (see `_scan`)
WRAPPERS = {}               # id(original function) -> its wrapper, as of the last scan
_SCANNED = [-1]             # how many modules were loaded at the last scan


def refresh(st):
    """Recompute `st.on`, and pin the hooks while this thread has a device enabled."""
    any_on = st.enabled["cpu"] or st.enabled["cuda"]
    st.on = any_on and st.suspended == 0
    if any_on != st.pinned:
        st.pinned = any_on
        (retain if any_on else release)()


def state_key():
    """This thread's autocast state as a hashable value, None when off (for guards of
    compiled code: a graph recorded under autocast holds its casts)."""
    st = STATE
    if not st.on:
        return None
    return (st.enabled["cpu"], st.dtype["cpu"], st.enabled["cuda"], st.dtype["cuda"])


def retain():
    with _LOCK:
        _USERS[0] += 1
        if _USERS[0] == 1:
            _install()


def release():
    with _LOCK:
        _USERS[0] -= 1
        if _USERS[0] == 0:
            _swap(wrapped=False)


def _install():
    n = len(sys.modules)            # a module imported since the last scan: scan again
    if n != _SCANNED[0]:
        _SITES[:] = _scan()
        _SCANNED[0] = n
    _swap(wrapped=True)


def _swap(wrapped):
    """Put the wrappers in (or the originals back). A module's namespace takes them in
    one dict update (the bulk of the sites); a class takes setattr, which keeps its
    method cache right."""
    for owner, namespace, originals, wrappers in _SITES:
        names = wrappers if wrapped else originals
        if namespace is None:
            for name, fn in names.items():
                setattr(owner, name, fn)
        else:
            namespace.update(names)


# ---- finding the places to hook ------------------------------------------------------

def _raw(owner, name):
    """`owner`'s own binding of `name` (a class's from its __dict__, not inherited)."""
    return owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)


def _owners():
    import nbtorch
    from nbtorch import Tensor, linalg
    from nbtorch.nn import functional
    return {"torch": nbtorch, "Tensor": Tensor, "F": functional, "linalg": linalg,
            "fft": sys.modules.get("nbtorch.fft"), "rnn": sys.modules.get(
                "nbtorch.nn.modules.rnn")}


def _targets():
    """{id(function): (function, {device: policy})} for every listed op (and the
    functions their public wrappers wrap, `__wrapped__`)."""
    from ..autograd import engine
    owners = _owners()
    targets = {id(engine.run_backward): (engine.run_backward, _OFF)}
    for device, table in _policies.POLICIES.items():
        for policy, names in table.items():
            for name in names.split():
                prefix, _, attr = name.rpartition(".")
                places = [owners.get(prefix)] if prefix else [
                    owners["torch"], owners["Tensor"], owners["F"]]
                for owner in places:
                    fn = _raw(owner, attr) if owner is not None else None
                    while callable(fn) and not isinstance(fn, type):
                        targets.setdefault(id(fn), (fn, {}))[1][device] = policy
                        fn = getattr(fn, "__wrapped__", None)
    return targets


def _scan():
    """Every binding of a target function in a loaded module (nbtorch's, and user code's
    ``from torch.nn.functional import linear``) and in Tensor, grouped by namespace:
    [(owner, its dict or None for a class, {name: original}, {name: wrapper})]. About
    6 ms for 700 modules, again only after new imports."""
    from nbtorch import Tensor
    targets = _targets()
    wrappers = {}
    sites = []
    owners = [m for name, m in list(sys.modules.items())
              if not name.startswith("nbtorch.amp") and isinstance(
                  getattr(m, "__dict__", None), dict)] + [Tensor]
    for owner in owners:
        originals, wrapped = {}, {}
        for name, value in list(vars(owner).items()):
            hit = targets.get(id(value))
            if hit is not None and hit[0] is value:
                if id(value) not in wrappers:
                    wrappers[id(value)] = _wrap(value, hit[1])
                originals[name], wrapped[name] = value, wrappers[id(value)]
        if originals:
            namespace = None if isinstance(owner, type) else vars(owner)
            sites.append((owner, namespace, originals, wrapped))
    WRAPPERS.clear()
    WRAPPERS.update(wrappers)
    return sites


def _wrap(fn, policies):
    def autocast_wrapper(*args, **kwargs):
        if STATE.on:
            return _run(fn, policies, args, kwargs)
        return fn(*args, **kwargs)
    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        setattr(autocast_wrapper, attr, getattr(fn, attr, None))
    autocast_wrapper.__wrapped__ = fn
    autocast_wrapper.__autocast_original__ = fn    # tables built while hooked unwrap it
    return autocast_wrapper


# ---- running an op under autocast -----------------------------------------------------

def _device_type(args, kwargs):
    from .._tensor import Tensor
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            return a.device.type
        if isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, Tensor):
                    return b.device.type
    return None


_OFF = {}                   # the policies of a function run with autocast suspended (backward)


def _run(fn, policies, args, kwargs):
    st = STATE
    if policies is not _OFF:
        for d in policies:
            if st.enabled[d]:
                break
        else:                               # listed only for devices autocast is off on
            return fn(*args, **kwargs)
        device = _device_type(args, kwargs)
        policy = policies.get(device)
        if policy is not None and policy in _policies.CHOOSE:
            policy = _policies.CHOOSE[policy](args, kwargs)
        if policy is None or not st.enabled[device]:
            return fn(*args, **kwargs)      # unlisted here: its inner ops may autocast
        args, kwargs = _cast_inputs(policy, device, st, args, kwargs)
    st.suspended += 1
    st.on = False
    try:
        return fn(*args, **kwargs)
    finally:
        st.suspended -= 1
        refresh(st)


def _cast_inputs(policy, device, st, args, kwargs):
    low = st.dtype[device]
    if policy == "lower":
        to = low
    elif policy == "fp32":
        to = _dtype.float32
    elif policy == "fp32_first":
        if kwargs.get("dtype") is None and args and _eligible(args[0], device):
            args = (_cast(args[0], _dtype.float32, device, low, st),) + args[1:]
        return args, kwargs
    elif policy == "keep":
        return args, kwargs
    elif policy == "promote":
        to = _widest(low, device, (*args, *kwargs.values()))
    else:
        raise RuntimeError(_policies.BANNED_MESSAGE)
    args = tuple([_cast_value(a, to, device, low, st) for a in args])
    if kwargs:
        kwargs = {k: _cast_value(v, to, device, low, st) for k, v in kwargs.items()}
    return args, kwargs


def _eligible(t, device):
    from .._tensor import Tensor
    return (isinstance(t, Tensor) and t.dtype.is_floating_point
            and t.dtype is not _dtype.float64 and t.device.type == device)


def _cast_value(v, to, device, low, st):
    if isinstance(v, (list, tuple)):
        return type(v)([_cast(b, to, device, low, st) for b in v])
    return _cast(v, to, device, low, st)


def _cast(t, to, device, low, st):
    """`t` in dtype `to` if autocast may cast it; low-precision copies of weights (leaf
    tensors that require grad) are cached until the outermost region exits."""
    if not _eligible(t, device) or t.dtype is to:
        return t
    if (to is low and t.dtype is _dtype.float32 and t.requires_grad and t.is_leaf
            and t._base is None and st.cache_enabled and grad_mode.STATE.enabled
            and not _capturing()):
        hit = st.cache.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        cast = t.to(to)
        st.cache[id(t)] = (t, cast)
        return cast
    return t.to(to)


def _capturing():
    """True while nbtorch.compile / jit record this thread's ops: a cast made before the
    capture would reach the graph as data from nowhere, so the cache is bypassed."""
    rec = sys.modules.get("nbtorch.fx.passes.recording")
    return rec is not None and getattr(rec._LOCAL, "recorder", None) is not None


def _widest(low, device, values):
    """PyTorch's promote rule: float32 wins over the low dtype; double is ignored."""
    from .._tensor import Tensor
    current = low
    for v in values:
        for t in (v if isinstance(v, (list, tuple)) else (v,)):
            if not (isinstance(t, Tensor) and t.dtype.is_floating_point
                    and t.device.type == device) or t.dtype is _dtype.float64:
                continue
            if current is _dtype.float32 or t.dtype is _dtype.float32:
                current = _dtype.float32
            elif not (current is low and t.dtype is low):
                raise RuntimeError("Unexpected floating ScalarType in "
                                   "at::autocast::prioritize")
    return current
