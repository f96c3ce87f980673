"""Run a model here and stream its dump while it runs: the agent's ``--model`` path on a real box.

AscendCL is driven on the calling thread (``run_model``); the watcher and the uploader work on
their own threads and never call it. The run is marked: START before its first file, END only
once the model ran to the end, so a run that failed or was killed half way is replaced by the
next run of the session, never mixed with it. Files that were under the dump path before the
run started belong to earlier runs and are not sent as this one's.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dumpcmp.agent.model_run import run_model
from dumpcmp.agent.runtime import AclRuntime
from dumpcmp.agent.session import RunFile, add_files, wire_path
from dumpcmp.agent.uploader import Uploader
from dumpcmp.agent.watcher import DumpWatcher, NotSent
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb

__all__ = ["StreamedRun", "stream_model_run"]


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
    run_id: str,
    run_files: Sequence[RunFile] = (),
    device: int = 0,
    steps: int = 1,
    quiet: float = 1.0,
    poll: bool = False,
    exclude: tuple[Path, ...] = (),
) -> StreamedRun:
    """Run ``model`` under ``acl_config`` (whose dump path is ``dump_root``), streaming each dump
    file into ``uploader`` as it completes, after START and ``run_files`` (inputs, golden data,
    rule: they belong to the run, and go with it if it is replaced). Raises what ``run_model``
    raises, after handing over the files already complete (the run then has no END mark)."""
    root = dump_root.resolve()
    earlier = set(_files(root))
    handed = [0]

    def ready(path: Path) -> None:
        if path not in earlier:
            handed[0] += 1
            uploader.add_file(pb.DUMP, wire_path(path, root), path, run_id)

    uploader.add_run_mark(run_id, pb.RunMark.START)
    add_files(uploader, list(run_files), run_id)
    watcher = DumpWatcher(root, ready, quiet=quiet, poll=poll, exclude=exclude)
    watcher.start()
    try:
        run_model(runtime, model, inputs, acl_config, device=device, steps=steps)
    finally:
        not_sent = tuple(n for n in watcher.stop() if n.path not in earlier)
    uploader.add_run_mark(run_id, pb.RunMark.END)
    return StreamedRun(run_id, handed[0], not_sent)


def _files(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return [Path(d) / name for d, _dirs, names in os.walk(root) for name in names]
