"""The agent as a library: ``AgentRun`` streams a simulated run through the hardware's live path."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dumpcmp.agent.run import AgentRun, claim_run_dir, new_run_token, remove_abandoned_runs
from dumpcmp.agent.session import SessionPlan
from dumpcmp.agent.uploader import UploadSettings
from dumpcmp.commands.sim import prepare_agent_run
from dumpcmp.fakes.executor import OpRun
from dumpcmp.fakes.npu import SimulatedAcl
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from dumpcmp.proto.channel import ChannelOptions
from dumpcmp.proto.runs import run_slot
from tests.agent.recording_host import RecordingHost, ServerHandle, serving

SESSION = "lib"
WAIT_S = 60.0


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerHandle]:
    with serving(RecordingHost(tmp_path / "host")) as handle:
        yield handle


def _dump_acks(host: RecordingHost) -> int:
    with host.lock:
        return sum(
            1 for _s, path, status in host.acks if status == pb.UploadAck.STORED and path.count("/") == 5
        )


def test_a_simulated_run_is_uploaded_while_the_model_still_runs(server: ServerHandle, tmp_path: Path) -> None:
    # `agent run --sim` ran the whole simulation first and uploaded afterwards: the live path real
    # AscendCL takes was never exercised without hardware.
    state = tmp_path / "state"
    token = new_run_token()
    run = prepare_agent_run("zoo:small_cnn", state / "runs" / token, token, device=2)
    backend = run.runtime.backend
    assert isinstance(backend, SimulatedAcl)
    ops: list[str] = []
    seen_while_running: list[int] = []

    def op_ran(op: OpRun) -> None:  # on the executing thread, between two ops of the model
        ops.append(op.op.name)
        if len(ops) == 12:  # the model stops here until the host has files of it
            deadline = time.monotonic() + WAIT_S
            while _dump_acks(server.host) < 3 and time.monotonic() < deadline:
                time.sleep(0.01)
            seen_while_running.append(_dump_acks(server.host))

    backend.on_op = op_ran
    agent = AgentRun(ChannelOptions(server.target), SessionPlan(SESSION, "small_cnn", device=2), state,
                     UploadSettings())  # fmt: skip
    outcome = agent.run_model(run, "--model zoo:small_cnn")
    assert seen_while_running and seen_while_running[0] >= 3  # acknowledged before op 13 even ran
    assert len(ops) > 12 and outcome.report.problems == ()
    session = server.host.sessions[SESSION]
    dumps = [path for kind, path in session.files if kind == pb.DUMP]
    assert len(dumps) == outcome.dump_files == len(backend.written)
    assert all(path.split("/")[1] == "2" for path in dumps)  # {time}/{device}/…: --device reaches the dump
    (run_id, _), (ended, event) = session.runs
    assert (ended, event) == (run_id, pb.RunMark.END) and run_id.endswith(f"@{token}")
    assert run_slot(run_id) == "small_cnn@dev2"
    assert not [t for t in threading.enumerate() if t.name == "dumpcmp-sim-dump"]


def test_a_run_directory_being_claimed_is_not_removed_as_abandoned_by_another_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two agents of one state directory starting at once: the second's removal of abandoned runs
    # ran between the first's making of its run's directory and its lock, and removed it.
    runs = tmp_path / "state" / "runs"
    work = runs / new_run_token()
    remover = threading.Thread(target=remove_abandoned_runs, args=(runs,), name="other-agent")
    opened = Path.open

    def open_after_the_other_agent_looked(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self == work / ".running" and not remover.is_alive():
            remover.start()  # the other agent, now: it waits for the claim, or finds an unheld run
            remover.join(timeout=0.5)
        return opened(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", open_after_the_other_agent_looked)
    with claim_run_dir(work):
        monkeypatch.setattr(Path, "open", opened)
        remover.join(timeout=WAIT_S)
        assert not remover.is_alive()
        assert (work / ".running").is_file()  # held, so not abandoned: still there
    remove_abandoned_runs(runs)  # released (its agent ended): abandoned now
    assert not list(runs.iterdir())
