"""Built-in ONNX models for the simulated NPU, made with the onnx helper API (opset 17).

Both are small enough to run in a fraction of a second and use PyTorch-exporter style node
names (``/stem/conv/Conv``), so that every consumer meets the ``/`` and ``.`` characters the
dump and golden file names must sanitise. Weights come from a seeded generator: the same
``seed`` gives byte-identical models.

* ``small_cnn``: conv-bn-relu blocks (one depthwise, one grouped), max and average pooling,
  a residual add, GlobalAveragePool, Flatten, a Gemm classifier and Softmax.
* ``transformer_block``: pre-norm attention (LayerNormalization, MatMul+Add projections,
  Reshape/Transpose into heads, scaled scores, Softmax) and an Erf-based GELU MLP, with
  residual adds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from dumpcmp.errors import ModelError
from dumpcmp.fakes.onnx_model import load_model

__all__ = ["ZOO", "ZOO_PREFIX", "build", "is_zoo_name", "zoo_names"]

OPSET = 17
ZOO_PREFIX = "zoo:"


class _Builder:
    """Collects nodes and seeded initializers; names follow the PyTorch exporter's style."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []

    def weight(self, name: str, shape: tuple[int, ...], scale: float) -> str:
        data = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        return self.const(name, data)

    def const(self, name: str, data: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(data, name))
        return name

    def node(self, op: str, name: str, inputs: list[str], n_out: int = 1, **attrs: Any) -> list[str]:
        outputs = [f"{name}_output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outputs, name=name, **attrs))
        return outputs

    def one(self, op: str, name: str, inputs: list[str], **attrs: Any) -> str:
        return self.node(op, name, inputs, **attrs)[0]

    def model(
        self, name: str, inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto]
    ) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, inputs, outputs, initializer=self.inits)
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="dumpcmp.zoo"
        )
        model.ir_version = 8  # readable by every onnxruntime that knows opset 17
        onnx.checker.check_model(model, full_check=True)
        return model


def _conv_bn_relu(
    b: _Builder,
    scope: str,
    x: str,
    c_in: int,
    c_out: int,
    *,
    kernel: int = 3,
    stride: int = 1,
    group: int = 1,
    dilation: int = 1,
    relu: bool = True,
) -> str:
    pad = dilation * (kernel // 2)
    fan_in = (c_in // group) * kernel * kernel
    w = b.weight(f"{scope}.conv.weight", (c_out, c_in // group, kernel, kernel), math.sqrt(2.0 / fan_in))
    y = b.one(
        "Conv",
        f"/{scope}/conv/Conv",
        [x, w],
        kernel_shape=[kernel, kernel],
        pads=[pad] * 4,
        strides=[stride, stride],
        dilations=[dilation, dilation],
        group=group,
    )
    bn = [
        b.const(f"{scope}.bn.weight", b.rng.uniform(0.5, 1.5, c_out).astype(np.float32)),
        b.const(f"{scope}.bn.bias", (b.rng.standard_normal(c_out) * 0.1).astype(np.float32)),
        b.const(f"{scope}.bn.running_mean", (b.rng.standard_normal(c_out) * 0.1).astype(np.float32)),
        b.const(f"{scope}.bn.running_var", b.rng.uniform(0.5, 1.5, c_out).astype(np.float32)),
    ]
    y = b.one("BatchNormalization", f"/{scope}/bn/BatchNormalization", [y, *bn], epsilon=1e-5)
    return b.one("Relu", f"/{scope}/act/Relu", [y]) if relu else y


def small_cnn(seed: int = 0) -> onnx.ModelProto:
    """A 1×3×16×16 image classifier with 10 classes."""
    b = _Builder(seed)
    x = "input"
    y = _conv_bn_relu(b, "stem", x, 3, 16)
    y = b.one("MaxPool", "/stem/pool/MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2])  # 8×8
    y = _conv_bn_relu(b, "block1.dw", y, 16, 16, group=16)  # depthwise
    y = _conv_bn_relu(b, "block1.pw", y, 16, 24, kernel=1)
    skip = y
    y = _conv_bn_relu(b, "block2.gconv", y, 24, 24, group=4, dilation=2)  # grouped, dilated
    y = _conv_bn_relu(b, "block2.pw", y, 24, 24, kernel=1, relu=False)
    y = b.one("Add", "/block2/Add", [y, skip])
    y = b.one("Relu", "/block2/act/Relu", [y])
    y = b.one("AveragePool", "/block3/pool/AveragePool", [y], kernel_shape=[2, 2], strides=[2, 2])  # 4×4
    y = _conv_bn_relu(b, "block3", y, 24, 32, stride=2)  # 2×2
    y = b.one("GlobalAveragePool", "/head/GlobalAveragePool", [y])
    y = b.one("Flatten", "/head/Flatten", [y], axis=1)
    w = b.weight("head.fc.weight", (10, 32), math.sqrt(1.0 / 32))
    bias = b.const("head.fc.bias", (b.rng.standard_normal(10) * 0.1).astype(np.float32))
    y = b.one("Gemm", "/head/fc/Gemm", [y, w, bias], transB=1)
    b.node("Softmax", "/head/Softmax", [y], axis=1)
    b.nodes[-1].output[0] = "output"
    return b.model(
        "small_cnn",
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 10])],
    )


def _linear(b: _Builder, scope: str, x: str, d_in: int, d_out: int) -> str:
    w = b.weight(f"{scope}.weight", (d_in, d_out), math.sqrt(1.0 / d_in))
    bias = b.const(f"{scope}.bias", (b.rng.standard_normal(d_out) * 0.05).astype(np.float32))
    y = b.one("MatMul", f"/{scope}/MatMul", [x, w])
    return b.one("Add", f"/{scope}/Add", [bias, y])  # PyTorch puts the bias first


def _layer_norm(b: _Builder, scope: str, x: str, d: int) -> str:
    gamma = b.const(f"{scope}.weight", b.rng.uniform(0.8, 1.2, d).astype(np.float32))
    beta = b.const(f"{scope}.bias", (b.rng.standard_normal(d) * 0.05).astype(np.float32))
    return b.one(
        "LayerNormalization", f"/{scope}/LayerNormalization", [x, gamma, beta], axis=-1, epsilon=1e-5
    )


def transformer_block(seed: int = 0, *, seq: int = 8, d_model: int = 32, heads: int = 4) -> onnx.ModelProto:
    """One pre-norm encoder block over a 1×seq×d_model sequence."""
    b = _Builder(seed)
    head_dim = d_model // heads
    x = "tokens"
    h = _layer_norm(b, "ln1", x, d_model)
    split_shape = b.const("attn.split_shape", np.array([1, seq, heads, head_dim], dtype=np.int64))
    q = b.one("Reshape", "/attn/q/Reshape", [_linear(b, "attn.q_proj", h, d_model, d_model), split_shape])
    k = b.one("Reshape", "/attn/k/Reshape", [_linear(b, "attn.k_proj", h, d_model, d_model), split_shape])
    v = b.one("Reshape", "/attn/v/Reshape", [_linear(b, "attn.v_proj", h, d_model, d_model), split_shape])
    q = b.one("Transpose", "/attn/q/Transpose", [q], perm=[0, 2, 1, 3])
    k = b.one("Transpose", "/attn/k/Transpose", [k], perm=[0, 2, 3, 1])
    v = b.one("Transpose", "/attn/v/Transpose", [v], perm=[0, 2, 1, 3])
    scores = b.one("MatMul", "/attn/scores/MatMul", [q, k])
    scale = b.const("attn.scale", np.array(math.sqrt(head_dim), dtype=np.float32))
    scores = b.one("Div", "/attn/scores/Div", [scores, scale])
    probs = b.one("Softmax", "/attn/Softmax", [scores], axis=-1)
    ctx = b.one("MatMul", "/attn/context/MatMul", [probs, v])
    ctx = b.one("Transpose", "/attn/context/Transpose", [ctx], perm=[0, 2, 1, 3])
    merge_shape = b.const("attn.merge_shape", np.array([1, seq, d_model], dtype=np.int64))
    ctx = b.one("Reshape", "/attn/context/Reshape", [ctx, merge_shape])
    res1 = b.one("Add", "/attn/residual/Add", [x, _linear(b, "attn.out_proj", ctx, d_model, d_model)])
    h = _layer_norm(b, "ln2", res1, d_model)
    h = _linear(b, "mlp.fc1", h, d_model, 2 * d_model)
    # GELU as PyTorch exports it below opset 20: x * 0.5 * (1 + erf(x / sqrt(2))).
    g = b.one(
        "Div", "/mlp/act/Div", [h, b.const("mlp.act.sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))]
    )
    g = b.one("Erf", "/mlp/act/Erf", [g])
    g = b.one("Add", "/mlp/act/Add", [g, b.const("mlp.act.one", np.array(1.0, dtype=np.float32))])
    g = b.one("Mul", "/mlp/act/Mul", [h, g])
    g = b.one("Mul", "/mlp/act/Mul_1", [g, b.const("mlp.act.half", np.array(0.5, dtype=np.float32))])
    y = _linear(b, "mlp.fc2", g, 2 * d_model, d_model)
    b.node("Add", "/mlp/residual/Add", [res1, y])
    b.nodes[-1].output[0] = "output"
    return b.model(
        "transformer_block",
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, seq, d_model])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, seq, d_model])],
    )


ZOO: dict[str, Callable[[int], onnx.ModelProto]] = {
    "small_cnn": small_cnn,
    "transformer_block": transformer_block,
}


def zoo_names() -> tuple[str, ...]:
    return tuple(ZOO)


def is_zoo_name(model: str) -> bool:
    """``zoo:NAME`` names a built-in model."""
    return model.startswith(ZOO_PREFIX)


def model_proto(model: str | Path) -> onnx.ModelProto:
    """The model a command names: ``zoo:NAME`` built, anything else read as an .onnx file."""
    return build(str(model)) if is_zoo_name(str(model)) else load_model(Path(model))


def build(name: str, seed: int = 0) -> onnx.ModelProto:
    """The zoo model ``name`` (with or without the ``zoo:`` prefix)."""
    key = name.removeprefix(ZOO_PREFIX)
    factory = ZOO.get(key)
    if factory is None:
        raise ModelError(f"no zoo model {key!r}; the zoo has {', '.join(ZOO)}")
    return factory(seed)
