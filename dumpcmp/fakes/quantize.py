"""Optional int8 quantisation of chosen conv / matmul layers, as an AMCT-quantised model runs.

A quantised layer becomes three NPU ops:

* ``{layer}_quant_layer`` (AscendQuant): fp16 activation → int8, symmetric per-tensor scale
  (computed from the tensor itself: the simulator has no calibration set);
* ``{layer}`` (the fused conv/matmul op): int8 × int8 weights (symmetric, per output channel)
  → int32 accumulators;
* ``{layer}_dequant_layer`` (AscendDequant): int32 → fp16 with the two scales, plus the bias
  and whatever the layer fused after it (BN shift, Relu).

The names follow AMCT's, which is what the CANN comparator's quantisation filter looks for.
``quant_fusion_ops`` gives the ops of the quant fusion rule file (formats.md §5.4): each
quantised layer with the float model's op names it stands for.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import numpy as np

from dumpcmp.proto.dtypes import Format

from .compiled import CompiledModel, NpuOp, OpInput, OpKind, OpOutput, Stage, TensorDesc, plain_format
from .fusion import Group
from .kernels import KERNELS, Attrs, Inputs, Kernel
from .placement import Placement, npu_type_of

__all__ = ["QUANT_KERNELS", "emit_quantized", "quant_fusion_ops"]

QUANT_SUFFIX = "_quant_layer"
DEQUANT_SUFFIX = "_dequant_layer"
_INT8, _INT32 = np.dtype(np.int8), np.dtype(np.int32)


def _quant(inputs: Inputs, attrs: Attrs) -> tuple[np.ndarray, ...]:
    x = np.asarray(inputs[0], dtype=np.float32)
    peak = float(np.nanmax(np.abs(x))) if x.size and np.isfinite(x).any() else 0.0
    scale = np.float16(peak / 127.0 if peak > 0 else 1.0)
    with np.errstate(invalid="ignore"):
        q = np.clip(np.rint(x / np.float32(scale)), -128, 127)
    return np.nan_to_num(q).astype(np.int8), np.asarray(scale, dtype=np.float16)


def _int_compute(base: str) -> Kernel:
    def kernel(inputs: Inputs, attrs: Attrs) -> tuple[np.ndarray, ...]:
        wide = [None if i is None else i.astype(np.float32) for i in inputs]  # exact: |sum| < 2**24 here
        (y,) = KERNELS[base](wide, attrs)
        return (np.rint(y).astype(np.int32),)

    return kernel


def _dequant(inputs: Inputs, attrs: Attrs) -> tuple[np.ndarray, ...]:
    acc, w_scale, a_scale = (np.asarray(i, dtype=np.float32) for i in inputs[:3])
    axis = int(attrs["axis"]) % acc.ndim
    shape = [1] * acc.ndim
    shape[axis] = -1
    y = acc * a_scale * w_scale.reshape(shape)
    if len(inputs) > 3 and inputs[3] is not None:
        y = y + np.asarray(inputs[3], dtype=np.float32).reshape(shape)
    return (y,)


QUANT_KERNELS: dict[str, Kernel] = {
    "AscendQuant": _quant,
    "QuantConv": _int_compute("Conv"),
    "QuantMatMul": _int_compute("MatMul"),
    "QuantGemm": _int_compute("Gemm"),
    "AscendDequant": _dequant,
}


def _weight_scales(w: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric per-channel int8 weights along ``axis`` and their scales."""
    others = tuple(i for i in range(w.ndim) if i != axis % w.ndim)
    peak = np.abs(w.astype(np.float64)).max(axis=others, keepdims=True)
    scale = np.where(peak > 0, peak / 127.0, 1.0)
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return q, scale.reshape(-1).astype(np.float32)


def emit_quantized(placement: Placement, group: Group) -> None:
    """Place ``group`` as quant → int8 compute → dequant ops (see the module docstring)."""
    graph = placement.graph
    stages = placement.stages(group)
    first, rest = stages[0], stages[1:]
    x, w_name = first.inputs[0], first.inputs[1]
    bias = first.inputs[2] if len(first.inputs) > 2 and first.inputs[2] else None
    weight = placement.constants.get(w_name, graph.constants.get(w_name))
    assert weight is not None
    npu_type = npu_type_of(graph, group)
    is_conv = first.op_type == "Conv"
    fmt = placement.activation_format_for(npu_type, graph.values[x].shape)
    # Output channels: conv weights on axis 0; MatMul weights on their last axis, Gemm on 0 if transB.
    w_axis = 0 if is_conv or first.attrs.get("transB", 0) else -1
    q_weight, w_scale = _weight_scales(np.asarray(weight), w_axis)
    anchor = group.anchor.name

    x_in = placement.activation(x, fmt)
    x_shape = graph.values[x].shape
    q_key, scale_key, acc_key = (
        f"{anchor}{QUANT_SUFFIX}:0",
        f"{anchor}{QUANT_SUFFIX}:scale",
        f"{group.name}:0",
    )
    quant = placement.add(
        NpuOp(
            0,
            f"{anchor}{QUANT_SUFFIX}",
            "AscendQuant",
            OpKind.COMPUTE,
            inputs=(x_in,),
            outputs=(OpOutput(q_key, TensorDesc(_INT8, fmt, x_shape, graph.values[x].dtype)),),
            original_names=(),
            stages=(Stage("AscendQuant", f"{anchor}{QUANT_SUFFIX}", (x_in.value,), (q_key, scale_key)),),
        )
    )

    w_fmt, w_groups = _weight_layout(first, q_weight, is_conv)
    w_in = placement.const_input(f"{w_name}_int8", q_weight, w_fmt, groups=w_groups)
    acc_shape = graph.values[first.outputs[0]].shape
    compute = placement.add(
        NpuOp(
            0,
            group.name,
            npu_type,
            OpKind.COMPUTE,
            inputs=(OpInput(quant.name, 0, q_key, quant.outputs[0].desc), w_in),
            outputs=(OpOutput(acc_key, TensorDesc(_INT32, fmt, acc_shape, np.dtype(np.float32))),),
            original_names=group.names,
            stages=(
                Stage(f"Quant{first.op_type}", group.name, (q_key, w_in.value), (acc_key,), first.attrs),
            ),
        )
    )

    scale_in = placement.const_input(
        f"{w_name}_deq_scale", w_scale, _plain(w_scale), device_type=np.dtype(np.float32)
    )
    dq_inputs = [OpInput(compute.name, 0, acc_key, compute.outputs[0].desc), scale_in]
    dq_args = [acc_key, scale_in.value, scale_key]
    if bias is not None:
        bias_data = placement.constants.get(bias, graph.constants.get(bias))
        assert bias_data is not None
        bias_in = placement.const_input(bias, bias_data, _plain(bias_data))
        dq_inputs.append(bias_in)
        dq_args.append(bias_in.value)
    axis = 1 if is_conv else -1
    dequant_stage = Stage(
        "AscendDequant",
        f"{anchor}{DEQUANT_SUFFIX}",
        tuple(dq_args),
        first.outputs,
        MappingProxyType({"axis": axis}),
        first.originals,
    )
    inside = {o for n in group.nodes for o in n.outputs if o}
    extra_inputs = _rest_inputs(placement, rest, inside)
    outputs = tuple(placement.output(v, fmt) for v in placement.escaping(group))
    dequant = placement.add(
        NpuOp(
            0,
            f"{anchor}{DEQUANT_SUFFIX}",
            "AscendDequant",
            OpKind.COMPUTE,
            inputs=(*dq_inputs, *extra_inputs),
            outputs=outputs,
            original_names=(),
            stages=(dequant_stage, *rest),
        )
    )
    placement.publish(dequant)


def _plain(data: np.ndarray) -> Format:
    return plain_format(data.ndim)


def _weight_layout(stage: Stage, weight: np.ndarray, is_conv: bool) -> tuple[Format, int]:
    if is_conv and weight.ndim == 4:
        groups = int(stage.attrs.get("group", 1))
        return Format.FRACTAL_Z, groups if groups > 1 else 0
    return (Format.FRACTAL_NZ if weight.ndim >= 2 else _plain(weight)), 0


def _rest_inputs(placement: Placement, rest: tuple[Stage, ...], inside: set[str]) -> list[OpInput]:
    """Inputs of the stages after the layer (bias add of a MatMul, activations) from outside."""
    found: list[OpInput] = []
    for stage in rest:
        for value in stage.inputs:
            if not value or value in inside or any(i.value == value for i in found):
                continue
            data = placement.constants.get(value, placement.graph.constants.get(value))
            if data is not None:
                found.append(placement.const_input(value, data, _plain(data)))
    return found


def quant_fusion_ops(compiled: CompiledModel) -> tuple[NpuOp, ...]:
    """The quant fusion rule's ops: each quantised layer and the float ops it stands for."""
    ops = []
    for op in compiled.tasks:
        if op.type == "AscendDequant" and op.name.endswith(DEQUANT_SUFFIX):
            compute = next(
                o for o in compiled.tasks if o.outputs and o.outputs[0].value == op.inputs[0].value
            )
            ops.append(replace(op, original_names=compute.original_names, is_multiop=True))
    return tuple(replace(op, id=i + 1) for i, op in enumerate(ops))
