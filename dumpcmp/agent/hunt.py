"""A hunt (``agent run --hunt``) as a library: the host steers the capture, pass by pass, until
it has pinned the culprit.

``run_hunt`` drives one ``AgentRun``: the hunt's own files (golden data, fusion rule, inputs) go
first, as a run of their own (label ``{model}.hunt``, ``proto.runs``) that every pass is compared
with, and that a rerun's replace. A session takes one run's golden data: where the host refuses
them (the session holds another run's, or another model's), the hunt stops before it begins, with
the host's reason. Then NextCapture begins the hunt, and for each capture the host plans the agent
writes the pass's acl.json (``acl_config``), runs the model again through the same live path as
any ``--model`` run (``AgentRun.stream``: the dump streams while it runs), sends the model's
outputs as OUTPUT files, ends the run, waits until every file is acknowledged, and asks again with
the pass's run id, until the host answers a verdict. Each pass is a run of its own (label
``{model}.hunt{k}``, token the hunt id, ``proto.runs``); the hunt id is new for each call, so a
rerun after a crash begins a new hunt, which drops the old one's passes on the host.

AscendCL is initialised once for the whole hunt (real AscendCL refuses aclInit after aclFinalize
in one process): each pass's ``dump_session`` then counts a reference and gives it back. The
simulated NPU keeps its model ids counting across loads, so each pass dumps into its own
``{time}/{device}/{model}/{model_id}`` directory even within one second.

Nothing here prints: ``on_pass`` hears of each pass as it ends.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import grpc

from dumpcmp.acl_config import AclConfig, DumpTarget
from dumpcmp.agent.backend import DumpFileReporter
from dumpcmp.agent.journal import forget_run
from dumpcmp.agent.live_run import RunStart
from dumpcmp.agent.model_run import ModelRun
from dumpcmp.agent.progress import UploadProgress
from dumpcmp.agent.run import AgentOutcome, AgentRun, PreparedRun, new_run_token
from dumpcmp.agent.session import RunFile, add_files
from dumpcmp.agent.uploader import REFUSED
from dumpcmp.errors import SessionClosed, TransferError
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from dumpcmp.proto._gen import dumpcmp_v1_pb2_grpc as pb_grpc
from dumpcmp.proto.channel import ChannelOptions, call_failed, open_channel, session_closed
from dumpcmp.proto.runs import HUNT_PROTOCOL, hunt_files_label, hunt_pass_label
from dumpcmp.proto.session_names import closed_by

__all__ = ["HuntOutcome", "HuntPass", "run_hunt"]

_PLAN_TIMEOUT_S = 600.0  # the host compares a pass before it answers
_RETRY_S = (0.2, 2.0)  # the first and the longest wait before asking a host that went away again


@dataclass(frozen=True)
class HuntPass:
    """One pass as it went: what it captured, as which run, and what that cost."""

    index: int
    capture: pb.Capture
    run_id: str
    dump_files: int
    bytes_sent: int  # the pass's dump and outputs, as sent
    seconds: float  # run, stream and acknowledgements


@dataclass(frozen=True)
class HuntOutcome:
    hunt: str
    passes: tuple[HuntPass, ...]
    verdict: pb.HuntVerdict
    full_capture_bytes: int  # the host's estimate of a full capture (dump_mode all, every op, every step)
    seconds: float  # the whole hunt, from its session files to the verdict
    outcome: AgentOutcome  # the upload as a whole, for the session's close and summary

    @property
    def bytes_sent(self) -> int:
        return sum(p.bytes_sent for p in self.passes)


def run_hunt(
    agent: AgentRun,
    run: PreparedRun,
    source: str,
    *,
    max_passes: int = 8,
    pass_bytes: int = 0,
    give_up: float = 300.0,
    on_pass: Callable[[HuntPass], None] | None = None,
) -> HuntOutcome:
    """Hunt with ``run`` (its model, inputs, faults and device; its acl.json's dump path) into
    ``agent``'s session: at most ``max_passes`` passes, each bounded by ``pass_bytes`` (0: the
    host's bound). A host that went away (restarted between passes) is asked again for up to
    ``give_up`` seconds: its bookkeeping and the passes it holds survive a restart. Raises
    TransferError (one line) when the host refuses the hunt."""
    hunt_id = new_run_token()
    work = agent.state_dir / "hunts" / hunt_id
    host = agent.target.host
    channel = open_channel(host)
    stub = pb_grpc.DumpCompareStub(channel)

    def ask(finished: str) -> pb.CapturePlan:
        request = pb.NextCaptureRequest(
            session=agent.target.name, protocol=HUNT_PROTOCOL, hunt=hunt_id, model=run.label,
            device=run.device, finished_run=finished, max_passes=max_passes, pass_bytes=pass_bytes,
        )  # fmt: skip
        return _plan(stub, request, host, give_up)

    uploader = agent.uploader
    started = time.monotonic()
    passes: list[HuntPass] = []
    runs: list[str] = []  # every pass run started, the one under way included
    runtime = run.runtime
    uploader.start()
    try:
        first = runtime.init()  # held for the whole hunt
        try:
            _send_session_files(agent, replace(run, label=hunt_files_label(run.label), token=hunt_id), runs)
            plan = ask("")
            while plan.WhichOneof("next") == "capture":
                done = _run_pass(agent, run, source, hunt_id, plan, work, runs)
                passes.append(done)
                if on_pass is not None:
                    on_pass(done)
                plan = ask(done.run_id)
        finally:
            if first:
                runtime.finalize()
            else:
                runtime.finalize_reference()
        report = uploader.finish()
    except BaseException:
        uploader.abort()
        if run.work_dir is not None:  # a simulated hunt's rerun simulates afresh: nothing to resend
            for run_id in runs:
                forget_run(uploader.journal_path, run_id)
            shutil.rmtree(run.work_dir, ignore_errors=True)
        raise
    finally:
        channel.close()
        shutil.rmtree(work, ignore_errors=True)
    if plan.WhichOneof("next") != "verdict":
        raise TransferError(f"host {host.address}: NextCapture answered neither a capture nor a verdict")
    files = sum(p.dump_files for p in passes)
    outcome = AgentOutcome(uploader, report, agent.target, source, files)
    outcome.run_dir, outcome.run_id = run.work_dir, passes[-1].run_id if passes else ""
    full = plan.full_capture_bytes * run.steps  # the host's estimate is of one execution's dump
    return HuntOutcome(hunt_id, tuple(passes), plan.verdict, full, time.monotonic() - started, outcome)


def _plan(
    stub: pb_grpc.DumpCompareStub, request: pb.NextCaptureRequest, host: ChannelOptions, give_up: float
) -> pb.CapturePlan:
    """The host's next step; one line when it cannot give one. A call repeated gets the same
    answer (the host's planner is deterministic in the passes it holds)."""
    deadline = time.monotonic() + give_up
    wait = _RETRY_S[0]
    while True:
        try:
            plan: pb.CapturePlan = stub.NextCapture(request, timeout=_PLAN_TIMEOUT_S)
            break
        except grpc.RpcError as exc:
            code = exc.code() if isinstance(exc, grpc.Call) else None
            if code is not grpc.StatusCode.UNAVAILABLE or time.monotonic() + wait > deadline:
                raise _refusal(exc, request.session, host) from None
            time.sleep(wait)
            wait = min(wait * 2, _RETRY_S[1])
    if plan.protocol != HUNT_PROTOCOL:
        raise TransferError(
            f"host {host.address} speaks hunt protocol {plan.protocol}, this agent {HUNT_PROTOCOL}: "
            "use an agent and a host of the same dumpcmp version"
        )
    return plan


def _refusal(exc: grpc.RpcError, session: str, host: ChannelOptions) -> TransferError:
    if isinstance(exc, grpc.Call) and exc.code() is grpc.StatusCode.UNIMPLEMENTED:
        return TransferError(
            f"host {host.address} does not support --hunt (its dumpcmp is older): upgrade it, or run "
            "without --hunt"
        )
    # A close begun between two passes: the next one is refused before the model runs again.
    return session_closed(exc, session, host.address) or call_failed(exc, host.address, host)


def _send_session_files(agent: AgentRun, run: PreparedRun, runs: list[str]) -> None:
    """The golden data, rule and inputs every pass is compared with, as the run ``run`` starts,
    all acknowledged; TransferError (the host's reason, one line) when the host refused any."""
    uploader = agent.uploader
    begun = _session_files(run)
    runs.append(begun.run_id)  # forgotten by the journal, with the local files, if the hunt fails
    uploader.add_run_mark(begun.run_id, pb.RunMark.START)
    add_files(uploader, list(begun.files), begun.run_id)
    uploader.add_run_mark(begun.run_id, pb.RunMark.END)
    _settle(agent, "the session's files")
    refused = [line for line in uploader.report().problems if REFUSED in line]
    if refused:
        reason = refused[0].split(REFUSED, 1)[1]
        session = agent.target.name
        if state := closed_by(reason, session):  # a close began before the hunt: said as any such
            raise SessionClosed(session, agent.target.host.address, closing=state == "closing")
        raise TransferError(f"the host refused the hunt's golden data, rule and inputs: {reason}")


def _session_files(run: PreparedRun) -> RunStart:
    """The run of the golden data, rule and inputs. The simulator makes its rule as it compiles
    the model, at load: it is loaded once (not dumped) to make it."""
    if run.work_dir is None:
        return run.start(0)  # on AscendCL they are the user's files, made before any load
    runtime = run.runtime
    runtime.set_device(run.device)
    try:
        model_id = runtime.load(run.model)
        try:
            return run.start(model_id)
        finally:
            runtime.unload(model_id)
    finally:
        runtime.reset_device(run.device)


def _run_pass(
    agent: AgentRun, run: PreparedRun, source: str, hunt_id: str, plan: pb.CapturePlan, work: Path,
    runs: list[str],
) -> HuntPass:  # fmt: skip
    """One pass: the model run under the capture's acl.json, streamed, every file acknowledged."""
    capture, index = plan.capture, plan.pass_index
    directory = work / f"pass{index}"
    directory.mkdir(parents=True)
    target = DumpTarget(None, tuple(capture.layers))
    config = AclConfig.build(
        str(run.dump_root), targets=[target], mode=capture.mode, data=capture.data, stats=tuple(capture.stats)
    ).write(directory / "acl.json")
    label = hunt_pass_label(run.label, index)
    this = replace(run, label=label, token=hunt_id, acl_config=config, files=lambda _model_id: ())
    before = agent.uploader.stats().bytes_sent
    began = time.monotonic()

    def start(model_id: int) -> RunStart:
        begun = this.start(model_id)
        runs.append(begun.run_id)
        return begun

    streamed = agent.stream(this, source, start, _outputs(directory, run))
    _settle(agent, f"pass {index}: run {streamed.run_id}")
    sent = agent.uploader.stats().bytes_sent - before
    return HuntPass(index, capture, streamed.run_id, streamed.dump_files, sent, time.monotonic() - began)


def _outputs(directory: Path, run: PreparedRun) -> Callable[[str, ModelRun], list[RunFile]]:
    """The model's outputs of its first step as OUTPUT files of the pass's run. Only where the
    backend gives them typed (the simulator): AscendCL's come back as raw bytes, whose dtype
    and shape the binding does not read, so the host would compare bytes with golden values."""
    import numpy as np

    def write(run_id: str, ran: ModelRun) -> list[RunFile]:
        if not isinstance(run.runtime.backend, DumpFileReporter) or not ran.outputs:
            return []
        files: list[RunFile] = []
        for index, array in enumerate(ran.outputs[0]):
            path = directory / f"{index}.output.npy"
            with path.open("wb") as out:
                np.save(out, np.asarray(array), allow_pickle=False)
            files.append((pb.OUTPUT, f"{run_id}/{index}.output.npy", path))
        return files

    return write


def _settle(agent: AgentRun, what: str) -> None:
    """Wait until the host acknowledged everything handed over so far."""
    uploader = agent.uploader
    with UploadProgress(agent.console, uploader.stats, lambda: what) as progress:
        uploader.settle(progress.refresh)
