"""The ATC-like compile: an ONNX model in, a ``CompiledModel`` (ordered NPU ops) out.

Steps, as GE takes them:

1. ``onnx_model.analyse``: supported op subset, unique node names, static shapes;
2. ``fusion.plan_groups``: which ONNX nodes each NPU op computes (off for ``--no-fusion``);
3. ``placement.Placement``: layouts, types, Data/Const/NetOutput ops and the inserted
   ``trans_Cast_N`` / ``trans_TransData_N`` ops;
4. optional int8 quantisation of chosen layers (``quantize.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import onnx

from dumpcmp.errors import ModelError

from .compiled import CompiledModel
from .fusion import Group, plan_groups
from .onnx_model import OnnxGraph, analyse, load_model
from .placement import Placement, device_dtype
from .quantize import emit_quantized

__all__ = ["CompileOptions", "check_quantize_targets", "compile_model", "device_dtype"]


@dataclass(frozen=True, slots=True)
class CompileOptions:
    """How to compile: fusion on/off, layers to quantise, shapes for symbolic input dims."""

    fusion: bool = True
    quantize: tuple[str, ...] = ()
    input_shapes: tuple[tuple[str, tuple[int, ...]], ...] = ()


def compile_model(
    model: onnx.ModelProto | str | Path, *, name: str | None = None, options: CompileOptions | None = None
) -> CompiledModel:
    """Compile ``model`` as ATC would for the simulated NPU; ModelError if it cannot be."""
    options = options or CompileOptions()
    proto = load_model(model)
    graph = analyse(proto, dict(options.input_shapes))
    model_name = name or (Path(model).stem if isinstance(model, (str, Path)) else graph.name)
    placement = Placement(graph)
    groups = plan_groups(graph, fuse=options.fusion)
    quantized = _quantize_targets(graph, groups, options.quantize)
    for group in groups:
        if group.anchor.name in quantized:
            emit_quantized(placement, group)
        else:
            placement.emit_group(group)
    output_values = placement.finish()
    return CompiledModel(
        name=model_name,
        ops=tuple(placement.ops),
        constants=MappingProxyType(placement.constants),
        inputs=graph.inputs,
        outputs=graph.outputs,
        output_values=output_values,
        fusion=options.fusion,
        quantized=tuple(quantized),
    )


def check_quantize_targets(proto: onnx.ModelProto, names: Sequence[str], *, fusion: bool = True) -> None:
    """ModelError for a layer ``compile_model`` would refuse to quantise, said before a run."""
    graph = analyse(proto)
    _quantize_targets(graph, plan_groups(graph, fuse=fusion), names)


def _quantize_targets(graph: OnnxGraph, groups: Sequence[Group], names: Sequence[str]) -> list[str]:
    """The anchors of the groups holding the layers to quantise (conv or matmul layers only)."""
    anchors = []
    for name in names:
        group = next((g for g in groups if name in g.names), None)
        if group is None:
            problem = "the model has no op of that name"
        elif not _quantizable(graph, group):
            problem = "only Conv, MatMul and Gemm layers with constant weights can be"
        else:
            anchors.append(group.anchor.name)
            continue
        raise ModelError(f"cannot quantise {name!r}: {problem}; {_quantizable_layers(graph, groups)}")
    return list(dict.fromkeys(anchors))


_LAYERS_SHOWN = 8


def _quantizable_layers(graph: OnnxGraph, groups: Sequence[Group]) -> str:
    """The layers that can be quantised, the first few by name and all counted."""
    layers = [g.anchor.name for g in groups if _quantizable(graph, g)]
    if not layers:
        return "this model has no quantisable layer"
    more = f", … ({len(layers)} in all)" if len(layers) > _LAYERS_SHOWN else ""
    return f"quantisable layers: {', '.join(layers[:_LAYERS_SHOWN])}{more}"


def _quantizable(graph: OnnxGraph, group: Group) -> bool:
    return group.anchor.op_type in ("Conv", "MatMul", "Gemm") and _const_weight(graph, group)


def _const_weight(graph: OnnxGraph, group: Group) -> bool:
    return len(group.anchor.inputs) > 1 and group.anchor.inputs[1] in graph.constants
