"""A compiled model as TorchAir shows it: FX node names, GE op names, buffer fusion, graph dumps.

TorchAir runs a PyTorch FX graph through GE. The simulator starts from the ONNX model compiled
without graph fusion (one GE op per ONNX node, plus GE's ``trans_Cast_N`` / ``trans_TransData_N``)
and names both sides the way a TorchAir run would:

* every ONNX node is one FX node, named after its aten op (``convolution``, ``add``, ``add_1`` …)
  with its aten target (``aten.convolution.default``);
* every member GE op is named after its GE type, numbered on repeats (``Conv2D``, ``Add_1``);
* automatic buffer fusion merges a GE op with the unary ops that follow it (activations,
  softmax) when each reads nothing but its predecessor's only output: one op of type
  ``AutomaticBufferFusionOp`` whose name is the member names concatenated. Its inputs are the
  first member's, its outputs the last member's, so the comparator's rule (formats.md §7.3,
  metrics.md §2) finds an FX counterpart for every tensor.

``graph_text`` writes GE's graph dump (``ge_ir.proto`` ``ModelDef`` in protobuf text format):
the original graph holds the member ops, the optimized one the fused ops and GE's inserted
conversions; member ops carry ``_fx_tensor_name`` on each output, inserted ops carry none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from dumpcmp.errors import InternalError
from dumpcmp.proto.dtypes import DataType

from .compiled import CompiledModel, NpuOp, OpKind, TensorDesc
from .onnx_model import OnnxGraph, OnnxNode

__all__ = ["FUSED_TYPE", "FxNode", "GeOp", "TorchairGraph", "fx_inputs", "graph_text"]

FUSED_TYPE = "AutomaticBufferFusionOp"

# ONNX op type -> (FX node base name, aten target), as torch.export names such nodes.
_ATEN = {
    "Conv": ("convolution", "aten.convolution.default"),
    "BatchNormalization": (
        "_native_batch_norm_legit_no_training",
        "aten._native_batch_norm_legit_no_training.default",
    ),
    "Relu": ("relu", "aten.relu.default"),
    "LeakyRelu": ("leaky_relu", "aten.leaky_relu.default"),
    "Sigmoid": ("sigmoid", "aten.sigmoid.default"),
    "Tanh": ("tanh", "aten.tanh.default"),
    "Gelu": ("gelu", "aten.gelu.default"),
    "Erf": ("erf", "aten.erf.default"),
    "Gemm": ("addmm", "aten.addmm.default"),
    "Add": ("add", "aten.add.Tensor"),
    "Sub": ("sub", "aten.sub.Tensor"),
    "Mul": ("mul", "aten.mul.Tensor"),
    "Div": ("div", "aten.div.Tensor"),
    "Pow": ("pow", "aten.pow.Tensor_Tensor"),
    "Sqrt": ("sqrt", "aten.sqrt.default"),
    "MaxPool": ("max_pool2d", "aten.max_pool2d.default"),
    "AveragePool": ("avg_pool2d", "aten.avg_pool2d.default"),
    "GlobalAveragePool": ("mean", "aten.mean.dim"),
    "Softmax": ("_softmax", "aten._softmax.default"),
    "LayerNormalization": ("native_layer_norm", "aten.native_layer_norm.default"),
    "ReduceMean": ("mean", "aten.mean.dim"),
    "Reshape": ("view", "aten.view.default"),
    "Flatten": ("view", "aten.view.default"),
    "Transpose": ("permute", "aten.permute.default"),
    "Squeeze": ("squeeze", "aten.squeeze.dim"),
    "Unsqueeze": ("unsqueeze", "aten.unsqueeze.default"),
    "Concat": ("cat", "aten.cat.default"),
    "Split": ("split", "aten.split.Tensor"),
    "Cast": ("_to_copy", "aten._to_copy.default"),
    "Identity": ("clone", "aten.clone.default"),
}
_Named = TypeVar("_Named", NpuOp, OnnxNode)

# GE types that buffer fusion appends to the op before them (unary, elementwise or row-wise).
_FOLLOWERS = frozenset({"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Gelu", "Erf", "SoftmaxV2"})


@dataclass(frozen=True, slots=True)
class FxNode:
    """The FX node standing for one ONNX node: ``{name}-{target}`` prefixes its npy files."""

    name: str
    target: str
    onnx: OnnxNode

    @property
    def key(self) -> str:
        return f"{self.name}-{self.target}"

    def tensor_name(self, io: str, index: int) -> str:
        return f"{self.key}.{io}.{index}"


@dataclass(frozen=True, slots=True)
class GeOp:
    """One dumped GE op: a single member op, a fused op, or a GE-inserted conversion."""

    name: str
    type: str
    members: tuple[NpuOp, ...]  # compiled ops, in execution order (one unless fused)

    @property
    def first(self) -> NpuOp:
        return self.members[0]

    @property
    def last(self) -> NpuOp:
        return self.members[-1]

    @property
    def fused(self) -> bool:
        return self.type == FUSED_TYPE

    def covers(self, original: str) -> bool:
        """Whether ONNX node ``original`` is computed inside this op."""
        return any(original in s.originals for m in self.members for s in m.stages)


@dataclass(frozen=True)
class TorchairGraph:
    """The TorchAir naming of one compiled model (compiled with fusion off)."""

    compiled: CompiledModel
    ge_names: Mapping[str, str]  # compiled op name -> GE member name
    fx_nodes: Mapping[str, FxNode]  # compiled op name (= ONNX node name) -> FX node
    ops: tuple[GeOp, ...]  # the dumped ops, in execution order

    @classmethod
    def build(cls, compiled: CompiledModel, graph: OnnxGraph, *, fuse: bool = True) -> TorchairGraph:
        if compiled.fusion:
            raise InternalError("TorchairGraph needs the model compiled with fusion off")
        ge_names = _numbered(
            compiled.ops, lambda op: op.type if op.is_task and op.original_names is None else ""
        )
        nodes = {n.name: n for n in graph.nodes}
        framework = [nodes[op.name] for op in compiled.tasks if op.original_names is None]
        fx_names = _numbered(framework, lambda node: _aten(node, graph)[0])
        fx_nodes = {n.name: FxNode(fx_names[n.name], _aten(n, graph)[1], n) for n in framework}
        groups = _buffer_fusion(compiled) if fuse else [[op] for op in compiled.tasks]
        ops = []
        for members in groups:
            names = [ge_names.get(m.name, m.name) for m in members]
            kind = FUSED_TYPE if len(members) > 1 else members[0].type
            ops.append(GeOp("".join(names), kind, tuple(members)))
        return cls(compiled, ge_names, fx_nodes, tuple(ops))

    def ge_name(self, op: NpuOp | str) -> str:
        name = op if isinstance(op, str) else op.name
        return self.ge_names.get(name, name)

    def op_containing(self, original: str) -> GeOp | None:
        return next((op for op in self.ops if op.covers(original)), None)


def _aten(node: OnnxNode, graph: OnnxGraph) -> tuple[str, str]:
    if node.op_type == "MatMul":
        batched = any(len(graph.values[v].shape) > 2 for v in node.inputs[:2] if v in graph.values)
        return ("bmm", "aten.bmm.default") if batched else ("mm", "aten.mm.default")
    return _ATEN[node.op_type]


def _numbered(items: Iterable[_Named], base_of: Callable[[_Named], str]) -> dict[str, str]:
    """``base``, ``base_1``, ``base_2`` … per base name, in order; items with an empty base skipped."""
    counts: dict[str, int] = {}
    names = {}
    for item in items:
        base = base_of(item)
        if not base:
            continue
        seen = counts.get(base, 0)
        counts[base] = seen + 1
        names[item.name] = base if seen == 0 else f"{base}_{seen}"
    return names


def _buffer_fusion(compiled: CompiledModel) -> list[list[NpuOp]]:
    """Tasks grouped as buffer fusion groups them: an op, then the followers reading only it."""
    readers: dict[str, int] = {}
    for op in compiled.ops:
        for source in {i.source for i in op.inputs}:
            readers[source] = readers.get(source, 0) + 1
    groups: list[list[NpuOp]] = []
    for op in compiled.tasks:
        if groups and _follows(groups[-1][-1], op, readers):
            groups[-1].append(op)
        else:
            groups.append([op])
    return groups


def _follows(before: NpuOp, op: NpuOp, readers: Mapping[str, int]) -> bool:
    framework = before.original_names is None and op.original_names is None
    return (
        framework
        and op.type in _FOLLOWERS
        and len(op.inputs) == 1
        and op.inputs[0].source == before.name
        and len(before.outputs) == 1
        and readers.get(before.name, 0) == 1
    )


def fx_inputs(node: OnnxNode, graph: OnnxGraph) -> tuple[str, ...]:
    """The values an FX node dumps as ``INPUT.k``: tensor arguments, in the order GE reads them.

    Integer constants (shapes, axes) are plain ints in FX and attributes in GE, so neither side
    dumps them; a value read twice is one GE input (``compiled`` dedupes), so FX lists it once too.
    """
    values: list[str] = []
    for value in node.inputs:
        const = graph.constants.get(value)
        if (
            not value
            or value in values
            or (const is not None and not np.issubdtype(const.dtype, np.floating))
        ):
            continue
        values.append(value)
    return tuple(values)


# ---------------------------------------------------------------------- graph dump text


def graph_text(tg: TorchairGraph, graph_name: str, *, optimized: bool) -> str:
    """GE's ``ModelDef`` text dump of the original (members) or optimized (fused) graph."""
    compiled = tg.compiled
    lines = [f"name: {_quote(graph_name)}", "graph {", f"  name: {_quote(graph_name)}"]
    trans = {op.name: op for op in compiled.ops if op.is_task and op.original_names == ()}
    fused_of = {m.name: op for op in tg.ops if op.fused for m in op.members}
    emitted: set[str] = set()
    for op in compiled.ops:
        if op.name in trans and not optimized:
            continue
        group = fused_of.get(op.name) if optimized else None
        if group is not None:
            if group.name in emitted:
                continue
            emitted.add(group.name)
            lines += _op_text(tg, group.name, FUSED_TYPE, (group.first, group.last), None, trans, fused_of)
            continue
        fx = tg.fx_nodes.get(op.name)
        lines += _op_text(tg, tg.ge_name(op), op.type, (op, op), fx, trans, fused_of if optimized else None)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _op_text(
    tg: TorchairGraph,
    name: str,
    op_type: str,
    ends: tuple[NpuOp, NpuOp],
    fx: FxNode | None,
    trans: Mapping[str, NpuOp],
    fused_of: Mapping[str, GeOp] | None,
) -> list[str]:
    """One ``op { … }``; ``fused_of`` (member name -> fused op) is given for the optimized graph."""
    first, last = ends
    optimized = fused_of is not None
    lines = ["  op {", f"    name: {_quote(name)}", f"    type: {_quote(op_type)}"]
    descs = []
    for op_input in first.inputs:
        source, index, desc = op_input.source, op_input.index, op_input.desc
        if fused_of is None:
            while source in trans:  # before optimisation GE's conversions do not exist yet
                upstream = trans[source].inputs[0]
                source, index, desc = upstream.source, upstream.index, upstream.desc
            label = tg.ge_name(source)
        else:
            fused = fused_of.get(source)
            label = fused.name if fused is not None else tg.ge_name(source)
        lines.append(f"    input: {_quote(f'{label}:{index}')}")
        descs.append(desc if optimized else _origin(desc))
    lines += [line for desc in descs for line in _desc_text("input_desc", desc, None)]
    for k, out in enumerate(last.outputs if last.kind is not OpKind.NET_OUTPUT else ()):
        attr = fx.tensor_name("OUTPUT", k) if fx is not None else None
        lines += _desc_text("output_desc", out.desc if optimized else _origin(out.desc), attr)
    lines.append("  }")
    return lines


def _origin(desc: TensorDesc) -> TensorDesc:
    """The tensor as the framework sees it: before GE chose device layouts and types."""
    return TensorDesc(desc.origin_dtype, desc.origin_format, desc.origin_shape, desc.origin_dtype)


def _desc_text(key: str, desc: TensorDesc, fx_tensor: str | None) -> list[str]:
    dims = " ".join(f"dim: {d}" for d in desc.shape)
    lines = [
        f"    {key} {{",
        f"      dtype: {DataType(desc.data_type).name}",
        f"      shape {{ {dims} }}" if dims else "      shape { }",
        f"      layout: {_quote(desc.format.name)}",
    ]
    if fx_tensor is not None:
        lines.append(f'      attr {{ key: "_fx_tensor_name" value {{ s: {_quote(fx_tensor)} }} }}')
    lines.append("    }")
    return lines


def _quote(text: str) -> str:
    """A protobuf text-format string literal (C escapes; the names here are ASCII)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'
