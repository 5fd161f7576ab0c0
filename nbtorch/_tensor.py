"""Tensor: a strided view (offset, shape, strides in elements) over a device storage.

Views share the storage and its version counter; every op reaches the raw
array through `Tensor._array` (a NumPy view on CPU, a numba device array on
CUDA) and never copies behind the user's back. Ops and their Tensor methods
live in `nbtorch/ops/`; this module holds only what a tensor *is*.

`_shape` is a plain tuple for the tensors ops make (a Size only where a caller built
one): Size indexes through a Python `__getitem__` (~100 ns, to return Size for slices),
and ops read shapes many times per call. `.shape` and `.size()` return a Size.
"""
import numpy as np

from . import _dtype
from ._cpu_allocator import allocate as _cpu_allocate
from ._device import CPU, to_device, device as _device_cls

__all__ = ["Tensor", "Size", "wrap", "empty", "contiguous_strides", "canonical_device"]


class Storage:
    """One flat buffer on one device, shared by all views of it."""

    __slots__ = ("data", "device", "version", "__weakref__")

    def __init__(self, data, device=CPU):
        self.data = data          # 1-D raw array
        self.device = device
        self.version = 0          # bumped by every in-place write

    def nbytes(self):
        return self.data.size * self.data.dtype.itemsize

    # ---- torch.UntypedStorage's reading API (bytes) -----------------------------------
    def size(self):
        """Bytes (an untyped storage's size, as PyTorch's ``untyped_storage().size()``)."""
        return self.nbytes()

    __len__ = size

    def __bool__(self):             # a storage is always an object, even of 0 bytes
        return True

    def element_size(self):
        return 1

    def data_ptr(self):
        """The address of the first byte: equal for tensors sharing this storage."""
        if self.device.type == "cpu":
            return self.data.ctypes.data
        if self.device.type == "meta":
            return 0
        return self.data.device_ctypes_pointer.value or 0

    def tolist(self):
        """The bytes as ints (CPU copy)."""
        import numpy as np
        data = self.data if self.device.type == "cpu" else self.data.copy_to_host()
        return np.ascontiguousarray(data).view(np.uint8).tolist()


class Size(tuple):
    """A tensor's shape; a tuple that prints like ``torch.Size([2, 3])``."""

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self):
        return f"torch.Size({list(self)})"

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other):          # (4,) + size is a Size too, as in PyTorch
        return Size(tuple(other) + tuple(self))

    def __mul__(self, n):
        return Size(tuple(self) * n)

    __rmul__ = __mul__


def contiguous_strides(shape):
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def _cpu_view(storage, offset, shape, strides, np_dtype):
    isz = np_dtype.itemsize
    if 0 in shape and offset * isz >= storage.nbytes:
        # an empty view past the end of its storage (x[:0].narrow(1, 1, 2)): nothing to see
        return np.empty(shape, np_dtype)
    # positional arguments and a list of strides: 0.63 us where keywords and a tuple
    # from a generator took 1.22 (every view's array is made here at its first use)
    return _ndarray(shape, np_dtype, storage, offset * isz, [s * isz for s in strides])


_ndarray = np.ndarray


# device type -> function(storage data, offset, shape, strides, np dtype) -> raw array view
VIEW_MAKERS = {"cpu": _cpu_view}


class Tensor:
    """A multi-dimensional array with autograd, like ``torch.Tensor``."""

    __slots__ = ("_storage", "_offset", "_shape", "_strides", "dtype", "device",
                 "_arr", "_requires_grad", "_grad", "grad_fn", "_output_nr",
                 "_base", "_hooks", "_retains_grad", "_accumulator", "_is_param",
                 "__dict__", "__weakref__")

    def __init__(self, *args, **kwargs):
        # `torch.Tensor(data)` / `torch.Tensor(2, 3)` legacy constructors.
        from .ops.creation import _legacy_construct
        _legacy_construct(self, *args, **kwargs)

    def _init(self, storage, offset, shape, strides, dtype, arr=None):
        self._storage = storage
        self._offset = offset
        self._shape = shape
        self._strides = strides
        self.dtype = dtype
        self.device = storage.device
        self._arr = arr
        self._requires_grad = False
        self._grad = None
        self.grad_fn = None
        self._output_nr = 0
        self._base = None
        self._hooks = None
        self._retains_grad = False
        self._accumulator = None
        return self

    # ---- raw data -------------------------------------------------------
    @property
    def _array(self):
        """The raw strided array (shares memory with the storage)."""
        a = self._arr
        if a is None:
            a = self._arr = VIEW_MAKERS[self.device.type](
                self._storage.data, self._offset, self._shape, self._strides,
                self.dtype.np)
        return a

    def _view(self, shape, strides, offset=None):
        """A new tensor over the same storage (no autograd: see ops.views)."""
        t = Tensor.__new__(Tensor)._init(self._storage, self._offset if offset is None
                                          else offset, tuple(shape), tuple(strides),
                                          self.dtype)
        t._base = self if self._base is None else self._base
        return t

    def _bump(self):
        """Record an in-place write (autograd checks saved tensors against it)."""
        self._storage.version += 1

    @property
    def _version(self):
        return self._storage.version

    # ---- metadata -------------------------------------------------------
    @property
    def shape(self):
        s = self._shape         # a plain tuple inside (indexing a Size is a Python call)
        return s if s.__class__ is Size else Size(s)

    @property
    def _static_shape(self):
        """The shape, for input checks in layers: a concrete trace (jit.trace) reads it from
        its example without a node or a TracerWarning (a check only raises; nothing of it
        enters the graph)."""
        s = self._shape
        return s if s.__class__ is Size else Size(s)

    def size(self, dim=None):
        if dim is None:
            s = self._shape
            return s if s.__class__ is Size else Size(s)
        return self._shape[_wrap_dim(dim, len(self._shape))]

    def stride(self, dim=None):
        if dim is None:
            return self._strides
        return self._strides[_wrap_dim(dim, len(self._shape))]

    def storage_offset(self):
        return self._offset

    def dim(self):
        return len(self._shape)

    ndim = property(dim)

    def ndimension(self):
        return len(self._shape)

    def numel(self):
        n = 1
        for s in self._shape:
            n *= s
        return n

    nelement = numel

    def element_size(self):
        return self.dtype.itemsize

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.numel() * self.dtype.itemsize

    def is_contiguous(self, memory_format=None):
        if memory_format is not None:
            from ._memory_format import is_format, contiguous_format
            if memory_format is not contiguous_format:
                return is_format(self._shape, self._strides, memory_format)
        layout = _LAYOUTS.get(self._shape)      # the common case: the contiguous strides
        if layout is not None and layout[1] == self._strides:
            return True
        if 0 in self._shape:
            return True                         # no element is out of place
        expected = 1
        for n, s in zip(reversed(self._shape), reversed(self._strides)):
            if n != 1 and s != expected:
                return False
            expected *= n
        return True

    def data_ptr(self):
        if self.device.type == "cpu":
            base = self._storage.data.ctypes.data
        elif self.device.type == "meta":
            return 0
        else:
            base = self._storage.data.device_ctypes_pointer.value or 0
        return base + self._offset * self.dtype.itemsize

    def untyped_storage(self):
        return self._storage

    def share_memory_(self):
        """Move the storage into shared memory, in place (see ``nbtorch.multiprocessing``)."""
        from .multiprocessing._sharing import share_memory_
        return share_memory_(self)

    def is_shared(self):
        """True if the storage is in shared memory (``share_memory_``)."""
        from .multiprocessing._sharing import is_shared
        return is_shared(self)

    @property
    def is_meta(self):
        """True for a shape-only tensor (``device='meta'``: no data)."""
        return self.device.type == "meta"

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    @property
    def is_cpu(self):
        return self.device.type == "cpu"

    def get_device(self):
        return -1 if self.device.type == "cpu" else self.device.index

    def is_floating_point(self):
        return self.dtype.is_floating_point

    def is_complex(self):
        return False

    @property
    def is_sparse(self):
        return False

    @property
    def layout(self):
        return "torch.strided"

    # ---- autograd state -------------------------------------------------
    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got "
                                f"grad of type {type(value).__name__}")
            if value._shape != self._shape:
                raise RuntimeError(
                    f"assigned grad has data of a different size: {list(value._shape)} "
                    f"vs {list(self._shape)}")
            if value.dtype is not self.dtype:
                raise RuntimeError("assigned grad has data of a different type")
            if value.device != self.device:
                raise RuntimeError("assigned grad has data located on a different device")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    def requires_grad_(self, requires_grad=True):
        if not self.is_leaf and not (requires_grad and self._requires_grad):   # True: no-op
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to "
                "use a computed variable in a subgraph that doesn't require differentiation "
                "use var_no_grad = var.detach().")
        self.requires_grad = requires_grad
        return self

    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        if self.grad_fn is not None and not value:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to "
                "use a computed variable in a subgraph that doesn't require differentiation "
                "use var_no_grad = var.detach().")
        if value and not (self.dtype.is_floating_point or self.dtype.is_complex):
            raise RuntimeError("only Tensors of floating point and complex dtype can "
                               "require gradients")
        self._requires_grad = bool(value)

    def detach(self):
        """A tensor sharing storage with this one, outside autograd."""
        t = Tensor.__new__(Tensor)._init(self._storage, self._offset, self._shape,
                                          self._strides, self.dtype, self._arr)
        return t

    def detach_(self):
        self.grad_fn = None
        self._requires_grad = False
        return self

    @property
    def data(self):
        return self.detach()

    @data.setter
    def data(self, other):
        self._storage, self._offset = other._storage, other._offset
        self._shape, self._strides = other._shape, other._strides
        self.dtype, self.device, self._arr = other.dtype, other.device, other._arr

    def retain_grad(self):
        if self.grad_fn is None:
            if not self.requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        if not self._retains_grad:
            import weakref
            node = self.grad_fn
            if node._retain is None:
                node._retain = {}
            node._plain = False
            node._retain[self._output_nr] = weakref.ref(self)
        self._retains_grad = True

    @property
    def retains_grad(self):
        return self._retains_grad

    def register_hook(self, hook):
        """Call `hook(grad)` when this tensor's gradient is computed; may return a new grad."""
        from .autograd.graph import register_tensor_hook
        return register_tensor_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call `hook(self)` after this leaf's `.grad` was accumulated in backward."""
        from .autograd.graph import register_post_accumulate_hook
        return register_post_accumulate_hook(self, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        _engine_backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    # ---- Python protocol --------------------------------------------------
    def numpy(self, *, force=False):
        if self.dtype is _dtype.bfloat16:
            raise TypeError("Got unsupported ScalarType BFloat16 (NumPy has no bfloat16; "
                            "use tensor.float().numpy())")
        if self.dtype in _dtype.FLOAT8:
            raise TypeError(f"Got unsupported ScalarType {_dtype.type_name(self.dtype)}")
        if self.device.type != "cpu":
            if not force:
                raise TypeError(
                    f"can't convert {self.device} device type tensor "
                    "to numpy. Use Tensor.cpu() to copy the tensor to host memory first.")
            return self.cpu()._array
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        return self._array

    def _host(self):
        """A NumPy array with this tensor's values (copied from the device if needed)."""
        if self.device.type == "meta":
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")
        return self._array if self.device.type == "cpu" else self.cpu()._array

    # NumPy defers to the tensor in mixed operations (np.float64(2) * t, ndarray + t: a
    # tensor with its graph, as PyTorch's), instead of computing through __array__
    __array_priority__ = 1000

    def __array__(self, dtype=None, copy=None):
        if self.dtype is _dtype.bfloat16:
            self.numpy()                # PyTorch's TypeError: NumPy has no bfloat16
        a = self.detach()._host()
        if dtype is not None:
            return a.astype(dtype)
        return a.copy() if copy else a  # np.array(t) copies (it shared memory before)

    def item(self):
        shape = self._shape
        if (not shape or shape == (1,)) and self.__class__ is Tensor and self.device is CPU:
            # one element of a CPU storage: read it at the offset, as its 0-d view would
            # (`x[0, 0].item()` 5.3 -> 1.3 us; PyTorch 1.9)
            data = self._storage.data
            if data.dtype is self.dtype.np:
                return data.item(self._offset)
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted "
                               "to Scalar")
        if self.device.type == "meta":
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        return self._host().reshape(()).item()

    def tolist(self):
        return self._host().tolist()

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._shape[0]))

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError(f"Boolean value of Tensor with more than one value is "
                               "ambiguous")
        return bool(self.item())

    def __float__(self):
        if self._requires_grad and not _SCALAR_WARNED:
            _warn_scalar()      # PyTorch warns once per process, for float() only
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.dtype.is_floating_point or self.dtype.is_complex or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted "
                            "to an index")
        return int(self.item())

    def __hash__(self):
        return id(self)

    def __repr__(self, *, tensor_contents=None):
        from ._tensor_str import tensor_repr
        return tensor_repr(self)

    def __format__(self, spec):
        if self.dim() == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __reduce_ex__(self, proto):
        # Pickling (DataLoader workers, copy.deepcopy): values, dtype, device, requires_grad.
        if self.device.type == "meta":      # no values: the shape is what travels
            return (_rebuild_meta, (tuple(self._shape), self.dtype.name, self.requires_grad))
        return (_rebuild, (np.asarray(self.detach()._host(), order="C"), self.dtype.name,
                           str(self.device), self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.")
        t = self.detach().clone()
        t.requires_grad = self.requires_grad
        if type(self) is not Tensor:
            t = type(self).__new__(type(self))._init(t._storage, t._offset, t._shape,
                                                     t._strides, t.dtype)
            t.requires_grad = self.requires_grad
            t.__dict__.update(self.__dict__)
        if self._grad is not None:
            t._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = t
        return t


def _rebuild(array, dtype_name, device, requires_grad):
    t = wrap(np.array(array, copy=True))
    if device != "cpu":
        t = t.to(device)
    t.requires_grad = requires_grad
    return t


def _rebuild_meta(shape, dtype_name, requires_grad):
    t = empty(shape, getattr(_dtype, dtype_name), to_device("meta"))
    t.requires_grad = requires_grad
    return t


def _wrap_dim(dim, ndim):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def canonical_device(d):
    """`to_device(d)`, but a `device` object maps to the interned one for its name.

    Tensors then share one device object per device, so hot paths (the
    engine's gradient check, operand checks) compare devices by identity.
    """
    if d is None or d is CPU:
        return CPU
    if d.__class__ is _device_cls:
        d = str(d)
    return to_device(d)


def wrap(array, device=None, requires_grad=False):
    """A Tensor around a raw array without copying (fresh kernel outputs, from_numpy)."""
    dev = CPU if device is None else canonical_device(device)
    dtype = _dtype.from_numpy_dtype(array.dtype)
    isz = array.dtype.itemsize
    if dev.type == "cpu":
        if not array.flags.c_contiguous and not _positive_strides(array):
            array = np.asarray(array, order="C")
        base, offset = _flat_base(array)
        strides = (tuple(s // isz for s in array.strides) if array.size else
                   contiguous_strides(array.shape))     # NumPy may give an empty one 0s
        t = Tensor.__new__(Tensor)._init(Storage(base, dev), offset, array.shape,
                                         strides, dtype, array)
    else:
        flat = array.reshape(array.size) if array.size else array
        t = Tensor.__new__(Tensor)._init(Storage(flat, dev), 0, tuple(array.shape),
                                         contiguous_strides(array.shape), dtype, array)
    if requires_grad:
        t.requires_grad = True
    return t


def _positive_strides(a):
    return all(s >= 0 and s % a.dtype.itemsize == 0 for s in a.strides)


def _flat_base(a):
    """A 1-D array covering `a`'s memory, and `a`'s element offset into it."""
    if a.flags.c_contiguous:
        return a.reshape(-1), 0
    span = 1 + sum((n - 1) * s for n, s in zip(a.shape, a.strides) if n > 0) // a.itemsize
    start = a.__array_interface__["data"][0]
    base = np.lib.stride_tricks.as_strided(a, shape=(max(span, 0),),
                                           strides=(a.itemsize,))
    assert base.__array_interface__["data"][0] == start
    return base, 0


_engine_backward = None   # autograd.engine.backward, set when the engine is imported

_ALLOCATORS = {}   # device type -> function(n elements, np dtype, device) -> 1-D raw array


def _alloc_cpu(n, np_dtype, device):
    return np.empty(n, np_dtype) if n < _CPU_CACHED else _cpu_allocate(n, np_dtype)


_CPU_CACHED = 1 << 15   # elements: from here (128 KiB in float32) ask the caching allocator


_ALLOCATORS["cpu"] = _alloc_cpu


_LAYOUTS = {}       # shape -> (shape tuple, contiguous strides, numel): ops reuse few shapes


def _layout(shape):
    try:
        return _LAYOUTS[shape]
    except KeyError:
        pass
    except TypeError:                   # an unhashable shape (a list)
        return _layout(tuple(shape))
    n = 1
    for s in shape:
        n *= s
    if len(_LAYOUTS) >= 4096:
        _LAYOUTS.clear()
    entry = _LAYOUTS[shape] = (tuple(shape), contiguous_strides(shape), n)
    return entry


def empty(shape, dtype, device=CPU):
    """An uninitialised contiguous tensor (internal; the public one parses arguments)."""
    size, strides, n = _layout(shape)
    if device.type == "cpu":            # inlined _alloc_cpu: this is every op's allocation
        data = np.empty(n, dtype.np) if n < _CPU_CACHED else _cpu_allocate(n, dtype.np)
        arr = data if len(size) == 1 else data.reshape(size)
    else:
        data = _ALLOCATORS[device.type](n, dtype.np, device)
        arr = None
    return Tensor.__new__(Tensor)._init(Storage(data, device), 0, size, strides, dtype, arr)


from . import _meta  # noqa: E402,F401  (registers the meta device's storage and kernels)


_SCALAR_WARNED = False


def _warn_scalar():
    """PyTorch's once-per-process warning for float() of a tensor requiring grad."""
    global _SCALAR_WARNED
    import warnings
    _SCALAR_WARNED = True
    warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to "
                  "unexpected behavior.\nConsider using tensor.detach() first.",
                  UserWarning, stacklevel=3)
