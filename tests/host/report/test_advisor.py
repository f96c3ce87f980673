"""The advisor: on simulated runs with known injected faults, and on hand-made tables (both families)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dumpcmp.commands.sim import simulate
from dumpcmp.host.offline import run_compare
from dumpcmp.host.report.advisor import (
    FIRST_DIVERGENCE,
    FP16_OVERFLOW,
    INPUT_INCONSISTENCY,
    NETWORK_CONSISTENT,
    NOTHING_COMPARED,
    Advice,
    advise,
    write_advice,
)
from dumpcmp.host.report.table import ResultTable, read_result
from dumpcmp.host.request import CompareRequest
from tests.host.report.tables import offline, offline_table, torchair, torchair_table

KINDS = (FP16_OVERFLOW, INPUT_INCONSISTENCY, FIRST_DIVERGENCE, NETWORK_CONSISTENT, NOTHING_COMPARED)


def simulated(
    tmp_path: Path, model: str, *faults: str, overflow_column: bool = False
) -> tuple[ResultTable, dict[str, int]]:
    """Simulate ``model`` with ``faults``, compare it, read the result back; also each NPU op's Index."""
    sim = simulate(model, tmp_path / "sim", faults=faults)
    assert sim.run_dir is not None
    request = CompareRequest(
        target=sim.npu_dump_dir, golden=sim.golden_dir, fusion_rule=sim.fusion_rule,
        out_dir=tmp_path / "result", overflow_detection=overflow_column,
    )  # fmt: skip
    outcome = run_compare(request)
    (shard,) = outcome.shards
    assert shard.result_file is not None
    table = read_result(shard.result_file)
    orders = {r.op_name: r.order for r in table.targets() if r.order is not None}
    return table, {fault.split("=")[0]: orders[sim.fault_npu_ops[fault.split("=")[0]]] for fault in faults}


def kinds(advice: Advice) -> list[str]:
    return [f.kind for f in advice.findings]


def assert_lines_start_with_their_kind(advice: Advice) -> None:
    for finding, line in zip(advice.findings, advice.lines(), strict=False):
        assert line.startswith(f"{finding.kind}:") and "\n" not in line
        assert finding.advice.endswith(".") and finding.advice in line


# --------------------------------------------------------------------- simulated runs


def test_clean_simulated_run_is_network_consistent(tmp_path: Path) -> None:
    table, _ = simulated(tmp_path, "zoo:small_cnn")
    advice = advise(table)
    assert kinds(advice) == [NETWORK_CONSISTENT] and advice.suspects == ()
    (line,) = advice.lines()
    assert line.startswith("network consistent: all 41 compared tensors agree") and "op #" not in line


def test_bias_in_a_fused_op_is_the_problem_node_and_names_its_originals(tmp_path: Path) -> None:
    op = "/block2.pw/bn/BatchNormalization"  # fused into the NPU op /block2.pw/conv/Conv
    table, where = simulated(tmp_path, "zoo:small_cnn", f"{op}=bias")
    advice = advise(table)
    assert kinds(advice) == [FIRST_DIVERGENCE]
    (finding,) = advice.findings
    assert finding.order == where[op] and finding.op_name == "/block2.pw/conv/Conv"
    assert op in finding.originals
    assert "accumulating" in finding.detail  # nothing after it undoes a bias in a conv
    assert finding.evidence["amplification"] > 100
    assert advice.suspects[0].order == where[op]  # the op that makes the error, ranked first
    assert advice.lines()[0].startswith(
        f"first divergence: op #{where[op]} /block2.pw/conv/Conv (originals: /block2.pw/conv/Conv, {op})"
    )
    assert_lines_start_with_their_kind(advice)


@pytest.mark.parametrize("overflow_column", [True, False], ids=["OverFlow column", "reason counts"])
def test_fp16_overflow_is_found_at_its_op(tmp_path: Path, overflow_column: bool) -> None:
    op = "/block2.pw/conv/Conv"
    table, where = simulated(tmp_path, "zoo:small_cnn", f"{op}=overflow", overflow_column=overflow_column)
    advice = advise(table)
    overflow = advice.first(FP16_OVERFLOW)
    assert overflow is not None and overflow.order == where[op]
    assert kinds(advice)[0] == FP16_OVERFLOW
    divergence = advice.first(FIRST_DIVERGENCE)
    assert divergence is not None and divergence.order == where[op] and "accumulating" in divergence.detail


def test_bias_absorbed_by_softmax_is_single_point(tmp_path: Path) -> None:
    # Softmax is blind to a constant added to its input: the Gemm's bias never reaches the output.
    op = "/head/fc/Gemm"
    table, where = simulated(tmp_path, "zoo:small_cnn", f"{op}=bias")
    finding = advise(table).first(FIRST_DIVERGENCE)
    assert finding is not None and finding.order == where[op]
    assert "single-point: later ops recover" in finding.detail
    assert "absorb" in finding.advice


def test_transformer_bias_is_the_problem_node(tmp_path: Path) -> None:
    op = "/mlp.fc1/MatMul"
    table, where = simulated(tmp_path, "zoo:transformer_block", f"{op}=bias:0.5")
    finding = advise(table).first(FIRST_DIVERGENCE)
    assert finding is not None and finding.order == where[op]


# ---------------------------------------------------------------------- hand-made tables


def test_nothing_compared_is_not_consistency() -> None:
    table = offline_table(
        offline(0, "a", cos="NaN", reason="no framework counterpart"),
        offline(None, "*", cos="NaN", reason="golden tensor with no NPU counterpart"),
    )
    advice = advise(table)
    assert kinds(advice) == [NOTHING_COMPARED]
    assert advice.lines()[0].startswith("nothing compared: none of its 2 rows has metric values")


def test_golden_only_and_numberless_rows_never_become_problem_nodes() -> None:
    table = offline_table(
        offline(0, "a", red=0.001),
        offline(1, "b", cos="NaN", reason="shape mismatch [2] vs [3]"),
        offline(2, "c", cos=0.5, red=0.9),
        offline(None, "*", cos="NaN", reason="golden tensor with no NPU counterpart"),
    )
    finding = advise(table).first(FIRST_DIVERGENCE)
    assert finding is not None and (finding.order, finding.op_name) == (2, "c")


def test_differing_network_inputs_are_input_inconsistency() -> None:
    table = offline_table(
        offline(0, "cast", "input", cos=0.9, red=0.3),
        offline(0, "cast", cos=0.9, red=0.3),
        offline(1, "conv", "input", cos=0.9, red=0.3),
        offline(1, "conv", cos=0.9, red=0.3),
    )
    advice = advise(table)
    assert kinds(advice) == [INPUT_INCONSISTENCY]  # no op whose inputs agree diverges
    assert advice.findings[0].order == 0 and "input 0 differs" in advice.findings[0].detail


def test_an_input_going_bad_with_no_bad_producer_is_input_inconsistency() -> None:
    # Op 1's second input differs though op 0's output agrees: it comes from outside the table.
    table = offline_table(
        offline(0, "conv", red=0.001),
        offline(1, "add", "input", red=0.001),
        offline(1, "add", "input", k=1, cos=0.8, red=0.4),
        offline(1, "add", cos=0.9, red=0.3),
    )
    advice = advise(table)
    assert kinds(advice) == [INPUT_INCONSISTENCY]
    assert (advice.findings[0].order, "input 1 differs" in advice.findings[0].detail) == (1, True)


def test_fp16_overflow_from_the_error_size_when_no_column_or_reason_says() -> None:
    table = offline_table(offline(0, "a"), offline(1, "mul", max_abs=70000.0, red=0.5, cos=0.9))
    advice = advise(table)
    assert kinds(advice) == [FP16_OVERFLOW, FIRST_DIVERGENCE]
    fp32 = offline_table(offline(0, "a"), offline(1, "mul", max_abs=70000.0, red=0.5, dtype="DT_FLOAT"))
    assert kinds(advise(fp32)) == [FIRST_DIVERGENCE]  # only float16 overflows at 65504


def test_suspects_rank_by_amplification_and_split_inherited_from_own_error() -> None:
    table = offline_table(
        offline(0, "a", "input", red=0.001),
        offline(0, "a", red=0.02),  # 20x
        offline(1, "b", "input", red=0.02),
        offline(1, "b", red=0.04),  # 2x: inherited, not a suspect
        offline(2, "c", "input", red=0.04),
        offline(2, "c", cos=0.8, red=2.0),  # 50x
    )
    advice = advise(table)
    assert [(s.order, round(s.amplification)) for s in advice.suspects] == [(2, 50), (0, 20)]
    assert advice.lines()[-1].startswith("suspect: op #0 a amplifies RelativeEuclideanDistance 20.0x")


def test_torchair_single_point_and_accumulating() -> None:
    absorbed = torchair_table(
        torchair("Add", "input"), torchair("Add"),
        torchair("Mul", "input"), torchair("Mul", ratio=0.3, cos=0.9, max_abs=1.0),
        torchair("Softmax", "input", ratio=0.3, cos=0.9, max_abs=1.0), torchair("Softmax"),
    )  # fmt: skip
    finding = advise(absorbed).first(FIRST_DIVERGENCE)
    assert finding is not None and (finding.order, finding.op_name) == (1, "Mul")
    assert "single-point" in finding.detail and finding.evidence["One Thousandth Err Ratio"] == 0.3
    kept = torchair_table(
        torchair("Add"),
        torchair("Mul", ratio=0.3, max_rel=0.5),
        torchair("Softmax", ratio=0.2, max_rel=0.5),
        torchair("Out", ratio=0.1, max_rel=0.5),
    )
    finding = advise(kept).first(FIRST_DIVERGENCE)
    assert finding is not None and finding.order == 1 and "accumulating: 2 of 2 later ops" in finding.detail


def test_torchair_clean_is_consistent() -> None:
    advice = advise(torchair_table(torchair("Add", "input"), torchair("Add", ratio=0.97, max_abs=1e-3)))
    assert kinds(advice) == [NETWORK_CONSISTENT]


def test_write_advice_writes_text_and_json_and_never_overwrites(tmp_path: Path) -> None:
    table = offline_table(offline(0, "a"), offline(1, "fused", cos=0.5, red=0.9, truth="x,y"))
    advice = advise(table)
    first = write_advice(advice, tmp_path, "20261124010000")
    second = write_advice(advice, tmp_path, "20261124010000", prefix="0_m_1_")
    third = write_advice(advice, tmp_path, "20261124010000")
    assert [p.name for p in (*first, *second, *third)] == [
        "advisor_20261124010000.txt", "advisor_20261124010000.json",
        "0_m_1_advisor_20261124010000.txt", "0_m_1_advisor_20261124010000.json",
        "advisor_20261124010000_1.txt", "advisor_20261124010000_1.json",
    ]  # fmt: skip
    assert first[0].read_text().splitlines() == advice.lines()
    data = json.loads(first[1].read_text())
    assert data["findings"][0]["kind"] == FIRST_DIVERGENCE
    assert data["findings"][0]["originals"] == ["x", "y"] and data["source"] == "hand-made"
    assert not list(tmp_path.glob(".*.part"))


def test_torchair_first_divergence_follows_the_verdict() -> None:
    """A FAIL whose One Thousandth ratio sits between the colour bounds (a dropped op: cosine
    0.888, ratio 0.67) is still where the run went wrong: the advisor agrees with the summary's
    first FAIL instead of printing only a suspect."""
    table = torchair_table(
        torchair("Conv"),
        torchair("AddRelu_4", "input"),
        torchair("AddRelu_4", cos=0.888, ratio=0.67, max_rel=1.0, max_abs=8.8),
        torchair("Softmax", cos=0.95, ratio=0.5, max_rel=0.3, max_abs=1.0),
    )
    finding = advise(table).first(FIRST_DIVERGENCE)
    assert finding is not None and finding.op_name == "AddRelu_4" and "accumulating" in finding.detail
    assert finding.evidence["MaxRelativeErr"] == 1.0  # the verdict's own metric is quoted


def test_a_fused_torchair_op_names_its_first_and_last_fx_nodes() -> None:
    """AddRelu_4's inputs are compared with add's FX inputs and its output with relu_4's: the
    finding names both, not only the member whose output it is (the fault sat in add)."""
    rows = [torchair("AddRelu_4", "input"), torchair("AddRelu_4", cos=0.5, ratio=0.2, max_rel=0.5)]
    rows[0][2] = "['/ge/Add.AddRelu_4.1.0.1', '/fx/add-aten.add.Tensor.INPUT.0.1.npy']"
    rows[1][2] = "['/ge/Add.AddRelu_4.1.0.1', '/fx/relu_4-aten.relu.default.OUTPUT.0.1.npy']"
    finding = advise(torchair_table(*rows)).first(FIRST_DIVERGENCE)
    assert finding is not None and finding.originals == ("add", "relu_4")


def test_nothing_compared_quotes_the_rows_reason_instead_of_guessing() -> None:
    """Reduced data compared in real mode: every row says why; the advice must not send the user
    to check the golden data."""
    why = "real-data mode needs both tensors; the NPU side has statistics only"
    rows = [torchair(op, cos="N/A", max_abs="N/A", max_rel="N/A", ratio="N/A") for op in ("Add", "Mul")]
    for row in rows:
        row[-3:] = ["N/A", "No", why]
    advice = advise(torchair_table(*rows))
    (finding,) = [f for f in advice.findings if f.kind == NOTHING_COMPARED]
    assert finding.advice == f"the rows say why (2 of 2): {why}"


def _add_after_relu(add: int) -> ResultTable:
    """conv #0, relu #1, then an add numbered ``add`` whose input differs though relu agrees."""
    return offline_table(
        offline(0, "conv", red=0.001),
        offline(1, "relu", red=0.001),
        offline(add, "add", "input", cos=0.8, red=0.4),
        offline(add, "add", cos=0.9, red=0.3),
    )


def test_an_input_differing_after_a_gap_in_the_numbering_is_hedged_without_the_rule() -> None:
    # Index 2 is missing: the op that made add's input may not have been dumped, and without the
    # fusion rule the advisor cannot tell that from differing network inputs.
    (finding,) = advise(_add_after_relu(3)).findings
    assert finding.kind == INPUT_INCONSISTENCY
    assert finding.advice.startswith("an op before it may not have been dumped"), finding.advice
    assert "pass --graph RULE.json to trace the input to its maker" in finding.advice
    # numbered without a gap, the network's inputs (or constants) are what differ
    (finding,) = advise(_add_after_relu(2)).findings
    assert finding.advice.startswith("the network's inputs (or constants) differ"), finding.advice
