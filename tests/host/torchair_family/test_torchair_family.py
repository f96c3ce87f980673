"""The TorchAir family: verdict rules, rows with reasons, the family in the plan and the session."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from dumpcmp.errors import DumpFormatError
from dumpcmp.host.core import ComparePlan, compare_file, failed_file
from dumpcmp.host.metrics.torchair import RealValues
from dumpcmp.host.pipeline import CompareOptions
from dumpcmp.host.session import CompareSession, ResultSettings
from dumpcmp.host.sinks.torchair_table import cells, header
from dumpcmp.host.torchair.family import SummaryMode, Torchair
from dumpcmp.host.torchair.records import TensorPair, TensorStats, TorchairShardKey
from dumpcmp.host.torchair.rows import Md5Values as Md5
from dumpcmp.host.torchair.rows import StatsValues, TorchairThresholds
from dumpcmp.host.verdict import FAIL, NOT_COMPARED, PASS, md5_verdict, real_verdict, stats_verdict
from dumpcmp.proto.names import parse_dump_name
from dumpcmp.proto.walker import DumpEntry, GroupKey

LIMITS = TorchairThresholds()


def _real(cosine: float | None, rel: float | None) -> RealValues:
    return RealValues(cosine, 0.0, 0.0, rel, 1.0, 1.0)


@pytest.mark.parametrize(
    ("cosine", "rel", "want"),
    [
        (0.99, 0.0099, PASS),  # both limits reached exactly / just inside
        (0.989999, 0.0, FAIL),
        (1.0, 0.01, FAIL),  # MaxRelativeErr must be strictly below 0.01
        (math.nan, 0.0, FAIL),
        (1.0, math.nan, FAIL),
        (None, 0.0, FAIL),  # cosine not computable (an all-zero side) beside numbers
    ],
)
def test_real_data_verdict(cosine: float | None, rel: float, want: str) -> None:
    result, why = real_verdict(_real(cosine, rel), LIMITS)
    assert result == want
    assert bool(why) == (want == FAIL)


def test_real_data_limits_are_options() -> None:
    assert real_verdict(_real(0.95, 0.05), TorchairThresholds(cosine=0.9, max_relative=0.1))[0] == PASS
    assert real_verdict(RealValues.unavailable("empty tensor"), LIMITS) == (NOT_COMPARED, ())


def _stats(**kw: float | None) -> TensorStats:
    return TensorStats("float32", (4,), **kw)  # type: ignore[arg-type]


def test_statistics_verdict_every_statistic_within_half_its_size() -> None:
    golden = _stats(max=2.0, min=-1.0, mean=0.5, l2norm=3.0)
    ok = StatsValues(_stats(max=3.0, min=-1.0, mean=0.5, l2norm=3.0), golden)  # 1/3 ≤ 0.5
    bad = StatsValues(_stats(max=2.0, min=-1.0, mean=0.5, l2norm=7.0), golden)  # 4/7 > 0.5
    assert stats_verdict(ok, LIMITS) == (PASS, ())
    result, why = stats_verdict(bad, LIMITS)
    assert result == FAIL and why == ("L2norm differs by more than 0.5 of their size",)
    assert stats_verdict(bad, TorchairThresholds(statistics=0.6))[0] == PASS
    edge = StatsValues(_stats(max=2.0), _stats(max=1.0))  # exactly 0.5 (+1e-10 below)
    assert stats_verdict(edge, LIMITS)[0] == PASS


def test_statistics_cells_missing_values_are_na_and_zero_golden_is_inf() -> None:
    values = StatsValues(_stats(max=1.0, min=0.0, mean=0.5), _stats(max=0.5, min=0.0, mean=0.25))
    family = Torchair(SummaryMode.statistics)
    row = family.row(TensorPair("op.output.0", "output", 0, "a", "b", target_stats=values.target,
                                bench_stats=values.golden))  # fmt: skip
    got = dict(zip(header("statistics"), cells(row), strict=True))
    assert got["Max diff"] == "0.500000" and got["L2norm diff"] == "N/A"
    assert got["MaxRelativeErr"] == "100.000000%" and got["MinRelativeErr"] == "inf"
    assert got["NormRelativeErr"] == "N/A"
    # max: 0.5 / (1.0 + 1e-10) and mean: 0.25 / (0.5 + 1e-10) stay within 0.5; missing ones are not
    # judged, and the PASS says which (an empty Err_message read as all four compared)
    assert (got["Result"], got["Accuracy Reached or Not"]) == (PASS, "Yes")
    assert got["Err_message"] == "L2norm not compared (not known on both sides)"


def test_md5_verdict() -> None:
    assert md5_verdict(Md5(1, 1)) == (PASS, ())
    result, why = md5_verdict(Md5(1, 2))
    assert result == FAIL and "00000001" in why[0]
    assert md5_verdict(Md5(None, 2))[0] == NOT_COMPARED


def _pair(x: np.ndarray | None, y: np.ndarray | None, reason: str = "") -> TensorPair:
    return TensorPair(
        "add.output.0", "output", 0, "npu.bin", "bench.npy",
        load_target=(lambda: x) if x is not None else None,
        load_bench=(lambda: y) if y is not None else None,
        reason=reason,
    )  # fmt: skip


def test_every_fail_and_every_row_without_numbers_says_why() -> None:
    family = Torchair()
    y = np.arange(1, 11, dtype=np.float32)
    assert family.row(_pair(y, y)).result == PASS
    failed = family.row(_pair(y * 1.5, y))
    assert failed.result == FAIL and "MaxRelativeErr" in failed.reasons[0]
    no_bench = family.row(_pair(y, None, "no FX tensor mm-aten.mm.default.OUTPUT.0"))
    assert no_bench.result == NOT_COMPARED and no_bench.reasons == (
        "no FX tensor mm-aten.mm.default.OUTPUT.0",
    )
    assert no_bench.accuracy_reached == "No"
    stats_only = family.row(TensorPair("a.output.0", "output", 0, "x", "y", target_stats=_stats(max=1.0),
                                       load_bench=lambda: y))  # fmt: skip
    assert stats_only.result == NOT_COMPARED and "statistics only" in stats_only.reasons[0]

    def corrupt() -> np.ndarray:
        raise DumpFormatError("npu.bin", 8, "payload cut short")

    unreadable = family.row(
        TensorPair("a.output.0", "output", 0, "x", "y", load_target=corrupt, load_bench=lambda: y)
    )
    assert unreadable.result == NOT_COMPARED and not unreadable.dump_readable
    assert "NPU tensor unreadable" in unreadable.reasons[0]
    for mode in SummaryMode:
        row = Torchair(mode).row(_pair(None, None))
        assert row.result == NOT_COMPARED and row.reasons


def test_md5_of_tensors_in_different_dtypes_is_not_a_fail() -> None:
    """A Cast compared with its own input (or fp16 data with an fp32 golden) can never have equal
    bytes: the row says why instead of failing every conversion op."""
    family = Torchair(SummaryMode.md5)
    y = np.arange(1, 11, dtype=np.float32)
    cast = family.row(_pair(y.astype(np.float16), y))
    assert cast.result == NOT_COMPARED and "different dtypes (float16 vs float32)" in cast.reasons[0]
    assert family.row(_pair(y, y)).result == PASS
    assert family.row(_pair(y + 1, y)).result == FAIL
    # statistics from a stats dump spell dtypes their own way: judged by the CRC alone
    stats = TensorStats("DT_FLOAT", (10,), crc32=1)
    spelled = TensorPair("a.output.0", "output", 0, "x", "y", target_stats=stats, load_bench=lambda: y)
    assert family.row(spelled).result == FAIL


# ---------------------------------------------------------------------------- family in the plan


class FakeMatcher:
    """Pairs made from the dump file name alone: the second token's target is off by 10 %."""

    def pairs(self, entry: DumpEntry) -> list[TensorPair]:
        y = np.linspace(1.0, 2.0, 100, dtype=np.float32)
        x = y * np.float32(1.1) if entry.name.op_name.endswith("bad") else y
        return [TensorPair(f"{entry.name.op_name}.output.0", "output", 0, str(entry.path), "fx.npy",
                           load_target=lambda: x, load_bench=lambda: y)]  # fmt: skip


def _entry(tmp_path: Path, op: str, stamp: int) -> DumpEntry:
    name = f"Add.{op}.1.0.{stamp}"
    return DumpEntry(tmp_path / name, parse_dump_name(name), GroupKey("0", "graph", "1", "0"))


def test_the_session_numbers_names_and_writes_torchair_shards(tmp_path: Path) -> None:
    family = Torchair()
    settings = ResultSettings(tmp_path / "out", "20260101000000")
    keys = [TorchairShardKey(1, 0), TorchairShardKey(0, 1)]
    session: CompareSession = CompareSession(settings, None, keys, family)
    plan = ComparePlan(None, FakeMatcher(), CompareOptions(), family)  # type: ignore[arg-type]
    # files arrive out of order; the table is in dump order
    for key in keys:
        for op, stamp in (("later_bad", 1735732800000002), ("first", 1735732800000001)):
            session.add(compare_file(_entry(tmp_path, op, stamp), plan), key)
    outcomes = session.close()
    assert [o.key for o in outcomes] == [TorchairShardKey(0, 1), TorchairShardKey(1, 0)]
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == [
        "rank0_token1_compare_result_20260101000000.csv",
        "rank1_token0_compare_result_20260101000000.csv",
    ]
    with (tmp_path / "out" / names[0]).open() as f:
        table = list(csv.reader(f))
    assert table[0] == header("real")
    assert [r[0] for r in table[1:]] == ["first.output.0", "later_bad.output.0"]
    assert [r[-3] for r in table[1:]] == [PASS, FAIL]
    assert [r.index for r in outcomes[0].rows] == [0, 1]


def test_one_shard_is_compare_result_and_failed_files_get_a_reason_row(tmp_path: Path) -> None:
    family = Torchair(SummaryMode.md5)
    plan = ComparePlan(None, FakeMatcher(), CompareOptions(), family)  # type: ignore[arg-type]
    entry = _entry(tmp_path, "first", 1735732800000001)
    failed = failed_file(entry, plan, "comparison failed on the cluster")
    assert (
        failed.rows[0].reasons == ("comparison failed on the cluster",) and not failed.rows[0].dump_readable
    )
    session: CompareSession = CompareSession(
        ResultSettings(tmp_path, "20260101000000", xlsx=True), None, [], family
    )
    session.add(compare_file(entry, plan), TorchairShardKey(0, 0))
    (outcome,) = session.close()
    assert outcome.result_file == tmp_path / "compare_result_20260101000000.csv"
    assert (
        outcome.xlsx_file == tmp_path / "compare_result_20260101000000.xlsx" and outcome.xlsx_file.is_file()
    )


def test_a_plan_with_the_other_familys_matcher_is_a_bug(tmp_path: Path) -> None:
    from dumpcmp.errors import InternalError

    with pytest.raises(InternalError):
        compare_file(_entry(tmp_path, "x", 1), ComparePlan(None, None, CompareOptions(), Torchair()))


def test_rows_of_ge_stats_dumps_are_in_the_table(tmp_path: Path) -> None:
    """A GE stats dump (dump_data: stats) gives torchair rows, unlike offline_data's stats table."""
    family = Torchair(SummaryMode.statistics)

    class StatsMatcher:
        def pairs(self, entry: DumpEntry) -> list[TensorPair]:
            stats = TensorStats("float32", (3,), 1.0, 0.0, 0.5, None)
            return [TensorPair("op.output.0", "output", 0, "npu.csv", "fx.npy", target_stats=stats,
                               load_bench=lambda: np.array([1.0, 0.0, 0.5], dtype=np.float32))]  # fmt: skip

    name = "Add.op.1.0.1735732800000001"
    entry = DumpEntry(
        tmp_path / f"{name}.csv", parse_dump_name(name), GroupKey("0", "g", "1", "0"), is_stats=True
    )
    plan = ComparePlan(None, StatsMatcher(), CompareOptions(), family)  # type: ignore[arg-type]
    session: CompareSession = CompareSession(ResultSettings(tmp_path, "20260101000000"), None, [], family)
    session.add(compare_file(entry, plan), TorchairShardKey(0, 0))
    (outcome,) = session.close()
    (row,) = outcome.rows
    assert row.result == PASS and outcome.stats_file is None
    got = dict(zip(header("statistics"), cells(row), strict=True))
    assert got["L2norm diff"] == "N/A" and got["Mean diff"] == "0.000000"


def test_real_fail_reasons_are_separated_and_spell_nan_as_the_columns_do() -> None:
    """ "…golden has 0 NaN and 0 inf Cosine nan < 0.99 MaxRelativeErr nan >= 0.01" ran together."""
    x = np.array([1.0, np.nan, 3.0], np.float32)
    y = np.array([1.0, 2.0, 3.0], np.float32)
    family = Torchair(SummaryMode.real)
    row = family.row(
        TensorPair("op.output.0", "output", 0, "a", "b", load_target=lambda: x, load_bench=lambda: y)
    )
    got = dict(zip(header("real"), cells(row), strict=True))
    assert got["Result"] == FAIL
    assert got["Err_message"] == (
        "target has 1 NaN and 0 inf, golden has 0 NaN and 0 inf; "
        "Cosine NaN < 0.99; MaxRelativeErr NaN >= 0.01"
    ), got["Err_message"]


def test_statistics_with_nan_on_the_target_side_only_fail() -> None:
    """An op that makes NaN has NaN max/min/mean/l2norm: that is a FAIL, not 'not compared' (a
    NaN fault made statistics mode say all PASS)."""
    nan = math.nan
    target = TensorStats("float16", (4,), max=nan, min=nan, mean=nan, l2norm=nan)
    golden = TensorStats("float16", (4,), max=1.0, min=0.0, mean=0.5, l2norm=1.2)
    row = Torchair(SummaryMode.statistics).row(
        TensorPair("add.output.0", "output", 0, "x", "y", target_stats=target, bench_stats=golden)
    )
    why = "Max NPU, Min NPU, Mean NPU, L2norm NPU NaN on one side only (NaN or inf in the data)"
    assert row.result == FAIL and row.reasons == (why,)
    both_nan = Torchair(SummaryMode.statistics).row(
        TensorPair("add.output.0", "output", 0, "x", "y", target_stats=target, bench_stats=target)
    )
    assert both_nan.result == NOT_COMPARED
