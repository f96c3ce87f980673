"""Fusion passes: which ONNX nodes one NPU op computes.

Like ATC, fusion happens in two flavours, and the NPU op name tells which:

* graph fusion rewrites a pattern into one op that keeps the anchor's name — Conv+BatchNorm
  (the BN folded into the weights), MatMul+Add (bias), and the Erf-based GELU pattern;
* UB fusion appends a following activation (Relu, LeakyRelu) to an op, and the fused op's name
  is the member names concatenated (``MatMul_344LeakyRelu_347`` in a real ATC json).

A node joins a group only if its input is used by nobody else and is no graph output, so no
value the rest of the graph needs disappears inside a fused op. ``fuse=False`` gives one group
per node (the ``--no-fusion`` / close-fusion build).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from .onnx_model import OnnxGraph, OnnxNode

__all__ = ["Group", "plan_groups"]

_ACTIVATIONS = ("Relu", "LeakyRelu")


@dataclass(frozen=True, slots=True)
class Group:
    """ONNX nodes computed by one NPU op, in execution order; ``pattern`` names the fusion."""

    nodes: tuple[OnnxNode, ...]
    # "single", "gelu", or "conv"/"conv_bn"/"matmul"/"matmul_bias" with "+act" for a UB-fused activation
    pattern: str
    name: str

    @property
    def anchor(self) -> OnnxNode:
        return self.nodes[0]

    @property
    def last(self) -> OnnxNode:
        return self.nodes[-1]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n.name for n in self.nodes)


def plan_groups(graph: OnnxGraph, *, fuse: bool = True) -> list[Group]:
    """Every non-Constant node in exactly one group; groups in execution order."""
    claimed: set[str] = set()
    groups = []
    for node in graph.nodes:
        if node.op_type == "Constant" or node.name in claimed:
            continue
        group = _match(graph, node) if fuse else None
        group = group or Group((node,), "single", node.name)
        claimed.update(group.names)
        groups.append(group)
    return groups


def _match(graph: OnnxGraph, node: OnnxNode) -> Group | None:
    if node.op_type == "Conv":
        members, pattern = _conv_bn(graph, node), "conv_bn"
    elif node.op_type in ("MatMul", "Gemm"):
        members, pattern = _matmul_bias(graph, node), "matmul_bias"
    elif node.op_type == "Div":
        gelu = _gelu(graph, node)
        if gelu is None or not _inputs_ready(graph, gelu):
            return None
        return Group(tuple(gelu), "gelu", "".join(n.name for n in gelu))
    else:
        return None
    if len(members) == 1:
        pattern = "conv" if node.op_type == "Conv" else "matmul"
    name = node.name
    act = _sole_consumer(graph, members[-1])
    if act is not None and act.op_type in _ACTIVATIONS:
        members.append(act)
        pattern += "+act"
        name += act.name
    if len(members) == 1 or not _inputs_ready(graph, members):
        return None
    return Group(tuple(members), pattern, name)


def _sole_consumer(graph: OnnxGraph, node: OnnxNode) -> OnnxNode | None:
    """The only node reading ``node``'s only output, if that output is not a graph output."""
    outputs = [o for o in node.outputs if o]
    if len(outputs) != 1 or graph.is_output(outputs[0]):
        return None
    consumers = graph.consumers(outputs[0])
    return consumers[0] if len(consumers) == 1 else None


def _consts(graph: OnnxGraph, node: OnnxNode, positions: range) -> bool:
    return all(
        i >= len(node.inputs) or not node.inputs[i] or node.inputs[i] in graph.constants for i in positions
    )


def _conv_bn(graph: OnnxGraph, conv: OnnxNode) -> list[OnnxNode]:
    members = [conv]
    bn = _sole_consumer(graph, conv)
    # BN folds into the weights only when everything it would fold is known at compile time.
    if (
        bn is not None
        and bn.op_type == "BatchNormalization"
        and bn.inputs[0] == conv.outputs[0]
        and _consts(graph, conv, range(1, 3))
        and _consts(graph, bn, range(1, 5))
        and len([o for o in bn.outputs if o]) == 1
    ):
        members.append(bn)
    return members


def _matmul_bias(graph: OnnxGraph, mm: OnnxNode) -> list[OnnxNode]:
    members = [mm]
    if mm.op_type == "Gemm":
        return members
    add = _sole_consumer(graph, mm)
    if add is None or add.op_type != "Add":
        return members
    other = add.inputs[1] if add.inputs[0] == mm.outputs[0] else add.inputs[0]
    bias = graph.constants.get(other)
    columns = graph.values[mm.outputs[0]].shape[-1:]
    if bias is not None and bias.ndim == 1 and bias.shape == columns:
        members.append(add)
    return members


def _gelu(graph: OnnxGraph, div: OnnxNode) -> list[OnnxNode] | None:
    """x / √2 → Erf → + 1 → x · … → · 0.5, as PyTorch exports GELU below opset 20."""
    x = div.inputs[0]
    if not _scalar(graph, div.inputs[1], math.sqrt(2.0)):
        return None
    chain = [div]
    for op_type, check in (
        ("Erf", lambda n: True),
        ("Add", lambda n: _scalar(graph, _other(n, chain[-1]), 1.0)),
        ("Mul", lambda n: _other(n, chain[-1]) == x),
        ("Mul", lambda n: _scalar(graph, _other(n, chain[-1]), 0.5)),
    ):
        nxt = _sole_consumer(graph, chain[-1])
        if nxt is None or nxt.op_type != op_type or not check(nxt):
            return None
        chain.append(nxt)
    return chain


def _other(node: OnnxNode, producer: OnnxNode) -> str:
    """The input of a binary ``node`` that ``producer`` does not feed."""
    a, b = node.inputs[:2]
    return b if a == producer.outputs[0] else a


def _scalar(graph: OnnxGraph, value: str, expected: float) -> bool:
    data = graph.constants.get(value)
    return (
        data is not None
        and data.size == 1
        and math.isclose(float(np.asarray(data).reshape(-1)[0]), expected, rel_tol=1e-3)
    )


def _inputs_ready(graph: OnnxGraph, members: list[OnnxNode]) -> bool:
    """Every outside input of the group exists before its anchor runs (the group runs there)."""
    inside = {o for n in members for o in n.outputs}
    anchor = members[0].index
    for value in _outside_inputs(members, inside):
        producer = graph.producer(value)
        if producer is not None and producer.index > anchor and producer.op_type != "Constant":
            return False
    return True


def _outside_inputs(members: list[OnnxNode], inside: set[str]) -> Iterator[str]:
    for node in members:
        yield from (v for v in node.inputs if v and v not in inside)
