"""TorchAir statistics mode: the summary names where the statistics leave the run's noise, or says
plainly that statistics cannot place the fault (metrics.md §2's fixed rule alone names the first
op it catches, which may be far downstream)."""

from __future__ import annotations

from dumpcmp.host.session import CompareOutcome, ShardOutcome
from dumpcmp.host.torchair.records import TensorStats, TorchairShardKey
from dumpcmp.host.torchair.rows import StatsValues, TorchairRow, TorchairThresholds
from dumpcmp.host.torchair.summary import STATISTICS_CAVEAT, summarize_torchair
from dumpcmp.host.verdict import stats_verdict


def _row(i: int, l2_apart: float) -> TorchairRow:
    """Op ``i``'s output, its L2 norm (and max) ``l2_apart`` of the golden's away from it."""
    golden = TensorStats("float32", (8,), 2.0, -1.0, 0.5, 10.0)
    target = TensorStats("float32", (8,), 2.0 * (1 + l2_apart), -1.0, 0.5, 10.0 * (1 + l2_apart))
    values = StatsValues(target, golden)
    result, reasons = stats_verdict(values, TorchairThresholds())
    return TorchairRow(i, f"Op{i}.output.0", "", "", values, result, reasons)


def _lines(*apart: float) -> list[str]:
    rows = tuple(_row(i, a) for i, a in enumerate(apart))
    return summarize_torchair(CompareOutcome((ShardOutcome(TorchairShardKey(0, 0), None, rows),)))


def test_a_jump_within_the_rule_is_named_before_the_first_fail() -> None:
    lines = _lines(0.0, 0.0002, 0.0, 0.2, 0.3, 1.5)
    (moved,) = (line for line in lines if line.startswith("statistics move away"))
    assert moved.startswith("statistics move away from the golden's first at rank 0 token 0, Op3.output.0: ")
    assert lines[-1].startswith("first FAIL: rank 0 token 0, Op5.output.0")


def test_a_gradual_growth_says_statistics_cannot_place_the_fault() -> None:
    lines = _lines(0.0005, 0.003, 0.01, 0.03, 0.1, 0.3, 0.9, 1.5)  # at most 3.3x the step before
    assert not any(line.startswith("statistics move away") for line in lines)
    assert any(line.startswith("statistics cannot place the fault") for line in lines)
    assert lines[-1].startswith("first FAIL: rank 0 token 0, Op7.output.0")


def test_a_clean_run_says_neither() -> None:
    lines = _lines(0.0, 0.0004, 0.0008, 0.0)
    assert lines[-2:] == ["no FAIL: all 4 compared tensor pairs PASS", STATISTICS_CAVEAT]
    assert not any("statistics" in line for line in lines[:-1])  # the caveat only


def test_nan_appearing_on_one_side_is_placed_by_the_first_fail() -> None:
    # The drift passes over NaN, so a NaN fault said "statistics cannot place the fault" right
    # above the first FAIL that names it.
    rows = [_row(i, 0.0) for i in range(3)]
    golden = TensorStats("float32", (8,), 2.0, -1.0, 0.5, 10.0)
    nan = TensorStats("float32", (8,), float("nan"), float("nan"), float("nan"), float("nan"))
    values = StatsValues(nan, golden)
    rows.append(TorchairRow(3, "Op3.output.0", "", "", values, *stats_verdict(values, TorchairThresholds())))
    lines = summarize_torchair(CompareOutcome((ShardOutcome(TorchairShardKey(0, 0), None, tuple(rows)),)))
    assert not any(line.startswith("statistics cannot place the fault") for line in lines)
    assert lines[-1].startswith("first FAIL: rank 0 token 0, Op3.output.0: ")
    assert "NaN on one side only" in lines[-1]
