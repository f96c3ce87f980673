"""A comparison fed one dump file at a time, in any order: the streaming host's face of the core.

``add`` compares a file the moment it lands and returns its rows; ``close`` writes exactly the
result files ``dumpcmp compare -tp DUMP_ROOT -gp GOLDEN [-fr RULE] -o OUT`` writes for the same
files on disk, because both are the same core feeding the same session layer. The one thing a
file alone cannot know is which ops of an L1 fusion group were dumped first and last; files of
such groups are compared again at close, with every file's dump time known.

``add_many`` takes the files that landed together and hands them to the session's runner at
once (``dumpcmp.host.workers``' protocol): here, one after another, or a Dask cluster's
(``host serve --cluster``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dumpcmp.errors import DumpcmpError
from dumpcmp.host.core import ComparePlan, numbered
from dumpcmp.host.golden import GoldenSource, NpuDumpGolden, golden_skipped, open_golden
from dumpcmp.host.matcher import Matcher
from dumpcmp.host.offline import check_arguments, result_settings
from dumpcmp.host.pipeline import CompareOptions
from dumpcmp.host.request import CompareRequest
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.rule_set import RuleSet
from dumpcmp.host.session import CompareOutcome, CompareSession
from dumpcmp.host.stats_compare import StatsResult
from dumpcmp.host.workers import Runner, compare_files, each_file
from dumpcmp.outputs import prepare_output_dir
from dumpcmp.proto.names import MAPPING_FILE, read_mapping
from dumpcmp.proto.walker import DumpEntry, GroupKey, SkippedFile, arrived_entry


@dataclass(frozen=True, slots=True)
class Added:
    """What ``add_many`` made of its files: rows of tensor files, statistics rows of statistics files
    (none for skipped files), or why not.

    A ``mapping.csv`` among the files also brings back the rows of the files it names that came
    before it (skipped until then): ``rows`` and ``stats`` may hold files the caller did not pass.
    """

    rows: dict[Path, list[ResultRow]] = field(default_factory=dict)
    # Index 0: a statistics file's place is known only once every file of its shard is (the
    # session's table, a reader of these rows as they come: ``host results``)
    stats: dict[Path, list[StatsResult]] = field(default_factory=dict)
    problems: dict[Path, DumpcmpError] = field(default_factory=dict)


class LiveCompare:
    """One session's comparison, fed by the files as they land; safe to call from any thread."""

    def __init__(
        self,
        request: CompareRequest,
        golden: GoldenSource,
        rules: RuleSet,
        runner: Runner = compare_files,
    ) -> None:
        self._request = request
        self._runner = runner
        self._golden = golden
        self._rules = rules
        self._options = CompareOptions(overflow_detection=request.overflow_detection, jobs=1)
        self._session: CompareSession[ResultRow, GroupKey] = CompareSession(
            result_settings(request, rules.present), golden
        )
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
        runner: Runner = compare_files,
    ) -> LiveCompare:
        """Load the golden index and the rule file; their errors are raised here, before any file."""
        request = CompareRequest(
            dump_root, golden, fusion_rule=fusion_rule, out_dir=out_dir, overflow_detection=overflow_detection
        )
        source = open_golden(golden)
        check_arguments(request, isinstance(source, NpuDumpGolden))
        return cls(request, source, RuleSet.load(request), runner)

    def add(self, dump_file: Path) -> list[ResultRow]:
        """Compare one file under the dump root (again, if it came before: its rows are replaced)."""
        added = self.add_many([dump_file])
        if dump_file in added.problems:
            raise added.problems[dump_file]
        return added.rows.get(dump_file, [])

    def add_many(self, dump_files: Sequence[Path]) -> Added:
        """``add`` for each file, the comparisons handed to the runner together.

        Every file's dump time is known before any is compared, so one plan per shard serves the
        whole batch. A file whose plan cannot be made (no rule file for its model) is a problem,
        the others are still compared.
        """
        added = Added()
        found_entries: list[tuple[Path, DumpEntry]] = []
        with self._lock:
            for path, found in self._arrived(dump_files):
                if isinstance(found, DumpEntry):
                    found_entries.append((path, found))
                    self._skipped.pop(path, None)
                    self._record(found)
                elif isinstance(found, SkippedFile):
                    self._skipped[found.path] = found.reason
            plans: dict[GroupKey, ComparePlan] = {}
            work: list[tuple[Path, DumpEntry, ComparePlan]] = []
            for path, entry in found_entries:
                try:
                    plan = plans[entry.group] if entry.group in plans else self._plan(entry.group)
                except DumpcmpError as exc:
                    added.problems[path] = exc
                    continue
                plans[entry.group] = plan
                work.append((path, entry, plan))
        results = each_file(self._runner, [(entry, plan) for _, entry, plan in work])
        with self._lock:
            for (path, entry, _), result in zip(work, results, strict=True):
                shard = self._session.shard(entry.group)
                shard.add(result)
                if entry.is_stats:
                    added.stats[path] = list(result.stats)
                else:
                    place = shard.place(result)
                    added.rows[path] = [numbered(row, place) for row in result.rows]
        return added

    def _arrived(self, dump_files: Sequence[Path]) -> list[tuple[Path, DumpEntry | SkippedFile | None]]:
        """Each file as a walk of the dump root names it: through its directory's ``mapping.csv``.

        A mapping file may land after the files it names: it brings back its directory's files
        skipped so far, so the arrival order does not change the result.
        """
        paths = list(dict.fromkeys(dump_files))
        for mapping_file in [p for p in paths if p.name == MAPPING_FILE]:
            paths += [p for p in self._skipped if p.parent == mapping_file.parent and p not in paths]
        mappings: dict[Path, dict[str, str]] = {}
        for directory in {p.parent for p in paths}:
            mappings[directory] = read_mapping(directory)
        return [(p, arrived_entry(p, self._request.target, mappings[p.parent])) for p in paths]

    def _record(self, entry: DumpEntry) -> None:
        self._entries[entry.path] = entry
        times = self._times.setdefault(entry.group, {})
        name = entry.name.op_name
        times[name] = min(entry.name.timestamp, times.get(name, entry.name.timestamp))

    def close(self) -> CompareOutcome:
        """Write the result files (every shard, golden-only rows after the last)."""
        with self._lock:
            if not self._entries:
                hint = f" ({len(self._skipped)} files skipped)" if self._skipped else ""
                raise DumpcmpError(f"no dump files received under {self._request.target}{hint}")
            for result in each_file(self._runner, self._l1_members()):
                self._session.shard(result.entry.group).add(result)
            prepare_output_dir(self._request.out_dir, "-o")
            shards = self._session.close()
        skipped = tuple(sorted(self._skipped.items())) + golden_skipped(
            self._golden, self._rules.shared_golden_names()
        )
        return CompareOutcome(shards, skipped=skipped)

    def _plan(self, key: GroupKey) -> ComparePlan:
        matcher = self._rules.matcher_for(key)
        if matcher is not None:
            matcher = matcher.with_dump_times(self._times.get(key, {}))
        return ComparePlan(self._golden, matcher, self._options)

    def _l1_members(self) -> list[tuple[DumpEntry, ComparePlan]]:
        """The files of L1 fusion groups, to compare again now that every dump time is known."""
        work = []
        for key in sorted({e.group for e in self._entries.values()}):
            base: Matcher | None = self._rules.matcher_for(key)
            if base is None:
                continue
            plan = self._plan(key)
            shard = self._session.shard(key)
            work += [
                (result.entry, plan)
                for result in shard.ordered()
                if base.depends_on_dump_times(result.entry.name.op_name)
            ]
        return work
