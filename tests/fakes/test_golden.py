"""The golden runner: onnxruntime in float32, every intermediate written with the matching name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from dumpcmp.fakes.golden import GoldenRun, GoldenTensor, run_golden, shared_golden_names, write_golden
from dumpcmp.host.golden import NpyGoldenDir
from dumpcmp.proto.names import parse_golden_name, sanitize_golden_name


def test_every_node_output_and_input_is_written_with_its_golden_name(
    tmp_path: Path, zoo_case: Callable[..., Any]
) -> None:
    case = zoo_case("transformer_block")
    stamps = iter(range(1_763_700_000_000_000, 1_763_800_000_000_000))
    files = write_golden(case.golden, tmp_path, clock=lambda: next(stamps))
    keys = {parse_golden_name(p.name).key: p for p in files}
    assert "tokens.0" in keys  # the graph input, named like its Data op in the ATC json
    assert "_attn_q_proj_MatMul.0" in keys  # '/' and '.' sanitised as msaccucmp looks names up
    assert len(keys) == len(files) == 1 + len(case.model.graph.node)
    q = np.load(keys["_attn_q_proj_MatMul.0"])
    assert q.dtype == np.float32 and q.shape == (1, 8, 32)
    stamps_written = [parse_golden_name(p.name).timestamp for p in files]
    assert stamps_written == sorted(stamps_written) and all(len(str(s)) == 16 for s in stamps_written)


def test_every_npu_output_has_a_golden_counterpart(zoo_case: Callable[..., Any]) -> None:
    for name in ("small_cnn", "transformer_block"):
        case = zoo_case(name)
        golden_keys = {f"{sanitize_golden_name(t.op_name)}.{t.index}" for t in case.golden.tensors}
        for op in case.compiled.tasks:
            for out in op.outputs:
                if out.origin_name:
                    assert f"{sanitize_golden_name(out.origin_name)}.{out.origin_index}" in golden_keys


def test_constants_are_not_golden_and_new_ir_versions_still_run() -> None:
    nodes = [
        helper.make_node(
            "Constant", [], ["k"], name="k", value=numpy_helper.from_array(np.array(3.0, np.float32))
        ),
        helper.make_node("Mul", ["x", "k"], ["y"], name="scale"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    assert model.ir_version >= 10  # whatever this onnx stamps; onnxruntime may know less
    onnx.checker.check_model(model)
    run = run_golden(model, [np.array([1.0, 2.0], np.float32)])
    assert [(t.op_name, t.index) for t in run.tensors] == [("x", 0), ("scale", 0)]
    assert run.of("scale").tolist() == [3.0, 6.0]


def test_a_golden_name_too_long_is_written_numeric_and_mapped(
    tmp_path: Path, zoo_case: Callable[..., Any]
) -> None:
    long = "/" + "L" * 300
    array = np.arange(4, dtype=np.float32)
    run = GoldenRun(zoo_case("small_cnn").golden.graph, (GoldenTensor(long, 0, "a", array),))
    [path] = write_golden(run, tmp_path, clock=lambda: 1_763_700_000_000_000)
    assert path.name == "1763700000000000.npy"
    mapped = f"{path.name},_{'L' * 300}.0.1763700000000000.npy"
    assert (tmp_path / "mapping.csv").read_text().strip() == mapped
    found = NpyGoldenDir(tmp_path).output(long, 0)
    assert found is not None and np.array_equal(found.load(), array)


def test_ops_sharing_a_golden_file_name_are_said(zoo_case: Callable[..., Any]) -> None:
    graph = zoo_case("small_cnn").golden.graph
    array = np.zeros(2, np.float32)
    names = ("/x/sig", "_x_sig", "_x.sig", "/x/sig", "x_sig")
    run = GoldenRun(graph, tuple(GoldenTensor(n, 0, n, array) for n in names))
    assert shared_golden_names(run) == [
        "ops '/x/sig', '_x_sig' and '_x.sig' share the golden file name _x_sig.*.npy: compare cannot tell "
        "their files apart and leaves their tensors uncompared; rename one of them"
    ]
