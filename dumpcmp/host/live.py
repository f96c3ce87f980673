"""A comparison fed one dump file at a time, in any order: the streaming host's face of the core.

``add`` compares a file the moment it lands and returns its rows; ``close`` writes exactly the
result files ``dumpcmp compare -tp DUMP_ROOT -gp GOLDEN [-fr RULE] -o OUT`` writes for the same
files on disk, because both are the same core feeding the same session layer. The one thing a
file alone cannot know is which ops of an L1 fusion group were dumped first and last; files of
such groups are compared again at close, with every file's dump time known.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

from dumpcmp.errors import DumpcmpError
from dumpcmp.host.core import ComparePlan, compare_file
from dumpcmp.host.golden import GoldenSource, NpuDumpGolden, open_golden
from dumpcmp.host.matcher import Matcher
from dumpcmp.host.offline import CompareRequest, RuleSet, check_arguments, result_settings
from dumpcmp.host.pipeline import CompareOptions
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.session import CompareOutcome, CompareSession, ShardRows
from dumpcmp.host.sinks.table import TableShape
from dumpcmp.outputs import prepare_output_dir
from dumpcmp.proto.walker import DumpEntry, GroupKey, SkippedFile, dump_entry

# Every optional column: rows streamed before the table's shape is known carry them all.
_FULL_TABLE = TableShape(op_sequence=True, npu_address=True, golden_address=True, overflow=True)


class LiveCompare:
    """One session's comparison, fed by the files as they land; safe to call from any thread."""

    def __init__(self, request: CompareRequest, golden: GoldenSource, rules: RuleSet) -> None:
        self._request = request
        self._golden = golden
        self._rules = rules
        self._options = CompareOptions(overflow_detection=request.overflow_detection, jobs=1)
        self._session = CompareSession(result_settings(request, rules.present), golden)
        self._times: dict[GroupKey, dict[str, int]] = {}
        self._entries: dict[Path, DumpEntry] = {}
        self._skipped: dict[Path, str] = {}
        self._lock = threading.Lock()

    @classmethod
    def open(
        cls,
        *,
        dump_root: Path,
        golden: Path,
        fusion_rule: Path | None,
        out_dir: Path,
        overflow_detection: bool = False,
    ) -> LiveCompare:
        """Load the golden index and the rule file; their errors are raised here, before any file."""
        request = CompareRequest(
            dump_root, golden, fusion_rule=fusion_rule, out_dir=out_dir, overflow_detection=overflow_detection
        )
        source = open_golden(golden)
        check_arguments(request, isinstance(source, NpuDumpGolden))
        return cls(request, source, RuleSet.load(request))

    def add(self, dump_file: Path) -> list[ResultRow]:
        """Compare one file under the dump root (again, if it came before: its rows are replaced)."""
        found = dump_entry(dump_file, self._request.target)
        with self._lock:
            if not isinstance(found, DumpEntry):
                if isinstance(found, SkippedFile):
                    self._skipped[found.path] = found.reason
                return []
            self._entries[found.path] = found
            times = self._times.setdefault(found.group, {})
            name = found.name.op_name
            times[name] = min(found.name.timestamp, times.get(name, found.name.timestamp))
            plan = self._plan(found.group)
        result = compare_file(found, plan)
        with self._lock:
            shard = self._session.shard(found.group)
            shard.add(result)
            if found.is_stats:
                return []
            place = shard.place(result)
        return [replace(row, index=place) for row in result.rows]

    def close(self) -> CompareOutcome:
        """Write the result files (every shard, golden-only rows after the last)."""
        with self._lock:
            if not self._entries:
                hint = f" ({len(self._skipped)} files skipped)" if self._skipped else ""
                raise DumpcmpError(f"no dump files received under {self._request.target}{hint}")
            for key, shard in self._session_shards():
                self._settle_l1_groups(key, shard)
            prepare_output_dir(self._request.out_dir, "-o")
            shards = self._session.close()
        skipped = tuple(sorted(self._skipped.items())) + tuple(self._golden.skipped)
        return CompareOutcome(shards, skipped=skipped)

    def _session_shards(self) -> list[tuple[GroupKey, ShardRows]]:
        keys = sorted({e.group for e in self._entries.values()})
        return [(key, self._session.shard(key)) for key in keys]

    def _plan(self, key: GroupKey) -> ComparePlan:
        matcher = self._rules.matcher_for(key)
        if matcher is not None:
            matcher = matcher.with_dump_times(self._times.get(key, {}))
        return ComparePlan(self._golden, matcher, self._options)

    def _settle_l1_groups(self, key: GroupKey, shard: ShardRows) -> None:
        """Compare L1 fusion members again now that every file's dump time is known."""
        base: Matcher | None = self._rules.matcher_for(key)
        if base is None:
            return
        plan = self._plan(key)
        for result in shard.ordered():
            if base.depends_on_dump_times(result.entry.name.op_name):
                shard.add(compare_file(result.entry, plan))


def row_cells(row: ResultRow) -> tuple[list[str], list[str]]:
    """(column names, CSV cells) of one row with every optional column, for rows streamed live."""
    return _FULL_TABLE.header(), _FULL_TABLE.cells(row)
