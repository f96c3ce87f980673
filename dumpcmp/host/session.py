"""The session layer: what needs a whole shard, over the per-file core.

A shard is a (device, model, step) for offline_data, a (rank, token) for torchair. Files' rows
arrive in any order (``dumpcmp.host.core.FileRows``); a session keeps them per shard, orders them
by execution order, numbers the Index column, adds the family's closing rows (offline_data: the
golden tensors nobody used) after the last shard, and has the family name and write the result
files. ``dumpcmp compare`` walks a tree into a session; the streaming host feeds one as files
land (``LiveCompare``).
"""

from __future__ import annotations

import bisect
import itertools
import time
import typing
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Generic, TypeVar

from dumpcmp.host.core import OFFLINE_DATA, FileOrder, FileRows, FileText, ResultFamily, Row, numbered
from dumpcmp.host.golden import GoldenSource
from dumpcmp.host.offline_table import golden_only_rows, result_name, shard_order
from dumpcmp.host.row_batch import BatchRows, MadeOnUse
from dumpcmp.host.stats_compare import StatsResult, golden_only_stats, write_stats_csv, write_stats_xlsx
from dumpcmp.host.verdict import Thresholds

__all__ = [
    "CompareOutcome",
    "CompareSession",
    "NumberedRows",
    "ResultSettings",
    "ShardOutcome",
    "ShardRows",
    "golden_only_rows",
    "result_name",
    "shard_order",
]

Key = TypeVar("Key", bound=Hashable)


@dataclass(frozen=True, slots=True)
class ShardOutcome(Generic[Row, Key]):
    """One shard (offline_data: a (device, model, step); torchair: a (rank, token)): its result
    file(s) and rows.

    ``dump_files[i]`` is the dump file of the rows with Index ``i``; statistics rows name theirs.
    """

    key: Key
    result_file: Path | None  # None when the shard held statistics dumps only
    rows: Sequence[Row]  # a tuple, or ``NumberedRows`` (made on first use)
    xlsx_file: Path | None = None
    dump_files: tuple[Path, ...] = ()
    stats_file: Path | None = None
    stats_rows: tuple[StatsResult, ...] = ()
    stats_xlsx: Path | None = None
    # What the summary names the shard by ahead of its step: "pass 2", a hunt's capture, whose first
    # divergence is that capture's (of a few ops), not the run's; "" for its directories alone.
    label: str = ""


@dataclass(frozen=True, slots=True)
class CompareOutcome(Generic[Row, Key]):
    shards: tuple[ShardOutcome[Row, Key], ...]
    skipped: tuple[tuple[Path, str], ...] = ()
    target_skipped: int = 0  # of them, files of the target tree: a dump file among them is not compared
    # Of them, damaged lines of reduced files that name no file (TorchAir): each stood for a file,
    # not a file passed over; ``lost_target`` of them the target's, whose tensors are in no row.
    lost_lines: int = 0
    lost_target: int = 0
    detail_files: tuple[Path, ...] = ()
    detail_where: str = ""  # which step's tensor the detail files hold
    detail_error: str = ""  # why -d's op could not be written in detail (the results stand)
    file_pair: bool = False  # one target file against one golden file

    @property
    def rows(self) -> list[Row]:
        return [r for s in self.shards for r in s.rows]

    @property
    def stats_rows(self) -> list[StatsResult]:
        return [r for s in self.shards for r in s.stats_rows]


@dataclass(frozen=True, slots=True)
class ResultSettings:
    """How a session's result files are written."""

    out_dir: Path
    stamp: str = field(default_factory=lambda: time.strftime("%Y%m%d%H%M%S"))
    op_sequence: bool = False  # a fusion rule gives every row its op's OpSequence
    overflow_detection: bool = False
    xlsx: bool = False
    thresholds: Thresholds = field(default_factory=Thresholds)


class ShardRows(Generic[Row, Key]):
    """The files of one shard received so far; a file compared again replaces its rows."""

    def __init__(self, key: Key) -> None:
        self.key = key
        # Each file's order, worked out once, by its path's text (the order's last part: a
        # ``Path`` hashes its parts again on every lookup)
        self._files: dict[str, tuple[FileOrder, FileRows[Row]]] = {}
        self._tensor_orders: list[FileOrder] = []  # sorted, for a file's place while others arrive
        self._ordered: list[FileRows[Row]] | None = None  # ``ordered()`` until a file is added

    def add(self, result: FileRows[Row]) -> None:
        order = result.order
        path = order[2]
        if path not in self._files and _holds_rows(result):
            if not self._tensor_orders or order > self._tensor_orders[-1]:
                self._tensor_orders.append(order)  # a walked tree's files come in order
            else:
                bisect.insort(self._tensor_orders, order)
        self._files[path] = (order, result)
        self._ordered = None

    def place(self, result: FileRows[Row]) -> int:
        """The Index of ``result``'s rows among the tensor dumps added so far."""
        return bisect.bisect_left(self._tensor_orders, result.order)

    def ordered(self) -> list[FileRows[Row]]:
        # Sorted once for all that a shard's writing asks (its rows, files, statistics, golden used)
        if self._ordered is None:
            self._ordered = [f for _, f in sorted(self._files.values(), key=_first)]
        return list(self._ordered)

    def tensor_files(self) -> list[FileRows[Row]]:
        return [f for f in self.ordered() if _holds_rows(f)]

    def rows(self) -> list[Row]:
        """Target rows, Index = the dump file's place among the shard's tensor dumps (rows that
        came with it, ``Work.places``, are kept as they are)."""
        return list(NumberedRows(self.tensor_files()))

    def stats(self) -> list[StatsResult]:
        stats_files = [f for f in self.ordered() if f.entry.is_stats]
        return [numbered(r, i) for i, f in enumerate(stats_files) for r in f.stats]

    def used_golden(self) -> set[str]:
        """The golden tensors this shard's rows were compared with (or looked up and found)."""
        files = [f for _, f in self._files.values()]
        used: set[str] = set()
        # A worker's batch whose every row is a file of this shard still here: its golden key
        # column read at once (a file's slice of it, ~2 µs a file on the coordinator, was most of this)
        by_batch: dict[int, list[BatchRows]] = {}
        for f in files:
            if isinstance(f.rows, BatchRows):
                by_batch.setdefault(id(f.rows.batch), []).append(f.rows)
            else:
                used.update(r.golden_key for r in f.rows)
        for parts in by_batch.values():
            keys = parts[0].batch.golden_keys()
            if sum(map(len, parts)) == len(keys):
                used.update(keys)
            else:  # a batch of several shards, or a file of it compared again since
                for part in parts:
                    used.update(part.golden_keys())
        used.update(s.golden_key for f in files for s in f.stats)
        used.discard("")
        return used


def _first(pair: tuple[FileOrder, FileRows[Row]]) -> FileOrder:
    return pair[0]


class NumberedRows(MadeOnUse[Row]):
    """A shard's table as a sequence: each tensor file's rows with its Index (rows that came
    with it, ``Work.places``, kept as they are), then the closing rows. The files' rows are made
    on first use: a compare whose sinks read the lines workers formatted and the verdicts they
    sent (``row_verdicts.verdicts_of``) never makes them; a slice of closing rows alone neither."""

    def __init__(self, files: list[FileRows[Row]], closing: Sequence[Row] = ()) -> None:
        self.files = files
        self.closing = tuple(closing)
        # Each file's first row's place; last, the number of target rows
        self._starts = list(itertools.accumulate((len(f.rows) for f in files), initial=0))
        self._targets = self._starts[-1]
        self._rows: tuple[Row, ...] | None = None  # every row, once made

    def _made(self) -> tuple[Row, ...]:
        if self._rows is None:
            files = enumerate(self.files)
            targets = (r if r.index == i else numbered(r, i) for i, f in files for r in f.rows)
            self._rows = (*targets, *self.closing)
        return self._rows

    def __len__(self) -> int:
        return self._targets + len(self.closing)

    @typing.overload
    def __getitem__(self, at: int) -> Row: ...

    @typing.overload
    def __getitem__(self, at: slice) -> Sequence[Row]: ...

    def __getitem__(self, at: int | slice) -> Row | Sequence[Row]:
        if isinstance(at, slice):
            start, stop, step = at.indices(len(self))
            if step == 1 and start >= self._targets:
                return self.closing[start - self._targets : stop - self._targets]
            return self._made()[at]
        place = at + len(self) if at < 0 else at
        if self._rows is not None or not 0 <= place < self._targets:
            return self._made()[at]  # made already, or a closing row (or none: IndexError)
        number = bisect.bisect_right(self._starts, place) - 1  # the file's, made alone
        row = self.files[number].rows[place - self._starts[number]]
        return row if row.index == number else numbered(row, number)


def _holds_rows(result: FileRows[Row]) -> bool:
    """A tensor dump (its rows may be none), or a stats dump a family made rows of (torchair);
    offline_data's stats dumps go to the statistics table instead."""
    return not result.entry.is_stats or bool(result.rows)


class CompareSession(Generic[Row, Key]):
    """Rows of every shard of one comparison, and the result files they become.

    ``keys``, when the caller knows every shard up front (a walked tree), lets each shard be
    written as soon as it is complete (``write_shard``); otherwise ``close`` writes them all.
    ``family`` orders the shards, names and writes their tables (``dumpcmp.host.core``).
    """

    def __init__(
        self,
        settings: ResultSettings,
        golden: GoldenSource | None,
        keys: Sequence[Key] = (),
        family: ResultFamily = OFFLINE_DATA,
    ) -> None:
        self.settings = settings
        self.golden = golden
        self.family = family
        self._keys = list(keys)
        self._shards: dict[Key, ShardRows[Row, Key]] = {}
        self._written: dict[Key, ShardOutcome[Row, Key]] = {}

    def shard(self, key: Key) -> ShardRows[Row, Key]:
        if key not in self._shards:
            self._shards[key] = ShardRows(key)
            if key not in self._keys:
                self._keys.append(key)
        return self._shards[key]

    def add(self, result: FileRows[Row], key: Key) -> None:
        """Keep ``result`` in shard ``key``."""
        self.shard(key).add(result)

    def _ordered_keys(self) -> list[Key]:
        return sorted(self._keys, key=self.family.shard_order)

    def write_shard(self, key: Key) -> ShardOutcome[Row, Key]:
        """Write one complete shard's files; the last shard (in shard order) gets the family's
        closing rows (offline_data: golden-only rows)."""
        shard = self.shard(key)
        ordered = self._ordered_keys()
        tensor_files = shard.tensor_files()
        stats = tuple(shard.stats())
        closing: Sequence[Row] = ()
        if key == ordered[-1]:
            used = {k for s in self._shards.values() for k in s.used_golden()}
            if stats and not tensor_files:  # the statistics table is this shard's only result
                stats += tuple(golden_only_stats(self.golden, used))
            else:
                closing = self.family.closing_rows(self.golden, used)
        rows = NumberedRows(tensor_files, closing)
        written: ShardOutcome[Row, Key] = ShardOutcome(key, None, ())
        if tensor_files or rows:
            # The lines workers formatted, when every file's were (``FileRows.text``)
            texts = [f.text for f in tensor_files if f.text is not None]
            formatted = list(enumerate(texts)) if len(texts) == len(tensor_files) else []
            written = self.write_rows(key, rows, formatted)
        stats_file = stats_xlsx = None
        if stats:
            name = self.family.result_name(key, ordered, self.settings.stamp, "stats_result")
            stats_file = write_stats_csv(
                self.settings.out_dir / name, stats, self.settings.thresholds.statistics
            )
            if self.settings.xlsx:
                xlsx = stats_file.with_suffix(".xlsx")
                stats_xlsx = write_stats_xlsx(xlsx, stats, self.settings.thresholds)
        outcome = replace(
            written,
            dump_files=tuple(f.entry.path for f in tensor_files),
            stats_file=stats_file,
            stats_rows=stats,
            stats_xlsx=stats_xlsx,
        )
        self._written[key] = outcome
        return outcome

    def close(self) -> tuple[ShardOutcome[Row, Key], ...]:
        """Write every shard not written yet; every shard's outcome, in shard order."""
        for key in self._ordered_keys():
            if key not in self._written:
                self.write_shard(key)
        return tuple(self._written[k] for k in self._ordered_keys())

    def write_rows(
        self, key: Key, rows: Sequence[Row], text: Sequence[FileText] = ()
    ) -> ShardOutcome[Row, Key]:
        """Write ``rows`` as ``key``'s result file (and xlsx); they are written as given, the
        first ones as ``text`` (see ``ResultFamily.write_table``)."""
        settings = self.settings
        name = self.family.result_name(key, self._ordered_keys(), settings.stamp)
        result, xlsx = self.family.write_table(settings.out_dir / name, rows, settings, text)
        return ShardOutcome(key, result, rows if isinstance(rows, NumberedRows) else tuple(rows), xlsx)
