"""An ONNX model as the simulator sees it: checked, named, shaped and with its constants decoded.

Both sides of a simulation start here — the ATC-like compiler and the golden runner — so that
they agree on node names. ONNX allows empty and repeated node names; CANN and the golden npy
files need unique ones, so an unnamed node becomes ``{op_type}_{index}`` (ATC does the same)
and a repeated name gets a ``_{index}`` suffix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from dumpcmp.errors import ModelError
from dumpcmp.proto.sniff import what_is

__all__ = [
    "MAX_OPSET",
    "MIN_OPSET",
    "SUPPORTED_OPS",
    "OnnxGraph",
    "OnnxNode",
    "ValueSpec",
    "analyse",
    "load_model",
    "node_names",
]

MIN_OPSET, MAX_OPSET = 13, 21

SUPPORTED_OPS = frozenset(
    {
        "Conv", "BatchNormalization", "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Gelu", "Erf",
        "Gemm", "MatMul", "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "MaxPool", "AveragePool",
        "GlobalAveragePool", "Softmax", "LayerNormalization", "ReduceMean", "Reshape", "Flatten",
        "Transpose", "Squeeze", "Unsqueeze", "Concat", "Split", "Cast", "Constant", "Identity",
    }
)  # fmt: skip

_DEFAULT_DOMAINS = ("", "ai.onnx")


@dataclass(frozen=True, slots=True)
class ValueSpec:
    """A tensor's static shape and numpy dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype


@dataclass(frozen=True, slots=True)
class OnnxNode:
    """One ONNX node with a unique name and decoded attributes."""

    index: int
    name: str
    op_type: str
    inputs: tuple[str, ...]  # "" marks an absent optional input
    outputs: tuple[str, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class OnnxGraph:
    """What the compiler and the golden runner need of a model, with every shape static."""

    name: str
    opset: int
    nodes: tuple[OnnxNode, ...]
    inputs: tuple[ValueSpec, ...]  # real inputs: initializers are not listed here
    outputs: tuple[ValueSpec, ...]
    constants: Mapping[str, np.ndarray]  # initializers and Constant outputs, by value name
    values: Mapping[str, ValueSpec]  # every value the graph computes or is given
    _producers: dict[str, OnnxNode] = field(init=False, repr=False, compare=False)
    _consumers: dict[str, tuple[OnnxNode, ...]] = field(init=False, repr=False, compare=False)
    _by_name: dict[str, OnnxNode] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        consumers: dict[str, list[OnnxNode]] = {}
        for node in self.nodes:
            for name in dict.fromkeys(i for i in node.inputs if i):
                consumers.setdefault(name, []).append(node)
        object.__setattr__(self, "_producers", {o: n for n in self.nodes for o in n.outputs if o})
        object.__setattr__(self, "_consumers", {k: tuple(v) for k, v in consumers.items()})
        object.__setattr__(self, "_by_name", {n.name: n for n in self.nodes})

    def producer(self, value: str) -> OnnxNode | None:
        return self._producers.get(value)

    def consumers(self, value: str) -> tuple[OnnxNode, ...]:
        return self._consumers.get(value, ())

    def node(self, name: str) -> OnnxNode | None:
        return self._by_name.get(name)

    def is_output(self, value: str) -> bool:
        return any(o.name == value for o in self.outputs)


def load_model(source: str | Path | onnx.ModelProto) -> onnx.ModelProto:
    """Read an .onnx file (ModelError if it cannot be read or is not ONNX)."""
    if isinstance(source, onnx.ModelProto):
        return source
    path = Path(source)
    if path.suffix.lower() == ".om":
        raise ModelError(
            f"{path}: the simulated NPU cannot load an offline model (.om); give the .onnx it was built from"
        )
    if path.exists() and not path.is_file():  # a directory, or /dev/zero read until memory ran out
        raise ModelError(f"{path}: not a regular file, not an ONNX model (.onnx)")
    if path.is_file():
        kind = what_is(path)
        if kind is not None:  # onnx would read a .json as a ModelProto in JSON, or say why not in lines
            raise ModelError(f"{path}: {kind}, not an ONNX model (.onnx)")
    try:
        return onnx.load(str(path), format="protobuf")
    except FileNotFoundError:
        raise ModelError(f"{path}: no such model file") from None
    except Exception as exc:  # onnx raises DecodeError, OSError, ValueError...
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"{path}: not a readable ONNX model ({reason})") from exc


def node_names(graph: onnx.GraphProto) -> list[str]:
    """Unique names for the nodes of ``graph``, in node order (see the module docstring)."""
    given = {n.name for n in graph.node if n.name}
    seen: set[str] = set()
    names = []
    for index, node in enumerate(graph.node):
        name = node.name if node.name and node.name not in seen else f"{node.name or node.op_type}_{index}"
        while name in seen or (name != node.name and name in given):
            name = f"{name}_{index}"
        seen.add(name)
        names.append(name)
    return names


def analyse(
    model: onnx.ModelProto,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    *,
    simulated: bool = True,
) -> OnnxGraph:
    """Check ``model`` against the subset the simulated NPU runs (``simulated``; a golden run on
    onnxruntime takes any op and opset it has) and give every value a static shape.

    Symbolic or unknown input dimensions take ``input_shapes[name]`` or 1.
    """
    opset = _opset(model, simulated=simulated)
    if simulated:
        _check_ops(model.graph)
    model = _with_static_inputs(model, input_shapes or {})
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    except Exception as exc:  # InferenceError, ValidationError
        raise ModelError(f"shape inference failed: {exc}") from exc
    graph = inferred.graph
    names = node_names(graph)
    constants: dict[str, np.ndarray] = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    nodes = []
    for index, (proto, name) in enumerate(zip(graph.node, names, strict=True)):
        attrs = {a.name: _attr_value(a) for a in proto.attribute}
        node = OnnxNode(
            index, name, proto.op_type, tuple(proto.input), tuple(proto.output), MappingProxyType(attrs)
        )
        if proto.op_type == "Constant":
            constants[proto.output[0]] = _constant_value(node)
        nodes.append(node)
    values = _value_specs(graph, constants)
    for node in nodes:
        for out in node.outputs:
            if out and out not in values:
                raise ModelError(
                    f"{node.op_type} node {node.name!r}: cannot infer a static shape for output {out!r}"
                )
    initializers = {t.name for t in graph.initializer}
    inputs = tuple(values[v.name] for v in graph.input if v.name not in initializers)
    outputs = tuple(values[v.name] for v in graph.output)
    return OnnxGraph(
        name=graph.name or "model",
        opset=opset,
        nodes=tuple(nodes),
        inputs=inputs,
        outputs=outputs,
        constants=MappingProxyType(constants),
        values=MappingProxyType(values),
    )


def _opset(model: onnx.ModelProto, *, simulated: bool) -> int:
    versions = [o.version for o in model.opset_import if o.domain in _DEFAULT_DOMAINS]
    if not versions:
        raise ModelError("the model imports no default-domain (ai.onnx) opset")
    version = versions[0]
    if simulated and not MIN_OPSET <= version <= MAX_OPSET:
        raise ModelError(
            f"opset {version} is not supported; the simulator takes opsets {MIN_OPSET}–{MAX_OPSET}"
        )
    return version


def _check_ops(graph: onnx.GraphProto) -> None:
    names = node_names(graph)
    bad = [
        f"{_qualified(node)} (node {name!r})"
        for node, name in zip(graph.node, names, strict=True)
        if node.domain not in _DEFAULT_DOMAINS or node.op_type not in SUPPORTED_OPS
    ]
    if bad:
        shown = ", ".join(bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
        raise ModelError(f"unsupported op{'s' if len(bad) > 1 else ''}: {shown}")


def _qualified(node: onnx.NodeProto) -> str:
    return node.op_type if node.domain in _DEFAULT_DOMAINS else f"{node.domain}.{node.op_type}"


def _with_static_inputs(model: onnx.ModelProto, shapes: Mapping[str, Sequence[int]]) -> onnx.ModelProto:
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    initializers = {t.name for t in fixed.graph.initializer}
    known = {v.name for v in fixed.graph.input}
    unknown = sorted(set(shapes) - known)
    if unknown:
        raise ModelError(
            f"no graph input named {', '.join(map(repr, unknown))}; inputs are {', '.join(sorted(known))}"
        )
    for value in fixed.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        if value.name in shapes:
            tensor.shape.Clear()
            for dim in shapes[value.name]:
                tensor.shape.dim.add().dim_value = int(dim)
            continue
        if not tensor.HasField("shape"):
            raise ModelError(
                f"graph input {value.name!r} has no declared shape; give one with an input shape"
            )
        for declared in tensor.shape.dim:
            if not declared.HasField("dim_value") or declared.dim_value <= 0:
                declared.Clear()
                declared.dim_value = 1
    return fixed


def _value_specs(graph: onnx.GraphProto, constants: Mapping[str, np.ndarray]) -> dict[str, ValueSpec]:
    specs = {name: ValueSpec(name, tuple(int(d) for d in a.shape), a.dtype) for name, a in constants.items()}
    for info in [*graph.input, *graph.value_info, *graph.output]:
        spec = _spec(info)
        if spec is not None:
            specs.setdefault(spec.name, spec)
    return specs


def _spec(info: onnx.ValueInfoProto) -> ValueSpec | None:
    tensor = info.type.tensor_type
    if not tensor.elem_type or not tensor.HasField("shape"):
        return None
    dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tensor.shape.dim]
    if any(d < 0 for d in dims):
        return None
    return ValueSpec(info.name, tuple(dims), np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type)))


def _attr_value(attr: onnx.AttributeProto) -> Any:
    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, list):
        return [v.decode("utf-8") if isinstance(v, bytes) else v for v in value]
    return value


def _constant_value(node: OnnxNode) -> np.ndarray:
    attrs = node.attrs
    if "value" in attrs:
        return np.asarray(attrs["value"])
    simple = {
        "value_float": np.float32,
        "value_floats": np.float32,
        "value_int": np.int64,
        "value_ints": np.int64,
    }
    for key, dtype in simple.items():
        if key in attrs:
            return np.asarray(attrs[key], dtype=dtype)
    raise ModelError(f"Constant node {node.name!r}: only tensor, float(s) and int(s) values are supported")
