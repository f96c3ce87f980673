"""8-bit and 4-bit floats of current Ascend chips: every code decodes as its format defines it.

The expected values are written here from the definitions (OCP FP8/MX for e5m2, e4m3fn, e8m0 and
e2m1; the HiF8 paper for HiFloat8, as formats.md §1.5 restates it), with bit strings rather than
the integer arithmetic of the implementation, and checked against ``decode_elements``: the path
every dump payload takes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, TensorKind, read_dump, write_dump
from dumpcmp.proto.dtypes import DataType, decode_elements, encode_elements, numpy_dtype, storage_bytes

NAN = math.nan
ALL_CODES = bytes(range(256))


def _ieee_like(bits: str, exp_bits: int, *, bias: int, inf: bool, nan_all_ones: bool) -> float:
    """S E…E M…M with subnormals; ``inf``: all-ones exponent is inf/NaN (IEEE), else only
    all-ones exponent *and* mantissa is NaN (the OCP "fn" types)."""
    sign = -1.0 if bits[0] == "1" else 1.0
    exp_field, mant_field = bits[1 : 1 + exp_bits], bits[1 + exp_bits :]
    exponent, mantissa = int(exp_field, 2), int(mant_field, 2)
    scale = 2 ** len(mant_field)
    if exp_field == "1" * exp_bits:
        if inf:
            return sign * math.inf if mantissa == 0 else NAN
        if nan_all_ones and mant_field == "1" * len(mant_field):
            return NAN
    if exponent == 0:
        return sign * 2.0 ** (1 - bias) * (mantissa / scale)
    return sign * 2.0 ** (exponent - bias) * (1 + mantissa / scale)


def _e5m2(code: int) -> float:
    return _ieee_like(f"{code:08b}", 5, bias=15, inf=True, nan_all_ones=False)


def _e4m3fn(code: int) -> float:
    return _ieee_like(f"{code:08b}", 4, bias=7, inf=False, nan_all_ones=True)


def _e8m0(code: int) -> float:
    return NAN if code == 0xFF else 2.0 ** (code - 127)  # unsigned scale, no zero


def _e2m1(code: int) -> float:
    return _ieee_like(f"{code:04b}", 2, bias=1, inf=False, nan_all_ones=False)


def _hif8(code: int) -> float:
    bits = f"{code:08b}"
    specials = {"00000000": 0.0, "10000000": NAN, "01101111": math.inf, "11101111": -math.inf}
    if bits in specials:
        return specials[bits]
    sign = -1.0 if bits[0] == "1" else 1.0
    rest = bits[1:]
    for dot, width in (("11", 4), ("10", 3), ("01", 2), ("001", 1), ("0001", 0)):
        if rest.startswith(dot):
            exp_field, mant_field = rest[len(dot) : len(dot) + width], rest[len(dot) + width :]
            exponent = 0
            if width:
                magnitude = int("1" + exp_field[1:], 2)  # the implicit leading magnitude bit
                exponent = -magnitude if exp_field[0] == "1" else magnitude
            return sign * 2.0**exponent * (1 + int(mant_field, 2) / 2 ** len(mant_field))
    return sign * 2.0 ** (int(rest[4:], 2) - 23)  # dot 0000: denormal


def _assert_codes(actual: np.ndarray, expected: list[float]) -> None:
    got = np.asarray(actual, dtype=np.float64)
    want = np.array(expected, dtype=np.float64)
    wrong = [
        i for i in range(len(want)) if not (got[i] == want[i] or (np.isnan(got[i]) and np.isnan(want[i])))
    ]
    assert not wrong, [(hex(i), got[i], want[i]) for i in wrong[:8]]
    assert np.array_equal(np.signbit(got[got == 0]), np.signbit(want[want == 0]))  # -0.0 stays -0.0


@pytest.mark.parametrize(
    ("data_type", "definition"),
    [
        (DataType.DT_HIFLOAT8, _hif8),
        (DataType.DT_FLOAT8_E5M2, _e5m2),
        (DataType.DT_FLOAT8_E4M3FN, _e4m3fn),
        (DataType.DT_FLOAT8_E8M0, _e8m0),
    ],
)
def test_every_8_bit_code_decodes_as_defined(data_type: DataType, definition: Callable[[int], float]) -> None:
    decoded = decode_elements(ALL_CODES, data_type, 256)
    _assert_codes(decoded.astype(np.float64), [definition(c) for c in range(256)])
    assert storage_bytes(data_type, 256) == 256


def test_every_fp4_byte_decodes_as_two_codes_low_nibble_first() -> None:
    decoded = decode_elements(ALL_CODES, DataType.DT_FLOAT4_E2M1, 512)
    expected = [_e2m1(nibble) for byte in range(256) for nibble in (byte & 0xF, byte >> 4)]
    _assert_codes(decoded.astype(np.float64), expected)
    assert storage_bytes(DataType.DT_FLOAT4_E2M1, 3) == 2  # odd counts leave half a byte unused


@pytest.mark.parametrize(
    ("code", "value"),
    [
        (0x08, 1.0),  # msaccucmp 26.2.0 gives dot-0 codes a fourth mantissa bit: 1.25
        (0x09, 1.125),
        (0x18, 0.5),  # D = 1, exponent sign bit set
        (0x10, 2.0),
        (0x6E, 32768.0),  # the largest finite value
        (0x7F, 1.5 * 2.0**-15),
        (0x01, 2.0**-22),  # the smallest denormal
        (0x80, NAN),  # msaccucmp reads it as a signed byte and decodes −1.19e-07
        (0x6F, math.inf),
        (0xEF, -math.inf),
    ],
)
def test_hifloat8_reference_points(code: int, value: float) -> None:
    [decoded] = decode_elements(bytes([code]), DataType.DT_HIFLOAT8, 1)
    assert decoded == value or (math.isnan(value) and math.isnan(decoded))


@pytest.mark.parametrize(
    ("data_type", "code", "value"),
    [  # the codes msaccucmp's Python decoders get wrong
        (DataType.DT_FLOAT8_E4M3FN, 0x7F, NAN),
        (DataType.DT_FLOAT8_E4M3FN, 0xFF, NAN),
        (DataType.DT_FLOAT8_E5M2, 0xFC, -math.inf),
    ],
)
def test_fp8_codes_other_decoders_miss(data_type: DataType, code: int, value: float) -> None:
    [decoded] = decode_elements(bytes([code]), data_type, 1).astype(np.float64)
    assert decoded == value or (math.isnan(value) and math.isnan(decoded))


@pytest.mark.parametrize(
    "data_type",
    [DataType.DT_HIFLOAT8, DataType.DT_FLOAT8_E5M2, DataType.DT_FLOAT8_E4M3FN, DataType.DT_FLOAT4_E2M1],
)
def test_encoding_every_value_gives_its_code_back(data_type: DataType) -> None:
    count = 512 if data_type == DataType.DT_FLOAT4_E2M1 else 256
    values = decode_elements(ALL_CODES, data_type, count).astype(np.float32)
    again = decode_elements(encode_elements(values, data_type), data_type, count).astype(np.float32)
    assert np.array_equal(values, again, equal_nan=True)


def test_hifloat8_encoding_rounds_to_nearest_and_overflows_to_inf() -> None:
    values = np.array([1.06, 1.07, -1.07, 32769.0, 1e9, -1e9, 1e-30], dtype=np.float32)
    codes = encode_elements(values, DataType.DT_HIFLOAT8)
    decoded = decode_elements(codes, DataType.DT_HIFLOAT8, values.size)
    assert decoded.tolist() == [1.0, 1.125, -1.125, 32768.0, math.inf, -math.inf, 0.0]


def test_a_hifloat8_dump_reads_as_float32(tmp_path: Path) -> None:
    values = np.array([[1.0, -0.5], [32768.0, 2.0**-22]], dtype=np.float32)
    tensor = DumpTensor.from_array(TensorKind.OUTPUT, 0, values, data_type=DataType.DT_HIFLOAT8)
    assert tensor.size == 4
    path = write_dump(tmp_path / "Cast.c.1.2.3", DumpFile("", Layout.V2, "2.0", 3, "c", outputs=(tensor,)))
    read = read_dump(path).outputs[0]
    assert read.dtype_name == "DT_HIFLOAT8"
    assert numpy_dtype(DataType.DT_HIFLOAT8) == np.float32
    logical = read.logical()
    assert logical.dtype == np.float32
    assert np.array_equal(logical, values)


@pytest.mark.parametrize(("data_type", "elements"), [(DataType.DT_FLOAT4_E2M1, 8), (DataType.DT_HIFLOAT8, 4)])
def test_a_tensor_without_shape_holds_all_its_elements(
    tmp_path: Path, data_type: DataType, elements: int
) -> None:
    from dumpcmp.proto._gen import dump_data_pb2

    message = dump_data_pb2.DumpData(version="2.0", op_name="x")
    message.output.add(data_type=int(data_type), size=4)  # no shape: "all of it" (msaccucmp's rule)
    header = message.SerializeToString()
    path = tmp_path / "Cast.x.1.2.3"
    path.write_bytes(len(header).to_bytes(8, "little") + header + bytes([0x21, 0x43, 0x65, 0x08]))
    tensor = read_dump(path).outputs[0]
    assert tensor.shape == (elements,)
    assert tensor.array().size == elements
