"""The TLV "nano" dump layout (formats.md §1.3), read-only.

``u64 tlv_head_len | u32 magic | u32 version | TLV(4: inputs) | TLV(5: outputs) | payloads``.
Data types here use the ge::DataType numbering and are mapped to the dump numbering on read.
Each tensor's shape lists are TLVs of their own (tag 0 device dims, tag 1 original dims, tag 2
origin name); we read a TLV as ``u32 tag, u32 byte length, value``. The layout was read from
msaccucmp's description and not exercised against a device: treat it as provisional.
"""

from __future__ import annotations

import struct
from typing import cast

import numpy as np

from dumpcmp.errors import DumpFormatError, TruncatedDumpError
from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, TensorKind, _check_payload_size

_TAG_INPUTS = 4
_TAG_OUTPUTS = 5
_TAG_SHAPE = 0
_TAG_ORIGINAL_SHAPE = 1

# ge::DataType → dump DataType (formats.md §1.5 mapping table).
_GE_TO_DUMP = {
    0: 1, 1: 2, 2: 3, 3: 7, 4: 4, 6: 5, 7: 6, 8: 9, 9: 8, 10: 10, 11: 12, 12: 11,
    **{v: v for v in range(13, 28)},
    28: 0, 29: 28, 30: 29, 31: 30, 32: 31, 33: 32,
}  # fmt: skip


class _Cursor:
    """Bounds-checked little-endian reads over the header bytes."""

    def __init__(self, path: str, data: np.ndarray, start: int, end: int) -> None:
        self.path, self.data, self.pos, self.end = path, data, start, end

    def take(self, fmt: str) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        if self.pos + size > self.end:
            raise DumpFormatError(self.path, self.pos, f"nano header ends inside a field ({fmt})")
        values = struct.unpack_from("<" + fmt, self.data.data, self.pos)
        self.pos += size
        return values

    def sub(self, length: int) -> _Cursor:
        if self.pos + length > self.end:
            raise DumpFormatError(self.path, self.pos, f"nano TLV claims {length} bytes past its parent")
        child = _Cursor(self.path, self.data, self.pos, self.pos + length)
        self.pos += length
        return child


def read_nano(path: str, data: np.ndarray) -> DumpFile:
    size = len(data)
    (head_len,) = struct.unpack_from("<Q", data.data, 0)
    if head_len > size - 8:
        raise TruncatedDumpError(
            path, 0, f"nano header length {head_len} exceeds the {size - 8} bytes that follow"
        )
    cursor = _Cursor(path, data, 8, 8 + head_len)
    _magic, version = cursor.take("II")
    descs: dict[int, list[dict[str, object]]] = {_TAG_INPUTS: [], _TAG_OUTPUTS: []}
    while cursor.pos < cursor.end:
        tag, length = cursor.take("II")
        block = cursor.sub(length)
        if tag in descs:
            descs[tag] = _read_descs(block, is_output=tag == _TAG_OUTPUTS)
    offset = 8 + head_len
    tensors: dict[TensorKind, list[DumpTensor]] = {TensorKind.INPUT: [], TensorKind.OUTPUT: []}
    for kind, tag in ((TensorKind.INPUT, _TAG_INPUTS), (TensorKind.OUTPUT, _TAG_OUTPUTS)):
        for index, desc in enumerate(descs[tag]):
            declared = int(desc["size"])  # type: ignore[call-overload]
            if declared > size - offset:
                raise TruncatedDumpError(
                    path, offset, f"{kind.value}:{index} declares {declared} bytes past the end"
                )
            shape = tuple(cast("tuple[int, ...]", desc["shape"]))
            data_type = _GE_TO_DUMP.get(int(desc["data_type"]), -1)  # type: ignore[call-overload]
            _check_payload_size(path, offset, kind, index, data_type, shape, declared)
            tensors[kind].append(
                DumpTensor(
                    kind=kind,
                    index=index,
                    data_type=data_type,
                    format=int(desc["format"]),  # type: ignore[call-overload]
                    shape=shape,
                    original_shape=tuple(cast("tuple[int, ...]", desc["original_shape"])),
                    size=declared,
                    payload=data[offset : offset + declared],
                    address=int(desc["address"]),  # type: ignore[call-overload]
                )
            )
            offset += declared
    if offset != size:
        raise DumpFormatError(
            path, offset, f"{size - offset} bytes after the last payload the header declares"
        )
    return DumpFile(
        path=path,
        layout=Layout.NANO,
        version=str(version),
        dump_time=0,
        op_name="",
        inputs=tuple(tensors[TensorKind.INPUT]),
        outputs=tuple(tensors[TensorKind.OUTPUT]),
    )


def _read_descs(block: _Cursor, *, is_output: bool) -> list[dict[str, object]]:
    (count,) = block.take("I")
    result = []
    for _ in range(count):
        data_type, fmt, _address_type = block.take("iii")
        if is_output:
            block.take("iii")  # original index, data type and format: informative only
        address, _offset, size = block.take("QQQ")
        (list_len,) = block.take("I")
        dims = block.sub(list_len)
        shapes: dict[int, tuple[int, ...]] = {_TAG_SHAPE: (), _TAG_ORIGINAL_SHAPE: ()}
        while dims.pos < dims.end:
            tag, length = dims.take("II")
            value = dims.sub(length)
            if tag in shapes:
                shapes[tag] = value.take("Q" * (length // 8)) if length else ()
        result.append(
            {
                "data_type": data_type,
                "format": fmt,
                "address": address,
                "size": size,
                "shape": shapes[_TAG_SHAPE],
                "original_shape": shapes[_TAG_ORIGINAL_SHAPE],
            }
        )
    return result
