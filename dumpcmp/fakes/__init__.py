"""The simulated NPU: ONNX models compiled like ATC, run in fp16, dumped like the real runtime.

``SimulatedAcl`` is the runtime backend the agent drives like real AscendCL;
``prepare_simulation``/``finish_simulation`` write what surrounds a run (model, acl.json, golden,
ATC json), and ``dumpcmp.commands.sim.simulate`` runs the model between them. Names are imported
lazily: ``import dumpcmp.fakes`` alone loads neither onnx nor onnxruntime (the C stub of
libascendcl lives beside this file).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "CompileOptions",
    "CompiledModel",
    "Executor",
    "Fault",
    "FaultKind",
    "FaultPlan",
    "SimulatedAcl",
    "SimulationResult",
    "compile_model",
    "finish_simulation",
    "prepare_simulation",
    "run_golden",
    "write_atc_json",
    "write_golden",
]

_HOMES = {
    "CompileOptions": "compiler",
    "CompiledModel": "compiled",
    "Executor": "executor",
    "Fault": "faults",
    "FaultKind": "faults",
    "FaultPlan": "faults",
    "SimulatedAcl": "npu",
    "SimulationResult": "simulate",
    "compile_model": "compiler",
    "finish_simulation": "simulate",
    "prepare_simulation": "simulate",
    "run_golden": "golden",
    "write_atc_json": "atc_json",
    "write_golden": "golden",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
