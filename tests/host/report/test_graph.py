"""The network graph of a rule file, and where networkx places its ops."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dumpcmp.errors import RuleFileError
from dumpcmp.host.fusion_rules import parse_rules
from dumpcmp.host.report.graph import OpGraph, graph_for, graph_from_rules, layered_positions


def _op(name: str, op_type: str, inputs: list[str], originals: list[str] | None = None) -> dict[str, object]:
    op: dict[str, object] = {"name": name, "type": op_type, "input": inputs}
    if originals is not None:
        op["attr"] = [{"key": "_datadump_original_op_names", "value": {"list": {"s": originals}}}]
    return op


RULES = {
    "name": "net",
    "graph": [
        {
            "name": "net",
            "op": [
                _op("input", "Data", [""]),
                _op("w", "Const", []),
                _op("conv_bn", "Conv2D", ["input:0", "w:0", "input:-1"], ["conv", "bn"]),
                _op("cast", "Cast", ["conv_bn:0"], []),
                _op("add", "Add", ["conv_bn:0", "cast:0"]),
            ],
        }
    ],
}


def test_rules_become_ops_edges_and_originals() -> None:
    graph = graph_from_rules(parse_rules(RULES, "net.json"))
    assert graph.nodes == ("input", "conv_bn", "cast", "add")  # the Const weight is left out
    # Data edges only: the control edge input:-1 and the dropped constant's edge are not drawn.
    assert set(graph.edges) == {
        ("input", "conv_bn"),
        ("conv_bn", "cast"),
        ("conv_bn", "add"),
        ("cast", "add"),
    }
    assert graph.originals["conv_bn"] == ("conv", "bn") and graph.is_fused("conv_bn")
    assert graph.originals["cast"] == () and not graph.is_fused("cast")  # GE's own op
    assert graph.originals["add"] == ("add",) and not graph.is_fused("add")


def test_layers_follow_topological_generations() -> None:
    positions = layered_positions(graph_from_rules(parse_rules(RULES)))
    x = {name: round(p[0], 6) for name, p in positions.items()}
    assert x["input"] < x["conv_bn"] < x["cast"] < x["add"]


def test_a_cycle_shares_a_layer_instead_of_failing() -> None:
    graph = OpGraph(("a", "b", "c"), {}, (("a", "b"), ("b", "c"), ("c", "b")), {})
    positions = layered_positions(graph)
    assert positions["b"][0] == positions["c"][0] > positions["a"][0]


def test_a_rule_directory_is_searched_by_model_name(tmp_path: Path) -> None:
    (tmp_path / "other.json").write_text(
        json.dumps({**RULES, "name": "other", "graph": [{"name": "o", "op": []}]})
    )
    (tmp_path / "net.json").write_text(json.dumps(RULES))
    assert graph_for(tmp_path, "net").nodes[0] == "input"
    with pytest.raises(RuleFileError, match="no rule file here is for model 'resnet'"):
        graph_for(tmp_path, "resnet")
