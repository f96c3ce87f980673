"""``dumpcmp convert``: dump2npy, npy2dump and format, through the CLI on real files."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from dumpcmp.commands import convert
from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, TensorKind, dump_bytes, read_dump, write_dump
from dumpcmp.proto.dtypes import DataType, Format
from dumpcmp.proto.names import parse_dump_name
from dumpcmp.proto.npy import load_npy, save_npy

STAMP = 1_700_000_000_000_000
STEP = Path("20260101000000/0/net/1/0")


@pytest.fixture(autouse=True)
def _plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    # CI may force colours; these tests read plain text unless they ask for a terminal.
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)


def _cli() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(convert.app, name="convert")
    return app


def _run(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(_cli(), ["convert", *map(str, args)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def _nc1hwc0(x: np.ndarray, c0: int = 16) -> np.ndarray:
    """NCHW → the padded 5HD device array (formats.md §6.1)."""
    n, c, h, w = x.shape
    c1 = -(-c // c0)
    padded = np.zeros((n, c1 * c0, h, w), dtype=x.dtype)
    padded[:, :c] = x
    return np.ascontiguousarray(padded.reshape(n, c1, c0, h, w).transpose(0, 1, 3, 4, 2))


def _write(path: Path, inputs: list[DumpTensor], outputs: list[DumpTensor], op_name: str = "net/op") -> Path:
    dump = DumpFile("", Layout.V2, "2.0", STAMP, op_name, inputs=tuple(inputs), outputs=tuple(outputs))
    return write_dump(path, dump)


ACT = np.arange(1 * 20 * 5 * 7, dtype=np.float16).reshape(1, 20, 5, 7) / 7
BF16 = np.linspace(-3, 3, 12, dtype=np.float32).astype(ml_dtypes.bfloat16).reshape(3, 4)


def _conv_file(path: Path) -> Path:
    return _write(
        path,
        [
            DumpTensor.from_array(
                TensorKind.INPUT, 0, _nc1hwc0(ACT), format=Format.NC1HWC0, original_shape=ACT.shape
            )
        ],
        [
            DumpTensor.from_array(TensorKind.OUTPUT, 0, BF16),
            DumpTensor.from_array(TensorKind.OUTPUT, 1, np.array(True)),
        ],
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A dump tree holding good files, a corrupt one, a stats CSV, a stranger and a DT_STRING file."""
    root = tmp_path / "dumps"
    step = root / STEP
    _conv_file(step / f"Conv2D.net_conv.1.2.{STAMP}")
    _write(
        step / f"Add.net_add.2.2.{STAMP + 1}", [], [DumpTensor.from_array(TensorKind.OUTPUT, 0, np.arange(5))]
    )
    good = dump_bytes(read_dump(step / f"Add.net_add.2.2.{STAMP + 1}"))
    (step / f"Mul.net_mul.3.2.{STAMP + 2}").write_bytes(good[:-1])  # truncated: still being written?
    (step / f"Add.net_add.2.2.{STAMP + 1}.csv").write_text("Input/Output,Index\n")
    (step / "core.dump").write_text("not a dump")
    text = DumpTensor(TensorKind.INPUT, 0, int(DataType.DT_STRING), int(Format.ND), (1,), (1,), 3,
                      np.frombuffer(b"abc", np.uint8))  # fmt: skip
    _write(
        step / f"StringOp.net_str.4.2.{STAMP + 3}",
        [text],
        [DumpTensor.from_array(TensorKind.OUTPUT, 0, ACT[0, 0])],
    )
    return root


# --------------------------------------------------------------------------- dump2npy


def test_dump2npy_converts_a_tree_and_reports_what_it_skipped(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "npy"
    code, output = _run("dump2npy", "-i", tree, "-o", out)
    assert code == 0, output
    lines = output.splitlines()
    step = tree / STEP
    conv = out / STEP / f"Conv2D.net_conv.1.2.{STAMP}"

    # logical layout, original shape, dtype kept
    act = np.load(f"{conv}.input.0.npy", allow_pickle=False)
    assert act.dtype == np.float16
    assert act.tobytes() == ACT.tobytes()
    assert np.load(f"{conv}.output.1.npy", allow_pickle=False).tolist() is True
    # bf16: widened exactly to float32, so a plain np.load gives the values, not their bits
    widened = np.load(f"{conv}.output.0.npy", allow_pickle=False)
    assert widened.dtype == np.float32
    assert np.array_equal(widened, BF16.astype(np.float32))
    assert not Path(f"{conv}.output.0.npy.json").exists()

    # one line per skipped file, the reason included; the others still converted
    corrupt = step / f"Mul.net_mul.3.2.{STAMP + 2}"
    assert any(line.startswith(f"skipped {corrupt}: at byte ") for line in lines), output
    assert f"skipped {step / 'core.dump'}: not a dump file name" in output
    assert any(
        line.startswith(f"skipped {step / f'Add.net_add.2.2.{STAMP + 1}.csv'}: statistics") for line in lines
    )
    string_file = step / f"StringOp.net_str.4.2.{STAMP + 3}"
    assert f"skipped {string_file}: input:0: unsupported dtype DT_STRING" in lines
    assert (out / STEP / f"StringOp.net_str.4.2.{STAMP + 3}.output.0.npy").is_file()
    assert not (out / STEP / f"StringOp.net_str.4.2.{STAMP + 3}.input.0.npy").exists()

    assert lines[-1] == f"converted 5 tensors from 3 dump files into {out}; skipped 3 files and 1 tensor"
    written = sorted(p.name for p in (out / STEP).glob("*.npy"))
    assert len(written) == 5
    for name in written:
        np.load(out / STEP / name, allow_pickle=False)  # every file loads without pickle


def test_dump2npy_keep_dtype_writes_bits_and_a_sidecar(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "npy"
    code, output = _run(
        "dump2npy", "--keep-dtype", "-i", tree / STEP / f"Conv2D.net_conv.1.2.{STAMP}", "-o", out
    )
    assert code == 0, output
    target = out / f"Conv2D.net_conv.1.2.{STAMP}.output.0.npy"
    bits = np.load(target, allow_pickle=False)
    assert bits.dtype == np.uint16
    assert bits.tobytes() == BF16.tobytes()
    assert json.loads(Path(f"{target}.json").read_text())["dtype"] == "bfloat16"
    restored = load_npy(target)  # every reader of the project re-types it: values, never bits
    assert restored.dtype == BF16.dtype
    assert restored.tobytes() == BF16.tobytes()


def _eight_bit_file(path: Path) -> Path:
    codes = np.frombuffer(bytes([0x08, 0x18, 0x6E, 0x80]), np.uint8)
    hif8 = DumpTensor(
        TensorKind.OUTPUT, 0, int(DataType.DT_HIFLOAT8), int(Format.ND), (2, 2), (2, 2), 4, codes
    )
    fp8 = DumpTensor.from_array(
        TensorKind.OUTPUT,
        1,
        np.array([1.5, -448.0, np.nan], dtype=np.float32).astype(ml_dtypes.float8_e4m3fn),
    )
    e5m2 = DumpTensor.from_array(
        TensorKind.OUTPUT, 2, np.array([-np.inf, 0.25], dtype=np.float32).astype(ml_dtypes.float8_e5m2)
    )
    return _write(path, [], [hif8, fp8, e5m2])


def test_dump2npy_8_bit_floats_become_float32_values(tmp_path: Path) -> None:
    source = _eight_bit_file(tmp_path / f"Cast.net_cast.1.2.{STAMP}")
    code, output = _run("dump2npy", "-i", source, "-o", tmp_path / "out")
    assert code == 0, output
    assert "Traceback" not in output
    loaded = [np.load(tmp_path / "out" / f"{source.name}.output.{i}.npy") for i in range(3)]
    assert all(a.dtype == np.float32 for a in loaded)
    np.testing.assert_array_equal(loaded[0], [[1.0, 0.5], [32768.0, np.nan]])
    np.testing.assert_array_equal(loaded[1], [1.5, -448.0, np.nan])
    np.testing.assert_array_equal(loaded[2], [-np.inf, 0.25])


def test_dump2npy_device_layout_and_txt(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "npy"
    source = tree / STEP / f"Conv2D.net_conv.1.2.{STAMP}"
    code, output = _run("dump2npy", "--input", source, "--output", out, "--device-layout", "--txt")
    assert code == 0, output
    device = np.load(out / f"{source.name}.input.0.npy", allow_pickle=False)
    assert device.shape == (1, 2, 5, 7, 16)
    assert device.tobytes() == _nc1hwc0(ACT).tobytes()
    text = (out / f"{source.name}.input.0.txt").read_text().split()
    assert len(text) == device.size
    assert np.array(text, dtype=np.float32).astype(np.float16).tobytes() == device.tobytes()
    bf16_text = (out / f"{source.name}.output.0.txt").read_text().split()
    assert np.array(bf16_text, dtype=np.float32).astype(ml_dtypes.bfloat16).tobytes() == BF16.tobytes()
    assert (out / f"{source.name}.output.1.txt").read_text().split() == ["1"]


def test_dump2npy_single_file_with_any_name(tmp_path: Path) -> None:
    source = _conv_file(tmp_path / "whatever.bin")  # named explicitly, so tried despite its name
    code, output = _run("dump2npy", "-i", source, "-o", tmp_path / "out")
    assert code == 0, output
    assert (tmp_path / "out" / "whatever.bin.input.0.npy").is_file()


def test_dump2npy_a_legal_long_dump_name_is_converted_under_a_mapped_name(tmp_path: Path) -> None:
    # A 250-byte dump name is legal; "{name}.input.0.npy" (and its temporary) is not a file name.
    long_name = f"Conv2D.{'x' * (250 - len(f'Conv2D..1.2.{STAMP}'))}.1.2.{STAMP}"
    source = _conv_file(tmp_path / "in" / STEP / long_name)
    _conv_file(tmp_path / "in" / STEP / f"Conv2D.short.1.2.{STAMP}")
    out = tmp_path / "out"
    code, output = _run("dump2npy", "-i", tmp_path / "in", "-o", out, "--txt", "--keep-dtype")
    assert code == 0, output
    assert "converted 6 tensors from 2 dump files" in output, output
    mapping = dict(line.split(",") for line in (out / STEP / "mapping.csv").read_text().splitlines())
    assert sorted(mapping.values()) == sorted(
        f"{long_name}.{kind}.{k}.{suffix}"
        for kind, k in (("input", 0), ("output", 0), ("output", 1))
        for suffix in ("npy", "txt")
    )
    stand_in = next(short for short, name in mapping.items() if name == f"{source.name}.input.0.npy")
    assert load_npy(out / STEP / stand_in).tobytes() == ACT.tobytes()
    assert not [p.name for p in (out / STEP).iterdir() if p.name.startswith(".")]


def test_dump2npy_exits_1_when_nothing_converts(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / f"Add.a.1.2.{STAMP}").write_bytes(b"\x00" * 5)
    code, output = _run("dump2npy", "-i", tmp_path / "in", "-o", tmp_path / "out")
    assert code == 1
    assert output.splitlines()[-1].startswith("converted 0 tensors from 0 dump files")
    assert "Traceback" not in output


def test_dump2npy_missing_input(tmp_path: Path) -> None:
    code, output = _run("dump2npy", "-i", tmp_path / "nope", "-o", tmp_path / "out")
    assert code == 1
    assert output.startswith("Error: ")
    assert "no such file or directory" in output


@pytest.mark.parametrize("command", ["dump2npy", "format"])
def test_output_that_is_a_file_is_one_line_before_any_work(tree: Path, tmp_path: Path, command: str) -> None:
    blocker = tmp_path / "taken"
    blocker.write_text("mine")
    source = tree if command == "dump2npy" else _conv_file(tmp_path / f"Conv2D.net_conv.1.2.{STAMP}")
    extra = ["-format", "NCHW", "-tensor", "input"] if command == "format" else []
    code, output = _run(command, "-i", source, *extra, "-o", blocker)
    assert code == 1
    # The walk's skipped files are reported as they are found; then the one error, and no work.
    assert output.splitlines()[-1] == f"Error: -o {blocker}: is a file, not a directory"
    assert "converted" not in output
    assert blocker.read_text() == "mine"


def test_glued_short_option_value_is_refused(tree: Path, tmp_path: Path) -> None:
    code, output = _run("dump2npy", "-i", tree, f"-o{tmp_path / 'out'}")
    assert code == 2
    assert len(output.splitlines()) == 1
    assert "after a space" in output
    assert not (tmp_path / "out").exists()


def test_progress_bar_only_on_a_terminal(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(convert, "_PROGRESS_MIN_FILES", 1)
    _, plain = _run("dump2npy", "-i", tree, "-o", tmp_path / "a")
    assert "\x1b[" not in plain
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("TERM", "xterm-256color")  # TERM=dumb (as in CI) turns the live bar off
    code, fancy = _run("dump2npy", "-i", tree, "-o", tmp_path / "b")
    assert code == 0
    assert "\x1b[" in fancy  # the live bar's control sequences


# --------------------------------------------------------------------------- npy2dump


def test_npy2dump_groups_outputs_of_one_run(tmp_path: Path) -> None:
    golden = tmp_path / "golden"
    (golden / "sub").mkdir(parents=True)
    a0 = np.arange(6, dtype=np.float32).reshape(2, 3)
    a1 = np.array([1, 2], dtype=np.int64)
    np.save(golden / "conv1_Conv2D.0.1700000000000001.npy", a0)
    np.save(golden / "conv1_Conv2D.1.1700000000000001.npy", a1)
    np.save(golden / "sub" / "relu.0.1700000000000002.npy", np.float16(1.5))
    save_npy(golden / "mm.0.1700000000000003.npy", BF16, keep_dtype=True)  # bf16 via the sidecar
    np.save(golden / "gap.1.1700000000000004.npy", a1)  # output 0 missing
    np.save(golden / "words.0.1700000000000005.npy", np.array(["a", "b"]))  # no dump dtype
    np.save(golden / "notes.npy", a1)

    out = tmp_path / "dumps"
    code, output = _run("npy2dump", "-i", golden, "-o", out)
    assert code == 0, output

    conv = read_dump(out / "Golden.conv1_Conv2D.0.0.1700000000000001")
    assert conv.layout is Layout.V2
    assert conv.op_name == "conv1_Conv2D"
    assert conv.dump_time == 1700000000000001
    assert conv.inputs == ()
    assert [t.index for t in conv.outputs] == [0, 1]
    assert conv.outputs[0].format == Format.ND
    assert conv.outputs[0].original_shape == (2, 3)
    assert conv.outputs[0].array().tobytes() == a0.tobytes()
    assert conv.outputs[1].array().tolist() == [1, 2]
    relu = read_dump(out / "sub" / "Golden.relu.0.0.1700000000000002")
    assert relu.outputs[0].shape == ()
    assert relu.outputs[0].data_type == DataType.DT_FLOAT16
    mm = read_dump(out / "Golden.mm.0.0.1700000000000003")
    assert mm.outputs[0].data_type == DataType.DT_BF16
    assert mm.outputs[0].array().tobytes() == BF16.tobytes()
    for path in out.rglob("Golden.*"):
        assert parse_dump_name(path.name).op_type == "Golden"

    assert f"skipped {golden / 'gap.1.1700000000000004.npy'}: output indices [1]" in output
    assert f"skipped {golden / 'words.0.1700000000000005.npy'}: " in output
    assert f"skipped {golden / 'notes.npy'}: not a golden file name" in output
    assert output.splitlines()[-1] == f"wrote 3 dump files from 4 .npy files into {out}; skipped 3 files"


def test_npy2dump_op_type_and_name_sanitising(tmp_path: Path) -> None:
    source = tmp_path / "layer.norm.2.1700000000000009.npy"  # an unsanitised op name with a dot
    np.save(source, np.ones(3, np.float32))
    code, output = _run("npy2dump", "-i", source, "-o", tmp_path / "out", "--op-type", "LayerNorm")
    assert code == 1, output  # output 2 alone: outputs 0 and 1 are missing, nothing is written
    assert "output indices [2] of layer.norm leave gaps" in output
    source2 = tmp_path / "layer.norm.0.1700000000000009.npy"
    np.save(source2, np.ones(3, np.float32))
    code, output = _run("npy2dump", "-i", source2, "-o", tmp_path / "out", "--op-type", "LayerNorm")
    assert code == 0, output
    dump = read_dump(tmp_path / "out" / "LayerNorm.layer_norm.0.0.1700000000000009")
    assert dump.op_name == "layer.norm"


def test_npy2dump_nothing_to_write_exits_1_saying_why(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    code, output = _run("npy2dump", "-i", tmp_path / "empty", "-o", tmp_path / "out")
    assert (code, output.strip()) == (
        1, f"Error: {tmp_path / 'empty'}: no golden .npy files to convert; the directory holds no files"
    )  # fmt: skip


def test_npy2dump_takes_big_endian_npy_as_compare_does(tmp_path: Path) -> None:
    values = np.random.default_rng(0).standard_normal((4, 5)).astype(">f4")
    np.save(tmp_path / "fc.0.1700000000000001.npy", values)
    code, output = _run("npy2dump", "-i", tmp_path / "fc.0.1700000000000001.npy", "-o", tmp_path / "d")
    assert code == 0, output
    dump = read_dump(tmp_path / "d" / "Golden.fc.0.0.1700000000000001")
    assert np.array_equal(dump.outputs[0].array(), values) and dump.outputs[0].array().dtype == np.float32


def test_npy2dump_then_dump2npy_gives_the_arrays_back(tmp_path: Path) -> None:
    values = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    np.save(tmp_path / "fc.0.1700000000000001.npy", values)
    assert _run("npy2dump", "-i", tmp_path / "fc.0.1700000000000001.npy", "-o", tmp_path / "d")[0] == 0
    assert _run("dump2npy", "-i", tmp_path / "d", "-o", tmp_path / "n")[0] == 0
    back = np.load(tmp_path / "n" / "Golden.fc.0.0.1700000000000001.output.0.npy", allow_pickle=False)
    assert back.tobytes() == values.tobytes()


# --------------------------------------------------------------------------- format


def test_format_to_nhwc_with_the_implied_shape(tree: Path, tmp_path: Path) -> None:
    source = tree / STEP / f"Conv2D.net_conv.1.2.{STAMP}"
    code, output = _run(
        "format", "-i", source, "-format", "NHWC", "-tensor", "input", "-index", "0", "-o", tmp_path
    )
    assert code == 0, output
    result = np.load(tmp_path / f"{source.name}.input.0.1x5x7x20.npy", allow_pickle=False)
    assert result.tobytes() == np.ascontiguousarray(ACT.transpose(0, 2, 3, 1)).tobytes()
    assert "NC1HWC0 → NHWC" in output


def test_format_with_explicit_shape_and_long_options(tree: Path, tmp_path: Path) -> None:
    source = tree / STEP / f"Conv2D.net_conv.1.2.{STAMP}"
    code, output = _run(
        "format",
        "--input",
        source,
        "--format",
        "NCHW",
        "--shape",
        "1,20,5,7",
        "--tensor",
        "input",
        "--output",
        tmp_path,
    )
    assert code == 0, output
    result = np.load(tmp_path / f"{source.name}.input.0.1x20x5x7.npy", allow_pickle=False)
    assert result.tobytes() == ACT.tobytes()


def test_format_output_defaults_and_bf16(tree: Path, tmp_path: Path) -> None:
    source = tree / STEP / f"Conv2D.net_conv.1.2.{STAMP}"
    code, output = _run("format", "-i", source, "-format", "ND", "-o", tmp_path)  # output 0 by default
    assert code == 0, output
    result = np.load(tmp_path / f"{source.name}.output.0.3x4.npy", allow_pickle=False)
    assert result.dtype == np.float32  # bf16 widened exactly
    assert np.array_equal(result, BF16.astype(np.float32))
    code, output = _run("format", "--keep-dtype", "-i", source, "-format", "ND", "-o", tmp_path / "kept")
    assert code == 0, output
    kept = load_npy(tmp_path / "kept" / f"{source.name}.output.0.3x4.npy")
    assert kept.dtype == BF16.dtype
    assert kept.tobytes() == BF16.tobytes()


def test_format_with_a_custom_converter(tree: Path, tmp_path: Path) -> None:
    plugins = tmp_path / "plugins" / "format_convert"
    plugins.mkdir(parents=True)
    (plugins / "convert_NC1HWC0_to_NHWC.py").write_text(
        "import numpy as np\n\n"
        "def convert(shape_from, shape_to, array):\n"
        "    return np.full(shape_to, 42, dtype=array.dtype)\n"
    )
    source = tree / STEP / f"Conv2D.net_conv.1.2.{STAMP}"
    code, output = _run(
        "format",
        "-i",
        source,
        "-format",
        "NHWC",
        "-tensor",
        "input",
        "-custom",
        tmp_path / "plugins",
        "-o",
        tmp_path,
    )
    assert code == 0, output
    result = np.load(tmp_path / f"{source.name}.input.0.1x5x7x20.npy", allow_pickle=False)
    assert (result == 42).all()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-format", "NOPE"], "unknown format 'NOPE'"),
        (["-format", "NCHW", "-index", "5"], "there is no output 5"),
        (["-format", "FRACTAL_NZ", "-tensor", "input"], "NC1HWC0"),
        (["-format", "NCHW", "-custom", "/nonexistent/plugins"], "no such directory"),
    ],
)
def test_format_errors_are_one_line(tree: Path, tmp_path: Path, args: list[str], message: str) -> None:
    source = tree / STEP / f"Conv2D.net_conv.1.2.{STAMP}"
    code, output = _run("format", "-i", source, "-o", tmp_path, *args)
    assert code == 1
    assert output.startswith("Error: ")
    assert message in output
    assert len(output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-format", "NCHW"], "-format NCHW needs a 4-D tensor; output 0 of {source} is 2-D [3, 4] "
                              "(give -shape with 4 dims to reshape it, or -format ND)"),
        (["-format", "NDHWC"], "-format NDHWC needs a 5-D tensor; output 0 of {source} is 2-D [3, 4] "),
        (["-format", "NCHW", "-shape", "12"], "-shape 12: 1 dim; -format NCHW needs 4"),
    ],
)  # fmt: skip
def test_format_refuses_an_axis_format_the_tensor_has_not(
    tree: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    # A 2-D tensor was written unchanged as "NCHW" (ND to NCHW is a reshape, and none was asked).
    source = tree / STEP / f"Conv2D.net_conv.1.2.{STAMP}"
    out = tmp_path / "out"
    code, output = _run("format", "-i", source, "-o", out, *args)
    assert code == 1, output
    (line,) = output.splitlines()
    assert line.startswith(f"Error: {message.format(source=source)}"), output
    assert not out.exists()
    code, output = _run("format", "-i", source, "-o", out, "-format", "NCHW", "-shape", "1,1,3,4")
    assert code == 0, output
    assert np.load(out / f"{source.name}.output.0.1x1x3x4.npy").shape == (1, 1, 3, 4)


def test_format_corrupt_file(tree: Path, tmp_path: Path) -> None:
    source = tree / STEP / f"Mul.net_mul.3.2.{STAMP + 2}"
    code, output = _run("format", "-i", source, "-format", "ND", "-o", tmp_path)
    assert code == 1
    assert output.startswith(f"Error: {source}: at byte ")


def test_format_bad_tensor_kind_is_a_usage_error(tree: Path, tmp_path: Path) -> None:
    source = tree / STEP / f"Conv2D.net_conv.1.2.{STAMP}"
    code, _ = _run("format", "-i", source, "-format", "ND", "-tensor", "weights", "-o", tmp_path)
    assert code == 2


def test_default_shape_rules() -> None:
    assert convert.default_shape((1, 20, 5, 7), Format.NC1HWC0, Format.NCHW) == (1, 20, 5, 7)
    assert convert.default_shape((1, 20, 5, 7), Format.NC1HWC0, Format.NHWC) == (1, 5, 7, 20)
    assert convert.default_shape((8, 3, 2, 2), Format.FRACTAL_Z, Format.HWCN) == (2, 2, 3, 8)
    assert convert.default_shape((17, 40), Format.FRACTAL_NZ, Format.ND) == (17, 40)
    assert convert.default_shape((17, 40), Format.FRACTAL_NZ, Format.NCHW) is None
    assert convert.default_shape((), Format.ND, Format.ND) is None


# --------------------------------------------------------------------------- CANN script spelling


def test_script_spelling_offline_to_numpy_is_dump2npy(tree: Path, tmp_path: Path) -> None:
    code, script = _run("-type", "offline", "-target", "numpy", "-i", tree, "-o", tmp_path / "a")
    assert code == 0, script
    code, native = _run("dump2npy", "-i", tree, "-o", tmp_path / "b")
    assert code == 0, native
    written = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.npy"))
    assert written == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*.npy"))
    assert len(written) == 5


def test_script_spelling_golden_to_dump_is_npy2dump(tmp_path: Path) -> None:
    golden = tmp_path / "golden"
    golden.mkdir()
    np.save(golden / "conv1_Conv2D.0.1700000000000001.npy", ACT)
    code, output = _run("-type", "tf", "-target", "dump", "-i", golden, "-o", tmp_path / "out")
    assert code == 0, output
    dump = read_dump(tmp_path / "out" / "Golden.conv1_Conv2D.0.0.1700000000000001")
    assert dump.outputs[0].array().tobytes() == ACT.tobytes()


def test_script_spelling_caffe_pb_goldens_to_numpy(tmp_path: Path) -> None:
    from dumpcmp.proto._gen import dump_data_pb2

    golden = tmp_path / "golden"
    golden.mkdir()
    message = dump_data_pb2.DumpData(version="1.0", dump_time=STAMP, op_name="conv1")
    item = message.output.add(data_type=int(DataType.DT_FLOAT), format=int(Format.NCHW))
    item.shape.dim.extend(ACT.shape)
    item.original_shape.dim.extend(ACT.shape)
    item.data = ACT.astype(np.float32).tobytes()
    item.size = len(item.data)
    (golden / "conv1.0.1700000000000001.pb").write_bytes(message.SerializeToString())
    (golden / "broken.0.1700000000000002.pb").write_bytes(b"\x00junk")
    code, output = _run("-type", "caffe", "-target", "numpy", "-i", golden, "-o", tmp_path / "out")
    assert code == 0, output
    converted = np.load(tmp_path / "out" / "conv1.0.1700000000000001.npy", allow_pickle=False)
    assert np.array_equal(converted, ACT.astype(np.float32))
    assert f"skipped {golden / 'broken.0.1700000000000002.pb'}: " in output
    assert output.splitlines()[-1] == f"converted 1 golden file into {tmp_path / 'out'}; skipped 1 file"


def test_script_spelling_caffe_to_numpy_of_npy_goldens_says_why_nothing_converts(tmp_path: Path) -> None:
    golden = tmp_path / "golden"
    golden.mkdir()
    np.save(golden / "conv1.0.1700000000000001.npy", ACT)
    code, output = _run("-type", "caffe", "-target", "numpy", "-i", golden, "-o", tmp_path / "out")
    assert code == 1 and len(output.strip().splitlines()) == 1, output
    assert output.startswith(f"Error: {golden}: no caffe/TF golden dumps")
    assert "conv1.0.1700000000000001.npy: they are numpy already" in output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["-type", "offline", "-target", "dump", "-i", "IN", "-o", "OUT"],
            "-type offline files are dump files",
        ),
        (["-type", "offline", "dump2npy", "-i", "IN", "-o", "OUT"], "-type replaces the subcommand"),
        (["-type", "offline"], "-type needs -i INPUT and -o OUTPUT"),
        (["-i", "IN", "dump2npy", "-o", "OUT"], "-i/-o before the subcommand need -type"),
    ],
)
def test_script_spelling_mistakes_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    paths = {"IN": str(tmp_path), "OUT": str(tmp_path / "out")}
    code, output = _run(*(paths.get(a, a) for a in args))
    assert code == 1
    assert output.startswith("Error: ") and message in output
    assert len(output.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_script_spelling_unknown_type_is_a_usage_error(tmp_path: Path) -> None:
    code, output = _run("-type", "onnx", "-i", tmp_path, "-o", tmp_path / "out")
    assert code == 2
    assert "onnx" in output
    assert "Traceback" not in output


def test_dump2npy_takes_names_with_every_character_ge_keeps(tmp_path: Path) -> None:
    step = tmp_path / "dumps" / STEP
    one = [DumpTensor.from_array(TensorKind.OUTPUT, 0, np.arange(3, dtype=np.float32))]
    _write(step / f"Add.ln_add:0.17.2.{STAMP}", [], one, op_name="ln/add:0")
    _write(step / f"MatMul.层_1(x)+y.3.2.{STAMP + 1}", [], one)
    _write(step / f"Add.a b.4.2.{STAMP + 2}", [], one)  # a space: no GE name, reported
    code, output = _run("dump2npy", "-i", tmp_path / "dumps", "-o", tmp_path / "out")
    assert code == 0, output
    assert (tmp_path / "out" / STEP / f"Add.ln_add:0.17.2.{STAMP}.output.0.npy").is_file()
    assert (tmp_path / "out" / STEP / f"MatMul.层_1(x)+y.3.2.{STAMP + 1}.output.0.npy").is_file()
    assert f"skipped {step / f'Add.a b.4.2.{STAMP + 2}'}: not a dump file name" in output


@pytest.mark.parametrize("empty", ["-i", "-o"])
def test_script_spelling_refuses_an_empty_path(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, empty: str
) -> None:
    """``-i ''`` is not the current directory (which here holds dumps that would convert) nor
    ``-o ''`` the place to write."""
    monkeypatch.chdir(tree)
    before = sorted(tree.rglob("*"))
    paths = {"-i": str(tree), "-o": str(tmp_path / "out"), empty: ""}
    code, output = _run("-type", "offline", "-target", "numpy", "-i", paths["-i"], "-o", paths["-o"])
    assert code == 2
    assert output.splitlines() == [f"Error: {empty}: empty path (give a file or directory; '.' for this one)"]
    assert sorted(tree.rglob("*")) == before
    assert not (tmp_path / "out").exists()


def test_dump2npy_on_a_full_disk_stops_with_one_line(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each tensor was "skipped" with the disk's error and the run ended with exit 0.
    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "save", full_disk)
    code, output = _run("dump2npy", "-i", tree, "-o", tmp_path / "out")
    assert code == 1, output
    *skipped, line = output.splitlines()  # the tree's unreadable files, named before the work
    assert all(text.startswith("skipped ") for text in skipped) and "Traceback" not in output
    assert line.startswith(f"Error: cannot write {tmp_path / 'out'}/") and line.endswith(
        ": No space left on device"
    )


def test_dump2npy_names_a_tensor_once_in_its_reason(tmp_path: Path) -> None:
    source = _conv_file(tmp_path / "in" / f"Conv2D.conv.1.2.{STAMP}")
    dump = read_dump(source)
    write_dump(source, DumpFile("", Layout.V2, "2.0", STAMP, dump.op_name, inputs=dump.inputs,
                                outputs=(replace(dump.outputs[0], format=67),)))  # fmt: skip
    code, output = _run("dump2npy", "-i", tmp_path / "in", "-o", tmp_path / "out")
    assert code == 0, output
    assert f"{source}: output:0: unknown format 67 in the dump header" in output.splitlines()[0]


def test_dump2npy_that_converts_nothing_leaves_no_output_directory(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / f"Add.a.1.2.{STAMP}").write_bytes(b"\x00" * 5)
    code, _ = _run("dump2npy", "-i", tmp_path / "in", "-o", tmp_path / "out" / "npy")
    assert code == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


def test_dump2npy_keeps_an_output_directory_that_was_there(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / f"Add.a.1.2.{STAMP}").write_bytes(b"\x00" * 5)
    (tmp_path / "out").mkdir()
    _run("dump2npy", "-i", tmp_path / "in", "-o", tmp_path / "out")
    assert (tmp_path / "out").is_dir()


def _files(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_dump2npy_into_an_output_of_an_earlier_conversion_is_refused_before_converting(
    tree: Path, tmp_path: Path
) -> None:
    """Converting again after a file went bad would overwrite the good files and keep the bad
    one's npy of the first run: the output would mix two runs. One line, nothing touched."""
    out = tmp_path / "npy"
    assert _run("dump2npy", "-i", tree, "-o", out)[0] == 0
    (tree / STEP / f"Add.net_add.2.2.{STAMP + 1}").write_bytes(b"\x00" * 5)  # corrupt now
    before = _files(out)
    code, output = _run("dump2npy", "-i", tree, "-o", out)
    assert code == 1 and "Traceback" not in output
    assert output.splitlines()[-1] == (
        f"Error: -o {out} already holds 5 .npy files (such as "
        f"{STEP / f'Add.net_add.2.2.{STAMP + 1}.output.0.npy'}) that this conversion would mix with its own: "
        "give a new or empty directory, or remove them first"
    )
    assert "converted" not in output
    assert _files(out) == before
    # Other files do not count: an -o holding notes or the dump tree itself is fine.
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("mine")
    assert _run("dump2npy", "-i", tree, "-o", tmp_path / "notes")[0] == 0


def test_npy2dump_into_an_output_of_an_earlier_conversion_is_refused(tmp_path: Path) -> None:
    np.save(tmp_path / "fc.0.1700000000000001.npy", np.ones(3, np.float32))
    assert _run("npy2dump", "-i", tmp_path / "fc.0.1700000000000001.npy", "-o", tmp_path / "d")[0] == 0
    before = _files(tmp_path / "d")
    code, output = _run("npy2dump", "-i", tmp_path / "fc.0.1700000000000001.npy", "-o", tmp_path / "d")
    assert code == 1 and "Traceback" not in output
    assert output.splitlines() == [
        f"Error: -o {tmp_path / 'd'} already holds 1 dump file (such as Golden.fc.0.0.1700000000000001) "
        "that this conversion would mix with its own: give a new or empty directory, or remove them first"
    ]
    assert _files(tmp_path / "d") == before


def test_format_never_overwrites_an_earlier_result(tree: Path, tmp_path: Path) -> None:
    source = tree / STEP / f"Conv2D.net_conv.1.2.{STAMP}"
    out = tmp_path / "fmt"
    assert _run("format", "-i", source, "-format", "ND", "-o", out)[0] == 0
    target = out / f"{source.name}.output.0.3x4.npy"
    target.write_bytes(b"the user's own file")
    code, output = _run("format", "-i", source, "-format", "NCHW", "-shape", "3,4,1,1", "-o", out)
    assert code == 0, output  # another shape: another name
    code, output = _run("format", "-i", source, "-format", "ND", "-o", out)
    assert code == 1 and "Traceback" not in output
    assert output.splitlines() == [f"Error: {target} already exists: give another -o, or remove it first"]
    assert target.read_bytes() == b"the user's own file"
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [target.name, f"{source.name}.output.0.3x4x1x1.npy"]
    )


@pytest.mark.parametrize(
    ("setup", "holds"),
    [
        ("golden", "it holds .npy files such as sub/conv.0.1700000000000001.npy: golden data? "
                   "(npy2dump converts those)"),
        ("notes", "it holds 2 files such as a.txt, none a dump file"),
        ("empty", "the directory holds no files"),
    ],
)  # fmt: skip
def test_dump2npy_of_a_directory_without_dump_files_says_what_it_holds(
    tmp_path: Path, setup: str, holds: str
) -> None:
    source = tmp_path / "in"
    (source / "sub").mkdir(parents=True)
    if setup == "golden":
        np.save(source / "sub" / "conv.0.1700000000000001.npy", np.ones(3, np.float32))
    elif setup == "notes":
        (source / "a.txt").write_text("x")
        (source / "sub" / "b.json").write_text("{}")
    code, output = _run("dump2npy", "-i", source, "-o", tmp_path / "out")
    assert code == 1
    assert output.splitlines() == [f"Error: {source}: no dump files to convert; {holds}"]
    assert not (tmp_path / "out").exists()


def test_an_npy_given_as_a_dump_file_is_named_for_what_it_is(tmp_path: Path) -> None:
    path = tmp_path / "x.npy"
    np.save(path, np.ones(3, np.float32))
    code, output = _run("format", "-i", path, "-format", "ND", "-o", tmp_path / "out")
    assert code == 1
    assert output.splitlines() == [f"Error: {path} is a numpy .npy file, not a CANN dump file"]
    assert not (tmp_path / "out").exists()
    code, output = _run("dump2npy", "-i", path, "-o", tmp_path / "out")
    assert code == 1
    assert output.splitlines()[0] == f"skipped {path}: a numpy .npy file, not a CANN dump file"
    assert not (tmp_path / "out").exists()
