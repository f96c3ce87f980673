"""Red / yellow / green per result row (metrics.md §2 colours), for both metric families.

The spec writes the colour rules in TorchAir column names; the offline_data family reads them
as follows (every threshold is a field of ``GradeThresholds``):

==========================================  ===============================  ==============================
rule (metrics.md §2)                        torchair                         offline_data
==========================================  ===============================  ==============================
red: NaN/inf on the target side only        the row's NaN/inf counts, or a   the row's NaN/inf counts
(``verdict.special_side``: the summary's    metric cell spelled ``NaN``      (``verdict.SpecialValues``);
"nan/inf appeared")                         (real data: NaN in the data);    statistics: the dump's counts
                                            statistics: NaN/inf statistics   beyond the golden's
                                            on the NPU side only
red: MaxAbsErr > 1e10                       MaxAbsErr                        MaxAbsoluteError
red: MaxRelativeErr >= 0.5                  MaxRelativeErr (statistics:      MaxRelativeError, only on a row
                                            its percentage / 100)            that also disagrees (below)
red: inputs agree, an output does not       One Thousandth Err Ratio         verdict.Thresholds: no breach
                                            > 0.9 / < 0.6; statistics and    agrees, a breach disagrees
                                            md5: Result PASS / FAIL
yellow: error grows >= 10x in -> out        MaxAbsErr (statistics:           RelativeEuclideanDistance
                                            NormRelativeErr)
yellow: agree measure or cosine drops       One Thousandth Err Ratio,        CosineSimilarity
> 0.1 in -> out                             Cosine
==========================================  ===============================  ==============================

Choices the spec leaves open, and why:

* Offline MaxRelativeError skips only golden values that are exactly zero (|y| <= eps64), so
  golden values near zero push it past 0.5 on plain rounding: a clean small_cnn simulation has
  1.57 at a fused conv. Alone it would paint clean runs red, so it counts only together with a
  threshold breach.
* Growth is measured against ``max(input error, error_floor)``: an op whose inputs are exact
  (error 0) and whose output carries rounding would otherwise grow "infinitely".
* A row that disagrees and matches no red or yellow rule (its op's inputs are not in the table,
  or they disagree too: it inherits the error) is yellow, not green: it is not normal.
* A TorchAir One Thousandth ratio between 0.6 and 0.9 neither agrees nor disagrees: no rule
  makes it red or yellow on its own (fp16 rounding alone leaves many elements above 0.001).
* A row with no numbers is ``NONE`` (not compared, golden-only), unless NaN/inf in its data made
  every metric NaN: that row was compared, and is judged (``verdict.judged``).

Growth and drops compare an output row with the worst of its op's compared input rows; an
op's input and output rows are those of the same op (``group_ops``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum

from dumpcmp.host.report.table import OFFLINE_DATA, ResultTable, TensorResult
from dumpcmp.host.verdict import (
    STATISTICS,
    Agreement,
    Drift,
    DriftLimits,
    Side,
    StatisticError,
    StatisticsRow,
    Thresholds,
    agreement,
    judged,
    statistics_drift,
    statistics_error,
)

__all__ = [
    "Grade",
    "GradeThresholds",
    "OpRows",
    "RowGrade",
    "RowJudge",
    "amplification",
    "grade_rows",
    "group_ops",
    "merged_ops",
    "metric_evidence",
    "worst",
]

_SPECIAL_CELLS = {"NaN", "nan", "inf", "-inf"}


class Grade(str, Enum):
    RED = "red"  # abnormal precision
    YELLOW = "yellow"  # suspicious
    GREEN = "green"  # normal
    NONE = "none"  # not compared: no numbers to judge


@dataclass(frozen=True, slots=True)
class RowGrade:
    grade: Grade
    why: str  # the rule that decided, with the values; "" for green and none


@dataclass(frozen=True, slots=True)
class GradeThresholds:
    """The colour rules' thresholds (metrics.md §2 defaults)."""

    verdict: Thresholds = field(default_factory=Thresholds)  # offline agree / disagree
    max_abs: float = 1e10  # red above
    max_relative: float = 0.5  # red at or above
    ratio_agree: float = 0.9  # One Thousandth Err Ratio above: inputs agree
    ratio_disagree: float = 0.6  # below: outputs do not
    growth: float = 10.0  # yellow when the error grows this many times in -> out
    drop: float = 0.1  # yellow when cosine / the ratio drops more than this in -> out
    error_floor: float = 1e-3  # errors below this count as this much for growth
    drift: DriftLimits = field(default_factory=DriftLimits)  # where statistics leave the run's noise


@dataclass(frozen=True, slots=True)
class OpRows:
    """One target op's rows: its compared-or-not input and output tensors, in table order."""

    order: int
    op_name: str
    originals: tuple[str, ...]
    inputs: tuple[TensorResult, ...]
    outputs: tuple[TensorResult, ...]
    # Its rows are a statistics result's, in a shard whose tensor result has none of the op
    # (``merged_ops``): judged by that table's judge.
    statistics: bool = False


def group_ops(table: ResultTable) -> tuple[OpRows, ...]:
    """The table's target ops in execution order (golden-only rows left out)."""
    by_op: dict[tuple[int, str], list[TensorResult]] = {}
    for row in table.targets():
        assert row.order is not None  # targets() has no golden-only rows
        by_op.setdefault((row.order, row.op_name), []).append(row)
    ops = []
    for (order, name), rows in sorted(by_op.items(), key=lambda item: item[0][0]):
        if table.family == OFFLINE_DATA:  # GroundTruth names every original op on each row
            originals = next((r.originals for r in rows if r.io == "output" and r.originals), ())
            originals = originals or next((r.originals for r in rows if r.originals), ())
        else:  # a fused GE op's inputs name its first FX node, its outputs its last
            originals = tuple(dict.fromkeys(o for r in rows if not r.self_check for o in r.originals))
        ops.append(
            OpRows(
                order,
                name,
                originals,
                tuple(r for r in rows if r.io == "input"),
                tuple(r for r in rows if r.io != "input"),  # "" (unknown) counts as an output
            )
        )
    return tuple(ops)


def merged_ops(tensors: ResultTable, statistics: ResultTable) -> tuple[OpRows, ...]:
    """The ops of one shard that holds tensor dumps and statistics dumps (``result_*`` and
    ``stats_result_*`` of the same run), in execution order: an op's tensor rows where the tensor
    result has any, else its statistics rows (``OpRows.statistics``).

    Both tables are in execution order and number their own dumps; the statistics result, which
    a run dumps for every op, gives the order and the numbering (the summary's too): a tensor op
    takes its place there. A tensor op the statistics result lacks keeps its own Index and comes
    right before the next op both hold (after that gap's statistics-only ops: which of two
    captures' ops ran first there, neither table says)."""
    tensor_ops = group_ops(tensors)
    tensor_names = {op.op_name for op in tensor_ops}
    statistics_ops = group_ops(statistics)
    places = {op.op_name: op.order for op in statistics_ops}
    merged: list[OpRows] = []
    taken: set[str] = set()
    pending = iter(tensor_ops)
    for op in statistics_ops:
        if op.op_name not in tensor_names:
            merged.append(replace(op, statistics=True))
            continue
        for tensor_op in pending if op.op_name not in taken else ():
            merged.append(replace(tensor_op, order=places.get(tensor_op.op_name, tensor_op.order)))
            taken.add(tensor_op.op_name)
            if tensor_op.op_name == op.op_name:
                break
    merged += [replace(op, order=places.get(op.op_name, op.order)) for op in pending]
    return tuple(merged)


class RowJudge:
    """The family's reading of one row: agreement, error, closeness, red-alone reasons."""

    def __init__(self, table: ResultTable, thresholds: GradeThresholds) -> None:
        self.table = table
        self.t = thresholds
        # An offline tensor result; an offline statistics result is judged as TorchAir's
        # statistics tables are (same columns, its own PASS/FAIL verdict).
        self.offline = table.family == OFFLINE_DATA and table.mode != "statistics"
        self._columns = {name: i for i, name in reversed(list(enumerate(table.header)))}
        self._agreements: dict[int, Agreement] = {}  # by row position: asked again and again
        self._error_name = self._pick_error_name()
        self.drift, self.drift_position = self._statistics_drift()

    def _statistics_drift(self) -> tuple[Drift | None, int | None]:
        """Where a statistics table's statistics leave the noise the run shows before (the row's
        position); (None, None) for other tables, and when no row jumps."""
        if self.table.mode != "statistics" or not {"NPU max", "Max diff"} & self._columns.keys():
            return None, None
        rows = [r for r in self.table.targets() if self.judged(r)]
        drift = statistics_drift([self.statistics_error(r) for r in rows], self.t.drift)
        return (drift, rows[drift.at].position) if drift is not None else (None, None)

    def statistics_error(self, row: TensorResult) -> StatisticError:
        """A statistics row's distance from the golden along the run (``verdict.statistics_error``)."""
        if "NPU max" in self._columns:  # an offline statistics table: both sides and the count
            pairs = [
                (self._stat(row, f"NPU {n.lower()}"), self._stat(row, f"Bench {n.lower()}"))
                for n in STATISTICS
            ]
            count = self._cell(row, "Count")
            return statistics_error(StatisticsRow(pairs, int(count) if count.isdigit() else None,
                                                  row.target_nan_inf > 0))  # fmt: skip
        return statistics_error(StatisticsRow([self._from_diff(row, n, rel) for n, rel in _RELATIVE.items()]))

    def _stat(self, row: TensorResult, name: str) -> float | None:
        """A statistic cell: None for ``N/A`` (the dump does not carry it), NaN for ``NaN``."""
        return None if self._cell(row, name) in ("N/A", "") else self._number(row, name)

    def _from_diff(self, row: TensorResult, name: str, relative: str) -> tuple[float | None, float | None]:
        """(target, golden) of statistic ``name`` from a TorchAir table, which writes only the diff
        and |diff / golden|: the golden's magnitude is their ratio (0 where the ratio is inf), the
        target the golden plus the diff. The golden's sign is not written, but the measure needs
        only the shift and the magnitudes (an L2 norm is never negative). Unknown (None) where the
        diff is 0 (no magnitude follows) or NaN (one side or both)."""
        diff, ratio = row.metric(f"{name} diff"), self._fraction(row, relative)
        if not diff or math.isnan(diff) or math.isnan(ratio) or ratio == 0:
            return None, None
        golden = 0.0 if math.isinf(ratio) else abs(diff) / ratio
        return golden + diff, golden

    def _pick_error_name(self) -> str:
        if self.offline:
            return "RelativeEuclideanDistance"
        if self.table.mode != "statistics":
            return "MaxAbsErr"
        # A statistics dump may lack the L2 norm (N/A): then the mean's relative error.
        for name in ("NormRelativeErr", "MeanRelativeErr"):
            if any(not math.isnan(r.metric(name)) for r in self.table.rows):
                return name
        return "NormRelativeErr"

    # -- the family's measures -------------------------------------------------------------

    @property
    def error_name(self) -> str:
        return self._error_name

    @property
    def closeness_names(self) -> tuple[str, ...]:
        if self.offline:
            return ("CosineSimilarity",)
        return ("One Thousandth Err Ratio", "Cosine") if self.table.mode == "real" else ()

    def error(self, row: TensorResult) -> float:
        """The row's error measure; a statistics percentage as a fraction, like the others."""
        return self._fraction(row, self.error_name)

    def judged(self, row: TensorResult) -> bool:
        """True when the row can be judged: it has numbers, or NaN/inf in its data (which can
        make every metric NaN, indistinguishable from "not compared" by the numbers alone)."""
        if row.unreadable:
            return False
        if row.values is not None:
            return judged(row.values)
        if not self.offline and row.result == "N/A":
            return False  # the verdict could not judge it (md5 of two dtypes, statistics missing)
        if row.compared or row.special is not None:
            return True
        if self.table.mode == "statistics" and row.result in ("PASS", "FAIL"):
            return True  # judged by NaN/inf counts alone (``dump_stats: Nan``): no statistic is a number
        # TorchAir spells NaN in the data "NaN" and a cell it could not compute "N/A".
        return not self.offline and any(self._cell(row, name) in _SPECIAL_CELLS for name in row.metrics)

    def agreement(self, row: TensorResult) -> Agreement:
        known = self._agreements.get(row.position)
        if known is None:
            known = self._agreements[row.position] = self._agreement(row)
        return known

    def verdict(self, row: TensorResult) -> Agreement:
        """Whether the row passed the comparison's own verdict: what the advisor judges by, so its
        first divergence is the summary's first FAIL. TorchAir rows carry the verdict (Result);
        offline rows are judged by the same thresholds the summary uses (``agreement``). The
        colour rules keep the spec's One Thousandth ratio bounds (``agreement``).

        A statistics row also disagrees once its statistics have moved away from the golden's
        (``verdict.statistics_drift``), though within the fixed PASS rule: the divergence starts
        where they leave the run's noise, not where the rule first catches it downstream."""
        if self.drift is not None and self.judged(row) and self.drift.moved(self.statistics_error(row)):
            return Agreement.DISAGREE
        if not self.offline and row.result in ("PASS", "FAIL") and self.judged(row):
            return Agreement.AGREE if row.result == "PASS" else Agreement.DISAGREE
        return self.agreement(row)

    def _agreement(self, row: TensorResult) -> Agreement:
        if not self.judged(row):
            return Agreement.UNKNOWN
        if row.values is not None:
            return agreement(row.values, self.t.verdict)
        if self.table.mode == "real":
            ratio = row.metric("One Thousandth Err Ratio")
            if math.isnan(ratio):
                return Agreement.DISAGREE if self._cell(row, "Cosine") == "NaN" else Agreement.UNKNOWN
            if ratio > self.t.ratio_agree:
                return Agreement.AGREE
            return Agreement.DISAGREE if ratio < self.t.ratio_disagree else Agreement.BETWEEN
        if row.result in ("PASS", "FAIL"):
            return Agreement.AGREE if row.result == "PASS" else Agreement.DISAGREE
        return Agreement.UNKNOWN

    def breaches(self, row: TensorResult) -> tuple[str, ...]:
        """The verdict thresholds an offline row is beyond, as the summary words them."""
        return self.t.verdict.breaches(row.values) if row.values is not None else ()

    def red_alone(self, row: TensorResult) -> str:
        """Why the row is red on its own (no look at its op's other rows); "" when it is not."""
        if row.side is Side.TARGET:  # the verdict's ``nan/inf appeared``, whatever the row's kind
            return f"NaN/inf on the target side only ({_target_special(row)})"
        if not self.offline and self.table.mode == "real" and self._cell(row, "MaxAbsErr") in _SPECIAL_CELLS:
            return f"MaxAbsErr {self._cell(row, 'MaxAbsErr')}: NaN/inf in the data"
        max_abs_name = "MaxAbsoluteError" if self.offline else "MaxAbsErr"
        max_abs = row.metric(max_abs_name)
        if max_abs > self.t.max_abs:
            return f"{max_abs_name} {max_abs:g} > {self.t.max_abs:g}"
        rel_name = "MaxRelativeError" if self.offline else "MaxRelativeErr"
        rel = self._fraction(row, rel_name)
        if rel >= self.t.max_relative and (not self.offline or self.breaches(row)):
            return f"{rel_name} {rel:g} >= {self.t.max_relative:g}"
        return ""

    def _cell(self, row: TensorResult, name: str) -> str:
        at = self._columns.get(name)
        return row.cells[at].strip() if at is not None else ""

    def _number(self, row: TensorResult, name: str) -> float:
        """A cell that holds a plain number (NaN when it holds none: ``N/A``, empty)."""
        try:
            return float(self._cell(row, name))
        except ValueError:
            return math.nan

    def is_percent(self, row: TensorResult, name: str) -> bool:
        return self._cell(row, name).endswith("%")

    def _fraction(self, row: TensorResult, name: str) -> float:
        """A relative error as a fraction (statistics mode writes percentages)."""
        value = row.metric(name)
        return value / 100 if self.is_percent(row, name) else value


def _target_special(row: TensorResult) -> str:
    """What shows a row's target-only NaN/inf: its counts, the dump's counts, or its statistics."""
    if row.special is not None:
        golden = f", {row.special.golden} golden" if row.special.golden else ""
        return f"{row.special.target} values{golden}"
    if row.target_nan_inf:
        return f"the dump counts {row.target_nan_inf} beyond the golden's"
    return "its statistics are NaN or inf on the NPU side only"


_RELATIVE = {"Max": "MaxRelativeErr", "Min": "MinRelativeErr", "Mean": "MeanRelativeErr",
             "L2norm": "NormRelativeErr"}  # fmt: skip


def grade_rows(table: ResultTable, thresholds: GradeThresholds | None = None) -> tuple[RowGrade, ...]:
    """One grade per ``table.rows``, in the same order."""
    judge = RowJudge(table, thresholds or GradeThresholds())
    grades: dict[int, RowGrade] = {}
    for op in group_ops(table):
        for row in op.inputs:
            grades[row.position] = _grade_alone(judge, row)
        for row in op.outputs:
            grades[row.position] = _grade_output(judge, row, op.inputs)
    none = RowGrade(Grade.NONE, "")
    return tuple(grades.get(row.position, none) for row in table.rows)


def _grade_alone(judge: RowJudge, row: TensorResult) -> RowGrade:
    if not judge.judged(row):
        return RowGrade(Grade.NONE, "")
    red = judge.red_alone(row)
    if red:
        return RowGrade(Grade.RED, red)
    agreement = judge.agreement(row)
    if agreement is Agreement.DISAGREE:
        return RowGrade(Grade.YELLOW, _disagrees(judge, row))
    return RowGrade(Grade.GREEN, "")


def _grade_output(judge: RowJudge, row: TensorResult, inputs: Sequence[TensorResult]) -> RowGrade:
    alone = _grade_alone(judge, row)
    compared = [r for r in inputs if judge.judged(r)]
    if alone.grade in (Grade.RED, Grade.NONE) or not compared:
        return alone
    t = judge.t
    agreements = [judge.agreement(r) for r in compared]
    if judge.agreement(row) is Agreement.DISAGREE and all(a is Agreement.AGREE for a in agreements):
        return RowGrade(Grade.RED, f"the op's inputs agree, this output does not ({_disagrees(judge, row)})")
    growth = amplification(judge.error(row), worst(judge.error(r) for r in compared), t.error_floor)
    if growth >= t.growth:
        return RowGrade(Grade.YELLOW, f"{judge.error_name} grows {growth:.1f}x from the op's inputs")
    for name in judge.closeness_names:
        worst_in = -worst(-r.metric(name) for r in compared)
        drop = worst_in - row.metric(name)
        if drop > t.drop:
            return RowGrade(Grade.YELLOW, f"{name} drops {drop:.3f} from the op's inputs")
    if alone.grade is Grade.YELLOW:
        return RowGrade(Grade.YELLOW, f"{alone.why}; its inputs disagree too (inherited)")
    return alone


def amplification(output_error: float, input_error: float, floor: float) -> float:
    """Output error over input error, both raised to ``floor``; NaN when either is NaN."""
    if math.isnan(output_error) or math.isnan(input_error):
        return math.nan
    return max(output_error, floor) / max(input_error, floor)


def worst(values: Iterable[float]) -> float:
    """The largest of ``values`` that is a number; NaN when none is."""
    numbers = [v for v in values if not math.isnan(v)]
    return max(numbers) if numbers else math.nan


def _disagrees(judge: RowJudge, row: TensorResult) -> str:
    if judge.offline:
        return "beyond thresholds: " + ", ".join(judge.breaches(row))
    if judge.table.mode == "real":
        return f"One Thousandth Err Ratio {row.metric('One Thousandth Err Ratio'):g}"
    return f"Result {row.result}"


def metric_evidence(judge: RowJudge, row: TensorResult) -> Mapping[str, float]:
    """The row's metric values worth quoting: the family's closeness and error columns."""
    names = (*judge.closeness_names, judge.error_name)
    if not judge.offline and judge.table.mode == "real":
        names = (*names, "MaxRelativeErr")  # what the TorchAir verdict judges, besides Cosine
    # Quoted as written: a statistics table's percentage keeps its unit in the name.
    return {
        f"{name} (%)" if judge.is_percent(row, name) else name: row.metric(name)
        for name in names
        if not math.isnan(row.metric(name))
    }
