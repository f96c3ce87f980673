"""A simulated TorchAir run: GE dump, GE graph dumps and FX npy dump of one model (formats.md §7).

``simulate_torchair`` runs the model as ``sim run`` does (same zoo weights, seeded inputs, fp16
execution, fault plan), named the TorchAir way (``torchair_graph``), and writes::

    OUT/msprobe_ge_dump/                                   -tp of compare --mode torchair
      dynamo_original_graph_1_rank_{r}_pid_{pid}_ts_{t}.txt      members, with _fx_tensor_name
      dynamo_optimized_graph_1_rank_{r}_pid_{pid}_ts_{t}.txt     fused ops, GE conversions
      worldsize{W}_global_rank{r}/{time}/{r}/graph_1_0/1/{token}/{dump files}   (layout "new")
      {time}/0/graph_1_0/1/{token}/{dump files}                                 ("legacy", "old")
    OUT/msprobe_fx_dump/                                   -gp (the eager run, same dtype, no faults)
      worldsize{W}_global_rank{r}/graph_1/{token}/{node}-{target}.{INPUT|OUTPUT}.{k}.{ts}.npy
      data_dump/{token+1}/gm_{time}_dump/…npy                                   ("legacy": 7.1.0)
    OUT/data_dump/{token+1}/gm_{time}_dump/…npy                                 ("old": the cwd)
    OUT/fusion_off/msprobe_ge_dump/…                       with ``fusion_off_tree``: no fused ops

Dump files are binary dumps in device layouts, exactly as the offline simulator writes them.
Token ids are steps (GE from 0; the old FX layouts from 1). Faults land in the GE tree only (the
FX side is the reference); the fusion-off tree is the fault-free reference of a "fusion on vs
off" comparison. Rank r > 0 runs on inputs seeded ``seed + r`` (given inputs feed every rank).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import onnx

from dumpcmp.errors import ConfigError, ModelError, OutputError
from dumpcmp.outputs import atomic_path

from .clock import MicroClock
from .compiler import CompileOptions, compile_model
from .dump_settings import OpSelection
from .dump_writer import DumpWriter
from .executor import Execution, Executor, OpRun
from .faults import Fault, FaultPlan
from .golden import check_inputs, golden_by_value, run_golden
from .inputs import resolve_inputs
from .onnx_model import OnnxGraph, analyse
from .simulate import check_fault_targets
from .torchair_graph import GeOp, TorchairGraph, fx_inputs, graph_text
from .zoo import is_zoo_name, model_proto

__all__ = ["LAYOUTS", "TorchairSimulation", "simulate_torchair"]

LAYOUTS = ("new", "legacy", "old")
GRAPH = "graph_1"
GE_MODEL = "graph_1_0"
GE_MODEL_ID = 1


@dataclass(frozen=True)
class TorchairSimulation:
    """What ``simulate_torchair`` wrote, and where each fault landed."""

    model_name: str
    layout: str
    ranks: int
    steps: int
    ge_dump_dir: Path  # OUT/msprobe_ge_dump: the target side
    fx_dump_dir: Path  # OUT/msprobe_fx_dump (or OUT/data_dump for "old"): the golden side
    fusion_off_dir: Path | None  # OUT/fusion_off/msprobe_ge_dump, when asked for
    ge_files: tuple[Path, ...]
    fx_files: tuple[Path, ...]
    graph_files: tuple[Path, ...]
    fusion_off_files: tuple[Path, ...]
    faults: tuple[Fault, ...]
    fault_ge_ops: Mapping[str, str]  # original (ONNX) op name -> GE op it lands in
    graph: TorchairGraph = field(repr=False)


def simulate_torchair(
    model: str | Path,
    out_dir: str | Path,
    *,
    seed: int = 0,
    steps: int = 1,
    faults: Sequence[str | Fault] = (),
    inputs: Sequence[np.ndarray | str | Path] = (),
    layout: str = "new",
    ranks: int = 1,
    fusion: bool = True,
    fusion_off_tree: bool = False,
    atomic: bool = True,
    clock: Callable[[], int] | None = None,
    pid: int | None = None,
) -> TorchairSimulation:
    """Simulate ``model`` (an .onnx path or ``zoo:NAME``) as a TorchAir run into ``out_dir``.

    ``fusion=False`` dumps every member op on its own; ``clock`` (microseconds) and ``pid`` fix
    the names for byte-identical reruns. Raises a DumpcmpError subclass on user errors, before
    anything is written.
    """
    if layout not in LAYOUTS:
        raise ConfigError(f"--torchair-layout {layout!r}: expected one of {', '.join(LAYOUTS)}")
    if ranks < 1:
        raise ConfigError(f"--ranks {ranks}: needs at least one rank")
    if ranks > 1 and layout != "new":
        raise ConfigError(f"--ranks {ranks}: the {layout} TorchAir layout has no rank level; use layout new")
    out = Path(out_dir)
    _refuse_previous_run(out)
    plan = FaultPlan(tuple(f if isinstance(f, Fault) else Fault.parse(f) for f in faults), seed)
    proto = model_proto(model)
    check_fault_targets(plan, proto)
    graph = analyse(proto)
    rank_inputs = []
    for rank in range(ranks):
        arrays = resolve_inputs(graph.inputs, inputs, seed=seed + rank)
        check_inputs(proto, arrays)
        rank_inputs.append(arrays)
    name = str(model).split(":", 1)[1] if is_zoo_name(str(model)) else Path(model).stem
    compiled = compile_model(proto, name=name, options=CompileOptions(fusion=False))
    tg = TorchairGraph.build(compiled, graph, fuse=fusion)
    run = _Run(out, layout, ranks, steps, MicroClock(clock), os.getpid() if pid is None else pid, atomic)
    ge_files, fx_files, graph_files = [], [], []
    for rank, arrays in enumerate(rank_inputs):
        graph_files += run.graph_dumps(run.ge_root, tg, rank)
        ge_files += run.ge_tree(run.ge_root, tg, Executor(compiled, plan), arrays, rank)
        fx_files += run.fx_tree(proto, graph, tg, arrays, rank)
    off_files: list[Path] = []
    if fusion_off_tree:
        plain = TorchairGraph.build(compiled, graph, fuse=False)
        for rank, arrays in enumerate(rank_inputs):
            off_files += run.graph_dumps(run.off_root, plain, rank)
            off_files += run.ge_tree(run.off_root, plain, Executor(compiled), arrays, rank)
    landed = {f.op: tg.op_containing(f.op) for f in plan.faults}
    return TorchairSimulation(
        model_name=name,
        layout=layout,
        ranks=ranks,
        steps=steps,
        ge_dump_dir=run.ge_root,
        fx_dump_dir=run.fx_root,
        fusion_off_dir=run.off_root if fusion_off_tree else None,
        ge_files=tuple(ge_files),
        fx_files=tuple(fx_files),
        graph_files=tuple(graph_files),
        fusion_off_files=tuple(off_files),
        faults=plan.faults,
        fault_ge_ops={k: v.name for k, v in landed.items() if v is not None},
        graph=tg,
    )


def _refuse_previous_run(out: Path) -> None:
    found = [
        p.name
        for p in (out / "msprobe_ge_dump", out / "msprobe_fx_dump", out / "data_dump", out / "fusion_off")
        if p.is_dir() and any(p.iterdir())
    ]
    if found:
        raise OutputError(
            f"{out} already holds a TorchAir simulation ({', '.join(found)}); "
            "give a new or empty directory, or remove the old run first"
        )


@dataclass
class _Run:
    """Where and when one simulation writes: the roots, the clock, the writers."""

    out: Path
    layout: str
    ranks: int
    steps: int
    clock: MicroClock
    pid: int
    atomic: bool

    def __post_init__(self) -> None:
        self.time_dir = _utc(self.clock.peek()).strftime("%Y%m%d%H%M%S")

    @property
    def ge_root(self) -> Path:
        return self.out / "msprobe_ge_dump"

    @property
    def off_root(self) -> Path:
        return self.out / "fusion_off" / "msprobe_ge_dump"

    @property
    def fx_root(self) -> Path:
        return self.out / "data_dump" if self.layout == "old" else self.out / "msprobe_fx_dump"

    def _rank_dir(self, root: Path, rank: int) -> Path:
        return root / f"worldsize{self.ranks}_global_rank{rank}" if self.layout == "new" else root

    def graph_dumps(self, root: Path, tg: TorchairGraph, rank: int) -> list[Path]:
        written = []
        for kind, optimized in (("original", False), ("optimized", True)):
            target = root / f"dynamo_{kind}_{GRAPH}_rank_{rank}_pid_{self.pid}_ts_{self.clock()}.txt"
            with atomic_path(target) as temp:
                temp.write_text(graph_text(tg, GRAPH, optimized=optimized), encoding="utf-8")
            written.append(target)
        return written

    def ge_tree(
        self, root: Path, tg: TorchairGraph, executor: Executor, inputs: Sequence[np.ndarray], rank: int
    ) -> list[Path]:
        model_dir = self._rank_dir(root, rank) / self.time_dir / str(rank) / GE_MODEL / str(GE_MODEL_ID)
        writer = DumpWriter(atomic=self.atomic)
        for step in range(self.steps):
            runs = {r.op.name: r for r in executor.run(list(inputs), step=step).runs}
            for task_id, op in enumerate(tg.ops, start=1):
                run = _ge_run(tg, op, runs)
                selection = OpSelection(tuple(range(len(run.inputs))), tuple(range(len(run.outputs))))
                writer.write(run, selection, model_dir / str(step), task_id=task_id, stream_id=rank,
                             timestamp=self.clock())  # fmt: skip
        return list(writer.written)

    def fx_tree(
        self,
        proto: onnx.ModelProto,
        graph: OnnxGraph,
        tg: TorchairGraph,
        inputs: Sequence[np.ndarray],
        rank: int,
    ) -> list[Path]:
        # TorchAir's FX dump is the eager run of the same model in its own dtype, not a float32
        # reference: the fault-free device execution, with the framework's values where the
        # device run has none (a value GE renamed or folded).
        values = dict(golden_by_value(run_golden(proto, list(inputs))))
        values.update(_device_values(Executor(tg.compiled).run(list(inputs))))
        written = []
        for step in range(self.steps):
            directory = self._fx_token_dir(rank, step)
            for op in tg.compiled.tasks:
                fx = tg.fx_nodes.get(op.name)
                if fx is None:
                    continue
                tensors = [("INPUT", k, v) for k, v in enumerate(fx_inputs(fx.onnx, graph))]
                tensors += [("OUTPUT", k, v) for k, v in enumerate(o for o in fx.onnx.outputs if o)]
                for io, k, value in tensors:
                    array = values[value] if value in values else graph.constants[value]
                    target = directory / f"{fx.tensor_name(io, k)}.{_fx_stamp(self.clock())}.npy"
                    with atomic_path(target) as temp, temp.open("wb") as handle:
                        np.save(handle, np.asarray(array), allow_pickle=False)
                    written.append(target)
        return written

    def _fx_token_dir(self, rank: int, step: int) -> Path:
        if self.layout == "new":
            return self._rank_dir(self.fx_root, rank) / GRAPH / str(step)
        base = self.fx_root / "data_dump" if self.layout == "legacy" else self.fx_root
        return base / str(step + 1) / f"gm_{self.time_dir}_dump"


def _device_values(execution: Execution) -> dict[str, np.ndarray]:
    """Every value a device run computed or read, by its graph value name."""
    values: dict[str, np.ndarray] = {}
    for run in execution.runs:
        values.update(zip((i.value for i in run.op.inputs), run.inputs, strict=True))
        values.update(zip((o.value for o in run.op.outputs), run.outputs, strict=True))
    return values


def _ge_run(tg: TorchairGraph, op: GeOp, runs: Mapping[str, OpRun]) -> OpRun:
    """The dump content of GE op ``op``: its first member's inputs, its last member's outputs."""
    first, last = runs[op.first.name], runs[op.last.name]
    outputs = tuple(replace(o, origin_name=tg.ge_name(o.origin_name)) for o in op.last.outputs)
    npu_op = replace(op.first, name=op.name, type=op.type, outputs=outputs)
    if len(first.inputs) != len(npu_op.inputs) or len(last.outputs) != len(outputs):
        raise ModelError(f"GE op {op.name}: members do not chain")  # a broken fusion grouping
    return OpRun(npu_op, first.inputs, last.outputs)


def _utc(micros: int) -> datetime:
    return datetime.fromtimestamp(micros / 1e6, tz=timezone.utc)


def _fx_stamp(micros: int) -> str:
    """FX dump file timestamps: ``YYYYMMDDhhmmss`` and six digits of microseconds."""
    return _utc(micros).strftime("%Y%m%d%H%M%S") + f"{micros % 1_000_000:06d}"
