"""Statistics dumps (``dump_data: stats``) compared as statistics against golden tensors."""

from __future__ import annotations

import csv
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from dumpcmp.errors import MatchError
from dumpcmp.host.offline import run_compare
from dumpcmp.host.request import CompareRequest, DetailRequest
from dumpcmp.host.stats_compare import STATS_RESULT_COLUMNS, Statistics
from dumpcmp.host.summary import Tally, nothing_compared, summarize
from dumpcmp.host.verdict import Thresholds
from dumpcmp.proto.dtypes import Format
from dumpcmp.proto.layouts import to_device
from dumpcmp.proto.names import STATS_SUFFIX, dump_file_name
from dumpcmp.proto.stats_csv import DEFAULT_STATS, StatsRow, format_stats_csv

from .test_compare_summary import OPS, SESSION, STAMP0, _golden_values, dump_file_of, write_tree

ALL_STATS = (*DEFAULT_STATS, "L2norm")


def _stats_row(values: np.ndarray, fmt: str = "ND") -> StatsRow:
    v = values.astype(np.float64)
    stats = {"Max Value": v.max(), "Min Value": v.min(), "Avg Value": v.mean(), "Nan Count": 0.0,
             "Negative Inf Count": 0.0, "Positive Inf Count": 0.0,
             "l2norm": float(np.sqrt((v * v).sum()))}  # fmt: skip
    return StatsRow("output", 0, v.size * 4, "DT_FLOAT", fmt, values.shape, values.size, stats)


def write_stats_tree(root: Path, rows: dict[str, StatsRow], stats: tuple[str, ...] = ALL_STATS) -> Path:
    step = root / SESSION / "0" / "model" / "1" / "0"
    step.mkdir(parents=True)
    for i, (op, row) in enumerate(rows.items()):
        name = dump_file_name("Conv2D", op, i + 1, 1, STAMP0 + i) + STATS_SUFFIX
        (step / name).write_text(format_stats_csv([row], stats))
    return root


def read_stats_result(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def target_rows(path: Path) -> list[dict[str, str]]:
    """The rows of target tensors: without the golden-only rows at the end."""
    return [row for row in read_stats_result(path) if row["Index"]]


@pytest.fixture(scope="module")
def golden_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tree(tmp_path_factory.mktemp("golden"))


def test_statistics_dump_is_compared_not_ignored(golden_tree: Path, tmp_path: Path) -> None:
    rows = {op: _stats_row(_golden_values(i)) for i, op in enumerate(OPS)}
    rows[OPS[2]] = _stats_row(_golden_values(2) + 3.0)  # a biased op
    target = write_stats_tree(tmp_path / "npu", rows)
    outcome = run_compare(CompareRequest(target, golden_tree, out_dir=tmp_path / "out"))
    (shard,) = outcome.shards
    assert shard.result_file is None  # no tensor dumps, no golden-only tensors
    assert shard.stats_file is not None and shard.stats_file.name.startswith("stats_result_")
    table = read_stats_result(shard.stats_file)
    assert tuple(table[0]) == STATS_RESULT_COLUMNS
    assert [r["Result"] for r in table] == ["PASS", "PASS", "FAIL", "PASS"]
    good = table[0]
    assert good["GroundTruth"] == "stem_conv"
    assert all(float(good[c]) == pytest.approx(0, abs=1e-5) for c in ("Max diff", "Min diff", "Mean diff"))
    assert float(good["L2norm diff"]) == pytest.approx(0, abs=1e-4)
    assert float(table[2]["Mean diff"]) == pytest.approx(3.0, abs=1e-5)
    assert table[2]["MeanRelativeErr"].endswith("%")
    lines = summarize(outcome, Thresholds())
    text = "\n".join(lines)
    assert "target tensors: 4, compared: 4 (4 by statistics)" in text
    assert "statistics beyond threshold (|diff| / max(|NPU|, |golden|) > 0.5): 1" in text
    first = "first statistics divergence: step 0, index 2 Conv2D block2_conv (block2_conv:output:0)"
    assert lines[-1].startswith(first)
    assert lines[-1].endswith(".csv") and "Max, Min, Mean, L2norm differ" in lines[-1]
    assert nothing_compared(outcome, Thresholds()) is None


def test_an_unreadable_stats_file_before_the_first_statistics_divergence_is_a_caveat(
    golden_tree: Path, tmp_path: Path
) -> None:
    rows = {op: _stats_row(_golden_values(i) + (3.0 if i >= 1 else 0.0)) for i, op in enumerate(OPS)}
    target = write_stats_tree(tmp_path / "npu", rows)
    (culprit,) = target.rglob(f"*.{OPS[1].replace('/', '_')}.*")
    culprit.write_text("junk\n")
    outcome = run_compare(CompareRequest(target, golden_tree, out_dir=tmp_path / "out"))
    lines = summarize(outcome, Thresholds())
    first = next(i for i, line in enumerate(lines) if line.startswith("first statistics divergence: "))
    assert lines[first].startswith("first statistics divergence: step 0, index 2 Conv2D block2_conv")
    assert lines[first + 1 :] == [
        "warning: it may start earlier: 1 unreadable dump file right before it could not be compared:",
        f"  index 1 Conv2D block1_conv (block1_conv:*): unreadable stats file: {culprit}: at byte 0: not a "
        "stats CSV: the header must start with Input/Output, Index, Data Size, Data Type, Format, Shape",
    ]


def test_statistics_only_run_lists_unused_golden_in_its_table(golden_tree: Path, tmp_path: Path) -> None:
    # A value result of a run without tensor dumps would hold golden-only rows and nothing else.
    target = write_stats_tree(tmp_path / "npu", {OPS[0]: _stats_row(_golden_values(0))})
    out = tmp_path / "out"
    outcome = run_compare(CompareRequest(target, golden_tree, out_dir=out))
    (shard,) = outcome.shards
    assert shard.result_file is None and shard.stats_file is not None
    assert [p.name for p in out.iterdir()] == [shard.stats_file.name]
    compared, *unused = read_stats_result(shard.stats_file)
    assert (compared["Index"], compared["GroundTruth"], compared["Result"]) == ("0", "stem_conv", "PASS")
    assert [(r["Index"], r["NPUDump"], r["GroundTruth"]) for r in unused] == [
        ("", "*", "block1_conv"),
        ("", "*", "block2_conv"),
        ("", "*", "head_fc"),
    ]
    assert {(r["Result"], r["CompareFailReason"]) for r in unused} == {
        ("N/A", "golden tensor with no NPU counterpart")
    }
    lines = summarize(outcome, Thresholds())
    assert not any(line.startswith("result: ") for line in lines)
    assert (
        "target tensors: 1, compared: 1 (1 by statistics), not compared: 0, unreadable dump files: 0, "
        "golden-only tensors: 3" in lines
    )
    assert nothing_compared(outcome, Thresholds()) is None


def test_statistics_only_run_matching_nothing_is_an_error(golden_tree: Path, tmp_path: Path) -> None:
    target = write_stats_tree(tmp_path / "npu", {"other_op": _stats_row(_golden_values(0))})
    outcome = run_compare(CompareRequest(target, golden_tree, out_dir=tmp_path / "out"))
    assert outcome.shards[0].result_file is None
    error = nothing_compared(outcome, Thresholds())
    assert error is not None and "none of the 1 target tensors has numbers" in error
    assert "the 4 golden tensors went unused" in error


def test_stats_threshold_is_an_option(golden_tree: Path, tmp_path: Path) -> None:
    rows = {OPS[0]: _stats_row(_golden_values(0) * 1.3)}
    target = write_stats_tree(tmp_path / "npu", rows)
    outcome = run_compare(CompareRequest(target, golden_tree, out_dir=tmp_path / "out"))
    assert Tally.of(outcome, Thresholds()).diverging_stats == 0
    assert Tally.of(outcome, Thresholds(statistics=0.1)).diverging_stats == 1


def test_statistics_the_dump_lacks_are_not_applicable(golden_tree: Path, tmp_path: Path) -> None:
    target = write_stats_tree(tmp_path / "npu", {OPS[0]: _stats_row(_golden_values(0))}, DEFAULT_STATS)
    outcome = run_compare(CompareRequest(target, golden_tree, out_dir=tmp_path / "out"))
    assert outcome.shards[0].stats_file is not None
    (row,) = target_rows(outcome.shards[0].stats_file)
    assert (row["NPU l2norm"], row["L2norm diff"], row["NormRelativeErr"]) == ("N/A", "N/A", "N/A")
    assert row["Bench l2norm"] != "N/A" and row["Result"] == "PASS"


def test_blocked_layout_counts_its_padding_zeros() -> None:
    logical = np.random.default_rng(0).uniform(1, 2, (1, 3, 4, 4)).astype(np.float32)
    device = to_device(logical, Format.NC1HWC0, Format.NCHW)
    assert device.size > logical.size
    padded = Statistics.of_array(logical, padding=device.size - logical.size)
    d = device.astype(np.float64)
    assert padded.max == pytest.approx(d.max()) and padded.min == 0.0
    assert padded.mean == pytest.approx(d.mean())
    assert padded.l2norm == pytest.approx(math.sqrt((d * d).sum()))


def test_padding_is_only_taken_for_blocked_layouts(golden_tree: Path, tmp_path: Path) -> None:
    values = _golden_values(0)
    longer = np.concatenate([values.reshape(-1), np.zeros(16, np.float32)])
    padded = np.concatenate([_golden_values(1).reshape(-1), np.zeros(16, np.float32)])
    rows = {OPS[0]: _stats_row(longer, "ND"), OPS[1]: _stats_row(padded, "NC1HWC0")}
    target = write_stats_tree(tmp_path / "npu", rows)
    outcome = run_compare(CompareRequest(target, golden_tree, out_dir=tmp_path / "out"))
    assert outcome.shards[0].stats_file is not None
    plain, blocked = target_rows(outcome.shards[0].stats_file)
    assert plain["Result"] == "N/A"
    assert plain["CompareFailReason"] == (
        "element count mismatch: the stats file counts 272 elements, the golden tensor holds 256"
    )
    assert blocked["Result"] == "PASS" and float(blocked["Mean diff"]) == pytest.approx(0, abs=1e-6)


def test_unreadable_stats_file_is_named(golden_tree: Path, tmp_path: Path) -> None:
    target = write_stats_tree(
        tmp_path / "npu", {op: _stats_row(_golden_values(i)) for i, op in enumerate(OPS)}
    )
    (broken,) = [p for p in target.rglob("*.csv") if ".block1_conv." in p.name]
    broken.write_text("not,a,stats,file\n")
    outcome = run_compare(CompareRequest(target, golden_tree, out_dir=tmp_path / "out"))
    lines = summarize(outcome, Thresholds())
    assert any(line.startswith(f"unreadable dump file {broken}: unreadable stats file") for line in lines)
    assert any(
        line.startswith(
            "target tensors: 4, compared: 3 (3 by statistics), not compared: 0, unreadable dump files: 1"
        )
        for line in lines
    )


def test_two_compares_in_one_second_keep_both_statistics_results(
    golden_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dumpcmp.host.offline as offline

    monkeypatch.setattr(offline.time, "strftime", lambda *_: "20260101000000")
    target = write_stats_tree(
        tmp_path / "npu", {op: _stats_row(_golden_values(i)) for i, op in enumerate(OPS)}
    )
    out = tmp_path / "out"
    first, second = (run_compare(CompareRequest(target, golden_tree, out_dir=out)) for _ in range(2))
    names = [o.shards[0].stats_file.name for o in (first, second) if o.shards[0].stats_file]
    assert names == ["stats_result_20260101000000.csv", "stats_result_20260101000000_1.csv"]
    assert sorted(p.name for p in out.iterdir()) == names


def test_statistics_moving_within_the_threshold_are_named_where_they_start(
    golden_tree: Path, tmp_path: Path
) -> None:
    # A 10 % scale keeps every statistic within the 0.5 rule: nothing FAILs, and the run read as
    # agreeing; its statistics leave the exact run's noise at block1, the maximum furthest (in
    # units of the golden tensor's root mean square: the L2 norm moves 9.09 %).
    rows = {op: _stats_row(_golden_values(i) * (1.1 if i >= 1 else 1.0)) for i, op in enumerate(OPS)}
    outcome = run_compare(CompareRequest(write_stats_tree(tmp_path / "npu", rows), golden_tree,
                                         out_dir=tmp_path / "out"))  # fmt: skip
    lines = summarize(outcome, Thresholds())
    assert "statistics beyond threshold (|diff| / max(|NPU|, |golden|) > 0.5): 0" in lines
    (moved,) = (line for line in lines if line.startswith("statistics move away"))
    assert moved.startswith(
        "statistics move away from the golden's first at step 0, index 1 Conv2D block1_conv "
        "(block1_conv:output:0): Max off by 31.32% of the golden's root mean square, 63x the run's noise "
        "before it (0.50%)"
    )
    clean = {op: _stats_row(_golden_values(i)) for i, op in enumerate(OPS)}
    outcome = run_compare(CompareRequest(write_stats_tree(tmp_path / "clean", clean), golden_tree,
                                         out_dir=tmp_path / "out2"))  # fmt: skip
    assert not any(line.startswith("statistics move away") for line in summarize(outcome, Thresholds()))


def test_statistics_without_l2_norms_are_named_where_their_shifts_start(
    golden_tree: Path, tmp_path: Path
) -> None:
    # CANN's default dump_stats has no L2 norm: the summary and the advisor then measure the run by
    # the shifts of max, min and mean, and both name where they leave the run's noise.
    from dumpcmp.host.report.grading import GradeThresholds, RowJudge
    from dumpcmp.host.report.table import read_result

    rows = {op: _stats_row(_golden_values(i) * (1.1 if i >= 1 else 1.0)) for i, op in enumerate(OPS)}
    target = write_stats_tree(tmp_path / "npu", rows, DEFAULT_STATS)
    outcome = run_compare(CompareRequest(target, golden_tree, out_dir=tmp_path / "out"))
    (moved,) = (line for line in summarize(outcome, Thresholds()) if line.startswith("statistics move away"))
    assert moved.startswith(
        "statistics move away from the golden's first at step 0, index 1 Conv2D block1_conv "
        "(block1_conv:output:0): Max off by 31.32% of the golden's root mean square"
    )  # the golden's L2 norm is known (taken of its tensor), though the dump's is not
    assert moved.endswith("; ground truth block1_conv")  # the original op, as a divergence line says it
    stats_file = outcome.shards[0].stats_file
    assert stats_file is not None
    table = read_result(stats_file)
    judge = RowJudge(table, GradeThresholds())
    assert judge.drift is not None and judge.drift_position is not None
    assert table.rows[judge.drift_position].op_name == "block1_conv"


def test_xlsx_writes_the_statistics_tables_twin_and_says_so(golden_tree: Path, tmp_path: Path) -> None:
    """--xlsx on a statistics dump wrote no workbook and said nothing."""
    import openpyxl

    rows = {op: _stats_row(_golden_values(i)) for i, op in enumerate(OPS)}
    outcome = run_compare(CompareRequest(write_stats_tree(tmp_path / "npu", rows), golden_tree,
                                         out_dir=tmp_path / "out", xlsx=True))  # fmt: skip
    (shard,) = outcome.shards
    assert shard.stats_file is not None and shard.stats_xlsx == shard.stats_file.with_suffix(".xlsx")
    book = openpyxl.load_workbook(shard.stats_xlsx, read_only=True)
    try:
        sheet = book.worksheets[0]
        header, *cells = ([c.value for c in row] for row in sheet.iter_rows())
        with shard.stats_file.open(newline="") as table:
            assert tuple(header) == STATS_RESULT_COLUMNS and len(cells) == len(list(csv.reader(table))) - 1
        assert [s.title for s in book.worksheets] == ["result", "advisor"]
    finally:
        book.close()
    assert f"statistics result: {shard.stats_xlsx}" in summarize(outcome, Thresholds())


def test_nan_the_device_counted_beyond_the_golden_fails_where_it_appears(
    golden_tree: Path, tmp_path: Path
) -> None:
    rows = {op: _stats_row(_golden_values(i)) for i, op in enumerate(OPS)}
    nan = _stats_row(_golden_values(1))  # its statistics skip the NaN: they agree with the golden's
    rows[OPS[1]] = replace(nan, stats={**nan.stats, "Nan Count": 5.0})
    target = write_stats_tree(tmp_path / "npu", rows)
    outcome = run_compare(CompareRequest(target, golden_tree, out_dir=tmp_path / "out"))
    assert outcome.shards[0].stats_file is not None
    table = target_rows(outcome.shards[0].stats_file)
    assert [r["Result"] for r in table] == ["PASS", "FAIL", "PASS", "PASS"]
    assert table[1]["CompareFailReason"] == "target holds 5 Nan"
    text = "\n".join(summarize(outcome, Thresholds()))
    assert (
        "nan/inf appeared: 1 tensor holds NaN/inf where the golden does not; the first: step 0, index 1"
        in text
    )
    assert (
        "first statistics divergence: step 0, index 1 Conv2D block1_conv (block1_conv:output:0): NaN/inf "
        in text
    )
    assert "first at step 0, index 1 Conv2D block1_conv" in text  # the drift agrees: one verdict


def test_an_infinite_statistic_against_a_finite_golden_fails(golden_tree: Path, tmp_path: Path) -> None:
    rows = {OPS[0]: _stats_row(_golden_values(0))}
    inf = rows[OPS[0]]
    rows[OPS[0]] = replace(inf, stats={**inf.stats, "Max Value": math.inf})
    target = write_stats_tree(tmp_path / "npu", rows)
    outcome = run_compare(CompareRequest(target, golden_tree, out_dir=tmp_path / "out"))
    assert outcome.shards[0].stats_file is not None
    (row,) = target_rows(outcome.shards[0].stats_file)
    assert row["Result"] == "FAIL"


def test_nan_in_the_golden_is_named_and_not_held_against_the_target(tmp_path: Path) -> None:
    def one_nan(i: int, values: np.ndarray) -> np.ndarray:
        values[0, 0] = np.nan if i == 0 else values[0, 0]
        return values

    golden = write_tree(tmp_path / "golden", one_nan)
    finite = _golden_values(0).ravel()[1:]  # the device's statistics skip the NaN as the golden's do
    row = replace(_stats_row(finite), shape=(4, 64), count=256)
    target = write_stats_tree(tmp_path / "npu", {OPS[0]: replace(row, stats={**row.stats, "Nan Count": 1.0})})
    outcome = run_compare(CompareRequest(target, golden, out_dir=tmp_path / "out"))
    assert outcome.shards[0].stats_file is not None
    (result,) = target_rows(outcome.shards[0].stats_file)
    assert result["Result"] == "PASS"
    assert result["CompareFailReason"] == "target holds 1 Nan golden holds 1 NaN"


def test_a_dump_of_nan_counts_only_compares_them_with_the_golden(golden_tree: Path, tmp_path: Path) -> None:
    counts = {op: _stats_row(_golden_values(i)) for i, op in enumerate(OPS)}
    counts[OPS[1]] = replace(counts[OPS[1]], stats={**counts[OPS[1]].stats, "Nan Count": 5.0})
    target = write_stats_tree(tmp_path / "npu", counts, ("Nan",))
    outcome = run_compare(CompareRequest(target, golden_tree, out_dir=tmp_path / "out"))
    assert nothing_compared(outcome, Thresholds()) is None
    assert outcome.shards[0].stats_file is not None
    table = target_rows(outcome.shards[0].stats_file)
    # a zero count equal to the golden's is a compared, agreeing statistic (they were "N/A")
    assert [r["Result"] for r in table] == ["PASS", "FAIL", "PASS", "PASS"]
    text = "\n".join(summarize(outcome, Thresholds()))
    assert "first statistics divergence: step 0, index 1 Conv2D block1_conv (block1_conv:output:0)" in text
    assert "compared: 4 (4 by statistics), not compared: 0" in text


def test_a_nan_count_below_the_goldens_is_a_finding(tmp_path: Path) -> None:
    # The golden holds 2 NaN, the device counted none: the row was "not compared" (N/A), no finding.
    def two_nan(i: int, values: np.ndarray) -> np.ndarray:
        values.flat[:2] = np.nan if i == 1 else values.flat[:2]
        return values

    golden = write_tree(tmp_path / "golden", two_nan)
    counts = {op: _stats_row(_golden_values(i)) for i, op in enumerate(OPS)}
    target = write_stats_tree(tmp_path / "npu", counts, ("Nan", "Positive Inf"))
    outcome = run_compare(CompareRequest(target, golden, out_dir=tmp_path / "out"))
    assert outcome.shards[0].stats_file is not None
    table = target_rows(outcome.shards[0].stats_file)
    assert [r["Result"] for r in table] == ["PASS", "FAIL", "PASS", "PASS"]
    assert table[1]["CompareFailReason"] == "golden holds 2 NaN"
    (line,) = [x for x in summarize(outcome, Thresholds()) if x.startswith("first statistics divergence")]
    assert "(block1_conv:output:0): NaN/inf of the golden's not counted in the target;" in line


def test_a_dump_without_comparable_statistics_says_so_in_one_line(golden_tree: Path, tmp_path: Path) -> None:
    # Neither a statistic nor a NaN/inf count (Count alone): nothing to compare.
    target = write_stats_tree(tmp_path / "npu", {OPS[0]: _stats_row(_golden_values(0))}, ())
    outcome = run_compare(CompareRequest(target, golden_tree, out_dir=tmp_path / "out"))
    assert nothing_compared(outcome, Thresholds()) == (
        "nothing compared: the stats dump holds no comparable statistic "
        "(add Max, Min, Avg or L2norm to dump_stats)"
    )


def test_detail_of_an_op_with_statistics_only_is_refused_before_comparing(
    golden_tree: Path, tmp_path: Path
) -> None:
    # It compared the whole tree, wrote its results, then said "has no output 0 in its dump file".
    rows = {op: _stats_row(_golden_values(i)) for i, op in enumerate(OPS)}
    target = write_stats_tree(tmp_path / "npu", rows)
    request = CompareRequest(target, golden_tree, out_dir=tmp_path / "out", detail=DetailRequest(OPS[1]))
    with pytest.raises(MatchError, match="has statistics only in the target dump: -d compares a tensor"):
        run_compare(request)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_an_op_dumped_as_statistics_is_no_gap_before_a_tensor_divergence(
    golden_tree: Path, tmp_path: Path
) -> None:
    # block1/conv dumped as statistics (task 2), the others as tensors: the tensor rows' Index
    # skips it, but it was dumped, and the summary must not say an op may be missing before
    # block2/conv's divergence.
    target = write_tree(tmp_path / "npu", lambda i, v: v + 1.0 if i >= 2 else v)
    dump_file_of(target, "block1/conv").unlink()
    step = target / SESSION / "0" / "model" / "1" / "0"
    name = dump_file_name("Conv2D", OPS[1], 2, 1, STAMP0 + 1) + STATS_SUFFIX
    (step / name).write_text(format_stats_csv([_stats_row(_golden_values(1))], ALL_STATS))
    outcome = run_compare(CompareRequest(target, golden_tree, out_dir=tmp_path / "out"))
    lines = summarize(outcome, Thresholds())
    assert any(line.startswith("first divergence: step 0, index 1 Conv2D block2/conv") for line in lines)
    assert not [line for line in lines if "not have been dumped" in line]
