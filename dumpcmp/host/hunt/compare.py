"""A pass's files compared by the host's own core: the same golden lookup, matcher, metrics and
thresholds as ``dumpcmp compare`` (``host.core.compare_file`` over a ``ComparePlan``), the rows
numbered as a compare's session numbers them (``host.session.ShardRows``) and read back as the
result table a compare writes (``report.table``), which the advisor judges.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dumpcmp.host.core import ComparePlan, compare_file
from dumpcmp.host.file_pair import compare_npy_target
from dumpcmp.host.golden import GoldenSource, NpuDumpGolden, NpyGoldenDir
from dumpcmp.host.matcher import Matcher
from dumpcmp.host.pipeline import CompareOptions, locate_golden
from dumpcmp.host.report.table import ResultTable, table_from_cells
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.session import ShardRows
from dumpcmp.host.sinks.table import TableShape
from dumpcmp.host.stats_compare import StatsResult
from dumpcmp.host.verdict import Agreement, Thresholds, agreement
from dumpcmp.proto.codec import TensorKind
from dumpcmp.proto.names import MAPPING_FILE, read_mapping
from dumpcmp.proto.walker import DumpEntry, GroupKey, arrived_entry

__all__ = ["OutputCheck", "check_outputs", "compare_pass", "result_table"]


def _entries(files: Sequence[Path]) -> list[DumpEntry]:
    """Each dump file as a walk names it (through its directory's mapping file), others dropped;
    of a run of several steps, the first step's (the model's outputs are the first step's too)."""
    mappings = {d: read_mapping(d) for d in {p.parent for p in files}}
    found = [arrived_entry(p, p.parent, mappings[p.parent]) for p in files if p.name != MAPPING_FILE]
    entries = [e for e in found if isinstance(e, DumpEntry)]
    first = min((_step(e) for e in entries), default=0)
    return [e for e in entries if _step(e) == first]


def _step(entry: DumpEntry) -> int:
    return int(entry.group.step) if entry.group.step.isdigit() else 0


def compare_pass(
    matcher: Matcher, golden: GoldenSource, files: Sequence[Path]
) -> tuple[list[ResultRow], list[StatsResult]]:
    """The tensor rows and statistics rows of one pass's dump files, in execution order (Index:
    the file's place among the pass's dumps, as in a result table)."""
    entries = _entries(files)
    times: dict[str, int] = {}
    for entry in entries:
        name = entry.name.op_name
        times[name] = min(entry.name.timestamp, times.get(name, entry.name.timestamp))
    plan = ComparePlan(golden, matcher.with_dump_times(times), CompareOptions(jobs=1))
    # One pass is one run of one model: one shard, whatever directories its files came in.
    shard: ShardRows[ResultRow, GroupKey] = ShardRows(GroupKey("0", "hunt", "0", "0"))
    for entry in entries:
        shard.add(compare_file(entry, plan))
    return shard.rows(), shard.stats()


def result_table(rows: Sequence[ResultRow], source: str) -> ResultTable:
    """``rows`` as the result file ``compare`` writes them, read back as the advisor reads one."""
    shape = TableShape.of(rows, op_sequence=True, overflow=False)
    return table_from_cells([shape.header(), *(shape.cells(r) for r in rows)], source=source)


@dataclass(frozen=True)
class OutputCheck:
    """One model output against the golden tensor of the op that feeds NetOutput with it."""

    index: int
    op_name: str  # the NPU op whose output it is
    agreement: Agreement
    row: ResultRow | None  # None: no golden tensor (``reason`` says why)
    reason: str = ""

    def words(self) -> str:
        if self.row is None:
            return f"output {self.index} not compared: {self.reason}"
        m = self.row.metrics
        verb = {Agreement.AGREE: "agrees", Agreement.DISAGREE: "disagrees"}.get(self.agreement, "not judged")
        return (
            f"model output {self.index} ({self.op_name}) {verb}: CosineSimilarity "
            f"{m.cosine_similarity:.6f}, MaxAbsoluteError {m.max_absolute_error:.6g}"
        )


def check_outputs(
    matcher: Matcher,
    golden: GoldenSource,
    feeds: Sequence[tuple[str, int]],
    outputs: Sequence[Path],
) -> tuple[OutputCheck, ...]:
    """The model's outputs (``feeds``: NetOutput's inputs, in output order) against their golden
    tensors, found through the matcher as a dump file's outputs find theirs, compared as ``compare
    -tp OUTPUT.npy -gp GOLDEN.npy`` compares them, judged by compare's default thresholds."""
    checks = []
    for index, (path, (op_name, k)) in enumerate(zip(outputs, feeds, strict=False)):
        _, found, reason = locate_golden(golden, matcher, op_name, TensorKind.OUTPUT, k)
        if found is None:
            checks.append(OutputCheck(index, op_name, Agreement.UNKNOWN, None, reason))
            continue
        single = (
            NpyGoldenDir.single(found.path)
            if isinstance(golden, NpyGoldenDir)
            else NpuDumpGolden.single(found.path)
        )
        row = compare_npy_target(path, single)
        checks.append(OutputCheck(index, op_name, agreement(row.metrics, Thresholds()), row))
    return tuple(checks)
