"""Loading ONNX models: the supported subset, opsets, node names, static shapes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from dumpcmp.errors import ModelError
from dumpcmp.fakes.onnx_model import analyse, load_model, node_names


def _model(
    nodes: list[onnx.NodeProto],
    opset: int = 17,
    inits: list[onnx.TensorProto] | None = None,
    in_shape: list[int | str] | None = None,
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape or [2, 3])],
        [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, None)],
        initializer=inits or [],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_unsupported_op_is_a_model_error_naming_type_and_node() -> None:
    model = _model(
        [
            helper.make_node("Relu", ["x"], ["a"], name="ok"),
            helper.make_node("Hardmax", ["a"], ["y"], name="hm"),
        ]
    )
    with pytest.raises(ModelError, match=r"unsupported op: Hardmax \(node 'hm'\)"):
        analyse(model)


def test_custom_domain_op_is_unsupported() -> None:
    model = _model([helper.make_node("FusedGemm", ["x"], ["y"], name="fg", domain="com.microsoft")])
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    with pytest.raises(ModelError, match=r"com\.microsoft\.FusedGemm \(node 'fg'\)"):
        analyse(model)


@pytest.mark.parametrize("opset", [12, 22])
def test_opsets_outside_13_to_21_are_refused(opset: int) -> None:
    with pytest.raises(ModelError, match=f"opset {opset} is not supported"):
        analyse(_model([helper.make_node("Relu", ["x"], ["y"])], opset=opset))


def test_unnamed_and_repeated_nodes_get_unique_names() -> None:
    model = _model(
        [
            helper.make_node("Relu", ["x"], ["a"]),
            helper.make_node("Relu", ["a"], ["b"], name="dup"),
            helper.make_node("Relu", ["b"], ["c"], name="dup"),
            helper.make_node("Relu", ["c"], ["y"], name="Relu_0"),
        ]
    )
    names = node_names(model.graph)
    assert len(set(names)) == 4
    assert names[1] == "dup" and names[3] == "Relu_0"
    assert names[0] != "Relu_0"  # the generated name may not take a name the model gives


def test_symbolic_dims_become_one_or_the_given_shape() -> None:
    model = _model([helper.make_node("Relu", ["x"], ["y"])], in_shape=["batch", 3])
    assert analyse(model).inputs[0].shape == (1, 3)
    assert analyse(model, {"x": (4, 3)}).values["y"].shape == (4, 3)
    with pytest.raises(ModelError, match="no graph input named 'z'"):
        analyse(model, {"z": (1,)})


def test_constants_and_initializers_are_decoded() -> None:
    shape = numpy_helper.from_array(np.array([3, 2], np.int64), "shape")
    model = _model(
        [
            helper.make_node(
                "Constant", [], ["k"], value=numpy_helper.from_array(np.float32(2.0).reshape(()))
            ),
            helper.make_node("Mul", ["x", "k"], ["m"], name="mul"),
            helper.make_node("Reshape", ["m", "shape"], ["y"], name="reshape"),
        ],
        inits=[shape],
    )
    graph = analyse(model)
    assert float(graph.constants["k"]) == 2.0
    assert graph.constants["shape"].tolist() == [3, 2]
    assert graph.values["y"].shape == (3, 2)
    assert [s.name for s in graph.inputs] == ["x"]


def test_om_files_and_missing_files_are_model_errors(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"offline model \(\.om\)"):
        load_model(tmp_path / "net.om")
    with pytest.raises(ModelError, match="no such model file"):
        load_model(tmp_path / "net.onnx")
    (tmp_path / "junk.onnx").write_bytes(b"\x00not a model")
    with pytest.raises(ModelError, match="not a readable ONNX model"):
        load_model(tmp_path / "junk.onnx")
