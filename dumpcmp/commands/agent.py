"""``dumpcmp agent run``: stream dump files to a host comparator as they are written.

Two sources: ``--watch DUMP_PATH`` streams what the user's own application dumps; ``--model``
runs the model here (``--sim``: an ONNX model on the simulated NPU, whose golden data, fusion
rule and inputs are streamed with the dump, so the host needs nothing else). Either way the
files go through ``dumpcmp.agent.uploader``: acknowledged per file, journalled, resumed after
a restart of either side.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.markup import escape

from dumpcmp.commands._flags import StrictCommand
from dumpcmp.commands._output import console, counted, error_console, fail, user_errors
from dumpcmp.commands._remote import ClientCert, ClientKey, HostAddress, TlsCa, TokenFile
from dumpcmp.printable import skipped_lines

if TYPE_CHECKING:
    from dumpcmp.agent.live_run import StreamedRun
    from dumpcmp.agent.session import HostSession, RunFile, SessionPlan
    from dumpcmp.agent.uploader import Uploader, UploadReport, UploadSettings
    from dumpcmp.agent.watcher import NotSent
    from dumpcmp.proto.channel import ChannelOptions

__all__ = ["app"]

app = typer.Typer(help="Stream dump files to a host comparator.", no_args_is_help=True)

_MODEL_STATE = Path("dumpcmp-agent")  # the state dir of --model runs, unless --state is given


@app.command("run", cls=StrictCommand)
def run_command(
    host: HostAddress,
    session: Annotated[
        str,
        typer.Option(
            "--session", help="Session name on the host (resumed if it exists).", show_default=False
        ),
    ],
    watch: Annotated[
        Path | None, typer.Option("--watch", help="Stream the dump files appearing under this dump path.")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model", help="Run this model here: an .om on AscendCL, or with --sim an .onnx / zoo:NAME."
        ),
    ] = None,
    inputs: Annotated[
        list[Path] | None,
        typer.Option(
            "--input", "-i", help="A model input .npy in input order; repeatable (default: seeded random)."
        ),
    ] = None,
    sim: Annotated[bool, typer.Option("--sim", help="Run --model on the simulated NPU.")] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of generated inputs and simulated faults.")] = 0,
    steps: Annotated[int, typer.Option("--steps", min=1, help="How many times to execute --model.")] = 1,
    inject: Annotated[
        list[str] | None,
        typer.Option("--inject", help="With --sim: OP=KIND[:AMOUNT] fault at an ONNX op; repeatable."),
    ] = None,
    acl_config: Annotated[
        Path | None, typer.Option("--acl-config", help="The acl.json to run --model under.")
    ] = None,
    device: Annotated[int, typer.Option("--device", help="NPU device id.")] = 0,
    golden: Annotated[
        Path | None, typer.Option("--golden", help="Upload this golden directory before the dump.")
    ] = None,
    fusion_rule: Annotated[
        Path | None, typer.Option("--fusion-rule", help="Upload this ATC fusion rule json before the dump.")
    ] = None,
    golden_on_host: Annotated[
        str | None,
        typer.Option("--golden-on-host", help="The golden directory is already on the host, here."),
    ] = None,
    fusion_rule_on_host: Annotated[
        str | None,
        typer.Option("--fusion-rule-on-host", help="The fusion rule json is already on the host, here."),
    ] = None,
    tls_ca: TlsCa = None,
    tls_cert: ClientCert = None,
    tls_key: ClientKey = None,
    token_file: TokenFile = None,
    state: Annotated[
        Path | None,
        typer.Option(
            "--state",
            help="Agent state directory (journal of acknowledged files). Default: beside the dump path "
            "(DUMP_PATH.dumpcmp-agent), or ./dumpcmp-agent for --model.",
        ),
    ] = None,
    delete_acked: Annotated[
        bool, typer.Option("--delete-acked", help="Delete each dump file once the host acknowledged it.")
    ] = False,
    until_idle: Annotated[
        float | None,
        typer.Option(
            "--until-idle", min=0.0, help="With --watch: stop after this many seconds with nothing new."
        ),
    ] = None,
    quiet_time: Annotated[
        float,
        typer.Option("--quiet-time", min=0.0, help="Seconds a file must be unchanged before it is sent."),
    ] = 1.0,
    poll: Annotated[
        bool, typer.Option("--poll", help="Poll the dump path instead of using inotify.")
    ] = False,
    give_up: Annotated[
        float,
        typer.Option("--give-up", min=0.0, help="Fail after this many seconds without reaching the host."),
    ] = 300.0,
    keep_open: Annotated[
        bool, typer.Option("--keep-open", help="Leave the session open (other agents still send into it).")
    ] = False,
    model_name: Annotated[
        str | None, typer.Option("--model-name", help="Model name the host shows (default: from the paths).")
    ] = None,
    keep_run: Annotated[
        bool,
        typer.Option(
            "--keep-run",
            help="With --sim: keep the run's local files (STATE/runs/RUN_ID) after the session closed.",
        ),
    ] = False,
) -> None:
    """Stream a dump to the host comparator HOST:PORT, into session NAME.

    --watch DUMP_PATH sends each dump file when it is complete; Ctrl-C (or --until-idle) ends
    the watch after the files ready so far are sent. --model runs the model here and sends its
    dump; with --sim it also sends the golden data, fusion rule and inputs.
    """
    from dumpcmp.agent.session import SessionPlan
    from dumpcmp.agent.uploader import UploadSettings
    from dumpcmp.errors import TransferError
    from dumpcmp.proto.channel import ChannelOptions, check_address
    from dumpcmp.proto.session_names import session_name_problem

    with user_errors():
        # The name becomes the journal's file name here and a directory on the host: checked
        # before anything is created or run.
        if problem := session_name_problem(session):
            raise TransferError(f"--session {session!r}: {problem}")
        if (watch is None) == (model is None):
            raise TransferError("give one of --watch DUMP_PATH or --model MODEL")
        if watch is not None and (sim or inputs or inject):
            raise TransferError("--sim, --input and --inject go with --model, not --watch")
        if watch is not None and not watch.exists():
            # A mistyped path would otherwise be watched (and created) while nothing ever dumps there.
            raise TransferError(f"--watch {watch}: no such dump directory (start the agent once it exists)")
        if golden is not None and golden_on_host:
            raise TransferError("--golden and --golden-on-host both say where the golden data is; give one")
        if fusion_rule is not None and fusion_rule_on_host:
            raise TransferError("--fusion-rule and --fusion-rule-on-host both give the rule; give one")
        address = ChannelOptions(check_address(host), tls_ca, tls_cert, tls_key, token_file)
        settings = UploadSettings(give_up=give_up, delete_acked=delete_acked)
        plan = SessionPlan(
            session=session,
            model=model_name or _model_label(watch, model),
            golden_uploaded=golden is not None or sim,
            golden_host_path=golden_on_host or "",
            fusion_rule_name=fusion_rule.name
            if fusion_rule is not None
            else ("fusion_rule.json" if sim else ""),
            fusion_rule_host_path=fusion_rule_on_host or "",
            device=device,
        )
        extras = Extras(golden, fusion_rule)
        _check_extras(extras)
        if golden is not None and fusion_rule is None and not fusion_rule_on_host and _holds_npy(golden):
            raise TransferError(
                f"--golden {golden} holds npy files: the host compares NPU dump files with golden npy "
                "files through the ATC fusion rule; give --fusion-rule (a TorchAir GE/FX dump pair is "
                "compared with dumpcmp compare -m torchair)"
            )
        if model is not None and sim:
            _check_simulated_model(model, inject or [], seed)
        if watch is not None:
            root = watch.resolve()  # "." has no name to put a sibling state directory beside
            state_dir = state or root.parent / f"{root.name}.dumpcmp-agent"
            outcome = _watch(address, plan, state_dir, settings, extras, watch, until_idle, quiet_time, poll)
        else:
            assert model is not None
            run = ModelRequest(model, inputs or [], seed, steps, inject or [], acl_config, device)
            if not sim:  # the .om run's mistakes are said before the host holds a session for it
                run = replace(run, dump_path=_checked_acl_run(run))
            outcome = run_model_and_stream(address, plan, state or _MODEL_STATE, settings, extras, run, sim)
        # A session closed without some of its files would give a final verdict that silently
        # lacks them (a truncated culprit file, and the blame moves downstream): it stays open.
        if not keep_open and not outcome.undelivered:
            _close(outcome)
    if outcome.clean and not keep_run:
        _forget_run(outcome)
    print_summary(outcome, address.address, session, fetch=fetch_command(session, address))


# --------------------------------------------------------------------------- pieces


@dataclass(frozen=True)
class Extras:
    golden: Path | None
    fusion_rule: Path | None


@dataclass(frozen=True)
class ModelRequest:
    model: str
    inputs: list[Path]
    seed: int
    steps: int
    faults: list[str]
    acl_config: Path | None
    device: int
    dump_path: Path | None = None  # on AscendCL: where the acl.json has the run dump (checked)


@dataclass
class AgentOutcome:
    uploader: Uploader
    report: UploadReport
    target: HostSession
    source: str  # what the dump came from, in the options' words: "--watch DIR", "--model M"
    dump_files: int  # dump files handed to the uploader
    not_sent: list[str] = field(default_factory=list)  # dump files that are not complete: warnings
    skipped: list[str] = field(default_factory=list)  # files that are no dump files: not sent, said
    closed: Any = None
    run_dir: Path | None = None  # the local files of a simulated run (golden, dump, inputs)
    run_id: str = ""

    @property
    def undelivered(self) -> int:
        return len(self.report.problems) + len(self.not_sent)

    @property
    def clean(self) -> bool:
        """Every file acknowledged, the session closed, something compared."""
        return self.closed is not None and not self.closed.nothing_compared and not self.undelivered


def _model_label(watch: Path | None, model: str | None) -> str:
    if model is not None:
        return Path(model.split(":", 1)[1] if model.startswith("zoo:") else model).stem
    assert watch is not None
    return watch.resolve().name


def _check_extras(extras: Extras) -> None:
    """Refused before any work, in the options' words: a simulated run would otherwise be spent,
    or a watch streamed, before the host found that it cannot compare."""
    from dumpcmp.errors import RuleFileError, TransferError
    from dumpcmp.host.fusion_rules import load_rules

    golden, rule = extras.golden, extras.fusion_rule
    if golden is not None:
        if not golden.exists():
            raise TransferError(f"--golden {golden}: no such directory")
        if not golden.is_dir():
            raise TransferError(f"--golden {golden}: not a directory (give the directory of the golden data)")
        if (unreadable := _unreadable_in(golden)) is not None:
            raise TransferError(f"--golden {golden}: cannot read {unreadable}")
        if not any(p.is_file() for p in golden.rglob("*")):
            raise TransferError(f"--golden {golden}: no files in it, so nothing to compare the dump against")
    if rule is not None:
        if rule.is_dir():
            raise TransferError(f"--fusion-rule {rule}: a directory (give the ATC fusion rule .json file)")
        if not rule.is_file():
            raise TransferError(f"--fusion-rule {rule}: no such file")
        try:  # parsed here as the host will: a malformed rule was uploaded with the whole dump first
            load_rules(rule)
        except RuleFileError as exc:
            raise RuleFileError(f"--fusion-rule {rule}", exc.reason) from None


def _unreadable_in(directory: Path) -> Path | None:
    """The first directory or file under ``directory`` this user may not read, if any."""
    blocked: list[Path] = []  # a directory os.walk could not list comes through onerror
    for root, _dirs, names in os.walk(directory, onerror=lambda exc: blocked.append(Path(str(exc.filename)))):
        blocked.extend(Path(root, n) for n in names if not os.access(Path(root, n), os.R_OK))
        if blocked:
            break
    return blocked[0] if blocked else None


def _holds_npy(directory: Path) -> bool:
    return next(directory.rglob("*.npy"), None) is not None


def _check_simulated_model(model: str, faults: Sequence[str], seed: int) -> None:
    """The model and every --inject checked before the session opens: a fault at an op the model
    does not have used to fail only after the host had an (empty, open) session for it."""
    from dumpcmp.fakes.faults import Fault, FaultPlan
    from dumpcmp.fakes.simulate import check_fault_targets
    from dumpcmp.fakes.zoo import model_proto

    proto = model_proto(model)
    check_fault_targets(FaultPlan(tuple(Fault.parse(f) for f in faults), seed), proto)


def _extra_files(extras: Extras) -> list[RunFile]:
    """The golden files and the rule file to send before any dump file."""
    from dumpcmp.agent.session import tree_files
    from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb

    files = []
    if extras.golden is not None:
        files += tree_files(pb.GOLDEN, extras.golden)
    if extras.fusion_rule is not None:
        files += tree_files(pb.FUSION_RULE, extras.fusion_rule)
    return files


def _finish(uploader: Uploader, refresh: Callable[[], None], *, flushing: bool = False) -> UploadReport:
    """Wait for every acknowledgement; Ctrl-C stops at once (``_stopping``: the journal keeps the rest).

    ``flushing`` (after the Ctrl-C that ended a watch): only while the host is there. A host
    being retried kept the stopping agent waiting up to --give-up (5 minutes by default).
    """

    def waiting() -> None:
        refresh()
        if flushing and uploader.stalled:
            raise KeyboardInterrupt

    return uploader.finish(on_wait=waiting)


@contextmanager
def _stopping(target: HostSession, uploader: Uploader, source: str) -> Iterator[None]:
    """Ctrl-C, SIGTERM or an error once the session may be open on the host: the upload stops
    (the journal keeps what the host acknowledged, so the same command carries on from there),
    a session this run opened that holds no dump file is deleted, and the one line says which."""
    from dumpcmp.agent.session import drop_if_empty
    from dumpcmp.errors import DumpcmpError

    try:
        yield
    except KeyboardInterrupt:
        uploader.abort()
        opened = uploader.session_info is not None
        _interrupted(target, source, opened=opened, dropped=opened and drop_if_empty(target))
    except DumpcmpError as exc:
        uploader.abort()
        if uploader.session_info is not None and drop_if_empty(target):
            fail(f"{exc}; {_dropped(target)}")
        raise
    except BaseException:
        uploader.abort()
        raise


# What the same command does again, by source: a watch resumes, a model run is made anew.
_RERUN = {
    "--watch": "files the host acknowledged are not sent again",
    "--model": "the model runs again, and that run replaces the unfinished one",
}


def _dropped(target: HostSession) -> str:
    return (
        f"session {target.name}, opened by this run and holding no dump file, "
        f"was deleted from host {target.host.address}"
    )


def _interrupted(target: HostSession, source: str, *, opened: bool, dropped: bool) -> NoReturn:
    """The one line of an interrupted agent: where its session stands, and what to do about it."""
    from dumpcmp.launch import INTERRUPTED_EXIT_CODE

    session, host = target.name, target.host.address
    if dropped:
        where = _dropped(target)
    elif not opened:
        where = f"session {session} was not opened on host {host} (not reached); run the same command again"
    else:
        delete = _host_command(["delete", session, "--host", host], target.host)
        where = (
            f"session {session} is left open on host {host}: run the same command again to finish it "
            f"({_RERUN[source.split()[0]]}), or drop it: {delete}"
        )
    error_console().print(
        f"[red]interrupted[/red]: the agent stopped before every file was sent; {escape(where)}"
    )
    raise typer.Exit(INTERRUPTED_EXIT_CODE) from None


def _close(outcome: AgentOutcome) -> None:
    """Close the session. One that this run opened and that holds no dump file cannot be closed
    (the host would compare nothing): it is deleted, and the run fails saying so."""
    from dumpcmp.agent.session import drop_if_empty

    with _stopping(outcome.target, outcome.uploader, outcome.source):
        if outcome.dump_files == 0 and drop_if_empty(outcome.target):
            passed_over = (
                f" ({counted(len(outcome.skipped), 'other file')} skipped, e.g. {outcome.skipped[0]})"
                if outcome.skipped
                else ""
            )
            fail(
                f"{outcome.source}: no dump file to send{passed_over}, nothing to compare; "
                f"{_dropped(outcome.target)}"
            )
        outcome.closed = outcome.uploader.close_session()


def _forget_run(outcome: AgentOutcome) -> None:
    """A simulated run's local files, once the host holds them all in a closed session: they
    would otherwise stay in the state directory for ever, one copy per run."""
    import shutil

    from dumpcmp.agent.journal import forget_run

    if outcome.run_dir is None:
        return
    forget_run(outcome.uploader.journal_path, outcome.run_id)  # its files are gone: nothing to resend
    shutil.rmtree(outcome.run_dir, ignore_errors=True)


def _watch(
    address: ChannelOptions,
    plan: SessionPlan,
    state_dir: Path,
    settings: UploadSettings,
    extras: Extras,
    root: Path,
    until_idle: float | None,
    quiet_time: float,
    poll: bool,
) -> AgentOutcome:
    from dumpcmp.agent.progress import UploadProgress
    from dumpcmp.agent.session import add_files, open_uploader, reach_host, wire_path
    from dumpcmp.agent.watcher import DumpWatcher
    from dumpcmp.errors import TransferError
    from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb

    if root.exists() and not root.is_dir():
        raise TransferError(f"--watch {root}: is a file, not a dump directory")
    root = root.resolve()
    target = reach_host(address, plan.session)
    uploader = open_uploader(target, plan, state_dir, settings)
    add_files(uploader, _extra_files(extras))
    handed = [0]
    source = f"--watch {root}"

    def ready(path: Path) -> None:
        handed[0] += 1
        uploader.add_file(pb.DUMP, wire_path(path, root), path)

    watcher = DumpWatcher(root, ready, quiet=quiet_time, poll=poll, exclude=(state_dir.resolve(),))
    uploader.start()
    progress = UploadProgress(error_console(), uploader.stats, lambda: f"watching {root} ({watcher.backend})")
    with _stopping(target, uploader, source), progress:
        watcher.start()
        interrupted = False
        try:
            while not uploader.failed:
                progress.refresh()
                quiet_for = time.monotonic() - watcher.last_change
                if until_idle is not None and quiet_for >= until_idle and uploader.idle:
                    break
                time.sleep(0.1)
        except KeyboardInterrupt:
            interrupted = (
                True  # Ctrl-C or SIGTERM ends a watch: what is ready is still sent, then the session closes
            )
        ended = watcher.stop()
        report = _finish(uploader, progress.refresh, flushing=interrupted)
    not_sent, skipped = _not_sent(ended)
    return AgentOutcome(uploader, report, target, source, handed[0], not_sent, skipped)


def _not_sent(ended: Sequence[NotSent]) -> tuple[list[str], list[str]]:
    """Dump files never complete (warnings: the session stays open without them), and files
    that are no dump files (skipped, as compare skips them)."""
    not_sent = [f"{n.path}: not sent: {n.reason}" for n in ended if not n.skipped]
    return not_sent, [f"{n.path}: {n.reason}" for n in ended if n.skipped]


def run_model_and_stream(
    address: ChannelOptions,
    plan: SessionPlan,
    state_dir: Path,
    settings: UploadSettings,
    extras: Extras,
    run: ModelRequest,
    sim: bool,
) -> AgentOutcome:
    """Run the model here and send its inputs, golden data, fusion rule and dump, in that order.

    The simulated run comes before the session opens: a run that fails (an acl.json or an
    input the model refuses) or dumps nothing leaves no empty session on the host.
    """
    import shutil

    from dumpcmp.agent.progress import UploadProgress
    from dumpcmp.agent.session import open_uploader, reach_host
    from dumpcmp.errors import ModelError

    run_id = uuid.uuid4().hex[:16]
    target = reach_host(address, plan.session)
    work = state_dir / "runs" / run_id
    try:
        produced = _simulate(run, work) if sim else None
        if produced is not None and not produced.dump_files:
            raise ModelError(
                f"--model {run.model}: the simulated run dumped no file (does the dump_list of "
                f"--acl-config {run.acl_config} name this model?)"
            )
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)  # a run that never reached the host: nothing to keep
        raise
    uploader = open_uploader(target, plan, state_dir, settings)
    uploader.start()
    source = f"--model {run.model}"
    with _stopping(target, uploader, source):
        if produced is not None:
            _queue_simulated(uploader, produced, extras, run_id)
            ended: list[NotSent] = []
            dump_files = produced.dump_files
        else:
            streamed = _run_on_acl(uploader, run, extras, run_id, state_dir)
            ended, dump_files = list(streamed.not_sent), streamed.dump_files
        with UploadProgress(error_console(), uploader.stats, lambda: f"run {run_id}") as progress:
            report = _finish(uploader, progress.refresh)
    not_sent, skipped = _not_sent(ended)
    outcome = AgentOutcome(uploader, report, target, source, dump_files, not_sent, skipped)
    if produced is not None:
        outcome.run_dir, outcome.run_id = work, run_id
    return outcome


def _queue_simulated(uploader: Uploader, produced: _Produced, extras: Extras, run_id: str) -> None:
    """The simulated run's files, in the order the host needs them, marked as one run."""
    from dumpcmp.agent.session import add_files, tree_files
    from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb

    # Everything of the run carries its id, so a run replaced later takes its golden data along.
    uploader.add_run_mark(run_id, pb.RunMark.START)
    add_files(uploader, tree_files(pb.INPUT, produced.inputs_dir), run_id)
    add_files(uploader, _extra_files(Extras(produced.golden_dir, produced.fusion_rule)), run_id)
    add_files(uploader, _extra_files(extras), run_id)
    add_files(uploader, tree_files(pb.DUMP, produced.dump_dir), run_id)
    uploader.add_run_mark(run_id, pb.RunMark.END)


def _checked_acl_run(run: ModelRequest) -> Path:
    """The dump path of an .om run on AscendCL, once its model, acl.json and inputs are fine."""
    from dumpcmp.acl_config import load as load_config
    from dumpcmp.errors import ConfigError, ModelError
    from dumpcmp.proto.npy import load_npy

    model = Path(run.model)
    if run.model.startswith("zoo:") or model.suffix == ".onnx":
        raise ModelError(f"--model {run.model}: an ONNX model runs on the simulated NPU: add --sim")
    if not model.is_file():
        raise ModelError(f"--model {model}: no such file (on AscendCL the model is an .om; --sim runs ONNX)")
    if run.acl_config is None:
        raise ConfigError(
            "--model on AscendCL needs --acl-config: the acl.json whose dump section says where"
        )
    config = load_config(run.acl_config)
    dump_path = config.dump.dump_path if config.dump is not None else None
    if not dump_path:
        raise ConfigError(f"--acl-config {run.acl_config}: no dump.dump_path, so there is no dump to stream")
    if run.faults:
        raise ModelError("--inject needs --sim: faults are injected into the simulated NPU only")
    if not run.inputs:
        raise ModelError("give the model's inputs with --input (an .om's input shapes are not read here)")
    for path in run.inputs:
        load_npy(path)  # its header: a bad input is said now, the arrays are read for the run
    return Path(dump_path)


def _run_on_acl(
    uploader: Uploader, run: ModelRequest, extras: Extras, run_id: str, state_dir: Path
) -> StreamedRun:
    """An .om on AscendCL (main thread), its dump streamed while it runs (``run`` is checked)."""
    from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
    from dumpcmp.proto.npy import load_npy

    assert run.dump_path is not None and run.acl_config is not None
    model, dump_path = Path(run.model), run.dump_path
    arrays = [load_npy(path, mmap=False) for path in run.inputs]
    inputs = [(pb.INPUT, f"{index}.{path.name}", path) for index, path in enumerate(run.inputs)]
    from dumpcmp.agent.live_run import stream_model_run  # after the checks: it loads the binding
    from dumpcmp.agent.runtime import AclRuntime, open_backend

    runtime = AclRuntime(open_backend("acl"))
    return stream_model_run(
        runtime, uploader, model, arrays, run.acl_config, dump_path,
        run_id=run_id, run_files=[*inputs, *_extra_files(extras)], device=run.device, steps=run.steps,
        exclude=(state_dir.resolve(),),
    )  # fmt: skip


@dataclass(frozen=True)
class _Produced:
    inputs_dir: Path
    golden_dir: Path
    fusion_rule: Path
    dump_dir: Path
    dump_files: int


def _simulate(run: ModelRequest, work: Path) -> _Produced:
    """``sim run`` of ``run.model`` into ``work`` (through the agent's runtime over the simulated
    NPU, as on hardware): dump, golden, fusion rule; and the inputs it ran on, as npy files."""
    import numpy as np

    from dumpcmp.commands.sim import simulate
    from dumpcmp.fakes.inputs import resolve_inputs
    from dumpcmp.fakes.onnx_model import analyse
    from dumpcmp.fakes.zoo import model_proto
    from dumpcmp.outputs import atomic_path

    proto = model_proto(run.model)
    specs = analyse(proto).inputs
    arrays = resolve_inputs(specs, run.inputs, seed=run.seed)
    inputs_dir = work / "inputs"
    for index, (spec, array) in enumerate(zip(specs, arrays, strict=True)):
        with (
            atomic_path(inputs_dir / f"{index}.{spec.name.replace('/', '_')}.npy") as temp,
            temp.open("wb") as f,
        ):
            np.save(f, array, allow_pickle=False)
    result = simulate(
        run.model,
        work,
        seed=run.seed,
        steps=run.steps,
        faults=run.faults,
        acl_config=run.acl_config,
        inputs=arrays,
    )
    return _Produced(
        inputs_dir, result.golden_dir, result.fusion_rule, result.npu_dump_dir, len(result.dump_files)
    )


def fetch_command(session: str, address: ChannelOptions) -> str:
    """The command that downloads the closed session's result files to this machine."""
    return _host_command(["results", session, "--host", address.address, "--out", "DIR"], address)


def _host_command(words: list[str], address: ChannelOptions) -> str:
    """``dumpcmp host WORDS``, with the options that reach the host as this agent does."""
    import shlex

    words = ["dumpcmp", "host", *words]
    for option, path in (
        ("--tls-ca", address.tls_ca), ("--tls-cert", address.client_cert), ("--tls-key", address.client_key),
        ("--token-file", address.token_file),
    ):  # fmt: skip
        if path is not None:
            words += [option, str(path)]
    return shlex.join(words)


def print_summary(outcome: AgentOutcome, target: str, session: str, *, fetch: str = "") -> None:
    """What was sent, then the host's summary. Its paths are the host's: with ``fetch`` (the
    command that downloads the results here; an agent's host may be another machine) they are
    said to be, and how to get them follows."""
    report = outcome.report
    printer = console()
    for line in skipped_lines(outcome.skipped):  # as compare says them
        printer.print(line, markup=False)
    for line in (*report.problems, *outcome.not_sent):
        error_console().print(f"[yellow]warning[/yellow]: {escape(line)}")
    sent = report.stored + report.duplicates
    words = [f"{counted(sent, 'file')} sent ({_mb(report.bytes_sent)})"]
    if report.already:
        words.append(f"{report.already} already on the host")
    if report.reconnects:
        words.append(counted(report.reconnects, "reconnect"))
    where = ""
    if outcome.closed is not None and outcome.closed.data_dir:
        where = f"; results {f'on host {target} ' if fetch else ''}in {outcome.closed.data_dir}"
    state = "closed" if outcome.closed is not None else "open"
    printer.print(f"session {session} on {target} ({state}): {', '.join(words)}{where}", markup=False)
    if outcome.closed is not None and outcome.closed.summary:
        for line in outcome.closed.summary.splitlines():  # the host's paths: its summary's own
            printer.print(line, markup=False)
        if fetch and outcome.closed.result_files:
            printer.print(f"fetch the result files here: {fetch}", markup=False)
    if outcome.closed is not None and outcome.closed.nothing_compared:
        fail(outcome.closed.nothing_compared)  # compare's very line: no numbers is no all-clear
    if outcome.undelivered:
        still_open = (
            ""
            if outcome.closed is not None
            else f"; session {session} is left open, so its results never lack them"
        )
        fail(f"{counted(outcome.undelivered, 'file')} not delivered (see the warnings above){still_open}")


def _mb(count: int) -> str:
    from dumpcmp.agent.progress import human_bytes

    return human_bytes(count)
