"""What a TorchAir compare amounts to, in a few terminal lines; never an all-clear nothing earned."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dumpcmp.host.metrics.torchair import RealValues
from dumpcmp.host.summary import (
    MAX_FILES_SHOWN,
    MAX_UNSEEN_SHOWN,
    ReasonGroup,
    grouped_reasons,
    reason_lines,
)
from dumpcmp.host.torchair.rows import StatsValues, TorchairRow
from dumpcmp.host.torchair.run import TorchairOutcome
from dumpcmp.host.verdict import (
    FAIL,
    NOT_COMPARED,
    PASS,
    NotCompared,
    StatisticsRow,
    statistics_drift,
    statistics_error,
)
from dumpcmp.printable import counted

# Statistics agree on tensors that differ: noise of zero mean or a permutation keeps max, min,
# mean and L2 norm within the limits, so an all-PASS of statistics is no all-clear without a word.
STATISTICS_CAVEAT = (
    "note: statistics mode compares max, min, mean and L2 norm only; noise or a permutation can leave "
    "them within limits: compare full tensors (--summary-mode real) to rule it out"
)


@dataclass(frozen=True, slots=True)
class TorchairTally:
    pairs: int
    passed: int
    failed: int
    not_compared: tuple[ReasonGroup, ...]  # by kind of reason (names blanked), most common first
    statistics_only: bool  # every pair not compared lacks data because a side holds statistics only
    unreadable: int  # GE tensors whose file or data could not be read
    first_fail: str | None
    # Statistics mode: where the statistics first leave the run's noise (a line); None when no row
    # jumps (in a run with a FAIL: statistics cannot place the fault) and in other modes.
    drift: str | None = None
    statistics: bool = False  # the rows are statistics-mode rows
    # Right before the first FAIL, back to the last pair with numbers, the pairs not compared (a
    # file unreadable, no counterpart): the fault may start in one of them.
    unseen_before: tuple[TorchairRow, ...] = ()
    skipped: int = 0  # files of the run passed over (listed above): one may hold where it starts
    # Damaged lines of reduced files that name no file (listed above): each stood for a file not
    # compared; ``lost_target`` of them GE dump files, whose tensors are in no count.
    lost_lines: int = 0
    lost_target: int = 0

    @property
    def compared(self) -> int:
        return self.passed + self.failed

    @classmethod
    def of(cls, outcome: TorchairOutcome) -> TorchairTally:
        rows = [(s.key, r) for s in outcome.shards for r in s.rows]
        missing = [_reason(r) for _, r in rows if r.result == NOT_COMPARED]
        fails = [(k, r) for k, r in rows if r.result == FAIL]
        first = None
        unseen: tuple[TorchairRow, ...] = ()
        if fails:
            key, row = fails[0]
            first = f"first FAIL: rank {key.rank} token {key.token}, {row.api_name}: {_reason(row)}"
            shard = next(s.rows for s in outcome.shards if s.key == key)
            unseen = _unseen_before(shard[: shard.index(row)])
        statistics = any(isinstance(r.values, StatsValues) for _, r in rows)
        return cls(
            pairs=len(rows),
            passed=sum(1 for _, r in rows if r.result == PASS),
            failed=len(fails),
            not_compared=grouped_reasons(missing),
            statistics_only=bool(missing)
            and all(_statistics_only(r) for _, r in rows if r.result == NOT_COMPARED),
            unreadable=sum(1 for _, r in rows if not r.dump_readable),
            first_fail=first,
            drift=_drift(outcome) if statistics else None,
            statistics=statistics,
            unseen_before=unseen,
            skipped=len(outcome.skipped) - outcome.lost_lines,
            lost_lines=outcome.lost_lines,
            lost_target=outcome.lost_target,
        )


def _unseen_before(rows: Sequence[TorchairRow]) -> tuple[TorchairRow, ...]:
    """The rows not compared at the end of ``rows`` (those before the first FAIL), nearest first."""
    unseen = []
    for row in reversed(rows):
        if row.result != NOT_COMPARED:
            break
        unseen.append(row)
    return tuple(unseen)


def _drift(outcome: TorchairOutcome) -> str | None:
    """The first shard's place where the statistics move away (``verdict.statistics_drift``)."""
    for shard in outcome.shards:
        compared = [
            (r, r.values)
            for r in shard.rows
            if r.result != NOT_COMPARED and isinstance(r.values, StatsValues)
        ]
        # No element count: the result table has no shape, and the advisor, reading the table, must
        # find the same place (the golden's largest magnitude is the scale of both).
        drift = statistics_drift([statistics_error(StatisticsRow(values.pairs())) for _, values in compared])
        if drift is not None:
            key = shard.key
            return (
                f"statistics move away from the golden's first at rank {key.rank} token {key.token}, "
                f"{compared[drift.at][0].api_name}: {drift.words()}"
            )
    return None


def _statistics_only(row: TorchairRow) -> bool:
    return isinstance(row.values, RealValues) and row.values.not_compared is NotCompared.STATISTICS_ONLY


def _reason(row: TorchairRow) -> str:
    return "; ".join(row.reasons) or "no reason given"


def summarize_torchair(outcome: TorchairOutcome) -> list[str]:
    tally = TorchairTally.of(outcome)
    files = [p for s in outcome.shards for p in (s.result_file, s.xlsx_file) if p is not None]
    lines = [f"result: {p}" for p in files[:MAX_FILES_SHOWN]]
    if len(files) > MAX_FILES_SHOWN:
        lines.append(f"… and {len(files) - MAX_FILES_SHOWN} more result files")
    not_compared = sum(group.count for group in tally.not_compared)
    lines.append(
        f"tensor pairs: {tally.pairs}, compared: {tally.compared} "
        f"(PASS {tally.passed}, FAIL {tally.failed}), not compared: {not_compared}, "
        f"unreadable NPU tensors: {tally.unreadable}"
        + (
            f", GE dump files lost to a damaged summary line: {tally.lost_target} (their tensors are in "
            "no count)"
            if tally.lost_target
            else ""
        )
    )
    lines += reason_lines(tally.not_compared)
    if tally.compared and tally.compared * 2 < tally.pairs:
        lines.append(
            f"warning: only {tally.compared} of {tally.pairs} tensor pairs were compared; "
            "the verdict below covers those only"
        )
    if tally.drift is not None:
        lines.append(tally.drift)
    elif tally.failed and tally.statistics:
        lines.append(
            "statistics cannot place the fault: no tensor's statistics jump away from the golden's above "
            "the run's noise before it; the first FAIL may lie downstream of the fault "
            "(compare real data up to it: --summary-mode real)"
        )
    if tally.first_fail is not None:
        lines.append(tally.first_fail)
        lines += _may_start_earlier(tally)
    elif tally.compared:
        lines.append(f"no FAIL: all {tally.compared} compared tensor pairs PASS")
        if tally.statistics:
            lines.append(STATISTICS_CAVEAT)
    return lines


def _may_start_earlier(tally: TorchairTally) -> list[str]:
    """Offline's warning (``summary.Divergence``): pairs right before the first FAIL that could not
    be compared, and files passed over, may hide where the fault starts."""
    lines = []
    if tally.unseen_before:
        count = len(tally.unseen_before)
        lines.append(
            f"warning: it may start earlier: {counted(count, 'tensor pair')} right before it "
            f"could not be compared:"
        )
        lines += [f"  {row.api_name}: {_reason(row)}" for row in tally.unseen_before[:MAX_UNSEEN_SHOWN]]
        if count > MAX_UNSEEN_SHOWN:
            lines.append(f"  … and {count - MAX_UNSEEN_SHOWN} more")
    if tally.skipped:
        lines.append(
            f"warning: it may start earlier: {counted(tally.skipped, 'file')} "
            f"{'was' if tally.skipped == 1 else 'were'} skipped (above), and one among them is not compared"
        )
    if tally.lost_lines:
        lines.append(
            f"warning: it may start earlier: {counted(tally.lost_lines, 'damaged summary line')} "
            f"(above) {'stands' if tally.lost_lines == 1 else 'stand'} for a dump file not compared"
        )
    return lines


def nothing_compared_torchair(outcome: TorchairOutcome) -> str | None:
    """The one-line error for a run that compared nothing; else None."""
    tally = TorchairTally.of(outcome)
    if tally.compared:
        return None
    if tally.statistics_only:
        return (
            f"nothing compared: none of the {tally.pairs} tensor pairs has data on both sides, only "
            "statistics (the dumps were reduced by dumpcmp reduce, or are stats dumps): "
            "use --summary-mode statistics or md5"
        )
    top = f" (most often: {tally.not_compared[0].example})" if tally.not_compared else ""
    return (
        f"nothing compared: none of the {tally.pairs} tensor pairs has numbers{top}; "
        "check that -gp is the FX dump (or fusion-off GE dump) of this very run"
    )
