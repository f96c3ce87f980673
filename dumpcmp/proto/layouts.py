"""Device ⇄ logical tensor layouts (formats.md §6).

A device layout is described by two small functions: the device shape it has for a logical
shape (``_Layout.shape``) and a plan that views both arrays so that every logical axis lines up
with either one device axis or an (outer block, inner block) pair (``_Layout.plan``). One engine,
``_copy``, then moves the data in either direction with a handful of strided numpy copies, so a
conversion reads the device buffer once and writes one contiguous result, whatever the padding.

Block sizes (C0, the 16 of N0/H0) are read from the device shape when reading a dump and are
only defaulted by dtype when writing one.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import product
from typing import TYPE_CHECKING

import numpy as np

from dumpcmp.errors import LayoutError
from dumpcmp.proto.dtypes import Format

if TYPE_CHECKING:
    from dumpcmp.proto.custom_converters import CustomConverters

__all__ = ["CONVERTERS", "Converter", "convert", "target_format", "to_device", "to_logical"]

Shape = tuple[int, ...]

Converter = Callable[[np.ndarray, Shape | None, int], np.ndarray]
"""``(data, dst_shape, sub_format) -> array``: ``data`` in the source shape, ``dst_shape`` the
shape wanted in the destination format (the logical shape for device→logical, the device shape,
or None for the dtype default, for logical→device)."""

# Axis letters of the plain formats; a permutation between two of them is a transpose.
_LETTERS: dict[Format, str] = {
    Format.NCHW: "NCHW",
    Format.NHWC: "NHWC",
    Format.HWCN: "HWCN",
    Format.CHWN: "CHWN",
    Format.NCDHW: "NCDHW",
    Format.NDHWC: "NDHWC",
    Format.DHWCN: "DHWCN",
}
_PLAIN = frozenset({*_LETTERS, Format.ND})
_FOUR_D = (Format.NCHW, Format.NHWC, Format.HWCN, Format.CHWN)
_FIVE_D = (Format.NCDHW, Format.NDHWC, Format.DHWCN)
_MATRIX = (Format.ND, Format.NCHW, Format.NHWC)  # FRACTAL_NZ treats leading dims as batch
_DEPTH_DEVICE = frozenset({Format.NDC1HWC0, Format.FRACTAL_Z_3D})
_CUBE = 16  # N0 / H0 of the cube unit when writing; read from the device shape otherwise


class _Misfit(LayoutError):
    """Shapes that do not fit; ``convert`` re-raises it naming both formats and shapes."""


def _ceil(a: int, b: int) -> int:
    if b <= 0:
        raise _Misfit(f"block size {b} is not positive")
    return -(-a // b)


# --------------------------------------------------------------------------- the copy engine


@dataclass(frozen=True, slots=True)
class _Axis:
    """How one logical axis lies in the blocked view: one axis, or (blocks, block) from ``offset``."""

    blocked: bool = False
    offset: int = 0


_P = _Axis()
_B = _Axis(blocked=True)


@dataclass(frozen=True, slots=True)
class _Job:
    logical: np.ndarray  # view of the logical array, axes in the layout's canonical order
    blocked: np.ndarray  # view of the device array, one or two axes per logical axis
    axes: tuple[_Axis, ...]


@dataclass(frozen=True, slots=True)
class _Piece:
    logical: slice
    blocked: tuple[int | slice, ...]
    split: tuple[int, int] | None  # the logical slice seen as (blocks, block)


def _pieces(size: int, axis: _Axis, block: int) -> list[_Piece]:
    """Cut a logical range into a partial head block, whole blocks and a partial tail block."""
    if size == 0:
        return []
    if not axis.blocked:
        return [_Piece(slice(0, size), (slice(0, size),), None)]
    pieces = []
    pos = 0
    start = axis.offset
    if start % block:
        inner = start % block
        count = min(block - inner, size)
        pieces.append(_Piece(slice(0, count), (start // block, slice(inner, inner + count)), None))
        pos = count
    whole = (size - pos) // block
    if whole:
        first = (start + pos) // block
        span = slice(pos, pos + whole * block)
        pieces.append(_Piece(span, (slice(first, first + whole), slice(None)), (whole, block)))
        pos += whole * block
    if pos < size:
        pieces.append(_Piece(slice(pos, size), ((start + pos) // block, slice(0, size - pos)), None))
    return pieces


def _split_axes(view: np.ndarray, splits: Sequence[tuple[int, int] | None]) -> np.ndarray:
    """Split axes into (blocks, block) by strides alone, so writes reach the original buffer."""
    if all(split is None for split in splits):
        return view
    shape: list[int] = []
    strides: list[int] = []
    for size, stride, split in zip(view.shape, view.strides, splits, strict=True):
        if split is None:
            shape.append(size)
            strides.append(stride)
        else:
            shape += split
            strides += [stride * split[1], stride]
    return np.lib.stride_tricks.as_strided(view, shape, strides, writeable=view.flags.writeable)


def _views(job: _Job) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(logical, blocked) views of equal shape; copying each pair one way or the other is the job."""
    per_axis = []
    dim = 0
    for size, axis in zip(job.logical.shape, job.axes, strict=True):
        block = job.blocked.shape[dim + 1] if axis.blocked else 0
        per_axis.append(_pieces(size, axis, block))
        dim += 2 if axis.blocked else 1
    # At most 3 pieces per blocked axis, so this is a few strided copies, never a per-element loop.
    for combo in product(*per_axis):
        logical = _split_axes(job.logical[tuple(p.logical for p in combo)], [p.split for p in combo])
        yield logical, job.blocked[tuple(i for p in combo for i in p.blocked)]


def _copy(job: _Job, *, into_device: bool) -> None:
    for logical, blocked in _views(job):
        if into_device:
            blocked[...] = logical
        else:
            logical[...] = blocked


@dataclass(frozen=True, slots=True)
class _Strided:
    """Where a view lies in its C-contiguous base array, to make the same view of another base."""

    shape: Shape
    strides: Shape
    offset: int  # bytes from the base's first element

    @classmethod
    def of(cls, view: np.ndarray, base: np.ndarray) -> _Strided:
        return cls(view.shape, view.strides, _address(view) - _address(base))

    def view(self, base: np.ndarray) -> np.ndarray:
        # numpy checks that the view lies within the base's buffer.
        return np.ndarray(self.shape, base.dtype, buffer=base, offset=self.offset, strides=self.strides)


def _address(a: np.ndarray) -> int:
    address: int = a.__array_interface__["data"][0]
    return address


# --------------------------------------------------------------------------- device layouts

ShapeRule = Callable[[Shape, int, int, int], Shape]  # (canonical shape, c0, n0, groups) -> device
Plan = Callable[[np.ndarray, np.ndarray, int], list[_Job]]  # (canonical logical, device, groups)


@dataclass(frozen=True, slots=True)
class _Layout:
    format: Format
    canonical: str  # logical axis order the plan works in; "" = any rank, (…, H, W)
    shape: ShapeRule
    plan: Plan


def _shape_nc1hwc0(canon: Shape, c0: int, n0: int, groups: int) -> Shape:
    n, c, h, w = canon
    return (n, _ceil(c, c0), h, w, c0)


def _plan_nc1hwc0(canon: np.ndarray, device: np.ndarray, groups: int) -> list[_Job]:
    # (N, C1, H, W, C0) -> (N, [C1, C0], H, W)
    return [_Job(canon, device.transpose(0, 1, 4, 2, 3), (_P, _B, _P, _P))]


def _shape_ndc1hwc0(canon: Shape, c0: int, n0: int, groups: int) -> Shape:
    n, c, d, h, w = canon
    return (n, d, _ceil(c, c0), h, w, c0)


def _plan_ndc1hwc0(canon: np.ndarray, device: np.ndarray, groups: int) -> list[_Job]:
    # (N, D, C1, H, W, C0) -> (N, [C1, C0], D, H, W)
    return [_Job(canon, device.transpose(0, 2, 5, 1, 3, 4), (_P, _B, _P, _P, _P))]


def _shape_c1hwncoc0(canon: Shape, c0: int, n0: int, groups: int) -> Shape:
    n, c, h, w = canon
    return (_ceil(c, c0), h, w, n, c0, c0)


def _plan_c1hwncoc0(canon: np.ndarray, device: np.ndarray, groups: int) -> list[_Job]:
    # Values sit on the Co == C0 diagonal; the diagonal is a (read-only) view, so no copy here.
    diagonal = np.diagonal(device, axis1=4, axis2=5)  # (C1, H, W, N, C0)
    return [_Job(canon, diagonal.transpose(3, 0, 4, 1, 2), (_P, _B, _P, _P))]


@dataclass(frozen=True, slots=True)
class _Groups:
    """Grouped-convolution geometry of FRACTAL_Z (§6.3); groups == 1 is the plain layout."""

    groups: int
    enlarge: int  # e: groups packed side by side in one block-diagonal matrix
    cout: int
    cin: int

    @classmethod
    def of(cls, n: int, c: int, groups: int, c0: int, n0: int) -> _Groups:
        if groups <= 1:
            return cls(1, 1, n, c)
        if n % groups:
            raise _Misfit(f"N={n} is not a multiple of groups={groups}")
        cout = n // groups
        if cout == 0 or c == 0:
            return cls(groups, 1, cout, c)
        enlarge = min(math.lcm(math.lcm(c, c0) // c, math.lcm(cout, n0) // cout), groups)
        return cls(groups, enlarge, cout, c)

    def device_shape(self, spatial: Shape, c0: int, n0: int) -> Shape:
        c1 = _ceil(self.enlarge * self.cin, c0)
        n1 = _ceil(self.enlarge * self.cout, n0)
        return (_ceil(self.groups, self.enlarge) * c1 * math.prod(spatial), n1, n0, c0)


def _shape_fractal_z(canon: Shape, c0: int, n0: int, groups: int) -> Shape:
    n, c, *spatial = canon
    return _Groups.of(n, c, groups, c0, n0).device_shape(tuple(spatial), c0, n0)


def _plan_fractal_z(canon: np.ndarray, device: np.ndarray, groups: int) -> list[_Job]:
    """FRACTAL_Z (canonical NCHW) and FRACTAL_Z_3D (NCDHW): dim0 = (G, [D], C1, H, W)."""
    n, c, *spatial = canon.shape
    _, n1, n0, c0 = device.shape
    geo = _Groups.of(n, c, groups, c0, n0)
    c1 = _ceil(geo.enlarge * geo.cin, c0)
    g_blocks = _ceil(geo.groups, geo.enlarge)
    if len(spatial) == 3:  # (G, D, C1, H, W, N1, N0, C0) -> (G, [N1, N0], [C1, C0], D, H, W)
        d, h, w = spatial
        blocked = device.reshape(g_blocks, d, c1, h, w, n1, n0, c0).transpose(0, 5, 6, 2, 7, 1, 3, 4)
    else:  # (G, C1, H, W, N1, N0, C0) -> (G, [N1, N0], [C1, C0], H, W)
        h, w = spatial
        blocked = device.reshape(g_blocks, c1, h, w, n1, n0, c0).transpose(0, 4, 5, 1, 6, 2, 3)
    by_group = _split_axes(canon, [(geo.groups, geo.cout)] + [None] * (canon.ndim - 1))
    jobs = []
    # Group gi sits in block gi // e at diagonal slot ev = gi % e; one job per slot.
    for slot in range(min(geo.enlarge, geo.groups)):
        members = by_group[slot :: geo.enlarge]
        axes = (_P, _Axis(True, slot * geo.cout), _Axis(True, slot * geo.cin)) + (_P,) * len(spatial)
        jobs.append(_Job(members, blocked[: members.shape[0]], axes))
    return jobs


def _matrix(canon: np.ndarray) -> np.ndarray:
    """A 1-D (or 0-D) logical tensor is the matrix (1, W) to FRACTAL_NZ (§6.4)."""
    return canon[(np.newaxis,) * (2 - canon.ndim)] if canon.ndim < 2 else canon


def _shape_fractal_nz(canon: Shape, c0: int, n0: int, groups: int) -> Shape:
    *batch, h, w = (1,) * (2 - len(canon)) + canon
    return (*batch, _ceil(w, c0), _ceil(h, n0), n0, c0)


def _plan_fractal_nz(canon: np.ndarray, device: np.ndarray, groups: int) -> list[_Job]:
    matrix = _matrix(canon)
    nb = matrix.ndim - 2
    # (…, W1, H1, H0, W0) -> (…, [H1, H0], [W1, W0])
    blocked = device.transpose(*range(nb), nb + 1, nb + 2, nb, nb + 3)
    return [_Job(matrix, blocked, (_P,) * nb + (_B, _B))]


_LAYOUTS: dict[Format, _Layout] = {
    Format.NC1HWC0: _Layout(Format.NC1HWC0, "NCHW", _shape_nc1hwc0, _plan_nc1hwc0),
    Format.NC1HWC0_C04: _Layout(Format.NC1HWC0_C04, "NCHW", _shape_nc1hwc0, _plan_nc1hwc0),
    Format.NDC1HWC0: _Layout(Format.NDC1HWC0, "NCDHW", _shape_ndc1hwc0, _plan_ndc1hwc0),
    Format.C1HWNCoC0: _Layout(Format.C1HWNCoC0, "NCHW", _shape_c1hwncoc0, _plan_c1hwncoc0),
    Format.FRACTAL_Z: _Layout(Format.FRACTAL_Z, "NCHW", _shape_fractal_z, _plan_fractal_z),
    Format.FRACTAL_Z_3D: _Layout(Format.FRACTAL_Z_3D, "NCDHW", _shape_fractal_z, _plan_fractal_z),
    Format.FRACTAL_NZ: _Layout(Format.FRACTAL_NZ, "", _shape_fractal_nz, _plan_fractal_nz),
}


# --------------------------------------------------------------------------- plain side


def _canonical(array: np.ndarray, fmt: Format, canonical: str) -> np.ndarray:
    """A view of ``array`` (in ``fmt``) with its axes in the layout's canonical order."""
    if not canonical:
        return array
    if fmt == Format.ND and canonical == "NCHW":
        # A 2-D matmul weight in FRACTAL_Z is (K, N) = (C, N) with H = W = 1 (GE's ND rule).
        if array.ndim != 2:
            raise _Misfit(f"an ND weight for FRACTAL_Z must be 2-D, got {array.ndim}-D")
        return array.T[:, :, np.newaxis, np.newaxis]
    letters = _LETTERS[fmt]
    if array.ndim != len(letters):
        raise _Misfit(f"{fmt.name} needs {len(letters)} dims, got {array.ndim}")
    return array.transpose([letters.index(axis) for axis in canonical])


def _probe(shape: Shape) -> np.ndarray:
    """A zero-byte stand-in of ``shape``, to work out canonical shapes without allocating."""
    return np.broadcast_to(np.zeros((), dtype=np.int8), shape)


def _shape_of(dst_shape: Shape | None) -> Shape:
    if dst_shape is None:
        raise _Misfit("the logical shape is needed to strip the padding")
    return dst_shape


def _groups(sub_format: int) -> int:
    return max(int(sub_format), 1)


def _check_device(layout: _Layout, device: Shape, canon: Shape, groups: int) -> None:
    if len(device) < 2:
        raise _Misfit(f"{len(device)}-D is not a {layout.format.name} shape")
    expected = layout.shape(canon, device[-1], device[-2], groups)
    if device != expected:
        order = layout.canonical or "(…, H, W)"
        raise _Misfit(f"logical {canon} in {order} order needs device shape {expected}")


def _device_to_plain(
    layout: _Layout, dst: Format, data: np.ndarray, dst_shape: Shape | None, sub_format: int
) -> np.ndarray:
    shape = _shape_of(dst_shape)
    if not data.flags.c_contiguous:
        data = np.ascontiguousarray(data)  # the steps address a C-contiguous buffer
    steps = _read_steps(layout.format, dst, data.shape, shape, _groups(sub_format), data.dtype)
    out = np.empty(shape, dtype=data.dtype)
    for logical, blocked in steps:
        logical.view(out)[...] = blocked.view(data)
    return out


# Cached by everything the copies' geometry depends on: working them out (the plan, its pieces,
# the split views) cost ~50 us, nearly the copying of a 160K-element NC1HWC0 fp16 tensor (60 us),
# and a dump tree holds few distinct shapes, each read again and again.
@functools.lru_cache(maxsize=1024)
def _read_steps(
    device_format: Format, dst: Format, device_shape: Shape, shape: Shape, groups: int, dtype: np.dtype
) -> tuple[tuple[_Strided, _Strided], ...]:
    """The (plain, device) views whose copies make a plain ``shape`` array of a C-contiguous
    device array."""
    layout = _LAYOUTS[device_format]
    # Check the shapes before allocating: a wrong original_shape must not cost a huge buffer.
    _check_device(layout, device_shape, _canonical(_probe(shape), dst, layout.canonical).shape, groups)
    # Stand-ins of the real arrays' geometry: only their addresses are used (nothing is written,
    # so no page of them is ever touched).
    out, data = np.empty(shape, dtype=dtype), np.empty(device_shape, dtype=dtype)
    canon = _canonical(out, dst, layout.canonical)
    return tuple(
        (_Strided.of(logical, out), _Strided.of(blocked, data))
        for job in layout.plan(canon, data, groups)
        for logical, blocked in _views(job)
    )


def _plain_to_device(
    layout: _Layout, src: Format, data: np.ndarray, dst_shape: Shape | None, sub_format: int
) -> np.ndarray:
    canon = _canonical(data, src, layout.canonical)
    groups = _groups(sub_format)
    if dst_shape is None:
        c0 = _default_c0(data.dtype, layout.format)
        dst_shape = layout.shape(canon.shape, c0, _CUBE, groups)
    _check_device(layout, dst_shape, canon.shape, groups)
    device = np.zeros(dst_shape, dtype=data.dtype)  # the simulator's padding is zero
    for job in layout.plan(canon, device, groups):
        _copy(job, into_device=True)
    return device


def _fractal_z_c04_to_plain(
    dst: Format, data: np.ndarray, dst_shape: Shape | None, sub_format: int
) -> np.ndarray:
    """GE's small-channel weight: C padded to 4, then K = (h·W + w)·4 + c blocked like FRACTAL_Z."""
    shape = _shape_of(dst_shape)
    letters = _LETTERS[dst]
    if len(shape) != 4:
        raise _Misfit(f"{dst.name} needs 4 dims, got {len(shape)}")
    n, c, h, w = (shape[letters.index(axis)] for axis in "NCHW")
    if c > 4:
        raise _Misfit(f"FRACTAL_Z_C04 holds at most 4 channels, got C={c}")
    if data.ndim != 4:
        raise _Misfit(f"{data.ndim}-D is not a FRACTAL_Z_C04 shape")
    _, _, n0, c0 = data.shape
    k = h * w * 4
    expected = (_ceil(k, c0), _ceil(n, n0), n0, c0)
    if data.shape != expected:
        raise _Misfit(f"logical NCHW {(n, c, h, w)} needs device shape {expected}")
    nk = np.empty((n, k), dtype=data.dtype)
    _copy(_Job(nk, data.transpose(1, 2, 0, 3), (_B, _B)), into_device=False)
    # The K axis interleaves the padded channels, so the result is a strided view of ``nk``.
    nchw = nk.reshape(n, h, w, 4)[..., :c].transpose(0, 3, 1, 2)
    return nchw.transpose(["NCHW".index(axis) for axis in letters])


def _permute(
    src: Format, dst: Format, data: np.ndarray, dst_shape: Shape | None, sub_format: int
) -> np.ndarray:
    src_letters, dst_letters = _LETTERS[src], _LETTERS[dst]
    if data.ndim != len(src_letters):
        raise _Misfit(f"{src.name} needs {len(src_letters)} dims, got {data.ndim}")
    out = data.transpose([src_letters.index(axis) for axis in dst_letters])
    if dst_shape is not None and out.shape != dst_shape:
        raise _Misfit(f"the transpose gives {out.shape}")
    return out


def _reshape(data: np.ndarray, dst_shape: Shape | None, sub_format: int = 0) -> np.ndarray:
    if dst_shape is None:
        return data
    if math.prod(dst_shape) != data.size:
        raise _Misfit(f"{data.size} elements cannot be reshaped to {dst_shape}")
    return data.reshape(dst_shape)


def _default_c0(dtype: np.dtype, device_format: Format) -> int:
    """GE's C0 when the caller gives none: 4 for NC1HWC0_C04, 32 for 1-byte types, else 16."""
    if device_format == Format.NC1HWC0_C04:
        return 4
    return 32 if np.dtype(dtype).itemsize == 1 else 16


# --------------------------------------------------------------------------- the registry

_READS: dict[Format, tuple[Format, ...]] = {
    Format.NC1HWC0: _FOUR_D,
    Format.NC1HWC0_C04: _FOUR_D,
    Format.C1HWNCoC0: _FOUR_D,
    Format.FRACTAL_Z: (*_FOUR_D, Format.ND),
    Format.NDC1HWC0: _FIVE_D,
    Format.FRACTAL_Z_3D: _FIVE_D,
    Format.FRACTAL_NZ: _MATRIX,
}
_WRITES: dict[Format, tuple[Format, ...]] = {
    Format.NC1HWC0: _FOUR_D,
    Format.NC1HWC0_C04: _FOUR_D,
    Format.FRACTAL_Z: (*_FOUR_D, Format.ND),
    Format.NDC1HWC0: _FIVE_D,
    Format.FRACTAL_NZ: _MATRIX,
}

CONVERTERS: dict[tuple[Format, Format], Converter] = {
    **{
        (device, plain): partial(_device_to_plain, _LAYOUTS[device], plain)
        for device, plains in _READS.items()
        for plain in plains
    },
    **{(Format.FRACTAL_Z_C04, plain): partial(_fractal_z_c04_to_plain, plain) for plain in _FOUR_D},
    **{
        (plain, device): partial(_plain_to_device, _LAYOUTS[device], plain)
        for device, plains in _WRITES.items()
        for plain in plains
    },
    **{
        (src, dst): partial(_permute, src, dst)
        for src in _LETTERS
        for dst in _LETTERS
        if src != dst and len(_LETTERS[src]) == len(_LETTERS[dst])
    },
    **{(Format.ND, plain): _reshape for plain in _LETTERS},
    **{(plain, Format.ND): _reshape for plain in _LETTERS},
}
"""Every built-in conversion, keyed by (source format, destination format)."""


# --------------------------------------------------------------------------- public API


def target_format(original_shape: Sequence[int], device_format: Format) -> Format:
    """The logical format a device tensor is compared in (§6.5): NCHW for 4-D, NCDHW for 5-D
    NDC1HWC0 / FRACTAL_Z_3D tensors, ND otherwise."""
    rank = len(original_shape)
    if rank == 4:
        return Format.NCHW
    if rank == 5 and device_format in _DEPTH_DEVICE:
        return Format.NCDHW
    return Format.ND


def convert(
    data: np.ndarray,
    src: Format,
    dst: Format,
    dst_shape: Sequence[int] | None,
    *,
    sub_format: int = 0,
    custom: CustomConverters | None = None,
) -> np.ndarray:
    """Convert ``data`` (shaped in ``src``) to ``dst``; a user converter for the pair wins.

    Raises LayoutError, naming both formats and shapes, for an unknown pair or shapes that do
    not fit. Plain permutations return views; layout conversions make exactly one copy.
    """
    shape = None if dst_shape is None else tuple(int(d) for d in dst_shape)
    plugin = custom.lookup(src, dst) if custom is not None else None
    if plugin is not None:
        return plugin(data, shape)
    converter = _reshape if src == dst else CONVERTERS.get((src, dst))
    if converter is None:
        raise LayoutError(f"no conversion from {_where(data, src, dst, shape)}")
    try:
        return converter(data, shape, sub_format)
    except _Misfit as exc:
        raise LayoutError(f"cannot convert {_where(data, src, dst, shape)}: {exc}") from None


def to_logical(
    data: np.ndarray,
    device_format: Format,
    original_shape: Sequence[int] | None,
    *,
    sub_format: int = 0,
    custom: CustomConverters | None = None,
) -> np.ndarray:
    """A dumped tensor in its logical layout, shaped ``original_shape`` (§6.5).

    Without an original shape the device layout is returned as is, as the CANN reader does.
    A plain device format is already in the tensor's origin format, so it is only reshaped.
    """
    if not original_shape:
        return data
    shape = tuple(int(d) for d in original_shape)
    target = target_format(shape, device_format)
    has_plugin = custom is not None and custom.lookup(device_format, target) is not None
    if has_plugin or not (device_format == target or device_format in _PLAIN):
        return convert(data, device_format, target, shape, sub_format=sub_format, custom=custom)
    try:
        return _reshape(data, shape)
    except _Misfit as exc:
        raise LayoutError(f"cannot convert {_where(data, device_format, target, shape)}: {exc}") from None


def to_device(
    logical: np.ndarray,
    device_format: Format,
    logical_format: Format | None = None,
    *,
    c0: int | None = None,
    groups: int = 1,
) -> np.ndarray:
    """What the device holds for ``logical``: padded with zeros, C0 defaulted by dtype.

    ``logical_format`` defaults to ``target_format(logical.shape, device_format)``. Writable
    formats: NC1HWC0, NC1HWC0_C04, FRACTAL_Z (grouped when ``groups`` > 1), FRACTAL_NZ, NDC1HWC0.
    """
    src = logical_format if logical_format is not None else target_format(logical.shape, device_format)
    where = f"{_name(src)} {logical.shape} as {_name(device_format)}"
    layout = _LAYOUTS.get(device_format)
    if layout is None or src not in _WRITES.get(device_format, ()):
        raise LayoutError(f"cannot write {where}")
    block = c0 if c0 is not None else _default_c0(logical.dtype, device_format)
    try:
        canon = _canonical(logical, src, layout.canonical)
        device_shape = layout.shape(canon.shape, block, _CUBE, groups)
    except _Misfit as exc:
        raise LayoutError(f"cannot write {where}: {exc}") from None
    return convert(logical, src, device_format, device_shape, sub_format=groups)


def _where(data: np.ndarray, src: Format, dst: Format, shape: Shape | None) -> str:
    wanted = "(shape not given)" if shape is None else str(shape)
    return f"{_name(src)} {tuple(data.shape)} to {_name(dst)} {wanted}"


def _name(fmt: Format | int) -> str:
    try:
        return Format(fmt).name
    except ValueError:
        return f"format {int(fmt)}"
