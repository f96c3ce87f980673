"""The golden side: an ONNX model run in float32 by onnxruntime, every intermediate saved as npy.

The model runs on the CPU with graph optimisations off, so that no node is fused or renamed,
with every node output added as a graph output. Each result is written as
``{node name}.{output index}.{timestamp}.npy`` (names sanitised as msaccucmp looks them up,
formats.md §2.4); graph inputs are written as ``{input name}.0.{timestamp}.npy``, the name the
ATC json gives their Data op, so an NPU op's inputs find their golden counterpart too. Node
names come from ``onnx_model.node_names``, exactly as the compiler names them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper

from dumpcmp.errors import ModelError, OutputError
from dumpcmp.outputs import atomic_path
from dumpcmp.printable import joined
from dumpcmp.proto.names import golden_file_name, name_that_fits, sanitize_golden_name

from .clock import MicroClock
from .onnx_model import OnnxGraph, analyse, load_model, node_names

__all__ = [
    "GoldenRun",
    "GoldenTensor",
    "check_inputs",
    "refuse_previous_golden",
    "run_golden",
    "shared_golden_names",
    "write_golden",
]


@dataclass(frozen=True, slots=True)
class GoldenTensor:
    """One golden tensor: output ``index`` of op ``op_name`` (a node, or a graph input)."""

    op_name: str
    index: int
    value: str
    array: np.ndarray


@dataclass(frozen=True)
class GoldenRun:
    """Every tensor of one float32 run, inputs first, then node outputs in node order."""

    graph: OnnxGraph
    tensors: tuple[GoldenTensor, ...]

    def value(self, name: str) -> np.ndarray:
        return next(t.array for t in self.tensors if t.value == name)

    def of(self, op_name: str, index: int = 0) -> np.ndarray:
        return next(t.array for t in self.tensors if t.op_name == op_name and t.index == index)


def run_golden(model: onnx.ModelProto | str | Path, inputs: Sequence[np.ndarray]) -> GoldenRun:
    """Run ``model`` on onnxruntime (CPU, no graph optimisation) and keep every intermediate."""
    import onnxruntime as ort  # heavy; only the golden side needs it

    proto = load_model(model)
    graph = analyse(proto, check_inputs(proto, inputs), simulated=False)
    exposed = _expose_all(proto, graph)
    feeds = {
        s.name: np.asarray(a).astype(s.dtype, copy=False) for s, a in zip(graph.inputs, inputs, strict=True)
    }
    try:
        session = _session(ort, exposed)
        names = [o.name for o in session.get_outputs()]
        results = dict(zip(names, session.run(names, feeds), strict=True))
    except Exception as exc:  # onnxruntime raises its own Fail / InvalidArgument types
        raise ModelError(f"onnxruntime could not run the model: {exc}") from exc
    tensors = [GoldenTensor(spec.name, 0, spec.name, feeds[spec.name]) for spec in graph.inputs]
    for node in graph.nodes:
        if node.op_type == "Constant":
            continue  # folded into weights on the NPU side: no dump to compare with
        for index, value in enumerate(node.outputs):
            if value and value in results:
                tensors.append(GoldenTensor(node.name, index, value, np.asarray(results[value])))
    return GoldenRun(graph, tuple(tensors))


def check_inputs(proto: onnx.ModelProto, inputs: Sequence[np.ndarray]) -> dict[str, tuple[int, ...]]:
    """Each graph input's shape as given; ModelError unless they are as many and as declared."""
    initializers = {t.name for t in proto.graph.initializer}
    real_inputs = [v for v in proto.graph.input if v.name not in initializers]
    if len(inputs) != len(real_inputs):
        raise ModelError(f"the model takes {len(real_inputs)} input(s), {len(inputs)} given")
    shapes = {v.name: tuple(np.shape(a)) for v, a in zip(real_inputs, inputs, strict=True)}
    for declared in real_inputs:
        _check_shape(declared, shapes[declared.name])
    return shapes


def _check_shape(value: onnx.ValueInfoProto, given: tuple[int, ...]) -> None:
    """A wrong input shape is one line naming the input, not onnx's shape inference of every node."""
    dims = value.type.tensor_type.shape.dim
    if not value.type.tensor_type.HasField("shape"):
        return  # the model declares no shape: anything goes
    fits = len(dims) == len(given) and all(
        not d.HasField("dim_value") or d.dim_value == g for d, g in zip(dims, given, strict=True)
    )
    if not fits:
        expected = ", ".join(
            str(d.dim_value) if d.HasField("dim_value") else d.dim_param or "?" for d in dims
        )
        raise ModelError(f"input {value.name!r}: the model expects shape [{expected}], given {list(given)}")


def _session(ort: Any, model: onnx.ModelProto) -> Any:
    """A CPU session without graph optimisation (so every node keeps its name and output)."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3  # onnxruntime's own warnings would drown the CLI output
    try:
        return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        if "IR version" not in str(exc):
            raise
    # A newer onnx package than onnxruntime (the helper API stamps its own IR version): the
    # lowest IR version that carries the model's opsets describes the same graph.
    lowered = onnx.ModelProto()
    lowered.CopyFrom(model)
    lowered.ir_version = helper.find_min_ir_version_for(list(model.opset_import), ignore_unknown=True)
    return ort.InferenceSession(lowered.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _expose_all(proto: onnx.ModelProto, graph: OnnxGraph) -> onnx.ModelProto:
    exposed = onnx.ModelProto()
    exposed.CopyFrom(proto)
    present = {o.name for o in exposed.graph.output}
    names = node_names(exposed.graph)
    for node, name in zip(exposed.graph.node, names, strict=True):
        if node.op_type == "Constant":
            continue
        for value in node.output:
            if not value or value in present:
                continue
            spec = graph.values.get(value)
            if spec is None:
                raise ModelError(f"{node.op_type} node {name!r}: no type for output {value!r}")
            elem = helper.np_dtype_to_tensor_dtype(spec.dtype)
            exposed.graph.output.append(helper.make_tensor_value_info(value, elem, list(spec.shape)))
            present.add(value)
    return exposed


def write_golden(
    run: GoldenRun, out_dir: str | Path, *, clock: Callable[[], int] | None = None
) -> list[Path]:
    """Write every tensor of ``run`` as a golden npy file; the paths in write order.

    Each file appears whole or not at all, so an interrupted run leaves no torn npy behind.
    """
    target = Path(out_dir)
    target.mkdir(parents=True, exist_ok=True)
    stamp = clock or MicroClock()
    written = []
    for tensor in run.tensors:
        now = stamp()
        # A name too long for the file system goes under a numeric one, as msit's dumper does
        path = name_that_fits(target, golden_file_name(tensor.op_name, tensor.index, now), f"{now}.npy")
        with atomic_path(path) as temp, temp.open("wb") as handle:
            np.save(handle, tensor.array, allow_pickle=False)
        written.append(path)
    return written


def shared_golden_names(run: GoldenRun) -> list[str]:
    """A line for each golden file stem that several ops of ``run`` write.

    Golden names keep only what msaccucmp's lookup keeps ('/' and '.' become '_'), so ops named
    ``/x/sig`` and ``_x_sig`` both write ``_x_sig.0.{ts}.npy``. They are written all the same,
    every other tensor being of use; compare leaves the tensors of such a stem uncompared.
    """
    by_stem: dict[str, list[str]] = {}
    for tensor in run.tensors:
        names = by_stem.setdefault(sanitize_golden_name(tensor.op_name), [])
        if tensor.op_name not in names:
            names.append(tensor.op_name)
    return [
        f"ops {joined(names)} share the golden file name {stem}.*.npy: "
        "compare cannot tell their files apart and leaves their tensors uncompared; rename one of them"
        for stem, names in by_stem.items()
        if len(names) > 1
    ]


def refuse_previous_golden(out_dir: Path) -> None:
    """Golden files of two runs in one directory get paired with either run's dump: refuse."""
    earlier = sum(1 for _ in out_dir.glob("*.npy")) if out_dir.is_dir() else 0
    if earlier:
        raise OutputError(
            f"{out_dir} already holds {earlier} npy file(s) of an earlier run; "
            "give a new or empty directory, or remove them first"
        )


def golden_by_value(run: GoldenRun) -> Mapping[str, np.ndarray]:
    return {t.value: t.array for t in run.tensors}
