"""``dumpcmp compare --mode torchair`` end to end on a small GE/FX pair, and its bad inputs."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner, Result

from dumpcmp.cli import app
from tests.host.torchair_family.tree import GeOp, write_pair

runner = CliRunner()


def compare(*args: object) -> Result:
    return runner.invoke(app, ["compare", *(str(a) for a in args)])


def one_error_line(result: Result, code: int, text: str) -> None:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = [
        line for line in result.output.splitlines() if line.strip() and "comparing GE dump files" not in line
    ]
    assert len(lines) == 1, result.output
    assert text in lines[0], result.output


def _ops(scale: float = 1.0) -> list[GeOp]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 8)).astype(np.float32)
    b = rng.standard_normal((4, 8)).astype(np.float32)
    s = a + b
    return [
        GeOp("add_1", "Add", [a, b], [s], "add_1-aten.add.Tensor"),
        GeOp("mul_1", "Mul", [s, b], [s * b * np.float32(scale)], "mul-aten.mul.Tensor"),
    ]


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    return write_pair(tmp_path / "data", _ops(1.1), _ops(), tokens=(0, 1))


def _table(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_real_data_the_faulty_op_fails_and_everything_before_passes(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    ge, fx = pair
    out = tmp_path / "out"
    result = compare("-m", "torchair", "-tp", ge, "-gp", fx, "-o", out, "-j", "1")
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in out.iterdir())
    assert len(names) == 2 and all(n.endswith(".csv") for n in names)
    assert names[0].startswith("rank0_token0_compare_result_") and names[1].startswith(
        "rank0_token1_compare_result_"
    )
    rows = _table(out / names[0])
    ops = [f"{op}.{io}" for op in ("add_1", "mul_1") for io in ("input.0", "input.1", "output.0")]
    assert [r["API Name"] for r in rows] == ops
    assert [r["Result"] for r in rows] == ["PASS"] * 5 + ["FAIL"]
    assert rows[-1]["Err_message"].startswith("MaxRelativeErr 0.100000 >= 0.01")
    assert rows[0]["Stack Info"] == "" and rows[0]["Requires_grad Consistent"] == "N/A"
    assert rows[0]["Data Name"].startswith("[") and ".npy]" in rows[0]["Data Name"]
    assert "first FAIL: rank 0 token 0, mul_1.output.0" in result.output
    assert "all clear" not in result.output and "no FAIL" not in result.output


def test_the_advisor_reads_the_torchair_table(pair: tuple[Path, Path], tmp_path: Path) -> None:
    ge, fx = pair
    out = tmp_path / "out"
    result = compare("-m", "torchair", "-tp", ge, "-gp", fx, "-o", out, "--advisor")
    assert result.exit_code == 0, result.output
    assert "first divergence: op #1 mul_1" in result.output
    # One advisor result for the run's two (rank, token) shards, naming the token that diverges.
    (text,) = out.glob("*advisor*.txt")
    assert text.name.startswith("compare_advisor_") and result.output.count("first divergence: op #1") == 1
    assert (
        "shards: 2 (tokens 0, 1), diverging: 2 (tokens 0, 1); the first: token 0, "
        "first divergence at op #1 mul_1" in text.read_text()
    )


def test_html_report_and_coloured_xlsx_of_a_torchair_table(pair: tuple[Path, Path], tmp_path: Path) -> None:
    from dumpcmp.host.report.table import read_result

    ge, fx = pair
    out = tmp_path / "out"
    result = compare("-m", "torchair", "-tp", ge, "-gp", fx, "-o", out, "--html", "--xlsx")
    assert result.exit_code == 0, result.output
    (page,) = out.glob("*compare_result_*.html")  # one report for both (rank, token) shards
    assert page.name.startswith("compare_result_") and result.output.count("report: ") == 1
    for book in out.glob("*.xlsx"):
        table = read_result(book)
        assert table.mode == "real" and [r.result for r in table.rows][-1] == "FAIL"


@pytest.mark.parametrize(
    ("mode", "column", "failing"), [("statistics", "Max diff", 0), ("md5", "NPU MD5", 1)]
)
def test_statistics_and_md5_modes(
    pair: tuple[Path, Path], tmp_path: Path, mode: str, column: str, failing: int
) -> None:
    ge, fx = pair
    out = tmp_path / "out"
    result = compare("--mode", "torchair", "-tp", ge, "-gp", fx, "-o", out, "--summary-mode", mode, "--xlsx")
    assert result.exit_code == 0, result.output
    csvs = sorted(out.glob("*.csv"))
    assert len(csvs) == 2 and len(list(out.glob("*.xlsx"))) == 2
    rows = _table(csvs[0])
    assert column in rows[0]
    assert sum(r["Result"] == "FAIL" for r in rows) == failing


def test_nothing_compared_is_an_error_not_an_all_clear(tmp_path: Path) -> None:
    ops = _ops()
    ge, fx = write_pair(tmp_path / "data", ops)
    for npy in fx.rglob("*.npy"):  # the FX dump lost its files' data: every pair unreadable
        npy.write_bytes(b"not npy")
    result = compare("-m", "torchair", "-tp", ge, "-gp", fx, "-o", tmp_path / "out")
    assert result.exit_code == 1, result.output
    assert "nothing compared" in result.output and "PASS" not in result.output.split("nothing compared")[1]
    assert "no FAIL" not in result.output


@pytest.mark.parametrize(
    ("extra", "text"),
    [
        (["-fr", "rules.json"], "-fr: not an option of --mode torchair (GE ops are matched through"),
        (["-overflow_detection"], "--overflow-detection: not an option of --mode torchair (its table"),
        (["-d", "add_1"], "-d: not an option of --mode torchair (element-by-element detail"),
        (["--cluster", "h:1"], "--cluster: not an option of --mode torchair (it compares on this machine"),
        (["--kl-threshold", "1", "--mre-threshold", "2"], "--kl-threshold, --mre-threshold: not an option"),
        (["--red-threshold", "1"], "--red-threshold: not an option of --mode torchair (its verdicts use"),
        (
            ["--stats-threshold", "0.1"],
            "--stats-threshold: a threshold of --summary-mode statistics, not real",
        ),
        (
            ["--summary-mode", "md5", "--max-rel-threshold", "0.1"],
            "--max-rel-threshold: a threshold of --summary-mode real, not md5",
        ),
    ],
)
def test_offline_only_options_are_refused(
    pair: tuple[Path, Path], tmp_path: Path, extra: list[str], text: str
) -> None:
    ge, fx = pair
    out = tmp_path / "out"
    one_error_line(compare("-m", "torchair", "-tp", ge, "-gp", fx, "-o", out, *extra), 1, text)
    assert not out.exists()


def test_summary_mode_belongs_to_torchair(pair: tuple[Path, Path], tmp_path: Path) -> None:
    ge, fx = pair
    one_error_line(
        compare("-tp", ge, "-gp", fx, "-o", tmp_path / "out", "--summary-mode", "md5"),
        1,
        "--summary-mode: an option of --mode torchair",
    )
    for flag in ("--max-rel-threshold", "--thousandth-bound", "--five-thousandth-bound"):  # were ignored
        one_error_line(
            compare("-tp", ge, "-gp", fx, "-o", tmp_path / "out", flag, "0.5"), 1, f"{flag}: an option of"
        )
    assert not (tmp_path / "out").exists()
    unknown = compare(
        "-m", "torchair", "-tp", ge, "-gp", fx, "--summary-mode", "sha"
    )  # click's own usage error
    assert unknown.exit_code == 2 and "Traceback" not in unknown.output and "'sha' is" in unknown.output


def test_bad_paths_are_one_line(pair: tuple[Path, Path], tmp_path: Path) -> None:
    ge, fx = pair
    out = tmp_path / "out"
    one_error_line(
        compare("-m", "torchair", "-tp", tmp_path / "nope", "-gp", fx, "-o", out), 1, "does not exist"
    )
    one_error_line(
        compare("-m", "torchair", "-tp", fx, "-gp", ge, "-o", out), 1, "the target side (-tp) is the GE dump"
    )
    assert not out.exists()


def test_forked_workers_write_the_same_table_as_one_thread(tmp_path: Path) -> None:
    """Enough GE files for the process pool: the family and matcher reach the workers in the plan."""
    from dumpcmp.host.workers import PROCESS_MIN_FILES

    rng = np.random.default_rng(2)
    ops = []
    for i in range(PROCESS_MIN_FILES + 6):
        a = rng.standard_normal(16).astype(np.float32)
        ops.append(
            GeOp(
                f"relu_{i}",
                "Relu",
                [a],
                [np.maximum(a, 0) * np.float32(1 + (i % 5 == 0))],
                f"relu_{i}-aten.relu.default",
            )
        )
    bench = [GeOp(o.name, o.type, o.inputs, [np.maximum(o.inputs[0], 0)], o.fx) for o in ops]
    ge, fx = write_pair(tmp_path / "data", ops, bench)
    tables = []
    for jobs in ("1", "2"):
        out = tmp_path / f"out{jobs}"
        result = compare("-m", "torchair", "-tp", ge, "-gp", fx, "-o", out, "-j", jobs)
        assert result.exit_code == 0, result.output
        (table,) = out.glob("compare_result_*.csv")
        tables.append(table.read_text())
    assert tables[0] == tables[1]
    assert tables[0].count(",FAIL,") == sum(1 for i in range(len(ops)) if i % 5 == 0)  # the doubled outputs


def test_a_corrupt_ge_file_gets_a_row_with_its_reason_and_the_others_are_compared(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    ge, fx = pair
    (broken,) = [p for p in ge.rglob("Add.add_1.*") if p.parent.name == "0"]
    broken.write_bytes(broken.read_bytes()[:40])
    out = tmp_path / "out"
    result = compare("-m", "torchair", "-tp", ge, "-gp", fx, "-o", out)
    assert result.exit_code == 0, result.output
    rows = _table(sorted(out.glob("rank0_token0_*.csv"))[0])
    assert rows[0]["API Name"] == "add_1.*" and rows[0]["Result"] == "N/A"
    assert rows[0]["Err_message"].startswith("corrupt GE dump file") and str(broken) in rows[0]["Err_message"]
    assert [r["Result"] for r in rows[1:]] == ["PASS", "PASS", "FAIL"]
    assert "unreadable NPU tensors: 1" in result.output


def test_a_fifo_in_the_ge_dump_is_skipped_by_name(pair: tuple[Path, Path], tmp_path: Path) -> None:
    import os

    ge, fx = pair
    token = next(p.parent for p in ge.rglob("Add.add_1.*"))
    fifo = token / "Conv2D.Conv2D_9.8.0.1795484276456784"
    os.mkfifo(fifo)
    os.mkfifo(next(fx.rglob("*.npy")).parent / "relu-aten.relu.default.OUTPUT.0.1.npy")
    result = compare("-m", "torchair", "-tp", ge, "-gp", fx, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert f"skipped {fifo}: not a regular file: a FIFO" in result.output.splitlines()
    assert "relu-aten.relu.default.OUTPUT.0.1.npy: not a regular file: a FIFO" in result.output


def test_a_malformed_graph_dump_fails_only_its_rank(tmp_path: Path) -> None:
    ge, fx = write_pair(tmp_path / "data", _ops(1.1), _ops(), rank=0)
    write_pair(tmp_path / "data", _ops(), _ops(), rank=1)
    graph = next(ge.rglob("dynamo_optimized_*rank_1_*.txt"))
    graph.write_bytes(graph.read_bytes()[:-30] + b"\x00\xff garbage\n")
    out = tmp_path / "out"
    result = compare("-m", "torchair", "-tp", ge, "-gp", fx, "-o", out, "--html")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "\x00" not in result.output
    rank0 = _table(next(out.glob("rank0_token0_*.csv")))
    assert [r["Result"] for r in rank0] == ["PASS"] * 5 + ["FAIL"]
    rank1 = _table(next(out.glob("rank1_token0_*.csv")))
    assert {r["Result"] for r in rank1} == {"N/A"} and len(rank1) == 6
    assert {r["Err_message"] for r in rank1} == {rank1[0]["Err_message"]}
    assert rank1[0]["Err_message"].startswith(f"rank 1's GE graph dump is unreadable: {graph}:")
    assert "  6 × e.g. rank 1's GE graph dump is unreadable" in result.output


def test_the_same_dump_on_both_sides_is_an_error(pair: tuple[Path, Path], tmp_path: Path) -> None:
    """It passed: "no FAIL: all 83 compared tensor pairs PASS"."""
    ge, _ = pair
    out = tmp_path / "out"
    one_error_line(
        compare("-m", "torchair", "-tp", ge, "-gp", ge / ".." / "ge", "-o", out), 1, "same directory"
    )
    one_error_line(
        compare("-m", "torchair", "-tp", ge, "-gp", ge / "msprobe_ge_dump", "-o", out),
        1,
        "the very GE dump of -tp",
    )
    assert not out.exists()


def test_a_fused_ge_bench_is_named_in_a_warning(tmp_path: Path) -> None:
    a = np.arange(4, dtype=np.float32)
    ops = [GeOp("add_1mul_1", "AutomaticBufferFusionOp", [a], [a])]
    ge, _ = write_pair(tmp_path / "on", ops)
    bench, _ = write_pair(tmp_path / "off", ops)  # "fusion off" that holds the same fused op
    result = compare("-m", "torchair", "-tp", ge, "-gp", bench, "-o", tmp_path / "out")
    assert (
        f"warning: the GE dump -gp {bench} has 1 fused op (AutomaticBufferFusionOp, e.g. add_1mul_1): "
        "it was dumped with fusion on" in result.output
    )


def test_real_mode_on_reduced_data_says_to_use_statistics_or_md5(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    """The hint was "check that -gp is the FX dump of this very run", wrong for reduced data."""
    from dumpcmp.host.torchair.reduce import Reducer

    ge, fx = pair
    Reducer().reduce_tree(ge.parent)
    out = tmp_path / "out"
    result = compare("-m", "torchair", "-tp", ge, "-gp", fx, "-o", out)
    assert result.exit_code == 1, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("Error: nothing compared: none of the 12 tensor pairs has data on both sides")
    assert last.endswith("use --summary-mode statistics or md5") and "this very run" not in last
    assert len(list(out.glob("*.csv"))) == 2  # written, as offline_data writes a result that compared nothing
    assert "N/A" in _table(next(out.glob("*.csv")))[0]["Result"]
    statistics = compare("-m", "torchair", "-tp", ge, "-gp", fx, "-o", out, "--summary-mode", "statistics")
    assert statistics.exit_code == 0, statistics.output


def test_not_compared_reasons_are_grouped_by_kind(tmp_path: Path) -> None:
    """Without ``_fx_tensor_name`` the tester got one "1 × …" line per op; a missing rank graph gave
    "no GE graph dump for rank 1" plus redundant "fused GE op … does not split" lines."""
    rng = np.random.default_rng(3)
    ops = [GeOp(f"relu_{i}", "Relu", [a], [a], "") for i, a in enumerate(rng.standard_normal((8, 4)))]
    fused = np.ones(4, np.float32)
    ops.append(GeOp("relu_0relu_1", "AutomaticBufferFusionOp", [fused], [fused], ""))
    ge, fx = write_pair(
        tmp_path / "data", [*ops[:2], GeOp("k", "Relu", [fused], [fused], "k-aten.relu.default")]
    )
    write_pair(tmp_path / "data", ops, rank=1)
    for graph in ge.rglob("dynamo_*rank_1_*.txt"):
        graph.unlink()
    result = compare("-m", "torchair", "-tp", ge, "-gp", fx, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    grouped = lines[lines.index("not compared, by reason:") + 1 :]
    assert grouped[0] == "  18 × e.g. no GE graph dump for rank 1", result.output
    assert grouped[1] == "  2 × e.g. no FX tensor for GE op relu_0 input 0 (no _fx_tensor_name)"
    assert not any(line.startswith("  1 × ") or "does not split" in line for line in grouped)


def test_a_torchair_run_without_mode_torchair_suggests_it(pair: tuple[Path, Path], tmp_path: Path) -> None:
    ge, fx = pair
    out = tmp_path / "out"
    for target in (ge, ge / "msprobe_ge_dump"):
        one_error_line(compare("-tp", target, "-gp", fx, "-o", out), 1, "add -m torchair")
    assert not out.exists()


def test_help_describes_the_torchair_sides_and_defaults() -> None:
    result = runner.invoke(app, ["compare", "--help"], env={"COLUMNS": "400", "NO_COLOR": "1"})
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "--mode torchair compares a TorchAir run's GE dump with its FX dump" in text
    assert "--mode torchair: the GE dump (msprobe_ge_dump)" in text
    assert "--mode torchair: the FX dump (msprobe_fx_dump)" in text
    assert "[default: (real)]" in text and "--summary-mode statistics: a statistic fails" in text


def test_a_damaged_summary_line_that_names_no_file_is_counted_not_lost(tmp_path: Path) -> None:
    """tryout7 #10: "unreadable NPU tensors: 0" and the file's pairs in no total, and a warning
    that "1 file was skipped" though the reduced file was read (one line of it was not)."""
    from dumpcmp.host.torchair.reduce import Reducer
    from dumpcmp.proto.reduced import REDUCED_FILE

    ge, fx = write_pair(tmp_path / "data", _ops(3.0), _ops(), tokens=(0,))
    Reducer().reduce_tree(ge.parent)
    [jsonl] = ge.rglob(REDUCED_FILE)
    lines = jsonl.read_text().splitlines(keepends=True)
    lines[1] = '{"name": garbage}\n'  # the first op's line, its name lost with it
    jsonl.write_text("".join(lines))
    result = compare(
        "-m", "torchair", "-tp", ge, "-gp", fx, "-o", tmp_path / "out", "--summary-mode", "statistics"
    )
    assert result.exit_code == 0, result.output
    assert f"{REDUCED_FILE} line 2: not a reduced-data record" in result.output
    assert "GE dump files lost to a damaged summary line: 1 (their tensors are in no count)" in result.output
    assert "first FAIL: rank 0 token 0, mul_1.output.0" in result.output
    assert (
        "warning: it may start earlier: 1 damaged summary line (above) stands for a dump file"
        in result.output
    )
    assert "file was skipped" not in result.output
