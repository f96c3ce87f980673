"""``dumpcmp advise`` on a CSV, an xlsx, a directory of shards; ``compare --advisor``; bad input: one line."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np
import pytest
import xlsxwriter
from typer.testing import CliRunner, Result

from dumpcmp.cli import app
from dumpcmp.commands.sim import simulate
from tests.host.report.tables import OFFLINE_HEADER, offline

runner = CliRunner()
STAMP = "20261124010203"
ROWS = [
    offline(0, "conv1", "input", red=0.001),
    offline(0, "conv1", red=0.002),
    offline(1, "conv2_fused", "input", red=0.002),
    offline(1, "conv2_fused", cos=0.8, red=0.5, truth="conv2,bn2,relu2"),
    offline(2, "softmax", "input", cos=0.8, red=0.5),
    offline(2, "softmax", red=0.001),
]
LINE = (
    "first divergence: op #1 conv2_fused (originals: conv2, bn2, relu2) - inputs agree, output 0 does not; "
    "single-point"
)


def advise(*args: object) -> Result:
    return runner.invoke(app, ["advise", *(str(a) for a in args)])


def write_csv(path: Path, rows: list[list[str]] = ROWS) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([OFFLINE_HEADER, *rows])
    return path


def one_error_line(result: Result, text: str) -> None:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and text in lines[0], result.output


def files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_advise_a_csv_prints_findings_and_writes_them_beside_it(tmp_path: Path) -> None:
    result_file = write_csv(tmp_path / f"result_{STAMP}.csv")
    result = advise(result_file)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(LINE)
    text, data = tmp_path / f"advisor_{STAMP}.txt", tmp_path / f"advisor_{STAMP}.json"
    assert lines[-1] == f"advisor: {text}, {data}"
    assert text.read_text().splitlines() == lines[:-1]
    assert json.loads(data.read_text())["findings"][0]["originals"] == ["conv2", "bn2", "relu2"]
    # Again: the first advice stays, the second gets the next free name.
    assert advise(result_file).exit_code == 0
    assert (tmp_path / f"advisor_{STAMP}_1.txt").is_file() and text.read_text().startswith(LINE)


def test_the_advice_of_a_result_with_a_collision_suffix_keeps_the_suffix(tmp_path: Path) -> None:
    # Two compares into one directory in the same second: result_T_1.csv was advised as advisor_T
    # (or _2 once taken), so a run's advisor files named another run's result.
    write_csv(tmp_path / f"result_{STAMP}.csv")
    second = write_csv(tmp_path / f"result_{STAMP}_1.csv")
    assert advise(second).exit_code == 0
    assert files(tmp_path) == sorted(
        [f"result_{STAMP}.csv", f"result_{STAMP}_1.csv", f"advisor_{STAMP}_1.txt", f"advisor_{STAMP}_1.json"]
    )


def test_advise_an_xlsx_and_into_another_directory(tmp_path: Path) -> None:
    path = tmp_path / "mine.xlsx"
    book = xlsxwriter.Workbook(path)
    sheet = book.add_worksheet()
    for r, row in enumerate([OFFLINE_HEADER, *ROWS]):
        sheet.write_row(r, 0, row)
    book.close()
    result = advise(path, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(LINE)
    (text,) = (tmp_path / "out").glob("mine_advisor_*.txt")  # not a result_{stamp} name: stamped now
    assert text.with_suffix(".json").is_file()


def test_advise_a_directory_advises_every_shard(tmp_path: Path) -> None:
    write_csv(tmp_path / f"0_net_0_result_{STAMP}.csv")
    write_csv(tmp_path / f"0_net_1_result_{STAMP}.csv", [offline(0, "conv1", red=0.001)])
    (tmp_path / f"0_net_1_result_{STAMP}.xlsx").write_text("the csv's twin: not read")
    (tmp_path / "notes.txt").write_text("hello")
    result = advise(tmp_path)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    # The two steps are one run: one result, each finding once with the shards it holds in.
    assert lines[0] == (
        "shards: 2 (steps 0, 1), diverging: 1 (step 0); the first: step 0, "
        "first divergence at op #1 conv2_fused"
    )
    assert lines[1].startswith(LINE) and lines[1].endswith("[only in step 0]")
    assert (
        "network consistent: all 1 compared tensors agree - nothing to fix: every compared tensor is "
        "within the thresholds. [only in step 1]" in lines
    )
    assert [name for name in files(tmp_path) if "advisor" in name] == [
        f"advisor_{STAMP}.json",
        f"advisor_{STAMP}.txt",
    ]
    doc = json.loads((tmp_path / f"advisor_{STAMP}.json").read_text())
    assert doc["diverging"] == ["step 0"] and [s["label"] for s in doc["shards"]] == ["step 0", "step 1"]
    assert (
        doc["findings"][0]["shards"] == ["step 0"]
        and doc["shards"][1]["findings"][0]["kind"] == "network consistent"
    )


# Two steps of one network in one table, as ``host results --csv`` writes a multi-step session:
# step 0 goes wrong at op #2, step 1 at op #1. Read as one network, op #1 came first and step 0's
# fault was not reported at all.
STEP_0 = [
    offline(0, "conv1", red=0.001),
    offline(1, "conv2_fused", "input", red=0.001),
    offline(1, "conv2_fused", red=0.001),
    offline(2, "softmax", "input", red=0.001),
    offline(2, "softmax", cos=0.8, red=0.5),
]
SHARDED = [["0", "net", "0", *row] for row in STEP_0] + [["0", "net", "1", *row] for row in ROWS]


@pytest.mark.parametrize("suffix", [".csv", ".xlsx"])
def test_a_table_of_several_steps_is_advised_step_by_step_as_one_run(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"session{suffix}"
    table = [["Device", "Model", "Step", *OFFLINE_HEADER], *SHARDED]
    if suffix == ".csv":
        with path.open("w", newline="", encoding="utf-8") as handle:
            csv.writer(handle).writerows(table)
    else:
        book = xlsxwriter.Workbook(path)
        sheet = book.add_worksheet()
        for r, row in enumerate(table):
            sheet.write_row(r, 0, row)
        book.close()
    result = advise(path, "--html")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == (
        "shards: 2 (steps 0, 1), diverging: 2 (steps 0, 1); the first: step 0, "
        "first divergence at op #2 softmax"
    )
    assert lines[1].startswith("first divergence: op #2 softmax") and lines[1].endswith("[only in step 0]")
    assert lines[2].startswith(LINE) and lines[2].endswith("[only in step 1]")
    # The advice and the report of the run are named after the file that held it.
    (data,) = tmp_path.glob("session_advisor_*.json")
    assert json.loads(data.read_text())["diverging"] == ["step 0", "step 1"]
    assert f"report: {tmp_path / 'session.html'}" in lines


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing", "no such result file"),
        ("bad_csv", "not a dumpcmp result table"),
        ("bad_xlsx", "not a result table: not an xlsx workbook"),
        ("empty_dir", "no result table in this directory"),
        ("fifo", "not a regular file: a FIFO"),  # was "no such result file"
    ],
)
def test_bad_input_is_one_line_and_leaves_nothing(tmp_path: Path, setup: str, message: str) -> None:
    target = {
        "missing": tmp_path / "result_x.csv",
        "bad_csv": tmp_path / "result_1.csv",
        "bad_xlsx": tmp_path / "result_2.xlsx",
        "empty_dir": tmp_path / "empty",
        "fifo": tmp_path / "result_3.csv",
    }[setup]
    if setup == "bad_csv":
        target.write_text("a,b\n1,2\n")
    elif setup == "bad_xlsx":
        target.write_text("not a zip")
    elif setup == "empty_dir":
        target.mkdir()
    elif setup == "fifo":
        os.mkfifo(target)
    before = files(tmp_path)
    one_error_line(advise(target), message)
    one_error_line(advise(target, "-o", tmp_path / "out"), message)
    assert files(tmp_path) == before and not (tmp_path / "out").exists()


def test_a_cut_result_file_is_refused_not_judged(tmp_path: Path) -> None:
    """``head -c`` of a result: the rows before the cut all agree, but the table is partial (the
    diverging op is past the cut), so no all-clear, one line naming the file."""
    whole = write_csv(tmp_path / "whole" / f"result_{STAMP}.csv").read_bytes()
    cut = tmp_path / f"result_{STAMP}.csv"
    last_row = whole.rstrip(b"\r\n").rsplit(b"\n", 1)[0]  # up to the end of the second-last row
    cut.write_bytes(whole[: len(last_row) + 40])  # 40 bytes into the last row
    before = files(tmp_path)
    one_error_line(advise(cut), f"{cut}: the result table was cut off: its last row has")
    one_error_line(advise(tmp_path, "-o", tmp_path / "out"), "the result table was cut off")
    assert files(tmp_path) == before and not (tmp_path / "out").exists()
    # A complete table without its final newline (an editor stripped it) whose last row is as wide
    # as its header and ends in a cell that cannot be half-written (empty here) is advised as whole.
    cut.write_bytes(whole.rstrip(b"\r\n"))
    output = advise(cut).output
    assert output.startswith(LINE) and "cut short" not in output, output


GOOD_ROWS = [
    offline(0, "conv1", "input", red=0.001),
    offline(0, "conv1", red=0.002, reason="a long note in the last cell"),
]


@pytest.mark.parametrize(
    ("keep", "says"),
    [
        (
            -4,
            "does not end with a line break: it may be cut short in row 2, its last",
        ),  # inside the last cell
        ("header", "holds its header only: it may be cut short after it"),
    ],
)
def test_a_table_cut_where_its_rows_still_look_whole_gets_no_all_clear(
    tmp_path: Path, keep: int | str, says: str
) -> None:
    whole = write_csv(tmp_path / "whole" / f"result_{STAMP}.csv", GOOD_ROWS).read_bytes()
    assert advise(tmp_path / "whole" / f"result_{STAMP}.csv").output.startswith("network consistent")
    cut = tmp_path / f"result_{STAMP}.csv"
    cut.write_bytes(whole[: whole.index(b"\n") + 1] if keep == "header" else whole.rstrip(b"\r\n")[:keep])
    result = advise(cut)
    assert result.exit_code == 0, result.output
    assert "network consistent" not in result.output
    assert f"cut short: {cut} {says}" in result.output


def test_a_table_cut_inside_its_header_is_refused(tmp_path: Path) -> None:
    whole = write_csv(tmp_path / "whole" / f"result_{STAMP}.csv").read_bytes()
    cut = tmp_path / f"result_{STAMP}.csv"
    cut.write_bytes(whole[: whole.index(b"\n") - 10])
    one_error_line(advise(cut), f"{cut}: the result table was cut off inside its header")


def test_argument_mistakes_are_one_line(tmp_path: Path) -> None:
    one_error_line(advise(), "give a RESULT file or directory, or --host and --session")
    one_error_line(advise("--host", "127.0.0.1:1"), "--host and --session go together")
    one_error_line(
        advise(write_csv(tmp_path / "r.csv"), "--host", "127.0.0.1:1", "--session", "s"), "(not both)"
    )


def test_compare_with_advisor_prints_and_writes_findings(tmp_path: Path) -> None:
    op = "/block2.pw/bn/BatchNormalization"
    sim = simulate("zoo:small_cnn", tmp_path / "sim", faults=[f"{op}=bias"])
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["compare", "-tp", str(sim.npu_dump_dir), "-gp", str(sim.golden_dir), "-fr", str(sim.fusion_rule),
         "-o", str(out), "--advisor"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (result_file,) = out.glob("result_*.csv")
    stamp = result_file.stem.removeprefix("result_")
    assert (
        f"first divergence: op #7 /block2.pw/conv/Conv (originals: /block2.pw/conv/Conv, {op})"
        in result.output
    )
    assert f"advisor: {out / f'advisor_{stamp}.txt'}, {out / f'advisor_{stamp}.json'}" in result.output
    # The advisor's own command on the written result says the same.
    again = advise(result_file, "-o", out / "again")
    assert again.exit_code == 0 and again.output.splitlines()[0] in result.output


def test_another_models_graph_is_named_not_silently_left_unused(tmp_path: Path) -> None:
    # advise --graph with another model's rule gave the same findings as none, without a word.
    sim = simulate("zoo:small_cnn", tmp_path / "sim", faults=["/block2/Add=bias"])
    other = simulate("zoo:transformer_block", tmp_path / "other")
    out = tmp_path / "out"
    compared = runner.invoke(
        app,
        ["compare", "-tp", str(sim.npu_dump_dir), "-gp", str(sim.golden_dir), "-fr", str(sim.fusion_rule),
         "-o", str(out)],
    )  # fmt: skip
    assert compared.exit_code == 0, compared.output
    (result_file,) = out.glob("result_*.csv")
    wrong = advise(result_file, "--graph", other.fusion_rule, "-o", tmp_path / "wrong")
    assert wrong.exit_code == 0, wrong.output
    first = wrong.output.splitlines()[0]
    assert first.startswith("warning: --graph holds ") and "is it this model's?" in first
    right = advise(result_file, "--graph", sim.fusion_rule, "-o", tmp_path / "right")
    assert right.exit_code == 0 and "warning" not in right.output
    assert right.output.splitlines()[0] == wrong.output.splitlines()[1]


def test_compare_advisor_judges_by_the_compare_thresholds(tmp_path: Path) -> None:
    sim = simulate("zoo:small_cnn", tmp_path / "sim", faults=["/block2.pw/bn/BatchNormalization=bias"])
    loose = ["--cosine-threshold", "0", "--euclidean-threshold", "100", "--kl-threshold", "1e9",
             "--rmse-threshold", "1e9", "--mre-threshold", "1e9"]  # fmt: skip
    result = runner.invoke(
        app,
        ["compare", "-tp", str(sim.npu_dump_dir), "-gp", str(sim.golden_dir), "-fr", str(sim.fusion_rule),
         "-o", str(tmp_path / "out"), "--advisor", *loose],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "\nnetwork consistent: all 41 compared tensors agree" in result.output
    assert "suspect:" not in result.output  # growth within the thresholds blames no op


def test_advise_rejudges_with_the_thresholds_the_result_was_compared_with(tmp_path: Path) -> None:
    # advise had no threshold options: a result compare judged consistent with loose thresholds was
    # re-advised with the defaults, naming a first divergence its own --advisor never saw.
    result_file = write_csv(tmp_path / f"result_{STAMP}.csv")
    loose = ["--cosine-threshold", "0.5", "--euclidean-threshold", "0.9"]
    result = advise(result_file, "-o", tmp_path / "loose", *loose)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("network consistent: all 6 compared tensors agree"), result.output
    assert advise(result_file, "-o", tmp_path / "default").output.startswith(LINE)
    # The JSON says which thresholds judged it.
    (data,) = (tmp_path / "loose").glob("*.json")
    judged = json.loads(data.read_text())["thresholds"]
    assert judged["cosine"] == 0.5 and judged["relative_euclidean"] == 0.9 and judged["kl"] == 0.005
    # The same names and ranges as compare's.
    one_error_line(advise(result_file, "--cosine-threshold", "2"), "--cosine-threshold 2: must be a finite")


def test_plus_inf_against_minus_inf_is_worded_as_infinities_not_as_nan(tmp_path: Path) -> None:
    np.save(tmp_path / "npu.npy", np.array([1, np.inf, 3], dtype=np.float32))
    np.save(tmp_path / "golden.npy", np.array([1, -np.inf, 3], dtype=np.float32))
    result = runner.invoke(
        app, ["compare", "-tp", str(tmp_path / "npu.npy"), "-gp", str(tmp_path / "golden.npy"),
              "-o", str(tmp_path / "out"), "--advisor"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("nan/inf appeared: op #0")]
    assert "holds inf where the golden does not" in line and "the op makes infinities" in line
    assert "NaN from finite inputs" not in line
