"""CUDA kernels (numba.cuda.jit). Imported only when a CUDA tensor is used.

How a kernel family is laid out (follow it for reductions, matmul, conv, ...):

- ``kernels/cuda/<family>.py``: module-level ``@cuda.jit(cache=True)`` kernels
  written as grid-stride loops (``for i in range(cuda.grid(1), n,
  cuda.gridsize(1))``), plus plain-Python *launchers* taking device arrays,
  allocated outputs and a ``stream=0`` keyword:
  ``kernel[_launch.grid(n) + (stream,)](...)``. Launchers validate nothing (the
  op layer already did) and never allocate outputs. Simulator rules (STYLE.md
  13): top-level ``from numba import cuda``, one ``cuda.shared.array`` per line,
  warp intrinsics only with a fallback. Strided operands: build views with
  ``_launch.strided_view`` (no copies); elementwise work reuses ``gridstride.launch``.
- ``typecheck_signatures()`` in the module yields ``(label, kernel.py_func,
  numba argument types)`` for every dtype the family serves (the PTX type check
  compiles every family named in the table).
- ``table.py``: one line per op, ``op -> "family.launcher"``, with the CPU op's
  name (the registry binds the current stream); then drop the op from
  ``CPU_ONLY`` in ``tests/cuda/test_parity.py`` and compare with the CPU in
  ``tests/cuda`` (``device`` fixture: one body, both devices).

Modules: ``_launch`` (grids, simulator flag, strided views), ``gridstride``
(every elementwise op of ``kernels/elementwise.py``: generated kernel modules,
cached on disk), ``scalar_device`` (the bodies of ``kernels/scalar.py`` as device
functions), ``copy`` (copy/cast/fill), ``creation`` (arange/linspace),
``random`` (Philox uniform/normal/bernoulli/integers).
"""
from nbtorch.kernels._numba_cache import install_cuda as _install_cache_lock

_install_cache_lock()        # serialised cache writes; stamps that cover imported bodies
