"""CANN data types and formats, and how their bytes become numpy arrays.

Two numberings exist for data types (formats.md §1.5): the one *inside dump files*
(``DataType``, DT_FLOAT = 1) and ge::DataType / aclDataType (DT_FLOAT = 0). Only the dump
numbering is an enum here; ATC json and stats CSV files name types by string (``DT_FLOAT16``),
which ``DataType[name]`` resolves.
"""

from __future__ import annotations

from enum import IntEnum

import ml_dtypes
import numpy as np

from dumpcmp.errors import UnsupportedDtypeError
from dumpcmp.proto.minifloats import HIFLOAT8, CodeTable

__all__ = [
    "DataType",
    "Format",
    "bits_per_element",
    "data_type_of",
    "decode_elements",
    "dtype_by_name",
    "encode_elements",
    "format_by_name",
    "is_float",
    "known_data_type",
    "known_format",
    "numpy_dtype",
    "storage_bytes",
]


class DataType(IntEnum):
    """OutputDataType as numbered inside dump files."""

    DT_UNDEFINED = 0
    DT_FLOAT = 1
    DT_FLOAT16 = 2
    DT_INT8 = 3
    DT_UINT8 = 4
    DT_INT16 = 5
    DT_UINT16 = 6
    DT_INT32 = 7
    DT_INT64 = 8
    DT_UINT32 = 9
    DT_UINT64 = 10
    DT_BOOL = 11
    DT_DOUBLE = 12
    DT_STRING = 13
    DT_DUAL_SUB_INT8 = 14
    DT_DUAL_SUB_UINT8 = 15
    DT_COMPLEX64 = 16
    DT_COMPLEX128 = 17
    DT_QINT8 = 18
    DT_QINT16 = 19
    DT_QINT32 = 20
    DT_QUINT8 = 21
    DT_QUINT16 = 22
    DT_RESOURCE = 23
    DT_STRING_REF = 24
    DT_DUAL = 25
    DT_VARIANT = 26
    DT_BF16 = 27
    DT_INT4 = 28
    DT_UINT1 = 29
    DT_INT2 = 30
    DT_UINT2 = 31
    DT_COMPLEX32 = 32
    DT_HIFLOAT8 = 33
    DT_FLOAT8_E5M2 = 34
    DT_FLOAT8_E4M3FN = 35
    DT_FLOAT8_E8M0 = 36
    DT_FLOAT6_E3M2 = 37
    DT_FLOAT6_E2M3 = 38
    DT_FLOAT4_E2M1 = 39
    DT_FLOAT4_E1M2 = 40


class Format(IntEnum):
    """OutputFormat = ge::Format primary value."""

    NCHW = 0
    NHWC = 1
    ND = 2
    NC1HWC0 = 3
    FRACTAL_Z = 4
    NC1C0HWPAD = 5
    NHWC1C0 = 6
    FSR_NCHW = 7
    FRACTAL_DECONV = 8
    C1HWNC0 = 9
    FRACTAL_DECONV_TRANSPOSE = 10
    FRACTAL_DECONV_SP_STRIDE_TRANS = 11
    NC1HWC0_C04 = 12
    FRACTAL_Z_C04 = 13
    CHWN = 14
    FRACTAL_DECONV_SP_STRIDE8_TRANS = 15
    HWCN = 16
    NC1KHKWHWC0 = 17
    BN_WEIGHT = 18
    FILTER_HWCK = 19
    HASHTABLE_LOOKUP_LOOKUPS = 20
    HASHTABLE_LOOKUP_KEYS = 21
    HASHTABLE_LOOKUP_VALUE = 22
    HASHTABLE_LOOKUP_OUTPUT = 23
    HASHTABLE_LOOKUP_HITS = 24
    C1HWNCoC0 = 25
    MD = 26
    NDHWC = 27
    FRACTAL_ZZ = 28
    FRACTAL_NZ = 29
    NCDHW = 30
    DHWCN = 31
    NDC1HWC0 = 32
    FRACTAL_Z_3D = 33
    CN = 34
    NC = 35
    DHWNC = 36
    FRACTAL_Z_3D_TRANSPOSE = 37
    FRACTAL_ZN_LSTM = 38
    FRACTAL_Z_G = 39
    RESERVED = 40
    ALL = 41
    NULL = 42
    ND_RNN_BIAS = 43
    FRACTAL_ZN_RNN = 44
    YUV = 45
    YUV_A = 46
    NCL = 47
    FRACTAL_Z_WINO = 48
    C1HWC0 = 49
    FRACTAL_NZ_C0_16 = 50
    FRACTAL_NZ_C0_32 = 51
    MAX = 255


# Types stored one element per fixed number of bytes that numpy (with ml_dtypes) reads directly.
_NUMPY: dict[DataType, np.dtype] = {
    DataType.DT_FLOAT: np.dtype(np.float32),
    DataType.DT_FLOAT16: np.dtype(np.float16),
    DataType.DT_INT8: np.dtype(np.int8),
    DataType.DT_UINT8: np.dtype(np.uint8),
    DataType.DT_INT16: np.dtype(np.int16),
    DataType.DT_UINT16: np.dtype(np.uint16),
    DataType.DT_INT32: np.dtype(np.int32),
    DataType.DT_INT64: np.dtype(np.int64),
    DataType.DT_UINT32: np.dtype(np.uint32),
    DataType.DT_UINT64: np.dtype(np.uint64),
    DataType.DT_BOOL: np.dtype(np.bool_),
    DataType.DT_DOUBLE: np.dtype(np.float64),
    DataType.DT_COMPLEX64: np.dtype(np.complex64),
    DataType.DT_COMPLEX128: np.dtype(np.complex128),
    DataType.DT_QINT8: np.dtype(np.int8),
    DataType.DT_QINT16: np.dtype(np.int16),
    DataType.DT_QINT32: np.dtype(np.int32),
    DataType.DT_QUINT8: np.dtype(np.uint8),
    DataType.DT_QUINT16: np.dtype(np.uint16),
    DataType.DT_DUAL_SUB_INT8: np.dtype(np.int8),
    DataType.DT_DUAL_SUB_UINT8: np.dtype(np.uint8),
    # msaccucmp reads these two as int8 / int64 bytes; kept for the same reason.
    DataType.DT_UNDEFINED: np.dtype(np.int8),
    DataType.DT_RESOURCE: np.dtype(np.int64),
    DataType.DT_BF16: np.dtype(ml_dtypes.bfloat16),
    DataType.DT_FLOAT8_E5M2: np.dtype(ml_dtypes.float8_e5m2),
    DataType.DT_FLOAT8_E4M3FN: np.dtype(ml_dtypes.float8_e4m3fn),
    DataType.DT_FLOAT8_E8M0: np.dtype(ml_dtypes.float8_e8m0fnu),
    # ml_dtypes stores these one element per byte, as the device does (no packing).
    DataType.DT_FLOAT6_E3M2: np.dtype(ml_dtypes.float6_e3m2fn),
    DataType.DT_FLOAT6_E2M3: np.dtype(ml_dtypes.float6_e2m3fn),
}

# Sub-byte integer types: (bits per element, signed). int4/int2/uint2 are packed from the low
# bits of each byte up; uint1 follows msaccucmp's ``np.unpackbits`` (most significant bit first).
_PACKED: dict[DataType, tuple[int, bool]] = {
    DataType.DT_INT4: (4, True),
    DataType.DT_UINT1: (1, False),
    DataType.DT_INT2: (2, True),
    DataType.DT_UINT2: (2, False),
    DataType.DT_FLOAT4_E2M1: (4, False),  # codes, packed like int4, then typed by _PACKED_FLOATS
}

# Packed float types: their unpacked codes (one per byte, low bits) are the ml_dtypes type's bytes.
_PACKED_FLOATS: dict[DataType, np.dtype] = {
    DataType.DT_FLOAT4_E2M1: np.dtype(ml_dtypes.float4_e2m1fn),
}

# Types numpy has no dtype for: one byte per element, decoded to float32 through a code table.
_TABLES: dict[DataType, CodeTable] = {
    DataType.DT_HIFLOAT8: HIFLOAT8,
}

_REVERSE: dict[np.dtype, DataType] = {
    np.dtype(np.float32): DataType.DT_FLOAT,
    np.dtype(np.float16): DataType.DT_FLOAT16,
    np.dtype(np.int8): DataType.DT_INT8,
    np.dtype(np.uint8): DataType.DT_UINT8,
    np.dtype(np.int16): DataType.DT_INT16,
    np.dtype(np.uint16): DataType.DT_UINT16,
    np.dtype(np.int32): DataType.DT_INT32,
    np.dtype(np.int64): DataType.DT_INT64,
    np.dtype(np.uint32): DataType.DT_UINT32,
    np.dtype(np.uint64): DataType.DT_UINT64,
    np.dtype(np.bool_): DataType.DT_BOOL,
    np.dtype(np.float64): DataType.DT_DOUBLE,
    np.dtype(np.complex64): DataType.DT_COMPLEX64,
    np.dtype(np.complex128): DataType.DT_COMPLEX128,
    np.dtype(ml_dtypes.bfloat16): DataType.DT_BF16,
    np.dtype(ml_dtypes.float8_e5m2): DataType.DT_FLOAT8_E5M2,
    np.dtype(ml_dtypes.float8_e4m3fn): DataType.DT_FLOAT8_E4M3FN,
    np.dtype(ml_dtypes.float8_e8m0fnu): DataType.DT_FLOAT8_E8M0,
    np.dtype(ml_dtypes.float6_e3m2fn): DataType.DT_FLOAT6_E3M2,
    np.dtype(ml_dtypes.float6_e2m3fn): DataType.DT_FLOAT6_E2M3,
    np.dtype(ml_dtypes.float4_e2m1fn): DataType.DT_FLOAT4_E2M1,
}

_FLOATS = frozenset(
    {
        DataType.DT_FLOAT,
        DataType.DT_FLOAT16,
        DataType.DT_DOUBLE,
        DataType.DT_BF16,
        DataType.DT_FLOAT8_E5M2,
        DataType.DT_FLOAT8_E4M3FN,
        DataType.DT_FLOAT8_E8M0,
        DataType.DT_FLOAT6_E3M2,
        DataType.DT_FLOAT6_E2M3,
        DataType.DT_HIFLOAT8,
        DataType.DT_FLOAT4_E2M1,
    }
)


def dtype_by_name(name: str) -> DataType:
    """``"DT_FLOAT16"`` (ATC json, stats CSV) → DataType; unknown names raise UnsupportedDtypeError."""
    key = name.strip().upper()
    if not key.startswith("DT_"):
        key = "DT_" + key
    aliases = {"DT_BFLOAT16": "DT_BF16", "DT_FLOAT32": "DT_FLOAT", "DT_FLOAT64": "DT_DOUBLE"}
    key = aliases.get(key, key)
    try:
        return DataType[key]
    except KeyError:
        raise UnsupportedDtypeError(name) from None


# The members by value. ``DataType(v)`` and ``Format(v)`` go through the enum machinery (1 to 3 us
# a call), and every dump tensor read asks both several times; a dict lookup costs ~0.05 us.
_DATA_TYPES: dict[int, DataType] = {member.value: member for member in DataType}
_FORMATS: dict[int, Format] = {member.value: member for member in Format}


def known_data_type(value: int) -> DataType | None:
    """``DataType(value)``, or None for a value outside the enum."""
    return _DATA_TYPES.get(value)


def known_format(value: int) -> Format | None:
    """``Format(value)``, or None for a value outside the enum."""
    return _FORMATS.get(value)


def format_by_name(name: str) -> Format:
    """``"NC1HWC0"`` → Format; accepts a ``FORMAT_`` prefix as some tools print it."""
    key = name.strip().upper().removeprefix("FORMAT_")
    for member in Format:
        if member.name.upper() == key:
            return member
    raise KeyError(name)


def numpy_dtype(data_type: DataType) -> np.dtype:
    """The numpy dtype a decoded tensor of ``data_type`` has (packed ints decode to int8/uint8,
    table types to float32)."""
    if data_type in _NUMPY:
        return _NUMPY[data_type]
    if data_type in _TABLES:
        return np.dtype(np.float32)
    if data_type in _PACKED_FLOATS:
        return _PACKED_FLOATS[data_type]
    if data_type in _PACKED:
        return np.dtype(np.int8 if _PACKED[data_type][1] else np.uint8)
    raise UnsupportedDtypeError(data_type.name)


def stored_as_is(data_type: int) -> np.dtype | None:
    """The dtype whose elements a payload of ``data_type`` holds byte for byte (decoding it is a
    view of its bytes), or None: a packed or table type, a value outside the enum."""
    return _NUMPY.get(data_type)  # type: ignore[call-overload]  # an int finds its IntEnum member


def data_type_of(dtype: np.dtype) -> DataType:
    """numpy dtype → dump DataType (for writers)."""
    try:
        return _REVERSE[np.dtype(dtype)]
    except KeyError:
        raise UnsupportedDtypeError(str(dtype)) from None


def is_float(data_type: DataType) -> bool:
    return data_type in _FLOATS


def storage_bytes(data_type: DataType, count: int) -> int:
    """Bytes that ``count`` elements of ``data_type`` occupy in a dump payload."""
    if data_type in _NUMPY:
        return _NUMPY[data_type].itemsize * count
    if data_type in _TABLES:
        return count
    if data_type in _PACKED:
        bits = _PACKED[data_type][0]
        return (count * bits + 7) // 8
    raise UnsupportedDtypeError(data_type.name)


def bits_per_element(data_type: DataType) -> int:
    """Storage bits of one element (4 for int4/fp4, 8 for HiFloat8, 16 for bf16, …)."""
    if data_type in _PACKED:
        return _PACKED[data_type][0]
    return storage_bytes(data_type, 1) * 8


def decode_elements(raw: np.ndarray | memoryview | bytes, data_type: DataType, count: int) -> np.ndarray:
    """Decode the first ``count`` elements of a payload; a zero-copy view where the type allows.

    ``raw`` is the payload's bytes (uint8 array, memoryview or bytes). Packed sub-byte types are
    unpacked into a new array, table types (HiFloat8) gathered into a new float32 array: the only
    cases that copy.
    """
    buf = np.frombuffer(raw, dtype=np.uint8) if not isinstance(raw, np.ndarray) else raw.view(np.uint8)
    if data_type in _NUMPY:
        dtype = _NUMPY[data_type]
        return buf[: dtype.itemsize * count].view(dtype)
    if data_type in _TABLES:
        return _TABLES[data_type].decode(buf[:count])
    if data_type in _PACKED:
        bits, signed = _PACKED[data_type]
        values = _unpack(buf, bits, signed, count)
        return values.view(_PACKED_FLOATS[data_type]) if data_type in _PACKED_FLOATS else values
    raise UnsupportedDtypeError(data_type.name)


def _unpack(buf: np.ndarray, bits: int, signed: bool, count: int) -> np.ndarray:
    per_byte = 8 // bits
    nbytes = (count + per_byte - 1) // per_byte
    if bits == 1:
        return np.unpackbits(buf[:nbytes], count=count)
    mask = (1 << bits) - 1
    shifts = np.arange(per_byte, dtype=np.uint8) * bits
    values = ((buf[:nbytes, None] >> shifts) & mask).reshape(-1)[:count]
    if not signed:
        return values.astype(np.uint8)
    sign = 1 << (bits - 1)
    return (values.astype(np.int16) ^ sign).astype(np.int16).__sub__(sign).astype(np.int8)


def encode_elements(values: np.ndarray, data_type: DataType) -> bytes:
    """Inverse of ``decode_elements``: the payload bytes a device would hold for ``values``."""
    flat = np.ascontiguousarray(values).reshape(-1)
    if data_type in _NUMPY:
        return flat.astype(_NUMPY[data_type], copy=False).tobytes()
    if data_type in _TABLES:
        return _TABLES[data_type].encode(flat).tobytes()
    if data_type in _PACKED_FLOATS:
        flat = flat.astype(_PACKED_FLOATS[data_type]).view(np.uint8)
    if data_type in _PACKED:
        bits, _signed = _PACKED[data_type]
        if bits == 1:
            return np.packbits(flat.astype(np.uint8) & 1).tobytes()
        per_byte = 8 // bits
        mask = (1 << bits) - 1
        padded = np.zeros(-(-flat.size // per_byte) * per_byte, dtype=np.uint8)
        padded[: flat.size] = flat.astype(np.int16) & mask
        shifts = np.arange(per_byte, dtype=np.uint8) * bits
        packed = (padded.reshape(-1, per_byte) << shifts).sum(axis=1, dtype=np.uint16)
        return packed.astype(np.uint8).tobytes()
    raise UnsupportedDtypeError(data_type.name)
