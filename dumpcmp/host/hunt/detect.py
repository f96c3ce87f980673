"""Pass 1's statistics detector: where a statistics dump starts to leave the golden run.

Each op's output statistics (max, min, mean, L2 norm; ``dump_data: stats``) are compared with
the golden tensor's, taken the same way (``stats_compare``, through the host's core). An op's
error is judged against its own scale: the L2 norm's relative distance, and the distance of its
max, min and mean in units of the golden tensor's root mean square (so a mean near zero, or a
tensor of small values, is not blown up). The first op whose error jumps far above the noise
the run shows before it (as ``verdict.statistics_drift`` judges a statistics table, with
``DriftLimits``; here against the earlier ops of the same type first: fp16 rounding moves some
statistics of some ops more than others) is the suspect. NaN or inf on the target side where the
golden has none is a divergence wherever it appears.

What it cannot see: a change that leaves all four statistics within the noise before it
(a permutation of values, as a layout fault; noise far below the tensor's spread; an error in
a few elements that are neither the extremes nor enough to move the mean); an error that
starts below the noise and only grows large later (the suspect is then downstream of the
cause: the windows walk upstream); an op whose golden tensor is missing (not compared).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dumpcmp.host.golden import GoldenSource
from dumpcmp.host.hunt.compare import compare_pass
from dumpcmp.host.hunt.graph import HuntGraph
from dumpcmp.host.hunt.records import PassFiles
from dumpcmp.host.matcher import Matcher
from dumpcmp.host.stats_compare import Statistics, StatsResult
from dumpcmp.host.verdict import DriftLimits, statistic_distance
from dumpcmp.printable import counted

__all__ = ["DETECT_LIMITS", "Detection", "detect", "row_error"]

# Measured on the four zoo models fault-free (seeds 0-2, fp16): with errors below 0.5% counted as
# 0.5%, no op's error is more than 3.6x the noise before it (``_jumps``); 5x is a move away.
DETECT_LIMITS = DriftLimits(jump=5.0, floor=5e-3)
SAME_TYPE = 2  # earlier ops of an op's type that make the noise it is judged against


@dataclass(frozen=True)
class Detection:
    """What pass 1 saw: the suspects in execution order (each where the statistics jump again
    above everything before it; none: nothing moved), each op's error, and why, in words."""

    suspects: tuple[str, ...]
    errors: Mapping[str, float]  # per op (fusion rule name): its statistics' distance, judged
    evidence: Mapping[str, str]  # per suspect: pass 1's words about it; "" key: nothing seen


def _scale(golden: Statistics, count: int | None) -> float:
    """The golden tensor's own scale: its root mean square (largest magnitude if unknown)."""
    if golden.l2norm is not None and count and math.isfinite(golden.l2norm) and golden.l2norm > 0:
        return golden.l2norm / math.sqrt(count)
    ends = [abs(v) for v in (golden.max, golden.min) if v is not None and math.isfinite(v)]
    return max(ends, default=0.0)


def row_error(row: StatsResult) -> tuple[float, str]:
    """One statistics row's distance from the golden and the statistic that gives it (NaN:
    not compared). NaN/inf on one side only is infinitely far."""
    if row.target is None or row.golden is None or not row.compared:
        return math.nan, ""
    if any(r.startswith("target holds") for r in row.reasons):
        return math.inf, "NaN/inf"
    scale = _scale(row.golden, row.count)
    worst, which = 0.0, ""
    for name, (t, g) in zip(("Max", "Min", "Mean", "L2norm"), row.pairs(), strict=True):
        if t is None or g is None:
            continue
        if math.isnan(t) != math.isnan(g):
            return math.inf, name
        if math.isnan(t) or t == g:
            continue
        # The L2 norm against itself; the others in units of the tensor's scale.
        error = statistic_distance(t, g) if name == "L2norm" or scale == 0 else abs(t - g) / scale
        if error > worst:
            worst, which = error, name
    return worst, which


def detect(graph: HuntGraph, matcher: Matcher, golden: GoldenSource, done: PassFiles) -> Detection:
    """The suspect of a statistics pass."""
    _, stats = compare_pass(matcher, golden, done.dump_files)
    errors: dict[str, tuple[float, str]] = {}
    for row in stats:
        if ":output:" not in row.tensor_index:
            continue
        op = graph.rules.find(row.npu_name)
        if op is None or op.name not in graph:
            continue
        error, which = row_error(row)
        if not math.isnan(error) and error >= errors.get(op.name, (0.0, ""))[0]:
            errors[op.name] = (error, which)
    names = graph.sorted(errors)
    flat = {n: errors[n][0] for n in names}
    words: dict[str, str] = {}
    suspects: list[str] = []
    for name, noise in _jumps(graph, names, flat):
        error, which = errors[name]
        suspects.append(name)
        if math.isinf(error):
            words[name] = f"pass 1: statistics leave the golden at {name}: {which} on the target side only"
        else:
            words[name] = (
                f"pass 1: statistics leave the golden at {name}: {which} {error:.2%} of its scale apart, "
                f"{error / noise:.0f}x the run's noise before it ({noise:.2%})"
            )
    if not suspects:
        peak = max(flat.values(), default=0.0)
        words[""] = (
            f"pass 1: statistics of {counted(len(names), 'op')} stay within the run's noise "
            f"(at most {peak:.2%})"
        )
    return Detection(tuple(suspects), flat, words)


def _jumps(graph: HuntGraph, names: Sequence[str], errors: Mapping[str, float]) -> list[tuple[str, float]]:
    """The ops (in execution order) whose error is ``DETECT_LIMITS.jump`` times the noise before
    them, with that noise (errors below ``DETECT_LIMITS.floor`` count as it).

    Until the first jump, an op's noise is the largest error of the earlier ops of its own type
    (the same op of an earlier block rounds alike: a softmax's maximum moves more with fp16
    rounding than a matmul's) once there are ``SAME_TYPE`` of them, else of every earlier op
    (one earlier op of a type may have another role: the Cast of the input, of the output). After a jump
    every later op is judged against everything before it, the jump included: what follows a
    fault inherits its error, and only a second fault moves further still. Nothing jumps above
    NaN/inf: the walk ends there.
    """
    limits = DETECT_LIMITS
    found: list[tuple[str, float]] = []
    everything = limits.floor
    by_type: dict[str, list[float]] = {}
    for name in names:
        error, kind = errors[name], graph.op(name).type
        same = by_type.setdefault(kind, [])
        noise = max(limits.floor, *same) if len(same) >= SAME_TYPE and not found else everything
        if error >= limits.jump * noise:
            found.append((name, noise))
            if math.isinf(error):
                break
        everything = max(everything, error)
        same.append(error)
    return found
