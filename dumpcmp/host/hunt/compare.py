"""A pass's files compared by the host's own core: the same golden lookup, matcher, metrics and
thresholds as ``dumpcmp compare`` (``host.core.compare_file`` over a ``ComparePlan``), the rows
numbered as a compare's session numbers them (``host.session.ShardRows``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dumpcmp.host.core import ComparePlan, compare_file
from dumpcmp.host.golden import GoldenSource
from dumpcmp.host.matcher import Matcher
from dumpcmp.host.pipeline import CompareOptions
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.session import ShardRows
from dumpcmp.host.stats_compare import StatsResult
from dumpcmp.proto.names import MAPPING_FILE, read_mapping
from dumpcmp.proto.walker import DumpEntry, GroupKey, arrived_entry

__all__ = ["compare_pass"]


def _entries(files: Sequence[Path]) -> list[DumpEntry]:
    """Each dump file as a walk names it (through its directory's mapping file); others dropped."""
    mappings = {d: read_mapping(d) for d in {p.parent for p in files}}
    found = [arrived_entry(p, p.parent, mappings[p.parent]) for p in files if p.name != MAPPING_FILE]
    return [e for e in found if isinstance(e, DumpEntry)]


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
