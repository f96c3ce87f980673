"""simulate(): the whole output directory, read back from disk the way the comparator will."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dumpcmp.commands.sim import simulate
from dumpcmp.errors import ConfigError, ModelError
from dumpcmp.proto.codec import read_dump
from dumpcmp.proto.names import parse_dump_name, parse_golden_name, sanitize_golden_name


def _first_bad_op_on_disk(result: Any, cos: Callable[..., float]) -> str | None:
    """The comparator's question, answered from the files: which dumped op first disagrees?"""
    golden = {parse_golden_name(p.name).key: p for p in result.golden_dir.iterdir()}
    ops = {op.name: op for op in result.compiled.tasks}
    files = sorted(result.dump_files, key=lambda p: parse_dump_name(p.name).timestamp)
    for path in files:
        if path.parent.name != "0":
            continue
        dump = read_dump(path)
        for tensor, out in zip(dump.outputs, ops[dump.op_name].outputs, strict=True):
            if not out.origin_name:
                continue
            expected = np.load(golden[f"{sanitize_golden_name(out.origin_name)}.{out.origin_index}"])
            if not cos(tensor.logical(), expected) >= 0.999:
                return dump.op_name
    return None


def test_simulate_writes_dump_golden_and_rules(tmp_path: Path, cos: Callable[..., float]) -> None:
    fault = "/attn/scores/Div=bias:2"
    result = simulate("zoo:transformer_block", tmp_path, seed=4, steps=2, faults=[fault])
    assert (
        result.model_name == "transformer_block" and result.model_path == tmp_path / "transformer_block.onnx"
    )
    assert result.npu_dump_dir == (tmp_path / "npu").resolve()
    assert result.run_dir is not None and result.run_dir.parent.parent.parent.parent == result.npu_dump_dir
    assert {p.parent.name for p in result.dump_files} == {"0", "1"}
    assert len(result.dump_files) == 2 * len(result.compiled.tasks)
    assert result.fault_npu_ops == {"/attn/scores/Div": "/attn/scores/Div"}
    assert _first_bad_op_on_disk(result, cos) == "/attn/scores/Div"
    assert json.loads(result.fusion_rule.read_text())["name"] == "transformer_block"
    assert result.quant_rule is None
    config = json.loads(result.acl_config.read_text())
    assert config["dump"]["dump_list"] == [{"model_name": "transformer_block"}]
    assert len(result.golden_files) == len(list(result.golden_dir.iterdir()))


def test_a_clean_run_has_no_bad_op_and_matches_onnxruntime(tmp_path: Path, cos: Callable[..., float]) -> None:
    result = simulate("zoo:small_cnn", tmp_path, seed=1)
    assert _first_bad_op_on_disk(result, cos) is None
    assert result.fault_npu_ops == {} and result.faults == ()


def test_fault_lands_in_the_fused_op_containing_it(tmp_path: Path, cos: Callable[..., float]) -> None:
    result = simulate("zoo:small_cnn", tmp_path, faults=["/block3/bn/BatchNormalization=layout"])
    fused = "/block3/conv/Conv/block3/act/Relu"
    assert result.fault_npu_ops == {"/block3/bn/BatchNormalization": fused}
    assert _first_bad_op_on_disk(result, cos) == fused


def test_no_fusion_quantise_and_a_user_acl_config(tmp_path: Path) -> None:
    quant = simulate("zoo:small_cnn", tmp_path / "q", quantize=["/block3/conv/Conv"], atomic=True)
    assert quant.quant_rule is not None and quant.quant_rule.is_file()
    close = simulate("zoo:small_cnn", tmp_path / "c", no_fusion=True)
    assert len(close.compiled.tasks) > len(quant.compiled.tasks)
    dump_dir = tmp_path / "mine"
    dump_dir.mkdir()
    acl = tmp_path / "acl.json"
    acl.write_text(
        json.dumps({"dump": {"dump_path": str(dump_dir), "dump_list": [{"layer": ["/head/Softmax"]}]}})
    )
    mine = simulate("zoo:small_cnn", tmp_path / "u", acl_config=acl)
    assert [read_dump(p).op_name for p in mine.dump_files] == ["/head/Softmax"]
    assert mine.npu_dump_dir == dump_dir.resolve() and mine.acl_config == acl


def test_user_errors(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="cannot inject a fault at 'nope'"):
        simulate("zoo:small_cnn", tmp_path, faults=["nope=bias"])
    with pytest.raises(ModelError, match="no zoo model"):
        simulate("zoo:vgg", tmp_path)
    with pytest.raises(ConfigError):
        simulate("zoo:small_cnn", tmp_path, faults=["/head/Softmax=melt"])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"dump": {"dump_path": str(tmp_path), "dump_mode": "x", "dump_list": [{}]}}))
    with pytest.raises(ConfigError, match="rule 3"):
        simulate("zoo:small_cnn", tmp_path, acl_config=bad)
