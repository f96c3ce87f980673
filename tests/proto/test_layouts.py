"""Layout conversions against index-by-index loops written straight from formats.md §6.

Each ``ref_*`` builder places every logical element at the device index the spec gives, one
element at a time, and fills the padding with a sentinel, so a reader that looks at padding or
a writer that forgets to zero it fails.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from itertools import product
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dumpcmp.errors import LayoutError
from dumpcmp.proto.dtypes import Format, format_by_name
from dumpcmp.proto.layouts import CONVERTERS, convert, target_format, to_device, to_logical

F = Format
PAD = 99  # sentinel in padded positions of reference device arrays


def ceil(a: int, b: int) -> int:
    return -(-a // b)


def logical(shape: tuple[int, ...], dtype: str = "float32") -> np.ndarray:
    """Distinct, non-zero values so a misplaced or padded element is always noticed."""
    values = np.arange(1, math.prod(shape) + 1) % 97 + 1
    return values.astype(dtype).reshape(shape)


def as_format(nchw: np.ndarray, fmt: Format) -> np.ndarray:
    letters = fmt.name
    return nchw.transpose(["NCHW".index(a) for a in letters]) if len(letters) == 4 else nchw


# --------------------------------------------------------------------------- reference builders


def ref_nc1hwc0(x: np.ndarray, c0: int, fill: float = PAD) -> np.ndarray:
    n_, c_, h_, w_ = x.shape
    d = np.full((n_, ceil(c_, c0), h_, w_, c0), fill, dtype=x.dtype)
    for n, c, h, w in product(range(n_), range(c_), range(h_), range(w_)):
        d[n, c // c0, h, w, c % c0] = x[n, c, h, w]
    return d


def ref_ndc1hwc0(x: np.ndarray, c0: int, fill: float = PAD) -> np.ndarray:
    n_, c_, d_, h_, w_ = x.shape
    d = np.full((n_, d_, ceil(c_, c0), h_, w_, c0), fill, dtype=x.dtype)
    for n, c, z, h, w in product(range(n_), range(c_), range(d_), range(h_), range(w_)):
        d[n, z, c // c0, h, w, c % c0] = x[n, c, z, h, w]
    return d


def ref_fractal_z(x: np.ndarray, c0: int, fill: float = PAD) -> np.ndarray:
    n_, c_, h_, w_ = x.shape
    d = np.full((ceil(c_, c0) * h_ * w_, ceil(n_, 16), 16, c0), fill, dtype=x.dtype)
    for n, c, h, w in product(range(n_), range(c_), range(h_), range(w_)):
        d[(c // c0) * h_ * w_ + h * w_ + w, n // 16, n % 16, c % c0] = x[n, c, h, w]
    return d


def ref_fractal_z_grouped(x: np.ndarray, g: int, c0: int, fill: float = PAD) -> np.ndarray:
    n_, cin, h_, w_ = x.shape
    cout = n_ // g
    e = min(math.lcm(math.lcm(cin, c0) // cin, math.lcm(cout, 16) // cout), g)
    cin_opt = ceil(e * cin, c0) * c0
    cout_opt = ceil(e * cout, 16) * 16
    c1 = cin_opt // c0
    shape = (ceil(g, e) * c1 * h_ * w_, cout_opt // 16, 16, c0)
    flat = np.full(math.prod(shape), fill, dtype=x.dtype)
    for gi, c, h, w, n in product(range(g), range(cin), range(h_), range(w_), range(cout)):
        ev = gi % e
        ci, co = ev * cin + c, ev * cout + n
        index = (
            (gi // e) * c1 * h_ * w_ * cout_opt * c0
            + (ci // c0) * h_ * w_ * cout_opt * c0
            + h * w_ * cout_opt * c0
            + w * cout_opt * c0
            + co * c0
            + ci % c0
        )
        flat[index] = x[gi * cout + n, c, h, w]
    return flat.reshape(shape)


def ref_fractal_z_3d(x: np.ndarray, c0: int, fill: float = PAD) -> np.ndarray:
    n_, c_, d_, h_, w_ = x.shape
    c1 = ceil(c_, c0)
    d = np.full((d_ * c1 * h_ * w_, ceil(n_, 16), 16, c0), fill, dtype=x.dtype)
    for n, c, z, h, w in product(range(n_), range(c_), range(d_), range(h_), range(w_)):
        d[((z * c1 + c // c0) * h_ + h) * w_ + w, n // 16, n % 16, c % c0] = x[n, c, z, h, w]
    return d


def ref_fractal_z_c04(x: np.ndarray, c0: int, fill: float = PAD) -> np.ndarray:
    """GE's FRACTAL_Z_C04 (not in §6): k = (h·W + w)·4 + c, then blocked like FRACTAL_Z."""
    n_, c_, h_, w_ = x.shape
    d = np.full((ceil(h_ * w_ * 4, c0), ceil(n_, 16), 16, c0), fill, dtype=x.dtype)
    for n, c, h, w in product(range(n_), range(c_), range(h_), range(w_)):
        k = (h * w_ + w) * 4 + c
        d[k // c0, n // 16, n % 16, k % c0] = x[n, c, h, w]
    return d


def ref_c1hwncoc0(x: np.ndarray, c0: int, fill: float = PAD) -> np.ndarray:
    n_, c_, h_, w_ = x.shape
    d = np.full((ceil(c_, c0), h_, w_, n_, c0, c0), fill, dtype=x.dtype)
    for n, c, h, w in product(range(n_), range(c_), range(h_), range(w_)):
        d[c // c0, h, w, n, c % c0, c % c0] = x[n, c, h, w]
    return d


def ref_fractal_nz(x: np.ndarray, c0: int, fill: float = PAD) -> np.ndarray:
    m = x.reshape(1, -1) if x.ndim == 1 else x
    *batch, h_, w_ = m.shape
    d = np.full((*batch, ceil(w_, c0), ceil(h_, 16), 16, c0), fill, dtype=x.dtype)
    for b in product(*(range(s) for s in batch)):
        for h, w in product(range(h_), range(w_)):
            d[(*b, w // c0, h // 16, h % 16, w % c0)] = m[(*b, h, w)]
    return d


# --------------------------------------------------------------------------- NC1HWC0 family

FIVE_HD_CASES = [  # (logical NCHW shape, dtype, c0)
    ((2, 3, 5, 7), "float16", 16),
    ((1, 20, 3, 4), "float16", 16),
    ((2, 40, 2, 3), "int8", 32),
    ((1, 32, 2, 2), "float32", 16),
    ((3, 17, 1, 1), "float32", 8),
]


@pytest.mark.parametrize(("shape", "dtype", "c0"), FIVE_HD_CASES)
@pytest.mark.parametrize("dst", [F.NCHW, F.NHWC, F.HWCN, F.CHWN])
def test_nc1hwc0_reads_every_4d_format(shape, dtype, c0, dst) -> None:
    x = logical(shape, dtype)
    want = as_format(x, dst)
    got = convert(ref_nc1hwc0(x, c0), F.NC1HWC0, dst, want.shape)
    np.testing.assert_array_equal(got, want)
    assert got.flags.c_contiguous


@pytest.mark.parametrize(("shape", "dtype", "c0"), FIVE_HD_CASES)
@pytest.mark.parametrize("src", [F.NCHW, F.NHWC, F.HWCN])
def test_nc1hwc0_writes_with_zero_padding(shape, dtype, c0, src) -> None:
    x = logical(shape, dtype)
    got = to_device(as_format(x, src), F.NC1HWC0, src, c0=c0)
    np.testing.assert_array_equal(got, ref_nc1hwc0(x, c0, fill=0))


def test_default_c0_follows_the_dtype() -> None:
    assert to_device(logical((1, 3, 2, 2), "float16"), F.NC1HWC0).shape == (1, 1, 2, 2, 16)
    assert to_device(logical((1, 3, 2, 2), "float32"), F.NC1HWC0).shape == (1, 1, 2, 2, 16)
    assert to_device(logical((1, 40, 2, 2), "int8"), F.NC1HWC0).shape == (1, 2, 2, 2, 32)
    assert to_device(logical((1, 40, 2, 2), "uint8"), F.NC1HWC0).shape == (1, 2, 2, 2, 32)
    assert to_device(logical((1, 3, 2, 2), "float16"), F.NC1HWC0_C04).shape == (1, 1, 2, 2, 4)
    assert to_device(logical((4, 3), "int8"), F.FRACTAL_NZ).shape == (1, 1, 16, 32)


def test_nc1hwc0_c04_reads_and_writes() -> None:
    x = logical((2, 3, 4, 5), "float16")
    device = to_device(x, F.NC1HWC0_C04)
    np.testing.assert_array_equal(device, ref_nc1hwc0(x, 4, fill=0))
    np.testing.assert_array_equal(to_logical(ref_nc1hwc0(x, 4), F.NC1HWC0_C04, x.shape), x)


@pytest.mark.parametrize(
    ("shape", "c0"), [((2, 3, 2, 3, 4), 16), ((1, 20, 3, 2, 2), 16), ((2, 33, 1, 2, 2), 32)]
)
@pytest.mark.parametrize("dst", [F.NCDHW, F.NDHWC, F.DHWCN])
def test_ndc1hwc0_reads(shape, c0, dst) -> None:
    x = logical(shape)
    want = x.transpose(["NCDHW".index(a) for a in dst.name])
    np.testing.assert_array_equal(convert(ref_ndc1hwc0(x, c0), F.NDC1HWC0, dst, want.shape), want)


@pytest.mark.parametrize(("shape", "c0"), [((2, 3, 2, 3, 4), 16), ((1, 20, 3, 2, 2), 16)])
def test_ndc1hwc0_writes(shape, c0) -> None:
    x = logical(shape)
    np.testing.assert_array_equal(to_device(x, F.NDC1HWC0, c0=c0), ref_ndc1hwc0(x, c0, fill=0))
    ndhwc = x.transpose(0, 2, 3, 4, 1)
    np.testing.assert_array_equal(to_device(ndhwc, F.NDC1HWC0, F.NDHWC, c0=c0), ref_ndc1hwc0(x, c0, fill=0))


def test_c1hwncoc0_reads_the_diagonal() -> None:
    x = logical((17, 20, 2, 3), "float16")
    device = ref_c1hwncoc0(x, 16)
    for dst in (F.NCHW, F.HWCN, F.NHWC):
        want = as_format(x, dst)
        np.testing.assert_array_equal(convert(device, F.C1HWNCoC0, dst, want.shape), want)


# --------------------------------------------------------------------------- FRACTAL_Z family

FZ_CASES = [  # (weight NCHW shape, dtype, c0)
    ((20, 3, 3, 3), "float16", 16),
    ((17, 20, 3, 3), "float16", 16),
    ((16, 32, 1, 1), "float32", 16),
    ((5, 40, 2, 1), "int8", 32),
]


@pytest.mark.parametrize(("shape", "dtype", "c0"), FZ_CASES)
@pytest.mark.parametrize("fmt", [F.NCHW, F.NHWC, F.HWCN, F.CHWN])
def test_fractal_z_reads_and_writes(shape, dtype, c0, fmt) -> None:
    x = logical(shape, dtype)
    want = as_format(x, fmt)
    np.testing.assert_array_equal(convert(ref_fractal_z(x, c0), F.FRACTAL_Z, fmt, want.shape), want)
    np.testing.assert_array_equal(to_device(want, F.FRACTAL_Z, fmt, c0=c0), ref_fractal_z(x, c0, fill=0))


def test_fractal_z_of_a_2d_weight_is_k_by_n() -> None:
    kn = logical((20, 17), "float16")  # (K, N) = (C, N) with H = W = 1
    nchw = kn.T.reshape(17, 20, 1, 1)
    device = ref_fractal_z(nchw, 16)
    assert device.shape == (2, 2, 16, 16)
    np.testing.assert_array_equal(to_logical(device, F.FRACTAL_Z, kn.shape), kn)
    np.testing.assert_array_equal(to_device(kn, F.FRACTAL_Z), ref_fractal_z(nchw, 16, fill=0))


GROUP_CASES = [  # (groups, cin, cout, h, w, c0)
    (2, 3, 5, 2, 2, 16),
    (3, 3, 5, 1, 2, 16),
    (4, 8, 4, 2, 1, 16),
    (8, 1, 1, 3, 3, 16),
    (6, 5, 7, 1, 1, 16),
    (4, 16, 16, 1, 2, 16),
    (5, 12, 3, 2, 2, 32),
]


@pytest.mark.parametrize(("g", "cin", "cout", "h", "w", "c0"), GROUP_CASES)
def test_grouped_fractal_z(g, cin, cout, h, w, c0) -> None:
    x = logical((g * cout, cin, h, w), "float16")
    device = ref_fractal_z_grouped(x, g, c0)
    np.testing.assert_array_equal(to_logical(device, F.FRACTAL_Z, x.shape, sub_format=g), x)
    hwcn = x.transpose(2, 3, 1, 0)
    np.testing.assert_array_equal(convert(device, F.FRACTAL_Z, F.HWCN, hwcn.shape, sub_format=g), hwcn)
    written = to_device(x, F.FRACTAL_Z, c0=c0, groups=g)
    np.testing.assert_array_equal(written, ref_fractal_z_grouped(x, g, c0, fill=0))


def test_grouped_fractal_z_rejects_n_not_divisible_by_groups() -> None:
    with pytest.raises(LayoutError, match="groups"):
        to_device(logical((7, 3, 1, 1)), F.FRACTAL_Z, groups=2)


@pytest.mark.parametrize(
    ("shape", "c0"), [((17, 3, 2, 2, 3), 16), ((4, 20, 1, 3, 2), 16), ((2, 40, 2, 1, 1), 32)]
)
@pytest.mark.parametrize("dst", [F.NCDHW, F.NDHWC, F.DHWCN])
def test_fractal_z_3d_reads(shape, c0, dst) -> None:
    x = logical(shape)
    want = x.transpose(["NCDHW".index(a) for a in dst.name])
    np.testing.assert_array_equal(convert(ref_fractal_z_3d(x, c0), F.FRACTAL_Z_3D, dst, want.shape), want)


@pytest.mark.parametrize(
    ("shape", "c0"), [((17, 3, 3, 3), 16), ((5, 4, 2, 5), 16), ((2, 1, 1, 1), 16), ((3, 2, 2, 2), 4)]
)
@pytest.mark.parametrize("dst", [F.NCHW, F.HWCN, F.NHWC])
def test_fractal_z_c04_reads(shape, c0, dst) -> None:
    x = logical(shape, "float16")
    want = as_format(x, dst)
    got = convert(ref_fractal_z_c04(x, c0), F.FRACTAL_Z_C04, dst, want.shape)
    np.testing.assert_array_equal(got, want)


def test_fractal_z_c04_with_c0_4_is_fractal_z_with_c0_4() -> None:
    x = logical((17, 3, 2, 3), "float16")
    np.testing.assert_array_equal(ref_fractal_z_c04(x, 4), ref_fractal_z(x, 4))


# --------------------------------------------------------------------------- FRACTAL_NZ

NZ_CASES = [  # (logical shape, dtype, c0)
    ((17, 40), "float16", 16),
    ((17, 20), "float16", 16),
    ((3, 17, 20), "float32", 16),
    ((2, 3, 5, 33), "float16", 16),
    ((37,), "float16", 16),
    ((17, 40), "int8", 32),
    ((19, 21), "float32", 8),  # newer CANN: fp32 NZ with C0 = 8, known only from the shape
]


@pytest.mark.parametrize(("shape", "dtype", "c0"), NZ_CASES)
def test_fractal_nz_reads_and_writes(shape, dtype, c0) -> None:
    x = logical(shape, dtype)
    device = ref_fractal_nz(x, c0)
    np.testing.assert_array_equal(to_logical(device, F.FRACTAL_NZ, shape), x)
    np.testing.assert_array_equal(convert(device, F.FRACTAL_NZ, F.ND, shape), x)
    np.testing.assert_array_equal(to_device(x, F.FRACTAL_NZ, F.ND, c0=c0), ref_fractal_nz(x, c0, fill=0))


def test_fractal_nz_shapes_from_the_spec() -> None:
    assert to_device(logical((17, 20), "float16"), F.FRACTAL_NZ).shape == (2, 2, 16, 16)
    assert to_device(logical((17, 20), "int8"), F.FRACTAL_NZ).shape == (1, 2, 16, 32)
    assert to_device(logical((20,), "float16"), F.FRACTAL_NZ).shape == (2, 1, 16, 16)


def test_fractal_nz_to_nchw_and_nhwc_treat_leading_dims_as_batch() -> None:
    x = logical((2, 3, 17, 5), "float16")
    device = ref_fractal_nz(x, 16)
    np.testing.assert_array_equal(convert(device, F.FRACTAL_NZ, F.NCHW, x.shape), x)
    np.testing.assert_array_equal(convert(device, F.FRACTAL_NZ, F.NHWC, x.shape), x)
    np.testing.assert_array_equal(to_logical(device, F.FRACTAL_NZ, x.shape), x)


# --------------------------------------------------------------------------- plain formats

PLAIN_4D = [F.NCHW, F.NHWC, F.HWCN, F.CHWN]


@pytest.mark.parametrize("src", PLAIN_4D)
@pytest.mark.parametrize("dst", PLAIN_4D)
def test_plain_permutations_match_a_loop(src, dst) -> None:
    x = logical((2, 3, 4, 5))  # NCHW
    data = as_format(x, src)
    want = np.empty([x.shape["NCHW".index(a)] for a in dst.name], dtype=x.dtype)
    for n, c, h, w in product(*(range(s) for s in x.shape)):
        where = {"N": n, "C": c, "H": h, "W": w}
        want[tuple(where[a] for a in dst.name)] = x[n, c, h, w]
    got = convert(data, src, dst, want.shape)
    np.testing.assert_array_equal(got, want)
    assert np.shares_memory(got, data)  # a transpose, not a copy


def test_five_d_permutations() -> None:
    x = logical((2, 3, 4, 5, 6))  # NCDHW
    ndhwc = convert(x, F.NCDHW, F.NDHWC, None)
    assert ndhwc.shape == (2, 4, 5, 6, 3)
    np.testing.assert_array_equal(convert(ndhwc, F.NDHWC, F.DHWCN, None), x.transpose(2, 3, 4, 1, 0))


def test_nd_and_plain_formats_reshape() -> None:
    x = logical((2, 3, 4, 5))
    np.testing.assert_array_equal(convert(x.reshape(6, 20), F.ND, F.NCHW, x.shape), x)
    with pytest.raises(LayoutError, match="ND"):
        convert(x, F.NCHW, F.ND, (7, 7))


CANN_TOOL_PAIRS = [
    (F.FRACTAL_NZ, F.NCHW),
    (F.FRACTAL_NZ, F.ND),
    (F.HWCN, F.FRACTAL_Z),
    (F.HWCN, F.NCHW),
    (F.HWCN, F.NHWC),
    (F.NC1HWC0, F.HWCN),
    (F.NC1HWC0, F.NCHW),
    (F.NC1HWC0, F.NHWC),
    (F.NCHW, F.FRACTAL_Z),
    (F.NCHW, F.NHWC),
    (F.NHWC, F.FRACTAL_Z),
    (F.NHWC, F.HWCN),
    (F.NHWC, F.NCHW),
]


def _in_format(x: np.ndarray, fmt: Format, fill: float) -> np.ndarray:
    """``x`` (NCHW) as held in ``fmt``: a reference device array, or a transpose."""
    builders = {F.NC1HWC0: ref_nc1hwc0, F.FRACTAL_Z: ref_fractal_z, F.FRACTAL_NZ: ref_fractal_nz}
    return builders[fmt](x, 16, fill) if fmt in builders else as_format(x, fmt)


@pytest.mark.parametrize(("src", "dst"), CANN_TOOL_PAIRS)
def test_the_cann_format_tool_conversions(src, dst) -> None:
    """The 13 pairs the CANN format tool lists, each against the loop references."""
    x = logical((17, 20, 3, 3), "float16")
    want = _in_format(x, dst, fill=0)
    got = convert(_in_format(x, src, fill=PAD), src, dst, want.shape)
    np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------- to_logical (§6.5)


def test_target_format() -> None:
    assert target_format((1, 2, 3, 4), F.NC1HWC0) == F.NCHW
    assert target_format((1, 2, 3, 4, 5), F.NDC1HWC0) == F.NCDHW
    assert target_format((1, 2, 3, 4, 5), F.FRACTAL_Z_3D) == F.NCDHW
    assert target_format((1, 2, 3, 4, 5), F.FRACTAL_NZ) == F.ND
    assert target_format((17, 40), F.FRACTAL_NZ) == F.ND
    assert target_format((5,), F.ND) == F.ND


def test_to_logical_without_original_shape_keeps_the_device_layout() -> None:
    device = ref_nc1hwc0(logical((1, 3, 2, 2)), 16)
    assert to_logical(device, F.NC1HWC0, ()) is device
    assert to_logical(device, F.NC1HWC0, None) is device


def test_to_logical_only_reshapes_plain_device_formats() -> None:
    nhwc = logical((2, 4, 5, 3))
    # original_shape is in the origin format, so NHWC data is not transposed to NCHW
    np.testing.assert_array_equal(to_logical(nhwc, F.NHWC, (2, 4, 5, 3)), nhwc)
    np.testing.assert_array_equal(to_logical(nhwc.reshape(-1), F.ND, (2, 4, 5, 3)), nhwc)
    with pytest.raises(LayoutError, match="NHWC"):
        to_logical(nhwc, F.NHWC, (2, 4, 5, 4))


def test_to_logical_5d() -> None:
    x = logical((2, 20, 2, 3, 3))
    np.testing.assert_array_equal(to_logical(ref_ndc1hwc0(x, 16), F.NDC1HWC0, x.shape), x)
    np.testing.assert_array_equal(to_logical(ref_fractal_z_3d(x, 16), F.FRACTAL_Z_3D, x.shape), x)


def test_reads_from_a_read_only_buffer() -> None:
    x = logical((17, 20, 3, 3), "float16")
    device = ref_fractal_z(x, 16)
    frozen = np.frombuffer(device.tobytes(), dtype=device.dtype).reshape(device.shape)
    got = to_logical(frozen, F.FRACTAL_Z, x.shape)
    np.testing.assert_array_equal(got, x)
    assert not np.shares_memory(got, frozen)


@pytest.mark.parametrize(
    ("fmt", "ref"),
    [(F.NC1HWC0, ref_nc1hwc0), (F.FRACTAL_Z, ref_fractal_z), (F.C1HWNCoC0, ref_c1hwncoc0)],
)
def test_a_shape_read_again_reads_the_new_data(
    fmt: Format, ref: Callable[[np.ndarray, int], np.ndarray]
) -> None:
    # The second read of a geometry replays the first one's copies on other buffers: each read
    # must see its own data, also from a device array that is not C-contiguous.
    shape = (3, 20, 2, 5)
    for seed in range(3):
        x = (logical(shape, "float16") + seed).astype("float16")
        device = ref(x, 16)
        strided = np.repeat(device, 2, axis=-1)[..., ::2]  # same values, every other element
        for array in (device, strided):
            np.testing.assert_array_equal(to_logical(array, fmt, shape), x)


# --------------------------------------------------------------------------- errors


def test_unknown_pair_names_both_formats_and_shapes() -> None:
    device = ref_nc1hwc0(logical((1, 3, 2, 2)), 16)
    with pytest.raises(LayoutError) as info:
        convert(device, F.NC1HWC0, F.FRACTAL_NZ, (1, 3, 2, 2))
    message = str(info.value)
    assert "NC1HWC0" in message and "FRACTAL_NZ" in message
    assert "(1, 1, 2, 2, 16)" in message and "(1, 3, 2, 2)" in message


def test_device_shape_that_does_not_fit() -> None:
    device = ref_nc1hwc0(logical((1, 20, 2, 2)), 16)  # C1 = 2
    with pytest.raises(LayoutError, match=r"NC1HWC0 \(1, 2, 2, 2, 16\) to NCHW \(1, 40, 2, 2\)"):
        to_logical(device, F.NC1HWC0, (1, 40, 2, 2))
    with pytest.raises(LayoutError, match="needs device shape"):
        to_logical(ref_fractal_nz(logical((17, 40)), 16), F.FRACTAL_NZ, (17, 60))


def test_device_to_logical_needs_the_logical_shape() -> None:
    with pytest.raises(LayoutError, match="shape"):
        convert(ref_nc1hwc0(logical((1, 3, 2, 2)), 16), F.NC1HWC0, F.NCHW, None)


def test_wrong_rank_is_a_layout_error() -> None:
    with pytest.raises(LayoutError, match="4 dims"):
        convert(np.zeros((1, 1, 2, 2, 16)), F.NC1HWC0, F.NCHW, (1, 3, 4))


def test_unwritable_format() -> None:
    with pytest.raises(LayoutError, match="C1HWNCoC0"):
        to_device(logical((1, 3, 2, 2)), F.C1HWNCoC0)


def test_every_registry_entry_is_typed_by_format_pairs() -> None:
    assert all(isinstance(s, Format) and isinstance(d, Format) and s != d for s, d in CONVERTERS)


# --------------------------------------------------------------------------- properties

dims = st.integers(min_value=1, max_value=6)
wide = st.integers(min_value=1, max_value=40)
blocks = st.sampled_from([4, 8, 16, 32])
dtypes = st.sampled_from(["float16", "float32", "int8"])


@settings(max_examples=60, deadline=None)
@given(n=dims, c=wide, h=dims, w=dims, c0=blocks, dtype=dtypes, fmt=st.sampled_from([F.NCHW, F.NHWC, F.HWCN]))
def test_nc1hwc0_round_trip(n, c, h, w, c0, dtype, fmt) -> None:
    x = as_format(logical((n, c, h, w), dtype), fmt)
    device = to_device(x, F.NC1HWC0, fmt, c0=c0)
    np.testing.assert_array_equal(convert(device, F.NC1HWC0, fmt, x.shape), x)


@settings(max_examples=60, deadline=None)
@given(
    g=st.integers(1, 6),
    cout=st.integers(1, 20),
    cin=wide,
    h=st.integers(1, 3),
    w=st.integers(1, 3),
    c0=blocks,
)
def test_fractal_z_round_trip(g, cout, cin, h, w, c0) -> None:
    x = logical((g * cout, cin, h, w), "float16")
    device = to_device(x, F.FRACTAL_Z, c0=c0, groups=g)
    np.testing.assert_array_equal(to_logical(device, F.FRACTAL_Z, x.shape, sub_format=g), x)


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.integers(1, 40), min_size=1, max_size=4), c0=blocks, dtype=dtypes)
def test_fractal_nz_round_trip(shape, c0, dtype) -> None:
    x = logical(tuple(shape), dtype)
    device = to_device(x, F.FRACTAL_NZ, F.ND, c0=c0)
    np.testing.assert_array_equal(convert(device, F.FRACTAL_NZ, F.ND, x.shape), x)


@settings(max_examples=40, deadline=None)
@given(n=dims, c=wide, d=st.integers(1, 3), h=dims, w=dims, c0=blocks)
def test_ndc1hwc0_round_trip(n, c, d, h, w, c0) -> None:
    x = logical((n, c, d, h, w))
    device = to_device(x, F.NDC1HWC0, c0=c0)
    np.testing.assert_array_equal(to_logical(device, F.NDC1HWC0, x.shape), x)


# --------------------------------------------------------------------------- reference fixtures


def _manifest_tensors(fixtures: Path) -> list[dict[str, object]]:
    manifest = json.loads((fixtures / "dumps" / "manifest.json").read_text())
    return [t for f in manifest["files"] for t in f["tensors"]]


def test_device_shapes_match_the_reference_dumps(shared_fixtures: Path) -> None:
    writable = {F.NC1HWC0, F.FRACTAL_Z, F.FRACTAL_NZ, F.NDC1HWC0}
    checked = 0
    for tensor in _manifest_tensors(shared_fixtures):
        fmt = format_by_name(str(tensor["format"]))
        expected = np.load(shared_fixtures / "dumps" / str(tensor["expected"]))
        assert list(expected.shape) == tensor["original_shape"]
        if fmt not in writable:
            np.testing.assert_array_equal(to_logical(expected, fmt, expected.shape), expected)
            continue
        device = to_device(expected, fmt)
        assert list(device.shape) == tensor["device_shape"], tensor["expected"]
        np.testing.assert_array_equal(to_logical(device, fmt, expected.shape), expected)
        checked += 1
    assert checked == 6
