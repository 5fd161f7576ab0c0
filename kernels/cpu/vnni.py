"""The AVX-512 VNNI micro-kernel of the int8 GEMM: ``vpdpbusd``, written in LLVM IR.

LLVM does not find ``vpdpbusd`` (64 uint8 x int8 products summed in fours into 16
int32 lanes, one instruction) from a Numba loop: it widens the bytes to int32 and uses
the 16-bit ``vpdpwssd`` (kernels/cpu/qgemm.py's docstring). So the tile is written
here as an intrinsic, the way fbgemm writes it with compiler intrinsics::

    for g in range(g0, g1):                    # 4 k-values per int32 lane
        b[j] = B_packed[panel p0 + j, group g]      (16 columns x 4 bytes: one zmm)
        for r in 0..3:
            a = broadcast(A[m0 + r, 4g : 4g + 4] as one int32)
            acc[r][j] = vpdpbusd(acc[r][j], a, b[j])    # += sum of 4 u8*s8 per lane
    acc_out[c0 + r, 16 j : 16 j + 16] = acc[r][j]      (started from acc_out's values
                                                        when accumulating, else 0)

4 rows x `np` panels of 16 columns: up to 16 accumulators, 4 B vectors and 1 broadcast
live in the 32 zmm registers. `np` must be a literal (1..4): each is its own unrolled
loop. One call covers k-groups g0..g1, adding to acc when `accumulate` (the callers
block K so that a block of B panels stays in L1). Layouts: A (rows padded to 4, K padded
to K4 = 4 * groups) uint8 C-contiguous; B packed by `pack_weight` (zero padding: padded
products are 0); acc (rows, 64) int32, rows c0..c0+3 used.
`AVAILABLE` says whether this CPU has AVX-512 VNNI (kernels fall back to the loop).
"""
import numpy as np
from llvmlite import binding as _llvm
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["AVAILABLE", "pack_weight", "tile"]

AVAILABLE = bool(_llvm.get_host_cpu_features().get("avx512vnni", False))

_I32 = ir.IntType(32)
_V16 = ir.VectorType(_I32, 16)


def pack_weight(w):
    """(N, K) int8 -> flat int8 panels [N16/16][K4/4][16 columns][4 k], zero padded."""
    n, k = w.shape
    n16, k4 = -(-n // 16) * 16, -(-max(k, 1) // 4) * 4
    padded = np.zeros((n16, k4), np.int8)
    padded[:n, :k] = w
    return np.ascontiguousarray(
        padded.reshape(n16 // 16, 16, k4 // 4, 4).transpose(0, 2, 1, 3)).reshape(-1)


def _vpdpbusd(builder):
    mod = builder.module
    name = "llvm.x86.avx512.vpdpbusd.512"
    fn = mod.globals.get(name)
    if fn is None:
        fn = ir.Function(mod, ir.FunctionType(_V16, [_V16, _V16, _V16]), name)
    return fn


@intrinsic
def tile(typingctx, a, b, acc, m0, c0, p0, groups, np_, g0, g1, accumulate):
    """acc[c0 + r, 16j + l] (+)= sum over k-groups g0..g1 of a[m0 + r, 4g:4g+4] .
    B[panel p0 + j, g, column l] (accumulate: add to acc's values, else start at 0)."""
    if not isinstance(np_, types.IntegerLiteral) or not 1 <= np_.literal_value <= 4:
        return None
    n_panels = np_.literal_value

    def codegen(context, builder, sig, args):
        a_arr = context.make_array(sig.args[0])(context, builder, args[0])
        b_arr = context.make_array(sig.args[1])(context, builder, args[1])
        c_arr = context.make_array(sig.args[2])(context, builder, args[2])
        m0_v, c0_v, p0_v, kg = args[3], args[4], args[5], args[6]
        g0, g1, add = args[8], args[9], args[10]
        i8p = ir.IntType(8).as_pointer()
        a_ptr = builder.bitcast(a_arr.data, i8p)
        b_ptr = builder.bitcast(b_arr.data, i8p)
        lda = builder.extract_value(a_arr.strides, 0)          # bytes per row of A
        panel_bytes = builder.mul(kg, ir.Constant(kg.type, 64))
        b_base = builder.gep(b_ptr, [builder.mul(p0_v, panel_bytes)])
        rows = [builder.gep(a_ptr, [builder.mul(builder.add(m0_v, ir.Constant(m0_v.type, r)),
                                                lda)]) for r in range(4)]
        fn = _vpdpbusd(builder)
        c_ptr = builder.bitcast(c_arr.data, _I32.as_pointer())
        ldc = builder.extract_value(c_arr.strides, 0)          # bytes per row of acc
        c_rows = [builder.bitcast(builder.gep(builder.bitcast(c_ptr, i8p), [builder.mul(
            builder.add(c0_v, ir.Constant(c0_v.type, r)), ldc)]), _I32.as_pointer())
            for r in range(4)]

        def c_vec(r, j):
            return builder.bitcast(builder.gep(c_rows[r], [ir.Constant(_I32, j * 16)]),
                                   _V16.as_pointer())
        # accumulators in stack slots: LLVM's mem2reg keeps them in zmm registers
        zero = ir.Constant(_V16, None)
        flag = context.cast(builder, add, sig.args[10], types.boolean)
        accs = [cgutils.alloca_once_value(builder, builder.select(
            flag, builder.load(c_vec(r, j), align=4), zero))
            for r in range(4) for j in range(n_panels)]
        with cgutils.for_range_slice(builder, g0, g1, ir.Constant(g0.type, 1)) as (g, _):
            goff = builder.mul(g, ir.Constant(kg.type, 64))
            bvec = []
            for j in range(n_panels):
                off = builder.add(builder.mul(ir.Constant(kg.type, j), panel_bytes), goff)
                p = builder.bitcast(builder.gep(b_base, [off]), _V16.as_pointer())
                bvec.append(builder.load(p, align=1))
            for r in range(4):
                at = builder.gep(rows[r], [builder.mul(g, ir.Constant(kg.type, 4))])
                scalar = builder.load(builder.bitcast(at, _I32.as_pointer()), align=1)
                vec = builder.insert_element(ir.Constant(_V16, ir.Undefined), scalar,
                                             ir.Constant(_I32, 0))
                vec = builder.shuffle_vector(vec, ir.Constant(_V16, ir.Undefined),
                                             ir.Constant(_V16, None))
                for j in range(n_panels):
                    slot = accs[r * n_panels + j]
                    builder.store(builder.call(fn, [builder.load(slot), vec, bvec[j]]), slot)
        for r in range(4):
            for j in range(n_panels):
                builder.store(builder.load(accs[r * n_panels + j]), c_vec(r, j), align=4)
        return context.get_dummy_value()
    sig = types.none(a, b, acc, m0, c0, p0, groups, np_, g0, g1, accumulate)
    return sig, codegen
