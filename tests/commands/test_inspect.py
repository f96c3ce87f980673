"""``dumpcmp inspect FILE``: the table, the JSON, chunked statistics and one-line errors."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from dumpcmp.commands import inspect as inspect_command
from dumpcmp.commands.inspect import tensor_stats
from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, TensorKind, write_dump
from dumpcmp.proto.dtypes import DataType, Format
from dumpcmp.proto.npy import save_npy

STAMP = 1_763_700_000_001_111


@pytest.fixture(autouse=True)
def _plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)


def _cli() -> typer.Typer:
    app = typer.Typer()
    inspect_command.register(app)

    @app.command("other")  # a second command, so "inspect" stays a subcommand as in dumpcmp
    def other() -> None:
        pass

    return app


def _run(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(_cli(), ["inspect", *map(str, args)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def _nc1hwc0(x: np.ndarray, c0: int = 16) -> np.ndarray:
    n, c, h, w = x.shape
    c1 = -(-c // c0)
    padded = np.full((n, c1 * c0, h, w), 1000, dtype=x.dtype)  # padding far outside the data
    padded[:, :c] = x
    return np.ascontiguousarray(padded.reshape(n, c1, c0, h, w).transpose(0, 1, 3, 4, 2))


ACT = (np.arange(3 * 4 * 5, dtype=np.float32).reshape(1, 3, 4, 5) - 30) / 4
WITH_NAN = np.array([1.0, np.nan, -np.inf, np.inf, np.inf, -2.0], dtype=np.float16)


@pytest.fixture
def dump_file(tmp_path: Path) -> Path:
    text = DumpTensor(TensorKind.INPUT, 1, int(DataType.DT_STRING), int(Format.ND), (1,), (1,), 2,
                      np.frombuffer(b"hi", np.uint8))  # fmt: skip
    dump = DumpFile(
        path="",
        layout=Layout.V2,
        version="2.0",
        dump_time=STAMP,
        op_name="stem/conv1/Conv2D.fused relu",
        inputs=(
            DumpTensor.from_array(
                TensorKind.INPUT, 0, _nc1hwc0(ACT), format=Format.NC1HWC0, original_shape=ACT.shape
            ),
            text,
        ),
        outputs=(
            DumpTensor.from_array(TensorKind.OUTPUT, 0, WITH_NAN),
            DumpTensor.from_array(TensorKind.OUTPUT, 1, np.array([[3, -7], [12, 0]], dtype=np.int32)),
            DumpTensor.from_array(TensorKind.OUTPUT, 2, np.array([1.5, -0.5], dtype=ml_dtypes.bfloat16)),
        ),
        attrs=(("sgt", '{"threadMode": 1}'),),
    )
    return write_dump(tmp_path / f"Conv2D.stem_conv1_Conv2D_fused_relu.11.2.{STAMP}", dump)


def test_json_describes_every_tensor(dump_file: Path) -> None:
    code, output = _run(dump_file, "--json")
    assert code == 0, output
    doc = json.loads(output)
    assert doc["path"] == str(dump_file)
    assert (doc["layout"], doc["version"], doc["op_name"]) == ("2.0", "2.0", "stem/conv1/Conv2D.fused relu")
    assert doc["dump_time"] == STAMP
    assert doc["dump_time_utc"].startswith("2025-11-21T")
    assert doc["attrs"] == [{"name": "sgt", "value": '{"threadMode": 1}'}]
    rows = {(t["kind"], t["index"]): t for t in doc["tensors"]}
    assert list(rows) == [("input", 0), ("input", 1), ("output", 0), ("output", 1), ("output", 2)]

    act = rows["input", 0]
    assert (act["dtype"], act["format"]) == ("DT_FLOAT", "NC1HWC0")
    assert act["device_shape"] == [1, 1, 4, 5, 16]
    assert act["logical_shape"] == [1, 3, 4, 5]
    assert act["size"] == 1 * 16 * 4 * 5 * 4
    assert act["stats_layout"] == "logical"  # the 1000s in the padding are not counted
    stats = act["stats"]
    assert (stats["count"], stats["min"], stats["max"]) == (60, float(ACT.min()), float(ACT.max()))
    assert stats["mean"] == pytest.approx(float(ACT.mean()))

    assert rows["input", 1]["stats"] is None
    assert rows["input", 1]["note"] == "unsupported dtype DT_STRING"

    special = rows["output", 0]["stats"]
    assert (special["nan"], special["pos_inf"], special["neg_inf"], special["finite"]) == (1, 2, 1, 2)
    assert (special["min"], special["max"], special["mean"]) == (-2.0, 1.0, -0.5)

    ints = rows["output", 1]["stats"]
    assert (ints["min"], ints["max"], ints["mean"]) == (-7, 12, 2.0)
    assert isinstance(ints["min"], int)
    assert rows["output", 2]["stats"]["max"] == 1.5


def test_table_is_readable(dump_file: Path) -> None:
    code, output = _run(dump_file)
    assert code == 0, output
    assert str(dump_file) in output
    assert "stem/conv1/Conv2D.fused relu" in output
    assert "2025-11-21T" in output
    lines = output.splitlines()
    act = next(line for line in lines if line.strip().startswith("input 0"))
    assert all(cell in act for cell in ("FLOAT", "NC1HWC0", "1×1×4×5×16", "1×3×4×5", "-7.5", "7.25"))
    assert any("input 1: unsupported dtype DT_STRING" in line for line in lines)
    special = next(line for line in lines if line.strip().startswith("output 0"))
    assert special.split()[-2:] == ["1", "3"]  # NaN count, inf count


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"", "fewer than the 8-byte header length"),
        (b"\x10" + b"\x00" * 7 + b"\xff" * 16, "not a valid dump"),
    ],
)
def test_corrupt_file_is_one_red_line(tmp_path: Path, content: bytes, fragment: str) -> None:
    path = tmp_path / "Bad.bad.1.2.3"
    path.write_bytes(content)
    code, output = _run(path)
    assert code == 1
    assert output.startswith(f"Error: {path}: at byte ")
    assert fragment in output
    assert len(output.strip().splitlines()) == 1
    assert "Traceback" not in output


@pytest.mark.parametrize(
    ("name", "content", "kind"),
    [
        ("x.json", b'{"dump": {"dump_list": []}}', "a JSON file"),
        (
            "x.csv",
            b"Op Type,Op Name,Task ID,Input/Output\nAdd,add,1,input\n",
            "a CSV file (a statistics dump",
        ),
        ("notes", "ünïcode notes\n".encode(), "a text file"),
        ("x.npz", b"PK\x03\x04" + b"\x00" * 40, "a zip archive"),
    ],
)
def test_a_file_that_is_no_dump_is_named_for_what_it_is(
    tmp_path: Path, name: str, content: bytes, kind: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    code, output = _run(path)
    assert code == 1
    assert output.startswith(f"Error: {path} is {kind}")
    assert output.rstrip().endswith("not a CANN dump file")
    assert "header length" not in output
    assert len(output.strip().splitlines()) == 1


def test_an_npy_file_is_shown_as_one_array(tmp_path: Path) -> None:
    path = tmp_path / "x.npy"
    np.save(path, np.array([[1.0, np.nan], [-2.0, 4.0]], dtype=np.float32))
    code, output = _run(path)
    assert code == 0, output
    assert "a numpy .npy file, not a CANN dump file" in output
    row = next(line for line in output.splitlines() if line.strip().startswith("array 0"))
    assert all(cell in row for cell in ("float32", "2×2", "-2", "4", "1"))
    code, output = _run(path, "--json")
    doc = json.loads(output)
    assert doc["layout"] == "npy"
    [tensor] = doc["tensors"]
    assert (tensor["dtype"], tensor["logical_shape"], tensor["stats"]["nan"]) == ("float32", [2, 2], 1)


def test_bf16_npy_with_a_sidecar_is_shown_as_values(tmp_path: Path) -> None:
    path = save_npy(tmp_path / "b.npy", np.array([1.5, -0.5], dtype=ml_dtypes.bfloat16), keep_dtype=True)
    code, output = _run(path, "--json")
    assert code == 0, output
    [tensor] = json.loads(output)["tensors"]
    assert tensor["dtype"] == "bfloat16"
    assert (tensor["stats"]["min"], tensor["stats"]["max"]) == (-0.5, 1.5)


def test_a_junk_npy_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "x.npy"
    path.write_bytes(b"\x93NUMPY\x01\x00\x10\x00{'descr': 'zz'")
    code, output = _run(path)
    assert code == 1
    assert output.startswith(f"Error: {path}: damaged .npy header")
    assert len(output.strip().splitlines()) == 1


def test_missing_file(tmp_path: Path) -> None:
    code, output = _run(tmp_path / "nope", "--json")
    assert code == 1
    assert output.startswith("Error: ")


def test_error_line_is_red_on_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")  # TERM=dumb (as in CI) means no colour
    code, output = _run(tmp_path / "nope")
    assert code == 1
    assert "\x1b[31m" in output  # red


# --------------------------------------------------------------------------- chunked statistics


def _whole(array: np.ndarray) -> dict[str, Any]:
    """The same numbers from whole-array numpy: the oracle for the chunked pass."""
    values = (np.abs(array) if array.dtype.kind == "c" else array).astype(np.float64)
    finite = values[np.isfinite(values)]
    return {
        "count": array.size,
        "nan": int(np.isnan(values).sum()),
        "pos_inf": int(np.isposinf(values).sum()),
        "neg_inf": int(np.isneginf(values).sum()),
        "min": float(finite.min()) if finite.size else None,
        "max": float(finite.max()) if finite.size else None,
        "mean": float(finite.mean()) if finite.size else None,
    }


_RNG = np.random.default_rng(7)
_BASE = _RNG.standard_normal(1000) * 100
_BASE[::97] = np.nan
_BASE[5::101] = np.inf
_BASE[7::103] = -np.inf
_COMPLEX = np.empty(500, dtype=np.complex64)
_COMPLEX.real, _COMPLEX.imag = _BASE[:500], _BASE[500:]


@pytest.mark.parametrize("chunk", [1, 7, 1000, 4096])
@pytest.mark.parametrize(
    "array",
    [
        _BASE.astype(np.float32),
        _BASE.astype(np.float16),
        _BASE.astype(ml_dtypes.bfloat16),
        np.nan_to_num(_BASE, posinf=0, neginf=0).astype(ml_dtypes.float8_e4m3fn),
        _BASE,
        _COMPLEX,
        np.nan_to_num(_BASE, nan=0, posinf=0, neginf=0).astype(np.int64),
        (_BASE > 0),
        _BASE.astype(np.float32).reshape(10, 100).T,  # not contiguous: chunks must still be C order
        np.full(5, np.nan, dtype=np.float32),
        np.zeros((0, 3), dtype=np.float32),
    ],
    ids=["f32", "f16", "bf16", "fp8", "f64", "c64", "i64", "bool", "transposed", "all-nan", "empty"],
)
def test_chunked_stats_equal_whole_array_numpy(array: np.ndarray, chunk: int) -> None:
    got = tensor_stats(array, chunk=chunk)
    want = _whole(array)
    assert (got.count, got.nan, got.pos_inf, got.neg_inf) == (
        want["count"],
        want["nan"],
        want["pos_inf"],
        want["neg_inf"],
    )
    for key in ("min", "max"):
        assert getattr(got, key) == want[key]
    if want["mean"] is None:
        assert got.mean is None
    else:
        assert got.mean is not None
        assert math.isclose(got.mean, want["mean"], rel_tol=1e-9, abs_tol=1e-9)
    assert got.of == ("magnitude" if array.dtype.kind == "c" else "value")


def test_stats_never_widen_the_whole_tensor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Temporaries stay chunk-sized: no astype of more than one chunk at a time."""
    import tracemalloc

    big = np.ones(4_000_000, dtype=np.float16)  # 8 MB; a float64 copy would be 32 MB
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        tensor_stats(big, chunk=1 << 16)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak - base < 2 * 1024 * 1024


def test_an_empty_path_is_not_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for args in ([""], ["--", ""]):
        code, output = _run(*args)
        assert code == 2
        assert output.splitlines() == ["Error: FILE: empty path (give a file or directory; '.' for this one)"]


def test_an_npy_of_an_unknown_version_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "v9.npy"
    np.save(path, np.ones(3, np.float32))
    path.write_bytes(path.read_bytes()[:6] + b"\x09\x00" + path.read_bytes()[8:])
    code, output = _run(path)
    assert code == 1
    assert output.splitlines() == [
        f"Error: {path}: a numpy .npy file of unsupported format version 9.0 (numpy defines 1.0, 2.0 and 3.0)"
    ]
