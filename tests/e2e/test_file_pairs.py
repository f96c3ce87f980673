"""File against file: ``compare -tp a.npy -gp b.npy``, and npy against a dump file either way."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from typer.testing import CliRunner

from dumpcmp.cli import app
from dumpcmp.proto.codec import read_dump

runner = CliRunner()
DUMP_NAME = "Conv2D.stem_conv1_Conv2D_fused_relu.11.2.1763700000001111"


def compare_files(
    target: Path, golden: Path, out: Path, *extra: str
) -> tuple[int, str, list[dict[str, str]]]:
    result = runner.invoke(app, ["compare", "-m", "offline_data", "-tp", str(target), "-gp", str(golden),
                                 "-o", str(out), *extra])  # fmt: skip
    assert "Traceback" not in result.output
    rows: list[dict[str, str]] = []
    for path in out.glob("result_*.csv"):
        with path.open(newline="") as handle:
            rows = list(csv.DictReader(handle))
    return result.exit_code, result.output, rows


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(1)
    golden = rng.standard_normal((2, 3, 8)).astype(np.float32)
    np.save(tmp_path / "a.npy", golden + 0.001 * rng.standard_normal(golden.shape).astype(np.float32))
    np.save(tmp_path / "b.npy", golden)
    return tmp_path / "a.npy", tmp_path / "b.npy"


def test_npy_against_npy_is_one_row(pair: tuple[Path, Path], tmp_path: Path) -> None:
    code, output, rows = compare_files(*pair, tmp_path / "out")
    assert code == 0, output
    (row,) = rows
    assert (row["NPUDump"], row["GroundTruth"], row["Shape"]) == ("a.npy", "b.npy", "[2,3,8]")
    assert float(row["CosineSimilarity"]) > 0.9999
    x, y = (np.load(p).astype(np.float64) for p in pair)
    assert float(row["MaxAbsoluteError"]) == pytest.approx(np.abs(x - y).max(), abs=1e-6)
    assert "target tensors: 1, compared: 1," in output


def test_npy_shapes_must_be_equal(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.ones((2, 3), np.float32))
    np.save(tmp_path / "b.npy", np.ones((3, 2), np.float32))
    code, output, rows = compare_files(tmp_path / "a.npy", tmp_path / "b.npy", tmp_path / "out")
    (row,) = rows
    assert row["CosineSimilarity"] == "NaN"
    assert row["CompareFailReason"] == "shape mismatch [2, 3] vs [3, 2]"
    assert code == 1  # nothing was compared: said in one line
    assert "Error: nothing compared: none of the 1 target tensors has numbers" in output


@pytest.mark.parametrize(
    ("cut", "why"),
    [
        (lambda data: b"junk" * 40, "not a numpy .npy file"),
        (lambda data: data[:100], "damaged .npy header"),
        (lambda data: data[:-8], "damaged or truncated .npy file"),
    ],
    ids=["junk", "header cut", "payload cut"],
)
def test_an_unreadable_npy_target_is_named_as_an_npy_file(
    pair: tuple[Path, Path], tmp_path: Path, cut: Callable[[bytes], bytes], why: str
) -> None:
    bad = tmp_path / "bad.npy"
    bad.write_bytes(cut(pair[0].read_bytes()))
    code, output, rows = compare_files(bad, pair[1], tmp_path / "out")
    assert code == 1
    assert "dump file" not in output
    assert "target tensors: 1, compared: 0, not compared: 0, unreadable npy files: 1," in output
    assert f"unreadable npy file {bad}: {why}" in output
    error = output.strip().splitlines()[-1]
    assert error.startswith(f"Error: nothing compared: the npy file {bad} is unreadable ({why}")
    assert error.endswith("; check -tp")
    (row,) = rows
    assert row["CompareFailReason"].startswith(f"{bad}: {why}")


def test_npy_target_against_a_golden_directory_is_one_line(pair: tuple[Path, Path], tmp_path: Path) -> None:
    code, output, _ = compare_files(pair[0], tmp_path, tmp_path / "out")
    assert code == 1
    assert "an .npy target is compared with one golden file" in output


def test_npy_against_a_dump_file(shared_fixtures: Path, tmp_path: Path) -> None:
    dumps = shared_fixtures / "dumps"
    (dump,) = dumps.rglob(DUMP_NAME)
    expected = dumps / "expected" / f"{DUMP_NAME}.output.0.npy"
    code, output, rows = compare_files(expected, dump, tmp_path / "out")
    assert code == 0, output
    (row,) = rows
    assert row["GroundTruth"] == dump.name
    assert row["CosineSimilarity"] == "1.000000" and row["MaxAbsoluteError"] == "0.000000"


def test_dump_file_against_a_dump_file_of_another_name(shared_fixtures: Path, tmp_path: Path) -> None:
    (dump,) = (shared_fixtures / "dumps").rglob(DUMP_NAME)
    renamed = tmp_path / DUMP_NAME.replace("stem_conv1", "other")
    renamed.write_bytes(dump.read_bytes())
    code, output, rows = compare_files(dump, renamed, tmp_path / "out")
    assert code == 0, output
    # Every input and output of the file, each paired with its namesake in the other file.
    tensors = read_dump(dump)
    assert len(rows) == len(tensors.inputs) + len(tensors.outputs)
    assert {row["CosineSimilarity"] for row in rows} == {"1.000000"}


def test_golden_file_that_is_neither_npy_nor_dump_is_one_line(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    junk = tmp_path / "golden.txt"
    junk.write_text("hello")
    code, output, _ = compare_files(pair[0], junk, tmp_path / "out")
    assert code == 1
    assert f"golden file {junk} is neither an .npy file nor a dump file" in output


def test_a_bf16_target_against_its_raw_bits_as_uint16_is_not_compared_as_numbers(
    shared_fixtures: Path, tmp_path: Path
) -> None:
    # The fixture's expected bf16 output is its bit pattern saved as uint16: compared as integers
    # it gave cosine -0.41 for a tensor that is exactly right.
    name = "MatMulV2.head_fc_MatMul.12.2.1763700000002222"
    (dump,) = (shared_fixtures / "dumps").rglob(name)
    bits = shared_fixtures / "dumps" / "expected" / f"{name}.output.0.npy"
    code, output, (row,) = compare_files(dump, bits, tmp_path / "bits")
    assert code == 1, output
    assert row["CosineSimilarity"] == "NaN"
    assert "holds uint16 integers where the target is DT_BF16: the float's raw bits?" in output
    widened = tmp_path / "widened.npy"
    np.save(widened, np.load(bits).view(ml_dtypes.bfloat16).astype(np.float32))
    code, output, (row,) = compare_files(dump, widened, tmp_path / "float32")
    assert code == 0, output
    assert row["CosineSimilarity"] == "1.000000"


def test_a_diverging_npy_pair_is_named_without_a_gap(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.arange(1, 9, dtype=np.float32))
    np.save(tmp_path / "b.npy", np.arange(1, 9, dtype=np.float32)[::-1].copy())
    code, output, _ = compare_files(tmp_path / "a.npy", tmp_path / "b.npy", tmp_path / "out")
    assert code == 0, output
    assert "first divergence: step 0, index 0 a.npy (a.npy:output:0): " in output


def test_golden_files_given_as_the_target_say_so(tmp_path: Path) -> None:
    # "needs -fr/--fusion-rule-file" sent the user after the wrong option.
    golden = tmp_path / "golden"
    golden.mkdir()
    np.save(golden / "conv.0.1700000000000000.npy", np.ones(3, np.float32))
    code, output, _ = compare_files(golden, golden, tmp_path / "out")
    assert code == 1
    assert output == (
        f"Error: no dump files found under {golden} (it holds .npy files such as "
        "conv.0.1700000000000000.npy: golden data? -tp is the NPU dump, -gp the golden)\n"
    )


@pytest.mark.parametrize(
    ("target", "overflow"),
    [
        (np.array([1, 2, 65504, 3], np.float16), "YES"),
        (np.array([1, 2, np.inf, 3], np.float16), "YES"),
        (np.array([1, 2, 65472, 3], np.float16), "NO"),  # the largest float16 below 65504
        (np.array([1, 2, 65504, 3], np.float32), "NO"),  # only float16 tensors overflow
    ],
    ids=["max", "inf", "below", "float32"],
)
def test_an_npy_target_gets_the_overflow_check(tmp_path: Path, target: np.ndarray, overflow: str) -> None:
    # It was NaN (never checked) for every .npy target.
    np.save(tmp_path / "t.npy", target)
    np.save(tmp_path / "g.npy", target.astype(np.float32))
    code, output, (row,) = compare_files(tmp_path / "t.npy", tmp_path / "g.npy", tmp_path / "out",
                                         "-overflow_detection")  # fmt: skip
    assert code == 0, output
    assert row["OverFlow"] == overflow
    said = [line for line in output.splitlines() if line.startswith("float16 overflow")]
    if overflow == "YES":
        assert said == [
            "float16 overflow (±inf, NaN or |v| ≥ 65504) in 1 tensor; the first: step 0, index 0 t.npy "
            "(t.npy:output:0)"
        ]
    else:
        assert said == []


def test_detail_of_an_npy_target_is_refused_before_comparing(pair: tuple[Path, Path], tmp_path: Path) -> None:
    # -d was silently ignored: the user got a result and no detail files, and no word why.
    out = tmp_path / "out"
    code, output, _ = compare_files(*pair, out, "-d", "anything")
    assert code == 1
    assert output.splitlines() == [
        f"Error: -d anything: -tp {pair[0]} is an .npy file, one tensor with no ops to pick from; for -d, "
        "give -tp a dump file or a dump tree"
    ]
    assert not out.exists()


@pytest.mark.parametrize("side", ["target", "golden"])
def test_a_complex_npy_pair_is_a_row_saying_which_side(tmp_path: Path, side: str) -> None:
    # The run ended with "Error: offline_data metrics: unsupported dtype complex64" and no result.
    real = np.arange(8, dtype=np.float32)
    complex_ = (real + 1j).astype(np.complex64)
    np.save(tmp_path / "t.npy", complex_ if side == "target" else real)
    np.save(tmp_path / "g.npy", complex_ if side == "golden" else real)
    code, output, (row,) = compare_files(tmp_path / "t.npy", tmp_path / "g.npy", tmp_path / "out")
    reason = f"{side} tensor: unsupported dtype complex64"
    assert row["CompareFailReason"] == reason
    assert row["CosineSimilarity"] == row["MaxAbsoluteError"] == "NaN"
    assert row["DataType"] == ("DT_COMPLEX64" if side == "golden" else "DT_FLOAT")  # the golden's column
    assert code == 1  # nothing compared, as a tree of such tensors ends
    lines = output.splitlines()
    assert lines[-1] == (
        f"Error: nothing compared: none of the 1 target tensors has numbers (most often: {reason}); "
        "check that -tp and -gp are the same tensor"
    )
    assert [line for line in lines if line.startswith("Error")] == [lines[-1]]


def test_a_pair_whose_nan_sits_elsewhere_on_each_side_is_compared_and_named(tmp_path: Path) -> None:
    # NaN at different positions makes every metric NaN: the run was reported as "nothing
    # compared ... check that -tp and -gp are the same tensor", exit 1. It compared, and found NaN.
    values = np.linspace(1, 2, 50, dtype=np.float32)
    target, golden = values.copy(), values.copy()
    target[3], golden[4] = np.nan, np.nan
    np.save(tmp_path / "t.npy", target)
    np.save(tmp_path / "g.npy", golden)
    code, output, (row,) = compare_files(
        tmp_path / "t.npy", tmp_path / "g.npy", tmp_path / "out", "--advisor"
    )
    assert row["CosineSimilarity"] == row["MaxAbsoluteError"] == "NaN"  # the metrics as the spec gives them
    assert code == 0, output
    assert "nothing compared" not in output
    assert "target tensors: 1, compared: 1, not compared: 0," in output
    assert "tensors beyond thresholds (" in output
    lines = output.splitlines()
    appeared = "nan/inf appeared: 1 tensor holds NaN/inf where the golden does not; the first:"
    assert f"{appeared} step 0, index 0 t.npy (t.npy:output:0)" in lines
    (first,) = (line for line in lines if line.startswith("first divergence: step 0"))  # the summary's
    assert "t.npy (t.npy:output:0): CosineSimilarity NaN (target has 1 NaN" in first
    assert any(line.startswith("nan/inf appeared: op #0 t.npy") for line in lines)  # the advisor's finding
