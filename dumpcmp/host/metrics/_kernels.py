"""Compiled per-chunk loops of the offline-data metrics (spec/metrics.md §1), one loop per pass.

Imported on first use by ``offline_data`` (importing numba costs ~0.2 s, which commands that
compare nothing should not pay). Every loop releases the GIL (``nogil``), so the pipeline's
thread pool runs pairs in parallel; none uses fast-math: every operation rounds as written.

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

Compiled kernels are cached in the user's cache directory (``cache_dir``), never next to this
file: a cache written into an installed package's directory outlives the package and shadows
the next install of it.
"""

from __future__ import annotations

import math
import os
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

import llvmlite.binding
import numba
import numpy as np
import numpy.typing as npt
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = ["FLOAT16_BITS", "LANES", "cache_dir", "first_pass", "kl_terms", "log", "special_counts"]

EPS64 = 2.220446049250313e-16  # the spec's eps64 (np.finfo(np.float64).eps)
EPS32 = 1.1920928955078125e-07  # the spec's eps32 (np.finfo(np.float32).eps)
INF = math.inf

# Accumulators per quantity. 128 float64 lanes x 12 quantities is 12 KB, well inside L1; the
# inner loop's trip count must be this constant (a variable one measured ~3x slower).
LANES = 128


def _widens_float16_in_hardware() -> bool:
    """Whether LLVM widens float16 with an instruction here (x86 with F16C, any ARMv8).

    Elsewhere it would call a runtime helper that numba's JIT may not provide.
    """
    machine = platform.machine().lower()
    if machine in ("aarch64", "arm64"):
        return True
    if machine not in ("x86_64", "amd64"):
        return False
    try:
        return bool(llvmlite.binding.get_host_cpu_features().get("f16c", False))
    except RuntimeError:
        return False


# True: float16 chunks may be passed as their uint16 bits. False: convert them to float32 first.
FLOAT16_BITS = _widens_float16_in_hardware()

Chunk = npt.NDArray[np.float32] | npt.NDArray[np.float64] | npt.NDArray[np.uint16]


def cache_dir() -> Path | None:
    """Where compiled kernels are cached: ``NUMBA_CACHE_DIR`` when the user set it, else
    ``$XDG_CACHE_HOME/dumpcmp/numba`` (``~/.cache/dumpcmp/numba``); None when it is not writable."""
    configured = os.environ.get("NUMBA_CACHE_DIR")
    try:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        path = Path(configured) if configured else base / "dumpcmp" / "numba"
        path.mkdir(parents=True, exist_ok=True)
    except (OSError, RuntimeError):  # RuntimeError: no home directory to be found
        return None
    return path if os.access(path, os.W_OK | os.X_OK) else None


_CACHE_DIR = cache_dir()
if _CACHE_DIR is not None and not os.environ.get("NUMBA_CACHE_DIR"):
    # numba reads its cache directory from the environment, also when it was imported before us.
    os.environ["NUMBA_CACHE_DIR"] = str(_CACHE_DIR)
    numba.core.config.reload_config()


def _kernel(fn: Callable[..., Any]) -> Any:
    """``njit`` for the kernels: nogil, numpy's division semantics (x/0 is inf or NaN, no
    ZeroDivisionError check, which also keeps the loops vectorisable), cached in ``cache_dir()``.

    Without a writable cache directory (or when numba refuses the one given) the kernels are
    compiled in memory on first use instead: numba would otherwise fall back to this package's
    own directory.
    """
    if _CACHE_DIR is not None:
        try:
            return numba.njit(cache=True, nogil=True, fastmath=False, error_model="numpy")(fn)
        except RuntimeError:
            pass
    return numba.njit(nogil=True, fastmath=False, error_model="numpy")(fn)


_inline = numba.njit(inline="always", error_model="numpy")


def _value_intrinsic(typingctx: object, v: types.Type) -> Any:
    """An element as the spec reads it: its float32 value, widened exactly to float64."""
    double, single = ir.DoubleType(), ir.FloatType()
    if v == types.uint16:

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            return builder.fpext(builder.bitcast(args[0], ir.HalfType()), double)  # float16 bits

    elif v == types.float32:

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            return builder.fpext(args[0], double)

    elif v == types.float64:

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            return builder.fpext(builder.fptrunc(args[0], single), double)  # rounds to nearest

    else:
        return None
    return types.float64(v), codegen


_value: Any = intrinsic(_value_intrinsic)


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
    # Two arrangements of the same sum; the first is the more accurate away from m ≈ 1.
    far = dk * _LN2_HI - ((half_f2 - (s * (half_f2 + r) + dk * _LN2_LO)) - f)
    near = dk * _LN2_HI - ((s * (f - r) - dk * _LN2_LO) - f)
    return far if ((high - 0x6147A) | (0x6B851 - high)) > 0 else near


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


@_kernel
def first_pass(x: Chunk, y: Chunk) -> tuple[float, ...]:
    """Σxy, Σx, Σy, Σ|d|, Σd², max|d|, Σrel, max rel, min x, max x, min y, max y (d = x − y).

    The maxima and minima skip NaN (see the module doc).
    """
    lanes = LANES
    acc = np.zeros(12 * lanes)
    acc[5 * lanes : 6 * lanes] = -INF
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
    out = np.empty(12)
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
    return (out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7], out[8], out[9], out[10],
            out[11])  # fmt: skip


@_kernel
def special_counts(x: Chunk, y: Chunk) -> tuple[int, int, int, int, int]:
    """NaN and inf counts per side, and positions where the two sides' NaN/±inf differ.

    Only run on chunks whose sums are not finite, so it is a plain loop.
    """
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
    return nan_x, inf_x, nan_y, inf_y, differ


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
    for i in range(count):
        acc[4 * lanes + i] += scratch[i] * _log_of_ratio(scratch[lanes + i])


@_kernel
def kl_terms(
    x: Chunk, y: Chunk, mx: float, my: float, sx: float, sy: float, kx: float, ky: float
) -> tuple[float, float, float, float, float]:
    """Σ(x − mx)², Σ(y − my)², Σp, Σq, Σp·log(p/q).

    p = max((x − mx − sx)·kx, eps32) and q likewise: centred values shifted and scaled to [0, 1].
    """
    lanes = LANES
    acc = np.zeros(5 * lanes)
    scratch = np.empty(2 * lanes)
    n = x.shape[0]
    full = n - n % lanes
    for base in range(0, full, lanes):
        _kl_block(acc, scratch, x, y, base, lanes, mx, my, sx, sy, kx, ky)
    _kl_block(acc, scratch, x, y, full, n - full, mx, my, sx, sy, kx, ky)
    return (acc[:lanes].sum(), acc[lanes : 2 * lanes].sum(), acc[2 * lanes : 3 * lanes].sum(),
            acc[3 * lanes : 4 * lanes].sum(), acc[4 * lanes :].sum())  # fmt: skip
