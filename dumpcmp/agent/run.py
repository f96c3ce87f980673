"""One ``agent run`` as a library: a session on the host, a dump streamed into it, its close.

``AgentRun`` reaches the host, opens the session's uploader (journal in the state directory),
then streams one source: ``watch`` a dump path that the user's own application fills, or
``run_model`` a ``PreparedRun`` (an .om on AscendCL, or a model on the simulated NPU: the same
live path, only the runtime's backend differs) whose dump streams while it runs; the uploader
then closes the session (``Uploader.close_session``). ``forget_run`` removes a simulated run's
local files. Every file is
acknowledged per file, journalled, and resumed after a restart of either side (``uploader``).

Nothing here prints or exits: the command (``dumpcmp.commands.agent``) checks the options,
says what happened, and owns Ctrl-C's one line; progress goes to the console it gives.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from rich.console import Console

from dumpcmp.agent.journal import forget_run, holding_session
from dumpcmp.agent.progress import UploadProgress
from dumpcmp.agent.session import (
    HostSession,
    RunFile,
    SessionPlan,
    add_files,
    open_uploader,
    reach_host,
    tree_files,
    wire_path,
)
from dumpcmp.agent.uploader import Uploader, UploadReport, UploadSettings
from dumpcmp.agent.watcher import DumpWatcher, NotSent
from dumpcmp.errors import DumpcmpError, ModelError
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from dumpcmp.proto.channel import ChannelOptions
from dumpcmp.proto.runs import run_identity

if TYPE_CHECKING:  # a watch never loads them (numpy): a stopping agent's start-up stays short
    import numpy as np

    from dumpcmp.agent.live_run import RunStart, StreamedRun
    from dumpcmp.agent.model_run import ModelRun
    from dumpcmp.agent.runtime import AclRuntime

__all__ = [
    "NOT_WATCHED",
    "AgentOutcome",
    "AgentRun",
    "PreparedRun",
    "claim_run_dir",
    "extra_files",
    "keep_run_dir",
    "new_run_token",
    "prepared_acl_run",
    "remove_abandoned_runs",
]

# In a simulated run's local directory: held locked by the agent process running it, and a mark
# that the user asked to keep it. One with neither is a killed agent's: nobody will use it again.
_RUNNING = ".running"
_KEPT = ".kept"


# Why a watch sent no dump file: the host refused what it sends first.
NOT_WATCHED = (
    "not watched: the host refused its golden data or fusion rule (above), so no dump file of it was sent"
)


def new_run_token() -> str:
    """The part of a run's identity that is its own (``proto.runs``); names its local directory."""
    return uuid.uuid4().hex[:16]


def claim_run_dir(work: Path, *, keep: bool = False) -> IO[bytes]:
    """Make ``work`` (STATE/runs/TOKEN) a simulated run's directory, held by this process until
    the returned handle closes (or the process ends, however it ends), and kept for good with
    ``keep`` (--keep-run: even if the agent is killed)."""
    work.parent.mkdir(parents=True, exist_ok=True)
    with _runs_held(work.parent):
        work.mkdir()
        if keep:
            keep_run_dir(work)
        handle = (work / _RUNNING).open("wb")
        fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


@contextlib.contextmanager
def _runs_held(runs: Path) -> Iterator[None]:
    """``runs`` (STATE/runs) locked against the other agents of the state directory: a run's
    directory, made and then locked by its agent, was removed as abandoned in between by another
    agent starting at once (which found it neither held nor kept)."""
    fd = os.open(runs, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # the lock goes with it


def remove_abandoned_runs(runs: Path) -> None:
    """Remove the simulated runs' directories under ``runs`` (STATE/runs) that a killed agent
    left (neither held nor kept): they piled up, unnamed, one per kill. Done as a --sim run
    starts, before the host answers: a rerun the host refuses (its session closed by the killed
    agent's close) left the killed run's files for good, though a rerun simulates afresh."""
    if not runs.is_dir():
        return
    with _runs_held(runs):
        for other in runs.iterdir():
            if other.is_dir() and not (other / _KEPT).exists():
                _remove_if_abandoned(other)


def _remove_if_abandoned(run_dir: Path) -> None:
    try:
        with (run_dir / _RUNNING).open("ab") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises while its agent runs
            shutil.rmtree(run_dir, ignore_errors=True)
    except OSError:
        pass  # another agent's, running now (or gone meanwhile)


def keep_run_dir(run_dir: Path) -> None:
    """Mark a simulated run's directory as kept by request: no later run removes it."""
    with contextlib.suppress(OSError):
        (run_dir / _KEPT).touch()


def extra_files(golden: Path | None, fusion_rule: Path | None, skipped: list[str]) -> list[RunFile]:
    """Golden files and a rule file, to send before any dump file (files that are no regular
    files go to ``skipped``, as ``PATH: REASON``)."""
    files = []
    if golden is not None:
        files += tree_files(pb.GOLDEN, golden, skipped)
    if fusion_rule is not None:
        files += tree_files(pb.FUSION_RULE, fusion_rule, skipped)
    return files


@dataclass(frozen=True)
class PreparedRun:
    """A model run, checked and ready: what runs where, and the files that go with it."""

    runtime: AclRuntime
    model: Path
    label: str  # the model's name in the run's identity
    inputs: tuple[np.ndarray, ...] = field(repr=False)
    acl_config: Path
    dump_root: Path  # the acl.json's dump path
    device: int
    steps: int
    token: str  # the run's own part of its identity (new_run_token)
    # The run's files before its dump (inputs, golden data, rule), given the loaded model's id:
    # the simulator's fusion rule exists only once the model is compiled, at load.
    files: Callable[[int], Sequence[RunFile]]
    work_dir: Path | None = None  # a simulated run's local files (dump, golden, inputs): removable

    def start(self, model_id: int) -> RunStart:
        """The run's identity: the model and device it runs, when it was loaded, its own token."""
        from dumpcmp.agent.live_run import RunStart

        started = datetime.now().strftime("%Y%m%d%H%M%S")
        run_id = run_identity(self.label, self.device, started, self.token)
        return RunStart(run_id, tuple(self.files(model_id)))


@dataclass
class AgentOutcome:
    uploader: Uploader
    report: UploadReport
    target: HostSession
    source: str  # what the dump came from, in the options' words: "--watch DIR", "--model M"
    dump_files: int  # dump files handed to the uploader
    not_sent: list[str] = field(default_factory=list)  # dump files that are not complete: warnings
    skipped: list[str] = field(default_factory=list)  # files that are no dump files: not sent, said
    closed: Any = None  # the host's SessionInfo, once this agent closed the session
    closed_elsewhere: bool = False  # found closed by another agent (or by hand) while files were refused
    # Found still streamed into by another agent (open, not closing) while files were refused, or
    # at this agent's close: that agent's run is the session's, not this agent's to end.
    streamed_elsewhere: bool = False
    run_dir: Path | None = None  # the local files of a simulated run (golden, dump, inputs)
    run_id: str = ""
    # The other runs whose files lie in run_dir (a hunt's earlier passes, its golden data's run):
    # forgotten by the journal with run_id.
    other_runs: tuple[str, ...] = ()

    @property
    def undelivered(self) -> int:
        return len(self.report.problems) + len(self.not_sent)

    @property
    def clean(self) -> bool:
        """Every file acknowledged, the session closed, something compared."""
        return self.closed is not None and not self.closed.nothing_compared and not self.undelivered


class AgentRun:
    """The host reached and the session's uploader open (not started until a source streams)."""

    def __init__(
        self,
        address: ChannelOptions,
        plan: SessionPlan,
        state_dir: Path,
        settings: UploadSettings,
        console: Console | None = None,
        *,
        held: contextlib.ExitStack | None = None,
    ) -> None:
        """``held``: the process is the one agent of ``state_dir`` in the session until it ends
        (``holding_session``), taken once the host answered: another is refused in one line
        before it runs or sends anything, and a host that refuses this agent leaves no state
        directory made."""
        self.state_dir = state_dir
        self.target = reach_host(address, plan.session)
        if held is not None:
            held.enter_context(holding_session(state_dir, plan.session))
        self.uploader = open_uploader(self.target, plan, state_dir, settings)
        self.console = console or Console(quiet=True)

    def watch(
        self,
        root: Path,
        extras: Sequence[RunFile] = (),
        *,
        until_idle: float | None = None,
        quiet: float = 1.0,
        poll: bool = False,
        stop_flushing: bool = True,
    ) -> AgentOutcome:
        """Stream the dump files appearing under ``root`` (after ``extras``) until ``until_idle``
        seconds pass with nothing new, or Ctrl-C (SIGTERM): what is ready is still sent, while
        the host is there (``stop_flushing``: not for a host being retried)."""
        root = root.resolve()
        uploader = self.uploader
        add_files(uploader, list(extras))
        handed = [0]

        def ready(path: Path) -> None:
            handed[0] += 1
            uploader.add_file(pb.DUMP, wire_path(path, root), path)

        watcher = DumpWatcher(root, ready, quiet=quiet, poll=poll, exclude=(self.state_dir.resolve(),))
        uploader.start()
        progress = UploadProgress(
            self.console, uploader.stats, lambda: f"watching {root} ({watcher.backend})"
        )
        with progress:
            interrupted = watching = False
            try:
                # In here: a Ctrl-C once the session is open (the uploader's thread opens it while
                # the watcher starts) ends the watch as any other does, not as an error.
                if _extras_taken(uploader, progress.refresh, len(extras)):
                    watcher.start()
                    watching = True
                while watching and not uploader.failed:
                    progress.refresh()
                    quiet_for = time.monotonic() - watcher.last_change
                    if until_idle is not None and quiet_for >= until_idle and uploader.idle:
                        break
                    time.sleep(0.1)
            except KeyboardInterrupt:
                interrupted = True  # Ctrl-C or SIGTERM ends a watch: what is ready is still sent
            ended = watcher.stop() if watching else []
            report = _finish(uploader, progress.refresh, flushing=interrupted and stop_flushing)
        not_sent, skipped = _not_sent(ended)
        if not watching and not interrupted and not uploader.failed:
            not_sent.append(f"{root}: {NOT_WATCHED}")
        return AgentOutcome(uploader, report, self.target, f"--watch {root}", handed[0], not_sent, skipped)

    def run_model(self, run: PreparedRun, source: str) -> AgentOutcome:
        """Run ``run`` here, streaming its dump while it runs, after its START and files.

        A simulated run that does not end with every file acknowledged loses its local files
        (``run.work_dir``) as it fails: the next run simulates afresh and replaces it."""
        uploader = self.uploader
        started: list[str] = []

        def start(model_id: int) -> RunStart:
            begun = run.start(model_id)
            started.append(begun.run_id)
            return begun

        uploader.start()
        try:
            streamed = self.stream(run, source, start)
            with UploadProgress(self.console, uploader.stats, lambda: f"run {streamed.run_id}") as progress:
                report = _finish(uploader, progress.refresh)
        except BaseException:
            if run.work_dir is not None:
                uploader.abort()  # the journal closed before its entries of the run are rewritten
                self.forget_run(run.work_dir, started[0] if started else "")
            raise
        not_sent, skipped = _not_sent(streamed.not_sent)
        outcome = AgentOutcome(uploader, report, self.target, source, streamed.dump_files, not_sent, skipped)
        outcome.run_dir, outcome.run_id = run.work_dir, streamed.run_id
        return outcome

    def stream(
        self,
        run: PreparedRun,
        source: str,
        start: Callable[[int], RunStart],
        after_run: Callable[[str, ModelRun], Sequence[RunFile]] | None = None,
    ) -> StreamedRun:
        """Run ``run`` here, its START (``start``), files and dump handed to the started uploader
        while it runs, then ``after_run``'s files and its END; the acknowledgements are the
        caller's to wait for."""
        from dumpcmp.agent.live_run import stream_model_run

        streamed = stream_model_run(
            run.runtime, self.uploader, run.model, run.inputs, run.acl_config, run.dump_root,
            start=start, device=run.device, steps=run.steps, exclude=self._excluded(run.dump_root),
            after_run=after_run,
        )  # fmt: skip
        if not streamed.dump_files and run.work_dir is not None:
            raise ModelError(
                f"{source}: the simulated run dumped no file (does the dump_list of "
                f"--acl-config {run.acl_config} name this model?)"
            )
        return streamed

    def _excluded(self, dump_root: Path) -> tuple[Path, ...]:
        """The state directory, when it lies under the dump path (its journal is no dump). Not
        when the dump path lies in it (a simulated run's, STATE/runs/ID/npu): excluded, the whole
        dump was found only once the run ended, none of it streamed while the model ran."""
        state = self.state_dir.resolve()
        return () if dump_root.resolve().is_relative_to(state) else (state,)

    def forget_run(self, run_dir: Path | None, *run_ids: str) -> None:
        """A simulated run's local files, and the journal entries of the runs whose files they are
        (gone: nothing to resend, and a later open must not report them as lost); not those kept
        on request."""
        if run_dir is None or (run_dir / _KEPT).exists():
            return
        for run_id in filter(None, run_ids):
            forget_run(self.uploader.journal_path, run_id)
        shutil.rmtree(run_dir, ignore_errors=True)


def _finish(uploader: Uploader, refresh: Callable[[], None], *, flushing: bool = False) -> UploadReport:
    """Wait for every acknowledgement; Ctrl-C stops at once (the journal keeps the rest).

    ``flushing`` (after the Ctrl-C that ended a watch): only while the host is there. A host
    being retried kept the stopping agent waiting up to --give-up (5 minutes by default).
    """

    def waiting() -> None:
        refresh()
        if flushing and uploader.stalled:
            raise KeyboardInterrupt

    return uploader.finish(on_wait=waiting)


def _extras_taken(uploader: Uploader, refresh: Callable[[], None], count: int) -> bool:
    """Whether the host took the golden and rule files sent first (``count`` of them), waited for:
    a watch has no run the host could refuse whole, and its dump files compared with another
    run's golden data would be a wrong result. True as well when the uploader failed: the
    watch's own end reports that."""
    if count:
        with contextlib.suppress(DumpcmpError):  # failed: said as the watch ends
            uploader.settle(refresh)
    report = uploader.report()
    return uploader.failed or report.stored + report.duplicates + report.already >= count


def _not_sent(ended: Sequence[NotSent]) -> tuple[list[str], list[str]]:
    """Dump files never complete (warnings: the session stays open without them), and files
    that are no dump files (skipped, as compare skips them)."""
    not_sent = [f"{n.path}: not sent: {n.reason}" for n in ended if not n.skipped]
    return not_sent, [f"{n.path}: {n.reason}" for n in ended if n.skipped]


def prepared_acl_run(
    model: Path,
    inputs: Sequence[Path],
    acl_config: Path,
    dump_root: Path,
    *,
    device: int,
    steps: int,
    token: str,
    extras: Sequence[RunFile] = (),
    acl_lib: str | None = None,
) -> PreparedRun:
    """An .om on real AscendCL (through ctypes), its inputs read from npy files (checked)."""
    from dumpcmp.agent.runtime import AclRuntime, open_backend  # the binding: only for a run on AscendCL
    from dumpcmp.proto.npy import load_npy

    arrays = tuple(load_npy(path, mmap=False) for path in inputs)
    # The golden data (in extras) first: a session comparing with another run's refuses the run there.
    files = [*extras, *((pb.INPUT, f"{index}.{path.name}", path) for index, path in enumerate(inputs))]
    return PreparedRun(
        AclRuntime(open_backend("acl", acl_lib)), model, model.stem, arrays, acl_config, dump_root, device,
        steps, token, lambda _model_id: files,
    )  # fmt: skip
