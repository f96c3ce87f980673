"""The session layer: what needs a whole (device, model, step) shard, over the per-file core.

Files' rows arrive in any order (``dumpcmp.host.core.FileRows``); a session keeps them per
shard, orders them by execution order, numbers the Index column, adds the golden tensors nobody
used after the last shard, decides the table's optional columns and result file names, and
writes the result files. ``dumpcmp compare`` walks a tree into a session; the streaming host
feeds one as files land (``LiveCompare``).
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from dumpcmp.host.core import FileOrder, FileRows
from dumpcmp.host.golden import GoldenSource
from dumpcmp.host.metrics.offline_data import MetricValues
from dumpcmp.host.rows import NO_GOLDEN, ResultRow
from dumpcmp.host.sinks.csv_file import write_csv
from dumpcmp.host.sinks.table import TableShape
from dumpcmp.host.stats_compare import StatsResult, write_stats_csv
from dumpcmp.host.verdict import Thresholds
from dumpcmp.proto.walker import GroupKey


@dataclass(frozen=True, slots=True)
class ShardOutcome:
    """One (device, model, step) shard: its result file(s) and rows.

    ``dump_files[i]`` is the dump file of the rows with Index ``i``; statistics rows name theirs.
    """

    key: GroupKey
    result_file: Path | None  # None when the shard held statistics dumps only
    rows: tuple[ResultRow, ...]
    xlsx_file: Path | None = None
    dump_files: tuple[Path, ...] = ()
    stats_file: Path | None = None
    stats_rows: tuple[StatsResult, ...] = ()


@dataclass(frozen=True, slots=True)
class CompareOutcome:
    shards: tuple[ShardOutcome, ...]
    skipped: tuple[tuple[Path, str], ...] = ()
    detail_files: tuple[Path, ...] = ()
    file_pair: bool = False  # one target file against one golden file

    @property
    def rows(self) -> list[ResultRow]:
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


class ShardRows:
    """The files of one shard received so far; a file compared again replaces its rows."""

    def __init__(self, key: GroupKey) -> None:
        self.key = key
        self._files: dict[Path, FileRows] = {}
        self._tensor_orders: list[FileOrder] = []  # sorted, for a file's place while others arrive

    def add(self, result: FileRows) -> None:
        if result.entry.path not in self._files and not result.entry.is_stats:
            bisect.insort(self._tensor_orders, result.order)
        self._files[result.entry.path] = result

    def place(self, result: FileRows) -> int:
        """The Index of ``result``'s rows among the tensor dumps added so far."""
        return bisect.bisect_left(self._tensor_orders, result.order)

    def ordered(self) -> list[FileRows]:
        return sorted(self._files.values(), key=lambda f: f.order)

    def tensor_files(self) -> list[FileRows]:
        return [f for f in self.ordered() if not f.entry.is_stats]

    def rows(self) -> list[ResultRow]:
        """Target rows, Index = the dump file's place among the shard's tensor dumps."""
        return [replace(r, index=i) for i, f in enumerate(self.tensor_files()) for r in f.rows]

    def stats(self) -> list[StatsResult]:
        stats_files = [f for f in self.ordered() if f.entry.is_stats]
        return [replace(r, index=i) for i, f in enumerate(stats_files) for r in f.stats]

    def used_golden(self) -> set[str]:
        return {key for f in self._files.values() for key in f.used_golden}


class CompareSession:
    """Rows of every shard of one comparison, and the result files they become.

    ``keys``, when the caller knows every shard up front (a walked tree), lets each shard be
    written as soon as it is complete (``write_shard``); otherwise ``close`` writes them all.
    """

    def __init__(self, settings: ResultSettings, golden: GoldenSource, keys: Sequence[GroupKey] = ()) -> None:
        self.settings = settings
        self.golden = golden
        self._keys = list(keys)
        self._shards: dict[GroupKey, ShardRows] = {}
        self._written: dict[GroupKey, ShardOutcome] = {}

    def shard(self, key: GroupKey) -> ShardRows:
        if key not in self._shards:
            self._shards[key] = ShardRows(key)
            if key not in self._keys:
                self._keys.append(key)
        return self._shards[key]

    def add(self, result: FileRows) -> None:
        self.shard(result.entry.group).add(result)

    def write_shard(self, key: GroupKey) -> ShardOutcome:
        """Write one complete shard's files; the last shard (in shard order) gets golden-only rows."""
        shard = self.shard(key)
        ordered = sorted(self._keys, key=shard_order)
        rows = shard.rows()
        if key == ordered[-1]:
            used = {k for s in self._shards.values() for k in s.used_golden()}
            rows += golden_only_rows(self.golden, used)
        tensor_files = shard.tensor_files()
        stats = tuple(shard.stats())
        written = ShardOutcome(key, None, ())
        if tensor_files or rows:
            written = self.write_rows(key, rows)
        stats_file = None
        if stats:
            name = result_name(key, ordered, self.settings.stamp, "stats_result")
            stats_file = write_stats_csv(
                self.settings.out_dir / name, stats, self.settings.thresholds.statistics
            )
        outcome = replace(
            written,
            dump_files=tuple(f.entry.path for f in tensor_files),
            stats_file=stats_file,
            stats_rows=stats,
        )
        self._written[key] = outcome
        return outcome

    def close(self) -> tuple[ShardOutcome, ...]:
        """Write every shard not written yet; every shard's outcome, in shard order."""
        for key in sorted(self._keys, key=shard_order):
            if key not in self._written:
                self.write_shard(key)
        return tuple(self._written[k] for k in sorted(self._keys, key=shard_order))

    def write_rows(self, key: GroupKey, rows: list[ResultRow]) -> ShardOutcome:
        """Write ``rows`` as ``key``'s result file (and xlsx); they are written as given."""
        settings = self.settings
        name = result_name(key, sorted(self._keys, key=shard_order), settings.stamp)
        shape = TableShape.of(rows, op_sequence=settings.op_sequence, overflow=settings.overflow_detection)
        result = write_csv(settings.out_dir / name, rows, shape)
        xlsx = None
        if settings.xlsx:
            from dumpcmp.host.sinks.xlsx_file import write_xlsx

            xlsx = write_xlsx(result.with_suffix(".xlsx"), rows, shape, thresholds=settings.thresholds)
        return ShardOutcome(key, result, tuple(rows), xlsx)


def shard_order(key: GroupKey) -> tuple[object, ...]:
    """Shards by session, device, model and step, numbers as numbers (step 2 before step 10)."""
    fields = (key.session, key.device, key.model, key.model_id, key.step)
    return tuple((0, int(f), "") if f.isdigit() else (1, 0, f) for f in fields)


def result_name(key: GroupKey, keys: Sequence[GroupKey], stamp: str, kind: str = "result") -> str:
    """``result_{ts}.csv`` for a single shard, else ``{device}_{model}_{step}_result_{ts}.csv``,
    with the session directory in front when two sessions hold the same (device, model, step).
    Statistics results are named the same with ``stats_result`` for ``result``."""
    if len(keys) == 1:
        return f"{kind}_{stamp}.csv"
    clash = sum(1 for k in keys if k.label == key.label) > 1
    label = f"{key.session}_{key.label}" if clash and key.session else key.label
    return f"{label}_{kind}_{stamp}.csv"


def golden_only_rows(golden: GoldenSource, used: set[str]) -> list[ResultRow]:
    """Golden tensors nothing was compared with, listed after every target row (metrics.md §1.3)."""
    return [
        ResultRow(
            index=None,
            op_sequence=None,
            op_type="",
            npu_name=NO_GOLDEN,
            npu_dtype="NaN",
            npu_address=None,
            ground_truth=key,
            golden_dtype="NaN",
            golden_address=None,
            tensor_index=NO_GOLDEN,
            shape=None,
            overflow=None,
            metrics=MetricValues.unavailable("golden tensor with no NPU counterpart"),
        )
        for key in golden.unused(used)
    ]
