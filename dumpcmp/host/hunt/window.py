"""A tensor pass (a window or a probe) judged as the advisor judges a full capture: its files
compared in full by the host's core, read back as the result table a compare writes, each op's
rows judged by the advisor's ``op_agreement`` (the planner walks them with
``verdict.divergence_start``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from dumpcmp.host.golden import GoldenSource
from dumpcmp.host.hunt.compare import compare_pass, result_table
from dumpcmp.host.hunt.graph import HuntGraph
from dumpcmp.host.hunt.records import PassFiles
from dumpcmp.host.matcher import Matcher
from dumpcmp.host.report.advisor import op_agreement
from dumpcmp.host.report.grading import GradeThresholds, OpRows, RowJudge, group_ops, metric_evidence
from dumpcmp.host.verdict import Agreement, OpAgreement

__all__ = ["OpSeen", "TensorPass", "read_tensor_pass"]

MAX_ABS = "MaxAbsoluteError"


@dataclass(frozen=True)
class OpSeen:
    """One op of a tensor pass: its rows' agreements and their numbers, in words."""

    name: str  # the op's name in the fusion rule
    agreement: OpAgreement
    words: Mapping[tuple[str, int], str]  # ("input"|"output", k) -> "input 0 CosineSimilarity 0.99…"

    @property
    def output(self) -> Agreement:
        """DISAGREE when an output disagrees, AGREE when every compared output agrees."""
        outs = [a for a in self.agreement.outputs if a is not Agreement.UNKNOWN]
        if Agreement.DISAGREE in outs:
            return Agreement.DISAGREE
        return Agreement.AGREE if outs else Agreement.UNKNOWN

    def bad_inputs(self) -> tuple[int, ...]:
        return tuple(k for k, a in enumerate(self.agreement.inputs) if a is Agreement.DISAGREE)


@dataclass(frozen=True)
class TensorPass:
    index: int
    with_inputs: bool  # dump_mode all: each op's inputs were captured with its outputs
    ops: tuple[OpSeen, ...]  # in execution order


def _words(judge: RowJudge, op: OpRows) -> dict[tuple[str, int], str]:
    """Each row's numbers as the advisor quotes them, and its largest absolute error."""
    found: dict[tuple[str, int], str] = {}
    for io, rows in (("input", op.inputs), ("output", op.outputs)):
        for k, row in enumerate(rows):
            quoted = {**metric_evidence(judge, row)}
            if quoted and not math.isnan(row.metric(MAX_ABS)):
                quoted.setdefault(MAX_ABS, row.metric(MAX_ABS))
            numbers = ", ".join(f"{name} {value:.6g}" for name, value in quoted.items())
            broken = judge.breaches(row)  # what makes it disagree, when a metric not quoted does
            found[(io, k)] = f"{io} {k} {numbers or 'not compared'}" + (
                f"; {', '.join(broken)}" if broken else ""
            )
    return found


def read_tensor_pass(graph: HuntGraph, matcher: Matcher, golden: GoldenSource, done: PassFiles) -> TensorPass:
    """Each op of one tensor pass, judged by the advisor's row judge."""
    rows, _ = compare_pass(matcher, golden, done.dump_files)
    table = result_table(rows, f"pass {done.capture.index}")
    judge = RowJudge(table, GradeThresholds())
    seen = []
    for op in group_ops(table):
        rule = graph.rules.find(op.op_name)
        seen.append(OpSeen(rule.name if rule else op.op_name, op_agreement(judge, op), _words(judge, op)))
    return TensorPass(done.capture.index, done.capture.mode == "all", tuple(seen))
