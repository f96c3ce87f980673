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
chunk's sums are not finite. ``kl_terms`` has no logarithm: LLVM cannot vectorise a call to
``log``, and a scalar ``log`` per element cost more than the rest of the pass, so it writes the
ratios p/q and the caller takes ``np.log`` of them in place (vectorised, GIL released) before
``kl_sum``.
"""

from __future__ import annotations

import math
import platform
from collections.abc import Callable
from typing import Any

import llvmlite.binding
import numba
import numpy as np
import numpy.typing as npt
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = ["FLOAT16_BITS", "LANES", "first_pass", "kl_sum", "kl_terms", "special_counts"]

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


def _kernel(fn: Callable[..., Any]) -> Any:
    """``njit`` for the kernels: nogil, numpy's division semantics (x/0 is inf or NaN, no
    ZeroDivisionError check, which also keeps the loops vectorisable), cached on disk.

    numba raises when it finds no writable cache directory (a read-only install and HOME); the
    kernels are then compiled in memory on first use instead.
    """
    try:
        return numba.njit(cache=True, nogil=True, fastmath=False, error_model="numpy")(fn)
    except RuntimeError:
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
    m = acc[5 * lanes + i]
    acc[5 * lanes + i] = ad if ad > m else m
    # |x/y − 1| = |x − y| / |y| where |y| > eps64, 0 elsewhere. An infinite golden gives
    # |x/y − 1| = 1 for a finite target (|x − y|/|y| would say inf/inf = NaN) and NaN otherwise.
    ab = abs(b)
    r = ad / ab
    r = (1.0 if abs(a) < INF else r) if ab == INF else r
    r = r if ab > EPS64 else 0.0
    acc[6 * lanes + i] += r
    m = acc[7 * lanes + i]
    acc[7 * lanes + i] = r if r > m else m
    m = acc[8 * lanes + i]
    acc[8 * lanes + i] = a if a < m else m
    m = acc[9 * lanes + i]
    acc[9 * lanes + i] = a if a > m else m
    m = acc[10 * lanes + i]
    acc[10 * lanes + i] = b if b < m else m
    m = acc[11 * lanes + i]
    acc[11 * lanes + i] = b if b > m else m


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
def _kl_terms(
    acc: npt.NDArray[np.float64], ratio: npt.NDArray[np.float64], j: int, i: int,
    a: float, b: float, mx: float, my: float, sx: float, sy: float, kx: float, ky: float,
) -> None:  # fmt: skip
    lanes = LANES
    a -= mx
    b -= my
    acc[i] += a * a
    acc[lanes + i] += b * b
    p = _distribution(a, sx, kx)
    q = _distribution(b, sy, ky)
    acc[2 * lanes + i] += p
    acc[3 * lanes + i] += q
    ratio[j] = p / q


@_kernel
def kl_terms(
    x: Chunk, y: Chunk, mx: float, my: float, sx: float, sy: float, kx: float, ky: float,
    ratio: npt.NDArray[np.float64],
) -> tuple[float, float, float, float]:  # fmt: skip
    """Σ(x − mx)², Σ(y − my)², Σp, Σq; writes p/q into ``ratio``.

    p = max((x − mx − sx)·kx, eps32) and q likewise: centred values shifted and scaled to [0, 1].
    """
    lanes = LANES
    acc = np.zeros(4 * lanes)
    n = x.shape[0]
    full = n - n % lanes
    for base in range(0, full, lanes):
        for i in range(lanes):
            _kl_terms(acc, ratio, base + i, i, _value(x[base + i]), _value(y[base + i]),
                      mx, my, sx, sy, kx, ky)  # fmt: skip
    for i in range(n - full):
        _kl_terms(acc, ratio, full + i, i, _value(x[full + i]), _value(y[full + i]), mx, my, sx, sy, kx, ky)
    return (acc[:lanes].sum(), acc[lanes : 2 * lanes].sum(), acc[2 * lanes : 3 * lanes].sum(),
            acc[3 * lanes :].sum())  # fmt: skip


@_inline
def _kl_sum(acc: npt.NDArray[np.float64], a: float, log_ratio: float, i: int, mx: float, sx: float,
            kx: float) -> None:  # fmt: skip
    acc[i] += _distribution(a - mx, sx, kx) * log_ratio


@_kernel
def kl_sum(x: Chunk, mx: float, sx: float, kx: float, log_ratio: npt.NDArray[np.float64]) -> float:
    """Σ p·log(p/q), with p recomputed exactly as ``kl_terms`` computed it."""
    lanes = LANES
    acc = np.zeros(lanes)
    n = x.shape[0]
    full = n - n % lanes
    for base in range(0, full, lanes):
        for i in range(lanes):
            _kl_sum(acc, _value(x[base + i]), log_ratio[base + i], i, mx, sx, kx)
    for i in range(n - full):
        _kl_sum(acc, _value(x[full + i]), log_ratio[full + i], i, mx, sx, kx)
    return acc.sum()
