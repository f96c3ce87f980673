"""The TorchAir metric family (spec/metrics.md §2): real data, statistics and md5 of one pair.

Real data reads a pair once, in chunks, through one compiled loop (``_kernels.torchair_pass``,
loaded as native code by ``_native`` like the offline-data passes) that keeps float64
accumulators for every column at once. Unlike offline_data, values are not cast to float32:
the working dtype is float32 for 16/32-bit floats and float64 for everything else, and it only
decides the eps of the relative-error rule; every operation runs on the exact values in float64.

Values stay floats here; ``None`` means "cannot be computed" (``N/A``), NaN means NaN in the data
and inf a division by zero, as the sinks spell them.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dumpcmp.errors import UnsupportedDtypeError
from dumpcmp.host.metrics.offline_data import DEFAULT_CHUNK, EPS32, EPS64, flat_chunks, kernel_input, scratch
from dumpcmp.host.torchair.records import TensorStats
from dumpcmp.host.verdict import NotCompared, SpecialValues

__all__ = [
    "ErrorBounds",
    "RealValues",
    "crc32_of",
    "real_metrics",
    "stats_of",
    "working_eps",
]

_CRC_BLOCK = 1 << 24  # bytes handed to zlib at a time: a view, never a copy of the tensor
# Working dtype float32 (metrics.md §2): the 16- and 32-bit floats (bf16 arrives widened to float32).
_FLOAT32_WORKING = frozenset({np.dtype(np.float16), np.dtype(np.float32)})


@dataclass(frozen=True, slots=True)
class ErrorBounds:
    """The relative errors the two ratio columns count below (strictly)."""

    one_thousandth: float = 0.001
    five_thousandth: float = 0.005


@dataclass(frozen=True, slots=True)
class RealValues:
    """The real-data columns of one pair; ``None`` = N/A (cannot be computed)."""

    cosine: float | None
    euc_dist: float | None
    max_abs_err: float | None
    max_relative_err: float | None
    one_thousandth_ratio: float | None
    five_thousandth_ratio: float | None
    reasons: tuple[str, ...] = ()
    special: SpecialValues | None = None  # NaN/inf in the data, counted per side
    not_compared: NotCompared | None = None  # the kind, where the summary needs more than the reason

    @classmethod
    def unavailable(cls, reason: str, kind: NotCompared | None = None) -> RealValues:
        return cls(None, None, None, None, None, None, (reason,), not_compared=kind)

    @property
    def has_numbers(self) -> bool:
        return self.cosine is not None or self.max_abs_err is not None


def working_eps(x: np.dtype[np.generic], y: np.dtype[np.generic]) -> float:
    """eps of the pair's working dtype: float32's when both sides are 16/32-bit floats."""
    return EPS32 if x in _FLOAT32_WORKING and y in _FLOAT32_WORKING else EPS64


def _check_dtype(dtype: np.dtype[np.generic]) -> None:
    if dtype.kind not in "biuf":
        raise UnsupportedDtypeError(str(dtype), "torchair metrics")


@dataclass(slots=True)
class _Sums:
    n: int = 0
    sum_xy: float = 0.0
    sum_xx: float = 0.0
    sum_yy: float = 0.0
    sum_dd: float = 0.0
    max_abs: float = -math.inf
    nan_abs: float = 0.0
    max_rel: float = -math.inf
    nan_rel: float = 0.0
    below1: float = 0.0
    below5: float = 0.0
    special: bool = False  # a chunk held NaN or inf on some side

    def add(self, got: tuple[float, ...], n: int) -> None:
        sum_xy, sum_xx, sum_yy, sum_dd, max_abs, nan_abs, max_rel, nan_rel, below1, below5 = got
        self.n += n
        self.sum_xy += sum_xy
        self.sum_xx += sum_xx
        self.sum_yy += sum_yy
        self.sum_dd += sum_dd
        self.max_abs = max(self.max_abs, max_abs)
        self.nan_abs += nan_abs
        self.max_rel = max(self.max_rel, max_rel)
        self.nan_rel += nan_rel
        self.below1 += below1
        self.below5 += below5


def _pieces(
    x: npt.NDArray[np.generic], y: npt.NDArray[np.generic], chunk: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    pieces = max(1, round(x.size / chunk))
    step = -(-x.size // pieces)
    yield from zip(flat_chunks(x, step), flat_chunks(y, step), strict=True)


def _special(x: npt.NDArray[np.generic], y: npt.NDArray[np.generic]) -> SpecialValues | None:
    """How many NaN/inf each side holds (only asked when some chunk's sums were not finite)."""
    counts = []
    for side in (x, y):
        nan = inf = 0
        if side.dtype.kind == "f":
            for piece in flat_chunks(side, DEFAULT_CHUNK):
                nan += int(np.count_nonzero(np.isnan(piece)))
                inf += int(np.count_nonzero(np.isinf(piece)))
        counts.append((nan, inf))
    (nx, ix), (ny, iy) = counts
    if not (nx or ix or ny or iy):
        return None
    return SpecialValues(nx, ix, ny, iy)


def special_reason(special: SpecialValues) -> str:
    """The Err_message words of a pair holding NaN/inf (report.table reads them back)."""
    return (
        f"target has {special.target_nan} NaN and {special.target_inf} inf, golden has "
        f"{special.golden_nan} NaN and {special.golden_inf} inf"
    )


def real_metrics(
    x: npt.NDArray[np.generic],
    y: npt.NDArray[np.generic],
    bounds: ErrorBounds = ErrorBounds(),
    *,
    chunk_elems: int = DEFAULT_CHUNK,
) -> RealValues:
    """The real-data columns of target ``x`` against golden ``y`` (flattened, equal sizes).

    Reads each side once, in chunks; never writes to the inputs, never holds more than a chunk of
    temporaries. A pair that cannot be compared gets N/A everywhere and the reason.
    """
    if x.size != y.size:
        return RealValues.unavailable(f"shape mismatch {list(x.shape)} vs {list(y.shape)}")
    if x.size == 0:
        return RealValues.unavailable("empty tensor")
    _check_dtype(x.dtype)
    _check_dtype(y.dtype)
    eps = working_eps(x.dtype, y.dtype)
    from dumpcmp.host.metrics import _native as k  # the compiled loops, loaded on first use

    sums = _Sums()
    with np.errstate(all="ignore"):
        for xs, ys in _pieces(x, y, chunk_elems):
            m = xs.shape[0]
            s = scratch(m, np.float64)
            got = k.torchair_pass(
                kernel_input(xs, s.x[:m], k),
                kernel_input(ys, s.y[:m], k),
                eps,
                bounds.one_thousandth,
                bounds.five_thousandth,
            )
            sums.add(got, m)
            # Σx² and Σy² are finite exactly when no side holds NaN/inf (or float64 overflows).
            sums.special |= not (math.isfinite(got[1]) and math.isfinite(got[2]))
    return _finish(sums, _special(x, y) if sums.special else None)


def _finish(s: _Sums, special: SpecialValues | None) -> RealValues:
    reasons = [special_reason(special)] if special is not None else []
    n = s.n
    max_abs = math.nan if s.nan_abs else s.max_abs
    max_rel = math.nan if s.nan_rel else s.max_rel
    return RealValues(
        cosine=_cosine(s, special is not None, reasons),
        euc_dist=math.sqrt(s.sum_dd),
        max_abs_err=max_abs,
        max_relative_err=max_rel,
        one_thousandth_ratio=s.below1 / n,
        five_thousandth_ratio=s.below5 / n,
        reasons=tuple(reasons),
        special=special,
    )


def _cosine(s: _Sums, special: bool, reasons: list[str]) -> float | None:
    if special:
        return math.nan  # Σxy and a norm are NaN or inf: the formula as written is NaN
    norm_x, norm_y = math.sqrt(s.sum_xx), math.sqrt(s.sum_yy)
    if norm_x == 0 and norm_y == 0:
        return 1.0  # both all zero: identical
    if norm_x == 0 or norm_y == 0:
        reasons.append(f"{'target' if norm_x == 0 else 'golden'} tensor is all zero: cosine undefined")
        return None
    if s.sum_dd == 0:
        return 1.0  # identical; three roundings could say 1 − 1e-16
    return min(s.sum_xy / norm_x / norm_y, 1.0)


# ---------------------------------------------------------------------------------------------
# Statistics and md5


def stats_of(array: npt.NDArray[np.generic]) -> TensorStats:
    """Max, min, mean, L2 norm and CRC-32 of a tensor, read in chunks; NaN propagates as numpy's.

    An empty tensor has no statistics (``None``: N/A) but a CRC-32 (of no bytes).
    """
    _check_dtype(array.dtype)
    high, low, total, squares = -math.inf, math.inf, 0.0, 0.0
    with np.errstate(all="ignore"):
        for piece in flat_chunks(array, DEFAULT_CHUNK):
            values = piece.astype(np.float64)
            high = _nan_max(high, float(values.max()))
            low = -_nan_max(-low, -float(values.min()))
            total += float(values.sum())
            squares += float(np.dot(values, values))
    crc = crc32_of(array)
    shape = tuple(int(d) for d in array.shape)
    if array.size == 0:
        return TensorStats(str(array.dtype), shape, crc32=crc)
    return TensorStats(str(array.dtype), shape, high, low, total / array.size, math.sqrt(squares), crc)


def _nan_max(a: float, b: float) -> float:
    return a if (a >= b or a != a) else b


def crc32_of(array: npt.NDArray[np.generic]) -> int:
    """``zlib.crc32`` of the tensor's bytes in C order, without copying a contiguous tensor."""
    crc = 0
    if array.flags.c_contiguous:
        data = memoryview(array.reshape(-1).view(np.uint8).data)
        for start in range(0, len(data), _CRC_BLOCK):
            crc = zlib.crc32(data[start : start + _CRC_BLOCK], crc)
        return crc
    for piece in flat_chunks(array, _CRC_BLOCK // max(1, array.itemsize)):
        crc = zlib.crc32(np.ascontiguousarray(piece).tobytes(), crc)
    return crc
