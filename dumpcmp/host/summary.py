"""What a compare run amounts to, in a few terminal lines: never an all-clear nothing earned.

The summary counts what happened to every target tensor (compared with numbers, compared by
statistics, not compared and why, dump file unreadable) and the golden tensors nothing used.
Unreadable dump files come before the first-divergence line: a corrupt file of the culprit op
would otherwise move "first divergence" downstream without a word. A run that compared nothing
is an error (``nothing_compared``); a run that compared under half its tensors gets a warning.
What the thresholds do not judge is said beside them: float16 overflow (OverFlow YES), NaN/inf
that appeared on the target side, and tensors holding NaN/inf at the same positions on both sides
(no divergence when the rest agrees). A pair whose NaN/inf made every metric NaN was compared: NaN
data is a finding, and "nothing compared" is kept for runs where no pair could be formed.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from dumpcmp.errors import BadFileNameError
from dumpcmp.host.file_pair import NPY_SUFFIX
from dumpcmp.host.row_verdicts import (
    APPEARED,
    COMPARED,
    DIVERGES,
    NOTHING_FINITE,
    OVERFLOW,
    SAME_SPECIAL,
    TARGET,
    UNREADABLE,
    RowVerdicts,
    verdicts_of,
)
from dumpcmp.host.rows import NO_GOLDEN, ResultRow
from dumpcmp.host.session import CompareOutcome, NumberedRows, ShardOutcome
from dumpcmp.host.stats_compare import NAN_INF_APPEARED, NAN_INF_MISSING, NO_STATISTIC, StatsResult
from dumpcmp.host.verdict import (
    Drift,
    Thresholds,
    judged,
    statistics_drift,
    statistics_error,
)
from dumpcmp.printable import counted
from dumpcmp.proto.names import STATS_SUFFIX, DumpName, parse_dump_name, sanitize_dump_name

MAX_REASONS_SHOWN = 5
MAX_UNREADABLE_SHOWN = 10
MAX_UNSEEN_SHOWN = 3
MAX_FILES_SHOWN = 10  # result files listed one per line up to this many
FILES_SHOWN_OF_MANY = 3
# A word holding one of these is a name (op, file, path, shape, number), blanked when grouping.
_NAME_CHARS = re.compile(r"[0-9/\\'\"\[\]{}:._*]")


@dataclass(frozen=True, slots=True)
class ReasonGroup:
    """Target tensors not compared for the same reason, with the first one's words."""

    count: int
    example: str


Target = ResultRow | StatsResult  # a target tensor's row, compared by value or by statistics


@dataclass(frozen=True, slots=True)
class Place:
    """Where a target tensor is: its model, step, Index, op and tensor."""

    model: str
    step: str
    index: int
    op_type: str
    npu_name: str
    tensor_index: str
    device: str = ""
    shard: str = ""  # the shard's label (``ShardOutcome.label``): "pass 2"

    @classmethod
    def of(cls, shard: ShardOutcome, row: Target) -> Place:
        assert row.index is not None  # only target rows have a place
        key = shard.key
        return cls(
            key.model, key.step, row.index, row.op_type, row.npu_name, row.tensor_index, key.device,
            shard.label,
        )  # fmt: skip

    def text(self, *, with_model: bool = False, with_device: bool = False) -> str:
        """Where it is; the device and model named when the run has several of them, and the
        shard's label where it has one."""
        device = f"device {self.device}, " if with_device else ""
        model = f"model {self.model}, " if with_model else ""
        shard = f"{self.shard}, " if self.shard else ""
        op = _op(self.op_type, self.npu_name)
        return f"{shard}{device}{model}step {self.step}, index {self.index} {op} ({self.tensor_index})"


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first diverging tensor of a run: where it is and which limits it broke."""

    place: Place
    ground_truth: str
    dump_file: Path | None
    breaches: tuple[str, ...]
    reasons: tuple[str, ...] = ()  # the row's own words, e.g. which side holds the NaN
    # Right before it, tensors without numbers that may hide where it starts (``_unseen_before``).
    unseen_before: tuple[Target, ...] = ()
    # The task ids of the dump file before its own and of its own, where they skip (``_skipped``).
    skipped: tuple[int, int] | None = None
    # Set where the place is numbered as in the run's statistics capture (``_numbered_in_model``):
    # the ops of that capture whose tasks lie in the skip, as the summary names them.
    skipped_ops: tuple[str, ...] | None = None

    def lines(self, label: str, *, with_device: bool = False) -> list[str]:
        where = f"; dump file {self.dump_file}" if self.dump_file is not None else ""
        why = "".join(f" ({reason})" for reason in self.reasons)
        breaches = ", ".join(self.breaches)
        place = self.place.text(with_device=with_device)
        lines = [f"{label}: {place}: {breaches}{why}; ground truth {self.ground_truth}{where}"]
        if self.skipped is not None:
            # The advisor's hedge for a gap in the op numbering; the Index never shows one.
            before, own = self.skipped
            skip = f"the dump's task ids skip from {before} to {own} right before it"
            if self.skipped_ops:  # a capture of a few ops (a hunt's pass): the run's own op names
                ops, were = ", ".join(self.skipped_ops), "was" if len(self.skipped_ops) == 1 else "were"
                lines.append(
                    f"warning: it may start earlier: {ops}, right before it, {were} not in its dump "
                    f"(its task ids skip from {before} to {own})"
                )
            elif self.skipped_ops is not None:  # numbered as the run, but no op of it is known there
                lines.append(
                    f"warning: it may start earlier: an op before it may not have been dumped ({skip})"
                )
            else:
                lines.append(
                    "warning: it may start earlier: an op before it may not have been dumped "
                    f"({skip}; index {self.place.index} counts the dumped ops only)"
                )
        if self.unseen_before:
            lines.append(
                f"warning: it may start earlier: {_unseen_count(self.unseen_before)} right before it "
                "could not be compared:"
            )
            for row in self.unseen_before[:MAX_UNSEEN_SHOWN]:
                lines.append(f"  {_row_place(row)}: {_reason(row)}")
            count = len(self.unseen_before)
            if count > MAX_UNSEEN_SHOWN:
                lines.append(f"  … and {count - MAX_UNSEEN_SHOWN} more")
        return lines


@dataclass(frozen=True, slots=True)
class Found:
    """How many target tensors hold a finding, and where the first of them is."""

    count: int = 0
    first: Place | None = None

    def __len__(self) -> int:
        return self.count

    def first_text(self, *, with_model: bool, with_device: bool) -> str:
        return (
            self.first.text(with_model=with_model, with_device=with_device) if self.first is not None else ""
        )


def _unseen_count(rows: tuple[Target, ...]) -> str:
    """``2 outputs``, ``1 unreadable dump file``, or both joined by "and"."""
    outputs = sum(1 for row in rows if row.dump_readable)
    files = len({(row.index, row.npu_name) for row in rows if not row.dump_readable})
    parts = [counted(outputs, "output")] if outputs else []
    parts += [counted(files, "unreadable dump file")] if files else []
    return " and ".join(parts)


def _row_place(row: Target) -> str:
    """A row's Index, op and tensor; without the Index where the run numbers its op nowhere
    (``_numbered_in_model`` left it None)."""
    index = f"index {row.index} " if row.index is not None else ""
    return f"{index}{_op(row.op_type, row.npu_name)} ({row.tensor_index})"


def _op(op_type: str, name: str) -> str:
    return " ".join(part for part in (op_type, name) if part)  # npy files have no op type


@dataclass(frozen=True, slots=True)
class Tally:
    """The counts a summary prints, from a finished outcome."""

    targets: int  # target tensors: rows with an Index, value and statistics rows alike
    compared: int  # with numbers, by value
    compared_stats: int  # with numbers, by statistics
    not_compared: tuple[ReasonGroup, ...]  # most common reason first
    unreadable: tuple[tuple[Path, str], ...]  # dump files that could not be read, with why
    golden_only: int
    diverging: int
    diverging_stats: int
    firsts: tuple[Divergence, ...]  # each model's first diverging tensor, models in run order
    first_stats: Divergence | None
    models: int = 1
    devices: int = 1
    target_kind: str = "dump file"  # what the target files are: "npy file" for ``-tp a.npy``
    # Compared, NaN/inf at the same positions on both sides and within the thresholds elsewhere:
    # no divergence, but not "within the thresholds" without a word either.
    same_special: Found = Found()
    # Compared, NaN/inf at every position on both sides (``verdict.nothing_finite``): not judged.
    nothing_finite: Found = Found()
    overflowed: Found = Found()  # OverFlow YES (overflow detection on), the first in execution order
    # Compared, holding NaN/inf where the golden does not (``SpecialValues.appeared``).
    appeared: Found = Found()
    # Statistics rows: where they first leave the run's noise (``verdict.statistics_drift``).
    stats_drift: tuple[Place, Drift, str] | None = None  # and the row's ground truth

    @property
    def compared_any(self) -> int:
        return self.compared + self.compared_stats

    @property
    def mostly_unmatched(self) -> bool:
        return self.targets > 0 and self.compared_any * 2 < self.targets

    @classmethod
    def of(cls, outcome: CompareOutcome, thresholds: Thresholds) -> Tally:
        """Counted from each shard's row verdicts (``row_verdicts``: the workers' where they sent
        them); only the rows a line names are read (made back from a worker's batch)."""
        targets = compared = diverging = golden_only = 0
        missing: list[str] = []
        firsts: dict[str, Divergence] = {}  # each model's first diverging tensor, models in run order
        unreadable: list[tuple[Path, str]] = []
        found = {flag: Found() for flag in (SAME_SPECIAL, NOTHING_FINITE, OVERFLOW, APPEARED)}
        for shard in outcome.shards:
            verdicts = _verdicts(shard, thresholds)
            targets += verdicts.count(TARGET)
            compared += verdicts.count(COMPARED)
            diverging += verdicts.count(DIVERGES)
            golden_only += len(verdicts) - verdicts.count(TARGET)
            golden_only += sum(1 for r in shard.stats_rows if r.index is None)
            missing += verdicts.missing
            for flag, so_far in found.items():
                at = verdicts.first(flag)
                if at is not None:
                    first = so_far.first or Place.of(shard, shard.rows[at])
                    found[flag] = Found(so_far.count + verdicts.count(flag), first)
            at = verdicts.first(DIVERGES)
            if at is not None and shard.key.model not in firsts:
                firsts[shard.key.model] = _value_divergence(shard, verdicts, at, thresholds)
            unreadable += _unreadable(shard, verdicts)
        stats = [(s, r) for s in outcome.shards for r in s.stats_rows if r.index is not None]
        capture = _Capture.of(stats)
        firsts = {model: _numbered_in_model(first, capture) for model, first in firsts.items()}
        found = {
            flag: so_far if so_far.first is None else Found(so_far.count, _in_model(so_far.first, capture))
            for flag, so_far in found.items()
        }
        compared_stats = [(s, r) for s, r in stats if r.compared]
        missing += [_reason(r) for _, r in stats if r.dump_readable and not r.compared]
        bad_stats = [(s, r, f) for s, r in compared_stats if (f := r.failing(thresholds.statistics))]
        # A statistics row whose device counted NaN/inf the golden does not hold: the same finding.
        grown = [(s, r) for s, r in compared_stats if r.target_nan_inf > 0]
        if grown:
            so_far = found[APPEARED]
            found[APPEARED] = Found(so_far.count + len(grown), so_far.first or Place.of(*grown[0]))
        return cls(
            targets=targets + len(stats),
            compared=compared,
            compared_stats=len(compared_stats),
            not_compared=grouped_reasons(missing),
            unreadable=tuple(dict.fromkeys(unreadable)),
            golden_only=golden_only,
            diverging=diverging,
            diverging_stats=len(bad_stats),
            firsts=tuple(firsts.values()),
            first_stats=_stats_divergence(*bad_stats[0], thresholds.statistics) if bad_stats else None,
            models=len({s.key.model for s in outcome.shards}),
            devices=len({s.key.device for s in outcome.shards}),
            target_kind=_target_kind(outcome),
            same_special=found[SAME_SPECIAL],
            nothing_finite=found[NOTHING_FINITE],
            overflowed=found[OVERFLOW],
            appeared=found[APPEARED],
            stats_drift=_stats_drift(outcome),
        )


@dataclass(frozen=True, slots=True)
class _Capture:
    """The run's statistics capture: each op's Index there by (model, step, op name; its dump
    file's name for it too), and the op each of its dump files' tasks ran (the Index, op type
    and name as the summary names them) by (model, step, stream, task id).

    A --hunt session captures statistics of every op, then the tensors of a few ops around the
    divergence, a capture of its own whose Index counts from 0 there: its summary called one op
    "index 3" (first divergence) and "index 9" (statistics) on consecutive lines, and the ops
    right before it by the pass's numbering, which names no op of the run."""

    places: dict[tuple[str, str, str], int]
    tasks: dict[tuple[str, str, int | None, int], str]

    @classmethod
    def of(cls, stats: Sequence[tuple[ShardOutcome, StatsResult]]) -> _Capture:
        places: dict[tuple[str, str, str], int] = {}
        tasks: dict[tuple[str, str, int | None, int], str] = {}
        for shard, row in stats:
            if row.index is None:
                continue
            model, step = shard.key.model, shard.key.step
            for name in (row.npu_name, sanitize_dump_name(row.npu_name)):
                places.setdefault((model, step, name), row.index)
            task = _task(row.dump_file)
            if task is not None:
                where = f"index {row.index} {_op(row.op_type, row.npu_name)}"
                tasks.setdefault((model, step, task.stream_id, task.task_id), where)
        return cls(places, tasks)

    def index(self, place: Place, name: str) -> int | None:
        return self.places.get((place.model, place.step, name))


def _in_model(place: Place, capture: _Capture) -> Place:
    """``place`` with the op's Index in the statistics capture, where there is one."""
    index = capture.index(place, place.npu_name)
    return place if index is None else replace(place, index=index)


def _numbered_in_model(divergence: Divergence, capture: _Capture) -> Divergence:
    """``divergence`` numbered as the statistics capture numbers the run's ops, where it holds
    its op: its place, the rows right before it (None where the capture has not their op) and
    the ops whose tasks its dump file's task ids skip."""
    place = divergence.place
    index = capture.index(place, place.npu_name)
    if index is None:
        return divergence
    unseen = tuple(replace(row, index=capture.index(place, row.npu_name)) for row in divergence.unseen_before)
    skipped_ops = None
    own = _task(divergence.dump_file)
    if divergence.skipped is not None and own is not None:
        before, mine = divergence.skipped
        found = (
            capture.tasks.get((place.model, place.step, own.stream_id, t)) for t in range(before + 1, mine)
        )
        skipped_ops = tuple(op for op in found if op is not None)
    return replace(
        divergence, place=replace(place, index=index), unseen_before=unseen, skipped_ops=skipped_ops
    )


def _verdicts(shard: ShardOutcome, thresholds: Thresholds) -> RowVerdicts:
    """The verdicts of a shard's value rows: the workers' as sent, the others decided here."""
    if isinstance(shard.rows, NumberedRows):
        return verdicts_of([*(f.rows for f in shard.rows.files), shard.rows.closing], thresholds)
    return RowVerdicts.of(shard.rows, thresholds)


def _stats_drift(outcome: CompareOutcome) -> tuple[Place, Drift, str] | None:
    """The first shard's row where statistics move away from the golden's, with how far and its
    ground truth (the original op the user knows)."""
    for shard in outcome.shards:
        rows = [r for r in shard.stats_rows if r.index is not None and r.compared]
        drift = statistics_drift([statistics_error(r.drift_row()) for r in rows])
        if drift is not None:
            return Place.of(shard, rows[drift.at]), drift, rows[drift.at].ground_truth
    return None


def _target_kind(outcome: CompareOutcome) -> str:
    """An .npy target (``-tp a.npy``) is no dump file: the summary must not call it one."""
    files = [p for s in outcome.shards for p in s.dump_files]
    return "npy file" if files and all(p.suffix == NPY_SUFFIX for p in files) else "dump file"


def _unseen_before(rows: Sequence[Target], first: Target) -> tuple[Target, ...]:
    """What may hide where ``first``'s divergence starts, nearest first: since the last output
    with numbers before it, each output that has a golden counterpart but no numbers, and each
    row whose dump file (or tensor) could not be read. A missing or unreadable golden, or an
    unreadable dump file, of the faulty op otherwise moved "first divergence" to the next op
    without a word."""
    unseen: list[Target] = []
    for row in rows:
        if row.index is None or first.index is None or row.index >= first.index:
            break
        if not row.dump_readable:
            unseen.append(row)  # nothing is known of its data, whatever the rule file says of its op
        elif ":output:" not in row.tensor_index:
            continue
        elif _has_numbers(row):
            unseen = []
        elif row.ground_truth != NO_GOLDEN:
            unseen.append(row)
    return tuple(reversed(unseen))


def _has_numbers(row: Target) -> bool:
    return judged(row.metrics) if isinstance(row, ResultRow) else row.compared


def _reason(row: ResultRow | StatsResult) -> str:
    return " ".join(row.reasons) or "no reason given"


def _kind(reason: str) -> str:
    """The reason with its names blanked, so one missing golden file per op is one group."""
    words = ["…" if _NAME_CHARS.search(w) else w for w in reason.split()]
    return " ".join(w for i, w in enumerate(words) if not (w == "…" and i and words[i - 1] == "…"))


def grouped_reasons(reasons: list[str]) -> tuple[ReasonGroup, ...]:
    """Reasons counted by kind (names blanked), each group with its first reason's words."""
    # Each distinct reason's kind worked out once: a run's inputs without golden data (npy
    # golden files hold outputs only) share one reason, word for word, in every row.
    counts: Counter[str] = Counter()
    first: dict[str, str] = {}
    for reason, count in Counter(reasons).items():  # in the order first given
        kind = _kind(reason)
        counts[kind] += count
        first.setdefault(kind, reason)
    # Counter.most_common keeps first-seen order among equal counts.
    return tuple(ReasonGroup(n, first[kind]) for kind, n in counts.most_common())


def _unreadable(shard: ShardOutcome, verdicts: RowVerdicts) -> Iterator[tuple[Path, str]]:
    """The shard's unreadable dump files, with why: its value rows', then its statistics rows'."""
    for at in verdicts.positions(UNREADABLE):
        row = shard.rows[at]
        path = _dump_file(shard, row.index) or Path(row.npu_name)
        # The reason of a whole-file failure names the file again: say it once.
        yield path, _reason(row).replace(f"{path}: ", "")
    for stat in shard.stats_rows:
        if not stat.dump_readable and stat.dump_file is not None:  # golden-only rows have none
            yield stat.dump_file, _reason(stat)


def _dump_file(shard: ShardOutcome, index: int) -> Path | None:
    return shard.dump_files[index] if 0 <= index < len(shard.dump_files) else None


def _value_divergence(
    shard: ShardOutcome, verdicts: RowVerdicts, at: int, thresholds: Thresholds
) -> Divergence:
    """The divergence of the shard's row ``at``: what it breaches, and the rows of the files
    before its own that may hide where it starts (``_unseen_before``, from the verdicts)."""
    rows = shard.rows
    row = rows[at]
    assert row.index is not None  # only target rows are judged
    start = at  # its file's first row: a file's own rows hide nothing of it
    while start and rows[start - 1].index == row.index:
        start -= 1
    unseen = tuple(rows[i] for i in verdicts.unseen_before(start))
    own = _dump_file(shard, row.index)
    return Divergence(Place.of(shard, row), row.ground_truth, own, thresholds.breaches(row.metrics),
                      row.reasons, unseen, _skipped(shard, own))  # fmt: skip


def _skipped(shard: ShardOutcome, own: Path | None) -> tuple[int, int] | None:
    """The task id of the shard's dump file right before ``own`` (of its stream; tensor and
    statistics dumps alike) and ``own``'s, where a task lies between them: an op that was not
    dumped (or a task that dumps nothing). The Index numbers the dumped ops only, so it never
    shows the gap."""
    mine = _task(own)
    if mine is None:
        return None
    files = (*shard.dump_files, *(r.dump_file for r in shard.stats_rows))
    tasks = (_task(path) for path in files)
    same_stream = (t.task_id for t in tasks if t is not None and t.stream_id == mine.stream_id)
    before = [task for task in same_stream if task < mine.task_id]
    if not before or mine.task_id - max(before) <= 1:
        return None  # no gap, or the first of its stream (nothing is known of the tasks before it)
    return max(before), mine.task_id


def _task(path: Path | None) -> DumpName | None:
    """The fields of a dump file's name (a statistics dump's: a tensor dump's plus .csv); None for
    npy files and a mapping's short names, which tell nothing of tasks."""
    if path is None:
        return None
    try:
        return parse_dump_name(path.name.removesuffix(STATS_SUFFIX))
    except BadFileNameError:
        return None


def _stats_divergence(
    shard: ShardOutcome, row: StatsResult, failing: tuple[str, ...], threshold: float
) -> Divergence:
    counts = {NAN_INF_APPEARED: "NaN/inf counted in the target beyond the golden's",
              NAN_INF_MISSING: "NaN/inf of the golden's not counted in the target"}  # fmt: skip
    beyond = [name for name in failing if name not in counts]
    breaches = [f"{', '.join(beyond)} differ by more than {threshold:g} of their size"] if beyond else []
    breaches += [words for name, words in counts.items() if name in failing]
    return Divergence(Place.of(shard, row), row.ground_truth, row.dump_file, tuple(breaches),
                      unseen_before=_unseen_before(shard.stats_rows, row),
                      skipped=_skipped(shard, row.dump_file))  # fmt: skip


def summarize(outcome: CompareOutcome, thresholds: Thresholds, tally: Tally | None = None) -> list[str]:
    """Short lines for the terminal: where results are, what was compared, the first divergence.
    ``tally``: ``Tally.of(outcome, thresholds)`` when the caller has it already (it walks every row)."""
    tally = tally or Tally.of(outcome, thresholds)
    lines = _files("result", [s.result_file for s in outcome.shards])
    lines += _files("result", [s.xlsx_file for s in outcome.shards])
    lines += _files("statistics result", [s.stats_file for s in outcome.shards])
    lines += _files("statistics result", [s.stats_xlsx for s in outcome.shards])
    by_stats = f" ({tally.compared_stats} by statistics)" if tally.compared_stats else ""
    lines.append(
        f"target tensors: {tally.targets}, compared: {tally.compared_any}{by_stats}, "
        f"not compared: {sum(g.count for g in tally.not_compared)}, "
        f"unreadable {tally.target_kind}s: {len({path for path, _ in tally.unreadable})}, "
        f"golden-only tensors: {tally.golden_only}"
    )
    lines += reason_lines(tally.not_compared)
    for path, reason in tally.unreadable[:MAX_UNREADABLE_SHOWN]:
        lines.append(f"unreadable {tally.target_kind} {path}: {reason}")
    if len(tally.unreadable) > MAX_UNREADABLE_SHOWN:
        more = len(tally.unreadable) - MAX_UNREADABLE_SHOWN
        lines.append(f"… and {more} more unreadable {tally.target_kind}s")
    if tally.mostly_unmatched and tally.compared_any:
        lines.append(
            f"warning: only {tally.compared_any} of {tally.targets} target tensors were compared; "
            "the verdict below covers those only"
        )
    lines += _caveat_lines(tally)
    if tally.compared:
        lines.append(f"tensors beyond thresholds ({thresholds.describe()}): {tally.diverging}")
    devices = tally.devices > 1
    for divergence in tally.firsts:
        named = f" in model {divergence.place.model}" if tally.models > 1 else ""
        lines += divergence.lines(f"first divergence{named}", with_device=devices)
    if tally.compared and not tally.diverging:
        lines.append(_no_divergence(tally))
    if tally.compared_stats:
        lines.append(
            f"statistics beyond threshold (|diff| / max(|NPU|, |golden|) > {thresholds.statistics:g}): "
            f"{tally.diverging_stats}"
        )
    if tally.stats_drift is not None:
        place, drift, truth = tally.stats_drift
        where = place.text(with_device=devices)
        lines.append(
            f"statistics move away from the golden's first at {where}: {drift.words()}; ground truth {truth}"
        )
    if tally.first_stats is not None:
        lines += tally.first_stats.lines("first statistics divergence", with_device=devices)
    count = _skipped_before(outcome, tally) if tally.firsts or tally.first_stats else 0
    if count:
        lines.append(
            f"warning: it may start earlier: {counted(count, 'file')} of the target tree "
            f"{'was' if count == 1 else 'were'} skipped (above), and a dump file among them is not compared"
        )
    lines += _lost_by_shard(outcome, tally)
    where = f" ({outcome.detail_where})" if outcome.detail_where else ""
    lines += [f"detail{where}: {p}" for p in outcome.detail_files]
    return lines


def _shard_dirs(outcome: CompareOutcome) -> dict[Path, ShardOutcome]:
    """Each shard by the directory of its dump files (one directory a shard: its step's)."""
    dirs: dict[Path, ShardOutcome] = {}
    for shard in outcome.shards:
        first = (
            shard.dump_files[0]
            if shard.dump_files
            else next((r.dump_file for r in shard.stats_rows if r.dump_file is not None), None)
        )
        if first is not None:
            dirs.setdefault(first.parent, shard)
    return dirs


def _skipped_before(outcome: CompareOutcome, tally: Tally) -> int:
    """The target tree's skipped files that may hide where a first divergence starts: those of its
    shard dumped no later than its own dump file, and those of no shard. A file skipped in another
    step cannot move this step's divergence."""
    skipped = [path for path, _ in outcome.skipped[: outcome.target_skipped]]
    firsts = [d.dump_file for d in (*tally.firsts, tally.first_stats) if d is not None]
    if not skipped or len(outcome.shards) < 2 or any(f is None for f in firsts):
        return len(skipped)
    dirs = _shard_dirs(outcome)
    count = 0
    for path in skipped:
        mine = [f for f in firsts if f is not None and f.parent == path.parent]
        if mine:
            count += any(_not_after(path, f) for f in mine)
        else:
            count += path.parent not in dirs
    return count


def _not_after(path: Path, own: Path) -> bool:
    """Whether dump file ``path`` was dumped no later than ``own`` (by their names' dump times);
    True where a name tells none."""
    mine, theirs = _task(path), _task(own)
    return mine is None or theirs is None or mine.timestamp <= theirs.timestamp


def _lost_by_shard(outcome: CompareOutcome, tally: Tally) -> list[str]:
    """In a run of several shards, each shard's dump files not compared (skipped or unreadable):
    the advisor's all-clear of a shard covers what it compared only."""
    if len(outcome.shards) < 2 or not (outcome.target_skipped or tally.unreadable):
        return []
    dirs = _shard_dirs(outcome)
    skipped = Counter(path.parent for path, _ in outcome.skipped[: outcome.target_skipped])
    unreadable = Counter(path.parent for path in {path for path, _ in tally.unreadable})
    parts = []
    for directory, shard in dirs.items():
        lost = [counted(n, f"{kind} file") for kind, n in (("skipped", skipped[directory]),
                ("unreadable", unreadable[directory])) if n]  # fmt: skip
        if lost:
            key = shard.key
            device = f"device {key.device}, " if tally.devices > 1 else ""
            model = f"model {key.model}, " if tally.models > 1 else ""
            parts.append(f"{device}{model}step {key.step}: {' and '.join(lost)}")
    return [f"dump files not compared, by shard: {'; '.join(parts)}"] if parts else []


def _caveat_lines(tally: Tally) -> list[str]:
    """What the thresholds' count does not say: float16 overflow, NaN/inf where the golden has none
    (the advisor's "nan/inf appeared"), NaN/inf at the same positions on both sides."""
    many = {"with_model": tally.models > 1, "with_device": tally.devices > 1}
    lines = []
    if tally.overflowed:
        lines.append(
            f"float16 overflow (±inf, NaN or |v| ≥ 65504) in {counted(len(tally.overflowed), 'tensor')}; "
            f"the first: {tally.overflowed.first_text(**many)}"
        )
    if tally.appeared:
        hold = "holds" if len(tally.appeared) == 1 else "hold"
        lines.append(
            f"nan/inf appeared: {counted(len(tally.appeared), 'tensor')} {hold} NaN/inf where the golden "
            f"does not; the first: {tally.appeared.first_text(**many)}"
        )
    if tally.same_special:
        count = len(tally.same_special)
        hold, agree = ("holds", "agrees") if count == 1 else ("hold", "agree")
        first = tally.same_special.first_text(**many)
        lines.append(
            f"{counted(count, 'tensor')} {hold} NaN/inf at the same positions on both sides and {agree} "
            f"elsewhere (not counted as divergence); the first: {first}"
        )
    if tally.nothing_finite:
        count = len(tally.nothing_finite)
        lines.append(
            f"{counted(count, 'tensor')} {'holds' if count == 1 else 'hold'} NaN/inf at every position on "
            "both sides: nothing in them could be judged (the golden holds them too: check the inputs); "
            f"the first: {tally.nothing_finite.first_text(**many)}"
        )
    return lines


def _no_divergence(tally: Tally) -> str:
    blank = len(tally.nothing_finite)
    if blank == tally.compared:
        return (
            f"no verdict: every compared tensor ({tally.compared}) holds NaN/inf at every position, "
            "on both sides; no value could be judged"
        )
    if blank:
        line = (
            f"no divergence: all {tally.compared - blank} compared tensors with finite values are within "
            f"the thresholds ({blank} more {'holds' if blank == 1 else 'hold'} none)"
        )
    else:
        line = f"no divergence: all {tally.compared} compared tensors are within the thresholds"
    if tally.same_special:
        line += f" ({len(tally.same_special)} of them only where both sides are finite)"
    if tally.overflowed:
        line += f", but {counted(len(tally.overflowed), 'tensor')} overflowed float16 (above)"
    return line


def reason_lines(groups: tuple[ReasonGroup, ...]) -> list[str]:
    """The not-compared reasons, most common first, a few of them (none: no lines)."""
    if not groups:
        return []
    lines = ["not compared, by reason:"]
    for group in groups[:MAX_REASONS_SHOWN]:
        example = f"e.g. {group.example}" if group.count > 1 else group.example
        lines.append(f"  {group.count} × {example}")
    if len(groups) > MAX_REASONS_SHOWN:
        lines.append(f"  … and {len(groups) - MAX_REASONS_SHOWN} more reasons")
    return lines


def _files(label: str, paths: list[Path | None]) -> list[str]:
    """One line per file; a tree of many steps gets its first few and where the rest are."""
    written = [p for p in paths if p is not None]
    if len(written) <= MAX_FILES_SHOWN:
        return [f"{label}: {p}" for p in written]
    shown = [f"{label}: {p}" for p in written[:FILES_SHOWN_OF_MANY]]
    where = ", ".join(sorted({str(p.parent) for p in written}))
    return [*shown, f"… and {len(written) - FILES_SHOWN_OF_MANY} more {label} files in {where}"]


@dataclass(frozen=True, slots=True)
class InputNames:
    """How the user gave the run its inputs, for the error that says which to check."""

    target: str = "-tp"
    golden: str = "-gp"
    fusion_rule: str = "-fr"


COMPARE_INPUTS = InputNames()


def nothing_compared(
    outcome: CompareOutcome,
    thresholds: Thresholds,
    inputs: InputNames = COMPARE_INPUTS,
    tally: Tally | None = None,
) -> str | None:
    """The one-line error for a run that compared nothing, saying what to check (``inputs``: the
    options that gave it, compare's by default); else None. ``tally`` as for ``summarize``."""
    tally = tally or Tally.of(outcome, thresholds)
    if tally.compared_any:
        return None
    if tally.targets and len(tally.unreadable) == tally.targets:
        if tally.targets == 1:
            ((path, reason),) = tally.unreadable
            unreadable = f"the {tally.target_kind} {path} is unreadable ({reason})"
        else:
            unreadable = f"all {tally.targets} {tally.target_kind}s are unreadable"
        return f"nothing compared: {unreadable}; check {inputs.target}"
    if tally.not_compared and tally.not_compared[0].example.startswith(NO_STATISTIC):
        return f"nothing compared: {tally.not_compared[0].example}"  # no other input to check
    top = f" (most often: {tally.not_compared[0].example})" if tally.not_compared else ""
    golden = f"; the {tally.golden_only} golden tensors went unused" if tally.golden_only else ""
    check = (
        f"check that {inputs.target} and {inputs.golden} are the same tensor"
        if outcome.file_pair
        else f"check that {inputs.golden} holds the golden data of this very model and {inputs.fusion_rule} "
        "is its ATC json (atc --mode=1)"
    )
    return f"nothing compared: none of the {tally.targets} target tensors has numbers{top}{golden}; {check}"
