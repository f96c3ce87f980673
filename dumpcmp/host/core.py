"""The comparison core: one dump file and a frozen plan in, that file's rows out.

Pure: nothing is shared between calls or remembered after one, so files may be compared in any
order, in threads, forked workers, a server or a cluster worker. What needs the whole shard (the
Index column, golden-only rows, the table's columns, file names) is ``dumpcmp.host.session``'s.
"""

from __future__ import annotations

from dataclasses import dataclass

from dumpcmp.host.golden import GoldenSource
from dumpcmp.host.matcher import Matcher
from dumpcmp.host.pipeline import CompareOptions, evaluate, file_jobs, unreadable_file_job
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.stats_compare import StatsResult, compare_stats_file, unreadable_stats
from dumpcmp.proto.walker import DumpEntry

FileOrder = tuple[int, int, str]


@dataclass(frozen=True, slots=True)
class ComparePlan:
    """What one shard is compared against: chosen once, never changed by a comparison."""

    golden: GoldenSource
    matcher: Matcher | None
    options: CompareOptions


@dataclass(frozen=True, slots=True)
class FileRows:
    """The rows of one dump file, Index not yet assigned (it is the file's place in its shard)."""

    entry: DumpEntry
    rows: tuple[ResultRow, ...] = ()
    stats: tuple[StatsResult, ...] = ()

    @property
    def order(self) -> FileOrder:
        return file_order(self.entry)

    @property
    def used_golden(self) -> frozenset[str]:
        """The golden tensors this file's rows were compared with (or looked up and found)."""
        keys = [r.golden_key for r in self.rows] + [s.golden_key for s in self.stats]
        return frozenset(k for k in keys if k)


def file_order(entry: DumpEntry) -> FileOrder:
    """Execution order within a shard: dump timestamp, then task id, then path for ties."""
    return entry.name.timestamp, entry.name.task_id, str(entry.path)


def compare_file(entry: DumpEntry, plan: ComparePlan) -> FileRows:
    """Every row of one dump file (tensor dump or statistics dump); failures become reasons."""
    if entry.is_stats:
        return FileRows(entry, stats=tuple(compare_stats_file(entry, plan.golden, plan.matcher)))
    jobs = file_jobs(entry, plan.golden, plan.matcher, plan.options)
    return FileRows(entry, rows=tuple(evaluate(job, plan.options) for job in jobs))


def failed_file(entry: DumpEntry, plan: ComparePlan, reason: str) -> FileRows:
    """The rows of a file whose comparison never finished (it crashed every worker that tried):
    one row with ``reason``, like an unreadable file's."""
    if entry.is_stats:
        return FileRows(entry, stats=(unreadable_stats(entry, reason),))
    return FileRows(entry, rows=(evaluate(unreadable_file_job(entry, plan.matcher, reason), plan.options),))
