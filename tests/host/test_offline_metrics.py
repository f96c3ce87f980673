"""Offline-data metrics (spec/metrics.md §1) against a plain float64 whole-array oracle."""

from __future__ import annotations

import math
import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

import ml_dtypes
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dumpcmp.host.metrics as metrics
from dumpcmp.errors import UnsupportedDtypeError
from dumpcmp.host.metrics import (
    FAMILIES,
    OFFLINE_DATA,
    OFFLINE_DATA_COLUMNS,
    MetricValues,
    PairMeta,
    Partial,
    compare_arrays,
)
from dumpcmp.host.metrics.offline_data import flat_chunks
from dumpcmp.host.rows import ResultRow

EPS64 = 2.220446049250313e-16
EPS32 = 1.1920929e-07
NAN = math.nan

Array = npt.NDArray[np.generic]


# ---------------------------------------------------------------------------------------------
# The oracle: the spec's formulas, written plainly over whole float64 arrays.


def reference(x: Array, y: Array) -> dict[str, float]:
    both_bool = x.dtype == np.bool_ and y.dtype == np.bool_
    a = x.astype(np.float32).astype(np.float64).ravel()
    b = y.astype(np.float32).astype(np.float64).ravel()
    n = a.size
    with np.errstate(all="ignore"):
        norm_a, norm_b = np.sqrt(np.sum(a * a)), np.sqrt(np.sum(b * b))
        if n == 1 or (norm_a <= EPS64 and norm_b <= EPS64):
            cos = 1.0
        elif norm_a <= EPS64 or norm_b <= EPS64:
            cos = NAN
        else:
            cos = float(np.minimum(np.sum(a * b) / (norm_a * norm_b), 1.0))
        if both_bool:
            return {"cos": cos}
        diff = a - b
        counted = np.abs(b) > EPS64
        rel = np.where(counted, np.abs(a / b - 1.0), 0.0)

        def distribution(v: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
            rng = v.max() - v.min()
            if rng != 0:
                v = (v - v.min()) / rng
            v = np.maximum(v, EPS32)
            return v / v.sum()

        p, q = distribution(a), distribution(b)
        kl = float(np.sum(p * np.log(p / q)))
        if abs(kl) < EPS64:
            kl = 0.0
        return {
            "cos": cos,
            "max_abs": float(np.max(np.abs(diff))),
            "acc_rel": float(np.sum(rel)),
            "red": 0.0 if norm_b <= EPS64 else float(np.sqrt(np.sum(diff**2) / np.sum(b * b))),
            "kl": kl,
            "mean_x": float(np.mean(a)),
            "std_x": float(np.std(a)),
            "mean_y": float(np.mean(b)),
            "std_y": float(np.std(b)),
            "mae": float(np.mean(np.abs(diff))),
            "rmse": float(np.sqrt(np.mean(diff**2))),
            "max_rel": float(np.max(rel)),
            "mean_rel": float(np.mean(rel)),
        }


def ours(v: MetricValues) -> dict[str, float]:
    return {
        "cos": v.cosine_similarity,
        "max_abs": v.max_absolute_error,
        "acc_rel": v.accumulated_relative_error,
        "red": v.relative_euclidean_distance,
        "kl": v.kullback_leibler_divergence,
        "mean_x": v.mean_x,
        "std_x": v.std_x,
        "mean_y": v.mean_y,
        "std_y": v.std_y,
        "mae": v.mean_absolute_error,
        "rmse": v.root_mean_square_error,
        "max_rel": v.max_relative_error,
        "mean_rel": v.mean_relative_error,
    }


# (rtol, atol) per metric. Relative errors are looser because the oracle's literal |x/y − 1|
# loses digits when x/y ≈ 1, where the kernel's |x − y|/|y| does not. KL's absolute floor is the
# rounding of the normalising sums (≈ eps·√chunks), which both computations carry.
TOLERANCE = {
    "cos": (0.0, 1e-12),
    "max_abs": (0.0, 0.0),
    "acc_rel": (1e-7, 1e-12),
    "red": (1e-9, 1e-15),
    "kl": (1e-6, 1e-12),
    "mean_x": (1e-9, 1e-12),
    "std_x": (1e-9, 1e-12),
    "mean_y": (1e-9, 1e-12),
    "std_y": (1e-9, 1e-12),
    "mae": (1e-9, 1e-15),
    "rmse": (1e-9, 1e-15),
    "max_rel": (1e-7, 1e-12),
    "mean_rel": (1e-7, 1e-12),
}


def assert_matches(x: Array, y: Array, **kwargs: int) -> MetricValues:
    got = compare_arrays(x, y, **kwargs)
    want = reference(x, y)
    mine = ours(got)
    for key, value in mine.items():
        if key not in want:
            assert math.isnan(value), f"{key} should be NaN, got {value}"
            continue
        rtol, atol = TOLERANCE[key]
        expected = want[key]
        if math.isnan(expected) or math.isinf(expected):
            assert value == expected or (math.isnan(value) and math.isnan(expected)), (
                f"{key}: {value} != {expected}"
            )
        else:
            assert math.isclose(value, expected, rel_tol=rtol, abs_tol=atol), f"{key}: {value} != {expected}"
    return got


def readonly(a: Array) -> Array:
    a.setflags(write=False)
    return a


def pair(n: int = 1000, seed: int = 0, dtype: npt.DTypeLike = np.float32) -> tuple[Array, Array]:
    rng = np.random.default_rng(seed)
    golden = rng.standard_normal(n).astype(np.float32)
    target = golden + rng.standard_normal(n).astype(np.float32) * np.float32(1e-3)
    return readonly(target.astype(dtype)), readonly(golden.astype(dtype))


# ---------------------------------------------------------------------------------------------
# Normal data, dtypes, chunking


@pytest.mark.parametrize("chunk", [1, 7, 64, 1000, 1 << 16])
def test_normal_data_matches_oracle_for_any_chunking(chunk: int) -> None:
    x, y = pair(1000)
    v = assert_matches(x, y, chunk_elems=chunk)
    assert v.reasons == ()
    assert 0.999 < v.cosine_similarity < 1.0


@pytest.mark.parametrize(
    "dtype",
    [np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.int8, np.uint8, np.int16, np.int32, np.int64],
)
def test_dtypes_are_compared_as_float32(dtype: npt.DTypeLike) -> None:
    rng = np.random.default_rng(1)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = max(int(info.min), -1000), min(int(info.max), 1000)
        x = rng.integers(lo, hi, 500).astype(dtype)
        y = rng.integers(lo, hi, 500).astype(dtype)
    else:
        x, y = (a.astype(dtype) for a in pair(500, seed=1))
    assert_matches(readonly(x), readonly(y), chunk_elems=7)


def test_wide_ints_are_rounded_to_float32_first() -> None:
    # 2**24 + 1 is not a float32: both sides become 2**24, so they are equal.
    x = np.array([2**24 + 1, 3], dtype=np.int64)
    y = np.array([2**24, 3], dtype=np.int32)
    v = compare_arrays(x, y)
    assert v.max_absolute_error == 0.0
    assert v.cosine_similarity == 1.0


def test_float64_is_rounded_to_float32_first() -> None:
    x = np.array([0.1, 0.2], dtype=np.float64)
    y = np.array([0.1, 0.2], dtype=np.float32)
    assert compare_arrays(x, y).max_absolute_error == 0.0


def test_float64_beyond_float32_range_becomes_inf() -> None:
    # Cast to float32 first (spec §1): 1e39 is +inf there, counted as such, and silently (no
    # RuntimeWarning, which pytest's filterwarnings = error would turn into a failure).
    x = readonly(np.array([1e39, 2.0, -1e300], dtype=np.float64))
    y = readonly(np.array([1.0, 2.0, 3.0], dtype=np.float32))
    v = compare_arrays(x, y, chunk_elems=2)
    assert v.max_absolute_error == v.mean_absolute_error == math.inf
    assert math.isnan(v.cosine_similarity) and math.isnan(v.kullback_leibler_divergence)
    assert v.reasons == (
        "target has 0 NaN and 2 inf, golden has 0 NaN and 0 inf; NaN/inf positions differ at 2 elements",
    )


@pytest.mark.parametrize("dtype", [">f2", ">f4", ">f8", ">i4"])
def test_non_native_byte_order(dtype: str) -> None:
    # npy files written on a big-endian machine load with their byte order kept.
    x, y = pair(1000, seed=3)
    native = compare_arrays(x.astype(dtype[1:]), y, chunk_elems=300)
    swapped = compare_arrays(readonly(x.astype(dtype)), readonly(y.astype(">f4")), chunk_elems=300)
    assert swapped == native


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_strided_one_dimensional_views(dtype: npt.DTypeLike) -> None:
    x, y = pair(2000, seed=4, dtype=dtype)
    got = compare_arrays(x[::2], y[1::2], chunk_elems=333)
    assert got == compare_arrays(x[::2].copy(), y[1::2].copy(), chunk_elems=333)
    assert_matches(x[::2], y[1::2], chunk_elems=333)


def test_float16_extremes_are_read_exactly() -> None:
    # Subnormals, the largest finite value, signed zeros and infinities of float16.
    specials = [6e-8, -6e-8, 1e-5, 65504.0, -65504.0, 0.0, -0.0, 1.0, np.inf, -np.inf]
    x = readonly(np.array(specials * 3, dtype=np.float16))
    y = readonly(np.array(specials * 3, dtype=np.float32)[::-1].copy())
    v = assert_matches(x, y, chunk_elems=7)
    assert v.reasons[-1].startswith("target has 0 NaN and 6 inf, golden has 0 NaN and 6 inf")


def test_one_bool_side_is_compared_as_numbers() -> None:
    x = readonly(np.array([True, False, True, True]))
    y = readonly(np.array([0.9, 0.1, 1.0, 0.0], dtype=np.float32))
    v = assert_matches(x, y)
    assert "boolean tensor" not in v.reasons


def test_any_shape_and_layout() -> None:
    x, y = pair(24)
    x4 = readonly(x.reshape(2, 3, 4).transpose(2, 0, 1).copy().transpose(1, 2, 0))  # not contiguous
    assert not x4.flags.c_contiguous
    want = compare_arrays(np.ascontiguousarray(x4).reshape(-1), y)
    got = compare_arrays(x4, y.reshape(4, 6), chunk_elems=5)
    assert ours(got) == pytest.approx(ours(want), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("step", [1, 7, 1000, 50_000])
@pytest.mark.parametrize(
    "view",
    [
        lambda a: a.reshape(2, 4, 5, 6, 16).transpose(0, 1, 4, 2, 3),  # NC1HWC0 seen as N C0 C1 H W
        lambda a: a.reshape(60, 64).T,
        lambda a: a[::2],
        lambda a: a.reshape(2, 4, 5, 6, 16),
    ],
)
def test_flat_chunks_of_any_layout(view: Callable[[Array], Array], step: int) -> None:
    a = readonly(view(np.arange(3840, dtype=np.float32)))
    flat = np.ascontiguousarray(a).reshape(-1)
    for start, stop in [(0, None), (3, a.size - 5)]:
        chunks = [c.copy() for c in flat_chunks(a, step, start, stop)]
        assert all(c.size == step for c in chunks[:-1])
        np.testing.assert_array_equal(np.concatenate(chunks), flat[start:stop])


def test_memory_mapped_readonly_inputs(tmp_path: Path) -> None:
    x, y = pair(5000)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    xm = np.load(tmp_path / "x.npy", mmap_mode="r")
    ym = np.load(tmp_path / "y.npy", mmap_mode="r")
    assert_matches(xm, ym, chunk_elems=999)


def test_inputs_are_not_mutated() -> None:
    x = np.array([1.0, -2.0, np.nan, 0.0, np.inf], dtype=np.float32)
    y = np.array([1.5, 0.0, np.nan, 3.0, 2.0], dtype=np.float32)
    xc, yc = x.copy(), y.copy()
    compare_arrays(readonly(x), readonly(y), chunk_elems=2)
    np.testing.assert_array_equal(x, xc)
    np.testing.assert_array_equal(y, yc)


@settings(max_examples=60, deadline=None)
@given(
    data=hnp.arrays(
        np.float32,
        hnp.array_shapes(min_dims=1, max_dims=3, max_side=6),
        elements=st.floats(-1e4, 1e4, width=32),
    ),
    noise=st.floats(0, 1),
    chunk=st.integers(1, 50),
)
def test_property_chunked_equals_whole_and_oracle(data: Array, noise: float, chunk: int) -> None:
    golden = readonly(data)
    target = readonly((data * np.float32(1 + noise) + np.float32(noise)).astype(np.float32))
    whole = assert_matches(target, golden, chunk_elems=golden.size)
    chunked = assert_matches(target, golden, chunk_elems=chunk)
    assert ours(chunked) == pytest.approx(ours(whole), rel=1e-6, abs=1e-9, nan_ok=True)
    assert chunked.reasons == whole.reasons


def test_thread_pool_gives_the_serial_results() -> None:
    pairs = [pair(70_000, seed=s, dtype=d) for s, d in enumerate([np.float16, np.float32] * 3)]
    serial = [compare_arrays(x, y, chunk_elems=4096) for x, y in pairs]
    with ThreadPoolExecutor(2) as pool:
        pooled = list(pool.map(lambda p: compare_arrays(*p, chunk_elems=4096), pairs))
    assert pooled == serial


# ---------------------------------------------------------------------------------------------
# Edge cases of the spec table


@pytest.mark.parametrize("shape", [(), (1,), (1, 1, 1)])
def test_scalar_tensor(shape: tuple[int, ...]) -> None:
    x = readonly(np.full(shape, 2.0, dtype=np.float32))
    y = readonly(np.full(shape, 4.0, dtype=np.float32))
    v = assert_matches(x, y)
    assert v.cosine_similarity == 1.0
    assert v.reasons == ("this tensor is scalar.",)
    assert v.max_absolute_error == 2.0
    assert v.kullback_leibler_divergence == 0.0


def test_both_all_zero() -> None:
    z = readonly(np.zeros(10, dtype=np.float32))
    v = assert_matches(z, z)
    assert v.cosine_similarity == 1.0
    assert v.relative_euclidean_distance == 0.0
    assert v.reasons == ()


@pytest.mark.parametrize(("side", "name"), [(0, "target"), (1, "golden")])
def test_one_side_all_zero(side: int, name: str) -> None:
    x, y = pair(50)
    arrays = [x, y]
    arrays[side] = readonly(np.zeros(50, dtype=np.float32))
    v = assert_matches(*arrays, chunk_elems=7)
    assert math.isnan(v.cosine_similarity)
    assert v.reasons == (f"{name} tensor is all zero",)


def test_golden_zeros_are_left_out_of_relative_errors() -> None:
    x = readonly(np.array([1.0, 5.0, 3.0, 2.0], dtype=np.float32))
    y = readonly(np.array([2.0, 0.0, 3.0, 1e-20], dtype=np.float32))  # 1e-20 ≤ eps64 counts as 0
    v = assert_matches(x, y, chunk_elems=3)
    assert v.max_relative_error == 0.5
    assert v.accumulated_relative_error == 0.5
    assert v.mean_relative_error == 0.125


def test_identical_tensors() -> None:
    x, _ = pair(300)
    v = assert_matches(x, x, chunk_elems=64)
    assert v.cosine_similarity == 1.0
    assert v.kullback_leibler_divergence == 0.0
    assert v.max_absolute_error == v.max_relative_error == 0.0


def test_cosine_when_magnitudes_differ_wildly() -> None:
    x = readonly(np.array([1.0, 1.0, 2.0], dtype=np.float32))
    y = readonly(np.array([-1e-15, -1e-15, -2e-15], dtype=np.float32))
    v = assert_matches(x, y, chunk_elems=2)
    assert v.cosine_similarity == pytest.approx(-1.0, abs=1e-12)


def test_constant_tensors_are_not_scaled_for_kl() -> None:
    x = readonly(np.full(10, 3.0, dtype=np.float32))
    y = readonly(np.array([3.0] * 9 + [4.0], dtype=np.float32))
    v = assert_matches(x, y, chunk_elems=4)
    assert v.std_x == 0.0


def _special(
    x: list[float], y: list[float], chunk: int = 2
) -> MetricValues:  # helper: float lists → compared pair
    return assert_matches(
        readonly(np.array(x, dtype=np.float32)), readonly(np.array(y, dtype=np.float32)), chunk_elems=chunk
    )


def test_nan_on_one_side() -> None:
    v = _special([1.0, np.nan, 3.0], [1.0, 2.0, 3.5])
    assert math.isnan(v.cosine_similarity)
    assert math.isnan(v.max_absolute_error) and math.isnan(v.kullback_leibler_divergence)
    assert math.isnan(v.std_x) and not math.isnan(v.std_y)
    assert v.reasons == (
        "target has 1 NaN and 0 inf, golden has 0 NaN and 0 inf; NaN/inf positions differ at 1 element",
    )


def test_nan_on_both_sides_same_positions() -> None:
    v = _special([1.0, np.nan, 3.0, 4.0], [1.5, np.nan, 3.0, 4.0])
    assert v.reasons[0] == "target has 1 NaN and 0 inf, golden has 1 NaN and 0 inf; NaN/inf positions agree"
    assert v.reasons[1].startswith("(where both are finite: CosineSimilarity 0.99")
    assert not math.isnan(v.max_relative_error)  # a NaN golden is left out like a zero


def test_nan_inf_at_the_same_positions_keep_the_metrics_of_the_other_elements() -> None:
    # Every metric is NaN as the spec's formulas give it; the verdict needs to know whether the
    # other elements agree, which those NaN cannot tell.
    x = [1.0, np.nan, 3.0, -np.inf, 5.0, 6.0, np.inf]
    v = _special(x, [1.0, np.nan, 3.0, -np.inf, 5.5, 6.0, np.inf], chunk=3)
    assert math.isnan(v.cosine_similarity) and math.isnan(v.max_absolute_error)
    assert v.finite is not None
    finite = np.array([1.0, 3.0, 5.0, 6.0], np.float32), np.array([1.0, 3.0, 5.5, 6.0], np.float32)
    assert v.finite == compare_arrays(*finite)
    assert v.finite.max_absolute_error == pytest.approx(0.5)


def test_nan_inf_at_different_positions_have_no_finite_part() -> None:
    assert _special([1.0, np.nan, 3.0], [1.0, 2.0, 3.0]).finite is None
    assert _special([np.inf, 1.0], [-np.inf, 1.0]).finite is None
    assert compare_arrays(*pair(10)).finite is None  # no NaN/inf at all


def test_a_pair_of_nothing_but_nan_has_a_finite_part_without_numbers() -> None:
    v = _special([np.nan, np.nan], [np.nan, np.nan])
    assert v.finite is not None and not v.finite.has_numbers
    assert v.finite.reasons == ("no element is finite on both sides",)


def test_inf_on_both_sides_different_positions() -> None:
    v = _special([np.inf, 1.0, 2.0, -np.inf], [1.0, np.inf, 2.0, -np.inf], chunk=3)
    assert v.reasons == (
        "target has 0 NaN and 2 inf, golden has 0 NaN and 2 inf; NaN/inf positions differ at 2 elements",
    )


def test_inf_sign_matters_for_agreement() -> None:
    v = _special([np.inf, 1.0], [-np.inf, 1.0])
    assert v.reasons[-1].endswith("positions differ at 1 element")


def test_inf_on_target_only_propagates() -> None:
    v = _special([np.inf, 1.0, 2.0], [1.0, 1.0, 2.0])
    assert v.max_absolute_error == math.inf
    assert v.relative_euclidean_distance == math.inf
    assert v.mean_absolute_error == math.inf


def test_bool_tensors_get_cosine_only() -> None:
    x = readonly(np.array([True, False, True, True]))
    y = readonly(np.array([True, True, True, False]))
    v = assert_matches(x, y, chunk_elems=3)
    assert v.cosine_similarity == pytest.approx(2 / 3)
    assert v.reasons == ("boolean tensor",)
    assert all(math.isnan(n) for n in v.numbers()[1:])


@pytest.mark.parametrize(("xs", "ys"), [((0,), (0,)), ((0, 3), (0,)), ((2, 0), (0, 5))])
def test_empty_tensor(xs: tuple[int, ...], ys: tuple[int, ...]) -> None:
    v = compare_arrays(np.zeros(xs, np.float32), np.zeros(ys, np.float16))
    assert v.reasons == ("empty tensor",)
    assert not v.has_numbers


def test_element_count_mismatch() -> None:
    v = compare_arrays(np.zeros((2, 3), np.float32), np.zeros(4, np.float32))
    assert v.reasons == ("shape mismatch [2, 3] vs [4]",)
    assert all(math.isnan(n) for n in v.numbers())


def test_same_count_different_shape_is_compared_flat() -> None:
    x, y = pair(12)
    assert compare_arrays(x.reshape(3, 4), y.reshape(2, 6)) == compare_arrays(x, y)


@pytest.mark.parametrize("dtype", [np.complex64, np.str_, np.object_])
def test_unsupported_dtype(dtype: npt.DTypeLike) -> None:
    with pytest.raises(UnsupportedDtypeError, match=r"^target tensor: unsupported dtype"):
        compare_arrays(np.zeros(3, dtype=dtype), np.zeros(3, dtype=np.float32))
    with pytest.raises(UnsupportedDtypeError, match=r"^golden tensor: unsupported dtype"):
        compare_arrays(np.zeros(3, dtype=np.float32), np.zeros(3, dtype=dtype))


def test_kl_infinite_says_data_contains_zero() -> None:
    p = Partial(n=2, kl_sum_p=1.0, kl_sum_q=1.0, kl_sum_plogr=math.inf, centred_xx=1.0, centred_yy=1.0)
    v = OFFLINE_DATA.finish(p, PairMeta())
    assert v.kullback_leibler_divergence == math.inf
    assert "data contains 0" in v.reasons


def test_kl_matches_oracle_on_skewed_data() -> None:
    rng = np.random.default_rng(5)
    x = readonly(rng.exponential(size=10_000).astype(np.float32))
    y = readonly((x * np.float32(1.01) + rng.normal(0, 0.05, 10_000).astype(np.float32)).astype(np.float32))
    v = assert_matches(x, y, chunk_elems=777)
    assert v.kullback_leibler_divergence > 1e-4


# ---------------------------------------------------------------------------------------------
# API surface


def test_exported_names() -> None:
    assert len(set(metrics.__all__)) == len(metrics.__all__)
    assert all(hasattr(metrics, name) for name in metrics.__all__)
    public = {n for n, v in vars(metrics).items() if not n.startswith("_") and not isinstance(v, ModuleType)}
    assert public - {"Protocol", "TypeVar", "annotations"} == set(metrics.__all__)


def test_family_registry_and_protocol() -> None:
    family = FAMILIES["offline_data"]
    assert family is OFFLINE_DATA
    assert family.columns == OFFLINE_DATA_COLUMNS == tuple(MetricValues.unavailable("x").by_column())
    x, y = pair(20)
    first = family.combine(family.chunk(x[:8], y[:8]), family.chunk(x[8:], y[8:]))
    second = family.combine(family.chunk(x[:8], y[:8], first), family.chunk(x[8:], y[8:], first))
    got = family.finish(family.combine(first, second), PairMeta())
    assert ours(got) == pytest.approx(ours(compare_arrays(x, y)), rel=1e-12, abs=1e-15)


def test_chunk_rejects_unequal_chunks() -> None:
    with pytest.raises(ValueError, match="equal-length"):
        OFFLINE_DATA.chunk(np.zeros(3, np.float32), np.zeros(4, np.float32))


def test_combine_identity() -> None:
    x, y = pair(10)
    p = OFFLINE_DATA.chunk(x, y)
    assert OFFLINE_DATA.combine(Partial(), p) == p == OFFLINE_DATA.combine(p, Partial())


@pytest.mark.parametrize(
    "sides",
    [
        lambda x, y: (x, y),
        lambda x, y: (x.astype(np.float16), y),  # read as float16 bits
        lambda x, y: (x.astype(np.int32), y.astype(">f4")),  # converted into the scratch buffers
        lambda x, y: (x[::2], y[1::2]),  # strided: converted too
        lambda x, y: (np.where(x > 1, np.nan, x), np.where(x > 1, np.inf, y)),  # NaN/inf counted
    ],
)
def test_one_chunk_path_is_chunk_then_combine(sides: Callable[[Array, Array], tuple[Array, Array]]) -> None:
    # compare_arrays takes ``whole`` for a pair of one chunk: it must be the generic path's result
    # bit for bit, not only approximately (repr: every float exactly, and NaN equal to NaN).
    x, y = (readonly(a) for a in sides(*pair(600, seed=5)))
    first = OFFLINE_DATA.chunk(x, y)
    generic = OFFLINE_DATA.combine(first, OFFLINE_DATA.chunk(x, y, first))
    assert repr(OFFLINE_DATA.whole(x, y)) == repr(generic)


def test_rows_pickle_as_they_are() -> None:
    # Forked workers send rows back pickled, each record as its values in field order.
    x, y = (a.copy() for a in pair(50))
    x[3], y[3] = np.nan, np.nan  # a finite part, nested, and reasons
    metrics = compare_arrays(x, y)
    assert metrics.finite is not None
    row = ResultRow(0, 7, "Conv2D", "conv", "DT_FLOAT", None, "conv", "DT_FLOAT", None, "conv:output:0",
                    (50,), None, metrics, golden_key="conv.0")  # fmt: skip
    loaded = pickle.loads(pickle.dumps(row))
    assert type(loaded) is ResultRow and type(loaded.metrics.finite) is MetricValues
    assert repr(loaded) == repr(row)  # repr: NaN fields compare unequal


def test_metric_values_helpers() -> None:
    v = MetricValues.unavailable("golden file missing")
    assert v.reasons == ("golden file missing",)
    assert not v.has_numbers
    assert len(v.numbers()) == 13
    x, y = pair(10)
    got = compare_arrays(x, y)
    assert got.has_numbers
    columns = got.by_column()
    assert list(columns) == list(OFFLINE_DATA_COLUMNS)
    assert columns["StandardDeviation"] == (got.mean_x, got.std_x, got.mean_y, got.std_y)


def test_chunk_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        compare_arrays(np.zeros(3), np.zeros(3), chunk_elems=0)


# ---------------------------------------------------------------------------------------------
# Compiled kernels


_COMPILE_AND_COMPARE = """
import warnings
warnings.simplefilter("error")
import numpy as np
from dumpcmp.host.metrics import compare_arrays

v = compare_arrays(np.arange(300, dtype=np.float16), np.arange(300, dtype=np.float32))
assert v.max_absolute_error == 0.0 and v.cosine_similarity == 1.0, v
"""


@pytest.mark.parametrize("cache", ["fresh", "no-cache-dir"])
def test_kernels_compile_and_cache_without_warnings(tmp_path: Path, cache: str) -> None:
    # A fresh cache directory is filled and then read; with no writable directory anywhere the
    # kernels compile in memory. Either way no warning (the run treats warnings as errors).
    directory = tmp_path / "cache"
    if cache == "no-cache-dir":
        (tmp_path / "a-file").write_text("where the cache directory's parent would be")
        directory = tmp_path / "a-file" / "cache"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(directory)}
    runs = 2 if cache == "fresh" else 1
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-W", "error", "-c", _COMPILE_AND_COMPARE],
                              capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
    cached = list(tmp_path.rglob("kernels-*.o"))
    assert bool(cached) == (cache == "fresh")


@pytest.mark.parametrize(
    ("x", "y", "text"),
    [
        ([1.0, np.nan, 3.0], [1.0, 2.0, 3.0], "(nan;nan),(2.000;0.816)"),
        ([1.0, np.inf, 3.0], [1.0, 2.0, 3.0], "(inf;nan),(2.000;0.816)"),
        ([np.inf, -np.inf, 3.0], [1.0, np.nan, 3.0], "(nan;nan),(nan;nan)"),
    ],
)
def test_standard_deviation_shows_each_part_as_the_formula_gives_it(
    x: list[float], y: list[float], text: str
) -> None:
    from dumpcmp.host.sinks.table import standard_deviation

    v = compare_arrays(np.array(x, np.float32), np.array(y, np.float32))
    assert standard_deviation(v) == text
    with np.errstate(invalid="ignore"):
        oracle = (np.mean(x), np.std(x), np.mean(y), np.std(y))
    assert text == "({:.3f};{:.3f}),({:.3f};{:.3f})".format(*oracle)


@pytest.mark.parametrize(
    "values",
    [
        MetricValues.unavailable("empty tensor"),
        compare_arrays(np.array([True, False]), np.array([True, True])),
    ],
)
def test_standard_deviation_is_a_bare_nan_only_when_never_computed(values: MetricValues) -> None:
    from dumpcmp.host.sinks.table import standard_deviation

    assert not values.spread_computed
    assert standard_deviation(values) == "NaN"
