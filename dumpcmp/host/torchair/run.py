"""``compare --mode torchair``: find both dumps, compare every (rank, token) shard, write results.

The same core, worker pools and session layer as offline_data; only the plan's family
(``Torchair``) and matcher (the inputs side's GE↔FX or fusion-off matcher) differ.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from dumpcmp.host.core import ComparePlan, FileRows
from dumpcmp.host.pipeline import CompareOptions, fewer_collections
from dumpcmp.host.session import CompareOutcome, CompareSession, ResultSettings
from dumpcmp.host.torchair.family import SummaryMode, Torchair
from dumpcmp.host.torchair.layout import TorchairInputs, open_inputs
from dumpcmp.host.torchair.matcher import TorchairMatcher
from dumpcmp.host.torchair.records import TensorPair, TorchairShardKey
from dumpcmp.host.torchair.rows import TorchairRow, TorchairThresholds
from dumpcmp.host.workers import Runner, compare_files, run_shards
from dumpcmp.outputs import prepare_output_dir
from dumpcmp.proto.walker import DumpEntry

TorchairOutcome = CompareOutcome[TorchairRow, TorchairShardKey]


@dataclass(frozen=True, slots=True)
class TorchairRequest:
    """Everything ``compare --mode torchair`` was asked to do."""

    target: Path  # the GE dump
    golden: Path  # the FX dump, or the GE dump of a fusion-off run
    out_dir: Path = Path(".")
    mode: SummaryMode = SummaryMode.real
    xlsx: bool = False
    jobs: int = 0
    thresholds: TorchairThresholds = field(default_factory=TorchairThresholds)


class RunMatcher(Protocol):
    """The inputs side's matcher for a whole run (``TorchairMatcher``)."""

    def pairs(self, entry: DumpEntry, shard: TorchairShardKey) -> list[TensorPair]: ...


@dataclass(frozen=True, slots=True)
class ShardMatcher:
    """The plan's matcher for one (rank, token): the run's matcher cut to that shard."""

    matcher: RunMatcher
    shard: TorchairShardKey

    def pairs(self, entry: DumpEntry) -> list[TensorPair]:
        return self.matcher.pairs(entry, self.shard)


def run_torchair(
    request: TorchairRequest,
    *,
    on_plan: Callable[[int], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
    runner: Runner | None = None,
    inputs: TorchairInputs | None = None,
) -> TorchairOutcome:
    """Compare every GE dump file of every (rank, token), one result file per shard.

    ``inputs``: the request's dumps when the caller has opened them already (for their graphs).
    """
    with fewer_collections():
        return _compare(request, on_plan, on_progress, runner, inputs)


def _compare(
    request: TorchairRequest,
    on_plan: Callable[[int], None] | None,
    on_progress: Callable[[int], None] | None,
    runner: Runner | None,
    inputs: TorchairInputs | None,
) -> TorchairOutcome:
    inputs = inputs or open_inputs(request.target, request.golden)
    matcher = TorchairMatcher.build(inputs)  # every graph dump parsed once, before any work
    prepare_output_dir(request.out_dir, "-o")
    family = Torchair(request.mode, request.thresholds)
    keys = inputs.shards
    settings = ResultSettings(request.out_dir, time.strftime("%Y%m%d%H%M%S"), xlsx=request.xlsx)
    session: CompareSession[TorchairRow, TorchairShardKey] = CompareSession(settings, None, keys, family)
    options = CompareOptions(jobs=request.jobs)
    workers = options.jobs or os.cpu_count() or 1
    if on_plan:
        on_plan(sum(len(inputs.target.shards[key]) for key in keys))
    shards = []

    def shard_done(number: int, results: list[FileRows]) -> None:
        for result in results:
            session.add(result, keys[number])
        shards.append(session.write_shard(keys[number]))

    plans = [ComparePlan(None, ShardMatcher(matcher.for_shard(key), key), options, family) for key in keys]
    work = [(plan, inputs.target.shards[key]) for plan, key in zip(plans, keys, strict=True)]
    run_shards(runner or compare_files, work, workers, on_progress, shard_done)
    skipped = tuple((s.path, s.reason) for s in inputs.skipped)
    lost = len(inputs.target.lost)
    return CompareOutcome(
        tuple(shards), skipped=skipped, lost_lines=lost + len(inputs.bench.lost), lost_target=lost
    )
