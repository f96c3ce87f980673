"""What a TorchAir compare amounts to, in a few terminal lines; never an all-clear nothing earned."""

from __future__ import annotations

from dataclasses import dataclass

from dumpcmp.host.summary import MAX_FILES_SHOWN, ReasonGroup, grouped_reasons, reason_lines
from dumpcmp.host.torchair.family import STATISTICS_ONLY
from dumpcmp.host.torchair.rows import TorchairRow
from dumpcmp.host.torchair.run import TorchairOutcome
from dumpcmp.host.verdict import FAIL, NOT_COMPARED, PASS


@dataclass(frozen=True, slots=True)
class TorchairTally:
    pairs: int
    passed: int
    failed: int
    not_compared: tuple[ReasonGroup, ...]  # by kind of reason (names blanked), most common first
    statistics_only: bool  # every pair not compared lacks data because a side holds statistics only
    unreadable: int  # GE tensors whose file or data could not be read
    first_fail: str | None

    @property
    def compared(self) -> int:
        return self.passed + self.failed

    @classmethod
    def of(cls, outcome: TorchairOutcome) -> TorchairTally:
        rows = [(s.key, r) for s in outcome.shards for r in s.rows]
        missing = [_reason(r) for _, r in rows if r.result == NOT_COMPARED]
        fails = [(k, r) for k, r in rows if r.result == FAIL]
        first = None
        if fails:
            key, row = fails[0]
            first = f"first FAIL: rank {key.rank} token {key.token}, {row.api_name}: {_reason(row)}"
        return cls(
            pairs=len(rows),
            passed=sum(1 for _, r in rows if r.result == PASS),
            failed=len(fails),
            not_compared=grouped_reasons(missing),
            statistics_only=bool(missing) and all(STATISTICS_ONLY in reason for reason in missing),
            unreadable=sum(1 for _, r in rows if not r.dump_readable),
            first_fail=first,
        )


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
    )
    lines += reason_lines(tally.not_compared)
    if tally.compared and tally.compared * 2 < tally.pairs:
        lines.append(
            f"warning: only {tally.compared} of {tally.pairs} tensor pairs were compared; "
            "the verdict below covers those only"
        )
    if tally.first_fail is not None:
        lines.append(tally.first_fail)
    elif tally.compared:
        lines.append(f"no FAIL: all {tally.compared} compared tensor pairs PASS")
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
