"""Pass 1's statistics detector: where a statistics dump starts to leave the golden run.

Each op's output statistics are compared with the golden tensor's (``stats_compare``, through
the host's core); an op's error is the relative distance of its L2 norm (``verdict.l2_distance``;
max, min and mean where the dump has no L2 norm). The first op whose error jumps far above the
noise the run shows before it (``verdict.statistics_drift``) is the suspect; NaN or inf on the
target side where the golden has none is a divergence wherever it appears.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dumpcmp.host.golden import GoldenSource
from dumpcmp.host.hunt.compare import compare_pass
from dumpcmp.host.hunt.graph import HuntGraph
from dumpcmp.host.hunt.records import PassFiles
from dumpcmp.host.matcher import Matcher
from dumpcmp.host.stats_compare import StatsResult
from dumpcmp.host.verdict import l2_distance, statistic_distance, statistics_drift

__all__ = ["Detection", "detect"]


@dataclass(frozen=True)
class Detection:
    suspect: str | None
    evidence: tuple[str, ...]


def row_error(row: StatsResult) -> float:
    """One statistics row's distance from the golden (NaN: not compared)."""
    if not row.compared or row.target is None or row.golden is None:
        return math.nan
    l2 = l2_distance(row.target.l2norm, row.golden.l2norm)
    if not math.isnan(l2):
        return l2
    known = [statistic_distance(t, g) for t, g in row.pairs()[:3] if t is not None and g is not None]
    return max(known) if known else math.nan


def detect(graph: HuntGraph, matcher: Matcher, golden: GoldenSource, done: PassFiles) -> Detection:
    _, stats = compare_pass(matcher, golden, done.dump_files)
    by_op: dict[str, float] = {}
    for row in stats:
        if not row.tensor_index.split(":")[-2:-1] == ["output"]:
            continue
        op = graph.rules.find(row.npu_name)
        if op is None or op.name not in graph:
            continue
        error = row_error(row)
        if not math.isnan(error):
            by_op[op.name] = max(by_op.get(op.name, 0.0), error)
    names = graph.sorted(by_op)
    drift = statistics_drift([by_op[n] for n in names])
    if drift is None:
        return Detection(None, (f"statistics of {len(names)} ops stay within the run's noise",))
    suspect = names[drift.at]
    return Detection(
        suspect,
        (
            f"pass 1: {suspect} statistics L2 norm {drift.error:.2%} apart, {drift.jump:.0f}x the noise before",
        ),
    )
