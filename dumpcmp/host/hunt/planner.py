"""The hunt's planner: from the passes so far, the next capture or the verdict.

Pass 1 captures statistics of every op's outputs; the statistics detector (``hunt.detect``)
names a suspect. Each later pass captures a window (``dump_mode: all``: inputs and outputs,
full tensors) of the suspect and a few ops upstream of it, bounded in bytes. The window is
compared by the host's own core (``hunt.compare``) and judged by the advisor's own walk
(``verdict.divergence_start`` over ``advisor.op_agreement``): the op whose inputs agree and
whose outputs do not is the culprit; when an input from outside the window disagrees, the error
started upstream and the next window widens that way.
"""

from __future__ import annotations

from collections.abc import Sequence

from dumpcmp.host.fusion_rules import FusionRules
from dumpcmp.host.golden import GoldenSource
from dumpcmp.host.hunt.graph import HuntGraph
from dumpcmp.host.hunt.records import (
    ALL_STATISTICS,
    NO_DIVERGENCE,
    UNDECIDED,
    Capture,
    HuntLimits,
    PassFiles,
    Verdict,
)
from dumpcmp.host.matcher import Matcher

__all__ = ["full_capture_bytes", "next_step"]

# The default bound of a window pass: this share of a full capture's bytes.
DEFAULT_SHARE = 0.05
WINDOW_OPS = 4  # ops of a first window: the suspect and this many minus one upstream


def full_capture_bytes(rules: FusionRules) -> int:
    """Estimate of a full capture (``dump_mode: all``, every op, full tensors) of one run."""
    graph = HuntGraph(rules)
    return graph.window_bytes(graph.order)


def next_step(
    rules: FusionRules, golden: GoldenSource, passes: Sequence[PassFiles], limits: HuntLimits
) -> Capture | Verdict:
    """The next capture after ``passes`` (none yet: pass 1), or the verdict. Deterministic in its
    inputs: the host calls it again with every pass so far after each one."""
    return _Planner(rules, golden, limits).step(passes)


class _Planner:
    def __init__(self, rules: FusionRules, golden: GoldenSource, limits: HuntLimits) -> None:
        self.graph = HuntGraph(rules)
        self.matcher = Matcher(rules)
        self.golden = golden
        self.limits = limits
        full = self.graph.window_bytes(self.graph.order)
        self.pass_bytes = limits.pass_bytes or max(1, int(full * DEFAULT_SHARE))

    def step(self, passes: Sequence[PassFiles]) -> Capture | Verdict:
        from dumpcmp.host.hunt.detect import detect
        from dumpcmp.host.hunt.window import judge_window

        if not passes:
            return self.statistics_capture()
        first = detect(self.graph, self.matcher, self.golden, passes[0])
        if first.suspect is None:
            return Verdict(NO_DIVERGENCE, "", (), first.evidence, len(passes))
        window = self.window_around(first.suspect)
        evidence = list(first.evidence)
        for done in passes[1:]:
            found = judge_window(self.graph, self.matcher, self.golden, done)
            evidence += found.evidence
            if found.verdict is not None:
                return found.verdict.with_passes(len(passes), tuple(evidence))
            window = self.widen(found.upstream_of) if found.upstream_of else self.window_around(first.suspect)
        if len(passes) >= self.limits.max_passes:
            return Verdict(
                UNDECIDED, first.suspect, self.originals(first.suspect), tuple(evidence), len(passes)
            )
        return self.window_capture(len(passes) + 1, window, f"around {first.suspect}")

    def originals(self, name: str) -> tuple[str, ...]:
        return tuple(n for n in self.graph.op(name).original_op_names if n)

    def statistics_capture(self) -> Capture:
        size = sum(self.graph.stats_dump_bytes(n, inputs=False) for n in self.graph.order)
        return Capture(
            1, "stats", "output", (), "statistics of every op's outputs, to find where the run leaves the golden",
            size, ALL_STATISTICS,
        )  # fmt: skip

    def window_around(self, suspect: str) -> tuple[str, ...]:
        chosen = [suspect]
        frontier = [suspect]
        while frontier and len(chosen) < WINDOW_OPS:
            nxt = []
            for name in frontier:
                for src in self.graph.producers(name):
                    if src not in chosen and len(chosen) < WINDOW_OPS:
                        trial = [*chosen, src]
                        if self.graph.window_bytes(trial) <= self.pass_bytes:
                            chosen.append(src)
                            nxt.append(src)
            frontier = nxt
        return self.graph.sorted(chosen)

    def widen(self, names: Sequence[str]) -> tuple[str, ...]:
        chosen: list[str] = []
        for name in names:
            for op in self.window_around(name):
                if op not in chosen and self.graph.window_bytes([*chosen, op]) <= self.pass_bytes:
                    chosen.append(op)
        return self.graph.sorted(chosen or names[:1])

    def window_capture(self, index: int, window: Sequence[str], why: str) -> Capture:
        return Capture(
            index, "tensor", "all", tuple(window),
            f"inputs and outputs of {len(window)} ops {why}", self.graph.window_bytes(window),
        )  # fmt: skip
