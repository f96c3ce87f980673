"""TorchAir metric columns (metrics.md §2) against a slow float64 reference written with loops."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

from dumpcmp.errors import UnsupportedDtypeError
from dumpcmp.host.metrics.torchair import ErrorBounds, RealValues, crc32_of, real_metrics, stats_of

EPS32 = 1.1920928955078125e-07
EPS64 = 2.220446049250313e-16


def reference(x: np.ndarray, y: np.ndarray, b1: float = 0.001, b5: float = 0.005) -> dict[str, float]:
    """Plain Python over float64 values, one element at a time."""
    small = {np.dtype(np.float16), np.dtype(np.float32)}
    eps = EPS32 if x.dtype in small and y.dtype in small else EPS64
    xs = [float(v) for v in x.reshape(-1)]
    ys = [float(v) for v in y.reshape(-1)]
    n = len(xs)
    sxy = sxx = syy = sdd = 0.0
    max_abs = max_rel = -math.inf
    nan_abs = nan_rel = False
    below1 = below5 = 0
    for a, b in zip(xs, ys, strict=True):
        d = a - b
        sxy += a * b
        sxx += a * a
        syy += b * b
        sdd += d * d
        if math.isnan(abs(d)):
            nan_abs = True
        else:
            max_abs = max(max_abs, abs(d))
        if b == 0.0:
            a, b = a + eps, b + eps
        with np.errstate(all="ignore"):
            rel = float(np.float64(abs(a - b)) / np.float64(abs(b)))
        if math.isnan(rel):
            nan_rel = True
        else:
            max_rel = max(max_rel, rel)
        below1 += rel < b1
        below5 += rel < b5
    special = any(math.isnan(v) or math.isinf(v) for v in xs + ys)
    if special:
        cosine = math.nan
    elif sxx == 0 and syy == 0:
        cosine = 1.0
    elif sxx == 0 or syy == 0:
        cosine = -1.0  # stands for N/A
    elif sdd == 0:
        cosine = 1.0
    else:
        cosine = min(sxy / math.sqrt(sxx) / math.sqrt(syy), 1.0)
    return {
        "cosine": cosine,
        "euc_dist": math.sqrt(sdd),
        "max_abs_err": math.nan if nan_abs else max_abs,
        "max_relative_err": math.nan if nan_rel else max_rel,
        "one_thousandth_ratio": below1 / n,
        "five_thousandth_ratio": below5 / n,
    }


def _same(got: float | None, want: float, rel: float = 0.0) -> bool:
    if want == -1.0:
        return got is None
    assert got is not None
    if math.isnan(want):
        return math.isnan(got)
    return got == want if rel == 0 else math.isclose(got, want, rel_tol=rel, abs_tol=1e-300)


def check(x: np.ndarray, y: np.ndarray, chunk: int = 1 << 17) -> RealValues:
    got = real_metrics(x, y, chunk_elems=chunk)
    want = reference(x, y)
    for name in ("max_abs_err", "max_relative_err", "one_thousandth_ratio", "five_thousandth_ratio"):
        assert _same(getattr(got, name), want[name]), (name, getattr(got, name), want[name])
    # sums: same operations, another summation order
    for name in ("cosine", "euc_dist"):
        assert _same(getattr(got, name), want[name], rel=1e-12), (name, getattr(got, name), want[name])
    return got


def _pair(dtype: type, n: int = 3001, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.standard_normal(n)
    x = y + rng.standard_normal(n) * 1e-3 * np.abs(y)
    return x.astype(dtype), y.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("chunk", [1000, 1 << 17])
def test_float_pairs_match_the_reference(dtype: type, chunk: int) -> None:
    x, y = _pair(dtype)
    got = check(x, y, chunk)
    assert 0 < got.one_thousandth_ratio < got.five_thousandth_ratio <= 1  # type: ignore[operator]


def test_golden_zeros_use_the_working_dtypes_eps() -> None:
    y = np.array([0.0, 0.0, 1.0, 2.0], dtype=np.float32)
    x = np.array([1e-9, 0.0, 1.0, 2.0], dtype=np.float32)
    got = check(x, y)
    # x = 1e-9 over float32's eps: rel = |1e-9| / eps32, within 0.01
    assert got.max_relative_err == pytest.approx(float(np.float32(1e-9)) / EPS32, rel=1e-6)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    got64 = check(x64, y64)
    # float64 data: eps64, so the same 1e-9 is a huge relative error
    assert got64.max_relative_err > 1e6  # type: ignore[operator]
    assert got64.one_thousandth_ratio == 0.75


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.bool_])
def test_integer_and_bool_pairs_work_in_float64(dtype: type) -> None:
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 500).astype(dtype)
    x = y.copy()
    x[::7] = rng.integers(0, 3, x[::7].size).astype(dtype)
    check(x, y)


def test_mixed_dtypes_are_compared_on_exact_values() -> None:
    x, y = _pair(np.float16)
    check(x, y.astype(np.float64))


@pytest.mark.parametrize(
    ("xv", "yv"),
    [
        (np.nan, 1.0),  # NaN target only
        (1.0, np.nan),  # NaN golden only
        (np.nan, np.nan),  # both
        (np.inf, 1.0),
        (np.inf, np.inf),
        (-np.inf, 0.0),
    ],
)
def test_nan_and_inf_follow_the_formulas_and_are_named(xv: float, yv: float) -> None:
    x, y = _pair(np.float32, 300)
    x[5], y[5] = xv, yv
    got = check(x, y)
    assert math.isnan(got.cosine)  # type: ignore[arg-type]
    assert got.reasons and "NaN" in got.reasons[0]


def test_empty_mismatched_and_unsupported() -> None:
    empty = real_metrics(np.zeros(0, np.float32), np.zeros(0, np.float32))
    assert empty.cosine is None and empty.reasons == ("empty tensor",)
    mismatch = real_metrics(np.zeros((2, 3)), np.zeros(5))
    assert mismatch.max_abs_err is None and mismatch.reasons == ("shape mismatch [2, 3] vs [5]",)
    with pytest.raises(UnsupportedDtypeError):
        real_metrics(np.zeros(3, np.complex64), np.zeros(3, np.complex64))


def test_an_all_zero_side_has_no_cosine_and_says_why() -> None:
    got = check(np.zeros(10, np.float32), np.ones(10, np.float32))
    assert got.cosine is None and "target tensor is all zero" in got.reasons[0]
    both = check(np.zeros(10, np.float32), np.zeros(10, np.float32))
    assert both.cosine == 1.0 and both.max_relative_err == 0.0


def test_ratio_bounds_are_options() -> None:
    x, y = _pair(np.float64)
    tight = real_metrics(x, y, ErrorBounds(1e-6, 1e-5))
    want = reference(x, y, 1e-6, 1e-5)
    assert tight.one_thousandth_ratio == want["one_thousandth_ratio"]
    assert tight.five_thousandth_ratio == want["five_thousandth_ratio"]


def test_non_contiguous_inputs_are_read_as_logical_c_order() -> None:
    x, y = _pair(np.float32, 64 * 48)
    xt, yt = x.reshape(64, 48).T, y.reshape(64, 48).T
    got = real_metrics(xt, yt, chunk_elems=1000)
    want = reference(np.ascontiguousarray(xt), np.ascontiguousarray(yt))
    assert got.max_abs_err == want["max_abs_err"] and got.one_thousandth_ratio == want["one_thousandth_ratio"]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int64, np.bool_])
def test_crc32_is_zlib_crc32_of_the_tensor_bytes(dtype: type) -> None:
    a = (np.arange(1000) % 7).astype(dtype).reshape(10, 100)
    assert crc32_of(a) == zlib.crc32(a.tobytes())
    assert crc32_of(a.T) == zlib.crc32(np.ascontiguousarray(a.T).tobytes())
    assert stats_of(a).crc32 == zlib.crc32(a.tobytes())


def test_statistics_of_an_array_against_loops() -> None:
    x, _ = _pair(np.float32, 1000)
    got = stats_of(x)
    values = [float(v) for v in x]
    assert got.max == max(values) and got.min == min(values)
    assert got.mean == pytest.approx(sum(values) / len(values), rel=1e-12)
    assert got.l2norm == pytest.approx(math.sqrt(sum(v * v for v in values)), rel=1e-12)
    x[3] = np.nan
    assert math.isnan(stats_of(x).max)  # type: ignore[arg-type]
    empty = stats_of(np.zeros(0, np.float32))
    assert empty.max is None and empty.crc32 == zlib.crc32(b"")
