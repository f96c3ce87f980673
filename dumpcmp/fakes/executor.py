"""fp16 execution of a compiled model, one NPU op at a time, with fault injection.

Each op runs its stages with the numpy kernels; every stage result is rounded to its device
type (fp16 for floating tensors) before the next stage or op reads it, which is where the
simulated NPU departs from the float32 golden run. The executor hands each op's logical input
and output tensors to a callback as soon as the op has run — the dump writer turns them into
device layouts — so dump files appear in execution order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from dumpcmp.errors import ModelError

from .compiled import CompiledModel, NpuOp, Stage
from .faults import FaultPlan, apply_fault
from .kernels import KERNELS, Kernel
from .placement import device_dtype
from .quantize import QUANT_KERNELS

__all__ = ["Execution", "Executor", "OpRun"]


@dataclass(frozen=True, slots=True)
class OpRun:
    """One op as executed: its logical input and output tensors, in their device types."""

    op: NpuOp
    inputs: tuple[np.ndarray, ...]
    outputs: tuple[np.ndarray, ...]


@dataclass(frozen=True, slots=True)
class Execution:
    """A whole run: every op that ran (when kept) and the graph outputs."""

    runs: tuple[OpRun, ...]
    outputs: tuple[np.ndarray, ...]

    def run_of(self, op_name: str) -> OpRun:
        return next(r for r in self.runs if r.op.name == op_name)


class Executor:
    """Runs one ``CompiledModel``; ``extra_kernels`` adds device-only ops (quantisation)."""

    def __init__(
        self,
        compiled: CompiledModel,
        faults: FaultPlan | None = None,
        extra_kernels: Mapping[str, Kernel] | None = None,
    ) -> None:
        self.compiled = compiled
        self.faults = faults or FaultPlan()
        self.kernels: dict[str, Kernel] = {**KERNELS, **QUANT_KERNELS, **(extra_kernels or {})}
        missing = [f.op for f in self.faults.faults if compiled.containing(f.op) is None]
        if missing:
            known = ", ".join(compiled.original_names()[:8])
            raise ModelError(
                f"cannot inject a fault at {', '.join(map(repr, missing))}: no op of the model computes it "
                f"(ops include {known}, …)"
            )

    def fault_ops(self) -> dict[str, str]:
        """Original op name → the NPU op the fault lands in."""
        found = {name: self.compiled.containing(name) for name in self.faults.targets}
        return {name: op.name for name, op in found.items() if op is not None}

    def run(
        self,
        inputs: Sequence[np.ndarray],
        *,
        step: int = 0,
        on_op: Callable[[OpRun], None] | None = None,
        keep: bool = True,
    ) -> Execution:
        """Execute once; ``on_op`` sees every task right after it ran, in execution order."""
        specs = self.compiled.inputs
        if len(inputs) != len(specs):
            raise ModelError(f"the model takes {len(specs)} input(s), {len(inputs)} given")
        env: dict[str, np.ndarray] = dict(self.compiled.constants)
        for spec, array in zip(specs, inputs, strict=True):
            data = np.asarray(array)
            if tuple(data.shape) != spec.shape:
                raise ModelError(
                    f"input {spec.name!r} has shape {list(data.shape)}, the model wants {list(spec.shape)}"
                )
            env[spec.name] = data.astype(spec.dtype, copy=False)
        runs = []
        for op in self.compiled.tasks:
            run = self._run_op(op, env, step)
            if on_op is not None:
                on_op(run)
            if keep:
                runs.append(run)
        outputs = tuple(env[key] for key in self.compiled.output_values)
        return Execution(tuple(runs), outputs)

    def _run_op(self, op: NpuOp, env: dict[str, np.ndarray], step: int) -> OpRun:
        wanted = {out.value: out.desc.dtype for out in op.outputs}
        for stage in op.stages:
            args = [env[v] if v else None for v in stage.inputs]
            try:
                # The device computes through inf and NaN without complaint; so does the simulator.
                with np.errstate(all="ignore"):
                    results = self.kernels[stage.op_type](args, stage.attrs)
                    results = self._faulted(stage, results, args, step)
            except (ValueError, IndexError, KeyError, TypeError) as exc:
                raise ModelError(
                    f"{stage.op_type} {stage.name!r} in NPU op {op.name!r} failed: {exc}"
                ) from exc
            for value, result in zip(stage.outputs, results, strict=False):
                if value:
                    env[value] = _to_device_type(result, wanted.get(value))
        return OpRun(
            op,
            tuple(env[i.value] for i in op.inputs),
            tuple(env[o.value] for o in op.outputs),
        )

    def _faulted(
        self, stage: Stage, results: tuple[np.ndarray, ...], args: list[np.ndarray | None], step: int
    ) -> tuple[np.ndarray, ...]:
        faults = self.faults.at(stage.originals)
        if not faults:
            return results
        first, *rest = results
        for fault in faults:
            first = apply_fault(fault, first, args[0] if args else None, seed=self.faults.seed, step=step)
        return (first, *rest)


def _to_device_type(result: np.ndarray, wanted: np.dtype | None) -> np.ndarray:
    target = wanted if wanted is not None else device_dtype(result.dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.ascontiguousarray(result).astype(target, copy=False)
