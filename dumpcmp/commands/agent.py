"""``dumpcmp agent run``: stream dump files to a host comparator as they are written.

Two sources: ``--watch DUMP_PATH`` streams what the user's own application dumps; ``--model``
runs the model here (``--sim``: an ONNX model on the simulated NPU, whose golden data, fusion
rule and inputs are streamed with the dump, so the host needs nothing else). The work is the
agent library's (``dumpcmp.agent.run``); this command checks the options, says what happened,
and gives Ctrl-C its one line.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.markup import escape

from dumpcmp.commands._flags import StrictCommand
from dumpcmp.commands._output import console, counted, error_console, fail, user_errors
from dumpcmp.commands._remote import ClientCert, ClientKey, HostAddress, TlsCa, TokenFile, host_command
from dumpcmp.printable import skipped_lines

if TYPE_CHECKING:
    from dumpcmp.agent.hunt import HuntOutcome, HuntPass
    from dumpcmp.agent.run import AgentOutcome, AgentRun, PreparedRun
    from dumpcmp.agent.session import HostSession, RunFile, SessionPlan
    from dumpcmp.agent.uploader import RefusedRun, Uploader, UploadSettings
    from dumpcmp.proto.channel import ChannelOptions

__all__ = ["app"]

app = typer.Typer(help="Stream dump files to a host comparator.", no_args_is_help=True)

_MODEL_STATE = Path("dumpcmp-agent")  # the state dir of --model runs, unless --state is given
_PASSES = 8  # --hunt: a statistics pass, a window, and room to widen it upstream or bisect


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
    hunt: Annotated[
        bool,
        typer.Option(
            "--hunt",
            help="With --model: the host steers the capture against the golden data, pass by pass "
            "(statistics first, then windows of tensors), until it has found the culprit.",
        ),
    ] = False,
    max_passes: Annotated[
        int | None,
        typer.Option(
            "--max-passes",
            min=1,
            help=f"With --hunt: run the model at most this many times (default {_PASSES}).",
        ),
    ] = None,
    pass_bytes: Annotated[
        int | None,
        typer.Option(
            "--pass-bytes",
            min=0,
            help="With --hunt: dump bytes one tensor pass may capture (0: the host's bound); a window "
            "holds at least one op, and the statistics pass is not bounded.",
        ),
    ] = None,
) -> None:
    """Stream a dump to the host comparator HOST:PORT, into session NAME.

    --watch DUMP_PATH sends each dump file when it is complete; Ctrl-C (or --until-idle) ends
    the watch after the files ready so far are sent. --model runs the model here and sends its
    dump while it runs; with --sim it also sends the golden data, fusion rule and inputs.
    """
    from dumpcmp.agent.run import extra_files, new_run_token, remove_abandoned_runs
    from dumpcmp.agent.session import SessionPlan, closed_on_host, streamed_by_another
    from dumpcmp.agent.uploader import UploadSettings
    from dumpcmp.errors import TransferError
    from dumpcmp.proto.channel import ChannelOptions, check_address

    # Holds the state directory's lock of the session (_agent_run) and that of a simulated run's
    # directory (claim_run_dir) until the run is settled.
    # Ctrl-C before the upload starts (loading, checking, reaching the host); once it may have
    # started, _stopping says where the session stands instead.
    not_started = (
        f"the agent stopped before it sent anything into session {session}; run the same command again"
    )
    with user_errors(not_started), ExitStack() as held:
        _check_source(session, watch, model, with_model=sim or bool(inputs) or bool(inject) or hunt)
        if not hunt and (max_passes is not None or pass_bytes is not None):
            raise TransferError("--max-passes and --pass-bytes go with --hunt")
        if golden is not None and golden_on_host:
            raise TransferError("--golden and --golden-on-host both say where the golden data is; give one")
        if fusion_rule is not None and fusion_rule_on_host:
            raise TransferError("--fusion-rule and --fusion-rule-on-host both give the rule; give one")
        golden_flags = (
            ("--golden", golden), ("--fusion-rule", fusion_rule),
            ("--golden-on-host", golden_on_host), ("--fusion-rule-on-host", fusion_rule_on_host),
        )  # fmt: skip
        given = [name for name, value in golden_flags if value]
        if sim and given:  # they were accepted and silently ignored, or asked for each other
            raise TransferError(
                f"{' and '.join(given)} do{'es' if len(given) == 1 else ''} not go with --sim: the simulator "
                "makes the run's own golden data and fusion rule"
            )
        address = ChannelOptions(check_address(host), tls_ca, tls_cert, tls_key, token_file)
        plan = SessionPlan(
            session=session,
            model=model_name or _model_label(model),
            golden_uploaded=golden is not None or sim,
            golden_host_path=golden_on_host or "",
            fusion_rule_name=fusion_rule.name
            if fusion_rule is not None
            else ("fusion_rule.json" if sim else ""),
            fusion_rule_host_path=fusion_rule_on_host or "",
            device=device,
        )
        _check_extras(golden, fusion_rule)
        if golden is not None and fusion_rule is None and not fusion_rule_on_host and _holds_npy(golden):
            raise TransferError(
                f"--golden {golden} holds npy files: the host compares NPU dump files with golden npy "
                "files through the ATC fusion rule; give --fusion-rule (a TorchAir GE/FX dump pair is "
                "compared with dumpcmp compare -m torchair)"
            )
        skipped: list[str] = []
        extras = extra_files(golden, fusion_rule, skipped)
        for line in skipped_lines(skipped):  # before the run: a watch may go on for hours
            console().print(line, markup=False)
        # A simulated run's rerun simulates afresh: there is nothing of this one to send again.
        settings = UploadSettings(give_up=give_up, delete_acked=delete_acked)
        if sim:
            settings = replace(
                settings, on_give_up="the next run simulates the model afresh and replaces this one"
            )
        if watch is not None:
            root = watch.resolve()  # "." has no name to put a sibling state directory beside
            state_dir = state or root.parent / f"{root.name}.dumpcmp-agent"
            agent = _agent_run(address, plan, state_dir, settings, held)
            with _closed_said(address), _stopping(agent.target, agent.uploader, f"--watch {root}"):
                outcome = agent.watch(root, extras, until_idle=until_idle, quiet=quiet_time, poll=poll)
        else:
            assert model is not None
            state_dir = state or _MODEL_STATE
            token = new_run_token()
            request = _ModelRequest(model, inputs or [], seed, steps, inject or [], acl_config, device)
            if sim:
                remove_abandoned_runs(state_dir / "runs")
            agent = _agent_run(address, plan, state_dir, settings, held)
            with _closed_said(address), _stopping(agent.target, agent.uploader, f"--model {model}"):
                # Everything about the run is checked (a simulated run's golden data made) before
                # the session opens: a mistake leaves no empty session on the host.
                prepared = (
                    _simulated(request, state_dir / "runs" / token, token, extras, held, keep=keep_run)
                    if sim
                    else _on_acl(request, token, extras)
                )
                outcome = (
                    _hunted(
                        agent, prepared, f"--model {model}", max_passes or _PASSES, pass_bytes or 0, give_up
                    )
                    if hunt
                    else agent.run_model(prepared, f"--model {model}")
                )
        # A session closed without some of its files would give a final verdict that silently
        # lacks them (a truncated culprit file, and the blame moves downstream): it stays open.
        closing = not keep_open and not outcome.undelivered
        results = host_command(["results", session, "--host", address.address], address)
        settled = f"the agent stopped once every file was answered; how session {session} stands: {results}"
        with user_errors(settled):
            try:
                if closing:
                    _close(outcome)
                elif outcome.undelivered:
                    # Refused, perhaps, because another agent closed the session meanwhile: the
                    # summary says where the session stands, not where this agent left it.
                    outcome.closed_elsewhere = _refused_as_closing(outcome) or closed_on_host(outcome.target)
                    if not outcome.closed_elsewhere and _refused(outcome):
                        outcome.streamed_elsewhere = streamed_by_another(outcome.target)
            finally:
                _settle_run(agent, outcome, keep=keep_run or (keep_open and not outcome.undelivered))
    print_summary(outcome, address.address, session, fetch=fetch_command(session, address))


# --------------------------------------------------------------------------- pieces


def _agent_run(
    address: ChannelOptions, plan: SessionPlan, state_dir: Path, settings: UploadSettings, held: ExitStack
) -> AgentRun:
    """The host reached, and this agent the one of ``state_dir`` in the session until ``held``
    ends; a session closed already is one line that says how to see its results."""
    from dumpcmp.agent.run import AgentRun

    with _closed_said(address):
        return AgentRun(address, plan, state_dir, settings, error_console(), held=held)


@contextmanager
def _closed_said(address: ChannelOptions) -> Iterator[None]:
    """A session found closed (or closing), whichever call met it (the agent's first look, the
    session's open, a hunt's next pass): one line that says how to see its results."""
    from dumpcmp.errors import SessionClosed, TransferError

    try:
        yield
    except SessionClosed as exc:
        raise TransferError(_results_are_final(str(exc), exc.session, address)) from None


def _results_are_final(said: str, session: str, address: ChannelOptions) -> str:
    results = host_command(["results", session, "--host", address.address], address)
    return f"{said}: see them with {results}, or stream into a new session name"


@dataclass(frozen=True)
class _ModelRequest:
    model: str
    inputs: list[Path]
    seed: int
    steps: int
    faults: list[str]
    acl_config: Path | None
    device: int


def _check_source(session: str, watch: Path | None, model: str | None, *, with_model: bool) -> None:
    """The session name and the one source, checked before anything is created or run (the name
    becomes the journal's file name here and a directory on the host)."""
    from dumpcmp.errors import TransferError
    from dumpcmp.proto.session_names import session_name_problem

    if problem := session_name_problem(session):
        raise TransferError(f"--session {session!r}: {problem}")
    if (watch is None) == (model is None):
        raise TransferError("give one of --watch DUMP_PATH or --model MODEL")
    if watch is not None and with_model:
        raise TransferError("--sim, --input, --inject and --hunt go with --model, not --watch")
    if watch is not None and not watch.exists():
        # A mistyped path would otherwise be watched (and created) while nothing ever dumps there.
        raise TransferError(f"--watch {watch}: no such dump directory (start the agent once it exists)")
    if watch is not None and not watch.is_dir():
        raise TransferError(f"--watch {watch.resolve()}: is a file, not a dump directory")


def _model_label(model: str | None) -> str:
    """The model's name from --model; "" for a watch: the host shows the model its dump paths name
    (the watched directory's name said ``model wdB`` of a small_cnn dump)."""
    if model is None:
        return ""
    return Path(model.split(":", 1)[1] if model.startswith("zoo:") else model).stem


def _check_extras(golden: Path | None, rule: Path | None) -> None:
    """Refused before any work, in the options' words: a simulated run would otherwise be spent,
    or a watch streamed, before the host found that it cannot compare."""
    from dumpcmp.errors import RuleFileError, TransferError

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
        from dumpcmp.host.fusion_rules import load_rules  # only with a rule: ~35 ms of every agent's start

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


def _simulated(
    request: _ModelRequest, work: Path, token: str, extras: Sequence[RunFile], held: ExitStack, *, keep: bool
) -> PreparedRun:
    """The simulated run, its faults checked, its inputs and golden data made in ``work``.

    A mistake (a fault at an op the model does not have, a bad acl.json or input) is said before
    the session opens; ``work`` goes with it."""
    import shutil

    from dumpcmp.agent.run import claim_run_dir
    from dumpcmp.commands.sim import prepare_agent_run

    held.enter_context(claim_run_dir(work, keep=keep))
    try:
        return prepare_agent_run(
            request.model, work, token, extras, seed=request.seed, steps=request.steps, faults=request.faults,
            acl_config=request.acl_config, inputs=request.inputs, device=request.device,
        )  # fmt: skip
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)  # a run that never reached the host: nothing to keep
        raise


def _on_acl(request: _ModelRequest, token: str, extras: Sequence[RunFile]) -> PreparedRun:
    """An .om run on AscendCL, once its model, acl.json and inputs are fine."""
    from dumpcmp.acl_config import load as load_config
    from dumpcmp.agent.run import prepared_acl_run
    from dumpcmp.errors import ConfigError, ModelError
    from dumpcmp.proto.npy import load_npy

    model = Path(request.model)
    if request.model.startswith("zoo:") or model.suffix == ".onnx":
        raise ModelError(f"--model {request.model}: an ONNX model runs on the simulated NPU: add --sim")
    if not model.is_file():
        raise ModelError(f"--model {model}: no such file (on AscendCL the model is an .om; --sim runs ONNX)")
    if request.acl_config is None:
        raise ConfigError(
            "--model on AscendCL needs --acl-config: the acl.json whose dump section says where"
        )
    config = load_config(request.acl_config)
    dump_path = config.dump.dump_path if config.dump is not None else None
    if not dump_path:
        raise ConfigError(
            f"--acl-config {request.acl_config}: no dump.dump_path, so there is no dump to stream"
        )
    if request.faults:
        raise ModelError("--inject needs --sim: faults are injected into the simulated NPU only")
    if not request.inputs:
        raise ModelError("give the model's inputs with --input (an .om's input shapes are not read here)")
    for path in request.inputs:
        load_npy(path)  # its header: a bad input is said now, the arrays are read for the run
    return prepared_acl_run(
        model, request.inputs, request.acl_config, Path(dump_path), device=request.device,
        steps=request.steps, token=token, extras=extras,
    )  # fmt: skip


def _hunted(
    agent: AgentRun, run: PreparedRun, source: str, max_passes: int, pass_bytes: int, give_up: float
) -> AgentOutcome:
    """The hunt, a line per pass as it ends, then its verdict and what it cost."""
    from dumpcmp.agent.hunt import run_hunt

    def said(done: HuntPass) -> None:
        line = _pass_line(done)
        if pass_bytes and done.bytes_sent > pass_bytes:
            line += (
                " (over --pass-bytes: the statistics pass is not bounded)"
                if done.capture.data == "stats"
                else " (over --pass-bytes: a window holds at least one op)"
            )
        console().print(line, markup=False)

    hunted = run_hunt(
        agent, run, source, max_passes=max_passes, pass_bytes=pass_bytes, give_up=give_up, on_pass=said
    )
    for line in _verdict_lines(hunted):
        console().print(line, markup=False)
    return hunted.outcome


def _pass_line(done: HuntPass) -> str:
    from dumpcmp.proto.runs import CAPTURED_DATA, capture_ops

    capture = done.capture
    ops = capture_ops(list(capture.layers))
    what = (
        f"{CAPTURED_DATA.get(capture.data, capture.data)} ({_CAPTURED_MODE.get(capture.mode, capture.mode)})"
    )
    return (
        f"pass {done.index}: {what} of {ops}: {counted(done.dump_files, 'file')}, "
        f"{_mb(done.bytes_sent)}, {done.seconds:.1f} s: {capture.why}"
    )


# A capture's acl.json dump_mode, in a pass's line.
_CAPTURED_MODE = {"output": "outputs", "input": "inputs", "all": "inputs and outputs"}


def _passes(count: int) -> str:
    return f"{count} pass{'' if count == 1 else 'es'}"


def _verdict_lines(hunted: HuntOutcome) -> list[str]:
    """The verdict and its evidence, then the hunt's totals against a full capture's estimate."""
    verdict = hunted.verdict
    culprit = ""
    if verdict.culprit:
        originals = list(verdict.originals) if list(verdict.originals) != [verdict.culprit] else []
        culprit = f": {verdict.culprit}" + (f" (original ops: {', '.join(originals)})" if originals else "")
    lines = [f"verdict: {verdict.kind}{culprit}, after {_passes(verdict.passes)}"]
    lines += [f"  {line}" for line in verdict.evidence]
    full = hunted.full_capture_bytes
    share = f" ({hunted.bytes_sent / full:.1%} of a full capture's ~{_mb(full)})" if full else ""
    lines.append(
        f"hunt: {_passes(len(hunted.passes))}, {_mb(hunted.bytes_sent)} captured{share}, "
        f"{hunted.seconds:.1f} s"
    )
    return lines


@contextmanager
def _stopping(
    target: HostSession, uploader: Uploader, source: str, when: str = "before every file was sent"
) -> Iterator[None]:
    """Ctrl-C, SIGTERM or an error once the session may be open on the host: the upload stops
    (the journal keeps what the host acknowledged, so the same command carries on from there),
    a session this run opened that holds no dump file is deleted, and the one line says which."""
    from dumpcmp.errors import DumpcmpError

    try:
        yield
    except KeyboardInterrupt:
        uploader.abort()
        opened = uploader.session_info is not None
        _interrupted(target, source, when, opened=opened, dropped=opened and _drop_if_empty(target, uploader))
    except DumpcmpError as exc:
        uploader.abort()
        if uploader.session_info is not None and _drop_if_empty(target, uploader):
            fail(f"{exc}; {_dropped(target)}")
        raise
    except BaseException:
        uploader.abort()
        raise


def _drop_if_empty(target: HostSession, uploader: Uploader) -> bool:
    """``drop_if_empty``, and the session's journal with it once the session is deleted: its
    entries (golden data, inputs) would tell the same command run again that the host lost
    files whose local copies a simulated run has already removed."""
    from dumpcmp.agent.session import drop_if_empty

    if not drop_if_empty(target):
        return False
    uploader.journal_path.unlink(missing_ok=True)  # closed: the upload was aborted or finished
    return True


# What the same command does again, by source: a watch resumes, a model run is made anew.
_RERUN = {
    "--watch": "files the host acknowledged are not sent again",
    "--model": "the model runs again, and that run replaces the unfinished one",
}


_WHILE_CLOSING = "while the session was closing"


def _dropped(target: HostSession) -> str:
    return (
        f"session {target.name}, opened by this run and holding no dump file, "
        f"was deleted from host {target.host.address}"
    )


def _interrupted(target: HostSession, source: str, when: str, *, opened: bool, dropped: bool) -> NoReturn:
    """The one line of an interrupted agent: where its session stands, and what to do about it."""
    from dumpcmp.launch import INTERRUPTED_EXIT_CODE

    session, host = target.name, target.host.address
    if dropped:
        where = _dropped(target)
    elif not opened:
        where = f"session {session} was not opened on host {host} (not reached); run the same command again"
    elif when == _WHILE_CLOSING:
        # The host may have closed it all the same: the close had reached it.
        results = host_command(["results", session, "--host", host], target.host)
        where = (
            f"session {session} may have closed on host {host} (the close had reached it): see how it "
            f"stands with {results}; if it is still open, run the same command again to finish it"
        )
    else:
        delete = host_command(["delete", session, "--host", host], target.host)
        where = (
            f"session {session} is left open on host {host}: run the same command again to finish it "
            f"({_RERUN[source.split()[0]]}), or drop it: {delete}"
        )
    error_console().print(f"[red]interrupted[/red]: the agent stopped {when}; {escape(where)}")
    raise typer.Exit(INTERRUPTED_EXIT_CODE) from None


def _close(outcome: AgentOutcome) -> None:
    """Close the session. One that this run opened and that holds no dump file cannot be closed
    (the host would compare nothing): it is deleted, and the run fails saying so."""
    from dumpcmp.errors import StillStreaming

    # Ctrl-C now comes after every file was sent: the line says so, not that files are missing.
    with _stopping(outcome.target, outcome.uploader, outcome.source, _WHILE_CLOSING):
        if outcome.dump_files == 0 and _drop_if_empty(outcome.target, outcome.uploader):
            passed_over = (
                f" ({counted(len(outcome.skipped), 'other file')} skipped, e.g. {outcome.skipped[0]})"
                if outcome.skipped
                else ""
            )
            fail(
                f"{outcome.source}: no dump file to send{passed_over}, nothing to compare; "
                f"{_dropped(outcome.target)}"
            )
        try:
            outcome.closed = outcome.uploader.close_session()
        except StillStreaming as exc:
            outcome.streamed_elsewhere = True
            if _replaced_meanwhile(outcome, None):
                return
            # This agent's files are all in: another agent's, still on the way, would be refused
            # by a closed session. The host's rule leaves the close to the last one to finish.
            target = outcome.target
            close = host_command(["close", target.name, "--host", target.host.address], target.host)
            last = "the last agent to finish with every file delivered closes it"
            console().print(f"{exc}; {last}, or: {close}", markup=False)
        else:
            _replaced_meanwhile(outcome, outcome.closed)


def _replaced_meanwhile(outcome: AgentOutcome, closed: Any) -> bool:
    """Whether this agent's run, every file of it acknowledged, was replaced before its close by
    a later run of its model and device (another agent's, started at once): the session holds
    that run, not this one, and the summary must say so (both agents said they delivered, exit
    0). ``closed``: the host's SessionInfo of the close, if it closed; else the host is asked."""
    from dumpcmp.agent.session import session_info

    run_id = outcome.run_id
    if not run_id:
        return False
    if closed is None:
        closed = session_info(outcome.target)
    if closed is None or run_id not in closed.replaced_runs:
        return False
    outcome.uploader.run_replaced(run_id)
    outcome.report = outcome.uploader.report()
    return True


def _settle_run(agent: AgentRun, outcome: AgentOutcome, *, keep: bool) -> None:
    """A simulated run's local files: kept when asked (--keep-run, or --keep-open's session left
    open on purpose), and then named; otherwise removed, whether the session closed (the host
    holds them all) or the run failed (its rerun simulates afresh): never left unnamed."""
    from dumpcmp.agent.run import keep_run_dir

    if outcome.run_dir is None:
        return
    if keep:
        keep_run_dir(outcome.run_dir)
        console().print(f"run {outcome.run_id}: its local files are in {outcome.run_dir}", markup=False)
    else:
        agent.forget_run(outcome.run_dir, outcome.run_id, *outcome.other_runs)


def fetch_command(session: str, address: ChannelOptions) -> str:
    """The command that downloads the closed session's result files to this machine."""
    return host_command(["results", session, "--host", address.address, "--out", "DIR"], address)


def print_summary(outcome: AgentOutcome, target: str, session: str, *, fetch: str = "") -> None:
    """What was sent, then the host's summary. Its paths are the host's: with ``fetch`` (the
    command that downloads the results here; an agent's host may be another machine) they are
    said to be, and how to get them follows."""
    report = outcome.report
    printer = console()
    for line in skipped_lines(outcome.skipped):  # as compare says them
        printer.print(line, markup=False)
    for line in (*_grouped_refusals(report.problems), *outcome.not_sent):
        error_console().print(f"[yellow]warning[/yellow]: {escape(line)}")
    sent = report.stored + report.duplicates
    words = [f"{counted(sent, 'file')} sent ({_mb(report.bytes_delivered)})"]
    refused = next((r for r in report.refused_runs if r.run_id == outcome.run_id), None)
    if refused is not None and outcome.run_id:  # sent all the same: none of them counts
        words = [f"{counted(refused.files, 'file')} sent, none kept (the host refused the run)"]
    if report.already:
        words.append(f"{report.already} already on the host")
    if report.reconnects:
        words.append(counted(report.reconnects, "reconnect"))
    where = ""
    if outcome.closed is not None and outcome.closed.data_dir:
        where = f"; results {f'on host {target} ' if fetch else ''}in {outcome.closed.data_dir}"
    state = "closed" if outcome.closed is not None or outcome.closed_elsewhere else "open"
    printer.print(f"session {session} on {target} ({state}): {', '.join(words)}{where}", markup=False)
    if outcome.closed is not None and outcome.closed.summary:
        for line in outcome.closed.summary.splitlines():  # the host's paths: its summary's own
            printer.print(line, markup=False)
        if fetch and outcome.closed.result_files:
            printer.print(f"fetch the result files here: {fetch}", markup=False)
    if outcome.closed is not None and outcome.closed.nothing_compared:
        fail(outcome.closed.nothing_compared)  # compare's very line: no numbers is no all-clear
    if refused is not None and outcome.run_id:
        fail(_refused_run_line(outcome, refused, session))
    if outcome.undelivered:
        still_open = _undelivered_session(outcome, session)
        fail(f"{counted(outcome.undelivered, 'file')} not delivered (see the warnings above){still_open}")


def _refused_run_line(outcome: AgentOutcome, refused: RefusedRun, session: str) -> str:
    """What became of a model run the host took none of: why, how many of its files the host
    holds (none), and what to do. It said "N files not delivered", and "2 files sent" of files
    the host dropped with the run; of a run replaced by a later one, that a rerun is refused again."""
    from dumpcmp.errors import SessionClosed
    from dumpcmp.proto.runs import REPLACED_REFUSAL
    from dumpcmp.proto.session_names import closed_by

    held = f"the host holds none of its {counted(refused.files, 'file')}"
    if refused.dropped:
        held += f" ({refused.dropped} acknowledged before the host dropped them with the run)"
    host = outcome.target.host
    if state := closed_by(refused.why, session):
        said = str(SessionClosed(session, host.address, closing=state == "closing"))
        return f"{_results_are_final(said, session, host)}; run {refused.run_id} was refused: {held}"
    if refused.why == REPLACED_REFUSAL.format(refused.run_id):
        holds = f"{refused.why} of its model and device: {held}; session {session} holds that run now"
        if outcome.closed_elsewhere:
            return f"{holds}, and was closed meanwhile (not by this agent)"
        if outcome.streamed_elsewhere:
            return f"{holds}{_STILL_STREAMING}; wait for it to end, or stream into another session name"
        return f"{holds} (a rerun would replace it in turn)"
    line = f"run {refused.run_id} was refused by the host ({refused.why}): {held}"
    if outcome.closed_elsewhere:
        return f"{line}; session {session} was closed meanwhile (not by this agent)"
    return line + _refused_again(outcome, "it")


def _undelivered_session(outcome: AgentOutcome, session: str) -> str:
    """What became of the session that lacks the undelivered files, and how to end it ("": closed
    by this agent, its results say so)."""
    if outcome.closed is not None:
        return ""
    if outcome.closed_elsewhere:
        return f"; session {session} was closed meanwhile (not by this agent): its results lack them"
    host = outcome.target.host
    close = host_command(["close", session, "--host", host.address], host)
    if _refused(outcome):
        return _refused_again(outcome, "them")
    # The host knows nothing of files never sent: a close without them says nothing either.
    return (
        f"; session {session} is left open, so its results never lack them: run the same command "
        f"again once they are whole, or {close} (its results then lack them, and the first "
        "divergence may lie in one)"
    )


# Said of a session whose run is another agent's, live: ending it is not this agent's to advise.
_STILL_STREAMING = ", which another agent is still streaming (the session is not closing)"


def _refused_again(outcome: AgentOutcome, what: str) -> str:
    """Left open for a rerun, the session refuses the same files again: what does work. Not the
    end of a session another agent still streams into: that would destroy its live run."""
    target = outcome.target
    session, host = target.name, target.host
    if outcome.streamed_elsewhere:
        return (
            f"; session {session}{_STILL_STREAMING}, refuses {what} again: stream into another session "
            "name; close or delete it only once that agent has ended"
        )
    close = host_command(["close", session, "--host", host.address], host)
    delete = host_command(["delete", session, "--host", host.address], host)
    return (
        f"; the host refuses {what} again in a rerun into session {session}: stream into another "
        f"session name, or end this one first: {close} (its results then lack {what}) or {delete}"
    )


def _refused(outcome: AgentOutcome) -> bool:
    """Whether the host refused some of the files (or, for a watch, its golden data or rule)."""
    from dumpcmp.agent.run import NOT_WATCHED
    from dumpcmp.agent.uploader import REFUSED

    return any(REFUSED in line for line in outcome.report.problems) or any(
        NOT_WATCHED in line for line in outcome.not_sent
    )


def _refused_as_closing(outcome: AgentOutcome) -> bool:
    """Whether the host refused files because another agent (or a hand) was closing the session:
    closed for this agent, though the host says open until its comparison ends."""
    from dumpcmp.proto.session_names import CLOSING_REFUSAL

    closing = CLOSING_REFUSAL.format(outcome.target.name)
    return any(line.endswith(closing) for line in outcome.report.problems)


def _grouped_refusals(problems: Sequence[str]) -> list[str]:
    """One line per reason the host refused files for: a refused run is every file of it, each
    refused alike (a line per file buried the reason under a screenful of names)."""
    from dumpcmp.agent.uploader import REFUSED

    order: list[tuple[str, str]] = []  # ("", line) as it is, or (reason, "") for a group
    alike: dict[str, list[str]] = {}
    for line in problems:
        label, found, reason = line.partition(REFUSED)
        if not found:
            order.append(("", line))
            continue
        if reason not in alike:
            alike[reason] = []
            order.append((reason, ""))
        alike[reason].append(label)
    lines = []
    for reason, line in order:
        if not reason:
            lines.append(line)
            continue
        first, *others = alike[reason]
        more = f" and {counted(len(others), 'other file')}" if others else ""
        lines.append(f"{first}{more}{REFUSED}{reason}")
    return lines


def _mb(count: int) -> str:
    from dumpcmp.agent.progress import human_bytes

    return human_bytes(count)
