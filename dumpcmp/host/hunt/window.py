"""A window pass judged as the advisor judges a full capture: the window's files compared in
full by the host's core, written as the result table a compare writes, and walked by
``verdict.divergence_start`` over the advisor's own ``op_agreement``."""

from __future__ import annotations

from dataclasses import dataclass

from dumpcmp.host.golden import GoldenSource
from dumpcmp.host.hunt.compare import compare_pass
from dumpcmp.host.hunt.graph import HuntGraph
from dumpcmp.host.hunt.records import ISOLATED, PassFiles, Verdict
from dumpcmp.host.matcher import Matcher
from dumpcmp.host.report.advisor import FIRST_DIVERGENCE, advise, op_agreement
from dumpcmp.host.report.grading import GradeThresholds, RowJudge, group_ops
from dumpcmp.host.report.table import table_from_cells
from dumpcmp.host.sinks.table import TableShape
from dumpcmp.host.verdict import divergence_start

__all__ = ["WindowResult", "judge_window"]


@dataclass(frozen=True)
class _Found:
    kind: str
    culprit: str
    originals: tuple[str, ...]

    def with_passes(self, passes: int, evidence: tuple[str, ...]) -> Verdict:
        return Verdict(self.kind, self.culprit, self.originals, evidence, passes)


@dataclass(frozen=True)
class WindowResult:
    verdict: _Found | None
    upstream_of: tuple[str, ...]  # window ops whose inputs from outside the window disagree
    evidence: tuple[str, ...]


def judge_window(graph: HuntGraph, matcher: Matcher, golden: GoldenSource, done: PassFiles) -> WindowResult:
    rows, _ = compare_pass(matcher, golden, done.dump_files)
    shape = TableShape.of(rows, op_sequence=True, overflow=False)
    table = table_from_cells(
        [shape.header(), *(shape.cells(r) for r in rows)], source=f"pass {done.capture.index}"
    )
    judge = RowJudge(table, GradeThresholds())
    ops = group_ops(table)
    start = divergence_start([op_agreement(judge, op) for op in ops])
    lines = advise(table).lines()
    tag = f"pass {done.capture.index}: "
    if start.op is not None and not start.unseen and start.inconsistent_input is None:
        op = ops[start.op]
        name = graph.rules.find(op.op_name)
        culprit = name.name if name is not None else op.op_name
        found = [line for line in lines if line.startswith(FIRST_DIVERGENCE)]
        return WindowResult(
            _Found(ISOLATED, culprit, tuple(n for n in op.originals if n)), (), tuple(tag + f for f in found)
        )
    upstream = ops[start.inconsistent_input[0]].op_name if start.inconsistent_input else ops[0].op_name
    found_op = graph.rules.find(upstream)
    first = (found_op.name,) if found_op is not None else ()
    return WindowResult(None, first, tuple(tag + line for line in lines[:1]))
