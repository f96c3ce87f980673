"""Compiled per-chunk loops of the offline-data metrics (spec/metrics.md §1), one loop per pass.

Imported only to compile (numba costs ~0.9 s to import and set up, see ``_native``). Every loop
releases the GIL (``nogil``), so the pipeline's thread pool runs pairs in parallel; none uses
fast-math beyond fusing a multiply and an add (``_CONTRACT``): no sum is reordered.

Inputs are 1-D C-contiguous chunks of float32, float64, or uint16 holding float16 bits (numba has
no float16 type); ``_value`` turns each element into the spec's value, float32 widened exactly
to float64. Other dtypes are converted to float32 by the caller.

Why lanes: without fast-math LLVM may not reorder a floating-point sum, so a loop accumulating
into one scalar runs one element at a time (~4 ns per element for pass 1). Each loop therefore
keeps ``LANES`` independent accumulators per quantity in a small array and adds element ``i`` of
every block of ``LANES`` elements to lane ``i``: the inner loop is then element-wise (no
reduction), which LLVM vectorises without reassociating anything, and the lanes are summed at
the end. The summation order changes, the rounding of every operation does not.

Maxima and minima ignore NaN here (``v if v > m else m``, one instruction); the caller restores
numpy's NaN propagation from the NaN/inf counts of ``special_counts``, which it only needs when a
chunk's sums are not finite.

The logarithm of the KL terms is ``log``, written out (the classic reduction to [√2/2, √2) and
a degree-7 polynomial in s², error below 1 ulp) rather than a call: LLVM cannot vectorise a call to
``log``, and numpy's float64 ``np.log`` took half the time of both passes here. It may differ
from the C library's ``log`` in the last bit of a term, which moves KL by ~1e-16 relative.
Tensors that agree give ratios p/q close to 1 almost everywhere; a block of ratios all within
2⁻⁵ of 1 takes ``_log_near_one`` instead, a short series without division or bit fiddling that
is as exact there (~0.53 ulp) and made the KL pass ~2x faster on such data.

The pipeline calls these loops through ``_native``, which keeps them as object code (compiled
here, by ``native_ir``, the first time a pair of dtypes is met) and loads them without numba.
The njit functions are the same loops, called directly by the tests. Both are cached in the
user's cache directory (``cache_dir``), never next to this file. The native passes ``*_rows`` run
the same loops over many pairs of one length laid end to end, in one call: for the tiny tensors
of LLM dumps the call and its Python around it, not the loop, were the cost.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
import numpy.typing as npt
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from dumpcmp.host.metrics._native import FLOAT16_BITS, LANES, cache_dir

__all__ = [
    "FLOAT16_BITS",
    "LANES",
    "cache_dir",
    "first_pass",
    "kl_terms",
    "log",
    "native_ir",
    "special_counts",
    "torchair_pass",
]

EPS64 = 2.220446049250313e-16  # the spec's eps64 (np.finfo(np.float64).eps)
EPS32 = 1.1920928955078125e-07  # the spec's eps32 (np.finfo(np.float32).eps)
INF = math.inf

Chunk = npt.NDArray[np.float32] | npt.NDArray[np.float64] | npt.NDArray[np.uint16]

_CACHE_DIR = cache_dir()
if _CACHE_DIR is not None and not os.environ.get("NUMBA_CACHE_DIR"):
    # numba reads its cache directory from the environment, also when it was imported before us.
    os.environ["NUMBA_CACHE_DIR"] = str(_CACHE_DIR)
    numba.core.config.reload_config()


# The offline-data passes let LLVM fuse ``a * b + c`` into one multiply-add (one rounding where
# there were two: no less exact) and nothing else of fast-math: no reassociation, no assumptions
# about NaN or inf. Pass 2's log polynomial and sums took 12% less time with it.
_CONTRACT: Any = {"contract"}  # a set: numba refuses a frozenset


def _kernel(fn: Callable[..., Any], fastmath: Any = False) -> Any:
    """``njit`` for the kernels: nogil, numpy's division semantics (x/0 is inf or NaN, no
    ZeroDivisionError check, which also keeps the loops vectorisable), cached in ``cache_dir()``.

    Without a writable cache directory (or when numba refuses the one given) the kernels are
    compiled in memory on first use instead: numba would otherwise fall back to this package's
    own directory.
    """
    if _CACHE_DIR is not None:
        try:
            return numba.njit(cache=True, nogil=True, fastmath=fastmath, error_model="numpy")(fn)
        except RuntimeError:
            pass
    return numba.njit(nogil=True, fastmath=fastmath, error_model="numpy")(fn)


def _contracted_kernel(fn: Callable[..., Any]) -> Any:
    return _kernel(fn, _CONTRACT)


_inline = numba.njit(inline="always", error_model="numpy")


def _element_intrinsic(through_float32: bool) -> Callable[..., Any]:
    """An element widened to float64: exactly, or (``through_float32``) as its float32 value,
    which is the offline-data spec's; float16 bits and float32 are exact either way."""

    def element(typingctx: object, v: types.Type) -> Any:
        double, single = ir.DoubleType(), ir.FloatType()
        if v == types.uint16:

            def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
                return builder.fpext(builder.bitcast(args[0], ir.HalfType()), double)  # float16 bits

        elif v == types.float32:

            def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
                return builder.fpext(args[0], double)

        elif v == types.float64:

            def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
                if through_float32:
                    return builder.fpext(builder.fptrunc(args[0], single), double)  # rounds to nearest
                return args[0]

        else:
            return None
        return types.float64(v), codegen

    return element


_value: Any = intrinsic(_element_intrinsic(through_float32=True))  # offline_data: float32 values
_exact: Any = intrinsic(_element_intrinsic(through_float32=False))  # torchair: exact values


def _high_word_intrinsic(typingctx: object, v: types.Type) -> Any:
    """The upper 32 bits of a float64 (sign, exponent, top of the significand) as an int32."""
    if v != types.float64:
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        bits = builder.bitcast(args[0], ir.IntType(64))
        return builder.trunc(builder.lshr(bits, ir.Constant(ir.IntType(64), 32)), ir.IntType(32))

    return types.int32(v), codegen


def _with_high_word_intrinsic(typingctx: object, v: types.Type, high: types.Type) -> Any:
    """``v`` with its upper 32 bits replaced by the low 32 bits of ``high``."""
    if v != types.float64 or not isinstance(high, types.Integer):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        i64 = ir.IntType(64)
        low = builder.and_(builder.bitcast(args[0], i64), ir.Constant(i64, 0xFFFFFFFF))
        word = builder.trunc(args[1], ir.IntType(32)) if args[1].type.width > 32 else args[1]
        top = builder.shl(builder.zext(word, i64), ir.Constant(i64, 32))
        return builder.bitcast(builder.or_(top, low), ir.DoubleType())

    return types.float64(v, high), codegen


def _exponent_to_float_intrinsic(typingctx: object, k: types.Type) -> Any:
    """A binary exponent (it fits 32 bits) as a float64, converted from 32 bits."""
    if not isinstance(k, types.Integer):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        word = builder.trunc(args[0], ir.IntType(32)) if args[0].type.width > 32 else args[0]
        return builder.sitofp(word, ir.DoubleType())

    return types.float64(k), codegen


def _extreme_intrinsic(greater: bool) -> Callable[..., Any]:
    """``v if v > m else m`` (``<`` for the minimum) on float64: x86's own max/min, NaN in ``v``
    ignored.

    ``m`` is frozen (a no-op on a value that is not poison): in a vectorised loop where ``m`` is
    loaded from the address the result is stored to, LLVM's x86 backend otherwise turns the
    select into a masked store (``vmaskmovpd``), which is microcoded on AMD Zen and made pass 1
    four times slower than all its arithmetic. llvmlite's builder has no ``freeze``, hence the
    bare instruction.
    """
    op = ">" if greater else "<"

    def extreme(typingctx: object, v: types.Type, m: types.Type) -> Any:
        if v != types.float64 or m != types.float64:
            return None

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            value, current = args
            frozen = ir.Instruction(builder.block, current.type, "freeze", [current])
            builder._insert(frozen)
            return builder.select(builder.fcmp_ordered(op, value, frozen), value, frozen)

        return types.float64(v, m), codegen

    return extreme


_greater: Any = intrinsic(_extreme_intrinsic(greater=True))
_less: Any = intrinsic(_extreme_intrinsic(greater=False))

# Integer work on 32-bit words only: AVX2 has no 64-bit arithmetic shift or int64 → float64
# conversion, and either would keep the loops calling ``log`` from vectorising.
_high_word: Any = intrinsic(_high_word_intrinsic)
_with_high_word: Any = intrinsic(_with_high_word_intrinsic)
_exponent_to_float: Any = intrinsic(_exponent_to_float_intrinsic)

# log on [√2/2, √2): with f = m − 1 and s = f/(2 + f), log(m) = 2s + s·R(s²) where R is this
# polynomial in s² with the coefficients of the classic fdlibm reduction.
_LG = (6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01,
       2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01,
       1.479819860511658591e-01)  # fmt: skip
_LN2_HI = 6.93147180369123816490e-01  # ln 2 split so that k·ln2_hi is exact for any exponent k
_LN2_LO = 1.90821492927058770002e-10
_TWO54 = 18014398509481984.0  # scales a subnormal into the normal range
_TINY = 2.2250738585072014e-308  # the smallest normal float64


@_inline
def _log_normal(w: float, scaled: int) -> float:
    """log(w · 2^−scaled) for a positive, finite, normal float64 ``w``; garbage for any other."""
    word = _high_word(w)
    high = word & 0x000FFFFF
    k = ((word >> 20) & 0x7FF) - 1023 - scaled
    # Significands from √2 on are halved (exponent + 1), so m lies in [√2/2, √2).
    up = (high + 0x95F64) & 0x100000
    m = _with_high_word(w, high | (up ^ 0x3FF00000))
    k += up >> 20
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    z2 = z * z
    r = z * (_LG[0] + z2 * (_LG[2] + z2 * (_LG[4] + z2 * _LG[6]))) + z2 * (
        _LG[1] + z2 * (_LG[3] + z2 * _LG[5])
    )
    dk = _exponent_to_float(k)
    half_f2 = 0.5 * f * f
    # fdlibm also has a second arrangement of this sum for m near 1, chosen per element; with FMA
    # contraction this one alone measured within 1 ulp of the C library everywhere (the tests'
    # table of values, and 10 million random ones), and the select cost 16% of every KL pass.
    return dk * _LN2_HI - ((half_f2 - (s * (half_f2 + r) + dk * _LN2_LO)) - f)


@numba.njit(inline="always", error_model="numpy")
def log(v: float) -> float:
    """The natural logarithm of a float64, branch-free so that loops calling it vectorise.

    IEEE special values as the C library's: log(0) = −inf, log(inf) = inf, NaN for NaN and < 0.
    """
    sub = v < _TINY
    result = _log_normal(v * _TWO54 if sub else v, 54 if sub else 0)
    special = INF if v == INF else (-INF if v == 0.0 else math.nan)
    return result if (v > 0.0) & (v < INF) else special


@_inline
def _log_of_ratio(v: float) -> float:
    """``log`` of a KL ratio p/q: the same value for what finite data gives (p and q lie in
    [eps32, 1], so p/q is positive and normal), and NaN or inf propagated. Zero, negative and
    subnormal ratios come only from non-finite data, whose KL the caller discards; skipping
    their handling (and its constants, which AVX2 has too few registers for) saves ~15%.
    """
    return _log_normal(v, 0) if v < INF else v


# log(1 + u) = u + u²·P(u) for |u| < 2⁻⁵, P the Taylor series of (log(1 + u) − u)/u² up to u⁹:
# the first term left out, u¹²/12, is below 2⁻⁵⁵ of u. Measured against 200-bit logarithms on
# 22,000 ratios (and the range's ends): at most 0.53 ulp, the classic log above 0.50.
_NEAR_ONE = 2.0**-5
_LOG1P_SERIES = tuple((-1.0) ** (k + 1) / k for k in range(2, 12))  # −1/2, 1/3, −1/4, …, 1/11


@_inline
def _log_near_one(r: float) -> float:
    """log(r) for ``|r − 1| < _NEAR_ONE``; NaN for NaN."""
    u = r - 1.0  # exact: r lies in [1/2, 2]
    c = _LOG1P_SERIES
    p = c[0] + u * (c[1] + u * (c[2] + u * (c[3] + u * (c[4] + u * (c[5] + u * (c[6] + u * (
        c[7] + u * (c[8] + u * c[9]))))))))  # fmt: skip
    return u + u * u * p


# ---------------------------------------------------------------------------------------------
# Pass 1


@_inline
def _first(acc: npt.NDArray[np.float64], a: float, b: float, i: int) -> None:
    lanes = LANES
    acc[i] += a * b
    acc[lanes + i] += a
    acc[2 * lanes + i] += b
    d = a - b
    ad = abs(d)
    acc[3 * lanes + i] += ad
    acc[4 * lanes + i] += d * d
    acc[5 * lanes + i] = _greater(ad, acc[5 * lanes + i])
    # |x/y − 1| = |x − y| / |y| where |y| > eps64, 0 elsewhere. An infinite golden gives
    # |x/y − 1| = 1 for a finite target (|x − y|/|y| would say inf/inf = NaN) and NaN otherwise.
    ab = abs(b)
    r = ad / ab
    r = (1.0 if abs(a) < INF else r) if ab == INF else r
    r = r if ab > EPS64 else 0.0
    acc[6 * lanes + i] += r
    acc[7 * lanes + i] = _greater(r, acc[7 * lanes + i])
    acc[8 * lanes + i] = _less(a, acc[8 * lanes + i])
    acc[9 * lanes + i] = _greater(a, acc[9 * lanes + i])
    acc[10 * lanes + i] = _less(b, acc[10 * lanes + i])
    acc[11 * lanes + i] = _greater(b, acc[11 * lanes + i])


@_inline
def _first_pass_into(x: Chunk, y: Chunk, acc: npt.NDArray[np.float64], out: npt.NDArray[np.float64]) -> None:
    """Pass 1 over a chunk into ``out`` (12 floats), ``acc`` (``12 * LANES`` floats) as scratch."""
    lanes = LANES
    acc[: 5 * lanes] = 0.0
    acc[5 * lanes : 6 * lanes] = -INF
    acc[6 * lanes : 7 * lanes] = 0.0
    acc[7 * lanes : 8 * lanes] = -INF
    acc[8 * lanes : 9 * lanes] = INF
    acc[9 * lanes : 10 * lanes] = -INF
    acc[10 * lanes : 11 * lanes] = INF
    acc[11 * lanes : 12 * lanes] = -INF
    n = x.shape[0]
    full = n - n % lanes
    for base in range(0, full, lanes):
        for i in range(lanes):
            _first(acc, _value(x[base + i]), _value(y[base + i]), i)
    for i in range(n - full):
        _first(acc, _value(x[full + i]), _value(y[full + i]), i)
    for k in range(12):
        v = acc[k * lanes]
        for i in range(1, lanes):
            w = acc[k * lanes + i]
            if k in (5, 7, 9, 11):
                v = w if w > v else v
            elif k in (8, 10):
                v = w if w < v else v
            else:
                v += w
        out[k] = v


@_inline
def _first_pass_rows_into(
    x: Chunk, y: Chunk, rows: int, n: int, acc: npt.NDArray[np.float64], out: npt.NDArray[np.float64]
) -> None:
    """Pass 1 over each of ``rows`` pairs of ``n`` elements laid end to end, pair ``r``'s 12
    results at ``out[12 * r:]``: the loop above, once a pair (many tiny tensors, one call)."""
    for r in range(rows):
        _first_pass_into(x[r * n : (r + 1) * n], y[r * n : (r + 1) * n], acc, out[12 * r : 12 * (r + 1)])


@_contracted_kernel
def first_pass(x: Chunk, y: Chunk) -> tuple[float, ...]:
    """Σxy, Σx, Σy, Σ|d|, Σd², max|d|, Σrel, max rel, min x, max x, min y, max y (d = x − y).

    The maxima and minima skip NaN (see the module doc).
    """
    out = np.empty(12)
    _first_pass_into(x, y, np.empty(12 * LANES), out)
    return (out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7], out[8], out[9], out[10],
            out[11])  # fmt: skip


@_inline
def _special_counts_into(x: Chunk, y: Chunk, out: npt.NDArray[np.int64]) -> None:
    nan_x = inf_x = nan_y = inf_y = differ = 0
    for i in range(x.shape[0]):
        a = _value(x[i])
        b = _value(y[i])
        na, nb = a != a, b != b
        ia, ib = abs(a) == INF, abs(b) == INF
        nan_x += na
        inf_x += ia
        nan_y += nb
        inf_y += ib
        if (na or ia or nb or ib) and not ((na and nb) or (ia and a == b)):
            differ += 1
    out[0], out[1], out[2], out[3], out[4] = nan_x, inf_x, nan_y, inf_y, differ


@_kernel
def special_counts(x: Chunk, y: Chunk) -> tuple[int, int, int, int, int]:
    """NaN and inf counts per side, and positions where the two sides' NaN/±inf differ.

    Only run on chunks whose sums are not finite, so it is a plain loop.
    """
    out = np.empty(5, dtype=np.int64)
    _special_counts_into(x, y, out)
    return out[0], out[1], out[2], out[3], out[4]


# ---------------------------------------------------------------------------------------------
# Pass 2


@_inline
def _distribution(centred: float, shift: float, scale: float) -> float:
    """An element of the KL distribution before normalising: min-max scaled, at least eps32.

    ``np.maximum``'s NaN propagation, written as a select.
    """
    v = (centred - shift) * scale
    return v if (v > EPS32) | (v != v) else EPS32


@_inline
def _kl_block(
    acc: npt.NDArray[np.float64], scratch: npt.NDArray[np.float64], x: Chunk, y: Chunk, base: int,
    count: int, mx: float, my: float, sx: float, sy: float, kx: float, ky: float,
) -> None:  # fmt: skip
    """Elements ``base`` to ``base + count`` (``count`` ≤ ``LANES``) into lane ``i``'s sums.

    Two loops: the first leaves p and p/q in ``scratch``, the second adds p·log(p/q). As one
    loop it kept more constants live than AVX2 has registers; reloading them made it ~40% slower.
    The second takes the short series when every ratio of the block is near 1 (NaN counts as
    near: the series gives NaN as ``log`` does); one ratio elsewhere and the block takes ``log``.
    """
    lanes = LANES
    for i in range(count):
        a = _value(x[base + i]) - mx
        b = _value(y[base + i]) - my
        acc[i] += a * a
        acc[lanes + i] += b * b
        p = _distribution(a, sx, kx)
        q = _distribution(b, sy, ky)
        acc[2 * lanes + i] += p
        acc[3 * lanes + i] += q
        scratch[i] = p
        scratch[lanes + i] = p / q
    far = 0
    for i in range(count):
        far |= abs(scratch[lanes + i] - 1.0) >= _NEAR_ONE
    if far:
        for i in range(count):
            acc[4 * lanes + i] += scratch[i] * _log_of_ratio(scratch[lanes + i])
    else:
        for i in range(count):
            acc[4 * lanes + i] += scratch[i] * _log_near_one(scratch[lanes + i])


@_inline
def _kl_terms_into(
    x: Chunk, y: Chunk, mx: float, my: float, sx: float, sy: float, kx: float, ky: float,
    acc: npt.NDArray[np.float64], scratch: npt.NDArray[np.float64], out: npt.NDArray[np.float64],
) -> None:  # fmt: skip
    """Pass 2 over a chunk into ``out`` (5 floats); ``acc`` (``5 * LANES``) and ``scratch``
    (``2 * LANES``) are scratch."""
    lanes = LANES
    acc[:] = 0.0
    n = x.shape[0]
    full = n - n % lanes
    for base in range(0, full, lanes):
        _kl_block(acc, scratch, x, y, base, lanes, mx, my, sx, sy, kx, ky)
    _kl_block(acc, scratch, x, y, full, n - full, mx, my, sx, sy, kx, ky)
    out[0] = acc[:lanes].sum()
    out[1] = acc[lanes : 2 * lanes].sum()
    out[2] = acc[2 * lanes : 3 * lanes].sum()
    out[3] = acc[3 * lanes : 4 * lanes].sum()
    out[4] = acc[4 * lanes :].sum()


@_inline
def _kl_terms_rows_into(
    x: Chunk, y: Chunk, rows: int, n: int, centres: npt.NDArray[np.float64],
    acc: npt.NDArray[np.float64], scratch: npt.NDArray[np.float64], out: npt.NDArray[np.float64],
) -> None:  # fmt: skip
    """Pass 2 over each of ``rows`` pairs of ``n`` elements laid end to end, pair ``r`` with the
    six constants at ``centres[6 * r:]`` (``kl_terms``' mx … ky), its 5 sums at ``out[5 * r:]``."""
    for r in range(rows):
        c = 6 * r
        _kl_terms_into(x[r * n : (r + 1) * n], y[r * n : (r + 1) * n], centres[c], centres[c + 1],
                       centres[c + 2], centres[c + 3], centres[c + 4], centres[c + 5], acc, scratch,
                       out[5 * r : 5 * (r + 1)])  # fmt: skip


@_contracted_kernel
def kl_terms(
    x: Chunk, y: Chunk, mx: float, my: float, sx: float, sy: float, kx: float, ky: float
) -> tuple[float, float, float, float, float]:
    """Σ(x − mx)², Σ(y − my)², Σp, Σq, Σp·log(p/q).

    p = max((x − mx − sx)·kx, eps32) and q likewise: centred values shifted and scaled to [0, 1].
    """
    out = np.empty(5)
    _kl_terms_into(x, y, mx, my, sx, sy, kx, ky, np.empty(5 * LANES), np.empty(2 * LANES), out)
    return out[0], out[1], out[2], out[3], out[4]


# ---------------------------------------------------------------------------------------------
# TorchAir real-data pass (metrics.md §2): one read of a pair, exact values

TORCHAIR_SUMS = 10


@_inline
def _torchair(
    acc: npt.NDArray[np.float64], a: float, b: float, i: int, eps: float, bound1: float, bound5: float
) -> None:
    lanes = LANES
    d = a - b
    ad = abs(d)
    acc[i] += a * b
    acc[lanes + i] += a * a
    acc[2 * lanes + i] += b * b
    acc[3 * lanes + i] += d * d
    acc[4 * lanes + i] = _greater(ad, acc[4 * lanes + i])
    acc[5 * lanes + i] += 1.0 if ad != ad else 0.0
    # |x − y| / |y|, both sides moved by eps where the golden is 0 (metrics.md §2).
    zero = b == 0.0
    xa = a + eps if zero else a
    yb = b + eps if zero else b
    r = abs(xa - yb) / abs(yb)
    acc[6 * lanes + i] = _greater(r, acc[6 * lanes + i])
    acc[7 * lanes + i] += 1.0 if r != r else 0.0
    acc[8 * lanes + i] += 1.0 if r < bound1 else 0.0
    acc[9 * lanes + i] += 1.0 if r < bound5 else 0.0


@_inline
def _torchair_pass_into(
    x: Chunk, y: Chunk, eps: float, bound1: float, bound5: float,
    acc: npt.NDArray[np.float64], out: npt.NDArray[np.float64],
) -> None:  # fmt: skip
    """The pass over a chunk into ``out`` (``TORCHAIR_SUMS`` floats), ``acc`` as scratch."""
    lanes = LANES
    acc[: TORCHAIR_SUMS * lanes] = 0.0
    acc[4 * lanes : 5 * lanes] = -INF
    acc[6 * lanes : 7 * lanes] = -INF
    n = x.shape[0]
    full = n - n % lanes
    for base in range(0, full, lanes):
        for i in range(lanes):
            _torchair(acc, _exact(x[base + i]), _exact(y[base + i]), i, eps, bound1, bound5)
    for i in range(n - full):
        _torchair(acc, _exact(x[full + i]), _exact(y[full + i]), i, eps, bound1, bound5)
    for k in range(TORCHAIR_SUMS):
        v = acc[k * lanes]
        for i in range(1, lanes):
            w = acc[k * lanes + i]
            if k in (4, 6):
                v = w if w > v else v
            else:
                v += w
        out[k] = v


@_kernel
def torchair_pass(x: Chunk, y: Chunk, eps: float, bound1: float, bound5: float) -> tuple[float, ...]:
    """Σxy, Σx², Σy², Σd², max|d|, #NaN |d|, max rel, #NaN rel, #rel < bound1, #rel < bound5.

    d = x − y on the exact values; rel = |x − y| / |y| with eps added to both where y == 0. The
    maxima skip NaN, the NaN counts let the caller restore numpy's propagation.
    """
    out = np.empty(TORCHAIR_SUMS)
    _torchair_pass_into(x, y, eps, bound1, bound5, np.empty(TORCHAIR_SUMS * LANES), out)
    return (out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7], out[8], out[9])


# ---------------------------------------------------------------------------------------------
# Native objects for ``_native``, which loads them in later runs without importing numba

# numpy dtype character → numba type of a chunk element: float32, float64, float16 bits.
_ELEMENT = {"f": types.float32, "d": types.float64, "H": types.uint16}


def native_ir(x_code: str, y_code: str) -> dict[str, tuple[str, str]]:
    """The passes for chunks of dtypes ``x_code`` and ``y_code`` (``_ELEMENT``'s keys) as
    C-callable functions: pass name → (symbol, optimised LLVM IR of its module).

    Each takes pointers and lengths, writes its results through ``out`` and allocates nothing;
    the caller passes the scratch the njit kernels above allocate themselves. The loops are the
    same inlined code, so the results are the same bits.
    """
    x_ptr, y_ptr = types.CPointer(_ELEMENT[x_code]), types.CPointer(_ELEMENT[y_code])
    f64_ptr, i64_ptr, f64, i64 = (
        types.CPointer(types.float64),
        types.CPointer(types.int64),
        types.float64,
        types.int64,
    )
    lanes = LANES

    def first(xp: Any, yp: Any, n: int, acc: Any, out: Any) -> None:
        _first_pass_into(numba.carray(xp, n), numba.carray(yp, n), numba.carray(acc, 12 * lanes),
                         numba.carray(out, 12))  # fmt: skip

    def first_rows(xp: Any, yp: Any, rows: int, n: int, acc: Any, out: Any) -> None:
        _first_pass_rows_into(numba.carray(xp, rows * n), numba.carray(yp, rows * n), rows, n,
                              numba.carray(acc, 12 * lanes), numba.carray(out, 12 * rows))  # fmt: skip

    def special(xp: Any, yp: Any, n: int, out: Any) -> None:
        _special_counts_into(numba.carray(xp, n), numba.carray(yp, n), numba.carray(out, 5))

    def kl(xp: Any, yp: Any, n: int, mx: float, my: float, sx: float, sy: float, kx: float, ky: float,
           acc: Any, scratch: Any, out: Any) -> None:  # fmt: skip
        _kl_terms_into(numba.carray(xp, n), numba.carray(yp, n), mx, my, sx, sy, kx, ky,
                       numba.carray(acc, 5 * lanes), numba.carray(scratch, 2 * lanes),
                       numba.carray(out, 5))  # fmt: skip

    def kl_rows(xp: Any, yp: Any, rows: int, n: int, centres: Any, acc: Any, scratch: Any, out: Any) -> None:
        _kl_terms_rows_into(numba.carray(xp, rows * n), numba.carray(yp, rows * n), rows, n,
                            numba.carray(centres, 6 * rows), numba.carray(acc, 5 * lanes),
                            numba.carray(scratch, 2 * lanes), numba.carray(out, 5 * rows))  # fmt: skip

    def torchair(xp: Any, yp: Any, n: int, eps: float, bound1: float, bound5: float, acc: Any,
                 out: Any) -> None:  # fmt: skip
        sums = TORCHAIR_SUMS
        _torchair_pass_into(numba.carray(xp, n), numba.carray(yp, n), eps, bound1, bound5,
                            numba.carray(acc, sums * lanes), numba.carray(out, sums))  # fmt: skip

    # name → (loop, C signature, fast-math flags: those of the njit kernel of that name)
    signatures: dict[str, tuple[Callable[..., None], Any, Any]] = {
        "first_pass": (first, types.void(x_ptr, y_ptr, i64, f64_ptr, f64_ptr), _CONTRACT),
        "special_counts": (special, types.void(x_ptr, y_ptr, i64, i64_ptr), False),
        "kl_terms": (
            kl,
            types.void(x_ptr, y_ptr, i64, f64, f64, f64, f64, f64, f64, f64_ptr, f64_ptr, f64_ptr),
            _CONTRACT,
        ),
        "torchair_pass": (torchair, types.void(x_ptr, y_ptr, i64, f64, f64, f64, f64_ptr, f64_ptr), False),
        "first_pass_rows": (first_rows, types.void(x_ptr, y_ptr, i64, i64, f64_ptr, f64_ptr), _CONTRACT),
        "kl_terms_rows": (
            kl_rows,
            types.void(x_ptr, y_ptr, i64, i64, f64_ptr, f64_ptr, f64_ptr, f64_ptr),
            _CONTRACT,
        ),
    }
    out = {}
    for name, (fn, signature, fastmath) in signatures.items():
        compiled: Any = numba.cfunc(signature, nogil=True, fastmath=fastmath, error_model="numpy")(fn)  # type: ignore[type-var]
        out[name] = (compiled.native_name, compiled.inspect_llvm())
    return out
