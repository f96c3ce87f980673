"""``run_compare`` on the real ATC files, with dumps and golden data made to fit them (see atc_fit).

Every row is checked against what the generator knows each dumped tensor to be, so a wrong
pairing shows up as a cosine near 0 (random tensors) or as numbers where there should be none.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dumpcmp.host.fusion_rules import load_rules
from dumpcmp.host.offline import CompareOutcome, run_compare
from dumpcmp.host.request import CompareRequest
from dumpcmp.host.rows import NO_GOLDEN, ResultRow
from dumpcmp.host.summary import summarize
from dumpcmp.host.verdict import Thresholds
from tests.atc_ops import document, op
from tests.e2e.atc_fit import FitCase, make_fit

PASS_THROUGH = ("Cast", "TransData")


def _compare(case: FitCase, out: Path, **kwargs: Any) -> CompareOutcome:
    request = CompareRequest(case.npu_dir, case.golden_dir, fusion_rule=case.rule_file, out_dir=out, **kwargs)
    return run_compare(request)


def _tensor_id(row: ResultRow) -> tuple[str, str, int]:
    op, io, index = row.tensor_index.rsplit(":", 2)
    return op, io, int(index)


def _expected_truth_column(case: FitCase, row: ResultRow) -> str:
    """The op's original names; for an op GE made, the golden tensor's op, or ``*``."""
    op = load_rules(case.rule_file).op(row.npu_name)
    assert op is not None, row.npu_name
    if not op.is_ge_inserted:
        return ",".join(dict.fromkeys(n for n in op.original_op_names if n))
    key = case.truth[_tensor_id(row)]
    return key.rpartition(".")[0] if key else NO_GOLDEN


def _check_every_row(case: FitCase, outcome: CompareOutcome) -> list[ResultRow]:
    """Each row against the truth; returns the output rows below cosine 0.9."""
    fault_keys = {key for (op, io, _), key in case.truth.items() if op == case.fault and io == "output"}
    targets = [r for r in outcome.rows if r.index is not None]
    assert {_tensor_id(r) for r in targets} == set(case.truth)
    for row in targets:
        key = case.truth[_tensor_id(row)]
        assert row.ground_truth == _expected_truth_column(case, row), row
        if key is None or key not in case.golden_keys:
            assert math.isnan(row.cosine) and row.reasons, row
        elif key in fault_keys:
            assert row.cosine < 0.9, row
        else:
            assert row.cosine > 0.99, row
    return [r for r in targets if ":output:" in r.tensor_index and r.cosine < 0.9]


@pytest.fixture(scope="module")
def tdnn(shared_fixtures: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[FitCase, CompareOutcome]:
    root = tmp_path_factory.mktemp("tdnn")
    case = make_fit(shared_fixtures / "atc" / "tdnn.om.json", root, fault="LeakyRelu_174")
    return case, _compare(case, root / "out", jobs=2)


def _row(outcome: CompareOutcome, tensor_index: str) -> ResultRow:
    (row,) = [r for r in outcome.rows if r.tensor_index == tensor_index]
    return row


def test_tdnn_the_injected_fault_is_the_only_bad_output(tdnn: tuple[FitCase, CompareOutcome]) -> None:
    case, outcome = tdnn
    bad = _check_every_row(case, outcome)
    assert [r.tensor_index for r in bad] == ["LeakyRelu_174:output:0"]
    first = [line for line in summarize(outcome, Thresholds()) if line.startswith("first divergence")]
    assert first and "LeakyRelu_174" in first[0]


def test_tdnn_inserted_transdata_outputs_are_their_producers(tdnn: tuple[FitCase, CompareOutcome]) -> None:
    _, outcome = tdnn
    # ATC labels these with their consumer (Conv_*) or a folded op; the tensor is the producer's.
    for tensor_index, producer in [
        ("trans_TransData_4:output:0", "Pad_49"),
        ("trans_TransData_28:output:0", "Pad_169"),  # 1806 wide: never cut to Conv_172's 1800
        ("trans_TransData_73:output:0", "Concat_341"),  # labelled Unsqueeze_342
        ("trans_Cast_95:output:0", "LogSoftmax_385"),  # labelled Reshape_390
        ("trans_Cast_0:output:0", "feats"),
    ]:
        row = _row(outcome, tensor_index)
        assert (row.ground_truth, row.cosine > 0.99) == (producer, True), row
    assert _row(outcome, "trans_TransData_28:output:0").shape == (1, 512, 1806)


def test_tdnn_rows_without_golden_name_their_op(tdnn: tuple[FitCase, CompareOutcome]) -> None:
    _, outcome = tdnn
    scale = _row(outcome, "BatchNormalization_60_BNInferenceD:input:1")
    assert scale.ground_truth.startswith("BatchNormalization_60,Transpose_55,")
    assert math.isnan(scale.cosine) and "dynamic_const_67614_258" in scale.reasons[0]
    weight = _row(outcome, "PartitionedCall_Conv_52_Conv2D_12:input:1")
    assert weight.ground_truth == "Conv_52" and "dynamic_const_67614_257" in weight.reasons[0]
    # One framework op split in three NPU ops: the last computes it, the middle one is ATC's own.
    split = _row(outcome, "PartitionedCall_RandomNormalLike_327_add_172:output:0")
    assert (split.ground_truth, split.cosine > 0.99) == ("RandomNormalLike_327", True)
    middle = _row(outcome, "trans_Cast_65PartitionedCall_RandomNormalLike_327_mul_171:output:0")
    assert middle.ground_truth == "RandomNormalLike_327"
    assert "PartitionedCall_RandomNormalLike_327_mul_171.0.{timestamp}.npy not found" in middle.reasons[0]
    # A folded constant that kept its framework name is compared with it.
    assert _row(outcome, "Mul_312:input:1").cosine > 0.99


def test_msquickcmp_the_injected_fault_is_the_only_bad_output(shared_fixtures: Path, tmp_path: Path) -> None:
    fault = "BatchMultiClassNMS_1203_Input1_TransposeBefore"
    case = make_fit(shared_fixtures / "atc" / "msquickcmp_model.json", tmp_path, fault=fault)
    outcome = _compare(case, tmp_path / "out")
    bad = _check_every_row(case, outcome)
    assert [r.tensor_index for r in bad] == [f"{fault}:output:0"]
    gather = _row(outcome, "trans_Cast_7:output:0")  # after a const+gather split of Gather_1221
    assert (gather.ground_truth, gather.cosine > 0.99) == ("Gather_1221", True)


def test_shapes_are_never_cut_to_fit(shared_fixtures: Path, tmp_path: Path) -> None:
    case = make_fit(
        shared_fixtures / "atc" / "msquickcmp_model.json", tmp_path, missing_golden={"Slice_1218.0"}
    )
    (concat,) = case.golden_dir.glob("Concat_1211.0.*.npy")
    np.save(concat, np.load(concat)[:, :4])  # (100, 5) -> (100, 4): cutting would hide it
    (nms,) = case.golden_dir.glob("BatchMultiClassNMS_1203.0.*.npy")
    np.save(nms, np.load(nms).reshape(1, 100, 4))  # same count, other shape
    outcome = _compare(case, tmp_path / "out")
    for tensor_index, reason in [
        ("Concat_1211:output:0", "shape mismatch [100, 5] vs [100, 4]"),
        ("Slice_1218:input:0", "shape mismatch [100, 5] vs [100, 4]"),
        ("BatchMultiClassNMS_1203:output:0", "shape mismatch [1, 4, 100] vs [1, 100, 4]"),
    ]:
        row = _row(outcome, tensor_index)
        assert math.isnan(row.cosine) and row.reasons == (reason,), row
    # (100, 1) against the golden's (1, 100): only unit dims differ, so it is compared.
    assert _row(outcome, "Concat_1211:input:1").cosine > 0.99
    for tensor_index in ("Slice_1218:output:0", "trans_Cast_6:output:0"):
        row = _row(outcome, tensor_index)
        assert row.ground_truth == "Slice_1218" and math.isnan(row.cosine)
        assert "golden file Slice_1218.0.{timestamp}.npy not found" in row.reasons[0]


# ---- small rule files for what the real ones lack ----------------------------------------------


def _op(
    name: str,
    op_id: int,
    op_type: str,
    inputs: tuple[str, ...] = (),
    originals: tuple[str, ...] | None = None,
    label: str | None = None,
    l1: str | None = None,
) -> dict[str, Any]:
    return op(
        name, op_id, op_type, inputs, originals, (label,), l1=l1,
        layout="ND", shape=(2, 8), origin_format="ND", origin_shape=(2, 8),
    )  # fmt: skip


def _rule_file(path: Path, *ops: dict[str, Any]) -> Path:
    path.write_text(json.dumps(document(*ops)))
    return path


def _l1_net(path: Path) -> Path:
    return _rule_file(
        path,
        _op("x", 0, "Data"),
        _op("l1_a", 1, "Conv2D", ("x:0",), ("conv",), label="conv", l1="7"),
        _op("l1_b", 2, "Relu", ("l1_a:0",), ("relu",), label="relu", l1="7"),
        _op("l1_c", 3, "Add", ("l1_b:0",), ("add",), label="add", l1="7"),
        _op("tail", 4, "Abs", ("l1_c:0", "l1_b:0"), ("abs",), label="abs"),
    )


def test_l1_fusion_groups_are_compared_at_their_first_and_last_op(tmp_path: Path) -> None:
    case = make_fit(_l1_net(tmp_path / "l1.json"), tmp_path / "case")
    outcome = _compare(case, tmp_path / "out")
    middle = [r for r in outcome.rows if r.npu_name == "l1_b"]
    assert middle and all(math.isnan(r.cosine) and "L1 fusion group 7" in r.reasons[0] for r in middle)
    assert all(r.ground_truth == "conv,relu,add" for r in middle)  # the group's originals
    for name in ("l1_a", "l1_c", "tail"):
        assert all(r.cosine > 0.99 for r in outcome.rows if r.npu_name == name)


def test_l1_fusion_follows_what_was_dumped(tmp_path: Path) -> None:
    # l1_c left out of the dump: l1_b is now the last op dumped and holds the group's output.
    case = make_fit(_l1_net(tmp_path / "l1.json"), tmp_path / "case", skip_ops={"l1_c"})
    outcome = _compare(case, tmp_path / "out", jobs=1)
    rows = [r for r in outcome.rows if r.npu_name == "l1_b"]
    assert rows and all(r.cosine > 0.99 for r in rows)


def test_close_fusion_pairs_transdata_present_in_both_builds(tmp_path: Path) -> None:
    fused = _rule_file(
        tmp_path / "on.json",
        _op("x", 0, "Data"),
        _op("conv_bn", 1, "Conv2D", ("x:0",), ("conv", "bn"), label="bn"),
        _op("trans_TransData_1", 2, "TransData", ("conv_bn:0",), (), label="relu"),  # consumer's label
        _op("relu", 3, "Relu", ("trans_TransData_1:0",), ("relu",), label="relu"),
    )
    unfused = _rule_file(
        tmp_path / "off.json",
        _op("x", 0, "Data"),
        _op("conv", 1, "Conv2D", ("x:0",), ("conv",), label="conv"),
        _op("bn", 2, "BNInference", ("conv:0",), ("bn",), label="bn"),
        _op("trans_TransData_1", 3, "TransData", ("bn:0",), (), label="relu"),
        _op("relu", 4, "Relu", ("trans_TransData_1:0",), ("relu",), label="relu"),
    )
    on = make_fit(fused, tmp_path / "on")
    off = make_fit(unfused, tmp_path / "off")
    request = CompareRequest(
        on.npu_dir, off.npu_dir, fusion_rule=fused, close_fusion_rule=unfused, out_dir=tmp_path / "out"
    )
    outcome = run_compare(request)
    twin = [r for r in outcome.rows if r.npu_name == "trans_TransData_1"]
    assert [r.ground_truth for r in twin] == ["trans_TransData_1"] * 2
    assert all(r.cosine > 0.99 for r in twin)
    golden_only = [r.ground_truth for r in outcome.rows if r.index is None]
    assert "trans_TransData_1" not in golden_only
