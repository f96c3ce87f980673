"""Each value row's verdict as a few bits, decided where the rows are; what a summary counts.

A compare summary needs, of every target tensor, only what ``verdict`` decides of it: compared
or not (and why not), beyond the thresholds, NaN/inf everywhere, NaN/inf that appeared, float16
overflow, and whether it hides where a divergence starts. A worker decides that of its batch's
rows (``FileBatch.verdicts``) with the run's thresholds and sends it beside them: a flag word a
row and the not-compared reasons. The coordinator then counts bits and makes back only the rows
it names (the first of each finding), not every row of the run (``summary.Tally``). Rows made in
the coordinator get theirs here too, by the same function: one verdict, asked once a row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dumpcmp.host.row_batch import BatchRows
from dumpcmp.host.rows import NO_GOLDEN, ResultRow
from dumpcmp.host.verdict import Thresholds, judged, nothing_finite

TARGET = 1 << 0  # a target tensor's row (an Index); a golden-only row has none, and no other flag
COMPARED = 1 << 1  # ``verdict.judged``
DIVERGES = 1 << 2  # compared, some finite values, beyond a threshold (``Thresholds.breaches``)
NOTHING_FINITE = 1 << 3  # compared, NaN/inf at every position on both sides
SAME_SPECIAL = 1 << 4  # compared, within, judged on its finite elements (NaN/inf at the same places)
APPEARED = 1 << 5  # compared, NaN/inf where the golden has none (``SpecialValues.appeared``)
OVERFLOW = 1 << 6  # OverFlow YES
UNREADABLE = 1 << 7  # the target's dump file could not be read
MISSING = 1 << 8  # a readable target without numbers: its reason is in ``RowVerdicts.missing``
SEEN = 1 << 9  # an output with numbers: nothing before it hides where a divergence starts
UNSEEN = 1 << 10  # may hide it: an unreadable file, or an output with a golden but no numbers

_OUTPUT = ":output:"


def row_flags(row: ResultRow, thresholds: Thresholds) -> int:
    """The flag word of one row (see the module's constants)."""
    if row.index is None:
        return 0
    m = row.metrics
    flags = TARGET | (OVERFLOW if row.overflow else 0)
    output = _OUTPUT in row.tensor_index
    if not row.dump_readable:
        flags |= UNREADABLE | UNSEEN
    if not judged(m):
        if row.dump_readable:
            flags |= MISSING
            if output and row.ground_truth != NO_GOLDEN:
                flags |= UNSEEN
        return flags
    flags |= COMPARED | (SEEN if output and row.dump_readable else 0)
    if m.special is not None and m.special.appeared:
        flags |= APPEARED
    if nothing_finite(m):
        return flags | NOTHING_FINITE
    if thresholds.breaches(m):
        return flags | DIVERGES
    return flags | (SAME_SPECIAL if m.finite is not None else 0)


@dataclass(frozen=True, slots=True, eq=False)
class RowVerdicts:
    """The flag word of each of consecutive rows, the reason of each ``MISSING`` one (in order),
    and the thresholds they were judged by."""

    flags: np.ndarray  # uint16, one a row
    missing: tuple[str, ...]
    thresholds: Thresholds

    @classmethod
    def of(cls, rows: Sequence[ResultRow], thresholds: Thresholds) -> RowVerdicts:
        flags = [row_flags(row, thresholds) for row in rows]
        missing = tuple(
            " ".join(row.reasons) or "no reason given"
            for row, bits in zip(rows, flags, strict=True)
            if bits & MISSING
        )
        return cls(np.array(flags, dtype=np.uint16), missing, thresholds)

    @classmethod
    def joined(cls, parts: Sequence[RowVerdicts], thresholds: Thresholds) -> RowVerdicts:
        """``parts`` one after the other (none: no rows)."""
        if len(parts) == 1:
            return parts[0]
        flags = np.concatenate([p.flags for p in parts]) if parts else np.empty(0, dtype=np.uint16)
        return cls(flags, tuple(r for p in parts for r in p.missing), thresholds)

    def __len__(self) -> int:
        return len(self.flags)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RowVerdicts):
            return NotImplemented
        same = (self.missing, self.thresholds) == (other.missing, other.thresholds)
        return same and np.array_equal(self.flags, other.flags)

    __hash__ = None  # type: ignore[assignment]  # equal by value, and mutable inside (an array)

    def sliced(self, start: int, stop: int) -> RowVerdicts:
        """Rows ``start`` to ``stop`` of these."""
        before = int(np.count_nonzero(self.flags[:start] & MISSING))
        inside = int(np.count_nonzero(self.flags[start:stop] & MISSING))
        return RowVerdicts(self.flags[start:stop], self.missing[before : before + inside], self.thresholds)

    def count(self, flag: int) -> int:
        return int(np.count_nonzero(self.flags & flag))

    def positions(self, flag: int, stop: int | None = None) -> np.ndarray:
        """The places of the rows (before ``stop``) holding ``flag``, in order."""
        return np.flatnonzero(self.flags[:stop] & flag)

    def first(self, flag: int) -> int | None:
        found = self.positions(flag)
        return int(found[0]) if len(found) else None

    def unseen_before(self, stop: int) -> list[int]:
        """The rows before ``stop`` that may hide where a divergence at ``stop`` starts: since the
        last output with numbers, each ``UNSEEN`` row, nearest first."""
        seen = self.positions(SEEN, stop)
        start = int(seen[-1]) + 1 if len(seen) else 0
        return [start + int(i) for i in reversed(np.flatnonzero(self.flags[start:stop] & UNSEEN))]


def verdicts_of(files: Sequence[Sequence[ResultRow]], thresholds: Thresholds) -> RowVerdicts:
    """The verdicts of the rows of ``files``, one file after the other: those a worker sent with
    its batch (judged by ``thresholds``) as sent, a run of one batch's files sliced at once; those
    of other rows decided here."""
    parts: list[RowVerdicts] = []
    typed: list[ResultRow] = []  # rows of files that came without verdicts, not judged yet
    run: tuple[RowVerdicts, int, int] | None = None  # a batch's verdicts, and its rows taken so far
    for rows in files:
        sent = rows.batch.verdicts if isinstance(rows, BatchRows) else None
        if not isinstance(rows, BatchRows) or sent is None or sent.thresholds != thresholds:
            if run is not None:
                parts.append(run[0].sliced(run[1], run[2]))
                run = None
            typed.extend(rows)
            continue
        if typed:
            parts.append(RowVerdicts.of(typed, thresholds))
            typed = []
        if run is not None and run[0] is sent and run[2] == rows.start:
            run = (sent, run[1], rows.stop)
            continue
        if run is not None:
            parts.append(run[0].sliced(run[1], run[2]))
        run = (sent, rows.start, rows.stop)
    if run is not None:
        parts.append(run[0].sliced(run[1], run[2]))
    if typed:
        parts.append(RowVerdicts.of(typed, thresholds))
    return RowVerdicts.joined(parts, thresholds)
