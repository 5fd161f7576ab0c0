"""Embedding kernels on CUDA: row gather, atomic index-add backward, renorm.

Contracts of kernels/cpu/embedding.py (indices int64, validated by the op
layer; a host index array is copied to the device explicitly)::

    forward:  for (i, d) (grid-stride): out2[i, d] = weight2[indices[i], d]
    backward: for (i, d): if indices[i] != padding_idx:
                  atomic grad_weight[indices[i], d] += grad2[i, d]
              scale_grad_by_freq: counts by atomic adds, then row j /= max(count[j], 1)
    renorm:   mark the referenced rows, then one thread per marked row rescales it
              (no two threads touch a row, so repeated indices are harmless)
"""
import math

import numpy as np
from numba import cuda

from ._launch import grid
from .index import bits, to_device

__all__ = ["embedding_forward", "embedding_backward", "embedding_renorm_",
           "typecheck_signatures"]


@cuda.jit(cache=True)
def gather_rows_kernel(weight2, indices, out2):
    D = out2.shape[1]
    for t in range(cuda.grid(1), indices.size * D, cuda.gridsize(1)):
        i = t // D
        d = t - i * D
        out2[i, d] = weight2[indices[i], d]


@cuda.jit(cache=True)
def add_rows_kernel(grad2, indices, padding_idx, grad_weight, counts, count):
    D = grad2.shape[1]
    for t in range(cuda.grid(1), indices.size * D, cuda.gridsize(1)):
        i = t // D
        d = t - i * D
        j = indices[i]
        if j != padding_idx:
            cuda.atomic.add(grad_weight, (j, d), grad2[i, d])
        if count and d == 0:
            cuda.atomic.add(counts, j, 1)


@cuda.jit(cache=True)
def scale_rows_kernel(grad_weight, counts):
    D = grad_weight.shape[1]
    for t in range(cuda.grid(1), grad_weight.size, cuda.gridsize(1)):
        j = t // D
        c = counts[j]
        if c > 1:
            grad_weight[j, t - j * D] /= c


@cuda.jit(cache=True)
def mark_rows_kernel(indices, marks):
    for i in range(cuda.grid(1), indices.size, cuda.gridsize(1)):
        marks[indices[i]] = 1


@cuda.jit(cache=True)
def renorm_rows_kernel(weight2, marks, max_norm, norm_type):
    """Each marked row j: if ||row||_p > max_norm: row *= max_norm / (norm + 1e-7)."""
    D = weight2.shape[1]
    for j in range(cuda.grid(1), weight2.shape[0], cuda.gridsize(1)):
        if marks[j] == 0:
            continue
        acc = 0.0
        for d in range(D):
            v = float(abs(weight2[j, d]))
            if norm_type == 2.0:
                acc += v * v
            elif norm_type == 1.0:
                acc += v
            elif math.isinf(norm_type):
                acc = max(acc, v)
            else:
                acc += v ** norm_type
        if norm_type == 2.0:
            norm = math.sqrt(acc)
        elif norm_type == 1.0 or math.isinf(norm_type):
            norm = acc
        else:
            norm = acc ** (1.0 / norm_type)
        if norm > max_norm:
            scale = max_norm / (norm + 1e-7)
            for d in range(D):
                weight2[j, d] *= scale


def _zeros(n, dtype, stream):
    from . import copy
    a = cuda.device_array(n, dtype, stream=stream)
    copy.fill(a, dtype.type(0), stream)
    return a


def embedding_forward(weight2, indices, out2, stream=0):
    """Gather rows ``weight2[indices]`` (V, D) -> ``out2`` (M, D)."""
    if out2.size:
        idx = to_device(indices, stream)
        gather_rows_kernel[grid(out2.size) + (stream,)](bits(weight2), idx, bits(out2))


def embedding_backward(grad2, indices, padding_idx, grad_weight, scale_grad_by_freq=False,
                       stream=0):
    """Accumulate ``grad2[i]`` into the zeroed ``grad_weight[indices[i]]`` (float32/64)."""
    if grad2.size == 0:
        return
    idx = to_device(indices, stream)
    counts = _zeros(grad_weight.shape[0] if scale_grad_by_freq else 1, np.dtype(np.int64),
                    stream)
    add_rows_kernel[grid(grad2.size) + (stream,)](grad2, idx, int(padding_idx), grad_weight,
                                                  counts, bool(scale_grad_by_freq))
    if scale_grad_by_freq:
        scale_rows_kernel[grid(grad_weight.size) + (stream,)](grad_weight, counts)


def embedding_renorm_(weight2, indices, max_norm, norm_type, stream=0):
    """In place: each referenced row with ||row||_p > max_norm is scaled to max_norm."""
    if indices.size == 0:
        return
    idx = to_device(indices, stream)
    marks = _zeros(weight2.shape[0], np.dtype(np.uint8), stream)
    mark_rows_kernel[grid(idx.size) + (stream,)](idx, marks)
    renorm_rows_kernel[grid(weight2.shape[0]) + (stream,)](weight2, marks, float(max_norm),
                                                           float(norm_type))


def typecheck_signatures():
    from numba import types as nt
    i64 = nt.Array(nt.int64, 1, "C")
    for t in (nt.float32, nt.float64, nt.uint16, nt.int64):
        yield (f"gather_rows[{t}]", gather_rows_kernel.py_func,
               (nt.Array(t, 2, "A"), i64, nt.Array(t, 2, "C")))
    for t in (nt.float32, nt.float64):
        a2 = nt.Array(t, 2, "C")
        yield (f"add_rows[{t}]", add_rows_kernel.py_func,
               (a2, i64, nt.int64, a2, i64, nt.boolean))
        yield (f"scale_rows[{t}]", scale_rows_kernel.py_func, (a2, i64))
        yield (f"renorm_rows[{t}]", renorm_rows_kernel.py_func,
               (nt.Array(t, 2, "A"), nt.Array(nt.uint8, 1, "C"), nt.float64, nt.float64))
    yield ("mark_rows", mark_rows_kernel.py_func, (i64, nt.Array(nt.uint8, 1, "C")))
