"""The one reader and writer of ``.npy`` tensors: golden files, converted dumps, ``inspect``.

Writing: numpy cannot name the ml_dtypes types in an npy header (``np.save`` of bfloat16 writes
the opaque ``<V2``), so a converted bf16/fp8/fp6/fp4 tensor is written widened to float32, which
holds every value of those types exactly (what msaccucmp's converter writes). Asked to keep the
dtype, the tensor is written as its unsigned-integer bit pattern with a ``{name}.npy.json``
sidecar naming the type (``{"dtype": "bfloat16", "stored_as": "uint16"}``).

Reading accepts all three kinds alike: plain numeric npy (float32 included), bit patterns with a
sidecar (re-typed, never compared as integers), and ``np.save``'s opaque ``<V2`` of a bfloat16
array. Files are memory-mapped read-only where numpy can map them; pickled object arrays are
never loaded.
"""

from __future__ import annotations

import functools
import json
import math
import mmap as mmap_module
import os
import re
from dataclasses import dataclass
from pathlib import Path
from tokenize import TokenError
from typing import Literal

import ml_dtypes
import numpy as np

from dumpcmp.errors import FormatError
from dumpcmp.outputs import atomic_path
from dumpcmp.proto.minifloats import HIFLOAT8
from dumpcmp.proto.sniff import NPY_MAGIC, what_is

__all__ = ["SIDECAR_SUFFIX", "load_npy", "npy_size", "save_npy", "sidecar_path"]

SIDECAR_SUFFIX = ".json"  # appended to the .npy name: X.npy → X.npy.json

# Float types a dump may decode to that numpy has no npy name for; all are exact in float32.
_EXTENSION_FLOATS = frozenset(
    np.dtype(t)
    for t in (
        ml_dtypes.bfloat16,
        ml_dtypes.float8_e5m2,
        ml_dtypes.float8_e4m3fn,
        ml_dtypes.float8_e8m0fnu,
        ml_dtypes.float6_e3m2fn,
        ml_dtypes.float6_e2m3fn,
        ml_dtypes.float4_e2m1fn,
    )
)
_NUMERIC_KINDS = "biufc"


def sidecar_path(path: Path) -> Path:
    return path.with_name(path.name + SIDECAR_SUFFIX)


def _is_extension(dtype: np.dtype) -> bool:
    return dtype.isbuiltin == 2  # user-defined: ml_dtypes and the like; 1 = numpy's own types


def save_npy(path: Path, array: np.ndarray, *, keep_dtype: bool = False) -> Path:
    """``np.save`` that never writes a type numpy cannot read back (see module doc)."""
    sidecar = sidecar_path(path)
    if not _is_extension(array.dtype) or (array.dtype in _EXTENSION_FLOATS and not keep_dtype):
        plain = array.astype(np.float32) if _is_extension(array.dtype) else array
        _write(path, plain)
        sidecar.unlink(missing_ok=True)  # a stale sidecar would re-type plain data on load
        return path
    bits = array.view(np.dtype(f"<u{array.dtype.itemsize}"))
    with atomic_path(sidecar) as temp:
        temp.write_text(json.dumps({"dtype": array.dtype.name, "stored_as": bits.dtype.name}) + "\n")
    _write(path, bits)
    return path


def _write(path: Path, array: np.ndarray) -> None:
    """Atomically: a reader never sees half an npy file, a failed write leaves none."""
    with atomic_path(path) as temp, temp.open("wb") as handle:
        np.save(handle, array, allow_pickle=False)


def load_npy(path: Path, *, mmap: bool = True, has_sidecar: bool | None = None) -> np.ndarray:
    """A read-only numeric array from an npy file of any of the accepted kinds.

    ``has_sidecar`` says whether ``sidecar_path(path)`` is a file, for a caller that listed the
    directory already (a stat per golden to look cost ~5 us of its ~30); None looks.

    Raises FormatError naming the file for anything else: a file that is not npy at all (saying
    what it looks like), pickled objects, records, strings, a truncated payload, a bad sidecar.
    """
    header, mapped = _header(path, mapped=mmap)
    try:
        stored: np.ndarray
        if mapped is not None:
            # np.memmap would parse the header and open the file again: ~5x the time of this.
            order: Literal["F", "C"] = "F" if header.fortran else "C"
            stored = np.ndarray(header.shape, header.dtype, buffer=mapped, offset=header.offset, order=order)
        else:
            stored = np.load(path, allow_pickle=False)
    except (OSError, ValueError, TypeError, EOFError) as exc:  # TypeError: a payload too short to map
        raise FormatError(f"{path}: damaged or truncated .npy file ({exc})") from None
    array = _retype(path, stored, os.path.isfile(sidecar_path(path)) if has_sidecar is None else has_sidecar)
    if array.flags.writeable:
        array.flags.writeable = False
    return array


def npy_size(path: Path) -> int:
    """The byte size the npy file at ``path`` has once whole (header + payload); FormatError if
    its header cannot be read (yet)."""
    header, _ = _header(path, mapped=False)
    return header.offset + header.nbytes


@dataclass(frozen=True, slots=True)
class _Header:
    dtype: np.dtype
    shape: tuple[int, ...]
    fortran: bool
    offset: int  # where the payload starts
    nbytes: int  # the payload's size: asked for every file read, so worked out once a header

    @classmethod
    def of(cls, dtype: np.dtype, shape: tuple[int, ...], fortran: bool, offset: int) -> _Header:
        return cls(dtype, shape, fortran, offset, math.prod(shape) * dtype.itemsize)


# The header np.save writes (format 1.0): a fixed dict literal, read here without numpy's
# ast.literal_eval (~5x the time); anything else goes to numpy's own parser.
_SAVED_HEADER = re.compile(
    rb"\{'descr': '([<>|=][a-zA-Z]\d*)', 'fortran_order': (False|True), 'shape': \(((?:\d+, ?)*\d*)\), \} *\n"
)
_FIXED_PART = 10  # magic, version, 2-byte header length
_VERSIONS = ((1, 0), (2, 0), (3, 0))  # the npy format versions numpy defines


def _header(path: Path, *, mapped: bool) -> tuple[_Header, mmap_module.mmap | bytes | None]:
    """The header, checked before the payload is touched, and (``mapped``, a payload to map) the
    file's read-only memory map, or its bytes when the first read took the whole file, from one
    opening of the file."""
    try:
        # A descriptor, not open(): the file is read once, 4 KB, and mapped; a buffered reader
        # cost ~4 us of a golden's ~60.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            head = os.read(fd, 4096)
            if not head.startswith(NPY_MAGIC):
                kind = what_is(path)
                raise FormatError(f"{path}: not a numpy .npy file" + (f" ({kind})" if kind else ""))
            header = _saved_header(head)  # None unless version 1.0: the version is checked below
            if header is None:
                version = tuple(head[6:8])
                if version not in _VERSIONS and b"{" in (head[10:11], head[12:13]):
                    # A header dict where one belongs, behind a version numpy does not know: numpy
                    # would read a length field of the wrong width and report a nonsense size.
                    raise FormatError(
                        f"{path}: a numpy .npy file of unsupported format version {version[0]}.{version[1]} "
                        "(numpy defines 1.0, 2.0 and 3.0)"
                    )
                header = _any_header(fd)
            if header.dtype.hasobject:
                raise FormatError(
                    f"{path}: holds pickled Python objects, not numbers; dumpcmp never unpickles files"
                )
            if header.dtype.names is not None:
                raise FormatError(
                    f"{path}: holds records with fields {list(header.dtype.names)}, not one tensor"
                )
            nbytes = header.nbytes
            if not mapped or nbytes == 0:  # an empty payload cannot be mapped
                return header, None
            if header.offset + nbytes <= len(head):
                # The payload came with the header: mapping it as well cost ~15 us a small file.
                return header, head
            return header, mmap_module.mmap(fd, 0, access=mmap_module.ACCESS_READ)
        finally:
            os.close(fd)
    except OSError as exc:
        raise FormatError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (ValueError, SyntaxError, TypeError, TokenError) as exc:  # TokenError: numpy's header parser
        raise FormatError(f"{path}: damaged .npy header ({exc})") from None


def _saved_header(head: bytes) -> _Header | None:
    """The header as np.save writes it, or None for any other (numpy then reads it)."""
    if head[6:8] != b"\x01\x00":
        return None
    length = int.from_bytes(head[8:_FIXED_PART], "little")
    return _parse_saved_header(head[_FIXED_PART : _FIXED_PART + length])


@functools.lru_cache(maxsize=1024)
def _parse_saved_header(text: bytes) -> _Header | None:
    # Cached: golden files of one shape and dtype have the same header, and parsing it was ~8 us
    # of a golden's ~60.
    found = _SAVED_HEADER.fullmatch(text)
    if found is None:
        return None
    descr, fortran, dims = found.groups()
    shape = tuple(int(d) for d in dims.split(b",") if d.strip())
    return _Header.of(np.dtype(descr.decode()), shape, fortran == b"True", _FIXED_PART + len(text))


def _any_header(fd: int) -> _Header:
    with open(fd, "rb", closefd=False) as handle:
        handle.seek(0)
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
        return _Header.of(dtype, tuple(shape), bool(fortran), handle.tell())


def _retype(path: Path, array: np.ndarray, has_sidecar: bool) -> np.ndarray:
    if has_sidecar:
        return _from_sidecar(sidecar_path(path), array)
    if array.dtype.kind == "V" and array.dtype.itemsize == 2:
        return array.view(ml_dtypes.bfloat16)  # np.save of a bfloat16 array: no other 2-byte type
    if array.dtype.kind == "V":
        sidecar = sidecar_path(path)
        raise FormatError(
            f"{path}: holds {array.dtype.itemsize}-byte values of a type numpy cannot name "
            f'(an fp8 array saved with np.save?); name it in {sidecar.name}: {{"dtype": "float8_e4m3fn"}}'
        )
    if array.dtype.kind not in _NUMERIC_KINDS:
        raise FormatError(f"{path}: holds {array.dtype} values, not numbers")
    return array


def _from_sidecar(sidecar: Path, array: np.ndarray) -> np.ndarray:
    try:
        name = json.loads(sidecar.read_text())["dtype"]
        dtype = np.dtype(np.uint8) if name == HIFLOAT8.name else np.dtype(getattr(ml_dtypes, name))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise FormatError(f"{sidecar}: bad dtype sidecar ({exc})") from None
    if dtype.itemsize != array.dtype.itemsize or array.dtype.kind not in "uiV":
        raise FormatError(f"{sidecar}: sidecar dtype {name} does not fit the stored {array.dtype}")
    if name == HIFLOAT8.name:
        return HIFLOAT8.decode(array.view(np.uint8))  # no numpy type: the values, as float32
    return array.view(dtype)
