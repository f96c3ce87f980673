"""The ATC-like compile: fusion, naming, inserted ops, layouts, quantisation, user models."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from dumpcmp.errors import ModelError
from dumpcmp.fakes.compiled import OpKind
from dumpcmp.fakes.compiler import CompileOptions, compile_model
from dumpcmp.fakes.executor import Executor
from dumpcmp.fakes.golden import run_golden
from dumpcmp.fakes.inputs import random_inputs
from dumpcmp.fakes.zoo import build
from dumpcmp.proto.dtypes import Format
from dumpcmp.proto.layouts import to_device


def test_conv_bn_relu_fuses_into_one_op_named_like_ub_fusion(zoo_case: Callable[..., Any]) -> None:
    compiled = zoo_case("small_cnn").compiled
    stem = compiled.containing("/stem/bn/BatchNormalization")
    assert stem is not None
    assert stem.type == "Conv2D"
    assert stem.name == "/stem/conv/Conv/stem/act/Relu"
    assert stem.original_names == ("/stem/conv/Conv", "/stem/bn/BatchNormalization", "/stem/act/Relu")
    assert stem.is_multiop
    assert stem.outputs[0].origin_name == "/stem/act/Relu"
    # graph fusion only (no activation after it): the op keeps the conv's name
    plain = compiled.containing("/block2.pw/bn/BatchNormalization")
    assert plain is not None and plain.name == "/block2.pw/conv/Conv"
    assert compiled.containing("/block1.dw/conv/Conv").type == "DepthwiseConv2D"  # type: ignore[union-attr]


def test_matmul_add_and_gelu_fuse_in_the_transformer(zoo_case: Callable[..., Any]) -> None:
    compiled = zoo_case("transformer_block").compiled
    q = compiled.op("/attn.q_proj/MatMul")
    assert q.type == "BatchMatMulV2"
    assert q.original_names == ("/attn.q_proj/MatMul", "/attn.q_proj/Add")
    assert q.outputs[0].origin_name == "/attn.q_proj/Add"
    assert q.outputs[0].desc.format == Format.FRACTAL_NZ
    gelu = compiled.containing("/mlp/act/Erf")
    assert gelu is not None and gelu.type == "Gelu"
    assert gelu.original_names == (
        "/mlp/act/Div",
        "/mlp/act/Erf",
        "/mlp/act/Add",
        "/mlp/act/Mul",
        "/mlp/act/Mul_1",
    )
    assert gelu.outputs[0].origin_name == "/mlp/act/Mul_1"


def test_framework_inserted_and_structural_ops(zoo_case: Callable[..., Any]) -> None:
    compiled = zoo_case("small_cnn").compiled
    ops = compiled.ops
    assert ops[0].kind is OpKind.DATA and ops[0].name == "input"
    assert ops[-1].kind is OpKind.NET_OUTPUT and ops[-1].type == "NetOutput"
    cast_in = ops[1]
    assert cast_in.type == "Cast" and cast_in.name == "trans_Cast_0" and cast_in.original_names == ()
    assert cast_in.outputs[0].desc.dtype == np.float16 and cast_in.outputs[0].origin_name == "input"
    trans = [op for op in ops if op.type == "TransData"]
    assert trans and all(op.original_names == () and op.name.startswith("trans_TransData_") for op in trans)
    # a framework op compiled one-to-one has no original-name list at all
    assert compiled.op("/stem/pool/MaxPool").original_names is None
    # the last op before NetOutput casts the result back to float32
    assert ops[-2].type == "Cast" and ops[-2].outputs[0].desc.dtype == np.float32
    assert [op.id for op in ops] == list(range(len(ops)))


def test_every_input_refers_to_an_earlier_op_output(zoo_case: Callable[..., Any]) -> None:
    for name in ("small_cnn", "transformer_block"):
        compiled = zoo_case(name).compiled
        seen: dict[str, int] = {}
        for op in compiled.ops:
            for i in op.inputs:
                assert i.source in seen and i.index < seen[i.source], (op.name, i)
            seen[op.name] = len(op.outputs)


def test_layouts_follow_the_op_kind(zoo_case: Callable[..., Any]) -> None:
    compiled = zoo_case("small_cnn").compiled
    conv = compiled.op("/stem/conv/Conv/stem/act/Relu")
    assert [i.desc.format for i in conv.inputs] == [Format.NC1HWC0, Format.FRACTAL_Z, Format.ND]
    assert conv.outputs[0].desc.format == Format.NC1HWC0
    gconv = compiled.op("/block2.gconv/conv/Conv/block2.gconv/act/Relu")
    assert gconv.inputs[1].desc.sub_format == 4  # grouped FRACTAL_Z carries the group count
    assert compiled.op("/block2/Add").outputs[0].desc.format == Format.NC1HWC0  # elementwise keeps 5HD
    gemm = compiled.op("/head/fc/Gemm")
    assert gemm.type == "MatMulV2" and gemm.outputs[0].desc.format == Format.FRACTAL_NZ
    assert compiled.op(gemm.inputs[0].source).type == "TransData"


def test_compiled_device_shapes_are_what_the_layouts_produce(zoo_case: Callable[..., Any]) -> None:
    for name in ("small_cnn", "transformer_block"):
        for op in zoo_case(name).compiled.ops:
            for desc in [i.desc for i in op.inputs] + [o.desc for o in op.outputs]:
                if desc.format in (Format.ND, Format.NCHW):
                    continue
                zeros = np.zeros(desc.origin_shape, dtype=desc.dtype)
                assert to_device(zeros, desc.format, groups=max(desc.sub_format, 1)).shape == desc.shape


def test_no_fusion_gives_one_op_per_onnx_node(zoo_case: Callable[..., Any]) -> None:
    case = zoo_case("small_cnn", False)
    model = case.model
    compute = [op for op in case.compiled.tasks if not op.name.startswith("trans_")]
    assert [op.name for op in compute] == [n.name for n in model.graph.node]
    assert all(op.original_names is None for op in compute)
    assert case.compiled.op("/stem/bn/BatchNormalization").type == "BNInference"
    assert not case.compiled.fusion


def test_quantised_layer_becomes_quant_compute_dequant(
    zoo_case: Callable[..., Any], cos: Callable[..., float]
) -> None:
    layer = "/block1.pw/conv/Conv"
    model = build("small_cnn")
    compiled = compile_model(model, name="small_cnn", options=CompileOptions(quantize=(layer,)))
    names = [op.name for op in compiled.tasks]
    quant = names.index(f"{layer}_quant_layer")
    assert names[quant + 1 : quant + 3] == [
        "/block1.pw/conv/Conv/block1.pw/act/Relu",
        f"{layer}_dequant_layer",
    ]
    q_op, conv, deq = (compiled.op(n) for n in names[quant : quant + 3])
    assert (q_op.type, deq.type) == ("AscendQuant", "AscendDequant")
    assert q_op.outputs[0].desc.dtype == np.int8 and q_op.outputs[0].desc.shape[-1] == 32  # int8: C0 = 32
    assert conv.inputs[1].desc.dtype == np.int8 and conv.outputs[0].desc.dtype == np.int32
    assert deq.outputs[0].origin_name == "/block1.pw/act/Relu"
    case = zoo_case("small_cnn")
    execution = Executor(compiled).run(case.inputs)
    run = execution.run_of(deq.name)
    assert cos(run.outputs[0], case.golden.of("/block1.pw/act/Relu")) > 0.99  # int8 error, not garbage
    assert compiled.quantized == (layer,)


def test_only_conv_and_matmul_layers_can_be_quantised() -> None:
    with pytest.raises(ModelError, match="cannot quantise '/head/Softmax'"):
        compile_model(build("small_cnn"), options=CompileOptions(quantize=("/head/Softmax",)))
    with pytest.raises(ModelError, match="no op of that name"):
        compile_model(build("small_cnn"), options=CompileOptions(quantize=("nope",)))


SMALL_CNN_LAYERS = (
    "/stem/conv/Conv, /block1.dw/conv/Conv, /block1.pw/conv/Conv, /block2.gconv/conv/Conv, "
    "/block2.pw/conv/Conv, /block3/conv/Conv, /head/fc/Gemm"
)


@pytest.mark.parametrize(
    ("layer", "problem"),
    [("nope", "the model has no op of that name"),
     ("/head/Softmax", "only Conv, MatMul and Gemm layers with constant weights can be")],
)  # fmt: skip
def test_a_layer_that_cannot_be_quantised_is_told_which_can(layer: str, problem: str) -> None:
    # The refusal named no layer that would do: the user had to read the model to find one.
    with pytest.raises(ModelError) as caught:
        compile_model(build("small_cnn"), options=CompileOptions(quantize=(layer,)))
    expected = f"cannot quantise {layer!r}: {problem}; quantisable layers: {SMALL_CNN_LAYERS}"
    assert str(caught.value) == expected


def _user_model() -> onnx.ModelProto:
    rng = np.random.default_rng(11)

    def init(name: str, data: np.ndarray) -> onnx.TensorProto:
        return numpy_helper.from_array(data, name)

    inits = [
        init("w1", (rng.standard_normal((8, 4, 3, 3)) * 0.3).astype(np.float32)),
        init("b1", rng.standard_normal(8).astype(np.float32)),
        init("split", np.array([3, 5], np.int64)),
        init("axes", np.array([2, 3], np.int64)),
        init("sq_axes", np.array([0], np.int64)),
        init("wfc", (rng.standard_normal((8, 6)) * 0.3).astype(np.float32)),
    ]
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c"], name="conv", pads=[1, 0, 1, 0], strides=[1, 2], dilations=[2, 1]),
        n("LeakyRelu", ["c"], ["l"], name="leaky", alpha=0.1),
        n("Split", ["l", "split"], ["s0", "s1"], name="split", axis=1),
        n("Sigmoid", ["s0"], ["sg"], name="sigmoid"),
        n("Tanh", ["s1"], ["th"], name="tanh"),
        n("Concat", ["sg", "th"], ["cat"], name="concat", axis=1),
        n("Constant", [], ["two"], name="two", value=numpy_helper.from_array(np.array(2.0, np.float32))),
        n("Pow", ["cat", "two"], ["p"], name="pow"),
        n("Sqrt", ["p"], ["r"], name="sqrt"),
        n("Sub", ["r", "cat"], ["d"], name="sub"),
        n("ReduceMean", ["d", "axes"], ["m"], name="mean", keepdims=0),  # opset 18: axes is an input
        n("Unsqueeze", ["m", "sq_axes"], ["u"], name="unsqueeze"),
        n("Squeeze", ["u", "sq_axes"], ["sq"], name="squeeze"),
        n("Gemm", ["sq", "wfc"], ["g"], name="fc"),
        n("Cast", ["g"], ["y"], name="cast", to=TensorProto.FLOAT),
    ]
    graph = helper.make_graph(
        nodes,
        "user_net",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 9, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 6])],
        initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_a_user_model_made_with_the_helper_api_compiles_and_runs(cos: Callable[..., float]) -> None:
    model = _user_model()
    onnx.checker.check_model(model)
    compiled = compile_model(
        model, name="user_net", options=CompileOptions(input_shapes=(("x", (2, 4, 9, 8)),))
    )
    assert compiled.inputs[0].shape == (2, 4, 9, 8)
    inputs = random_inputs(compiled.inputs, seed=1)
    execution = Executor(compiled).run(inputs)
    golden = run_golden(model, inputs)
    for run in execution.runs:
        for value, out in zip(run.outputs, run.op.outputs, strict=True):
            if out.origin_name:
                assert cos(value, golden.of(out.origin_name, out.origin_index)) > 0.999, run.op.name
    np.testing.assert_allclose(execution.outputs[0], golden.value("y"), rtol=0.02, atol=0.02)
    assert compiled.containing("leaky").name == "convleaky"  # type: ignore[union-attr]
