"""``dumpcmp compare`` as users of the CANN scripts type it, and its bad inputs: one line, no leftovers."""

from __future__ import annotations

import csv
import errno
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner, Result

import dumpcmp.host.offline as offline
import dumpcmp.host.sinks.csv_file as csv_file
import dumpcmp.host.summary as summary
from dumpcmp.cli import app
from dumpcmp.commands._flags import FlagError, checked_args
from dumpcmp.errors import OutputError

runner = CliRunner()
PROGRESS = re.compile(r"^comparing dump files: \d+/\d+$")


@pytest.fixture
def dumps(shared_fixtures: Path) -> Path:
    return shared_fixtures / "dumps" / "20261121093000"


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Run from an empty directory, so a misread flag's stray output would show up in it."""
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    yield work


def compare(*args: object) -> Result:
    return runner.invoke(app, ["compare", *(str(a) for a in args)])


def one_error_line(result: Result, code: int, text: str) -> None:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    # Progress lines ("comparing dump files: 3/5") go to stderr as the run goes; the rest is the story.
    lines = [line for line in result.output.splitlines() if line.strip() and not PROGRESS.match(line)]
    assert len(lines) == 1, result.output
    assert text in lines[0], result.output


def every_file(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


# ---------------------------------------------------------------------------- spellings


def test_msprobe_overflow_spelling_adds_the_column(dumps: Path, in_tmp: Path) -> None:
    result = compare("-tp", dumps, "-gp", dumps, "-overflow_detection", "-o", in_tmp / "out")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in in_tmp.iterdir()) == ["out"]  # no "verflow_detection" directory
    (table,) = (in_tmp / "out").glob("result_*.csv")
    assert "OverFlow" in next(csv.reader(table.read_text().splitlines()))


def test_compare_vector_spellings_are_the_same_run(dumps: Path, tmp_path: Path) -> None:
    ours = compare("-tp", dumps, "-gp", dumps, "-o", tmp_path / "a")
    theirs = compare("-l", dumps, "-r", dumps, "-o", tmp_path / "b")
    assert ours.exit_code == theirs.exit_code == 0, ours.output + theirs.output
    (a,) = (tmp_path / "a").glob("result_*.csv")
    (b,) = (tmp_path / "b").glob("result_*.csv")
    assert a.read_text() == b.read_text()


def test_single_dash_long_names_are_read_as_long_options(dumps: Path, tmp_path: Path) -> None:
    result = compare("-target_path", dumps, "-golden_path", dumps, "-output_path", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert len(list((tmp_path / "out").glob("result_*.csv"))) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-tp", ""], "Error: -tp: empty path"),
        (["-tp=", ""], "Error: -tp: empty path"),
        (
            ["-overflow_detectoin"],
            "Error: no such option: -overflow_detectoin; did you mean --overflow_detection?",
        ),
        (["-ofoo"], "Error: -ofoo: write the value of -o after a space: -o foo"),
        (["-j4"], "Error: -j4: write the value of -j after a space: -j 4"),
        (["-xyz"], "Error: no such option: -xyz"),
    ],
)
def test_misread_flags_are_one_line_and_no_run(
    dumps: Path, in_tmp: Path, args: list[str], message: str
) -> None:
    target = ["-tp", str(dumps)] if args[0] not in ("-tp", "-tp=") else []
    result = compare(*target, "-gp", dumps, *args)
    one_error_line(result, 2, message)
    assert list(in_tmp.iterdir()) == []


def test_glued_equals_value_of_a_short_option_is_the_value(dumps: Path, tmp_path: Path) -> None:
    result = compare("-tp", dumps, "-gp", dumps, f"-o={tmp_path / 'out'}")
    assert result.exit_code == 0, result.output
    assert len(list((tmp_path / "out").glob("result_*.csv"))) == 1


def test_checked_args_leaves_values_alone() -> None:
    from dumpcmp.cli import load_command

    params = load_command("compare").params
    args = ["-d", "-weird_op_name", "-tp", "x", "--", "-overflow"]
    assert checked_args(params, args) == args  # values and anything after "--" are not flags
    with pytest.raises(FlagError):
        checked_args(params, ["-tpx"])


# ---------------------------------------------------------------------------- output directory


def test_output_path_that_is_a_file_is_refused_before_work(
    dumps: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "taken"
    blocker.write_text("mine")
    monkeypatch.setattr(offline, "compare_files", _never)
    one_error_line(compare("-tp", dumps, "-gp", dumps, "-o", blocker), 1, "is a file, not a directory")
    assert blocker.read_text() == "mine"
    one_error_line(
        compare("-tp", dumps, "-gp", dumps, "-o", blocker / "sub"), 1, "cannot create the directory"
    )
    assert every_file(tmp_path) == ["taken"]


def test_wrong_target_path_makes_no_output_directory(dumps: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    one_error_line(compare("-tp", tmp_path / "nosuch", "-gp", dumps, "-o", out), 1, "does not exist")
    assert not out.exists()
    one_error_line(compare("-tp", dumps, "-gp", dumps, "-o", out, "-d", "nosuchop"), 1, "nosuchop")
    assert not out.exists()


def test_a_dump_tree_against_one_golden_file_is_refused(dumps: Path, tmp_path: Path) -> None:
    golden = tmp_path / "one.npy"
    golden.write_bytes(b"")
    result = compare("-tp", dumps, "-gp", golden, "-o", tmp_path / "out")
    one_error_line(result, 1, "is a dump tree and -gp")
    assert not (tmp_path / "out").exists()


def _never(*_: object) -> None:
    raise AssertionError("the comparison started although -o cannot be written")


def test_full_disk_is_one_line_and_leaves_nothing(
    dumps: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(handle: object, **_: object) -> object:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(csv_file.csv, "writer", full_disk)
    out = tmp_path / "out"
    one_error_line(compare("-tp", dumps, "-gp", dumps, "-o", out), 1, "No space left on device")
    assert every_file(out) == []  # no result, no hidden .part


def test_two_compares_in_one_second_keep_both_results(
    dumps: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(offline.time, "strftime", lambda *_: "20260101000000")
    first = compare("-tp", dumps, "-gp", dumps, "-o", tmp_path, "--xlsx")
    assert first.exit_code == 0, first.output
    kept = (tmp_path / "result_20260101000000.csv").read_bytes()
    second = compare("-tp", dumps, "-gp", dumps, "-o", tmp_path, "--xlsx")
    assert second.exit_code == 0, second.output
    assert every_file(tmp_path) == [
        "result_20260101000000.csv",
        "result_20260101000000.xlsx",
        "result_20260101000000_1.csv",
        "result_20260101000000_1.xlsx",
    ]
    assert (tmp_path / "result_20260101000000.csv").read_bytes() == kept
    assert "result_20260101000000_1.csv" in second.output


# ---------------------------------------------------------------------------- Ctrl-C


def test_ctrl_c_while_writing_says_so_and_leaves_no_partial_file(
    dumps: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Interrupted:
        def __init__(self, handle: object, **_: object) -> None:
            self.handle = handle

        def writerow(self, row: list[str]) -> None:
            pass

        def writerows(self, rows: object) -> None:
            raise KeyboardInterrupt

    monkeypatch.setattr(csv_file.csv, "writer", Interrupted)
    out = tmp_path / "out"
    one_error_line(compare("-tp", dumps, "-gp", dumps, "-o", out), 130, "interrupted: the run did not finish")
    assert every_file(out) == []


def test_ctrl_c_outside_the_work_is_one_line_too(
    dumps: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupt(*_: object) -> list[str]:
        raise KeyboardInterrupt

    monkeypatch.setattr(summary, "summarize", interrupt)
    result = compare("-tp", dumps, "-gp", dumps, "-o", tmp_path)
    assert result.exit_code == 130
    assert "Traceback" not in result.output
    assert result.output.splitlines()[-1].startswith("interrupted: ")


# ---------------------------------------------------------------------------- -d


def test_unknown_detail_op_is_refused_before_the_compare(
    dumps: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(offline, "compare_files", _never)
    result = compare("-tp", dumps, "-gp", dumps, "-o", tmp_path, "-d", "nosuchop")
    one_error_line(result, 1, "op 'nosuchop' (-d) is not in the target dump")
    assert every_file(tmp_path) == []


def test_missing_detail_index_is_refused_before_the_compare(
    dumps: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(offline, "compare_files", _never)
    result = compare(
        "-tp", dumps, "-gp", dumps, "-o", tmp_path, "-d", "stem_conv1_Conv2D_fused_relu", "-i", "7"
    )
    one_error_line(result, 1, "op 'stem_conv1_Conv2D_fused_relu' has no output 7 (-i): its dump has 1")
    assert every_file(tmp_path) == []


def test_detail_of_an_existing_tensor_is_written(dumps: Path, tmp_path: Path) -> None:
    result = compare("-tp", dumps, "-gp", dumps, "-o", tmp_path, "-d", "stem_conv1_Conv2D_fused_relu")
    assert result.exit_code == 0, result.output
    assert any(name.endswith("_summary.txt") for name in every_file(tmp_path))


def test_detail_never_reshapes_a_mismatched_golden(tmp_path: Path) -> None:
    import numpy as np

    from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, TensorKind, write_dump

    out = np.arange(6, dtype=np.float32).reshape(2, 3)
    dump = write_dump(
        tmp_path / "Add.net_add.1.2.1700000000000000",
        DumpFile(
            "",
            Layout.V2,
            "2.0",
            1700000000000000,
            "net/add",
            outputs=(DumpTensor.from_array(TensorKind.OUTPUT, 0, out),),
        ),
    )
    golden = tmp_path / "net_add.0.1700000000000000.npy"
    np.save(golden, out.reshape(3, 2))  # same six values, another shape
    result = compare("-tp", dump, "-gp", golden, "-o", tmp_path / "out", "-d", "net/add")
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert "shape mismatch [2, 3] vs [3, 2]" in result.output.splitlines()[-1]
    assert not list((tmp_path / "out").glob("*_summary.txt"))
    # The results were written all the same, and the run says where before it says why not.
    (written,) = (tmp_path / "out").glob("result_*.csv")
    assert f"result: {written}" in result.output.splitlines()


def test_version() -> None:
    from dumpcmp import __version__

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"dumpcmp {__version__}\n"


def test_error_lines_print_names_as_given(tmp_path: Path) -> None:
    # rich would print ":x:" as an emoji: a path or op name must come back as the user wrote it.
    missing = tmp_path / "run:x:1"
    one_error_line(compare("-tp", missing, "-gp", tmp_path), 1, f"target path {missing} does not exist")


# ---------------------------------------------------------------------------- msaccucmp spellings, thresholds

TORCHAIR = ["-m", "torchair"]


def test_msaccucmp_out_is_the_output_directory(dumps: Path, in_tmp: Path) -> None:
    result = compare("-tp", dumps, "-gp", dumps, "-out", "res")
    assert result.exit_code == 0, result.output
    assert [p.name for p in in_tmp.iterdir()] == ["res"]
    assert len(list((in_tmp / "res").glob("result_*.csv"))) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-out", ""], "Error: -o: empty path"),
        (["-map"], "Error: no such option: -map (a CANN script's option; this command has none like it)"),
        (["-max"], "Error: no such option: -max (a CANN script's option; this command has none like it)"),
    ],
)
def test_a_cann_word_is_never_read_as_a_glued_value(
    dumps: Path, in_tmp: Path, args: list[str], message: str
) -> None:
    one_error_line(compare("-tp", dumps, "-gp", dumps, *args), 2, message)
    assert list(in_tmp.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cosine-threshold", "nan"], "--cosine-threshold nan: must be a finite number in [-1, 1]"),
        (["--cosine-threshold", "5"], "--cosine-threshold 5: must be a finite number in [-1, 1]"),
        (["--red-threshold", "-1"], "--red-threshold -1: must be a finite number >= 0"),
        (["--euclidean-threshold", "inf"], "--red-threshold inf: must be a finite number >= 0"),
        (["--kl-threshold", "nan"], "--kl-threshold nan: must be a finite number >= 0"),
        (["--rmse-threshold", "-inf"], "--rmse-threshold -inf: must be a finite number >= 0"),
        (["--mre-threshold", "nan"], "--mre-threshold nan: must be a finite number >= 0"),
        (["--stats-threshold", "2.5"], "--stats-threshold 2.5: must be a finite number in [0, 2]"),
        (
            ["-m", "torchair", "--cosine-threshold", "-1.5"],
            "--cosine-threshold -1.5: must be a finite number",
        ),
        (
            ["-m", "torchair", "--max-rel-threshold", "0"],
            "--max-rel-threshold 0: must be a finite number > 0",
        ),
        (
            ["-m", "torchair", "--thousandth-bound", "nan"],
            "--thousandth-bound nan: must be a finite number > 0",
        ),
        (
            [*TORCHAIR, "--five-thousandth-bound", "-0.1"],
            "--five-thousandth-bound -0.1: must be a finite number > 0",
        ),
        (
            [*TORCHAIR, "--summary-mode", "statistics", "--stats-threshold", "nan"],
            "--stats-threshold nan: must be a finite number in [0, 2]",
        ),
    ],
)
def test_a_threshold_outside_its_range_is_refused_before_work(
    dumps: Path, in_tmp: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.setattr(offline, "compare_files", _never)
    one_error_line(compare("-tp", dumps, "-gp", dumps, *args), 1, f"Error: {message}")
    assert list(in_tmp.iterdir()) == []


@pytest.mark.parametrize(
    ("value", "ok"), [("-1", True), ("1", True), ("0.5", True), ("1.0001", False), ("-inf", False)]
)
def test_cosine_threshold_range_ends(dumps: Path, tmp_path: Path, value: str, ok: bool) -> None:
    result = compare("-tp", dumps, "-gp", dumps, "-o", tmp_path, "--cosine-threshold", value)
    assert (result.exit_code == 0) is ok, result.output


@pytest.mark.parametrize(
    ("args", "options"),
    [(["-i", "3"], "-i"), (["-t", "input"], "-t"), (["--index", "0", "-t", "output"], "-i, -t")],
)
def test_detail_tensor_choice_without_detail_is_refused(
    dumps: Path, in_tmp: Path, args: list[str], options: str
) -> None:
    result = compare("-tp", dumps, "-gp", dumps, *args)
    one_error_line(result, 1, f"Error: {options}: a choice of -d OP's tensor; no -d was given")
    assert list(in_tmp.iterdir()) == []


def test_a_compare_that_could_write_nothing_leaves_no_output_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The disk refuses the first result file: one line, exit 1, and the -o it made is gone again.
    from dumpcmp.host.sinks import csv_file

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OutputError("cannot write result.csv: No space left on device")

    monkeypatch.setattr(csv_file, "write_new_table", full_disk)
    target = tmp_path / "npu"
    target.mkdir()
    (target / "Add.a.1.2.1700000000000000").write_bytes(b"\x00" * 5)
    golden = tmp_path / "golden"
    golden.mkdir()
    np.save(golden / "a.0.1700000000000000.npy", np.ones(3, np.float32))
    (tmp_path / "rule.json").write_text('{"graph": [{"op": []}], "name": "m"}')
    out = tmp_path / "results" / "run1"
    result = CliRunner().invoke(app, ["compare", "-tp", str(target), "-gp", str(golden), "-fr",
                                      str(tmp_path / "rule.json"), "-o", str(out)])  # fmt: skip
    assert result.exit_code == 1, result.output
    assert result.output.splitlines()[-1] == "Error: cannot write result.csv: No space left on device"
    assert not (tmp_path / "results").exists()


def test_detail_of_an_op_run_in_many_steps_says_which_step_it_holds(tmp_path: Path) -> None:
    # Only the first step's tensor is written; the run did not say so.
    sim = tmp_path / "s"
    made = CliRunner().invoke(app, ["sim", "run", "zoo:small_cnn", "--out", str(sim), "--steps", "2"])
    assert made.exit_code == 0, made.output
    result = compare("-tp", sim / "npu", "-gp", sim / "golden", "-fr", sim / "fusion_rule.json",
                     "-o", tmp_path / "out", "-d", "/stem/pool/MaxPool")  # fmt: skip
    assert result.exit_code == 0, result.output
    details = [line for line in result.output.splitlines() if line.startswith("detail")]
    where = "detail (step 0, the first of the 2 steps it ran in; it is within the thresholds in each): "
    assert details and all(line.startswith(where) for line in details)


def test_detail_of_an_op_run_in_many_steps_is_of_the_first_step_where_it_diverges(tmp_path: Path) -> None:
    # -d wrote step 0's elements (healthy) while the op diverged in step 1 only.
    for name, fault in (("clean", []), ("bad", ["--inject", "/block2/Add=bias:0.5"])):
        made = CliRunner().invoke(
            app, ["sim", "run", "zoo:small_cnn", "--out", str(tmp_path / name), "--steps", "2", *fault]
        )
        assert made.exit_code == 0, made.output
    (clean_steps,) = (tmp_path / "clean" / "npu").glob("*/0/small_cnn/1")
    (bad_steps,) = (tmp_path / "bad" / "npu").glob("*/0/small_cnn/1")
    shutil.rmtree(clean_steps / "1")
    shutil.copytree(bad_steps / "1", clean_steps / "1")
    sim = tmp_path / "clean"
    result = compare("-tp", sim / "npu", "-gp", sim / "golden", "-fr", sim / "fusion_rule.json",
                     "-o", tmp_path / "out", "-d", "/block2/Add")  # fmt: skip
    assert result.exit_code == 0, result.output
    details = [line for line in result.output.splitlines() if line.startswith("detail")]
    where = "detail (step 1, the first of the 2 steps it ran in where it is beyond the thresholds): "
    assert details and all(line.startswith(where) for line in details), result.output
