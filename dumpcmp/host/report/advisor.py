"""The advisor (metrics.md §3): what went wrong and where, in words, from a result table alone.

It reads only the rows of a finished result (``ResultTable``), so it runs the same on a table
written just now, a CSV or xlsx from elsewhere, or a host session's result, for both families.
Rows are judged by ``host.verdict`` (through ``grading.RowJudge``), on the typed values the table
reader gives back: the verdict the comparison's own summary gave.

Findings, in the order they are printed:

* ``fp16 overflow``: the first op whose float16 output overflows: OverFlow ``YES`` when the
  column is there; otherwise a float16 output whose target side holds more inf than the golden
  (the row's NaN/inf counts) or an error of at least 65504 (only an overflowing value is that far off).
* ``nan/inf appeared``: instead of it, when the first such output holds NaN/inf where the golden
  does not (more NaN, or NaN/inf at other positions; in a statistics table, NaN/inf the dump
  counted beyond the golden's).
* ``input inconsistency``: an op input that disagrees while every earlier op's outputs agree:
  nothing in the table produced the difference, so the network's inputs (or constants) differ.
* ``first divergence``: the problem node, the earliest op whose inputs agree and whose outputs
  do not. Inputs "agree" when its compared input rows all agree, or, with none in the table,
  when every earlier op's outputs agree. The finding says whether the error is single-point (the
  last compared op's outputs agree again: later ops absorbed it) or accumulating. In a statistics
  table, outputs also disagree once their statistics have moved away from the golden's
  (``verdict.statistics_drift``): the first divergence is where they leave the run's noise, not
  the first op the fixed PASS rule catches downstream.
* ``network consistent``: every compared row agrees, and nothing else was found.
* ``no finite data``: instead of it, when every compared row holds NaN/inf at every position on
  both sides (``verdict.nothing_finite``): the positions agree, but no value could be judged.
* ``nothing compared``: no row has numbers; the run must not pass for consistent.

Suspects: every op with compared inputs and outputs whose error grows (output error over input
error, see ``grading.amplification``) at least ``GradeThresholds.growth`` times, ranked by it.
Fused ops are one op of the table and name their original ops (GroundTruth).

A shard whose dump holds tensor dumps and statistics dumps of one run (``result_*`` and
``stats_result_*``) is one walk (``advise(..., statistics=)``): each op's tensor rows where it
has any, else its statistics rows, each judged by its own table's judge; a finding drawn from
statistics rows says so.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from dumpcmp.host.report.grading import (
    GradeThresholds,
    OpRows,
    RowJudge,
    amplification,
    group_ops,
    merged_ops,
    metric_evidence,
    worst,
)
from dumpcmp.host.report.graph import OpGraph
from dumpcmp.host.report.table import OFFLINE_DATA, ResultTable, TensorResult
from dumpcmp.host.verdict import (
    FP16_MAX,
    Agreement,
    Appearance,
    OpAgreement,
    Side,
    SpecialValues,
    Start,
    Thresholds,
    divergence_start,
    nothing_finite,
    special_appearance,
)
from dumpcmp.printable import counted

__all__ = ["Advice", "Finding", "Suspect", "Worded", "advise", "op_agreement", "write_advice"]

_FP16 = {"DT_FLOAT16", "FLOAT16", "FP16", "HALF", "TORCH.FLOAT16"}

SUSPECTS_SHOWN = 10  # printed and in the HTML; the JSON has them all

FP16_OVERFLOW = "fp16 overflow"
NAN_APPEARED = "nan/inf appeared"
UNREADABLE_CELLS = "unreadable cells"
INPUT_INCONSISTENCY = "input inconsistency"
FIRST_DIVERGENCE = "first divergence"
# Statistics agree on tensors that differ (noise of zero mean, a permutation as a layout fault
# makes): an op blamed from statistics may be downstream of a change they could not see.
STATISTICS_BLIND_SPOT = (
    "Statistics cannot see noise or a permutation (a layout fault): the change may start upstream, "
    "where they stayed within limits; compare full tensors to rule it out."
)
NETWORK_CONSISTENT = "network consistent"
NO_FINITE_DATA = "no finite data"
NOTHING_COMPARED = "nothing compared"
CUT_SHORT = "cut short"


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str  # one of the module's detection types
    order: int | None  # the op's place in execution order; None for whole-network findings
    op_name: str  # "" for whole-network findings
    originals: tuple[str, ...]  # the golden-side ops of a fused op
    evidence: Mapping[str, float]  # metric values that show it
    advice: str  # one sentence
    detail: str = ""  # the finding's facts in words (which tensor, single-point or not)

    def line(self) -> str:
        parts = [f"{self.kind}:"]
        if self.order is not None:
            parts.append(f"op #{self.order} {self.op_name}")
            if self.originals and self.originals != (self.op_name,):
                parts.append(f"(originals: {', '.join(self.originals)})")
        if self.detail:
            parts.append(("- " if self.order is not None else "") + self.detail)
        if self.evidence:
            parts.append("[" + ", ".join(f"{k} {_number(v)}" for k, v in self.evidence.items()) + "]")
        parts.append("- " + self.advice)
        return " ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "order": self.order,
            "op_name": self.op_name,
            "originals": list(self.originals),
            "detail": self.detail,
            "evidence": {k: _json_number(v) for k, v in self.evidence.items()},
            "advice": self.advice,
        }


@dataclass(frozen=True, slots=True)
class Suspect:
    """An op that makes error rather than inheriting it: its output error over its input error."""

    order: int
    op_name: str
    originals: tuple[str, ...]
    input_error: float
    output_error: float
    amplification: float
    metric: str  # the error column the three numbers are read from
    floor: float  # errors below it count as it (an exact input would make any output "infinite")

    def line(self) -> str:
        into, out = _floored(self.input_error, self.floor), _floored(self.output_error, self.floor)
        return (
            f"suspect: op #{self.order} {self.op_name} amplifies {self.metric} {_times(self.amplification)} "
            f"(input {into} -> output {out})"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "order": self.order,
            "op_name": self.op_name,
            "originals": list(self.originals),
            "metric": self.metric,
            "input_error": _json_number(self.input_error),
            "output_error": _json_number(self.output_error),
            "amplification": _json_number(self.amplification),
            "error_floor": self.floor,
        }


class Worded(Protocol):
    """Advice as it is printed and written: a shard's (``Advice``) or a run's (``shards.RunAdvice``)."""

    def lines(self) -> list[str]: ...

    def to_json(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Advice:
    findings: tuple[Finding, ...]
    suspects: tuple[Suspect, ...] = ()
    source: str = ""  # the result it was made from
    family: str = ""
    compared: int = 0  # rows with numbers
    disagreeing: int = 0  # of them, rows that disagree
    # The thresholds an offline table's rows were judged by (compare's, or advise's options), for
    # the JSON: a result re-advised with other ones may disagree. None for TorchAir (its Result).
    thresholds: Thresholds | None = None

    def lines(self) -> list[str]:
        """The findings, then the top suspects (the rest are in the JSON and the xlsx sheet)."""
        shown = [s.line() for s in self.suspects[:SUSPECTS_SHOWN]]
        more = len(self.suspects) - SUSPECTS_SHOWN
        if more > 0:
            shown.append(f"suspects: {more} more, with smaller amplification (all in the advisor JSON)")
        return [f.line() for f in self.findings] + shown

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "family": self.family,
            "compared": self.compared,
            "disagreeing": self.disagreeing,
            **({"thresholds": asdict(self.thresholds)} if self.thresholds is not None else {}),
            "findings": [f.to_json() for f in self.findings],
            "suspects": [s.to_json() for s in self.suspects],
        }

    def first(self, kind: str) -> Finding | None:
        return next((f for f in self.findings if f.kind == kind), None)


@dataclass(frozen=True, slots=True, eq=False)
class _Judges:
    """The judge of each op's rows: the table's, or for the ops only the shard's statistics
    result holds (``OpRows.statistics``), that result's."""

    table: RowJudge
    statistics: RowJudge | None = None

    def of(self, op: OpRows) -> RowJudge:
        return self.statistics if op.statistics and self.statistics is not None else self.table


def advise(
    table: ResultTable,
    thresholds: GradeThresholds | None = None,
    graph: OpGraph | None = None,
    statistics: ResultTable | None = None,
) -> Advice:
    """The findings and suspects of ``table``; ``graph``, the network's fusion rule where known,
    places the ops the table has no rows for (not dumped) in the walk. ``statistics``: the
    statistics result of the same shard, where its dump holds both kinds: one walk of the shard's
    ops, its rows standing for the ops ``table`` has none of (``grading.merged_ops``)."""
    limits = thresholds or GradeThresholds()
    judges = _Judges(
        RowJudge(table, limits), RowJudge(statistics, limits) if statistics is not None else None
    )
    ops = group_ops(table) if statistics is None else merged_ops(table, statistics)
    judged = [(judges.of(op), r) for op in ops for r in (*op.inputs, *op.outputs)]
    judged = [(judge, r) for judge, r in judged if judge.judged(r)]
    rows = [r for _, r in judged]
    disagreeing = sum(judge.verdict(r) is Agreement.DISAGREE for judge, r in judged)
    tables = [t for t in (table, statistics) if t is not None]
    findings: list[Finding] = []
    for damaged in (t for t in tables if t.bad_cells):
        where = f"{damaged.source}: " if len(tables) > 1 else ""
        findings.append(
            Finding(
                UNREADABLE_CELLS, None, "", (), {},
                "fix or regenerate the result table: a damaged row cannot be judged.",
                detail=f"{where}{counted(damaged.bad_cells, 'cell')} not numbers or out of range, e.g. "
                f"{damaged.bad_cell_example}; their rows count as not compared",
            )
        )  # fmt: skip
    if not rows:
        findings.append(
            Finding(
                NOTHING_COMPARED, None, "", (), {}, _nothing_compared_advice(table),
                detail=_nothing_compared(table),
            )
        )  # fmt: skip
    else:
        findings += _overflow(judges, ops)
        findings += _divergence_start(judges, ops, graph)
        consistent = not [f for f in findings if f.kind != UNREADABLE_CELLS] and not disagreeing
        if consistent and not any(not r.self_check for r in rows):
            # GE trans ops that agree with their own inputs say nothing of the network.
            findings.append(
                Finding(
                    NOTHING_COMPARED, None, "", (), {}, _nothing_compared_advice(table),
                    detail=f"only {len(rows)} GE-inserted op outputs were compared, each with its own "
                    "input; none with the golden network",
                )
            )  # fmt: skip
        elif consistent and not any(t.cut for t in tables):  # a partial table earns no all-clear
            findings.append(_consistent(rows))
    for cut in (t for t in tables if t.cut):
        findings.append(
            Finding(
                CUT_SHORT, None, "", (), {},
                "use the complete file or regenerate it: rows past the cut were never judged, and "
                "the findings above cover the rows before it only.",
                detail=f"{cut.source or 'the table'} {cut.cut}",
            )
        )  # fmt: skip
    # A consistent run has nothing to blame: amplified errors that stay within the thresholds
    # are the user's accepted precision, not suspects.
    suspects = _suspects(judges, ops) if disagreeing else ()
    verdict = limits.verdict if table.family == OFFLINE_DATA else None
    return Advice(tuple(findings), suspects, table.source, table.family, len(rows), disagreeing, verdict)


def _consistent(rows: Sequence[TensorResult]) -> Finding:
    """``network consistent``, or ``no finite data`` when NaN/inf fill every compared tensor."""
    blank = sum(1 for r in rows if r.values is not None and nothing_finite(r.values))
    if blank == len(rows):
        return Finding(
            NO_FINITE_DATA, None, "", (), {},
            "check the network's inputs: NaN/inf from the start, on both sides, leave nothing to compare.",
            detail=f"all {len(rows)} compared tensors hold NaN/inf at every position, on both sides",
        )  # fmt: skip
    agree = f"all {len(rows)} compared tensors agree"
    if blank:
        hold = "holds" if blank == 1 else "hold"
        finite = len(rows) - blank
        agree = f"all {finite} compared tensors with finite values agree ({blank} more {hold} none)"
    return Finding(
        NETWORK_CONSISTENT, None, "", (), {},
        "nothing to fix: every compared tensor is within the thresholds.", detail=agree,
    )  # fmt: skip


def _nothing_compared(table: ResultTable) -> str:
    if not table.rows:
        return "the table has no rows"
    return f"none of its {len(table.rows)} rows has metric values"


def _nothing_compared_advice(table: ResultTable) -> str:
    """The rows' own most common reason when they give one; a guess only when they are silent."""
    reasons = Counter(r.reason for r in table.targets() if r.reason)
    if reasons:
        reason, count = reasons.most_common(1)[0]
        return f"the rows say why ({count} of {len(table.targets())}): {reason}"
    return (
        "check that the golden data matches the dump (op names, fusion rule, shapes): "
        "no tensor had a counterpart to compare with."
    )


_OVERFLOW_ADVICE = (
    "the float16 result exceeds 65504: compute this op in float32 (keep it out of fp16 mixed "
    "precision) or scale its inputs down."
)
_NAN_ADVICE = (
    "the op makes NaN from finite inputs (0/0, log or sqrt of a negative, inf - inf): check its "
    "inputs' ranges and its implementation."
)
# Infinities only, on both sides (+inf against -inf, or inf at other places): no NaN to explain.
_INF_ADVICE = (
    "the op makes infinities the golden does not have there (a flipped sign, a division by zero "
    "or an overflow): check its inputs' ranges and its implementation."
)


def _overflow(judges: _Judges, ops: Sequence[OpRows]) -> list[Finding]:
    """The first op whose outputs overflow float16 or hold NaN/inf the golden side has not."""
    for op in ops:
        judge = judges.of(op)
        error_name = "MaxAbsoluteError" if judge.offline else "MaxAbsErr"
        for row in op.outputs:
            # TorchAir rows carry no dtype: there the target's inf alone (none golden) says it.
            fp16 = row.dtype.strip().upper() in _FP16 if judge.offline else not row.dtype
            found = special_appearance(row.overflow, row.special, fp16, row.metric(error_name))
            if found is None and row.side is Side.TARGET:
                return [_counted_appearance(judge, op, row)]
            if found is None:
                continue
            kind = FP16_OVERFLOW if found.overflow else NAN_APPEARED
            advice = _OVERFLOW_ADVICE if found.overflow else _NAN_ADVICE
            if found is Appearance.ELSEWHERE and row.special is not None and not _holds_nan(row.special):
                advice = _INF_ADVICE
            finding = _op_finding(kind, judge, op, row, _appearance(row, found, error_name), advice)
            counts = row.special
            if counts is not None and found is not Appearance.OVERFLOW_FLAG:
                evidence = {
                    "target NaN": float(counts.target_nan), "target inf": float(counts.target_inf),
                    "golden NaN": float(counts.golden_nan), "golden inf": float(counts.golden_inf),
                }  # fmt: skip
                finding = replace(finding, evidence={**finding.evidence, **evidence})
            return [finding]
    return []


def _counted_appearance(judge: RowJudge, op: OpRows, row: TensorResult) -> Finding:
    """``nan/inf appeared`` from a statistics row: the device counted NaN/inf beyond the golden's
    (an offline statistics dump's statistics leave them out, so no statistic shows them), or a
    TorchAir statistic is NaN or inf on the NPU side only (its statistics take them in, no count).
    What shows it is the row's reason, as the statistics comparison words it ("target holds 154
    Nan"; "Max NPU, Min NPU NaN on one side only (NaN or inf in the data)")."""
    shown = "the dump's counts" if row.target_nan_inf else "its statistics"
    # The device spells its count "Nan"; "NaN" there is the golden's own ("golden holds 1 NaN").
    nan = "Nan" in row.reason if row.target_nan_inf else "NaN" in row.reason
    advice = _NAN_ADVICE if nan else _INF_ADVICE
    detail = f"{_tensor(row)} holds NaN/inf the golden does not ({shown}: {row.reason})"
    finding = _op_finding(NAN_APPEARED, judge, op, row, detail, advice)
    if not row.target_nan_inf:
        return finding
    return replace(finding, evidence={**finding.evidence, "target NaN/inf": float(row.target_nan_inf)})


def _appearance(row: TensorResult, found: Appearance, error_name: str) -> str:
    """What ``special_appearance`` found, in words."""
    counts = row.special
    if found is Appearance.OVERFLOW_FLAG:
        return f"{_tensor(row)} OverFlow YES"
    if found is Appearance.OVERFLOW_ERROR or counts is None:
        return f"{_tensor(row)} is off by {error_name} >= {FP16_MAX:g}"
    if found is Appearance.OVERFLOW_INF:
        return f"{_tensor(row)} holds {counts.target_inf} inf on the target side"
    if found is Appearance.NAN:
        return f"{_tensor(row)} holds {counts.target_nan} NaN on the target side ({counts.golden_nan} golden)"
    what = "NaN/inf" if _holds_nan(counts) else "inf"  # said from what the data holds
    return (
        f"{_tensor(row)} holds {what} where the golden does not ({counts.target} on the target side, "
        f"{counts.golden} golden, at {counts.mismatched} differing positions)"
    )


def _holds_nan(counts: SpecialValues) -> bool:
    return bool(counts.target_nan or counts.golden_nan)


# An op of the walk: the table's rows of it, or the name of a fusion-rule op the table has no rows for.
_Walked = OpRows | str


def _divergence_start(judges: _Judges, ops: Sequence[OpRows], graph: OpGraph | None) -> list[Finding]:
    """Input inconsistency and the first divergence, as ``verdict.divergence_start`` finds them,
    over the table's ops and, where ``graph`` (the fusion rule) names them, the ops without a dump."""
    walked = _walked(ops, graph)
    start = divergence_start(_agreements(judges, walked, graph))
    findings: list[Finding] = []
    if start.inconsistent_input is not None:
        at, k = start.inconsistent_input
        first = _rows(walked[at])
        row = first.inputs[k]
        differ = "the network's inputs (or constants) differ between the two runs: feed both sides the same "
        differ += "input data"
        # Without the rule the walk cannot know the input's maker: where the table's numbering
        # skips places before the op, its maker may be an op that was not dumped.
        if graph is None and _gap_before(judges.table.table.header, walked, at):
            advice = (
                "an op before it may not have been dumped (the table's op numbering skips places "
                "before it): pass --graph RULE.json to trace the input to its maker; if every op was "
                f"dumped, {differ}."
            )
        else:
            advice = f"{differ} before judging any op."
        findings.append(
            _op_finding(
                INPUT_INCONSISTENCY, judges.of(first), first, row,
                f"{_tensor(row)} differs though every earlier op's outputs agree", advice,
            )
        )  # fmt: skip
    if start.op is None or start.row is None:
        return findings
    op = _rows(walked[start.op])
    io, k = start.row
    row = op.inputs[k] if io == "input" else op.outputs[k]
    if start.producer is not None:
        return [*findings, _made_unseen(judges, walked[start.producer], op, row, graph)]
    if start.unseen:
        return [*findings, _unseen_start(judges.of(op), [_rows(walked[i]) for i in start.unseen], op, row)]
    undumped = [_name(walked[i]) for i in start.undumped]
    # In a shard of both kinds, statistics rows after tensor rows only: the tensors upstream,
    # which agree, leave statistics no blind spot to hide the change in.
    seen = judges.statistics is not None and all(
        isinstance(w, OpRows) and not w.statistics for w in walked[: start.op]
    )
    return [*findings, _divergence(judges.of(op), walked, op, row, start, undumped, upstream_seen=seen)]


def _gap_before(header: Sequence[str], walked: Sequence[_Walked], at: int) -> bool:
    """Whether the table numbers an op it has no rows for right before op ``at``: its Index skips
    a place, or GE's OpSequence does where the table has one and it skips nowhere else.

    ATC numbers every op of its rule, the Const, Data and control ops (Send, Recv,
    AtomicAddrClean) no dump holds among them: its numbering skips before most ops of a real
    model, and a skip there says nothing without the rule. A numbering that skips only here
    numbers dumped ops alone, and one of them is missing. One that skips nowhere but starts
    beyond as many places as the table has ops numbers a capture of part of the network (a
    hunt's window of a few ops, numbered as in the model): the ops before its first were not
    dumped, and any of them may make the input."""
    here = _rows(walked[at])
    if at == 0 and here.order > 0:
        return True
    if at > 0 and here.order - _rows(walked[at - 1]).order > 1:
        return True
    if "OpSequence" not in header:
        return False
    column = header.index("OpSequence")
    numbers = [_sequence(_rows(op), column) for op in walked]
    pairs = enumerate(itertools.pairwise(numbers), start=1)
    skips = [k for k, (a, b) in pairs if a is not None and b is not None and b - a > 1]
    if skips:
        return skips == [at]
    return numbers[0] is not None and numbers[0] >= len(walked)


def _sequence(op: OpRows, column: int) -> int | None:
    """The op's OpSequence; None where it has none (a statistics result's op has no such column)."""
    if op.statistics:
        return None
    cells = (op.inputs or op.outputs)[0].cells
    try:
        return int(cells[column])
    except (IndexError, ValueError):
        return None


def _rows(op: _Walked) -> OpRows:
    assert not isinstance(op, str)  # the walk's findings are at ops with rows
    return op


def _name(op: _Walked) -> str:
    return op if isinstance(op, str) else op.op_name


def _walked(ops: Sequence[OpRows], graph: OpGraph | None) -> list[_Walked]:
    """The table's ops with, in their places, the fusion rule's ops that have no rows. The table's
    ops alone where the rule says nothing of producers, or does not hold every op of the table in
    the same order (another model's rule)."""
    if graph is None or not graph.makers:
        return list(ops)
    lookup = graph.lookup()
    nodes = [lookup.get(op.op_name) for op in ops]
    place = {node: i for i, node in enumerate(graph.nodes)}
    known = [place[n] for n in nodes if n is not None]
    if len(known) < len(ops) or len(set(known)) < len(known) or known != sorted(known):
        return list(ops)
    by_node = dict(zip(nodes, ops, strict=True))
    return [by_node.get(n) or n for n in graph.nodes if n in by_node or _computes(graph, n)]


def _computes(graph: OpGraph, node: str) -> bool:
    """Whether a dump could hold ``node``: a GE graph view says only the network's ends."""
    return node not in graph.silent and graph.types.get(node) not in ("Data", "NetOutput")


def _agreements(judges: _Judges, walked: Sequence[_Walked], graph: OpGraph | None) -> list[OpAgreement]:
    """Each walked op's agreement, with the place of each input's maker where the rule says it."""
    if graph is None or not graph.makers:
        return [op_agreement(judges.of(_rows(op)), _rows(op)) for op in walked]
    lookup = graph.lookup()
    place = {_node(op, lookup): i for i, op in enumerate(walked)}
    agreements = []
    for op in walked:
        if isinstance(op, str):
            agreements.append(OpAgreement((), (), dumped=False))
            continue
        makers = graph.makers.get(_node(op, lookup), ())
        producers = []
        for row in op.inputs:
            k = row.tensor_index
            maker = makers[k] if k is not None and 0 <= k < len(makers) else ""
            producers.append(place.get(maker) if maker else None)
        agreements.append(replace(op_agreement(judges.of(op), op), producers=tuple(producers)))
    return agreements


def _node(op: _Walked, lookup: Mapping[str, str]) -> str:
    return op if isinstance(op, str) else lookup.get(op.op_name, op.op_name)


def _made_unseen(
    judges: _Judges, producer: _Walked, op: OpRows, row: TensorResult, graph: OpGraph | None
) -> Finding:
    """``op``'s differing input ``row`` is made by ``producer``, whose outputs have no numbers:
    the error starts there or before, not in the network's inputs."""
    consumer = f"op #{op.order} {op.op_name} {_tensor(row)}"
    evidence = dict(metric_evidence(judges.of(op), row))
    if isinstance(producer, str):
        originals = graph.originals.get(producer, ()) if graph is not None else ()
        detail = (
            f"{producer} produces {consumer}, which differs though every earlier compared op agrees, "
            f"and {producer} was not dumped: the error starts at or before it"
        )
        advice = (
            f"dump {producer} (its outputs, and its inputs: dump_mode all) to see whether it makes the error."
        )
        return Finding(FIRST_DIVERGENCE, None, producer, originals, evidence, advice, detail)
    inputs = [judges.of(producer).verdict(r) for r in producer.inputs]
    starts = (
        "its inputs agree: the error starts at it"
        if inputs and all(a is Agreement.AGREE for a in inputs)
        else "the error starts at or before it"
    )
    detail = (
        f"produces {consumer}, which differs though every earlier compared op agrees; its outputs were "
        f"not compared (not dumped, or no golden): {starts}"
    )
    advice = "dump this op's outputs (dump_mode output or all) to confirm it makes the error."
    return Finding(
        FIRST_DIVERGENCE, producer.order, producer.op_name, producer.originals, evidence, advice, detail
    )


def op_agreement(judge: RowJudge, op: OpRows) -> OpAgreement:
    """One op's rows as ``verdict.divergence_start`` walks them (the hunt judges its windows so)."""
    return OpAgreement(
        tuple(judge.verdict(r) for r in op.inputs),
        tuple(judge.verdict(r) for r in op.outputs),
        tuple(r.self_check for r in op.outputs),
    )


def _unseen_start(judge: RowJudge, unseen: Sequence[OpRows], op: OpRows, row: TensorResult) -> Finding:
    """The divergence starts among ops the table has no numbers for, or at ``op``."""
    first, last = unseen[0], unseen[-1]
    span = f"op #{first.order}" if first is last else f"ops #{first.order}-#{last.order}"
    detail = (
        f"{span} not compared; op #{op.order} {op.op_name} {_tensor(row)} already differs while every "
        f"earlier compared op agrees: the error starts at {span} or at op #{op.order}"
    )
    advice = "compare the ops without numbers (their rows say why they were not compared) to pin it down."
    evidence = dict(metric_evidence(judge, row))
    return Finding(FIRST_DIVERGENCE, first.order, first.op_name, first.originals, evidence, advice, detail)


def _divergence(
    judge: RowJudge,
    ops: Sequence[_Walked],
    op: OpRows,
    row: TensorResult,
    start: Start,
    undumped: Sequence[str],
    *,
    upstream_seen: bool = False,
) -> Finding:
    # Without its input rows, an op's inputs are taken to agree when no earlier op disagrees.
    agree = "inputs agree (not in the table; no earlier op disagrees)" if start.inferred else "inputs agree"
    spread = start.spread
    if spread is None or spread.last is None:
        words = "it is the last compared op"
        advice = "check this op's implementation and precision on the NPU."
    elif spread.last_agrees:
        last = _rows(ops[spread.last])
        words = (
            f"single-point: later ops recover ({spread.later_bad} of {spread.later} later ops disagree, "
            f"the last, op #{last.order} {last.op_name}, agrees)"
        )
        advice = (
            "an isolated error that later ops absorb: fix this op if its own output matters, "
            "else it is harmless."
        )
    else:
        words = f"accumulating: {spread.later_bad} of {spread.later} later ops stay bad, up to the last"
        advice = (
            "the error starts here and reaches the network's output: check this op's "
            "implementation, dtype and precision mode first."
        )
    if row.side is Side.GOLDEN:
        return _golden_made(judge, op, row, agree, words)
    moved = ""
    if judge.drift is not None and row.position == judge.drift_position:
        moved = f" (its statistics move away from the golden's here: {judge.drift.words()})"
    detail = f"{agree}, {_tensor(row)} does not{moved}; {words}"
    if undumped:  # its inputs were taken to agree, but ops before it were never seen
        detail = (
            f"{_tensor(row)} differs{moved}, but its inputs are not in the table and "
            f"{counted(len(undumped), 'earlier op')} {'was' if len(undumped) == 1 else 'were'} not dumped "
            f"(the nearest: {undumped[-1]}): the error may start there rather than here; {words}"
        )
        advice = f"dump the ops before it (at least {undumped[-1]}) to see whether the error starts here."
    if judge.table.mode == "statistics" and not upstream_seen:
        advice += " " + STATISTICS_BLIND_SPOT
    return _op_finding(FIRST_DIVERGENCE, judge, op, row, detail, advice)


def _golden_made(judge: RowJudge, op: OpRows, row: TensorResult, agree: str, words: str) -> Finding:
    """The first divergence where the golden alone holds NaN/inf (``verdict.special_side``): the
    NPU's output is finite there, so the golden run is what to check, not the NPU's op."""
    counts = row.special
    if counts is not None:
        held = (
            f"{counts.golden_nan} NaN and {counts.golden_inf} inf in the golden, "
            f"{counts.target} NaN/inf on the target side"
        )
    else:  # a statistics row: its reason says what its counts or statistics show
        held = row.reason
    detail = (
        f"{agree}, {_tensor(row)} does not: the golden holds NaN/inf the target does not ({held}); {words}"
    )
    advice = (
        "the golden run is what holds NaN/inf here, not the NPU: check the golden run at this op "
        "(its inputs, the framework op, its dtype) and regenerate the golden data before judging the NPU."
    )
    finding = _op_finding(FIRST_DIVERGENCE, judge, op, row, detail, advice)
    if counts is None:
        return finding
    evidence = {"golden NaN": float(counts.golden_nan), "golden inf": float(counts.golden_inf)}
    return replace(finding, evidence={**finding.evidence, **evidence})


def _suspects(judges: _Judges, ops: Sequence[OpRows]) -> tuple[Suspect, ...]:
    found = []
    for op in ops:
        judge = judges.of(op)
        inputs = [r for r in op.inputs if judge.judged(r) and not math.isnan(judge.error(r))]
        outputs = [r for r in op.outputs if judge.judged(r) and not math.isnan(judge.error(r))]
        if not inputs or not outputs:
            continue
        input_error = worst(judge.error(r) for r in inputs)
        output_error = worst(judge.error(r) for r in outputs)
        ratio = amplification(output_error, input_error, judge.t.error_floor)
        if ratio >= judge.t.growth:
            found.append(
                Suspect(
                    op.order,
                    op.op_name,
                    op.originals,
                    input_error,
                    output_error,
                    ratio,
                    judge.error_name,
                    judge.t.error_floor,
                )
            )
    return tuple(sorted(found, key=lambda s: (-s.amplification, s.order)))


def _op_finding(
    kind: str, judge: RowJudge, op: OpRows, row: TensorResult, detail: str, advice: str
) -> Finding:
    evidence = dict(metric_evidence(judge, row))
    inputs = [r for r in op.inputs if judge.judged(r) and not math.isnan(judge.error(r))]
    if inputs and not math.isnan(judge.error(row)):
        input_error = worst(judge.error(r) for r in inputs)
        evidence["input error"] = input_error
        evidence["output error"] = judge.error(row)
        evidence["amplification"] = amplification(judge.error(row), input_error, judge.t.error_floor)
        if min(input_error, judge.error(row)) < judge.t.error_floor:
            evidence["error floor"] = judge.t.error_floor  # what the amplification raised them to
    if op.statistics:  # a shard of both kinds: say which table its figures are from
        detail += " (by its statistics: the shard has no tensor dump of it)"
    return Finding(kind, op.order, op.op_name, op.originals, evidence, advice, detail)


def _tensor(row: TensorResult) -> str:
    return f"{row.io or 'tensor'} {row.tensor_index}" if row.tensor_index is not None else "its output"


def _times(ratio: float) -> str:
    return f"{ratio:.1f}x" if math.isfinite(ratio) else "without bound (to inf)"


def _floored(value: float, floor: float) -> str:
    return f"{_number(value)} (floored to {floor:g})" if value < floor else _number(value)


def _number(value: float) -> str:
    return f"{value:.6g}" if math.isfinite(value) else str(value)


def _json_number(value: float) -> float | str:
    return value if math.isfinite(value) else str(value)


def write_advice(advice: Worded, out_dir: Path, stamp: str, prefix: str = "") -> tuple[Path, Path]:
    """``{prefix}advisor_{stamp}.txt`` and ``.json`` in ``out_dir``; never overwrites (an existing
    name gets the next free ``_1``, ``_2`` … as result files do)."""
    from dumpcmp.outputs import new_file

    text = "\n".join(advice.lines()) + "\n"
    text_path = new_file(
        out_dir / f"{prefix}advisor_{stamp}.txt", lambda temp: temp.write_text(text, encoding="utf-8")
    )
    try:
        document = json.dumps(advice.to_json(), indent=2) + "\n"
        json_path = new_file(
            text_path.with_suffix(".json"), lambda temp: temp.write_text(document, encoding="utf-8")
        )
    except BaseException:
        text_path.unlink(missing_ok=True)  # the pair goes together: the text alone is half a result
        raise
    return text_path, json_path
