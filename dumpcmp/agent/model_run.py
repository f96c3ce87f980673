"""``run_model``: run one model under a dump config, the way a real box does, on any backend.

The sequence is ``AclRuntime.dump_session`` around aclmdlLoadFromFile and ``steps`` aclmdlExecute
calls: aclInit → aclrtSetDevice → aclmdlInitDump → aclmdlSetDump → load → execute × steps →
aclrtSynchronizeDevice → aclmdlFinalizeDump → aclmdlUnload → aclrtResetDevice → aclFinalize.
``dumpcmp sim run``, ``agent run --sim`` and ``agent run`` on hardware all come through here; only
the runtime's backend differs, and it is chosen by the command.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dumpcmp.agent.backend import DumpFileReporter
from dumpcmp.agent.runtime import AclRuntime

__all__ = ["ModelRun", "run_model"]


@dataclass(frozen=True, slots=True)
class ModelRun:
    """What one run produced."""

    outputs: tuple[tuple[np.ndarray, ...], ...]  # per step, as the backend returns them
    dump_files: tuple[Path, ...]  # files written, when the backend knows (sim); () otherwise


def run_model(
    runtime: AclRuntime,
    model: Path,
    inputs: Sequence[np.ndarray],
    acl_config: Path,
    *,
    device: int = 0,
    steps: int = 1,
    on_load: Callable[[int], None] | None = None,
    on_step: Callable[[int], None] | None = None,
) -> ModelRun:
    """Load ``model`` on ``device`` with the dump of ``acl_config`` on, execute it ``steps`` times.

    The same ``inputs`` feed every step; ``on_load(model_id)`` is called once the model is loaded,
    before it executes; ``on_step(i)`` after step ``i`` has run (its dump files are complete
    after aclmdlFinalizeDump, on the simulator as on hardware: a dump thread writes them). Every
    AscendCL call happens on the calling thread. Raises ``AclError`` (or ``ConfigError`` for an
    aclInit config that configures the dump itself); whatever was entered is unwound.
    """
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    backend = runtime.backend
    reporter = backend if isinstance(backend, DumpFileReporter) else None
    already = len(reporter.written) if reporter is not None else 0
    outputs: list[tuple[np.ndarray, ...]] = []
    with runtime.dump_session(acl_config, device_id=device) as session:
        model_id = session.load(model)
        if on_load is not None:
            on_load(model_id)
        for step in range(steps):
            outputs.append(tuple(session.execute(model_id, inputs)))
            if on_step is not None:
                on_step(step)
    written = reporter.written[already:] if reporter is not None else ()
    return ModelRun(tuple(outputs), tuple(written))
