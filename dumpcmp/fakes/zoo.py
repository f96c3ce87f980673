"""Built-in ONNX models for the simulated NPU, made with the onnx helper API (opset 17).

They use PyTorch-exporter style node names (``/stem/conv/Conv``, ``/layer2/block1/conv1/Conv``),
so that every consumer meets the ``/`` and ``.`` characters the dump and golden file names must
sanitise. Weights come from a seeded generator: the same ``seed`` gives byte-identical models.

* ``small_cnn``: conv-bn-relu blocks (one depthwise, one grouped), max and average pooling,
  a residual add, GlobalAveragePool, Flatten, a Gemm classifier and Softmax.
* ``transformer_block``: pre-norm attention (LayerNormalization, MatMul+Add projections,
  Reshape/Transpose into heads, scaled scores, Softmax) and an Erf-based GELU MLP, with
  residual adds.
* ``resnet``: a 1×3×32×32 classifier: stem, four stages of six basic residual blocks (a 1×1
  projection shortcut where the shape changes), global pool, Gemm, Softmax; 105 NPU ops to
  dump after fusion. Its BatchNorm statistics are measured on a seeded calibration batch, so
  activations stay O(1) through the depth as a trained network's do.
* ``transformer``: five ``transformer_block`` layers over 1×32×64 (no embedding), a final
  LayerNormalization and a projection; 117 NPU ops to dump after fusion, 201 with the
  inserted TransData and Cast ops.

The first two run in a fraction of a second; the deeper two are the hunt's measuring models and
still simulate (and dump) in a couple of seconds.
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
from dumpcmp.fakes.kernels import KERNELS
from dumpcmp.fakes.onnx_model import load_model

__all__ = ["ZOO", "ZOO_PREFIX", "build", "is_zoo_name", "zoo_names"]

OPSET = 17
ZOO_PREFIX = "zoo:"


class _Builder:
    """Collects nodes and seeded initializers; names follow the PyTorch exporter's style."""

    def __init__(self, seed: int, *, trace: bool = False) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        # With ``trace``, every value is also computed (float32 numpy kernels, on a calibration
        # batch the model's builder feeds in) as the graph grows, so that a layer's weights can be
        # fitted to the activations it meets, as a trained network's are.
        self.values: dict[str, np.ndarray] | None = {} if trace else None

    def weight(self, name: str, shape: tuple[int, ...], scale: float) -> str:
        data = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        return self.const(name, data)

    def const(self, name: str, data: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(data, name))
        if self.values is not None:
            self.values[name] = data
        return name

    def feed(self, name: str, data: np.ndarray) -> str:
        """The traced value of graph input ``name`` (its calibration batch)."""
        assert self.values is not None, "feed needs a tracing builder"
        self.values[name] = data
        return name

    def value(self, name: str) -> np.ndarray:
        assert self.values is not None, "value needs a tracing builder"
        return self.values[name]

    def node(self, op: str, name: str, inputs: list[str], n_out: int = 1, **attrs: Any) -> list[str]:
        outputs = [f"{name}_output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outputs, name=name, **attrs))
        if self.values is not None:
            results = KERNELS[op]([self.values[i] for i in inputs], attrs)
            self.values.update(zip(outputs, results, strict=False))
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


def _conv(
    b: _Builder,
    name: str,
    weight: str,
    x: str,
    c_in: int,
    c_out: int,
    *,
    kernel: int = 3,
    stride: int = 1,
    group: int = 1,
    dilation: int = 1,
) -> str:
    """A bias-free Conv (a BatchNormalization follows), He-scaled for the ReLU after it."""
    pad = dilation * (kernel // 2)
    fan_in = (c_in // group) * kernel * kernel
    w = b.weight(weight, (c_out, c_in // group, kernel, kernel), math.sqrt(2.0 / fan_in))
    return b.one(
        "Conv",
        name,
        [x, w],
        kernel_shape=[kernel, kernel],
        pads=[pad] * 4,
        strides=[stride, stride],
        dilations=[dilation, dilation],
        group=group,
    )


def _batch_norm(
    b: _Builder, name: str, params: str, x: str, channels: int, *, gamma: tuple[float, float] = (0.5, 1.5)
) -> str:
    """Inference BatchNormalization; a tracing builder measures its running statistics on the
    calibration batch (so its output has about ``gamma``'s scale), else they are drawn."""
    weight = b.rng.uniform(*gamma, channels).astype(np.float32)
    bias = (b.rng.standard_normal(channels) * 0.1).astype(np.float32)
    if b.values is None:
        mean = (b.rng.standard_normal(channels) * 0.1).astype(np.float32)
        var = b.rng.uniform(0.5, 1.5, channels).astype(np.float32)
    else:
        axes = (0, *range(2, b.value(x).ndim))
        mean = b.value(x).mean(axis=axes).astype(np.float32)
        var = b.value(x).var(axis=axes).astype(np.float32)
    stats = [
        b.const(f"{params}.weight", weight),
        b.const(f"{params}.bias", bias),
        b.const(f"{params}.running_mean", mean),
        b.const(f"{params}.running_var", var),
    ]
    return b.one("BatchNormalization", name, [x, *stats], epsilon=1e-5)


def _conv_bn_relu(
    b: _Builder, scope: str, x: str, c_in: int, c_out: int, *, relu: bool = True, **conv: int
) -> str:
    """``_conv`` (``conv``: its kernel, stride, group, dilation), BatchNormalization, ReLU."""
    y = _conv(b, f"/{scope}/conv/Conv", f"{scope}.conv.weight", x, c_in, c_out, **conv)
    y = _batch_norm(b, f"/{scope}/bn/BatchNormalization", f"{scope}.bn", y, c_out)
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
    b.one("Softmax", "/head/Softmax", [y], axis=1)
    out = _named_output(b, "output")
    return b.model(
        "small_cnn",
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, 10])],
    )


_CALIBRATION_BATCH = 8  # images the tracing builder measures BatchNorm statistics on


def _basic_block(b: _Builder, scope: str, x: str, c_in: int, c_out: int, stride: int) -> str:
    """conv-bn-relu, conv-bn, plus the shortcut (a 1×1 conv-bn projection where the shape
    changes), then ReLU; names as PyTorch's exporter gives a ``BasicBlock``'s nodes."""
    p = _params(scope)
    y = _conv(b, f"/{scope}/conv1/Conv", f"{p}.conv1.weight", x, c_in, c_out, stride=stride)
    y = _batch_norm(b, f"/{scope}/bn1/BatchNormalization", f"{p}.bn1", y, c_out)
    y = b.one("Relu", f"/{scope}/relu/Relu", [y])
    y = _conv(b, f"/{scope}/conv2/Conv", f"{p}.conv2.weight", y, c_out, c_out)
    # A small last gamma, as trained residual branches have: the sum grows slowly with depth.
    y = _batch_norm(b, f"/{scope}/bn2/BatchNormalization", f"{p}.bn2", y, c_out, gamma=(0.2, 0.5))
    shortcut = x
    if stride != 1 or c_in != c_out:
        shortcut = _conv(
            b,
            f"/{scope}/downsample/conv/Conv",
            f"{p}.downsample.0.weight",
            x,
            c_in,
            c_out,
            kernel=1,
            stride=stride,
        )
        shortcut = _batch_norm(
            b, f"/{scope}/downsample/bn/BatchNormalization", f"{p}.downsample.1", shortcut, c_out
        )
    y = b.one("Add", f"/{scope}/Add", [y, shortcut])
    return b.one("Relu", f"/{scope}/relu_1/Relu", [y])


def resnet(
    seed: int = 0,
    *,
    size: int = 32,
    widths: tuple[int, ...] = (16, 32, 48, 64),
    blocks: int = 6,
    classes: int = 10,
) -> onnx.ModelProto:
    """A 1×3×size×size classifier: a conv-bn-relu stem and max pool, one stage of ``blocks``
    basic blocks per width (stride 2 into every stage after the first), global pool, Gemm,
    Softmax. BatchNorm statistics are measured on a seeded calibration batch."""
    b = _Builder(seed, trace=True)
    x = b.feed("input", b.rng.standard_normal((_CALIBRATION_BATCH, 3, size, size)).astype(np.float32))
    y = _conv_bn_relu(b, "stem", x, 3, widths[0])
    y = b.one("MaxPool", "/stem/pool/MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2])
    c_in = widths[0]
    for stage, width in enumerate(widths, 1):
        for block in range(1, blocks + 1):
            stride = 2 if stage > 1 and block == 1 else 1
            y = _basic_block(b, f"layer{stage}/block{block}", y, c_in, width, stride)
            c_in = width
    y = b.one("GlobalAveragePool", "/head/GlobalAveragePool", [y])
    y = b.one("Flatten", "/head/Flatten", [y], axis=1)
    # Logits of about 2 standard deviations, as a trained classifier's: a peaked softmax, far
    # from both uniform and saturated.
    rms = float(np.sqrt(np.mean(b.value(y) ** 2)))
    w = b.weight("head.fc.weight", (classes, c_in), 2.0 / (rms * math.sqrt(c_in)))
    bias = b.const("head.fc.bias", (b.rng.standard_normal(classes) * 0.1).astype(np.float32))
    y = b.one("Gemm", "/head/fc/Gemm", [y, w, bias], transB=1)
    b.one("Softmax", "/head/Softmax", [y], axis=1)
    out = _named_output(b, "output")
    return b.model(
        "resnet",
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, classes])],
    )


def _params(scope: str) -> str:
    """The parameter prefix of a module scope, as PyTorch names it (``layers.0/ln1`` → ``layers.0.ln1``)."""
    return scope.replace("/", ".")


def _linear(b: _Builder, scope: str, x: str, d_in: int, d_out: int) -> str:
    w = b.weight(f"{_params(scope)}.weight", (d_in, d_out), math.sqrt(1.0 / d_in))
    bias = b.const(f"{_params(scope)}.bias", (b.rng.standard_normal(d_out) * 0.05).astype(np.float32))
    y = b.one("MatMul", f"/{scope}/MatMul", [x, w])
    return b.one("Add", f"/{scope}/Add", [bias, y])  # PyTorch puts the bias first


def _layer_norm(b: _Builder, scope: str, x: str, d: int) -> str:
    gamma = b.const(f"{_params(scope)}.weight", b.rng.uniform(0.8, 1.2, d).astype(np.float32))
    beta = b.const(f"{_params(scope)}.bias", (b.rng.standard_normal(d) * 0.05).astype(np.float32))
    return b.one(
        "LayerNormalization", f"/{scope}/LayerNormalization", [x, gamma, beta], axis=-1, epsilon=1e-5
    )


def _encoder_layer(b: _Builder, x: str, prefix: str, *, seq: int, d_model: int, heads: int) -> str:
    """One pre-norm encoder layer over a 1×seq×d_model sequence; every name starts with ``prefix``
    (``""``, or a module path with its ``/`` such as ``layers.0/``)."""
    head_dim = d_model // heads
    p = _params(prefix)
    h = _layer_norm(b, f"{prefix}ln1", x, d_model)
    split_shape = b.const(f"{p}attn.split_shape", np.array([1, seq, heads, head_dim], dtype=np.int64))
    heads_of = {}
    for part in ("q", "k", "v"):
        projected = _linear(b, f"{prefix}attn.{part}_proj", h, d_model, d_model)
        heads_of[part] = b.one("Reshape", f"/{prefix}attn/{part}/Reshape", [projected, split_shape])
    q = b.one("Transpose", f"/{prefix}attn/q/Transpose", [heads_of["q"]], perm=[0, 2, 1, 3])
    k = b.one("Transpose", f"/{prefix}attn/k/Transpose", [heads_of["k"]], perm=[0, 2, 3, 1])
    v = b.one("Transpose", f"/{prefix}attn/v/Transpose", [heads_of["v"]], perm=[0, 2, 1, 3])
    scores = b.one("MatMul", f"/{prefix}attn/scores/MatMul", [q, k])
    scale = b.const(f"{p}attn.scale", np.array(math.sqrt(head_dim), dtype=np.float32))
    scores = b.one("Div", f"/{prefix}attn/scores/Div", [scores, scale])
    probs = b.one("Softmax", f"/{prefix}attn/Softmax", [scores], axis=-1)
    ctx = b.one("MatMul", f"/{prefix}attn/context/MatMul", [probs, v])
    ctx = b.one("Transpose", f"/{prefix}attn/context/Transpose", [ctx], perm=[0, 2, 1, 3])
    merge_shape = b.const(f"{p}attn.merge_shape", np.array([1, seq, d_model], dtype=np.int64))
    ctx = b.one("Reshape", f"/{prefix}attn/context/Reshape", [ctx, merge_shape])
    attn = _linear(b, f"{prefix}attn.out_proj", ctx, d_model, d_model)
    res1 = b.one("Add", f"/{prefix}attn/residual/Add", [x, attn])
    h = _layer_norm(b, f"{prefix}ln2", res1, d_model)
    h = _linear(b, f"{prefix}mlp.fc1", h, d_model, 2 * d_model)
    # GELU as PyTorch exports it below opset 20: x * 0.5 * (1 + erf(x / sqrt(2))).
    sqrt2 = b.const(f"{p}mlp.act.sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    g = b.one("Div", f"/{prefix}mlp/act/Div", [h, sqrt2])
    g = b.one("Erf", f"/{prefix}mlp/act/Erf", [g])
    g = b.one(
        "Add", f"/{prefix}mlp/act/Add", [g, b.const(f"{p}mlp.act.one", np.array(1.0, dtype=np.float32))]
    )
    g = b.one("Mul", f"/{prefix}mlp/act/Mul", [h, g])
    half = b.const(f"{p}mlp.act.half", np.array(0.5, dtype=np.float32))
    g = b.one("Mul", f"/{prefix}mlp/act/Mul_1", [g, half])
    y = _linear(b, f"{prefix}mlp.fc2", g, 2 * d_model, d_model)
    return b.one("Add", f"/{prefix}mlp/residual/Add", [res1, y])


def _named_output(b: _Builder, name: str) -> str:
    """Renames the last node's output to the graph output ``name``."""
    b.nodes[-1].output[0] = name
    return name


def transformer_block(seed: int = 0, *, seq: int = 8, d_model: int = 32, heads: int = 4) -> onnx.ModelProto:
    """One pre-norm encoder block over a 1×seq×d_model sequence."""
    b = _Builder(seed)
    x = "tokens"
    _encoder_layer(b, x, "", seq=seq, d_model=d_model, heads=heads)
    out = _named_output(b, "output")
    return b.model(
        "transformer_block",
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, seq, d_model])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, seq, d_model])],
    )


def transformer(
    seed: int = 0, *, layers: int = 5, seq: int = 32, d_model: int = 64, heads: int = 4
) -> onnx.ModelProto:
    """``layers`` pre-norm encoder layers over a 1×seq×d_model sequence (no embedding), then a
    final LayerNormalization and a linear projection."""
    b = _Builder(seed)
    x = "tokens"
    h = x
    for layer in range(layers):
        h = _encoder_layer(b, h, f"layers.{layer}/", seq=seq, d_model=d_model, heads=heads)
    h = _layer_norm(b, "norm", h, d_model)
    _linear(b, "proj", h, d_model, d_model)
    out = _named_output(b, "output")
    return b.model(
        "transformer",
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, seq, d_model])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, seq, d_model])],
    )


ZOO: dict[str, Callable[[int], onnx.ModelProto]] = {
    "small_cnn": small_cnn,
    "transformer_block": transformer_block,
    "resnet": resnet,
    "transformer": transformer,
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
