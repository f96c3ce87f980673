"""The dump codec: round trips, zero-copy payloads, and every corrupt file it must refuse."""

from __future__ import annotations

import contextlib
import itertools
import mmap
import struct
import tracemalloc
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dumpcmp.errors import DumpFormatError, LayoutError, TruncatedDumpError, UnsupportedDtypeError
from dumpcmp.proto._gen import dump_data_pb2 as pb
from dumpcmp.proto.codec import (
    READ_WHOLE_BYTES,
    DumpFile,
    DumpTensor,
    Layout,
    OriginalOp,
    TensorKind,
    dump_bytes,
    is_complete,
    iter_tensors,
    read_dump,
    write_dump,
)
from dumpcmp.proto.dtypes import DataType, Format, known_data_type, known_format, numpy_dtype

U64 = struct.Struct("<Q")
U64_MAX = 2**64 - 1


def _v2(message: pb.DumpData, payload: bytes = b"") -> bytes:
    """A 2.0 file from a hand-made header: the way to get header values our writer never emits."""
    header = message.SerializeToString()
    return U64.pack(len(header)) + header + payload


def _one_output(shape: list[int], size: int, data_type: int = int(DataType.DT_FLOAT)) -> pb.DumpData:
    message = pb.DumpData(version="2.0", op_name="crafted")
    out = message.output.add(data_type=data_type, format=int(Format.ND), size=size)  # type: ignore[arg-type]
    out.shape.dim.extend(shape)
    out.original_shape.dim.extend(shape)
    return message


def _bits(array: np.ndarray) -> bytes:
    """Bytes of an array in C order: the NaN-safe, dtype-exact way to compare tensors."""
    return np.ascontiguousarray(array).tobytes()


def _mmap_root(array: np.ndarray) -> object:
    base: object = array
    while isinstance(base, np.ndarray | memoryview):
        base = base.base if isinstance(base, np.ndarray) else base.obj
    return base


# --------------------------------------------------------------------------- basic reading


def test_reads_what_write_dump_wrote(dumpfactory: Any) -> None:
    x = np.arange(12, dtype=np.float16).reshape(3, 4)
    y = np.array([[True, False]])
    path = dumpfactory.write(inputs=[x], outputs=[x.astype(np.float32), y], op_name="a/b.c d")
    dump = read_dump(path)
    assert dump.layout is Layout.V2
    assert dump.version == "2.0"
    assert dump.op_name == "a/b.c d"
    assert dump.path == str(path)
    assert [t.label for t in iter_tensors(dump)] == ["input:0", "output:0", "output:1"]
    assert dump.tensors(TensorKind.OUTPUT) == dump.outputs
    assert _bits(dump.inputs[0].array()) == _bits(x)
    assert dump.outputs[0].array().dtype == np.float32
    assert dump.outputs[1].array().tolist() == [[True, False]]
    assert dump.inputs[0].dtype_name == "DT_FLOAT16"
    assert dump.inputs[0].format_name == "ND"


@pytest.mark.parametrize("rows", [1, READ_WHOLE_BYTES // 64 + 1])  # a small file is read, a large one mapped
def test_payloads_are_read_only_views_of_one_buffer(dumpfactory: Any, rows: int) -> None:
    import ml_dtypes

    bf16 = np.linspace(-2, 2, 32 * rows, dtype=np.float32).astype(ml_dtypes.bfloat16).reshape(2 * rows, 16)
    path = dumpfactory.write(inputs=[np.ones((4, 4), np.float32)], outputs=[bf16])
    dump = read_dump(path)
    roots = set()
    for tensor in iter_tensors(dump):
        root = _mmap_root(tensor.payload)
        assert isinstance(root, mmap.mmap if rows > 1 else bytes)
        roots.add(id(root))
        assert not tensor.payload.flags.writeable
        decoded = tensor.array()
        assert np.shares_memory(decoded, tensor.payload)
        assert not decoded.flags.writeable
        with pytest.raises(ValueError):
            decoded[...] = 0
    assert len(roots) == 1
    assert _bits(dump.outputs[0].array()) == _bits(bf16)


def test_missing_shape_means_the_whole_payload(tmp_path: Path) -> None:
    # msaccucmp's rule (formats.md §1.1): no shape field but size > 0 ⇒ shape [size / itemsize].
    message = pb.DumpData(version="2.0", op_name="noshape")
    message.output.add(data_type=int(DataType.DT_FLOAT), format=int(Format.ND), size=12)  # type: ignore[arg-type]
    path = tmp_path / "f"
    path.write_bytes(_v2(message, np.array([1, 2, 3], np.float32).tobytes()))
    tensor = read_dump(path).outputs[0]
    assert tensor.shape == (3,)
    assert tensor.array().tolist() == [1.0, 2.0, 3.0]


def test_scalar_keeps_its_empty_shape(dumpfactory: Any) -> None:
    path = dumpfactory.write(outputs=[np.array(2.5, dtype=np.float32)])
    tensor = read_dump(path).outputs[0]
    assert tensor.shape == ()
    assert tensor.array().shape == ()
    assert float(tensor.array()) == 2.5


def test_buffers_and_workspaces_come_after_outputs(dumpfactory: Any) -> None:
    factory = dumpfactory
    dump = factory.dump(inputs=[np.zeros(2, np.int32)], outputs=[np.ones(3, np.int8)])
    dump = replace(
        dump,
        buffers=(factory.raw_tensor(TensorKind.BUFFER, 0, int(DataType.DT_UINT8), (3,), b"abc"),),
        workspaces=(factory.raw_tensor(TensorKind.SPACE, 0, int(DataType.DT_UINT8), (2,), b"xy"),),
    )
    path = write_dump(factory.root / "Op.x.1.2.3", dump)
    back = read_dump(path)
    assert back.buffers[0].payload.tobytes() == b"abc"
    assert back.workspaces[0].payload.tobytes() == b"xy"
    assert path.read_bytes().endswith(b"\x01\x01\x01abcxy")


def test_write_dump_is_atomic_and_leaves_no_temp_file(dumpfactory: Any) -> None:
    path = dumpfactory.write(outputs=[np.zeros(3, np.float32)])
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


# --------------------------------------------------------------------------- round trip property

# Every data type with a numeric decoding: (numpy element type, byte mask or None, packed range).
_BYTE_TYPES = [
    DataType.DT_FLOAT,
    DataType.DT_FLOAT16,
    DataType.DT_DOUBLE,
    DataType.DT_INT8,
    DataType.DT_UINT8,
    DataType.DT_INT16,
    DataType.DT_UINT16,
    DataType.DT_INT32,
    DataType.DT_INT64,
    DataType.DT_UINT32,
    DataType.DT_UINT64,
    DataType.DT_BOOL,
    DataType.DT_COMPLEX64,
    DataType.DT_COMPLEX128,
    DataType.DT_BF16,
    DataType.DT_FLOAT8_E5M2,
    DataType.DT_FLOAT8_E4M3FN,
    DataType.DT_FLOAT8_E8M0,
    DataType.DT_FLOAT6_E3M2,
    DataType.DT_FLOAT6_E2M3,
    DataType.DT_QINT8,
    DataType.DT_QINT16,
    DataType.DT_QINT32,
    DataType.DT_QUINT8,
    DataType.DT_QUINT16,
    DataType.DT_DUAL_SUB_INT8,
    DataType.DT_DUAL_SUB_UINT8,
    DataType.DT_UNDEFINED,
    DataType.DT_RESOURCE,
]
_BYTE_MASK = {DataType.DT_BOOL: 0x01, DataType.DT_FLOAT6_E3M2: 0x3F, DataType.DT_FLOAT6_E2M3: 0x3F}
_PACKED_RANGE = {
    DataType.DT_INT4: (-8, 7),
    DataType.DT_UINT1: (0, 1),
    DataType.DT_INT2: (-2, 1),
    DataType.DT_UINT2: (0, 3),
}
_SHAPES = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)
_U32 = st.integers(0, 2**32 - 1)
_U64S = st.integers(0, U64_MAX)
_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=20)  # protobuf strings are UTF-8


@st.composite
def _values(draw: st.DrawFn) -> tuple[DataType, np.ndarray]:
    """A device array of any decodable type; every bit pattern (NaN payloads, -0.0, inf) allowed."""
    data_type = draw(st.sampled_from([*_BYTE_TYPES, *_PACKED_RANGE]))
    shape = draw(_SHAPES)
    count = int(np.prod(shape, dtype=np.int64))
    dtype = numpy_dtype(data_type)
    if data_type in _PACKED_RANGE:
        low, high = _PACKED_RANGE[data_type]
        ints = draw(st.lists(st.integers(low, high), min_size=count, max_size=count))
        return data_type, np.array(ints, dtype=dtype).reshape(shape)
    raw = bytearray(draw(st.binary(min_size=count * dtype.itemsize, max_size=count * dtype.itemsize)))
    if data_type in _BYTE_MASK:
        raw = bytearray(b & _BYTE_MASK[data_type] for b in raw)
    return data_type, np.frombuffer(bytes(raw), dtype=dtype).reshape(shape)


@st.composite
def _tensors(draw: st.DrawFn, kind: TensorKind) -> list[tuple[DumpTensor, np.ndarray]]:
    result = []
    for index in range(draw(st.integers(0, 3))):
        data_type, values = draw(_values())
        original_op = None
        if kind is TensorKind.OUTPUT and draw(st.booleans()):
            original_op = OriginalOp(
                draw(_TEXT), draw(_U32), draw(st.integers(0, 40)), draw(st.integers(0, 49))
            )
        tensor = DumpTensor.from_array(
            kind,
            index,
            values,
            data_type=data_type,
            format=draw(st.sampled_from(list(Format))),
            original_shape=draw(st.lists(_U64S, max_size=6)),
            sub_format=draw(st.integers(-(2**31), 2**31 - 1)),
            address=draw(_U64S),
            original_op=original_op,
        )
        tensor = replace(tensor, offset=draw(_U64S))
        result.append((tensor, values))
    return result


_COUNTER = itertools.count()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    inputs=_tensors(TensorKind.INPUT),
    outputs=_tensors(TensorKind.OUTPUT),
    spare=st.lists(st.binary(max_size=9), max_size=2),
    dump_time=_U64S,
    op_name=_TEXT,
    attrs=st.lists(st.tuples(_TEXT, _TEXT), max_size=2),
)
def test_write_then_read_round_trips(
    tmp_path_factory: pytest.TempPathFactory,
    inputs: list[tuple[DumpTensor, np.ndarray]],
    outputs: list[tuple[DumpTensor, np.ndarray]],
    spare: list[bytes],
    dump_time: int,
    op_name: str,
    attrs: list[tuple[str, str]],
) -> None:
    buffers = tuple(
        DumpTensor(TensorKind.BUFFER, i, int(DataType.DT_UINT8), int(Format.ND), (len(b),), (len(b),), len(b),
                   np.frombuffer(b, np.uint8))
        for i, b in enumerate(spare)
    )  # fmt: skip
    written = DumpFile(
        path="",
        layout=Layout.V2,
        version="2.0",
        dump_time=dump_time,
        op_name=op_name,
        inputs=tuple(t for t, _ in inputs),
        outputs=tuple(t for t, _ in outputs),
        buffers=buffers,
        attrs=tuple(attrs),
    )
    path = write_dump(tmp_path_factory.getbasetemp() / f"roundtrip.{next(_COUNTER)}", written)
    back = read_dump(path)

    assert back == replace(written, path=str(path))  # every header field (payloads compare apart)
    for (tensor, values), got in zip([*inputs, *outputs], [*back.inputs, *back.outputs], strict=True):
        assert got.payload.tobytes() == tensor.payload.tobytes()
        decoded = got.array()
        assert decoded.shape == values.shape
        assert decoded.dtype == values.dtype
        assert _bits(decoded) == _bits(values)
    for tensor, got in zip(buffers, back.buffers, strict=True):
        assert got.payload.tobytes() == tensor.payload.tobytes()
    assert dump_bytes(back) == path.read_bytes()  # what we read, we re-encode byte for byte


# --------------------------------------------------------------------------- refusing bad files


def _sample(sample_bytes: bytes) -> dict[str, tuple[bytes, int]]:
    """name → (file bytes, offset the error must name)."""
    n = len(sample_bytes)
    header = U64.unpack_from(sample_bytes, 0)[0]
    wrong_size = _one_output([3], 8)
    huge = _one_output([2**62], 4)
    negative = _one_output([U64_MAX, 1], 4)
    huge_size = _one_output([4], 2**63)
    return {
        "empty": (b"", 0),
        "five bytes": (b"\x01\x02\x03\x04\x05", 0),
        "header length past the end": (U64.pack(1000) + b"\x00" * 10, 0),
        "header length u64 max": (U64.pack(U64_MAX) + b"\x0a\x00", 0),
        "garbage header": (U64.pack(10) + b"\xff" * 10, 8),
        "header truncated mid-field": (U64.pack(6) + b"\x0a\xff\xff\xff\xff\x0f", 8),
        # the last payload (3 int8) starts 3 bytes before the end of the full file
        "payload one byte short": (sample_bytes[:-1], n - 3),
        "trailing byte": (sample_bytes + b"\x00", n),
        "shape x itemsize != size": (_v2(wrong_size, b"\x00" * 8), 8 + len(wrong_size.SerializeToString())),
        "dimension 2**62": (_v2(huge, b"\x00" * 4), 8 + len(huge.SerializeToString())),
        "dimension u64 max": (_v2(negative, b"\x00" * 4), 8 + len(negative.SerializeToString())),
        "size field 2**63": (_v2(huge_size, b"\x00" * 16), 8 + len(huge_size.SerializeToString())),
        "header only": (sample_bytes[: 8 + header], 8 + header),
    }


_BAD_NAMES = [
    "empty",
    "five bytes",
    "header length past the end",
    "header length u64 max",
    "garbage header",
    "header truncated mid-field",
    "payload one byte short",
    "trailing byte",
    "shape x itemsize != size",
    "dimension 2**62",
    "dimension u64 max",
    "size field 2**63",
    "header only",
]


def _peak_allocation(action: Callable[[], object]) -> int:
    """Peak bytes Python and numpy allocate during ``action`` (numpy reports to tracemalloc)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        with contextlib.suppress(DumpFormatError):
            action()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - base


@pytest.mark.parametrize("case", _BAD_NAMES)
def test_corrupt_file_is_refused_with_path_and_offset(
    case: str, sample_bytes: bytes, dumpfactory: Any, tmp_path: Path
) -> None:
    data, offset = _sample(sample_bytes)[case]
    path = dumpfactory.write_bytes("Bad.file.1.2.3", data)
    with pytest.raises(DumpFormatError) as info:
        read_dump(path)
    error = info.value
    assert error.path == str(path)
    assert error.offset == offset, error
    assert str(path) in str(error)
    assert error.reason and error.reason in str(error)
    assert not is_complete(path)


@pytest.mark.parametrize("case", _BAD_NAMES)
def test_corrupt_file_never_allocates_more_than_its_size(
    case: str, sample_bytes: bytes, dumpfactory: Any
) -> None:
    read_dump(dumpfactory.write_bytes("warm", sample_bytes))  # imports and first-use caches first
    data, _ = _sample(sample_bytes)[case]
    path = dumpfactory.write_bytes("Bad.file.1.2.3", data)
    slack = 64 * 1024  # exception objects, protobuf wrappers: small and independent of the claims
    assert _peak_allocation(lambda: read_dump(path)) <= len(data) + slack


def test_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DumpFormatError, match="directory") as info:
        read_dump(tmp_path)
    assert info.value.path == str(tmp_path)
    assert info.value.offset == 0


def test_missing_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "nope"
    with pytest.raises(DumpFormatError) as info:
        read_dump(path)
    assert info.value.path == str(path)
    assert info.value.offset == 0
    assert not is_complete(path)


def test_is_complete_only_once_the_last_byte_is_written(sample_bytes: bytes, tmp_path: Path) -> None:
    path = tmp_path / "Op.growing.1.2.3"
    with path.open("wb") as handle:
        for end in range(len(sample_bytes)):  # a writer appending byte by byte
            handle.seek(0)
            handle.truncate()
            handle.write(sample_bytes[:end])
            handle.flush()
            assert not is_complete(path), end
            with pytest.raises(TruncatedDumpError):  # short, not broken: more bytes may complete it
                read_dump(path)
        handle.write(sample_bytes[len(sample_bytes) - 1 :])
    assert is_complete(path)


# --------------------------------------------------------------------------- data types


def test_unsupported_dtype_is_reported_only_for_that_tensor(dumpfactory: Any) -> None:
    factory = dumpfactory
    text = factory.raw_tensor(TensorKind.INPUT, 0, int(DataType.DT_STRING), (1,), b"hello")
    good = np.array([1.5, -2.0], dtype=np.float32)
    path = factory.write(inputs=[text], outputs=[good])
    dump = read_dump(path)  # reading the file is fine: the string tensor is just bytes
    assert dump.inputs[0].payload.tobytes() == b"hello"
    assert dump.outputs[0].array().tolist() == [1.5, -2.0]
    with pytest.raises(UnsupportedDtypeError, match="unsupported dtype DT_STRING") as info:
        dump.inputs[0].array()
    assert info.value.dtype_name == "DT_STRING"
    assert "input:0" in str(info.value)


def test_unknown_dtype_number_is_unsupported_not_a_crash(dumpfactory: Any) -> None:
    tensor = dumpfactory.raw_tensor(TensorKind.OUTPUT, 0, 99, (2,), b"ab")
    dump = read_dump(dumpfactory.write(outputs=[tensor]))
    assert dump.outputs[0].dtype_name == "DT_<99>"
    with pytest.raises(UnsupportedDtypeError, match="unsupported dtype DT_<99>"):
        dump.outputs[0].array()


def test_unknown_format_number_is_this_tensors_error(dumpfactory: Any) -> None:
    tensor = dumpfactory.raw_tensor(TensorKind.OUTPUT, 0, int(DataType.DT_FLOAT), (1,), b"\0\0\0\0", fmt=999)
    path = dumpfactory.write(outputs=[tensor])
    dump = read_dump(path)
    assert dump.outputs[0].format_name == "FORMAT_<999>"
    with pytest.raises(LayoutError, match="output:0: unknown format 999 in the dump header"):
        dump.outputs[0].device_format()


def test_members_by_value_are_the_enums() -> None:
    """The tables the codec reads header numbers through agree with the enums' own lookup."""
    for value in range(-1, 1024):
        for enum, known in ((DataType, known_data_type), (Format, known_format)):
            try:
                member = enum(value)
            except ValueError:
                member = None
            assert known(value) is member


@pytest.mark.parametrize(
    ("data_type", "values", "payload"),
    [
        (DataType.DT_INT4, [1, -1, 7, -8, 3], bytes([0xF1, 0x87, 0x03])),  # low nibble first
        (DataType.DT_UINT1, [1, 0, 1, 1, 0, 0, 0, 0, 1], bytes([0xB0, 0x80])),  # msaccucmp unpackbits
        (DataType.DT_INT2, [1, -2, -1, 0, 1], bytes([0x39, 0x01])),
        (DataType.DT_UINT2, [3, 0, 2, 1, 3], bytes([0x63, 0x03])),
    ],
)
def test_packed_integer_bit_order(
    data_type: DataType, values: list[int], payload: bytes, dumpfactory: Any
) -> None:
    tensor = DumpTensor.from_array(
        TensorKind.OUTPUT, 0, np.array(values, dtype=numpy_dtype(data_type)), data_type=data_type
    )
    assert tensor.payload.tobytes() == payload
    back = read_dump(dumpfactory.write(outputs=[tensor])).outputs[0]
    assert back.size == len(payload)
    assert back.array().tolist() == values


# --------------------------------------------------------------------------- other layouts


def _legacy_bytes(version: str = "1.0") -> tuple[bytes, np.ndarray, np.ndarray]:
    x = np.arange(6, dtype=np.float16).reshape(2, 3)
    y = np.array([7, 8], dtype=np.int64)
    message = pb.DumpData(version=version, op_name="legacy/op", dump_time=42)
    inp = message.input.add(data_type=int(DataType.DT_FLOAT16), format=int(Format.NCHW), size=x.nbytes)  # type: ignore[arg-type]
    inp.shape.dim.extend(x.shape)
    inp.original_shape.dim.extend(x.shape)
    inp.data = x.tobytes()
    out = message.output.add(data_type=int(DataType.DT_INT64), format=int(Format.ND), size=y.nbytes)  # type: ignore[arg-type]
    out.shape.dim.extend(y.shape)
    out.data = y.tobytes()
    return message.SerializeToString(), x, y


def test_legacy_all_in_protobuf_layout(tmp_path: Path) -> None:
    data, x, y = _legacy_bytes()
    path = tmp_path / "Softmax.legacy_op.1.2.3"
    path.write_bytes(data)
    dump = read_dump(path)
    assert dump.layout is Layout.LEGACY
    assert (dump.version, dump.op_name, dump.dump_time) == ("1.0", "legacy/op", 42)
    assert _bits(dump.inputs[0].array()) == _bits(x)
    assert dump.inputs[0].format == Format.NCHW
    assert dump.outputs[0].array().tolist() == y.tolist()
    assert is_complete(path)


def test_legacy_layout_with_inconsistent_inline_payload_is_refused(tmp_path: Path) -> None:
    message = pb.DumpData(version="1.0", op_name="legacy/op")
    out = message.output.add(data_type=int(DataType.DT_FLOAT), size=8)  # type: ignore[arg-type]
    out.shape.dim.extend([3])
    out.data = b"\x00" * 8
    path = tmp_path / "f"
    path.write_bytes(message.SerializeToString())
    with pytest.raises(DumpFormatError, match="needs 12 bytes"):
        read_dump(path)


def _tlv(tag: int, value: bytes) -> bytes:
    return struct.pack("<II", tag, len(value)) + value


def _nano_desc(ge_type: int, fmt: int, size: int, shape: tuple[int, ...], original: tuple[int, ...],
               *, output: bool) -> bytes:  # fmt: skip
    """One tensor descriptor of the TLV layout, field by field as formats.md §1.3 lists them."""
    head = struct.pack("<iii", ge_type, fmt, 0)  # data_type (ge numbering), format, address_type
    if output:
        head += struct.pack("<iii", 0, ge_type, fmt)  # original index, data type, format
    head += struct.pack("<QQQ", 0x1000, 0, size)  # address, offset, size
    dims = _tlv(0, struct.pack(f"<{len(shape)}Q", *shape)) + _tlv(
        1, struct.pack(f"<{len(original)}Q", *original)
    )
    if output:
        dims += _tlv(2, b"orig_op\x00")
    return head + struct.pack("<I", len(dims)) + dims


def _nano_bytes(x: np.ndarray, y: np.ndarray) -> bytes:
    inputs = struct.pack("<I", 1) + _nano_desc(1, int(Format.ND), x.nbytes, x.shape, x.shape, output=False)
    outputs = struct.pack("<I", 1) + _nano_desc(
        0, int(Format.NCHW), y.nbytes, y.shape, (1, 1, 2, 2), output=True
    )
    head = struct.pack("<II", 0x5A5A5A5A, 1) + _tlv(4, inputs) + _tlv(5, outputs)
    return U64.pack(len(head)) + head + x.tobytes() + y.tobytes()


def test_nano_tlv_layout(tmp_path: Path) -> None:
    x = np.arange(6, dtype=np.float16).reshape(2, 3)  # ge::DataType 1 = float16
    y = np.array([[0.5, -1.0, 2.0, 8.0]], dtype=np.float32)  # ge::DataType 0 = float32
    path = tmp_path / "Op.nano.1.2.3"
    path.write_bytes(_nano_bytes(x, y))
    dump = read_dump(path)
    assert dump.layout is Layout.NANO
    assert dump.inputs[0].data_type == DataType.DT_FLOAT16  # mapped to the dump numbering
    assert dump.outputs[0].data_type == DataType.DT_FLOAT
    assert dump.outputs[0].format == Format.NCHW
    assert dump.outputs[0].original_shape == (1, 1, 2, 2)
    assert dump.outputs[0].address == 0x1000
    assert _bits(dump.inputs[0].array()) == _bits(x)
    assert _bits(dump.outputs[0].array()) == _bits(y)
    assert isinstance(_mmap_root(dump.outputs[0].payload), bytes)  # a view of the file read whole


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda b: b[:-1], "past the end"),
        (lambda b: b + b"\x00", "after the last payload"),
        (lambda b: b[:20] + struct.pack("<I", 10_000) + b[24:], "past its parent"),  # inputs TLV too long
        (lambda b: U64.pack(2**40) + b[8:], "exceeds"),
    ],
)
def test_corrupt_nano_file_is_refused(mutate: Callable[[bytes], bytes], match: str, tmp_path: Path) -> None:
    data = _nano_bytes(np.zeros(2, np.float16), np.zeros(4, np.float32))
    path = tmp_path / "f"
    path.write_bytes(mutate(data))
    with pytest.raises(DumpFormatError, match=match) as info:
        read_dump(path)
    assert info.value.path == str(path)
