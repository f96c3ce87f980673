"""The ATC rule-file parser: real ATC files, the attribute forms, and every malformed shape."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dumpcmp.errors import MatchError, RuleFileError
from dumpcmp.host.fusion_rules import FusionRules, InputRef, load_rules, parse_rules


@pytest.fixture(scope="module")
def msquickcmp(shared_fixtures: Path) -> FusionRules:
    return load_rules(shared_fixtures / "atc" / "msquickcmp_model.json")


@pytest.fixture(scope="module")
def tdnn(shared_fixtures: Path) -> FusionRules:
    return load_rules(shared_fixtures / "atc" / "tdnn.om.json")


def _doc(*ops: dict[str, Any], name: str = "net") -> dict[str, Any]:
    return {"name": name, "graph": [{"name": f"{name}_0", "op": list(ops)}]}


def _attr(key: str, value: Any) -> dict[str, Any]:
    return {"key": key, "value": value}


def _names(*names: str) -> dict[str, Any]:
    listing: dict[str, Any] = {"val_type": "VT_LIST_STRING"}
    if names:
        listing["s"] = list(names)
    return {"list": listing}


# ---- real ATC files ---------------------------------------------------------------------------


def test_msquickcmp_model_header_and_counts(msquickcmp: FusionRules) -> None:
    assert msquickcmp.name == "sub_model"
    assert msquickcmp.graph_names == ("sub_model_NPU_0",)
    assert len(msquickcmp) == 19
    assert [op.type for op in msquickcmp].count("Cast") == 5


def test_msquickcmp_ge_inserted_cast_has_empty_originals(msquickcmp: FusionRules) -> None:
    cast = msquickcmp.op("trans_Cast_0")
    assert cast is not None
    assert (cast.type, cast.id) == ("Cast", 1)
    assert cast.original_op_names == ("",)
    assert cast.is_ge_inserted
    assert cast.inputs == (InputRef("boxes_all", 0),)
    # GE still records which framework tensor the cast output stands for.
    (out,) = cast.outputs
    assert (out.origin_name, out.origin_output_index, out.origin_format) == ("boxes_all", 0, "NCHW")
    assert (out.device_dtype, out.device_format, out.device_shape) == ("DT_FLOAT16", "NCHW", (1000, 80, 4))
    ge_casts = {op.name for op in msquickcmp if op.type == "Cast" and op.is_ge_inserted}
    assert ge_casts == {"trans_Cast_0", "trans_Cast_2", "trans_Cast_6", "trans_Cast_7"}


def test_msquickcmp_op_without_originals_is_its_own_original(msquickcmp: FusionRules) -> None:
    cast = msquickcmp.op("Cast_1206")  # a framework Cast: no _datadump_original_op_names at all
    assert cast is not None and cast.original_op_names == ("Cast_1206",)
    # Its output desc has no origin name in the file, so it takes the op's own name.
    assert [(d.origin_name, d.origin_output_index) for d in cast.outputs] == [("Cast_1206", 0)]
    nms = msquickcmp.op("BatchMultiClassNMS_1203")
    assert nms is not None
    assert [(d.origin_name, d.origin_output_index) for d in nms.outputs] == [
        ("BatchMultiClassNMS_1203", k) for k in range(4)
    ]
    # Two absent optional inputs: listed, but they carry no tensor.
    assert [ref.kind for ref in nms.inputs] == ["data", "data", "empty", "empty"]
    assert len(nms.data_inputs) == 2


def test_msquickcmp_data_op_has_id_zero_and_colons_in_names(msquickcmp: FusionRules) -> None:
    data = msquickcmp.op("boxes_all")
    assert data is not None and (data.type, data.id) == ("Data", 0)  # "id" is absent in the file
    gather = msquickcmp.op("PartitionedCall_Gather_1221_gatherv2_3")
    assert gather is not None
    assert gather.inputs[1] == InputRef("onnx::Gather_1764_0", 0)  # split at the last ':'
    assert gather.original_op_names == ("Gather_1221",)


def test_tdnn_counts_and_many_to_one_fusion(tdnn: FusionRules) -> None:
    assert tdnn.name == "tdnn"
    assert len(tdnn) == 132
    bn = tdnn.op("BatchNormalization_60_BNInferenceD")
    assert bn is not None
    assert bn.is_multiop
    assert bn.original_op_names == (
        "BatchNormalization_60",
        "Transpose_55",
        "Transpose_55",
        "Constant_56",
        "Constant_57",
        "Constant_58",
        "Constant_59",
    )
    assert [(d.origin_name, d.origin_output_index) for d in bn.outputs] == [("BatchNormalization_60", 0)]
    fused = tdnn.op("Div_331Mul_333Add_335Mul_337Add_338")
    assert fused is not None and fused.original_op_names == (
        "Div_331",
        "Mul_333",
        "Add_335",
        "Mul_337",
        "Add_338",
    )


def test_tdnn_control_edges_and_layouts(tdnn: FusionRules) -> None:
    cast = tdnn.op("trans_Cast_0")
    assert cast is not None
    assert cast.inputs == (InputRef("feats", 0), InputRef("atomic_addr_clean-1_0_1", -1, "control"))
    assert cast.data_inputs == (InputRef("feats", 0),)
    conv = tdnn.op("PartitionedCall_Conv_52_Conv2D_12")
    assert conv is not None
    (out,) = conv.outputs
    assert out.origin_name == ""  # the file names no origin; the matcher's rename rule fills it
    assert (out.device_format, out.device_shape) == ("NC1HWC0", (1, 32, 1, 1800, 16))
    assert (out.origin_format, out.origin_shape) == ("NCHW", (1, 512, 1, 1800))
    assert conv.input_descs[1].device_format == "FRACTAL_Z"
    send = tdnn.op("tdnn_NPU_0_Send_0")
    assert send is not None and send.outputs == () and send.original_op_names == ("",)


def test_lookup_by_sanitised_dump_name(tdnn: FusionRules) -> None:
    real = "Sub_308Mul_309/SquarePartitionedCall_ReduceMean_310_ReduceMean_163"
    op = tdnn.by_dump_name("Sub_308Mul_309_SquarePartitionedCall_ReduceMean_310_ReduceMean_163")
    assert op is not None and op.name == real
    assert tdnn.find(real) is op
    assert tdnn.by_dump_name("Add_340_lxslice3") is tdnn.op("Add_340")  # FFTS+ slice suffix
    assert tdnn.by_dump_name("no_such_op") is None


# ---- attribute forms and defaults --------------------------------------------------------------


def test_output_desc_defaults_and_fallbacks() -> None:
    out_attrs = [
        [_attr("origin_format", {"s": "NHWC"}), _attr("origin_shape", {"list": {"i": [1, 2]}})],
        [
            _attr("_datadump_origin_name", {"s": "x"}),
            _attr("_datadump_origin_output_index", {"i": 3}),
            _attr("_datadump_origin_format", {"s": "NCHW"}),
            _attr("origin_format", {"s": "ND"}),
        ],
    ]
    op = {
        "name": "fused",
        "type": "Conv2D",
        "id": "7",  # protobuf's json form of an int64
        "attr": [_attr("_datadump_original_op_names", _names("a", "b"))],
        "output_desc": [{"dtype": "DT_FLOAT16", "layout": "NC1HWC0", "attr": a} for a in out_attrs],
    }
    (rule,) = parse_rules(_doc(op)).ops
    assert rule.id == 7
    first, second = rule.outputs
    # The op lists originals, so an empty origin name stays empty; the index defaults to k.
    assert (first.origin_name, first.origin_output_index, first.origin_format) == ("", 0, "NHWC")
    assert first.origin_shape == (1, 2)
    assert first.device_shape == ()
    assert (second.origin_name, second.origin_output_index, second.origin_format) == ("x", 3, "NCHW")


def test_every_attribute_value_form_is_accepted() -> None:
    op = {
        "name": "op",
        "type": "T",
        "attr": [
            _attr("f", {"f": 0.5}),
            _attr("i", {"i": 1}),
            _attr("b", {"b": False}),
            _attr("s", {"s": "x"}),
            _attr("t", {"t": {"desc": {}}}),
            _attr("func", {"func": {"name": "f"}}),
            _attr("lst", {"list": {"i": [1, 2], "val_type": "VT_LIST_INT"}}),
            _attr("null", None),
            _attr("_datadump_is_multiop", {"b": True}),
            _attr("_L1_fusion_sub_graph_no", {"s": "12"}),
        ],
    }
    (rule,) = parse_rules(_doc(op)).ops
    assert rule.is_multiop
    assert rule.l1_fusion_no == "12"
    assert rule.original_op_names == ("op",)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, ("",)), (_names(), ("",)), (_names("x"), ("x",)), (_names("x", "y"), ("x", "y"))],
)
def test_original_op_names_forms(value: Any, expected: tuple[str, ...]) -> None:
    op = {"name": "op", "type": "T", "attr": [_attr("_datadump_original_op_names", value)]}
    assert parse_rules(_doc(op)).ops[0].original_op_names == expected


def test_duplicate_names_first_wins_and_ambiguous_dump_names() -> None:
    rules = parse_rules(
        _doc(
            {"name": "a.b", "type": "T1", "id": 1},
            {"name": "a/b", "type": "T2", "id": 2},
            {"name": "a.b", "type": "T3", "id": 3},
            {"name": "c d", "type": "T4", "id": 4},
            {"name": "c_d", "type": "T5", "id": 5},
        )
    )
    assert len(rules) == 5
    assert rules.op("a.b") is not None and rules.op("a.b").type == "T1"  # type: ignore[union-attr]
    with pytest.raises(MatchError, match="a_b"):
        rules.by_dump_name("a_b")
    # An op literally named like the dump name is the answer, not an ambiguity.
    assert rules.by_dump_name("c_d") is rules.op("c_d")


def test_records_are_frozen(msquickcmp: FusionRules) -> None:
    op = msquickcmp.ops[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        op.name = "x"  # type: ignore[misc]
    assert hash(op) == hash(dataclasses.replace(op))


# ---- malformed files --------------------------------------------------------------------------


def _write(tmp_path: Path, content: str | bytes) -> Path:
    path = tmp_path / "model.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "not valid json"),
        ("", "not valid json"),
        (b"\xff\xfe{}", "not UTF-8"),
        ("[]", "top level must be an object"),
        ('{"name": "m"}', "'graph' missing"),
        ('{"graph": {}}', "'graph' must be an array"),
        ('{"graph": [{"name": "g"}]}', "graph[0]: 'op' missing"),
        ('{"graph": [{"op": [{"type": "T"}]}]}', "graph[0].op[0]: 'name' missing"),
        (
            '{"graph": [{"op": [{"name": "a", "type": "T"}, {"type": "T"}]}]}',
            "graph[0].op[1]: 'name' missing",
        ),
        ('{"graph": [{"op": [{"name": 5, "type": "T"}]}]}', "'name' must be a non-empty string"),
        ('{"graph": [{"op": [{"name": "a"}]}]}', "graph[0].op[0] (a): 'type' missing"),
        ('{"graph": [{"op": [{"name": "a", "type": "T", "id": 1.5}]}]}', "(a).id: must be an integer"),
        ('{"graph": [{"op": [{"name": "a", "type": "T", "input": "x:0"}]}]}', "(a).input: must be an array"),
        ('{"graph": [{"op": [{"name": "a", "type": "T", "input": ["x:y"]}]}]}', "(a).input[0]: 'x:y' is not"),
        ('{"graph": [{"op": [{"name": "a", "type": "T", "input": ["x"]}]}]}', "(a).input[0]: 'x' is not"),
        ('{"graph": [{"op": [{"name": "a", "type": "T", "attr": {}}]}]}', "(a).attr: must be an array"),
        ('{"graph": [{"op": [{"name": "a", "type": "T", "attr": [{"value": 1}]}]}]}', "(a).attr[0]: must be"),
    ],
)
def test_malformed_file_raises_rule_file_error(tmp_path: Path, content: str | bytes, reason: str) -> None:
    path = _write(tmp_path, content)
    with pytest.raises(RuleFileError) as info:
        load_rules(path)
    assert info.value.path == str(path)
    assert reason in info.value.reason
    assert str(path) in str(info.value)


@pytest.mark.parametrize(
    ("attr", "reason"),
    [
        (_attr("_datadump_original_op_names", {"s": "conv1"}), "expected a list value"),
        (_attr("_datadump_original_op_names", {"list": {"s": "conv1"}}), "'list.s' must be an array"),
        (_attr("_datadump_original_op_names", {"list": {"s": [1]}}), "'list.s' must be an array"),
        (_attr("_datadump_original_op_names", ["conv1"]), "expected a list value"),
        (_attr("_datadump_is_multiop", {"b": "yes"}), "'b' must be true or false"),
        (_attr("_datadump_is_multiop", {"i": 1}), "expected a boolean value"),
        (_attr("_L1_fusion_sub_graph_no", {"s": 3}), "'s' must be a string"),
    ],
)
def test_attribute_of_wrong_type(attr: dict[str, Any], reason: str) -> None:
    doc = _doc({"name": "ok", "type": "T"}, {"name": "conv", "type": "Conv2D", "attr": [attr]})
    with pytest.raises(RuleFileError) as info:
        parse_rules(doc, "rules.json")
    assert info.value.path == "rules.json"
    assert info.value.reason.startswith(f"graph[0].op[1] (conv).attr[{attr['key']!r}]: ")
    assert reason in info.value.reason


@pytest.mark.parametrize(
    ("desc", "reason"),
    [
        ({"attr": [_attr("_datadump_origin_output_index", {"i": -1})]}, "must be >= 0"),
        ({"attr": [_attr("_datadump_origin_output_index", {"s": "0"})]}, "expected an integer value"),
        ({"attr": [_attr("origin_shape", {"list": {"i": ["a"]}})]}, "list.i[0]: must be an integer"),
        ({"shape": {"dim": [1, "x"]}}, "output_desc[0].shape.dim[1]: must be an integer"),
        ({"shape": [1, 2]}, "output_desc[0].shape: must be an object"),
        ({"dtype": 1}, "'dtype' must be a string"),
        ("DT_FLOAT", "output_desc[0]: must be an object"),
    ],
)
def test_output_desc_of_wrong_type(desc: Any, reason: str) -> None:
    with pytest.raises(RuleFileError, match=r"graph\[0\]\.op\[0\] \(a\)") as info:
        parse_rules(_doc({"name": "a", "type": "T", "output_desc": [desc]}))
    assert reason in info.value.reason


def test_unreadable_file(tmp_path: Path) -> None:
    missing = tmp_path / "absent.json"
    with pytest.raises(RuleFileError, match="cannot read the file") as info:
        load_rules(missing)
    assert info.value.path == str(missing)


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["", "a", "a:0", "x:-1", "DT_INT8"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "type",
                    "id",
                    "input",
                    "attr",
                    "key",
                    "value",
                    "s",
                    "i",
                    "b",
                    "list",
                    "output_desc",
                    "shape",
                    "dim",
                    "graph",
                    "op",
                    "_datadump_original_op_names",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.just("graph"), st.lists(st.dictionaries(st.just("op"), st.lists(_json)))))
def test_any_json_gives_rules_or_rule_file_error(doc: dict[str, Any]) -> None:
    """Whatever the structure, the parser answers with rules or a RuleFileError, never a traceback."""
    try:
        parse_rules(doc)
    except RuleFileError as exc:
        assert exc.reason


def test_fixture_json_round_trips_through_text(tmp_path: Path, shared_fixtures: Path) -> None:
    """Parsing is a function of the json content, not of formatting or key order."""
    source = shared_fixtures / "atc" / "tdnn.om.json"
    doc = json.loads(source.read_text(encoding="utf-8"))
    compact = _write(tmp_path, json.dumps(doc, separators=(",", ":"), sort_keys=True))
    assert load_rules(compact).ops == load_rules(source).ops
