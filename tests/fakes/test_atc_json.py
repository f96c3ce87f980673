"""The emitted ATC json has the real files' schema and the attributes the comparator reads."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dumpcmp.fakes.atc_json import atc_document, write_atc_json
from dumpcmp.fakes.compiler import CompileOptions, compile_model
from dumpcmp.fakes.quantize import quant_fusion_ops
from dumpcmp.fakes.zoo import build


def _attrs(entry: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: a["value"] for a in entry.get("attr", [])}


def _real(shared_fixtures: Path, name: str = "msquickcmp_model.json") -> dict[str, Any]:
    return json.loads((shared_fixtures / "atc" / name).read_text())


def _ops_by_type(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for op in doc["graph"][0]["op"]:
        found.setdefault(op["type"], op)
    return found


def test_top_level_and_graph_keys_match_the_real_file(
    shared_fixtures: Path, zoo_case: Callable[..., Any]
) -> None:
    real = _real(shared_fixtures)
    ours = atc_document(zoo_case("small_cnn").compiled)
    assert set(ours) == set(real)
    assert set(ours["graph"][0]) == set(real["graph"][0])
    assert ours["version"] == real["version"] == 2


@pytest.mark.parametrize("model", ["small_cnn", "transformer_block"])
def test_op_key_sets_match_the_real_file(
    shared_fixtures: Path, zoo_case: Callable[..., Any], model: str
) -> None:
    real = _ops_by_type(_real(shared_fixtures))
    real_keys = {kind: set(real[kind]) for kind in ("Data", "Const", "NetOutput", "Cast")}
    compute_keys = set(real["Transpose"])  # a compute op with a constant input
    for op in atc_document(zoo_case(model).compiled)["graph"][0]["op"]:
        keys = set(op)
        if op["type"] in real_keys:
            expected = real_keys[op["type"]] | ({"id"} if op["type"] == "Data" and "id" in op else set())
            assert keys - {"is_input_const"} == expected - {"is_input_const"}, op["name"]
        else:
            assert keys == compute_keys, op["name"]


def test_desc_keys_match_the_real_file(shared_fixtures: Path, zoo_case: Callable[..., Any]) -> None:
    real = _ops_by_type(_real(shared_fixtures))
    real_out = real["Cast"]["output_desc"][0]
    real_attr_keys = set(_attrs(real_out))
    for op in atc_document(zoo_case("small_cnn").compiled)["graph"][0]["op"]:
        for desc in op.get("output_desc", []) + op.get("input_desc", []):
            assert set(desc) == set(real_out)
            assert {"origin_format", "origin_shape", "origin_data_type"} <= set(_attrs(desc))
        if op["type"] == "Cast":
            assert set(_attrs(op["output_desc"][0])) >= real_attr_keys - {"_is_zero_copy_block", "placement"}


def test_original_op_names_absent_empty_or_listed(zoo_case: Callable[..., Any]) -> None:
    ops = {op["name"]: op for op in atc_document(zoo_case("small_cnn").compiled)["graph"][0]["op"]}
    assert "_datadump_original_op_names" not in _attrs(ops["/stem/pool/MaxPool"])  # a framework op itself
    assert _attrs(ops["trans_Cast_0"])["_datadump_original_op_names"] == {
        "list": {"val_type": "VT_LIST_STRING"}
    }
    fused = _attrs(ops["/stem/conv/Conv/stem/act/Relu"])
    assert fused["_datadump_original_op_names"]["list"]["s"] == [
        "/stem/conv/Conv",
        "/stem/bn/BatchNormalization",
        "/stem/act/Relu",
    ]
    assert fused["_datadump_is_multiop"] == {"b": True}
    out = _attrs(ops["/stem/conv/Conv/stem/act/Relu"]["output_desc"][0])
    assert out["_datadump_origin_name"] == {"s": "/stem/act/Relu"}
    assert out["_datadump_origin_output_index"] == {"i": 0}
    assert out["_datadump_origin_format"] == {"s": "NCHW"} and out["origin_format"] == {"s": "NCHW"}
    assert out["origin_shape"]["list"]["i"] == [1, 16, 16, 16]
    device = ops["/stem/conv/Conv/stem/act/Relu"]["output_desc"][0]
    assert (device["dtype"], device["layout"], device["shape"]["dim"]) == (
        "DT_FLOAT16",
        "NC1HWC0",
        [1, 1, 16, 16, 16],
    )
    assert ops["/stem/conv/Conv/stem/act/Relu"]["input"][0] == "trans_TransData_1:0"
    assert ops["input"]["input"] == [""] and "id" not in ops["input"]  # protobuf drops id 0
    assert atc_document(zoo_case("small_cnn").compiled)["graph"][0]["input"] == ["input:0"]


def test_the_host_parser_reads_our_json_like_the_real_one(
    tmp_path: Path, zoo_case: Callable[..., Any]
) -> None:
    fusion_rules = pytest.importorskip("dumpcmp.host.fusion_rules")
    compiled = zoo_case("transformer_block").compiled
    rules = fusion_rules.load_rules(write_atc_json(compiled, tmp_path / "rule.json"))
    assert len(rules) == len(compiled.ops)
    gelu = rules.op(compiled.containing("/mlp/act/Erf").name)  # type: ignore[union-attr]
    assert gelu.original_op_names[-1] == "/mlp/act/Mul_1"
    assert gelu.outputs[0].origin_name == "/mlp/act/Mul_1"
    assert rules.op("trans_Cast_0").is_ge_inserted
    assert rules.op("/attn/Softmax").original_op_names == ("/attn/Softmax",)


def test_no_fusion_and_quant_rule_files(tmp_path: Path) -> None:
    layer = "/block3/conv/Conv"
    compiled = compile_model(build("small_cnn"), name="small_cnn", options=CompileOptions(quantize=(layer,)))
    quant = atc_document(compiled, quant_fusion_ops(compiled))
    (op,) = quant["graph"][0]["op"]
    assert op["name"] == f"{layer}_dequant_layer"
    assert _attrs(op)["_datadump_original_op_names"]["list"]["s"] == [
        "/block3/conv/Conv",
        "/block3/bn/BatchNormalization",
        "/block3/act/Relu",
    ]
    close = compile_model(build("small_cnn"), name="small_cnn", options=CompileOptions(fusion=False))
    cmdline = _attrs(atc_document(close))["atc_cmdline"]["s"]
    assert "--fusion_switch_file" in cmdline
