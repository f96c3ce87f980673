"""The hunt's view of a compiled model (``hunt.graph``)."""

from __future__ import annotations

from collections.abc import Callable

from dumpcmp.host.fusion_rules import TensorDesc
from dumpcmp.host.hunt.graph import HuntGraph, tensor_bytes
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
