#!/usr/bin/env python3
"""How precise must the UT transform's triangular inverse be?

The UT kernel computes T = (I + L)^-1 of a chunk's strictly lower [64][64]
L by blocks of 16 rows (Kernel/TriangularInverse.h):

    T_II = (I + L_II)^-1                      (forward substitution)
    M_IJ = sum_{J <= K < I} L_IK T_KJ,   T_IJ = -T_II M_IJ   (J < I)

all in fp32 on CUDA cores: in the PTX of Gated DeltaNet's UT kernel at K =
V = 128 (`linattn-compile SPEC -o X.ll --format=isa`) the block products
are ~860 of a thread's ~3100 instructions, the diagonal blocks ~270 more.
On tensor cores the block products would be a few dozen mma.sync a warp,
but their operands are 16-bit: this model computes the block products
(both M_IJ and T_II M_IJ) in the precisions such a kernel could use and
measures what each costs downstream through bench/model/
bf16_intermediates.py's `chunked` (its inputs and recurrence too),
everything else exact in fp64 or with the kernels' bf16 intermediates
(its SWDo; SWDoSwDk for the gated kinds):

    fp32    the kernels' form today (fp32 products and sums)
    bf16x3  each operand split in bf16 hi + lo, hi hi + hi lo + lo hi
            accumulated in fp32 (MmaEmitter::mmaSplit's products)
    tf32    both operands rounded to TF32 (10-bit mantissa), fp32 sums
    bf16    both operands rounded once to bf16, fp32 sums

Prints, per kind and input (soft / hard as bench/gpu/check.py draws them;
weak_gated_delta: log gates in (-0.01, 0]), the norm-wise relative error
of T against the fp64 inverse of the same fp32 L, and of o (rounded to
bf16) and the final state against the fp64 recurrence.

    /usr/bin/python3 bench/model/inverse_precision.py T [SEED] [KINDS]
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bf16_intermediates  # noqa: E402
from bf16_intermediates import bf16, inputs, recurrence  # noqa: E402


def tf32(x):
    """Round to TF32 (10-bit mantissa, nearest even) and back to float64."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0xFFF + ((u >> 13) & 1)) >> 13) << 13
    return u.astype(np.uint32).view(np.float32).astype(np.float64)


def f32(x):
    return np.asarray(x, np.float32).astype(np.float64)


def product(a, b, precision):
    """a @ b as a kernel in `precision` computes it (fp32 accumulation)."""
    if precision == "fp32":
        return f32(f32(a).astype(np.float32) @ f32(b).astype(np.float32))
    if precision == "bf16x3":
        ah, bh = bf16(a), bf16(b)
        al, bl = bf16(f32(a) - ah), bf16(f32(b) - bh)
        return f32(ah @ bl + al @ bh + ah @ bh)
    if precision == "tf32":
        return f32(tf32(a) @ tf32(b))
    if precision == "bf16":
        return f32(bf16(a) @ bf16(b))
    raise ValueError(precision)


def blocked_inverse(L, precision, block=16):
    """(I + L)^-1 by blocks of 16 rows, the diagonal blocks in fp32 by
    forward substitution, the block products in `precision`."""
    n = L.shape[0]
    T = np.zeros_like(L)
    for i0 in range(0, n, block):
        d = slice(i0, min(n, i0 + block))
        Ld = f32(L[d, d])
        Td = np.zeros_like(Ld)
        for c in range(Ld.shape[0]):
            for r in range(Ld.shape[0]):
                Td[r, c] = f32((r == c) - f32(Ld[r, :r] @ Td[:r, c]))
        T[d, d] = Td
    for i0 in range(block, n, block):
        rows = slice(i0, min(n, i0 + block))
        # M = L[rows, :i0] T[:i0, :i0], then T[rows, :i0] = -T_II M.
        M = product(L[rows, :i0], T[:i0, :i0], precision)
        T[rows, :i0] = -product(T[rows, rows], M, precision)
    return T


def chunked(q, k, v, g, beta, s0, scale, c, precision, kernels):
    """bf16_intermediates.chunked with T from blocked_inverse of the fp32 L
    the kernels form; with `kernels` today's bf16 intermediates (SWDo, and
    SWDoSwDk for the gated kinds: NOTES s2; negeig's W stays f32). Also
    returns T's worst chunk error against the fp64 inverse of that L."""
    rounded = ()
    if kernels:
        rounded = ("S", "Do") + (() if np.any(c > 1.5 * beta) else ("W",))
        if np.any(g != 0):
            rounded += ("Sw", "Dk")
    terr = []

    def inverse(L):
        L = f32(L)
        T = blocked_inverse(L, precision)
        exact = np.linalg.inv(np.eye(len(L)) + L)
        terr.append(np.linalg.norm(T - exact) / np.linalg.norm(exact))
        return T

    o, S = bf16_intermediates.chunked(q, k, v, g, beta, s0, scale, c, rounded,
                                      inverse=inverse)
    return o, S, max(terr)


def main():
    T = int(sys.argv[1])
    rng = np.random.default_rng(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    kinds = (sys.argv[3].split(",") if len(sys.argv) > 3
             else ["delta", "gated_delta", "negeig_delta", "weak_gated_delta"])
    err = lambda x, ref: np.linalg.norm(x - ref) / np.linalg.norm(ref)  # noqa: E731
    with np.errstate(over="ignore", invalid="ignore"):
        for kind in kinds:
            for hard in (False, True):
                q, k, v, g, beta, s0, c = inputs(rng, T, kind, hard)
                ro, rs = recurrence(q, k, v, g, beta, s0, 128 ** -0.5, c)
                for precision in ("fp32", "bf16x3", "tf32", "bf16"):
                    for kernels in (False, True):
                        o, s, terr = chunked(q, k, v, g, beta, s0, 128 ** -0.5, c,
                                             precision, kernels)
                        print(f"{kind:16s} hard={int(hard)} {precision:6s} "
                              f"{'kernels' if kernels else 'exact  '} T {terr:.1e}  "
                              f"o {err(bf16(o), ro):.2e}  o unrounded {err(o, ro):.2e}  "
                              f"state {err(s, rs):.2e}", flush=True)


if __name__ == "__main__":
    main()
