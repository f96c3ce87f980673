"""The hunt's view of a compiled model (``hunt.graph``) and the statistics detector's measure of
one row (``hunt.detect.row_error``)."""

from __future__ import annotations

import math
from collections.abc import Callable

from dumpcmp.host.fusion_rules import TensorDesc, parse_rules
from dumpcmp.host.hunt.detect import _jumps, row_error
from dumpcmp.host.hunt.graph import HuntGraph, tensor_bytes
from dumpcmp.host.stats_compare import Statistics, StatsResult
from tests.host.hunt.simhunt import SimHunt

PW = "/block1.pw/conv/Conv/block1.pw/act/Relu"


def _graph(sim_hunt: Callable[..., SimHunt]) -> tuple[HuntGraph, SimHunt]:
    hunt = sim_hunt("zoo:small_cnn")
    hunt.full_capture()
    assert hunt.rules is not None
    return HuntGraph(hunt.rules), hunt


def test_dumped_ops_in_execution_order_with_their_producers(sim_hunt: Callable[..., SimHunt]) -> None:
    graph, hunt = _graph(sim_hunt)
    assert hunt.full is not None
    assert len(graph.order) == len(hunt.full.dump_files)  # Data, Const and NetOutput are not dumped
    assert graph.order[0] == "trans_Cast_0" and graph.order[-1] == "trans_Cast_5"
    dw = "/block1.dw/conv/Conv/block1.dw/act/Relu"
    assert graph.producers(PW) == (dw,)  # its weight and bias inputs are Const ops
    assert graph.input_producer(PW, 0) == dw and graph.input_producer(PW, 1) is None
    assert PW in graph.consumers(dw)
    ancestors = graph.ancestors([PW])
    assert dw in ancestors and "trans_Cast_0" in ancestors and PW not in ancestors
    assert all(graph.place(a) < graph.place(PW) for a in ancestors)
    assert graph.net_outputs() == (("trans_Cast_5", 0),)


def test_byte_estimates_follow_each_file(sim_hunt: Callable[..., SimHunt]) -> None:
    graph, hunt = _graph(sim_hunt)
    assert hunt.full is not None
    for path in hunt.full.dump_files:
        op = next(n for n in graph.order if path.name.split(".")[1] == graph.op(n).dump_name)
        estimate = graph.tensor_dump_bytes(op, inputs=True)
        assert abs(path.stat().st_size - estimate) <= max(64, 0.2 * estimate), op
    assert graph.window_bytes(graph.order) == sum(
        graph.tensor_dump_bytes(n, inputs=True) for n in graph.order
    )


def test_tensor_bytes_of_a_desc() -> None:
    desc = TensorDesc("x", 0, "NCHW", (1, 3, 4, 4), "DT_FLOAT16", "NC1HWC0", (1, 1, 4, 4, 16))
    assert tensor_bytes(desc) == 2 * 256
    odd = TensorDesc("x", 0, "ND", (3,), "DT_SOMETHING_NEW", "ND", (3,))
    assert tensor_bytes(odd) == 12  # an unknown type counts as four bytes an element


def _row(target: Statistics, golden: Statistics, reasons: tuple[str, ...] = ()) -> StatsResult:
    return StatsResult(0, "Conv2D", "op", "op", "op:output:0", None, count=100, target=target,
                       golden=golden, reasons=reasons)  # fmt: skip


def test_row_error_judges_each_statistic_against_the_tensors_scale() -> None:
    golden = Statistics(3.0, -3.0, 0.0, 10.0)  # root mean square 1 over 100 elements
    shifted = Statistics(3.0, -3.0, 0.2, 10.0)  # the mean moved by a fifth of the scale
    assert row_error(_row(shifted, golden)) == (0.2, "Mean")  # not inf, though the golden mean is 0
    grown = Statistics(3.0, -3.0, 0.0, 11.0)
    error, which = row_error(_row(grown, golden))
    assert which == "L2norm" and math.isclose(error, 1 / 11)
    assert row_error(_row(golden, golden)) == (0.0, "")


def test_row_error_of_nan_is_infinite() -> None:
    golden = Statistics(3.0, -3.0, 0.0, 10.0)
    nan_side = Statistics(math.nan, math.nan, math.nan, math.nan)
    assert row_error(_row(nan_side, golden))[0] == math.inf
    counted = _row(golden, golden, reasons=("target holds 3 Nan",))
    assert row_error(counted) == (math.inf, "NaN/inf")


def _chain(types: list[str]) -> HuntGraph:
    """A chain of ops ``op0 -> op1 -> …`` of the given types, as a fusion rule file says it."""
    ops: list[dict[str, object]] = [{"name": "x", "type": "Data", "output_desc": [{"dtype": "DT_FLOAT"}]}]
    for i, kind in enumerate(types):
        src = "x" if i == 0 else f"op{i - 1}"
        ops.append({"name": f"op{i}", "type": kind, "id": i + 1, "input": [f"{src}:0"],
                    "output_desc": [{"dtype": "DT_FLOAT16", "shape": {"dim": [4]}}]})  # fmt: skip
    return HuntGraph(parse_rules({"graph": [{"name": "g", "op": ops}]}))


def test_jumps_judge_an_op_against_earlier_ops_of_its_type() -> None:
    graph = _chain(["Div", "Softmax", "Div", "Softmax", "Div"])
    # A softmax's statistics round looser (2%) than a division's (0.3%): 2.5% at the last Div is
    # eight times the Divs before it, though only 1.25 times the run's largest error so far.
    errors = {"op0": 0.003, "op1": 0.02, "op2": 0.003, "op3": 0.02, "op4": 0.025}
    assert _jumps(graph, graph.order, errors) == [("op4", 0.005)]  # the Divs' 0.3% counts as the floor
    assert _jumps(graph, graph.order, {**errors, "op4": 0.02}) == []


def test_jumps_after_the_first_judge_against_everything_before() -> None:
    graph = _chain(["Conv", "Relu", "Conv", "Relu"])
    errors = {"op0": 0.001, "op1": 0.1, "op2": 0.2, "op3": 0.6}
    # op1 jumps; op2 inherits its error (2x), op3 moves 3x further: neither is a new fault.
    assert _jumps(graph, graph.order, errors) == [("op1", 0.005)]
    assert _jumps(graph, graph.order, {**errors, "op3": 1.5}) == [("op1", 0.005), ("op3", 0.2)]
    assert _jumps(graph, graph.order, {**errors, "op1": math.inf, "op3": math.inf}) == [("op1", 0.005)]


def test_one_earlier_op_of_a_type_is_not_its_noise() -> None:
    """The model's input Cast rounds nothing; the output Cast after a softmax carries its error:
    one earlier op of a type may play another role, so the run's noise judges it."""
    graph = _chain(["Cast", "Softmax", "Cast"])
    assert _jumps(graph, graph.order, {"op0": 0.001, "op1": 0.02, "op2": 0.05}) == []
