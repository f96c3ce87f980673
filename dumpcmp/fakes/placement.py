"""Placement: every compiled value put in a device layout and type, conversions inserted.

Data ops for graph inputs; Const ops for weights (fp16, in the layout the consuming op reads:
FRACTAL_Z for conv weights, FRACTAL_NZ for matmul weights); each op with its activations in
the layout its kind computes in — NC1HWC0 for conv and pooling, FRACTAL_NZ for matmul, the
producer's layout for elementwise ops that can keep it, ND/NCHW otherwise. Where a producer's
layout or type differs from what a consumer reads, a ``trans_TransData_N`` / ``trans_Cast_N``
op is inserted (GE-inserted: present but empty original op names): fp32 graph inputs are cast
to fp16 on the way in, and results cast back before NetOutput.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np
from onnx import helper

from dumpcmp.errors import ModelError
from dumpcmp.proto.dtypes import Format

from .compiled import NpuOp, OpInput, OpKind, OpOutput, Stage, TensorDesc, plain_format
from .fusion import Group
from .onnx_model import OnnxGraph

__all__ = ["Placement", "device_dtype", "npu_type_of"]

_FP16 = np.dtype(np.float16)

_TYPES = {
    "Conv": "Conv2D", "BatchNormalization": "BNInference", "Relu": "Relu", "LeakyRelu": "LeakyRelu",
    "Sigmoid": "Sigmoid", "Tanh": "Tanh", "Gelu": "Gelu", "Erf": "Erf", "Gemm": "MatMulV2",
    "MatMul": "MatMulV2", "Add": "Add", "Sub": "Sub", "Mul": "Mul", "Div": "RealDiv", "Pow": "Pow",
    "Sqrt": "Sqrt", "MaxPool": "MaxPool", "AveragePool": "AvgPool", "GlobalAveragePool": "GlobalAveragePool",
    "Softmax": "SoftmaxV2", "LayerNormalization": "LayerNorm", "ReduceMean": "ReduceMeanD",
    "Reshape": "Reshape", "Flatten": "Flatten", "Transpose": "TransposeD", "Squeeze": "Squeeze",
    "Unsqueeze": "Unsqueeze", "Concat": "ConcatD", "Split": "SplitD", "Cast": "Cast", "Identity": "Identity",
}  # fmt: skip
_FIVE_HD = frozenset({"Conv2D", "DepthwiseConv2D", "BNInference", "MaxPool", "AvgPool", "GlobalAveragePool"})
_CUBE_MATMUL = frozenset({"MatMulV2", "BatchMatMulV2"})
# Elementwise ops compute in any layout, so they keep their producer's when all operands share it.
_ELEMENTWISE = frozenset(
    {
        "Relu",
        "LeakyRelu",
        "Sigmoid",
        "Tanh",
        "Gelu",
        "Erf",
        "Add",
        "Sub",
        "Mul",
        "RealDiv",
        "Pow",
        "Sqrt",
        "Cast",
    }
)
# Fusions that rewrite a pattern into a different computation; GE marks those ops multi-op.
_MULTIOP_PATTERNS = ("conv_bn", "gelu")


def device_dtype(dtype: np.dtype) -> np.dtype:
    """Floating tensors live as fp16 on the device (ATC's default precision mode)."""
    return _FP16 if np.issubdtype(dtype, np.floating) else np.dtype(dtype)


@dataclass(slots=True)
class _Loc:
    """Where a tensor lives at run time: output ``index`` of op ``op``, env key ``key``."""

    op: str
    index: int
    key: str
    desc: TensorDesc


@dataclass
class Placement:
    """Builds the op list: places every value in a layout and inserts the conversions it needs."""

    graph: OnnxGraph
    ops: list[NpuOp] = field(default_factory=list)
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    _values: dict[str, _Loc] = field(default_factory=dict)
    _converted: dict[tuple[str, Format, str], _Loc] = field(default_factory=dict)
    _const_ops: dict[tuple[str, Format], _Loc] = field(default_factory=dict)
    _origins: dict[str, tuple[str, int]] = field(default_factory=dict)
    _trans_count: int = 0

    def __post_init__(self) -> None:
        for node in self.graph.nodes:
            for index, value in enumerate(node.outputs):
                self._origins[value] = (node.name, index)
        for spec in self.graph.inputs:
            desc = TensorDesc(spec.dtype, plain_format(len(spec.shape)), spec.shape, spec.dtype)
            self._origins[spec.name] = (spec.name, 0)
            op = self.add(NpuOp(0, spec.name, "Data", OpKind.DATA, outputs=(OpOutput(spec.name, desc),)))
            self._values[spec.name] = _Loc(op.name, 0, spec.name, desc)

    # ------------------------------------------------------------------ building blocks

    def add(self, op: NpuOp) -> NpuOp:
        """Append ``op`` with the next id (ids follow the order of the op list)."""
        placed = replace(op, id=len(self.ops))
        self.ops.append(placed)
        return placed

    def origin(self, value: str) -> tuple[str, int]:
        return self._origins.get(value, ("", 0))

    def is_activation(self, value: str) -> bool:
        return value not in self.graph.constants and value not in self.constants

    def const_input(
        self,
        value: str,
        data: np.ndarray,
        fmt: Format,
        *,
        groups: int = 0,
        device_type: np.dtype | None = None,
    ) -> OpInput:
        """A Const op holding ``data`` (stored in device type) in ``fmt``; shared by consumers."""
        fmt = plain_format(data.ndim) if fmt in (Format.ND, Format.NCHW) else fmt
        key = (value, fmt)
        loc = self._const_ops.get(key)
        if loc is None:
            stored = data.astype(
                np.dtype(device_type) if device_type is not None else device_dtype(data.dtype)
            )
            self.constants[value] = stored
            desc = TensorDesc(stored.dtype, fmt, tuple(data.shape), data.dtype, groups)
            # A weight may share its name with an op (ONNX keeps the two apart; the json does not).
            taken = {op.name for op in self.ops}
            clash = value in taken or self.graph.node(value) is not None
            name = f"{value}_{fmt.name}" if clash else value
            op = self.add(
                NpuOp(0, name, "Const", OpKind.CONST, outputs=(OpOutput(value, desc),), original_names=())
            )
            loc = self._const_ops[key] = _Loc(op.name, 0, value, desc)
        return OpInput(loc.op, loc.index, loc.key, loc.desc)

    def activation(self, value: str, fmt: Format, dtype: np.dtype | None = None) -> OpInput:
        """``value`` in layout ``fmt`` and type ``dtype`` (default: its device type), converting as needed."""
        base = self._values.get(value)
        if base is None:
            raise ModelError(f"value {value!r} is used before any op produces it")
        loc = self._convert(
            value, fmt, np.dtype(dtype) if dtype is not None else device_dtype(base.desc.dtype)
        )
        return OpInput(loc.op, loc.index, loc.key, loc.desc)

    def current_format(self, value: str) -> Format:
        loc = self._values.get(value)
        return loc.desc.format if loc is not None else Format.ND

    def publish(self, op: NpuOp) -> None:
        """Make ``op``'s outputs the current home of their values."""
        for index, out in enumerate(op.outputs):
            self._values[out.value] = _Loc(op.name, index, out.value, out.desc)

    def output(self, value: str, fmt: Format, dtype: np.dtype | None = None, sub_format: int = 0) -> OpOutput:
        """An op output for ONNX value ``value``, mapped to the framework op that computes it."""
        spec = self.graph.values[value]
        name, index = self.origin(value)
        desc = TensorDesc(
            np.dtype(dtype) if dtype is not None else device_dtype(spec.dtype),
            fmt if fmt not in (Format.ND, Format.NCHW) else plain_format(len(spec.shape)),
            spec.shape,
            spec.dtype,
            sub_format,
        )
        return OpOutput(value, desc, name, index)

    # ------------------------------------------------------------------ layout and type conversions

    def _convert(self, value: str, fmt: Format, dtype: np.dtype) -> _Loc:
        base = self._values[value]
        want_plain = fmt in (Format.ND, Format.NCHW)
        if base.desc.dtype == dtype and (base.desc.format == fmt or (want_plain and base.desc.is_plain)):
            return base
        key = (value, Format.ND if want_plain else fmt, dtype.str)
        if key in self._converted:
            return self._converted[key]
        if base.desc.dtype != dtype:
            plain = self._convert(value, Format.ND, base.desc.dtype)
            loc = self._trans("Cast", plain, plain.desc.with_dtype(dtype), value)
            self._converted[(value, Format.ND, dtype.str)] = loc
            if not want_plain:
                loc = self._trans("TransData", loc, loc.desc.with_format(fmt), value)
        else:
            loc = self._trans("TransData", base, base.desc.with_format(fmt), value)
        self._converted[key] = loc
        return loc

    def _trans(self, kind: str, src: _Loc, desc: TensorDesc, value: str) -> _Loc:
        name = f"trans_{kind}_{self._trans_count}"
        self._trans_count += 1
        key = f"{name}:0"
        attrs = {"to": helper.np_dtype_to_tensor_dtype(desc.dtype)} if kind == "Cast" else {}
        stage = Stage(
            "Cast" if kind == "Cast" else "Identity", name, (src.key,), (key,), MappingProxyType(attrs)
        )
        origin_name, origin_index = self.origin(value)
        op = self.add(
            NpuOp(
                0,
                name,
                kind,
                OpKind.COMPUTE,
                inputs=(OpInput(src.op, src.index, src.key, src.desc),),
                outputs=(OpOutput(key, desc, origin_name, origin_index),),
                original_names=(),
                stages=(stage,),
            )
        )
        return _Loc(op.name, 0, key, desc)

    # ------------------------------------------------------------------ one op per group

    def emit_group(self, group: Group) -> NpuOp:
        npu_type = npu_type_of(self.graph, group)
        stages = self.stages(group)
        inside = {o for n in group.nodes for o in n.outputs if o}
        shape = self.graph.values[group.last.outputs[0]].shape
        act_fmt = self._activation_format(npu_type, stages, inside, shape)
        inputs: list[OpInput] = []
        remap: dict[str, str] = {}
        for stage, position, value in _outside_inputs(stages, inside):
            if value in remap or any(i.value == value for i in inputs):
                continue
            if self.is_activation(value):
                op_input = self.activation(
                    value, act_fmt if len(self.graph.values[value].shape) > 1 else Format.ND
                )
                remap[value] = op_input.value
                inputs.append(op_input)
            elif np.issubdtype(self._const(value).dtype, np.floating):
                fmt, groups = _weight_format(npu_type, stage, position, self._const(value))
                inputs.append(self.const_input(value, self._const(value), fmt, groups=groups))
            else:
                # Integer constants (shapes, axes, split sizes) are op attributes on the device:
                # the executor reads them, the dump does not show them.
                self.constants.setdefault(value, self.graph.constants[value])
        stages = tuple(_remapped(s, remap) for s in stages)
        outputs = tuple(self.output(v, act_fmt) for v in self.escaping(group))
        fused = len(group.nodes) > 1 or group.name != group.anchor.name
        op = self.add(
            NpuOp(
                0,
                group.name,
                npu_type,
                OpKind.COMPUTE,
                inputs=tuple(inputs),
                outputs=outputs,
                original_names=group.names if fused else None,
                stages=stages,
                is_multiop=group.pattern.split("+")[0] in _MULTIOP_PATTERNS,
            )
        )
        self.publish(op)
        return op

    def _const(self, value: str) -> np.ndarray:
        found = self.constants.get(value)
        return found if found is not None else self.graph.constants[value]

    def escaping(self, group: Group) -> list[str]:
        """Values computed by the group that something outside it (or the graph) reads."""
        members = set(group.names)
        escaping = []
        for node in group.nodes:
            for value in node.outputs:
                if not value:
                    continue
                outside = [c for c in self.graph.consumers(value) if c.name not in members]
                if outside or self.graph.is_output(value) or node is group.last:
                    escaping.append(value)
        return escaping

    @staticmethod
    def activation_format_for(npu_type: str, shape: tuple[int, ...]) -> Format:
        """The layout an op of ``npu_type`` computes in: 5HD for conv/pooling, NZ for matmul."""
        if npu_type in _FIVE_HD:
            return Format.NC1HWC0 if len(shape) == 4 else plain_format(len(shape))
        if npu_type in _CUBE_MATMUL:
            return Format.FRACTAL_NZ
        return plain_format(len(shape))

    def _activation_format(
        self, npu_type: str, stages: Sequence[Stage], inside: set[str], shape: tuple[int, ...]
    ) -> Format:
        plain = plain_format(len(shape))
        if npu_type not in _ELEMENTWISE:
            return self.activation_format_for(npu_type, shape)
        outside = [v for _, _, v in _outside_inputs(stages, inside)]
        formats = {self.current_format(v) for v in outside if self.is_activation(v)}
        same_shape = all(self._shape(v) == shape for v in outside)
        if len(formats) == 1 and same_shape and not formats <= {Format.ND, Format.NCHW}:
            return formats.pop()
        return plain

    def _shape(self, value: str) -> tuple[int, ...]:
        if value in self.constants:
            return tuple(self.constants[value].shape)
        return self.graph.values[value].shape

    def stages(self, group: Group) -> tuple[Stage, ...]:
        """The group's computation; Conv+BN becomes one Conv over folded weights."""
        nodes = list(group.nodes)
        stages: list[Stage] = []
        if group.pattern.startswith("conv_bn"):
            conv, bn = nodes[0], nodes[1]
            weight, bias = self._fold_bn(
                conv.name, conv.inputs, bn.inputs, float(bn.attrs.get("epsilon", 1e-5))
            )
            stages.append(
                Stage(
                    "Conv",
                    conv.name,
                    (conv.inputs[0], weight, bias),
                    (bn.outputs[0],),
                    conv.attrs,
                    (conv.name, bn.name),
                )
            )
            nodes = nodes[2:]
        stages.extend(Stage(n.op_type, n.name, n.inputs, n.outputs, n.attrs, (n.name,)) for n in nodes)
        return tuple(stages)

    def _fold_bn(
        self, conv: str, conv_inputs: Sequence[str], bn_inputs: Sequence[str], eps: float
    ) -> tuple[str, str]:
        """GE's Conv+BN fusion: the BN's scale and shift folded into conv weights (in float64)."""
        consts = self.graph.constants
        w = consts[conv_inputs[1]].astype(np.float64)
        b = consts[conv_inputs[2]].astype(np.float64) if len(conv_inputs) > 2 and conv_inputs[2] else 0.0
        gamma, beta, mean, var = (consts[v].astype(np.float64) for v in bn_inputs[1:5])
        scale = gamma / np.sqrt(var + eps)
        weight_name, bias_name = f"{conv}_fused_weight", f"{conv}_fused_bias"
        self.constants[weight_name] = (w * scale.reshape(-1, *([1] * (w.ndim - 1)))).astype(np.float32)
        self.constants[bias_name] = ((b - mean) * scale + beta).astype(np.float32)
        return weight_name, bias_name

    # ------------------------------------------------------------------ the end of the graph

    def finish(self) -> tuple[str, ...]:
        """Add the NetOutput op (outputs cast back to their framework type); the output keys."""
        inputs = []
        for spec in self.graph.outputs:
            if spec.name not in self._values:
                raise ModelError(
                    f"graph output {spec.name!r} is a constant; the simulator needs computed outputs"
                )
            inputs.append(self.activation(spec.name, Format.ND, spec.dtype))
        self.add(
            NpuOp(0, "Node_Output", "NetOutput", OpKind.NET_OUTPUT, inputs=tuple(inputs), original_names=())
        )
        return tuple(i.value for i in inputs)


def npu_type_of(graph: OnnxGraph, group: Group) -> str:
    """The NPU op type for a group, by its anchor (and the GELU pattern)."""
    if group.pattern == "gelu":
        return "Gelu"
    anchor = group.anchor
    if anchor.op_type == "Conv":
        groups = int(anchor.attrs.get("group", 1))
        channels = graph.values[anchor.inputs[0]].shape[1]
        return "DepthwiseConv2D" if groups > 1 and groups == channels else "Conv2D"
    if anchor.op_type == "MatMul":
        ranks = [len(graph.values[v].shape) for v in anchor.inputs[:2]]
        return "MatMulV2" if max(ranks) <= 2 else "BatchMatMulV2"
    return _TYPES[anchor.op_type]


def _weight_format(npu_type: str, stage: Stage, position: int, data: np.ndarray) -> tuple[Format, int]:
    """The layout a weight is stored in for the op that reads it, and its group count."""
    if stage.op_type == "Conv" and position == 1 and data.ndim == 4:
        groups = int(stage.attrs.get("group", 1))
        return Format.FRACTAL_Z, groups if groups > 1 else 0
    if npu_type in _CUBE_MATMUL and stage.op_type in ("MatMul", "Gemm") and position < 2 and data.ndim >= 2:
        return Format.FRACTAL_NZ, 0
    return plain_format(data.ndim), 0


def _outside_inputs(stages: Sequence[Stage], inside: set[str]) -> list[tuple[Stage, int, str]]:
    """(stage, input position, value) for every input that comes from outside the op."""
    return [
        (stage, position, value)
        for stage in stages
        for position, value in enumerate(stage.inputs)
        if value and value not in inside
    ]


def _remapped(stage: Stage, remap: Mapping[str, str]) -> Stage:
    if not any(v in remap for v in stage.inputs):
        return stage
    inputs = tuple(remap.get(v, v) for v in stage.inputs)
    return Stage(stage.op_type, stage.name, inputs, stage.outputs, stage.attrs, stage.originals)
