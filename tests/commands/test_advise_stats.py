"""Statistics results get advice (by their verdict); reports never overwrite; RESULT "" is refused."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dumpcmp.cli import app
from dumpcmp.host.report.table import read_result
from dumpcmp.host.stats_compare import STATS_RESULT_COLUMNS
from tests.commands.test_advise_cli import STAMP, files, one_error_line, write_csv
from tests.e2e.test_sim_compare import _stats_simulation as stats_simulation

runner = CliRunner()


def stats_row(index: int, op: str, io: str, result: str, mean_rel: str = "0.01%") -> list[str]:
    cells = dict.fromkeys(STATS_RESULT_COLUMNS, "N/A")
    cells.update(
        Index=str(index), OpType="Add", NPUDump=op, GroundTruth=op, TensorIndex=f"{op}:{io}:0",
        DataType="DT_FLOAT16", MeanRelativeErr=mean_rel, Result=result, CompareFailReason="",
    )  # fmt: skip
    return [cells[c] for c in STATS_RESULT_COLUMNS]


def write_stats(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([list(STATS_RESULT_COLUMNS), *rows])
    return path


def test_a_statistics_result_is_advised_by_its_verdict(tmp_path: Path) -> None:
    path = write_stats(
        tmp_path / f"stats_result_{STAMP}.csv",
        [
            stats_row(0, "conv", "output", "PASS"),
            stats_row(1, "add", "input", "PASS"),
            stats_row(1, "add", "output", "FAIL", "40.5%"),
            stats_row(2, "relu", "output", "FAIL", "30%"),
        ],
    )
    result = runner.invoke(app, ["advise", str(path)])
    assert result.exit_code == 0, result.output
    first = result.output.splitlines()[0]
    assert first.startswith("first divergence: op #1 add - inputs agree, output 0 does not; accumulating")
    assert "MeanRelativeErr (%) 40.5" in first  # quoted with its unit
    assert (tmp_path / f"stats_advisor_{STAMP}.txt").is_file()


def test_compare_advisor_on_a_statistics_dump_finds_the_faulty_op(tmp_path: Path) -> None:
    dump, golden, rule = stats_simulation(tmp_path, ("/block1.pw/conv/Conv=bias:1",))
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["compare", "-tp", str(dump), "-gp", str(golden), "-fr", str(rule), "-o", str(out),
              "--advisor", "--html"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    advice = [line for line in result.output.splitlines() if line.startswith("first divergence:")]
    assert len(advice) == 1 and "/block1.pw/conv/Conv/block1.pw/act/Relu" in advice[0], result.output
    assert "nothing compared" not in result.output
    (text,) = out.glob("stats_advisor_*.txt")  # the golden-only tensor result gets no advice
    assert not list(out.glob("advisor_*.txt")) and text.read_text().startswith("first divergence")
    assert list(out.glob("stats_result_*.html"))


def test_nan_counted_by_a_statistics_dump_is_nan_inf_appeared(tmp_path: Path) -> None:
    """The summary's "nan/inf appeared" from the dump's Nan count, not a small L2-norm error."""
    dump, golden, rule = stats_simulation(tmp_path, ("/block2/Add=nan",))
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["compare", "-tp", str(dump), "-gp", str(golden), "-fr", str(rule), "-o", str(out), "--advisor"]
    )
    assert result.exit_code == 0, result.output
    first = result.output.split("advisor findings:\n")[1].splitlines()[0]
    assert first.startswith(
        "nan/inf appeared: op #8 /block2/Add - output 0 holds NaN/inf the golden does not "
        "(the dump's counts: target holds "
    ), result.output
    assert "0/0, log or sqrt of a negative" in first
    inf = write_stats(tmp_path / f"stats_result_{STAMP}.csv", [stats_row(0, "add", "output", "FAIL")])
    rows = inf.read_text().replace(",FAIL,", ",FAIL,target holds 3 Positive Inf")
    inf.write_text(rows)
    again = runner.invoke(app, ["advise", str(inf)])
    assert again.output.startswith("nan/inf appeared: op #0 add - output 0 holds NaN/inf"), again.output
    assert "makes infinities the golden does not have" in again.output.splitlines()[0]


def test_advise_html_never_overwrites_a_report(tmp_path: Path) -> None:
    path = write_csv(tmp_path / f"result_{STAMP}.csv")
    report = tmp_path / f"result_{STAMP}.html"
    report.write_text("compare's report, with its graph")
    result = runner.invoke(app, ["advise", str(path), "--html", "--model-explorer"])
    assert result.exit_code == 0, result.output
    assert report.read_text() == "compare's report, with its graph"
    assert f"report: {tmp_path / f'result_{STAMP}_1.html'}" in result.output
    again = runner.invoke(app, ["advise", str(path), "--model-explorer"])
    assert again.exit_code == 0, again.output
    assert {
        f"result_{STAMP}_model_explorer_cosine.json",
        f"result_{STAMP}_model_explorer_cosine_1.json",
    } <= set(files(tmp_path))


def test_an_empty_result_path_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_csv(tmp_path / f"result_{STAMP}.csv")
    monkeypatch.chdir(tmp_path)  # "" must not quietly mean this directory
    before = files(tmp_path)
    one_error_line(runner.invoke(app, ["advise", ""]), "RESULT is an empty path")
    assert files(tmp_path) == before


def test_nan_the_golden_holds_too_is_not_counted_against_the_target(tmp_path: Path) -> None:
    rows = [stats_row(0, "conv", "output", "PASS"), stats_row(1, "add", "output", "PASS")]
    reason = STATS_RESULT_COLUMNS.index("CompareFailReason")
    rows[0][reason] = "target holds 3 Nan golden holds 3 NaN"  # the golden's own: agreed
    rows[1][reason] = "target holds 5 Nan golden holds 2 NaN"  # 3 beyond the golden's
    table = read_result(write_stats(tmp_path / f"stats_result_{STAMP}.csv", rows))
    assert [r.target_nan_inf for r in table.rows] == [0, 3]


def test_rows_judged_by_their_nan_inf_counts_alone_are_advised(tmp_path: Path) -> None:
    # A dump of NaN/inf counts only (dump_stats: Nan) has no statistic as a number: its PASS/FAIL
    # rows were "nothing compared" to the advisor, though compare had judged them.
    path = write_stats(
        tmp_path / f"stats_result_{STAMP}.csv",
        [
            stats_row(0, "conv", "output", "PASS", "N/A"),
            stats_row(1, "add", "input", "PASS", "N/A"),
            stats_row(1, "add", "output", "FAIL", "N/A"),
            stats_row(2, "relu", "output", "FAIL", "N/A"),
        ],
    )
    result = runner.invoke(app, ["advise", str(path)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].startswith(
        "first divergence: op #1 add - inputs agree, output 0 does not"
    )
