"""Statistics dumps (``dump_data: stats``) compared as statistics, not skipped.

A stats dump holds no tensor data, only each tensor's max, min, mean (and L2 norm when asked
for) as the device computed them (formats.md §3.4). Each such row is paired with its golden
tensor through the same matcher lookup as a dump file's tensor, the same statistics are taken of
the golden tensor, and the row gets the statistics columns of metrics.md §2: each statistic of
both sides, target minus golden, the relative differences and a PASS/FAIL verdict.

The device takes its statistics over the device layout. In a blocked layout (NC1HWC0, FRACTAL_Z…)
that includes the zero padding of the last block, so the golden statistics are taken as if the
golden tensor were padded with as many zeros: otherwise a correct tensor of 3 channels stored as
16 would show a Mean diff. Plain layouts are never padded: there a count difference is a mismatch.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from dumpcmp.errors import DumpcmpError, DumpFormatError
from dumpcmp.host.golden import GoldenSource
from dumpcmp.host.matcher import Matcher
from dumpcmp.host.metrics.offline_data import flat_chunks
from dumpcmp.host.offline_table import golden_only_rows
from dumpcmp.host.pipeline import locate_golden, op_names, truth_column
from dumpcmp.host.rows import NO_GOLDEN
from dumpcmp.host.sinks.csv_file import write_new_table
from dumpcmp.host.sinks.table import number
from dumpcmp.host.verdict import STATISTICS, StatisticsRow, Thresholds, statistic_distance
from dumpcmp.proto.codec import TensorKind
from dumpcmp.proto.stats_csv import STAT_COLUMNS, StatsRow, read_stats_csv
from dumpcmp.proto.walker import DumpEntry

_CHUNK = 1 << 20
# Layouts stored element for element: the device count must equal the golden one.
_PLAIN_FORMATS = frozenset(
    {"ND", "NCHW", "NHWC", "HWCN", "CHWN", "NCDHW", "NDHWC", "DHWCN", "NC", "CN", "NCL"}
)

_CSV_COLUMN = {"Max": STAT_COLUMNS["Max"], "Min": STAT_COLUMNS["Min"], "Mean": STAT_COLUMNS["Avg"],
               "L2norm": STAT_COLUMNS["L2norm"]}  # fmt: skip
STATS_RESULT_COLUMNS: tuple[str, ...] = (
    "Index", "OpType", "NPUDump", "GroundTruth", "TensorIndex", "DataType", "Format", "Shape", "Count",
    "NPU max", "NPU min", "NPU mean", "NPU l2norm",
    "Bench max", "Bench min", "Bench mean", "Bench l2norm",
    "Max diff", "Min diff", "Mean diff", "L2norm diff",
    "MaxRelativeErr", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr",
    "Result", "CompareFailReason",
)  # fmt: skip


# The columns of statistics compared as values, and of the NaN/inf counts.
_COMPARABLE = tuple(_CSV_COLUMN.values())
_COUNTS = tuple(STAT_COLUMNS[k] for k in ("Nan", "Negative Inf", "Positive Inf"))
# The reason of a row whose dump carries neither a statistic nor a NaN/inf count to compare.
NO_STATISTIC = "the stats dump holds no comparable statistic"
# What ``StatsResult.failing`` names for NaN/inf counted in the target beyond the golden's, and
# for the golden's NaN/inf the target's counts lack.
NAN_INF_APPEARED = "NaN/inf"
NAN_INF_MISSING = "NaN/inf missing"

Stat = float | None  # None: the dump does not carry this statistic ("N/A" in the table)


@dataclass(frozen=True, slots=True)
class Statistics:
    """Max, min, mean, L2 norm of one tensor; NaN where the data made them NaN or the device
    wrote NA, None where the dump does not carry the statistic at all."""

    max: Stat
    min: Stat
    mean: Stat
    l2norm: Stat

    def values(self) -> tuple[Stat, Stat, Stat, Stat]:
        return (self.max, self.min, self.mean, self.l2norm)

    @classmethod
    def of_stats_row(cls, row: StatsRow) -> Statistics:
        return cls(*(row.stats.get(_CSV_COLUMN[name]) for name in STATISTICS))

    @classmethod
    def of_array(cls, array: np.ndarray, padding: int = 0) -> Statistics:
        """Statistics of the finite values of ``array`` (NaN/inf are counted apart, as the device
        does), with ``padding`` extra zeros as a blocked device layout stores them."""
        count, total, squares = 0, 0.0, 0.0
        high, low = -math.inf, math.inf
        for chunk in flat_chunks(array, _CHUNK):
            values = chunk.astype(np.float64)
            values = values[np.isfinite(values)]
            if values.size:
                count += values.size
                total += float(values.sum())
                squares += float(np.dot(values, values))
                high, low = max(high, float(values.max())), min(low, float(values.min()))
        if padding:
            count += padding
            high, low = max(high, 0.0), min(low, 0.0)
        if count == 0:
            return cls(math.nan, math.nan, math.nan, math.nan)
        return cls(high, low, total / count, math.sqrt(squares))


_NONE: tuple[Stat, ...] = (None,) * len(STATISTICS)


@dataclass(frozen=True, slots=True)
class StatsResult:
    """One row of a statistics result: a target tensor's statistics against its golden tensor's.

    Index None: a golden tensor nothing used, listed at the end of a run without tensor dumps.
    """

    index: int | None
    op_type: str
    npu_name: str
    ground_truth: str
    tensor_index: str
    dump_file: Path | None
    data_type: str = ""
    format: str = ""
    shape: tuple[int, ...] | None = None
    count: int | None = None
    target: Statistics | None = None
    golden: Statistics | None = None
    reasons: tuple[str, ...] = ()
    dump_readable: bool = True
    golden_key: str = ""  # the golden tensor looked up, "" when none was found
    # NaN and ±inf the device counted in the target beyond those of the golden tensor (its
    # statistics skip them): above 0, values the golden does not hold appeared, a FAIL.
    target_nan_inf: int = 0
    # NaN and ±inf of the golden tensor beyond those the device counted, of the kinds it counts:
    # above 0, values the golden holds are finite on the target side, a FAIL too.
    missing_nan_inf: int = 0
    # The dump counts NaN/inf and the golden tensor is known: the counts were compared, so a row of
    # counts alone that agree (0 against 0 included) is a compared, agreeing row.
    counts_compared: bool = False

    def pairs(self) -> tuple[tuple[Stat, Stat], ...]:
        target = self.target.values() if self.target is not None else _NONE
        golden = self.golden.values() if self.golden is not None else _NONE
        return tuple(zip(target, golden, strict=True))

    @property
    def compared(self) -> bool:
        """At least one statistic is known on both sides and a number on one: NaN on one side
        only (NaN or inf in its data) is a comparison, and a failing one; so are the NaN/inf counts
        of a dump that holds them, equal or not, even of counts only (``dump_stats: Nan``)."""
        return self.counts_compared or any(
            t is not None and g is not None and not (math.isnan(t) and math.isnan(g)) for t, g in self.pairs()
        )

    def diffs(self) -> tuple[Stat, ...]:
        """Target minus golden of each statistic, None where either side lacks it."""
        return tuple(None if t is None or g is None else t - g for t, g in self.pairs())

    def drift_row(self) -> StatisticsRow:
        """The row as ``verdict.statistics_error`` measures it along the run."""
        return StatisticsRow(self.pairs(), self.count, self.target_nan_inf > 0)

    def relative(self) -> tuple[Stat, ...]:
        """|diff / golden| of each statistic; inf where the golden statistic is 0."""
        return tuple(
            None if d is None or g is None else _ratio(d, g)
            for d, (_, g) in zip(self.diffs(), self.pairs(), strict=True)
        )

    def failing(self, threshold: float) -> tuple[str, ...]:
        """The statistics whose |diff| / (max(|target|, |golden|) + 1e-10) exceeds ``threshold``
        (``verdict.statistic_distance``: NaN on one side only is beyond it), ``NaN/inf`` when the
        device counted more NaN/inf in the target than the golden holds, ``NaN/inf missing`` when
        fewer."""
        beyond = tuple(
            name
            for name, (t, g) in zip(STATISTICS, self.pairs(), strict=True)
            if t is not None and g is not None and statistic_distance(t, g) > threshold
        )
        counts = ((self.target_nan_inf, NAN_INF_APPEARED), (self.missing_nan_inf, NAN_INF_MISSING))
        return (*beyond, *(name for n, name in counts if n > 0))


def golden_only_stats(golden: GoldenSource | None, used: set[str]) -> list[StatsResult]:
    """The golden tensors no row used, for a run whose statistics table is its only result."""
    if golden is None:
        return []
    return [
        StatsResult(None, r.op_type, r.npu_name, r.ground_truth, r.tensor_index, None, reasons=r.reasons)
        for r in golden_only_rows(golden, used)
    ]


def _ratio(diff: float, golden: float) -> float:
    if math.isnan(diff) or math.isnan(golden):
        return math.nan
    return math.inf if golden == 0 else abs(diff / golden)


def compare_stats_file(entry: DumpEntry, golden: GoldenSource, matcher: Matcher | None) -> list[StatsResult]:
    """One result per tensor of one stats file (Index 0: the session numbers files); an
    unreadable file gets one."""
    try:
        rows = read_stats_csv(entry.path)
    except DumpFormatError as exc:
        return [unreadable_stats(entry, f"unreadable stats file: {exc}")]
    return [_compare_row(entry, row, golden, matcher) for row in rows]


def unreadable_stats(entry: DumpEntry, reason: str) -> StatsResult:
    """The one result of a stats file with no readable rows: it carries ``reason``."""
    op_name = entry.name.op_name
    return StatsResult(0, entry.name.op_type, op_name, NO_GOLDEN, f"{op_name}:*", entry.path,
                       reasons=(reason,), dump_readable=False)  # fmt: skip


def _compare_row(
    entry: DumpEntry, row: StatsRow, golden: GoldenSource, matcher: Matcher | None
) -> StatsResult:
    op_name = entry.name.op_name
    npu_name, originals = op_names(matcher, op_name)
    base = StatsResult(
        index=0,
        op_type=entry.name.op_type,
        npu_name=npu_name,
        ground_truth=NO_GOLDEN,
        tensor_index=f"{npu_name}:{row.kind}:{row.index}",
        dump_file=entry.path,
        data_type=row.data_type,
        format=row.format,
        shape=row.shape,
        count=row.count,
        target=Statistics.of_stats_row(row),
        reasons=_special_values(row),
    )
    try:
        kind = TensorKind(row.kind)
    except ValueError:
        return _with(base, reason=f"stats row of unknown kind {row.kind!r} (not Input/Output)")
    ref, found, reason = locate_golden(golden, matcher, op_name, kind, row.index)
    # As a dump file's rows: the op's originals in every row of it, ``*`` only with no counterpart
    truth = truth_column(originals, ref) if matcher is not None or found is not None else NO_GOLDEN
    if found is None:
        return _with(base, ground_truth=truth, reason=reason)
    base = replace(base, golden_key=found.key)
    try:
        array = found.load()
    except DumpcmpError as exc:
        return _with(base, ground_truth=truth, reason=str(exc))
    padding = row.count - array.size
    if padding < 0 or (padding and row.format.upper() in _PLAIN_FORMATS):
        reason = (
            f"element count mismatch: the stats file counts {row.count} elements, "
            f"the golden tensor holds {array.size}"
        )
        return _with(base, ground_truth=truth, reason=reason)
    counted = [c for c in _COUNTS if c in row.stats]
    if not counted and not any(name in row.stats for name in _COMPARABLE):
        reason = f"{NO_STATISTIC} (add Max, Min, Avg or L2norm to dump_stats)"
        return _with(base, ground_truth=truth, reason=reason)
    golden_counts = _golden_special(array)
    golden_nan = golden_counts[STAT_COLUMNS["Nan"]]
    golden_inf = sum(golden_counts.values()) - golden_nan
    # The golden's own NaN/inf are skipped by its statistics too: said, and not held against the
    # target where it counts as many; each kind the dump counts is compared with the golden's.
    held = [f"{n} {name}" for n, name in ((golden_nan, "NaN"), (golden_inf, "inf")) if n]
    gaps = [_count(row, c) - golden_counts[c] for c in counted]
    return replace(
        _with(base, ground_truth=truth, golden=Statistics.of_array(array, padding),
              reason=f"golden holds {', '.join(held)}" if held else ""),
        target_nan_inf=sum(g for g in gaps if g > 0),
        missing_nan_inf=sum(-g for g in gaps if g < 0),
        counts_compared=bool(counted),
    )  # fmt: skip


def _golden_special(array: np.ndarray) -> dict[str, int]:
    """The golden tensor's NaN, -inf and +inf counts, by the stats CSV's column of each (0 for
    integer data)."""
    nan = negative = positive = 0
    if np.issubdtype(array.dtype, np.inexact):
        for chunk in flat_chunks(array, _CHUNK):
            nan += int(np.count_nonzero(np.isnan(chunk)))
            infinite = np.isinf(chunk)
            below = int(np.count_nonzero(infinite & np.signbit(chunk)))
            negative += below
            positive += int(np.count_nonzero(infinite)) - below
    return dict(zip(_COUNTS, (nan, negative, positive), strict=True))


def _count(row: StatsRow, column: str) -> int:
    """A NaN/inf count of the dump; 0 where the device wrote NA."""
    n = row.stats[column]
    return 0 if math.isnan(n) else int(n)


def _special_values(row: StatsRow) -> tuple[str, ...]:
    counts = [(row.stats.get(STAT_COLUMNS[k], 0.0), k) for k in ("Nan", "Negative Inf", "Positive Inf")]
    found = [f"{int(n)} {name}" for n, name in counts if n and not math.isnan(n)]
    return (f"target holds {', '.join(found)}",) if found else ()


def _with(
    base: StatsResult, *, reason: str = "", ground_truth: str | None = None, golden: Statistics | None = None
) -> StatsResult:
    return replace(
        base,
        ground_truth=base.ground_truth if ground_truth is None else ground_truth,
        golden=golden,
        reasons=(*base.reasons, reason) if reason else base.reasons,
    )


# ---------------------------------------------------------------------------------------------
# The result file


def cells(result: StatsResult, threshold: float) -> list[str]:
    """One CSV line; statistics the dump does not carry are ``N/A`` (metrics.md §2)."""
    shape = "NaN" if result.shape is None else "[" + ",".join(str(d) for d in result.shape) + "]"
    verdict = ("FAIL" if result.failing(threshold) else "PASS") if result.compared else "N/A"
    return [
        "" if result.index is None else str(result.index),
        result.op_type, result.npu_name, result.ground_truth, result.tensor_index,
        result.data_type, result.format, shape, "" if result.count is None else str(result.count),
        *(_number(t) for t, _ in result.pairs()),
        *(_number(g) for _, g in result.pairs()),
        *(_number(d) for d in result.diffs()),
        *(_percent(r) for r in result.relative()),
        verdict, " ".join(result.reasons),
    ]  # fmt: skip


def _number(value: Stat) -> str:
    return "N/A" if value is None else number(value)


def _percent(value: Stat) -> str:
    if value is None or not math.isfinite(value):
        return _number(value)
    return f"{value * 100:.6f}%"


def write_stats_csv(path: Path, results: Iterable[StatsResult], threshold: float) -> Path:
    """The statistics table, written like the offline-data result file (whole, never over another)."""
    return write_new_table(path, STATS_RESULT_COLUMNS, (cells(r, threshold) for r in results))


def write_stats_xlsx(path: Path, results: Iterable[StatsResult], thresholds: Thresholds) -> Path:
    """The statistics table's xlsx twin (``--xlsx``), graded and advised as its CSV would be."""
    from dumpcmp.host.sinks.xlsx_file import write_xlsx_cells

    rows = [cells(r, thresholds.statistics) for r in results]
    return write_xlsx_cells(path, STATS_RESULT_COLUMNS, rows, thresholds=thresholds)
