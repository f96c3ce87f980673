"""Mapping NPU tensors to golden tensors: real ATC files, each fusion relation, -cfr, -qfr, quant."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from dumpcmp.host.fusion_rules import FusionRules, load_rules, parse_rules
from dumpcmp.host.matcher import (
    FusionGroup,
    GoldenRef,
    Matcher,
    NoGolden,
    QuantFilter,
    Relation,
    fusion_groups,
    identity_ref,
    l1_ops_to_compare,
    merge_close_fusion,
    merge_quant_fusion,
    quant_filter,
    shared_golden_names,
)
from tests.atc_ops import document, op


def rules(*ops: dict[str, Any], path: str = "rules.json") -> FusionRules:
    return parse_rules(document(*ops), path)


def golden(ref: GoldenRef | NoGolden) -> tuple[str, int]:
    assert isinstance(ref, GoldenRef), ref
    return ref.op_name, ref.index


def group_of(groups: tuple[FusionGroup, ...], name: str) -> FusionGroup:
    return next(g for g in groups if any(o.name == name for o in g.ops))


# ---- real ATC files ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def msquickcmp(shared_fixtures: Path) -> Matcher:
    return Matcher(load_rules(shared_fixtures / "atc" / "msquickcmp_model.json"))


@pytest.fixture(scope="module")
def tdnn(shared_fixtures: Path) -> Matcher:
    return Matcher(load_rules(shared_fixtures / "atc" / "tdnn.om.json"))


def test_msquickcmp_groups_and_order(msquickcmp: Matcher) -> None:
    assert len(msquickcmp.groups) == 18  # the Gather_1221 const and gather share one group
    gather = group_of(msquickcmp.groups, "PartitionedCall_Gather_1221_gatherv2_3")
    assert gather.relation is Relation.ONE_TO_MULTI
    assert gather.key == "Gather_1221"
    entry = msquickcmp.entry("PartitionedCall_Gather_1221_gatherv2_3")
    assert entry is not None
    assert entry.npu_dump == "PartitionedCall_Gather_1221_const_data_2,PartitionedCall_Gather_1221_gatherv2_3"
    assert entry.ground_truth == "Gather_1221"
    order = msquickcmp.ops_in_order()
    assert [e.op_sequence for e in order] == list(range(19))
    assert order[0].name == "boxes_all"


def test_msquickcmp_cast_inserted_by_ge(msquickcmp: Matcher) -> None:
    entry = msquickcmp.entry("trans_Cast_6")
    assert entry is not None and entry.ground_truth == ""  # shown as "*"
    # Its output still stands for Slice_1218's output in the golden model.
    assert golden(msquickcmp.refs_for("trans_Cast_6", "output", 0)) == ("Slice_1218", 0)


def test_msquickcmp_inputs_skip_casts_to_data(msquickcmp: Matcher) -> None:
    ref = msquickcmp.refs_for("BatchMultiClassNMS_1203_Input0_TransposeBefore", "input", 0)
    assert isinstance(ref, GoldenRef)
    assert (ref.op_name, ref.index, ref.skipped) == ("boxes_all", 0, ("trans_Cast_0",))
    assert ref.key == "boxes_all.0"
    assert (ref.origin_format, ref.origin_shape) == ("NCHW", (1000, 80, 4))
    # Cast/TransData are skipped by type, a framework Cast included (formats.md §5.3 step 4).
    ref = msquickcmp.refs_for("Node_Output", "input", 2)
    assert isinstance(ref, GoldenRef)
    assert (ref.op_name, ref.index, ref.skipped) == ("BatchMultiClassNMS_1203", 2, ("Cast_1206",))
    assert golden(msquickcmp.refs_for("Concat_1211", "input", 1)) == ("BatchMultiClassNMS_1203", 1)


def test_msquickcmp_data_op_output(msquickcmp: Matcher) -> None:
    assert golden(msquickcmp.refs_for("scores_all", "output", 0)) == ("scores_all", 0)


def test_tdnn_many_to_one(tdnn: Matcher) -> None:
    entry = tdnn.entry("BatchNormalization_60_BNInferenceD")
    assert entry is not None
    assert entry.relation is Relation.MULTI_TO_ONE
    assert entry.op_sequence == 49
    assert entry.ground_truth == (
        "BatchNormalization_60,Transpose_55,Constant_56,Constant_57,Constant_58,Constant_59"
    )
    assert entry.group.key == str(uuid.uuid3(uuid.NAMESPACE_DNS, entry.ground_truth.replace(",", "")))
    assert golden(tdnn.refs_for("BatchNormalization_60_BNInferenceD", "output", 0)) == (
        "BatchNormalization_60",
        0,
    )
    # Its scale is a constant GE folded and labelled with the BN itself: not the BN's output.
    scale = tdnn.refs_for("BatchNormalization_60_BNInferenceD", "input", 1)
    assert isinstance(scale, NoGolden) and "dynamic_const_67614_258" in scale.reason
    assert "constant GE folded" in scale.reason
    fused = tdnn.entry("Div_331Mul_333Add_335Mul_337Add_338")
    assert fused is not None and fused.ground_truth == "Div_331,Mul_333,Add_335,Mul_337,Add_338"
    assert golden(tdnn.refs_for("Div_331Mul_333Add_335Mul_337Add_338", "output", 0)) == ("Add_338", 0)


def test_tdnn_repeated_original_is_one_to_one(tdnn: Matcher) -> None:
    # ATC lists Transpose_0 twice; it is still one framework op.
    entry = tdnn.entry("PartitionedCall_Transpose_0_Transpose_1")
    assert entry is not None
    assert (entry.relation, entry.group.key, entry.ground_truth) == (
        Relation.ONE_TO_ONE,
        "Transpose_0",
        "Transpose_0",
    )


def test_tdnn_conv_through_transdata(tdnn: Matcher) -> None:
    conv = "PartitionedCall_Conv_52_Conv2D_12"
    ref = tdnn.refs_for(conv, "input", 0)
    assert isinstance(ref, GoldenRef)
    assert (ref.op_name, ref.index, ref.skipped, ref.producer) == (
        "Pad_49",
        0,
        ("trans_TransData_4",),
        "Pad_49",
    )
    out = tdnn.refs_for(conv, "output", 0)  # no origin name in the file: the rename rule names it
    assert isinstance(out, GoldenRef)
    assert (out.op_name, out.index, out.origin_format, out.origin_shape) == (
        "Conv_52",
        0,
        "NCHW",
        (1, 512, 1, 1800),
    )
    assert golden(tdnn.refs_for("LogSoftmax_385", "input", 0)) == ("Add_370", 0)
    ref = tdnn.refs_for("PartitionedCall_Transpose_0_Transpose_1", "input", 0)
    assert isinstance(ref, GoldenRef) and (ref.key, ref.skipped) == ("feats.0", ("trans_Cast_0",))


def test_tdnn_tensors_without_golden(tdnn: Matcher) -> None:
    weight = tdnn.refs_for(conv := "PartitionedCall_Conv_52_Conv2D_12", "input", 1)
    assert isinstance(weight, NoGolden)
    assert "dynamic_const_67614_257:output:0" in weight.reason
    assert isinstance(tdnn.refs_for(conv, "input", 3), NoGolden)  # only 3 data inputs
    assert "has no output_desc" in tdnn.refs_for("tdnn_NPU_0_Send_0", "output", 0).reason  # type: ignore[union-attr]
    sanitised = "Sub_308Mul_309_SquarePartitionedCall_ReduceMean_310_ReduceMean_163"
    assert golden(tdnn.refs_for(sanitised, "output", 0)) == ("ReduceMean_310", 0)
    assert tdnn.ground_truth(sanitised) == "Sub_308,Mul_309,ReduceMean_310"
    unknown = tdnn.refs_for("not_in_model", "output", 0)
    assert isinstance(unknown, NoGolden) and "not in the fusion rule file" in unknown.reason


def test_tdnn_outputs_of_inserted_copies_are_their_producers(tdnn: Matcher) -> None:
    # ATC labels an inserted TransData with its consumer's origin (Conv_52) or with an op it folded
    # (Unsqueeze_342); the tensor is the producer's, as for inputs.
    for name, producer in [
        ("trans_TransData_4", ("Pad_49", 0)),
        ("trans_TransData_28", ("Pad_169", 0)),
        ("trans_TransData_73", ("Concat_341", 0)),
        ("trans_Cast_95", ("LogSoftmax_385", 0)),
        ("trans_Cast_0", ("feats", 0)),
    ]:
        assert golden(tdnn.refs_for(name, "output", 0)) == producer, name
    ref = tdnn.refs_for("trans_TransData_28", "output", 0)
    assert isinstance(ref, GoldenRef) and (ref.origin_shape, ref.producer) == ((1, 512, 1806), "Pad_169")


def test_msquickcmp_framework_cast_keeps_its_own_output(msquickcmp: Matcher) -> None:
    # Only GE's own copies are traced back; a framework Cast's output is its own tensor.
    assert golden(msquickcmp.refs_for("Cast_1206", "output", 0)) == ("Cast_1206", 0)
    assert golden(msquickcmp.refs_for("trans_Cast_7", "output", 0)) == ("Gather_1221", 0)


def test_one_to_many_split_last_op_computes_the_original(tdnn: Matcher, msquickcmp: Matcher) -> None:
    assert golden(msquickcmp.refs_for("PartitionedCall_Gather_1221_gatherv2_3", "output", 0)) == (
        "Gather_1221",
        0,
    )
    split = "PartitionedCall_RandomNormalLike_327_"
    assert golden(tdnn.refs_for(split + "add_172", "output", 0)) == ("RandomNormalLike_327", 0)
    first = tdnn.refs_for(split + "random_standard_normal_170", "output", 0)
    assert isinstance(first, NoGolden) and "no framework counterpart" in first.reason
    assert golden(tdnn.refs_for("Sub_329", "input", 0)) == ("RandomNormalLike_327", 0)


def test_folded_constants_labelled_with_their_consumer_have_no_golden(tdnn: Matcher) -> None:
    for j in (1, 2):
        ref = tdnn.refs_for("BatchNormalization_365_BNInferenceD", "input", j)
        assert isinstance(ref, NoGolden) and "names the op reading it" in ref.reason
    # dynamic_const_67614_276 is labelled Cast_311, a folded framework op, not its reader Mul_312.
    assert golden(tdnn.refs_for("Mul_312", "input", 1)) == ("Cast_311", 0)


def test_inserted_copy_chain_and_its_inputs() -> None:
    m = Matcher(
        rules(
            op("in", 0, op_type="Data"),
            op("conv", 1, inputs=("in:0",), originals=("conv",), outputs=(None, None)),
            op("trans_Cast_1", 2, op_type="Cast", inputs=("conv:1",), originals=(), outputs=("relu",)),
            op("trans_TransData_2", 3, op_type="TransData", inputs=("trans_Cast_1:0",), originals=()),
            op("relu", 4, inputs=("trans_TransData_2:0",), originals=("relu",)),
        )
    )
    ref = m.refs_for("trans_TransData_2", "output", 0)
    assert isinstance(ref, GoldenRef)
    assert (ref.op_name, ref.index, ref.skipped) == ("conv", 1, ("trans_Cast_1",))
    assert golden(m.refs_for("trans_Cast_1", "output", 0)) == ("conv", 1)
    assert golden(m.refs_for("trans_Cast_1", "input", 0)) == ("conv", 1)


def test_l1_fusion_group_is_compared_at_its_first_and_last_op() -> None:
    m = Matcher(
        rules(
            op("a", 1, originals=("p",), outputs=("p",), l1="3"),
            op("b", 2, originals=("q",), outputs=("q",), l1="3"),
            op("c", 3, originals=("r",), outputs=("r",), l1="3"),
        )
    )
    assert golden(m.refs_for("a", "output", 0)) == ("p", 0)
    assert golden(m.refs_for("c", "output", 0)) == ("r", 0)
    inner = m.refs_for("b", "output", 0)
    assert isinstance(inner, NoGolden) and "L1 fusion group 3" in inner.reason and "a, c" in inner.reason
    # Dumped in another order, or without c: the dump decides.
    bound = m.with_dump_times({"a": 10, "b": 20})
    assert golden(bound.refs_for("b", "output", 0)) == ("q", 0)
    assert isinstance(bound.refs_for("c", "output", 0), NoGolden)
    assert isinstance(m.refs_for("b", "output", 0), NoGolden)  # the unbound matcher is unchanged
    plain = Matcher(rules(op("a", 1)))
    assert plain.with_dump_times({"a": 1}) is plain


def test_close_fusion_pairs_twin_conversions_only() -> None:
    open_rules = rules(
        op("x", 0, op_type="Data"),
        op("conv_bn", 1, inputs=("x:0",), originals=("conv", "bn"), outputs=("bn",)),
        op(
            "trans_TransData_1",
            2,
            op_type="TransData",
            inputs=("conv_bn:0",),
            originals=(),
            outputs=("relu",),
        ),
        op("trans_Cast_2", 3, op_type="Cast", inputs=("x:0",), originals=(), outputs=("x",)),
        op("relu", 4, inputs=("trans_TransData_1:0", "trans_Cast_2:0"), originals=("relu",)),
    )
    close_rules = rules(
        op("x", 0, op_type="Data"),
        op("conv", 1, inputs=("x:0",), originals=("conv",)),
        op("bn", 2, inputs=("conv:0",), originals=("bn",)),
        op("trans_TransData_1", 3, op_type="TransData", inputs=("bn:0",), originals=(), outputs=("relu",)),
        op("trans_Cast_2", 4, op_type="Cast", inputs=("conv:0",), originals=(), outputs=("x",)),  # not x
        op("relu", 5, inputs=("trans_TransData_1:0",), originals=("relu",)),
    )
    m = Matcher.with_close_rules(open_rules, close_rules)
    for io in ("input", "output"):
        twin = m.refs_for("trans_TransData_1", io, 0)  # type: ignore[arg-type]
        assert isinstance(twin, GoldenRef) and twin.dump_key == ("trans_TransData_1", io, 0)
    # Same name, but it converts another tensor there: traced to its producer instead.
    other = m.refs_for("trans_Cast_2", "output", 0)
    assert isinstance(other, GoldenRef) and other.dump_key == ("x", "output", 0)


def test_close_fusion_graph_inputs_pair_with_the_counterparts_input() -> None:
    # A Data op has no task, so neither dump holds its output: an input traced back to a graph
    # input is compared with the same input of the counterpart op in the fusion-off dump.
    both = (
        op("x", 0, op_type="Data"),
        op("y", 1, op_type="Data"),
        op("trans_Cast_0", 2, op_type="Cast", inputs=("x:0",), originals=(), outputs=("x",)),
        op("cast_a", 3, "Cast", ("trans_Cast_0:0",), ("cast_a",), outputs=("cast_a",)),
    )
    open_rules = rules(
        *both,
        op("conv_bn", 4, inputs=("cast_a:0", "y:0"), originals=("conv", "bn"), outputs=("bn",)),
        op("relu", 5, inputs=("conv_bn:0",), originals=("relu",)),
    )
    close_rules = rules(
        *both,
        op("conv", 4, inputs=("cast_a:0", "x:0"), originals=("conv",)),  # its input 1 is another tensor
        op("bn", 5, inputs=("conv:0",), originals=("bn",)),
        op("relu", 6, inputs=("bn:0",), originals=("relu",)),
    )
    m = Matcher.with_close_rules(open_rules, close_rules)
    cast_in = m.refs_for("cast_a", "input", 0)  # through trans_Cast_0 to the graph input x
    assert isinstance(cast_in, GoldenRef)
    assert (cast_in.dump_key, cast_in.skipped) == (("cast_a", "input", 0), ("trans_Cast_0",))
    conv_in = m.refs_for("conv_bn", "input", 0)  # the first op of the fused pair reads x too
    assert isinstance(conv_in, GoldenRef) and conv_in.dump_key == ("conv", "input", 0)
    relu_in = m.refs_for("relu", "input", 0)  # an op computes it: its output, as before
    assert isinstance(relu_in, GoldenRef) and relu_in.dump_key == ("bn", "output", 0)
    # conv's input 1 is x, not y: no counterpart input holds y, so the graph input is named.
    other = m.refs_for("conv_bn", "input", 1)
    assert isinstance(other, GoldenRef) and other.dump_key == ("y", "output", 0)
    # Without -cfr, the golden run names graph inputs like the NPU does.
    plain = Matcher(open_rules).refs_for("cast_a", "input", 0)
    assert isinstance(plain, GoldenRef) and plain.dump_key == ("x", "output", 0)


def test_close_fusion_real_file_against_itself_pairs_graph_inputs(shared_fixtures: Path) -> None:
    real = load_rules(shared_fixtures / "atc" / "msquickcmp_model.json")
    m = Matcher.with_close_rules(real, real)
    name = "BatchMultiClassNMS_1203_Input0_TransposeBefore"  # reads boxes_all (Data) through a Cast
    ref = m.refs_for(name, "input", 0)
    assert isinstance(ref, GoldenRef)
    assert (ref.dump_key, ref.skipped) == ((name, "input", 0), ("trans_Cast_0",))


# ---- relations (§5.3 steps 2-3) ---------------------------------------------------------------


def test_each_relation() -> None:
    groups = fusion_groups(
        rules(
            op("plain", 1),
            op("fused", 2, originals=("conv", "bn", "relu")),
            op("split_b", 4, originals=("matmul",)),
            op("split_a", 3, originals=("matmul",)),
            op("mm_a", 5, originals=("x", "y")),
            op("mm_b", 6, originals=("x", "y")),
            op("l1_a", 7, originals=("p",), l1="9"),
            op("l1_b", 8, originals=("q",), l1="9"),
            op("trans_Cast_1", 9, op_type="Cast", originals=()),
        )
    )
    relations = {g.key: (g.relation, tuple(o.name for o in g.ops)) for g in groups}
    assert relations == {
        "plain": (Relation.ONE_TO_ONE, ("plain",)),
        str(uuid.uuid3(uuid.NAMESPACE_DNS, "convbnrelu")): (Relation.MULTI_TO_ONE, ("fused",)),
        "matmul": (Relation.ONE_TO_MULTI, ("split_a", "split_b")),  # sorted by id, not file order
        str(uuid.uuid3(uuid.NAMESPACE_DNS, "xy")): (Relation.MULTI_TO_MULTI, ("mm_a", "mm_b")),
        "9": (Relation.L1_FUSION, ("l1_a", "l1_b")),
        "trans_Cast_1": (Relation.ONE_TO_ONE, ("trans_Cast_1",)),
    }
    assert [g.index for g in groups] == list(range(6))
    assert group_of(groups, "l1_a").original_names == ("p", "q")


def test_multi_to_multi_strings_and_inner_node() -> None:
    m = Matcher(
        rules(
            op("x", 1, op_type="Data", originals=None),
            op("head", 2, inputs=("x:0",), originals=("a", "b"), outputs=("",), multiop=True),
            op("tail", 3, inputs=("head:0",), originals=("a", "b"), outputs=(("b", 0),), multiop=True),
        )
    )
    head, tail = m.entry("head"), m.entry("tail")
    assert head is not None and tail is not None
    assert head.npu_dump == tail.npu_dump == "head,tail"
    assert head.ground_truth == "a,b"
    assert head.skip_reason is not None and "inner node" in head.skip_reason
    assert tail.skip_reason is None
    skipped = m.refs_for("head", "input", 0)
    assert isinstance(skipped, NoGolden) and "inner node" in skipped.reason
    assert golden(m.refs_for("tail", "output", 0)) == ("b", 0)
    assert isinstance(m.refs_for("tail", "input", 0), NoGolden)  # head's output has no origin


def test_output_index_default_explicit_and_clamped() -> None:
    m = Matcher(
        rules(
            op("own", 1, outputs=(None, None)),
            op("topk", 2, originals=("TopK_1",), outputs=(("TopK_1", 1), ("TopK_1", 0))),
            op("single", 3, originals=("s",), outputs=(("s", 0),)),
        )
    )
    assert [golden(m.refs_for("own", "output", k)) for k in (0, 1)] == [("own", 0), ("own", 1)]
    assert [golden(m.refs_for("topk", "output", k)) for k in (0, 1)] == [("TopK_1", 1), ("TopK_1", 0)]
    assert golden(m.refs_for("single", "output", 3)) == ("s", 0)  # past the end: output_desc[0]


def test_rename_rule_only_for_a_lone_op() -> None:
    m = Matcher(
        rules(
            op("conv_op", 1, originals=("conv",), outputs=(None,)),
            op("split_1", 2, originals=("mm",), outputs=(None,)),
            op("split_2", 3, originals=("mm",), outputs=(("mm", 0),)),
            op("trans_TransData_9", 4, op_type="TransData", originals=(), outputs=(None,)),
        )
    )
    assert golden(m.refs_for("conv_op", "output", 0)) == ("conv", 0)
    assert isinstance(m.refs_for("split_1", "output", 0), NoGolden)
    nothing = m.refs_for("trans_TransData_9", "output", 0)  # GE's, with no input to trace
    assert isinstance(nothing, NoGolden) and "no matching input" in nothing.reason


def test_input_tracing() -> None:
    m = Matcher(
        rules(
            op("in", 0, op_type="Data"),
            op("cast", 1, op_type="Cast", inputs=("in:0",), originals=()),
            op("td", 2, op_type="TransData", inputs=("cast:0", "clean:-1"), originals=()),
            op("conv", 3, inputs=("td:0", "", "w:0", "outer:2"), originals=("conv",)),
            op("loop_a", 4, op_type="Cast", inputs=("loop_b:0",), originals=()),
            op("loop_b", 5, op_type="Cast", inputs=("loop_a:0",), originals=()),
            op("user", 6, inputs=("loop_a:0", "cast:1")),
        )
    )
    ref = m.refs_for("conv", "input", 0)
    assert isinstance(ref, GoldenRef)
    assert (ref.op_name, ref.index, ref.skipped) == ("in", 0, ("td", "cast"))
    assert ref.origin_format == "NCHW"
    assert golden(m.refs_for("conv", "input", 1)) == ("w", 0)  # "" is no tensor: w is data input 1
    assert golden(m.refs_for("conv", "input", 2)) == ("outer", 2)  # not in the file: a graph input
    assert isinstance(m.refs_for("conv", "input", 3), NoGolden)
    cycle = m.refs_for("user", "input", 0)
    assert isinstance(cycle, NoGolden) and "cannot trace" in cycle.reason
    past = m.refs_for("user", "input", 1)  # the Cast has no input 1 to follow
    assert isinstance(past, NoGolden) and "cannot trace" in past.reason


def test_ops_sharing_a_golden_file_name_get_no_golden() -> None:
    m = Matcher(
        rules(
            op("x", 0, op_type="Data"),
            op("/x/sig", 1, inputs=("x:0",), outputs=("/x/sig",)),
            op("_x_sig", 2, inputs=("/x/sig:0",), outputs=("_x_sig",)),
            op("out", 3, inputs=("_x_sig:0",), outputs=("out",)),
        )
    )
    assert m.shared_golden_names == {"_x_sig": ("/x/sig", "_x_sig")}
    said = "ops '/x/sig' and '_x_sig' share the golden file name _x_sig.*.npy"
    for name, io in (("/x/sig", "output"), ("_x_sig", "input"), ("_x_sig", "output"), ("out", "input")):
        ref = m.refs_for(name, io, 0)  # type: ignore[arg-type]
        assert isinstance(ref, NoGolden) and ref.reason.startswith(said), (name, io)
    assert golden(m.refs_for("/x/sig", "input", 0)) == ("x", 0)
    assert golden(m.refs_for("out", "output", 0)) == ("out", 0)
    assert shared_golden_names(rules(op("a.b", 1), op("a/b", 2), op("c", 3))) == {"a_b": ("a.b", "a/b")}


def test_keys_and_identity() -> None:
    m = Matcher(rules(op("blk.0/conv", 1, outputs=(("layer1/conv.weight", 2),))))
    ref = m.refs_for("blk_0_conv", "output", 0)  # the dump file's spelling
    assert isinstance(ref, GoldenRef)
    assert ref.key == "layer1_conv_weight.2"
    assert ref.dump_key == ("layer1_conv_weight", "output", 2)
    same = identity_ref("a.b c", "input", 1)
    assert (same.op_name, same.io, same.index) == ("a.b c", "input", 1)
    assert same.dump_key == ("a_b_c", "input", 1)
    with pytest.raises(ValueError, match="io"):
        m.refs_for("blk.0/conv", "inputs", 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=">= 0"):
        identity_ref("a", "output", -1)


def test_l1_ops_to_compare() -> None:
    groups = fusion_groups(
        rules(op("a", 1, originals=("p",), l1="3"), op("b", 2, originals=("q",), l1="3"), op("c", 3, l1="3"))
    )
    (group,) = groups
    picked = l1_ops_to_compare(group, {"c": 30, "a": 10, "b": 20})
    assert [o.name for o in picked] == ["a", "c"]
    assert [o.name for o in l1_ops_to_compare(group, {"b": 5})] == ["b"]
    assert l1_ops_to_compare(group, {}) == ()


# ---- -cfr close-fusion rule (§5.4) -----------------------------------------------------------


def test_merge_close_fusion() -> None:
    open_rules = rules(
        op("input", 0, op_type="Data"),
        op("conv_bn_relu", 1, inputs=("input:0",), originals=("conv", "bn", "relu"), outputs=(("relu", 0),)),
        op("topk_op", 2, inputs=("conv_bn_relu:0",), originals=("topk",), outputs=(("topk", 0), ("topk", 1))),
        op("trans_Cast_3", 3, op_type="Cast", inputs=("topk_op:1",), originals=(), outputs=(("topk", 1),)),
        op("extra", 4, inputs=("trans_Cast_3:0",), originals=("ghost",), outputs=(("ghost", 0),)),
        path="open.json",
    )
    close_rules = rules(
        op("input", 0, op_type="Data"),
        op("conv_c", 1, originals=("conv",)),
        op("bn_c", 2, originals=("bn",)),
        op("relu_c", 3, originals=("relu",)),
        op("topk_c", 4, originals=("topk",), outputs=(("topk", 1), ("topk", 0))),  # outputs swapped
        path="close.json",
    )
    merged = merge_close_fusion(open_rules, close_rules)
    assert merged.path == "open.json"
    fused = merged.op("conv_bn_relu")
    assert fused is not None and fused.original_op_names == ("conv_c", "bn_c", "relu_c")
    assert [(d.origin_name, d.origin_output_index) for d in fused.outputs] == [("relu_c", 0)]
    topk = merged.op("topk_op")
    assert topk is not None
    assert [(d.origin_name, d.origin_output_index) for d in topk.outputs] == [("topk_c", 1), ("topk_c", 0)]
    cast = merged.op("trans_Cast_3")
    assert cast is not None and cast.original_op_names == ("",)  # still GE's own
    extra = merged.op("extra")
    assert extra is not None and extra.original_op_names == ("",)  # no close op owns "ghost"
    assert extra.outputs[0].origin_name == "ghost"
    assert extra.outputs[0].device_format == "NC1HWC0"  # device side untouched

    m = Matcher.with_close_rules(open_rules, close_rules)
    out = m.refs_for("conv_bn_relu", "output", 0)
    assert isinstance(out, GoldenRef) and out.dump_key == ("relu_c", "output", 0)
    assert m.ground_truth("conv_bn_relu") == "conv_c,bn_c,relu_c"
    traced = m.refs_for("extra", "input", 0)  # through the Cast to topk_op:1 -> topk_c:0
    assert isinstance(traced, GoldenRef) and traced.dump_key == ("topk_c", "output", 0)


# ---- -qfr quant fusion rule (§5.4) ------------------------------------------------------------


def test_merge_quant_fusion() -> None:
    offline = rules(
        op("conv1", 1, originals=("conv1",), outputs=(("conv1", 0),), dtype="DT_FLOAT16"),
        op("pool1", 2, inputs=("conv1:0",), outputs=(None,)),
        op("fc", 3, inputs=("pool1:0",), originals=("fc",), outputs=(("fc", 4),)),
        path="offline.json",
    )
    quant = rules(
        op("conv1", 1, originals=("conv1", "bn1", "scale1"), outputs=(("scale1", 0),), dtype="DT_FLOAT"),
        op("fc", 2, originals=("fc_float",), outputs=(("fc_float", 0),)),
        path="quant.json",
    )
    merged = merge_quant_fusion(offline, quant)
    conv = merged.op("conv1")
    assert conv is not None
    assert conv.original_op_names == ("conv1", "bn1", "scale1")
    (desc,) = conv.outputs
    assert (desc.origin_name, desc.origin_output_index) == ("scale1", 0)
    assert desc.device_dtype == "DT_FLOAT16"  # the NPU tensor is still the offline model's
    pool = merged.op("pool1")
    assert pool is not None and pool.outputs[0].origin_name == "pool1"  # unknown to the quant json: kept
    fc = merged.op("fc")
    assert fc is not None and fc.outputs[0].origin_name == ""  # index 4 does not exist in the quant json

    m = Matcher.with_quant_rules(offline, quant)
    assert golden(m.refs_for("conv1", "output", 0)) == ("scale1", 0)
    assert m.ground_truth("conv1") == "conv1,bn1,scale1"
    assert golden(m.refs_for("pool1", "input", 0)) == ("scale1", 0)
    assert isinstance(m.refs_for("fc", "output", 0), NoGolden)


# ---- quant filter (§5.3 step 5) ---------------------------------------------------------------


def _quantised_chain() -> FusionRules:
    return rules(
        op("data", 0, op_type="Data", dtype="DT_FLOAT"),
        op("conv1.quant", 1, op_type="AscendQuant", inputs=("data:0",), dtype="DT_INT8"),
        op("conv1", 2, op_type="Conv2D", inputs=("conv1.quant:0", "w:0"), dtype="DT_INT32"),
        op("relu_q", 3, op_type="Relu", inputs=("conv1:0",), dtype="DT_INT32"),
        op("conv1.dequant", 4, op_type="AscendDequant", inputs=("relu_q:0", "scale:0"), dtype="DT_FLOAT16"),
        op("pool", 5, inputs=("conv1.dequant:0",)),
        op("fake.quant", 6, inputs=("pool:0",), dtype="DT_FLOAT16"),  # the name alone is not enough
        op("after_fake", 7, inputs=("fake.quant:0",)),
    )


def test_quant_filter_marks_the_quantised_stretch() -> None:
    filt = quant_filter(_quantised_chain())
    assert set(filt.skipped) == {"conv1", "relu_q"}
    assert "conv1.quant" in filt.skipped["relu_q"]


def test_matcher_reports_quant_skips_with_reasons() -> None:
    m = Matcher(_quantised_chain())
    assert golden(m.refs_for("conv1.quant", "input", 0)) == ("data", 0)  # float input: compared
    out = m.refs_for("conv1.quant", "output", 0)
    assert isinstance(out, NoGolden) and "quantised output" in out.reason
    for name in ("conv1", "relu_q"):
        entry = m.entry(name)
        assert entry is not None and entry.skip_reason is not None
        skipped = m.refs_for(name, "output", 0)
        assert isinstance(skipped, NoGolden) and "quantised stretch" in skipped.reason
    dq_in = m.refs_for("conv1.dequant", "input", 0)
    assert isinstance(dq_in, NoGolden) and "quantised input from relu_q:0" in dq_in.reason
    assert golden(m.refs_for("conv1.dequant", "input", 1)) == ("scale", 0)
    assert golden(m.refs_for("conv1.dequant", "output", 0)) == ("conv1.dequant", 0)
    assert golden(m.refs_for("pool", "input", 0)) == ("conv1.dequant", 0)
    assert golden(m.refs_for("after_fake", "input", 0)) == ("fake.quant", 0)
    assert [e.name for e in m.ops_in_order() if e.skip_reason] == ["conv1", "relu_q"]


def test_quant_filter_can_be_disabled() -> None:
    m = Matcher(_quantised_chain(), quant=QuantFilter.none())
    assert golden(m.refs_for("conv1", "output", 0)) == ("conv1", 0)


def test_quant_filter_uses_names_before_the_quant_merge() -> None:
    offline = rules(
        op("data", 0, op_type="Data", dtype="DT_FLOAT"),
        op("q", 1, inputs=("data:0",), originals=("layer/AscendQuant",), dtype="DT_INT8"),
        op("mid", 2, inputs=("q:0",), originals=("layer",), dtype="DT_INT32"),
    )
    quant = rules(op("layer/AscendQuant", 1, originals=("layer",)), op("layer", 2, originals=("layer",)))
    m = Matcher.with_quant_rules(offline, quant)
    entry = m.entry("mid")
    assert entry is not None and entry.skip_reason is not None and "'q'" in entry.skip_reason
