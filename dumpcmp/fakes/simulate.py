"""A simulation's files around one run of the model: everything a comparison needs.

The run itself is not here: ``dumpcmp sim run`` (``dumpcmp.commands.sim.simulate``) runs the model
through the agent's runtime over the simulated NPU, with the same AscendCL call sequence as a
real box. This module prepares what that run needs and writes what follows from it::

    OUT/{model}.onnx             the model simulated (zoo models are written here)
    OUT/acl.json                 the dump config used (unless the caller gave one)
    OUT/npu/                     the dump path: {time}/{device}/{model}/{model_id}/{step}/…
    OUT/golden/                  {op}.{output}.{timestamp}.npy from onnxruntime in float32
    OUT/fusion_rule.json         the ATC network-wide json of the compiled model
    OUT/quant_fusion_rule.json   with quantised layers: the quant fusion rule (-q)

``prepare_simulation`` checks every input and writes the model and acl.json;
``finish_simulation`` writes the ATC json and the golden run once the dump exists.
An OUT that already holds a simulation is refused before anything runs: a second run's golden
files beside the first run's would be paired with either run's dump, and blame the wrong op.
This module does not import ``dumpcmp.agent``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from dumpcmp.acl_config import AclConfig, DumpTarget
from dumpcmp.acl_config import load as load_config
from dumpcmp.errors import InternalError, ModelError, OutputError
from dumpcmp.outputs import atomic_path

from .atc_json import write_atc_json
from .compiled import CompiledModel
from .compiler import check_quantize_targets
from .faults import Fault, FaultPlan
from .golden import check_inputs, run_golden, shared_golden_names, write_golden
from .inputs import resolve_inputs
from .npu import SimulatedAcl
from .onnx_model import analyse
from .quantize import quant_fusion_ops
from .zoo import is_zoo_name, model_proto

__all__ = [
    "SimulationResult",
    "SimulationSetup",
    "check_fault_targets",
    "finish_simulation",
    "prepare_simulation",
]


@dataclass(frozen=True)
class SimulationSetup:
    """Everything the run needs, checked, with the model file and acl.json written."""

    out_dir: Path
    model_path: Path
    acl_config: Path
    npu_dump_dir: Path  # the dump_path handed to the runtime
    inputs: tuple[np.ndarray, ...] = field(repr=False)  # fed to every step and to the golden run
    steps: int
    device: int
    faults: FaultPlan
    quantized: bool
    backend_options: Mapping[str, Any]  # for open_backend("sim", **backend_options)
    proto: onnx.ModelProto = field(repr=False)
    clock: Callable[[], int] | None = field(default=None, repr=False)


@dataclass(frozen=True)
class SimulationResult:
    """What a simulation wrote, and where each injected fault landed."""

    model_name: str
    model_path: Path
    out_dir: Path
    npu_dump_dir: Path  # the dump_path handed to the runtime
    run_dir: Path | None  # {dump_path}/{time}/{device}/{model}/{model_id}; None if nothing was dumped
    golden_dir: Path
    fusion_rule: Path
    quant_rule: Path | None
    acl_config: Path
    fault_npu_ops: Mapping[str, str]  # original (ONNX) op name -> the NPU op the fault landed in
    faults: tuple[Fault, ...]
    steps: int
    dump_files: tuple[Path, ...]
    golden_files: tuple[Path, ...]
    compiled: CompiledModel = field(repr=False)
    outputs: tuple[np.ndarray, ...] = field(repr=False)  # the NPU outputs of the last step
    golden_warnings: tuple[str, ...] = ()  # golden file names several ops share


def prepare_simulation(
    model: str | Path,
    out_dir: str | Path,
    *,
    seed: int = 0,
    steps: int = 1,
    faults: Sequence[str | Fault] = (),
    no_fusion: bool = False,
    quantize: Sequence[str] = (),
    acl_config: str | Path | None = None,
    inputs: Sequence[np.ndarray | str | Path] = (),
    atomic: bool = False,
    clock: Callable[[], int] | None = None,
    device: int = 0,
) -> SimulationSetup:
    """Check everything about simulating ``model`` (an .onnx path or ``zoo:NAME``) into ``out_dir``.

    Without ``inputs`` the inputs are random with the model's declared shapes (seeded); the
    same inputs feed every step and the golden run. ``faults`` are ``OP=KIND[:AMOUNT]`` specs
    (or ``Fault``s) naming original ONNX ops. The run is on ``device`` (its dump in
    ``{dump_path}/{time}/{device}/…``, as on a box with that device). Raises a DumpcmpError
    subclass on user errors, before anything is written into ``out_dir``.
    """
    out = Path(out_dir)
    _refuse_previous_run(out)
    plan = FaultPlan(tuple(f if isinstance(f, Fault) else Fault.parse(f) for f in faults), seed)
    proto = model_proto(model)
    check_fault_targets(plan, proto)
    check_quantize_targets(proto, quantize, fusion=not no_fusion)
    arrays = resolve_inputs(analyse(proto).inputs, inputs, seed=seed)
    check_inputs(proto, arrays)
    given_config = None if acl_config is None else load_config(acl_config)  # names every broken rule
    out.mkdir(parents=True, exist_ok=True)
    model_path = _model_file(model, proto, out)
    config_path, dump_dir = _dump_config(acl_config, given_config, out, model_path.stem)
    if device < 0:
        raise ModelError(f"device {device}: a device id is 0 or more")
    options = {
        "device_count": device + 1,
        "fusion": not no_fusion,
        "quantize": tuple(quantize),
        "faults": plan,
        "seed": seed,
        "atomic_writes": atomic,
        "clock": clock,
    }
    return SimulationSetup(
        out_dir=out,
        model_path=model_path,
        acl_config=config_path,
        npu_dump_dir=dump_dir,
        inputs=tuple(arrays),
        steps=steps,
        device=device,
        faults=plan,
        quantized=bool(quantize),
        backend_options=options,
        proto=proto,
        clock=clock,
    )


def finish_simulation(
    setup: SimulationSetup, backend: object, outputs: Sequence[np.ndarray], dump_files: Sequence[Path]
) -> SimulationResult:
    """Write the ATC json and the golden run of the model ``backend`` (a ``SimulatedAcl``) ran."""
    if not isinstance(backend, SimulatedAcl) or len(backend.loaded) != 1:
        raise InternalError("finish_simulation needs the SimulatedAcl that ran the model, once")
    (loaded,) = backend.loaded
    compiled = loaded.compiled
    out = setup.out_dir
    fusion_rule = write_atc_json(compiled, out / "fusion_rule.json")
    quant_rule = None
    if setup.quantized:
        quant_rule = write_atc_json(compiled, out / "quant_fusion_rule.json", quant_fusion_ops(compiled))
    golden_dir = out / "golden"
    golden_run = run_golden(setup.proto, list(setup.inputs))
    golden_files = write_golden(golden_run, golden_dir, clock=setup.clock)
    return SimulationResult(
        model_name=compiled.name,
        model_path=setup.model_path,
        out_dir=out,
        npu_dump_dir=setup.npu_dump_dir,
        run_dir=loaded.dump_dir if dump_files else None,
        golden_dir=golden_dir,
        fusion_rule=fusion_rule,
        quant_rule=quant_rule,
        acl_config=setup.acl_config,
        fault_npu_ops=loaded.fault_ops,
        faults=setup.faults.faults,
        steps=setup.steps,
        dump_files=tuple(dump_files),
        golden_files=tuple(golden_files),
        compiled=compiled,
        outputs=tuple(outputs),
        golden_warnings=tuple(shared_golden_names(golden_run)),
    )


def _refuse_previous_run(out: Path) -> None:
    found = [p.name for p in (out / "npu", out / "golden") if p.is_dir() and any(p.iterdir())]
    found += [p.name for p in (out / "fusion_rule.json", out / "quant_fusion_rule.json") if p.exists()]
    if found:
        raise OutputError(
            f"{out} already holds a simulation ({', '.join(found)}); "
            "give a new or empty directory, or remove the old run first"
        )


def check_fault_targets(plan: FaultPlan, proto: onnx.ModelProto) -> None:
    """A fault names an ONNX node; a misspelt one is refused here, before anything is written."""
    nodes = [node.name for node in proto.graph.node]
    missing = [op for op in plan.targets if op not in nodes]
    if missing:
        raise ModelError(
            f"cannot inject a fault at {', '.join(map(repr, missing))}: no op of the model has that name "
            f"(ops include {', '.join(nodes[:8])}, …)"
        )


def _model_file(model: str | Path, proto: onnx.ModelProto, out: Path) -> Path:
    """The .onnx to simulate; a zoo model is saved into ``out`` so the golden run reads the same bytes."""
    text = str(model)
    if not is_zoo_name(text):
        return Path(model)
    target = out / f"{text.split(':', 1)[1]}.onnx"
    with atomic_path(target) as temp:
        onnx.save(proto, str(temp))
    return target


def _dump_config(
    acl_config: str | Path | None, given: AclConfig | None, out: Path, model_name: str
) -> tuple[Path, Path]:
    """The acl.json to use (``given``, read from ``acl_config``, or a new one) and its dump path."""
    if acl_config is not None and given is not None:
        dump = given.dump
        dump_path = dump.dump_path if dump is not None and dump.dump_path else "."
        return Path(acl_config), Path(dump_path).resolve()
    dump_dir = (out / "npu").resolve()
    dump_dir.mkdir(parents=True, exist_ok=True)
    config = AclConfig.build(str(dump_dir), targets=[DumpTarget(model_name)], mode="all", op_switch="off")
    return config.write(out / "acl.json"), dump_dir
