"""Run a model here and stream its dump while it runs: the agent's ``--model`` path, on real
AscendCL and on the simulated NPU alike (only the runtime's backend differs).

AscendCL is driven on the calling thread (``run_model``); the watcher and the uploader work on
their own threads and never call it. The run is marked: START once the model is loaded (when
what the run is, and so its identity, is known), then the run's own files (inputs, golden data,
rule), then its dump as each file completes; END only once the model ran to the end, so a run
that failed or was killed half way is replaced by the next run of its slot, never mixed with it.
Only the run's files are streamed: nothing that was under the dump path before it started, and
when the backend says where the model dumps (the simulator does), nothing outside that.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dumpcmp.agent.backend import DumpDirReporter
from dumpcmp.agent.model_run import ModelRun, run_model
from dumpcmp.agent.runtime import AclRuntime
from dumpcmp.agent.session import RunFile, add_files, wire_path
from dumpcmp.agent.uploader import Uploader
from dumpcmp.agent.watcher import DumpWatcher, NotSent
from dumpcmp.errors import TransferError
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb

__all__ = ["RunStart", "StreamedRun", "stream_model_run"]


@dataclass(frozen=True, slots=True)
class RunStart:
    """The run, once its model is loaded: its identity and the files that go before its dump."""

    run_id: str
    files: tuple[RunFile, ...] = ()


@dataclass(frozen=True, slots=True)
class StreamedRun:
    run_id: str
    dump_files: int  # handed to the uploader
    not_sent: tuple[NotSent, ...]


def stream_model_run(
    runtime: AclRuntime,
    uploader: Uploader,
    model: Path,
    inputs: Sequence[np.ndarray],
    acl_config: Path,
    dump_root: Path,
    *,
    start: Callable[[int], RunStart],
    device: int = 0,
    steps: int = 1,
    quiet: float = 1.0,
    poll: bool = False,
    exclude: tuple[Path, ...] = (),
    after_run: Callable[[str, ModelRun], Sequence[RunFile]] | None = None,
) -> StreamedRun:
    """Run ``model`` under ``acl_config`` (whose dump path is ``dump_root``), streaming each dump
    file of the run into ``uploader`` as it completes. ``start(model_id)``, called once the model
    is loaded, names the run and its files (sent after START, before any dump file). Raises what
    ``run_model`` raises, after handing over the files already complete (the run then has no END),
    and TransferError after a step once the host refused the run (``Uploader.run_dropped``).
    ``after_run(run_id, ran)``: files the run made of its result (a hunt's outputs), sent before END."""
    root = dump_root.resolve()
    earlier = set(_files(root))
    backend = runtime.backend
    reporter = backend if isinstance(backend, DumpDirReporter) else None
    started: list[str] = []  # the run id, once START is queued
    own_dir: list[Path] = []  # where the loaded model dumps, when the backend says
    handed = [0]
    lock = threading.Lock()  # the watcher's thread hands files over, the run's thread starts the run

    def ready(path: Path) -> None:
        with lock:
            if not started or path in earlier or (own_dir and not path.is_relative_to(own_dir[0])):
                return  # another run's, or another model's: before this run was loaded, or elsewhere
            handed[0] += 1
            uploader.add_file(pb.DUMP, wire_path(path, root), path, started[0])

    def loaded(model_id: int) -> None:
        run = start(model_id)
        directory = reporter.dump_dir(model_id) if reporter is not None else None
        with lock:
            uploader.add_run_mark(run.run_id, pb.RunMark.START)
            add_files(uploader, list(run.files), run.run_id)
            if directory is not None:
                own_dir.append(directory.resolve())
            started.append(run.run_id)

    def stepped(step: int) -> None:
        # The host took none of the run: its other steps would only be refused (a second --sim
        # device into one session simulated to the end, then failed). After the last step the
        # run is whole: it ends, and the refusals are said as any others.
        with lock:
            run_id = started[0]
        if step + 1 < steps and (why := uploader.run_dropped(run_id)):
            raise TransferError(f"run {run_id} stopped after step {step}: the host refused it: {why}")

    watcher = DumpWatcher(root, ready, quiet=quiet, poll=poll, exclude=exclude)
    watcher.start()
    try:
        ran = run_model(
            runtime, model, inputs, acl_config, device=device, steps=steps, on_load=loaded, on_step=stepped
        )
    finally:
        ended = watcher.stop()
    with lock:
        run_id = started[0]
        not_sent = tuple(n for n in ended if n.path not in earlier and _own(n.path, own_dir))
    if after_run is not None:
        add_files(uploader, list(after_run(run_id, ran)), run_id)
    uploader.add_run_mark(run_id, pb.RunMark.END)
    return StreamedRun(run_id, handed[0], not_sent)


def _own(path: Path, own_dir: list[Path]) -> bool:
    return not own_dir or path.is_relative_to(own_dir[0])


def _files(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return [Path(d) / name for d, _dirs, names in os.walk(root) for name in names]
