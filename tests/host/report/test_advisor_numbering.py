"""The advisor's "an op before it may not have been dumped" on real ATC numbering (tdnn.om.json):
ATC numbers the Const, Data and control ops no dump holds, so a skip in OpSequence alone is no
missing dump; a rule whose numbering skips only there, or the rule itself, still says one."""

from __future__ import annotations

from pathlib import Path

import pytest

from dumpcmp.host.fusion_rules import RuleOp, load_rules
from dumpcmp.host.report.advisor import FIRST_DIVERGENCE, INPUT_INCONSISTENCY, advise
from dumpcmp.host.report.graph import graph_for
from dumpcmp.host.report.table import ResultTable, table_from_cells
from tests.host.report.tables import OFFLINE_HEADER, offline

HEDGE = "an op before it may not have been dumped"


@pytest.fixture(scope="module")
def tdnn(shared_fixtures: Path) -> Path:
    return shared_fixtures / "atc" / "tdnn.om.json"


def numbered(*ops: tuple[int, list[list[str]]]) -> ResultTable:
    """A result table with an OpSequence column: each op's rows (Index renumbered 0, 1, … as
    compare numbers the dumped ops) under its rule id."""
    header = [OFFLINE_HEADER[0], "OpSequence", *OFFLINE_HEADER[1:]]
    rows = [[row[0], str(sequence), *row[1:]] for sequence, op_rows in ops for row in op_rows]
    return table_from_cells([header, *rows], source="hand-made")


def dumped(rules_path: Path, up_to: int) -> list[RuleOp]:
    """The ops of the rule a dump holds, up to id ``up_to``: no Const, Data or NetOutput, and
    only ops that write a tensor (Send, Recv and AtomicAddrClean write none)."""
    return [
        op
        for op in load_rules(rules_path)
        if op.id <= up_to and op.outputs and op.type not in ("Const", "Data", "NetOutput")
    ]


def agreeing(ops: list[RuleOp], differ: str = "", k: int = 0) -> ResultTable:
    """``ops`` dumped with inputs and outputs, each agreeing but ``differ``'s input ``k`` and output."""
    made = []
    for index, op in enumerate(ops):
        bad = {"cos": 0.5, "red": 0.6} if op.name == differ else {}
        inputs = [
            offline(index, op.name, "input", k=j, **(bad if j == k else {}))
            for j in range(len(op.data_inputs))
        ]
        made.append((op.id, [*inputs, offline(index, op.name, **bad)]))
    return numbered(*made)


def test_a_constant_input_that_differs_after_atc_numbered_constants_is_not_hedged(tdnn: Path) -> None:
    # tdnn's first Transpose (id 40) comes after the Consts 3-39: its OpSequence skips right before
    # it, as before every Pad and most ops, and the advisor told nearly every input inconsistency
    # that "an op before it may not have been dumped".
    ops = dumped(tdnn, 51)
    transpose = next(op for op in ops if op.type == "Transpose")
    assert transpose.id == 40 and ops[0].id == 2  # the real numbering: trans_Cast_0, then Consts
    (finding,) = [
        f for f in advise(agreeing(ops, transpose.name, k=1)).findings if f.kind == INPUT_INCONSISTENCY
    ]
    assert finding.op_name == transpose.name and "input 1" in finding.detail
    assert not finding.advice.startswith(HEDGE), finding.advice
    assert finding.advice.startswith("the network's inputs (or constants) differ"), finding.advice


def test_a_numbering_that_skips_only_before_the_op_still_hedges() -> None:
    # OpSequence 1-5 of dumped ops only, 4 missing (its file deleted): the Index, renumbered by
    # compare, shows no gap; the rule's numbering does.
    ops = [(1, "conv"), (2, "relu"), (3, "pool"), (5, "add"), (6, "out")]
    table = numbered(
        *(
            (seq, [offline(i, op, "input", cos=0.5, red=0.6), offline(i, op, cos=0.5, red=0.6)])
            if op == "add"
            else (seq, [offline(i, op)])
            for i, (seq, op) in enumerate(ops)
        )
    )
    (finding, *_) = advise(table).findings
    assert finding.kind == INPUT_INCONSISTENCY and finding.op_name == "add"
    assert finding.advice.startswith(HEDGE), finding.advice


def test_a_capture_of_a_few_ops_numbered_as_in_the_model_hedges() -> None:
    # A hunt's window of 4 ops, OpSequence 148-151 (Index 0-3): the input of its third op comes from
    # an op outside the window, and the advisor said "the network's inputs (or constants) differ".
    ops = [(148, "softmax"), (149, "trans_a"), (150, "trans_b"), (151, "context")]
    table = numbered(
        *(
            (seq, [offline(i, op, "input", cos=0.2, red=1.3), offline(i, op, cos=0.2, red=1.3)])
            if op == "trans_b"
            else (seq, [offline(i, op, "input"), offline(i, op)])
            for i, (seq, op) in enumerate(ops)
        )
    )
    (finding, *_) = advise(table).findings
    assert finding.kind == INPUT_INCONSISTENCY and finding.op_name == "trans_b"
    assert finding.advice.startswith(HEDGE), finding.advice


def test_with_the_rule_a_missing_dumped_op_is_named_and_send_recv_are_not(tdnn: Path) -> None:
    graph = graph_for(tdnn)
    ops = dumped(tdnn, 93)
    # A real dumped op missing (its file deleted): the rule names it as the input's maker.
    trans = next(op for op in ops if op.id == 43)
    conv = next(op for op in ops if op.id == 44)
    table = agreeing([op for op in ops if op is not trans], conv.name)
    findings = advise(table, graph=graph).findings
    assert findings[0].kind == FIRST_DIVERGENCE and findings[0].op_name == trans.name, findings
    assert "was not dumped" in findings[0].detail
    # Send and Recv (ids 87-92, between the Transpose 86 and the ReduceMean 93) write no tensor: no
    # dump holds them, and a divergence right after them is not put down to their missing dumps.
    mean = ops[-1]
    assert mean.id == 93 and mean.type.startswith("Reduce")
    outputs_only = numbered(
        *(
            (op.id, [offline(i, op.name, **({"cos": 0.5, "red": 0.6} if op is mean else {}))])
            for i, op in enumerate(ops)
        )
    )
    (finding,) = [f for f in advise(outputs_only, graph=graph).findings if f.kind == FIRST_DIVERGENCE]
    assert finding.op_name == mean.name
    assert "not dumped" not in finding.detail and "Send" not in finding.advice, finding.line()
