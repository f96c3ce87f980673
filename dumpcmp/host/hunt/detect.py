"""Pass 1's statistics detector: where a statistics dump starts to leave the golden run.

Each op's output statistics (max, min, mean, L2 norm; ``dump_data: stats``) are compared with
the golden tensor's, taken the same way (``stats_compare``, through the host's core). An op's
error is the largest of its outputs' (``verdict.statistics_error``: each statistic against the
golden tensor's own scale), and the ops whose error jumps far above the noise the run shows before
them are the suspects (``verdict.statistics_drifts``, as the summary and the advisor judge a
statistics table). NaN or inf on the target side where the golden has none is a divergence
wherever it appears.

What it cannot see: a change that leaves all four statistics within the noise before it
(a permutation of values, as a layout fault; noise far below the tensor's spread; an error in
a few elements that are neither the extremes nor enough to move the mean); an error that
starts below the noise and only grows large later (the suspect is then downstream of the
cause: the windows walk upstream); an op whose golden tensor is missing (not compared).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from dumpcmp.host.golden import GoldenSource
from dumpcmp.host.hunt.compare import compare_pass
from dumpcmp.host.hunt.graph import HuntGraph
from dumpcmp.host.hunt.records import PassFiles
from dumpcmp.host.matcher import Matcher
from dumpcmp.host.verdict import StatisticError, statistics_drifts, statistics_error
from dumpcmp.printable import counted

__all__ = ["Detection", "detect"]


@dataclass(frozen=True)
class Detection:
    """What pass 1 saw: the suspects in execution order (each where the statistics jump again
    above everything before it; none: nothing moved), each op's error, and why, in words."""

    suspects: tuple[str, ...]
    errors: Mapping[str, float]  # per op (fusion rule name): its statistics' distance, judged
    evidence: Mapping[str, str]  # per suspect: pass 1's words about it; "" key: nothing seen


def detect(graph: HuntGraph, matcher: Matcher, golden: GoldenSource, done: PassFiles) -> Detection:
    """The suspects of a statistics pass."""
    _, stats = compare_pass(matcher, golden, done.dump_files)
    errors: dict[str, StatisticError] = {}
    for row in stats:
        if ":output:" not in row.tensor_index or not row.compared:
            continue
        op = graph.rules.find(row.npu_name)
        if op is None or op.name not in graph:
            continue
        error = statistics_error(row.drift_row())
        if not math.isnan(error.value) and (op.name not in errors or error.value >= errors[op.name].value):
            errors[op.name] = error
    names = graph.sorted(errors)
    drifts = statistics_drifts([errors[n] for n in names])
    suspects = tuple(names[d.at] for d in drifts)
    words = {
        names[d.at]: f"pass 1: statistics leave the golden at {names[d.at]}: {d.words()}" for d in drifts
    }
    if not drifts:
        peak = max((e.value for e in errors.values()), default=0.0)
        words[""] = (
            f"pass 1: statistics of {counted(len(names), 'op')} stay within the run's noise "
            f"(at most {peak:.2%})"
        )
    return Detection(suspects, {n: errors[n].value for n in names}, words)
