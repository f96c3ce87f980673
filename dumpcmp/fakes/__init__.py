"""The simulated NPU: ONNX models compiled like ATC, run in fp16, dumped like the real runtime.

``simulate()`` is the one-call entry point; ``SimulatedAcl`` is the runtime backend the agent
drives like real AscendCL. Names are imported lazily: ``import dumpcmp.fakes`` alone loads
neither onnx nor onnxruntime (the C stub of libascendcl lives beside this file).
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
    "run_golden",
    "simulate",
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
    "run_golden": "golden",
    "simulate": "simulate",
    "write_atc_json": "atc_json",
    "write_golden": "golden",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
