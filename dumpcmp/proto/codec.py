"""The one codec for CANN dump files (formats.md §1).

``read_dump`` recognises the three binary layouts (2.0, legacy all-in-protobuf, TLV "nano"),
checks every size field against the file before slicing, and returns payloads as read-only
views of a memory map. ``write_dump`` writes byte-exact 2.0 files (formats.md §9).
"""

from __future__ import annotations

import functools
import mmap
import os
import stat
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dumpcmp.errors import DumpFormatError, LayoutError, TruncatedDumpError, UnsupportedDtypeError
from dumpcmp.outputs import atomic_path, writing
from dumpcmp.proto.dtypes import (
    DataType,
    Format,
    bits_per_element,
    data_type_of,
    decode_elements,
    encode_elements,
    known_data_type,
    known_format,
    storage_bytes,
)
from dumpcmp.proto.records import set_through_slots

if TYPE_CHECKING:
    from dumpcmp.proto.custom_converters import CustomConverters

__all__ = [
    "DumpFile",
    "DumpTensor",
    "Layout",
    "OriginalOp",
    "TensorKind",
    "dump_bytes",
    "is_complete",
    "iter_tensors",
    "read_dump",
    "write_dump",
]

_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
VERSION_2 = "2.0"
NANO_MAGIC = 0x5A5A5A5A


class TensorKind(str, Enum):
    INPUT = "input"
    OUTPUT = "output"
    BUFFER = "buffer"
    SPACE = "space"


class Layout(str, Enum):
    V2 = "2.0"
    LEGACY = "legacy"
    NANO = "nano"


@set_through_slots
@dataclass(frozen=True, slots=True)
class OriginalOp:
    """The pre-fusion op an output came from, as GE records it (informative)."""

    name: str
    output_index: int
    data_type: int
    format: int


@set_through_slots
@dataclass(frozen=True, slots=True)
class DumpTensor:
    """One tensor of a dump: its header fields and its raw device bytes."""

    kind: TensorKind
    index: int
    data_type: int
    format: int
    shape: tuple[int, ...]
    original_shape: tuple[int, ...]
    size: int
    payload: np.ndarray = field(repr=False, compare=False)
    sub_format: int = 0
    address: int = 0
    offset: int = 0
    original_op: OriginalOp | None = None

    @property
    def dtype_name(self) -> str:
        return _dtype_label(self.data_type)

    @property
    def format_name(self) -> str:
        known = known_format(self.format)
        return known.name if known is not None else f"FORMAT_<{self.format}>"

    @property
    def element_count(self) -> int:
        return _product(self.shape)  # np.prod costs ~20 us a call; the size check used this too

    def array(self) -> np.ndarray:
        """The tensor in its device shape and dtype; a zero-copy view for byte-aligned types."""
        data_type = known_data_type(self.data_type)
        if data_type is None:
            raise UnsupportedDtypeError(self.dtype_name, self.label)
        try:
            flat = decode_elements(self.payload, data_type, self.element_count)
        except UnsupportedDtypeError:
            raise UnsupportedDtypeError(self.dtype_name, self.label) from None
        return flat.reshape(self.shape)

    def logical(self, custom: CustomConverters | None = None) -> np.ndarray:
        """The tensor converted to its logical layout and ``original_shape`` (formats.md §6.5)."""
        return _to_logical()(
            self.array(), self.device_format(), self.original_shape, sub_format=self.sub_format, custom=custom
        )

    def device_format(self) -> Format:
        """The header's format field as a Format; a value outside the enum is this tensor's error."""
        known = known_format(self.format)
        if known is None:
            raise LayoutError(f"{self.label}: unknown format {self.format} in the dump header")
        return known

    @property
    def label(self) -> str:
        return f"{self.kind.value}:{self.index}"

    @classmethod
    def from_array(
        cls,
        kind: TensorKind,
        index: int,
        device_array: np.ndarray,
        *,
        format: Format = Format.ND,
        original_shape: Sequence[int] | None = None,
        data_type: DataType | None = None,
        sub_format: int = 0,
        address: int = 0,
        original_op: OriginalOp | None = None,
    ) -> DumpTensor:
        """A tensor for ``write_dump`` from a device-layout array (packed types via ``data_type``)."""
        dt = data_type if data_type is not None else data_type_of(device_array.dtype)
        raw = encode_elements(device_array, dt)
        shape = tuple(int(d) for d in device_array.shape)
        return cls(
            kind=kind,
            index=index,
            data_type=int(dt),
            format=int(format),
            shape=shape,
            original_shape=tuple(original_shape) if original_shape is not None else shape,
            size=len(raw),
            payload=np.frombuffer(raw, dtype=np.uint8),
            sub_format=sub_format,
            address=address,
            original_op=original_op,
        )


@functools.cache  # an import statement per tensor cost ~1 us
def _to_logical() -> Callable[..., np.ndarray]:
    """``layouts.to_logical``, imported on first use: layouts pull in the converter registry."""
    from dumpcmp.proto.layouts import to_logical

    return to_logical


@set_through_slots
@dataclass(frozen=True, slots=True)
class DumpFile:
    """A parsed dump file; tensor payloads view the file's memory map."""

    path: str
    layout: Layout
    version: str
    dump_time: int
    op_name: str
    inputs: tuple[DumpTensor, ...] = ()
    outputs: tuple[DumpTensor, ...] = ()
    buffers: tuple[DumpTensor, ...] = ()
    workspaces: tuple[DumpTensor, ...] = ()
    attrs: tuple[tuple[str, str], ...] = ()

    def tensors(self, kind: TensorKind) -> tuple[DumpTensor, ...]:
        # Tests, not a dict made on every call: this is asked twice for every dump file compared.
        if kind == TensorKind.OUTPUT:
            return self.outputs
        if kind == TensorKind.INPUT:
            return self.inputs
        if kind == TensorKind.BUFFER:
            return self.buffers
        if kind == TensorKind.SPACE:
            return self.workspaces
        raise KeyError(kind)


def iter_tensors(dump: DumpFile) -> Iterator[DumpTensor]:
    """Inputs, then outputs, then buffers, then workspaces: the order of the payload segments."""
    yield from dump.inputs
    yield from dump.outputs
    yield from dump.buffers
    yield from dump.workspaces


# --------------------------------------------------------------------------- reading


def read_dump(path: str | os.PathLike[str]) -> DumpFile:
    """Parse one dump file of any known binary layout; raise DumpFormatError on anything wrong."""
    path_str = os.fspath(path)
    raw = _file_bytes(path_str)
    size = len(raw)
    if size < _U64.size:
        raise TruncatedDumpError(path_str, 0, f"file has {size} bytes, fewer than the 8-byte header length")
    if size >= 12 and _U32.unpack_from(raw, 8)[0] == NANO_MAGIC:
        from dumpcmp.proto.nano import read_nano  # rare layout: parsed in its own module

        return read_nano(path_str, np.frombuffer(raw, dtype=np.uint8))
    try:
        return _read_v2(path_str, raw)
    except DumpFormatError as v2_error:
        legacy = _try_legacy(path_str, raw)
        if legacy is None:
            raise v2_error from None
        return legacy


def is_complete(path: str | os.PathLike[str]) -> bool:
    """True when a 2.0 file's size equation holds: a watcher's test for 'finished writing'."""
    try:
        read_dump(path)
    except (DumpFormatError, OSError):
        return False
    return True


def _file_bytes(path: str) -> bytes | mmap.mmap:
    """The file's bytes: read whole when small, else its read-only memory map (payloads view it)."""
    try:
        # A descriptor, not open(): the file is only mapped, and the buffered reader open() makes
        # cost ~4 us of the ~80 reading a dump file's header takes.
        fd = os.open(path, _OPEN_FLAGS)
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):  # which os.open, unlike open(), does not refuse
                raise DumpFormatError(path, 0, "is a directory, not a dump file")
            if info.st_size <= READ_WHOLE_BYTES:
                return read_up_to(fd, info.st_size)
            return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
    except OSError as exc:
        raise DumpFormatError(path, 0, f"cannot read: {exc.strerror or exc}") from exc


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0)


# Files up to this size are read, not mapped: mapping, its first page fault and unmapping cost
# ~15 us more than reading a few kilobytes (LLM and TorchAir dumps hold tens of thousands of
# tensors that small); larger payloads are mapped, never copied.
READ_WHOLE_BYTES = 64 << 10


def read_up_to(fd: int, size: int) -> bytes:
    """``size`` bytes from ``fd``, fewer if the file ends first."""
    data = os.read(fd, size)
    while len(data) < size:
        more = os.read(fd, size - len(data))
        if not more:
            break
        data += more
    return data


@functools.cache  # an import statement per file cost ~1 us
def _dump_data() -> Any:
    """The DumpData message class; protobuf loads only when a file is read."""
    from dumpcmp.proto._gen import dump_data_pb2

    return dump_data_pb2.DumpData


def _read_v2(path: str, raw: bytes | mmap.mmap) -> DumpFile:
    size = len(raw)
    header_len = _U64.unpack_from(raw, 0)[0]
    if header_len > size - 8:
        raise TruncatedDumpError(
            path, 0, f"header length field says {header_len} bytes, but only {size - 8} follow it"
        )
    message = _dump_data()()
    try:
        consumed = message.ParseFromString(raw[8 : 8 + header_len])
    except Exception as exc:  # protobuf raises DecodeError or RuntimeWarning-ish errors
        raise DumpFormatError(path, 8, f"header is not a valid dump protobuf ({exc})") from None
    if consumed != header_len:
        raise DumpFormatError(path, 8, "header protobuf does not fill its declared length")
    data = np.frombuffer(raw, dtype=np.uint8)  # read-only, as bytes and the map are
    offset = 8 + header_len
    parsed: list[tuple[DumpTensor, ...]] = []
    for kind, items in _segments(message):
        if not items:  # most files hold outputs and inputs only: ~1 us a file less
            parsed.append(())
            continue
        tensors = []
        for index, item in enumerate(items):
            declared = int(item.size)
            if declared > size - offset:
                raise TruncatedDumpError(
                    path,
                    offset,
                    f"{kind.value}:{index} declares {declared} bytes but the file has {size - offset} left "
                    "(truncated, or still being written)",
                )
            payload = data[offset : offset + declared]
            tensors.append(_tensor_from_message(path, offset, kind, index, item, payload))
            offset += declared
        parsed.append(tuple(tensors))
    if offset != size:
        raise DumpFormatError(
            path, offset, f"{size - offset} trailing bytes after the last payload the header declares"
        )
    return _dump_file(path, Layout.V2, message, parsed)


def _segments(message: Any) -> tuple[tuple[TensorKind, Sequence[Any]], ...]:
    """The header's tensor lists in payload order: inputs, outputs, buffers, workspaces."""
    return (
        (TensorKind.INPUT, message.input),
        (TensorKind.OUTPUT, message.output),
        (TensorKind.BUFFER, message.buffer),
        (TensorKind.SPACE, message.space),
    )


def _dump_file(path: str, layout: Layout, message: Any, parsed: Sequence[tuple[DumpTensor, ...]]) -> DumpFile:
    """``parsed``: the tensors of each of ``_segments``, in its order."""
    inputs, outputs, buffers, workspaces = parsed
    return DumpFile(
        path,
        layout,
        message.version,
        message.dump_time,
        message.op_name,
        inputs,
        outputs,
        buffers,
        workspaces,
        # Most dumps have none: no generator for them (~2 us a file).
        tuple((a.name, a.value) for a in attrs) if (attrs := message.attr) else (),
    )


def _try_legacy(path: str, raw: bytes | mmap.mmap) -> DumpFile | None:
    """The whole file as one DumpData with inline payloads (formats.md §1.2), or None."""
    message = _dump_data()()
    try:
        consumed = message.ParseFromString(raw[:])
    except Exception:
        return None
    if consumed != len(raw) or message.version == VERSION_2:
        return None
    if not (message.input or message.output or message.op_name):
        return None
    parsed = [
        tuple(
            _tensor_from_message(path, 0, kind, index, item, np.frombuffer(item.data, dtype=np.uint8))
            for index, item in enumerate(items)
        )
        for kind, items in _segments(message)
    ]
    return _dump_file(path, Layout.LEGACY, message, parsed)


def _tensor_from_message(
    path: str, offset: int, kind: TensorKind, index: int, item: object, payload: np.ndarray
) -> DumpTensor:
    size = len(payload)
    if kind in (TensorKind.BUFFER, TensorKind.SPACE):
        return DumpTensor(
            kind=kind,
            index=index,
            data_type=int(DataType.DT_UINT8),
            format=int(Format.ND),
            shape=(size,),
            original_shape=(size,),
            size=size,
            payload=payload,
        )
    # Repeated int64, ints already; a slice first is ~0.8 us faster than iterating the container.
    shape = tuple(item.shape.dim[:])  # type: ignore[attr-defined]
    original_shape = tuple(item.original_shape.dim[:])  # type: ignore[attr-defined]
    data_type = int(item.data_type)  # type: ignore[attr-defined]
    if not item.HasField("shape") and size > 0:  # type: ignore[attr-defined]
        shape = (_elements_in(size, data_type),)  # msaccucmp's rule: a missing shape means "all of it"
    _check_payload_size(path, offset, kind, index, data_type, shape, size)
    original_op = None
    if kind is TensorKind.OUTPUT and item.HasField("original_op"):  # type: ignore[attr-defined]
        op = item.original_op  # type: ignore[attr-defined]
        original_op = OriginalOp(op.name, int(op.output_index), int(op.data_type), int(op.format))
    return DumpTensor(
        kind=kind,
        index=index,
        data_type=data_type,
        format=int(item.format),  # type: ignore[attr-defined]
        shape=shape,
        original_shape=original_shape,
        size=size,
        payload=payload,
        sub_format=int(item.sub_format),  # type: ignore[attr-defined]
        address=int(item.address),  # type: ignore[attr-defined]
        offset=int(item.offset),  # type: ignore[attr-defined]
        original_op=original_op,
    )


def _elements_in(size: int, data_type: int) -> int:
    try:
        bits = bits_per_element(DataType(data_type))
    except (ValueError, UnsupportedDtypeError):
        return size
    return size * 8 // bits


def _check_payload_size(
    path: str, offset: int, kind: TensorKind, index: int, data_type: int, shape: tuple[int, ...], size: int
) -> None:
    """shape × itemsize must equal size; checked before anything is sliced or reshaped."""
    known = known_data_type(data_type)
    if known is None:
        return  # undecodable types are reported when someone asks for their values
    try:
        expected = storage_bytes(known, _product(shape))
    except UnsupportedDtypeError:
        return
    if expected != size:
        raise DumpFormatError(
            path,
            offset,
            f"{kind.value}:{index} shape {list(shape)} of {_dtype_label(data_type)} needs {expected} bytes, "
            f"but its size field says {size}",
        )


def _product(shape: tuple[int, ...]) -> int:
    result = 1
    for dim in shape:
        result *= dim
    return result


def _dtype_label(data_type: int) -> str:
    known = known_data_type(data_type)
    return known.name if known is not None else f"DT_<{data_type}>"


# --------------------------------------------------------------------------- writing


def dump_bytes(dump: DumpFile) -> bytes:
    """The byte-exact 2.0 file for ``dump``: u64 header length, header, payloads in segment order."""
    from dumpcmp.proto._gen import dump_data_pb2

    message = dump_data_pb2.DumpData(version=VERSION_2, dump_time=dump.dump_time, op_name=dump.op_name)
    for tensor in dump.inputs:
        msg_in = message.input.add()
        _fill_common(msg_in, tensor)
    for tensor in dump.outputs:
        msg_out = message.output.add()
        _fill_common(msg_out, tensor)
        if tensor.original_op is not None:
            op = tensor.original_op
            msg_out.original_op.name = op.name
            msg_out.original_op.output_index = op.output_index
            msg_out.original_op.data_type = op.data_type  # type: ignore[assignment]
            msg_out.original_op.format = op.format  # type: ignore[assignment]
    for tensor in dump.buffers:
        message.buffer.add(size=tensor.size)
    for tensor in dump.workspaces:
        message.space.add(size=tensor.size)
    for name, value in dump.attrs:
        message.attr.add(name=name, value=value)
    header = message.SerializeToString()
    parts = [_U64.pack(len(header)), header]
    parts.extend(t.payload.tobytes() for t in iter_tensors(dump))
    return b"".join(parts)


def _fill_common(msg: object, tensor: DumpTensor) -> None:
    msg.data_type = tensor.data_type  # type: ignore[attr-defined]
    msg.format = tensor.format  # type: ignore[attr-defined]
    msg.shape.dim.extend(tensor.shape)  # type: ignore[attr-defined]
    msg.original_shape.dim.extend(tensor.original_shape)  # type: ignore[attr-defined]
    msg.size = tensor.size  # type: ignore[attr-defined]
    msg.sub_format = tensor.sub_format  # type: ignore[attr-defined]
    msg.address = tensor.address  # type: ignore[attr-defined]
    msg.offset = tensor.offset  # type: ignore[attr-defined]


def write_dump(path: str | os.PathLike[str], dump: DumpFile, *, atomic: bool = True) -> Path:
    """Write ``dump`` as a 2.0 file; atomically (temp name + rename) unless told otherwise."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = dump_bytes(dump)
    if not atomic:
        with writing(target):
            target.write_bytes(data)
        return target
    with atomic_path(target) as temp:
        temp.write_bytes(data)
    return target
