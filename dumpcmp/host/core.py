"""The comparison core: one dump file and a frozen plan in, that file's rows out.

Pure: nothing is shared between calls or remembered after one, so files may be compared in any
order, in threads, forked workers, a server or a cluster worker. What needs the whole shard (the
Index column, golden-only rows, the table's columns, file names) is ``dumpcmp.host.session``'s.

The plan names its result family (``offline_data``, ``torchair``): how a file becomes rows and
how a shard's rows become result files. The core and the session layer ask the family, so no
layer below the command knows which mode runs.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from dumpcmp.errors import InternalError
from dumpcmp.host.golden import GoldenSource
from dumpcmp.host.matcher import Matcher
from dumpcmp.host.offline_table import golden_only_rows, result_name, shard_order
from dumpcmp.host.pipeline import (
    CompareOptions,
    TensorJob,
    evaluate,
    evaluate_all,
    file_jobs,
    held_cheaply,
    unreadable_file_job,
)
from dumpcmp.host.row_verdicts import RowVerdicts
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.sinks.csv_file import row_lines, write_csv
from dumpcmp.host.sinks.table import TableShape
from dumpcmp.host.stats_compare import StatsResult, compare_stats_file, unreadable_stats
from dumpcmp.proto.records import set_through_slots
from dumpcmp.proto.walker import DumpEntry, GroupKey

if TYPE_CHECKING:
    from dumpcmp.host.session import ResultSettings
    from dumpcmp.host.torchair.family import PairMatcher

FileOrder = tuple[int, int, str]
# (Index, ``row_text``) of one file of a shard: its rows' lines, their Index not yet in front
FileText = tuple[int, Sequence[str]]


class TableRow(Protocol):
    """What the session layer reads of any family's rows (frozen dataclasses it re-numbers)."""

    @property
    def index(self) -> int | None: ...

    @property
    def golden_key(self) -> str: ...


Row = TypeVar("Row", bound=TableRow)


def numbered(row: Row, index: int) -> Row:
    """``row`` with Index ``index`` (``dataclasses.replace`` walks the class's fields on every
    call: twice the cost, paid for every row a session writes)."""
    kind: Callable[..., Row] = type(row)
    return kind(index, *_after_index(type(row))(row))


@functools.cache
def _after_index(cls: type) -> Callable[[object], tuple[object, ...]]:
    """The values of a row's fields after its first, ``index``, in order."""
    names = [f.name for f in dataclasses.fields(cls)]
    if names[0] != "index" or len(names) < 3:
        raise InternalError(f"{cls.__name__} is no row: its first of several fields must be its index")
    return operator.attrgetter(*names[1:])


@set_through_slots
@dataclass(frozen=True, slots=True)
class FileRows(Generic[Row]):
    """The rows of one dump file, Index not yet assigned (it is the file's place in its shard).
    ``rows``: a tuple, or the file's part of a worker's batch (``row_batch.BatchRows``)."""

    entry: DumpEntry
    rows: Sequence[Row] = ()
    stats: tuple[StatsResult, ...] = ()
    # Each row's line of the result table after its Index cell, formatted where the file was
    # compared (a worker: the coordinator then only puts the Index in front), or None (see
    # ``ResultFamily.row_text``). Made from the rows: no part of what they equal or show.
    text: tuple[str, ...] | None = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def order(self) -> FileOrder:
        return file_order(self.entry)


def file_order(entry: DumpEntry) -> FileOrder:
    """Execution order within a shard: dump timestamp, then task id, then path for ties."""
    return entry.name.timestamp, entry.name.task_id, str(entry.path)


class ResultFamily(Protocol):
    """One comparison family: its rows (a frozen dataclass with ``index`` and ``golden_key``),
    its shard keys, its table and its result file names. Picked once, by the command."""

    @property
    def name(self) -> str: ...

    def compare_file(self, entry: DumpEntry, plan: ComparePlan) -> FileRows[Any]:
        """Every row of one dump file; failures become reasons."""
        ...

    def compare_files(self, entries: Sequence[DumpEntry], plan: ComparePlan) -> list[FileRows[Any]]:
        """``compare_file`` of each file, in order (a family may compare their tensors together)."""
        ...

    def failed_file(self, entry: DumpEntry, plan: ComparePlan, reason: str) -> FileRows[Any]:
        """The rows of a file whose comparison never finished: one row with ``reason``."""
        ...

    def row_text(self, rows: Sequence[Any], plan: ComparePlan) -> tuple[str, ...] | None:
        """Each row's line of the result table after its Index cell (newline included), as far
        as the file alone decides it; None where a column of its rows depends on the whole shard."""
        ...

    def row_verdicts(self, rows: Sequence[Any], plan: ComparePlan) -> RowVerdicts | None:
        """The verdicts of a file's rows (``dumpcmp.host.row_verdicts``), or None where the family's
        summary judges rows of its own (TorchAir's PASS/FAIL)."""
        ...

    def shard_order(self, key: Any) -> tuple[object, ...]: ...

    def result_name(self, key: Any, keys: Sequence[Any], stamp: str, kind: str = "result") -> str:
        """The file name of ``key``'s result among a session's ``keys``."""
        ...

    def closing_rows(self, golden: GoldenSource | None, used: set[str]) -> list[Any]:
        """Rows listed after the last shard's (golden tensors nothing was compared with)."""
        ...

    def write_table(
        self, path: Path, rows: Sequence[Any], settings: ResultSettings, text: Sequence[FileText] = ()
    ) -> tuple[Path, Path | None]:
        """Write ``rows`` as a result table at ``path`` (or the next free name), and as .xlsx
        beside it when asked; the paths written. ``text``: the first rows' lines as ``row_text``
        gave them, with their Index, when every target file's were (see ``FileText``)."""
        ...


class OfflineData:
    """``compare -m offline_data``: dump files against golden npy files or a second dump tree,
    rows of metrics.md §1, shards per (device, model, step)."""

    name = "offline_data"

    def compare_file(self, entry: DumpEntry, plan: ComparePlan) -> FileRows[ResultRow]:
        return self.compare_files((entry,), plan)[0]

    def compare_files(self, entries: Sequence[DumpEntry], plan: ComparePlan) -> list[FileRows[ResultRow]]:
        """Each file's rows, the small tensors of all of them compared in stacks (``evaluate_all``);
        a file with a large tensor is compared at once, so that no two large files are held."""
        golden = _golden(plan)
        matcher = _matcher(plan)
        options = plan.options
        done: dict[int, FileRows[ResultRow]] = {}
        held: list[tuple[int, int]] = []  # (file, its number of jobs), in order
        jobs: list[TensorJob] = []
        for number, entry in enumerate(entries):
            if entry.is_stats:
                done[number] = FileRows(entry, stats=tuple(compare_stats_file(entry, golden, matcher)))
                continue
            its_jobs = list(file_jobs(entry, golden, matcher, options))
            if all(held_cheaply(job) for job in its_jobs):
                held.append((number, len(its_jobs)))
                jobs.extend(its_jobs)
            else:
                done[number] = FileRows(entry, rows=tuple(evaluate(job, options) for job in its_jobs))
        rows = iter(evaluate_all(jobs, options))
        for number, count in held:
            done[number] = FileRows(entries[number], rows=tuple(itertools.islice(rows, count)))
        return [done[number] for number in range(len(entries))]

    def failed_file(self, entry: DumpEntry, plan: ComparePlan, reason: str) -> FileRows[ResultRow]:
        if entry.is_stats:
            return FileRows(entry, stats=(unreadable_stats(entry, reason),))
        job = unreadable_file_job(entry, _matcher(plan), reason)
        return FileRows(entry, rows=(evaluate(job, plan.options),))

    def row_text(self, rows: Sequence[ResultRow], plan: ComparePlan) -> tuple[str, ...] | None:
        # The Address columns show when any row of the shard has one: a file with addresses
        # leaves its rows to the shard. OpSequence is written; ``write_table`` drops it unless
        # the run has a fusion rule (it is the first cell, a number or NaN: no comma, no quote).
        if any(r.npu_address or r.golden_address for r in rows):
            return None
        return row_lines(rows, TableShape(op_sequence=True, overflow=plan.options.overflow_detection))

    def row_verdicts(self, rows: Sequence[ResultRow], plan: ComparePlan) -> RowVerdicts:
        return RowVerdicts.of(rows, plan.options.thresholds)

    def shard_order(self, key: GroupKey) -> tuple[object, ...]:
        return shard_order(key)

    def result_name(self, key: GroupKey, keys: Sequence[GroupKey], stamp: str, kind: str = "result") -> str:
        return result_name(key, keys, stamp, kind)

    def closing_rows(self, golden: GoldenSource | None, used: set[str]) -> list[ResultRow]:
        return golden_only_rows(golden, used) if golden is not None else []

    def write_table(
        self, path: Path, rows: Sequence[ResultRow], settings: ResultSettings, text: Sequence[FileText] = ()
    ) -> tuple[Path, Path | None]:
        # The rows given as text hold no address (``row_text``): the rest decide the shape, and
        # rows a worker sent and formatted are not made back for it.
        rest = rows[sum(len(lines) for _, lines in text) :]
        shape = TableShape.of(rest, op_sequence=settings.op_sequence, overflow=settings.overflow_detection)
        result = write_csv(path, rows, shape, text)
        xlsx = None
        if settings.xlsx:
            from dumpcmp.host.sinks.xlsx_file import write_xlsx

            xlsx = write_xlsx(result.with_suffix(".xlsx"), rows, shape, thresholds=settings.thresholds)
        return result, xlsx


def _golden(plan: ComparePlan) -> GoldenSource:
    if plan.golden is None:
        raise InternalError("an offline_data plan without a golden source")
    return plan.golden


def _matcher(plan: ComparePlan) -> Matcher | None:
    if plan.matcher is not None and not isinstance(plan.matcher, Matcher):
        raise InternalError(f"an offline_data plan with a {type(plan.matcher).__name__} matcher")
    return plan.matcher


OFFLINE_DATA = OfflineData()


@dataclass(frozen=True, slots=True)
class ComparePlan:
    """What one shard is compared against: chosen once, never changed by a comparison.

    ``golden`` and ``matcher`` are the family's: a GoldenSource and ATC ``Matcher`` for
    offline_data; for torchair no golden source (each pair loads its own bench tensor) and the
    GE↔FX or GE↔GE matcher, which turns a dump file into tensor pairs.
    """

    golden: GoldenSource | None
    matcher: Matcher | PairMatcher | None
    options: CompareOptions
    family: ResultFamily = OFFLINE_DATA


def compare_file(entry: DumpEntry, plan: ComparePlan) -> FileRows[Any]:
    """Every row of one dump file (tensor dump or statistics dump); failures become reasons."""
    return plan.family.compare_file(entry, plan)


def compare_batch(pairs: Sequence[tuple[DumpEntry, ComparePlan]]) -> list[FileRows[Any]]:
    """``compare_file`` of each (file, plan), in order, the files of a plan given one after the
    other compared together (``ResultFamily.compare_files``): a worker's batch of tiny files
    costs a few kernel calls, not a few per file."""
    results: list[FileRows[Any]] = []
    for _, run in itertools.groupby(pairs, key=lambda pair: id(pair[1])):
        files = list(run)
        plan = files[0][1]
        results.extend(plan.family.compare_files([entry for entry, _ in files], plan))
    return results


def failed_file(entry: DumpEntry, plan: ComparePlan, reason: str) -> FileRows[Any]:
    """The rows of a file whose comparison never finished (it crashed every worker that tried):
    one row with ``reason``, like an unreadable file's."""
    return plan.family.failed_file(entry, plan, reason)
