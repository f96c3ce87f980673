"""The npy reader and writer every command shares: values, never raw bits; one line for junk."""

from __future__ import annotations

import json
import mmap
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from dumpcmp.errors import FormatError
from dumpcmp.proto.npy import load_npy, save_npy

VALUES = np.array([[-3.0, -0.5, 0.0], [0.25, 1.5, 448.0]], dtype=np.float32)


def _is_mapped(array: np.ndarray) -> bool:
    base = array
    while base is not None:
        if isinstance(base, mmap.mmap):
            return True
        base = base.base  # type: ignore[assignment]
    return False


@pytest.mark.parametrize(
    "dtype", [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float4_e2m1fn]
)
def test_extension_floats_are_written_as_exact_float32(tmp_path: Path, dtype: type) -> None:
    typed = VALUES.astype(dtype)
    path = save_npy(tmp_path / "x.npy", typed)
    plain = np.load(path, allow_pickle=False)
    assert plain.dtype == np.float32
    assert np.array_equal(plain, typed.astype(np.float32))
    assert not (tmp_path / "x.npy.json").exists()


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e8m0fnu])
def test_keep_dtype_round_trips_through_bits_and_sidecar(tmp_path: Path, dtype: type) -> None:
    typed = np.abs(VALUES).astype(dtype) if dtype is ml_dtypes.float8_e8m0fnu else VALUES.astype(dtype)
    path = save_npy(tmp_path / "x.npy", typed, keep_dtype=True)
    assert np.load(path).dtype.kind == "u"  # plain numpy sees the bits
    loaded = load_npy(path)
    assert loaded.dtype == np.dtype(dtype)
    assert loaded.tobytes() == typed.tobytes()


def test_every_kind_of_file_reads_as_the_same_values(tmp_path: Path) -> None:
    bf16 = VALUES.astype(ml_dtypes.bfloat16)
    np.save(tmp_path / "float32.npy", bf16.astype(np.float32))
    save_npy(tmp_path / "sidecar.npy", bf16, keep_dtype=True)
    np.save(tmp_path / "opaque.npy", bf16)  # np.save of a bfloat16 array writes '<V2'
    for name in ("float32", "sidecar", "opaque"):
        loaded = load_npy(tmp_path / f"{name}.npy")
        assert loaded.dtype.kind != "u", name
        assert np.array_equal(
            loaded.astype(np.float32), VALUES.astype(ml_dtypes.bfloat16).astype(np.float32)
        ), name


def test_hifloat8_codes_with_a_sidecar_read_as_values(tmp_path: Path) -> None:
    np.save(tmp_path / "h.npy", np.array([0x08, 0x18, 0x6F], dtype=np.uint8))
    (tmp_path / "h.npy.json").write_text(json.dumps({"dtype": "hifloat8", "stored_as": "uint8"}))
    assert load_npy(tmp_path / "h.npy").tolist() == [1.0, 0.5, float("inf")]


def test_arrays_are_memory_mapped_and_read_only(tmp_path: Path) -> None:
    np.save(tmp_path / "big.npy", np.arange(1000, dtype=np.float32))
    loaded = load_npy(tmp_path / "big.npy")
    assert _is_mapped(loaded)
    assert type(loaded) is np.ndarray  # not np.memmap: arithmetic results are plain arrays
    assert not loaded.flags.writeable
    np.save(tmp_path / "empty.npy", np.zeros((0, 3), dtype=np.float32))  # numpy cannot map these
    empty = load_npy(tmp_path / "empty.npy")
    assert empty.shape == (0, 3)
    assert not empty.flags.writeable


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"this is not numpy at all\n", "not a numpy .npy file (a text file)"),
        (b'{"a": 1}', "not a numpy .npy file (a JSON file)"),
        (bytes(range(256)) * 4, "not a numpy .npy file"),
        (b"\x93NUMPY\x01\x00\x10\x00{'descr': 'zz'", "damaged .npy header"),
        # numpy's header parser tokenizes: an open bracket or triple quote raised TokenError
        (
            b"\x93NUMPY\x01\x00\x30\x00{'descr': '<f4', 'fortran_order': False, 'shape': (6,]}\n",
            "damaged .npy header",
        ),
        (b'\x93NUMPY\x01\x00\x10\x00{"""descr": 1}\n', "damaged .npy header"),
        (b"\x93NUMPY not really", "damaged .npy header"),  # junk after the magic: no version to name
    ],
)
def test_junk_gets_one_clear_line(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "junk.0.1.npy"
    path.write_bytes(content)
    with pytest.raises(FormatError) as info:
        load_npy(path)
    text = str(info.value)
    assert text.startswith(f"{path}: {message}")
    assert "pickle" not in text
    assert "\n" not in text


def test_pickled_objects_are_refused_without_unpickling(tmp_path: Path) -> None:
    np.save(tmp_path / "o.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(FormatError, match="holds pickled Python objects"):
        load_npy(tmp_path / "o.npy")


def test_truncated_payload_and_odd_contents(tmp_path: Path) -> None:
    np.save(tmp_path / "t.npy", np.arange(100, dtype=np.float64))
    data = (tmp_path / "t.npy").read_bytes()
    (tmp_path / "t.npy").write_bytes(data[:-8])
    with pytest.raises(FormatError, match="damaged or truncated"):
        load_npy(tmp_path / "t.npy")
    np.save(tmp_path / "s.npy", np.array(["a", "b"]))
    with pytest.raises(FormatError, match="not numbers"):
        load_npy(tmp_path / "s.npy")
    np.save(tmp_path / "r.npy", np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]))
    with pytest.raises(FormatError, match="records"):
        load_npy(tmp_path / "r.npy")
    np.save(tmp_path / "v1.npy", VALUES.astype(ml_dtypes.float8_e4m3fn))  # '<V1': which 8-bit type?
    with pytest.raises(FormatError, match=r"v1\.npy\.json"):
        load_npy(tmp_path / "v1.npy")
    np.save(tmp_path / "b.npy", np.zeros(3, dtype=np.uint16))
    (tmp_path / "b.npy.json").write_text('{"dtype": "no_such_type"}')
    with pytest.raises(FormatError, match="bad dtype sidecar"):
        load_npy(tmp_path / "b.npy")


def test_a_directory_or_a_missing_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "d.npy").mkdir()
    with pytest.raises(FormatError, match=r"d\.npy: cannot read: Is a directory"):
        load_npy(tmp_path / "d.npy")
    with pytest.raises(FormatError, match=r"m\.npy: cannot read: No such file"):
        load_npy(tmp_path / "m.npy")


def test_files_with_one_header_keep_their_own_data(tmp_path: Path) -> None:
    # Headers are parsed once per distinct header text; the data is each file's.
    for seed in range(3):
        np.save(tmp_path / f"{seed}.npy", np.full((2, 3), seed, dtype=np.float32))
    for seed in range(3):
        np.testing.assert_array_equal(load_npy(tmp_path / f"{seed}.npy"), np.full((2, 3), seed))


@pytest.mark.parametrize(
    "array",
    [
        np.asfortranarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4)),
        np.arange(6, dtype=">f4").reshape(2, 3),
        np.array(3.5, dtype=np.float64),
        np.arange(5, dtype=np.int16),
        np.zeros((2, 0), dtype=np.float16),
    ],
    ids=["fortran", "big-endian", "scalar", "1-d", "empty"],
)
def test_headers_np_save_writes_read_as_numpy_reads_them(tmp_path: Path, array: np.ndarray) -> None:
    # load_npy parses np.save's header itself (numpy's parser cost ~5x the whole load).
    np.save(tmp_path / "a.npy", array)
    loaded = load_npy(tmp_path / "a.npy")
    want = np.load(tmp_path / "a.npy")
    assert loaded.dtype == want.dtype and loaded.shape == want.shape
    assert loaded.flags.f_contiguous == want.flags.f_contiguous
    np.testing.assert_array_equal(loaded, want)


def test_a_header_numpy_writes_as_version_2_is_read(tmp_path: Path) -> None:
    array = np.arange(12, dtype=np.float32).reshape(3, 4)
    with (tmp_path / "v2.npy").open("wb") as handle:
        np.lib.format.write_array(handle, array, version=(2, 0))
    np.testing.assert_array_equal(load_npy(tmp_path / "v2.npy"), array)


@pytest.mark.parametrize("version", [b"\x09\x00", b"\x01\x05", b"\x04\x00"])
def test_an_npy_of_a_version_numpy_does_not_define_says_so(tmp_path: Path, version: bytes) -> None:
    """Not "expected 662372470 bytes": numpy reads a header length of the wrong width."""
    np.save(tmp_path / "v.npy", np.ones(3, np.float32))
    data = bytearray((tmp_path / "v.npy").read_bytes())
    data[6:8] = version
    (tmp_path / "v.npy").write_bytes(bytes(data))
    with pytest.raises(FormatError) as info:
        load_npy(tmp_path / "v.npy")
    assert str(info.value) == (
        f"{tmp_path / 'v.npy'}: a numpy .npy file of unsupported format version {version[0]}.{version[1]} "
        "(numpy defines 1.0, 2.0 and 3.0)"
    )


def test_a_header_numpy_writes_as_version_3_is_read(tmp_path: Path) -> None:
    array = np.arange(4, dtype=np.float32)
    with (tmp_path / "v3.npy").open("wb") as handle:
        np.lib.format.write_array(handle, array, version=(3, 0))
    np.testing.assert_array_equal(load_npy(tmp_path / "v3.npy"), array)
