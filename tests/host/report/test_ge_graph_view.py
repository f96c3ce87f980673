"""A TorchAir run's GE graph dumps as the report's network: hand-written dumps, simulated ones."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dumpcmp.errors import RuleFileError
from dumpcmp.fakes.torchair import simulate_torchair
from dumpcmp.host.report.ge_graph_view import load_ge_graph
from dumpcmp.host.report.grading import Grade
from dumpcmp.host.report.graph import load_graph
from dumpcmp.host.report.html import COLOURS, render_html
from dumpcmp.host.report.table import table_from_cells
from dumpcmp.host.torchair.layout import GraphFiles
from dumpcmp.proto.names import parse_dump_name
from tests.host.torchair.tatree import Op, write_graphs

# Names with '/' (sanitised to '_' in dump files) and ':' (also GE's producer:index separator).
ORIGINAL = [
    Op("x", "Data", ("",), ()),
    Op("w", "Const", ("",), ()),
    Op("mm/0", "MatMulV2", ("mm-aten.mm.default.OUTPUT.0",), ("x:0", "w:0")),
    Op("scope:add", "Add", ("add-aten.add.Tensor.OUTPUT.0",), ("mm/0:0", "w:0")),
    Op("relu", "Relu", ("relu-aten.relu.default.OUTPUT.0",), ("scope:add:0",)),
    Op("out", "NetOutput", (), ("relu:0",)),
]
OPTIMIZED = [
    *ORIGINAL[:3],
    Op("trans_Cast_1", "Cast", ("",), ("mm/0:0",)),
    # its inputs: data from the Cast, a control edge (index -1) from the MatMul
    Op("scope:addrelu", "AutomaticBufferFusionOp", ("",), ("trans_Cast_1:0", "w:0", "mm/0:-1")),
    Op("out", "NetOutput", (), ("scope:addrelu:0",)),
]
HEADER = ["API Name", "Stack Info", "Data Name", "Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr",
          "One Thousandth Err Ratio", "Five Thousandth Err Ratio", "Requires_grad Consistent", "Result",
          "Accuracy Reached or Not", "Err_message"]  # fmt: skip


def _row(api: str, good: bool, bench: str = "[a, b]") -> list[str]:
    metrics = ["1.000000", "0", "0", "0", "1", "1"] if good else ["0.5", "9", "9", "9", "0.1", "0.2"]
    return [api, "", bench, *metrics, "N/A", "PASS" if good else "FAIL", "Yes" if good else "No",
            "" if good else "Cosine 0.5 < 0.99"]  # fmt: skip


def test_optimized_ops_are_drawn_with_data_edges_and_fused_ops_name_their_members(tmp_path: Path) -> None:
    original, optimized = write_graphs(tmp_path, 0, ORIGINAL, OPTIMIZED)
    graph = load_ge_graph(GraphFiles((original,), (optimized,)))
    # Data, Const and NetOutput are never dumped: left out. GE's Cast is dumped: drawn.
    assert graph.nodes == ("mm/0", "trans_Cast_1", "scope:addrelu")
    assert graph.types["scope:addrelu"] == "AutomaticBufferFusionOp"
    assert graph.edges == (("mm/0", "trans_Cast_1"), ("trans_Cast_1", "scope:addrelu"))  # no control edge
    assert graph.originals == {"scope:addrelu": ("scope:add", "relu")}
    assert graph.is_fused("scope:addrelu") and not graph.is_fused("trans_Cast_1")
    assert graph.lookup()["mm_0"] == "mm/0"  # the name as dump files spell it finds the node


def test_a_dump_named_by_the_user_is_read_with_the_other_one_of_its_pair(tmp_path: Path) -> None:
    original, optimized = write_graphs(tmp_path, 0, ORIGINAL, OPTIMIZED)
    (tmp_path / "elsewhere").mkdir()
    write_graphs(tmp_path / "elsewhere", 1, ORIGINAL[:3])  # another rank's pair: not read
    for named in (optimized, original):
        graph = load_graph(named)  # told apart from a rule json by its content
        assert graph.nodes == ("mm/0", "trans_Cast_1", "scope:addrelu")
        assert graph.originals["scope:addrelu"] == ("scope:add", "relu")
    alone = tmp_path / "alone" / "graph.txt"
    alone.parent.mkdir()
    alone.write_bytes(original.read_bytes())
    assert load_graph(alone).nodes == ("mm/0", "scope:add", "relu")  # no pair: drawn as it is


@pytest.mark.parametrize(
    ("content", "detail"),
    [
        (b"Index,NPUDump\n0,a\n", "at 1:6: malformed GE graph dump"),  # a result CSV
        (b"\x93NUMPY\x01\x00", "malformed GE graph dump"),  # an npy file
        (b'name: "m"\n', "(no ops in it)"),  # protobuf text, but no graph
    ],
)
def test_a_file_that_is_neither_graph_is_one_line(tmp_path: Path, content: bytes, detail: str) -> None:
    path = tmp_path / "g.txt"
    path.write_bytes(content)
    with pytest.raises(RuleFileError) as caught:
        load_graph(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: neither an ATC fusion rule json") and "\n" not in message
    assert detail in message and message.count(str(path)) == 1


def test_graph_nodes_take_the_worst_grade_of_their_own_rows_in_a_torchair_table(tmp_path: Path) -> None:
    original, optimized = write_graphs(tmp_path, 0, ORIGINAL, OPTIMIZED)
    graph = load_ge_graph(GraphFiles((original,), (optimized,)))
    fx = "[npu, /fx/relu-aten.relu.default.OUTPUT.0.1.npy]"
    cells = [
        HEADER,
        _row("mm_0.output.0", True),  # a stats dump's row: the sanitised name
        _row("trans_Cast_1.output.0", False),
        _row("scope:addrelu.input.0", False),  # handed a bad input …
        _row("scope:addrelu.output.0", True, fx),  # … and its own result is fine
    ]
    page = render_html(table_from_cells(cells), graph=graph)
    figures = json.loads(_block(page, "report-figures"))
    nodes = figures["graph"]["data"][-1]
    colours = dict(zip([t.split("<br>")[0] for t in nodes["text"]], nodes["marker"]["color"], strict=True))
    assert colours == {
        "op #0 mm_0": COLOURS[Grade.GREEN],
        "op #1 trans_Cast_1": COLOURS[Grade.RED],
        "op #2 scope:addrelu": COLOURS[Grade.GREEN],
    }
    fused = next(t for t in nodes["text"] if t.startswith("op #2"))
    assert "originals: relu" in fused and "fused from: scope:add, relu" in fused
    # The op's details name the members too: the table knows only the FX node of the last one.
    ops = json.loads(_block(page, "report-data"))["ops"]
    assert [(op["originals"], op["members"]) for op in ops] == [
        ([], []),
        ([], []),
        (["relu"], ["scope:add", "relu"]),
    ]
    links = next(t for t in figures["graph"]["data"] if t["name"] == "original ops")
    assert links["text"] == [
        "original op scope:add<br>fused into scope:addrelu",
        "original op relu<br>fused into scope:addrelu",
    ]


def _block(page: str, block: str) -> str:
    found = re.search(rf'<script type="application/json" id="{block}">(.*?)</script>', page, re.S)
    assert found is not None
    return found.group(1)


def test_a_simulated_run_is_drawn_op_for_op(tmp_path: Path) -> None:
    sim = simulate_torchair("zoo:transformer_block", tmp_path / "sim", clock=lambda: 1, pid=7)
    original = tuple(p for p in sim.graph_files if p.name.startswith("dynamo_original_"))
    optimized = tuple(p for p in sim.graph_files if p.name.startswith("dynamo_optimized_"))
    graph = load_ge_graph(GraphFiles(original, optimized))
    # Every dumped GE op is a node, in execution order; nothing else is.
    dumped = {parse_dump_name(p.name).op_name for p in sim.ge_files}
    assert graph.nodes == tuple(op.name for op in sim.graph.ops)
    assert set(graph.nodes) == dumped
    assert {"Cast", "TransData", "AutomaticBufferFusionOp"} <= set(graph.types.values())
    fused = [op for op in sim.graph.ops if op.fused]
    assert fused and graph.originals == {
        op.name: tuple(sim.graph.ge_name(m) for m in op.members) for op in fused
    }
    # Each op reads from the op before it in some chain: every node but the first has an edge in.
    has_input = {dst for _, dst in graph.edges}
    assert set(graph.nodes) - has_input == {graph.nodes[0]}
    order = {n: i for i, n in enumerate(graph.nodes)}
    assert all(order[src] < order[dst] for src, dst in graph.edges)
