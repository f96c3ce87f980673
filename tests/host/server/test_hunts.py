"""NextCapture on the host: each refusal one line with its status; a pass is taken only once its
run ended; a new hunt drops an older hunt's passes; a repeated call gets the same answer."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import grpc
import numpy as np
import pytest

from dumpcmp.commands.sim import simulate
from dumpcmp.fakes.simulate import SimulationResult
from dumpcmp.host.server.serve import HostServer
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from dumpcmp.proto.runs import run_identity
from dumpcmp.proto.session_names import CLOSED_METADATA, CLOSING_REFUSAL, STREAMING_METADATA
from tests.host.server.hostkit import (  # noqa: F401 (fixture: held_close)
    CALL_TIMEOUT_S,
    Client,
    HeldClose,
    held_close_fixture,
    run_mark,
    session_settings,
    simulation_files,
)

StatusOf = Callable[[Callable[[], object]], grpc.StatusCode]
HUNT = "00112233445566aa"
OTHER_HUNT = "ffeeddccbbaa0099"


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> SimulationResult:
    return simulate("zoo:small_cnn", tmp_path_factory.mktemp("sim") / "run", seed=3)


def ask(
    client: Client, finished: str = "", *, hunt: str = HUNT, protocol: int = 1, session: str = "s1"
) -> pb.CapturePlan:
    request = pb.NextCaptureRequest(
        session=session, protocol=protocol, hunt=hunt, model="small_cnn", device=0, finished_run=finished
    )
    return client.stub.NextCapture(request, timeout=CALL_TIMEOUT_S)


def session_files(client: Client, sim: SimulationResult) -> None:
    """The session with its golden data and rule, no dump yet (as a hunting agent sends them)."""
    client.open("s1", **session_settings())
    files = {key: data for key, data in simulation_files(sim).items() if key[0] != pb.DUMP}
    assert {a.status for a in client.send("s1", files)} == {pb.UploadAck.STORED}


def pass_run(client: Client, sim: SimulationResult, index: int, *, hunt: str = HUNT, end: bool = True) -> str:
    """Pass ``index`` as a run: START, the simulation's dump under a time directory of its own, END."""
    run = run_identity(f"small_cnn.hunt{index}", 0, "20260101000000", hunt)
    dumps = {
        (kind, f"2026010100000{index}/{path.split('/', 1)[1]}"): data
        for (kind, path), data in simulation_files(sim).items()
        if kind == pb.DUMP
    }
    output = np.zeros(3, np.float32).tobytes()
    dumps[(pb.OUTPUT, f"{run}/0.output.npy")] = output
    client.upload([run_mark("s1", run, pb.RunMark.START)])
    assert {a.status for a in client.send("s1", dumps, run_id=run)} == {pb.UploadAck.STORED}
    if end:
        client.upload([run_mark("s1", run, pb.RunMark.END)])
    return run


def hunted_one_pass(client: Client, sim: SimulationResult) -> tuple[str, pb.CapturePlan]:
    """A hunt in session s1 whose first pass ended and was taken: that pass's run id, and the
    host's answer to it (the next capture, or the verdict)."""
    session_files(client, sim)
    ask(client)
    done = pass_run(client, sim, 1)
    return done, ask(client, done)


def test_a_hunt_begins_with_a_statistics_pass_and_takes_each_ended_pass(
    client: Client, sim: SimulationResult, tmp_path: Path
) -> None:
    session_files(client, sim)
    first = ask(client)
    assert (first.protocol, first.pass_index, first.WhichOneof("next")) == (1, 1, "capture")
    assert first.capture.data == "stats" and not first.capture.layers and first.full_capture_bytes > 0
    run = pass_run(client, sim, 1)
    after = ask(client, run)
    assert after.WhichOneof("next") in ("capture", "verdict")
    assert ask(client, run) == after  # asked again (the answer was lost): the same answer
    hunts = list((tmp_path / "data/sessions/s1/hunts").iterdir())
    assert [p.name for p in hunts] == ["small_cnn@dev0.json"]
    assert (tmp_path / f"data/sessions/s1/outputs/{run}/0.output.npy").is_file()


def test_a_pass_whose_run_has_not_ended_is_refused_in_one_line(
    client: Client, sim: SimulationResult, status_of: StatusOf
) -> None:
    session_files(client, sim)
    ask(client)
    run = pass_run(client, sim, 1, end=False)
    with pytest.raises(grpc.RpcError) as caught:
        ask(client, run)
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION  # type: ignore[attr-defined]
    assert "has not ended" in caught.value.details() and "\n" not in caught.value.details()  # type: ignore[attr-defined]
    wrong = run_identity("small_cnn.hunt2", 0, "20260101000000", HUNT)  # not the pass planned
    assert status_of(lambda: ask(client, wrong)) == grpc.StatusCode.FAILED_PRECONDITION


def test_a_new_hunt_drops_the_passes_of_the_older_one(
    client: Client, sim: SimulationResult, tmp_path: Path
) -> None:
    # An agent killed between passes and run again: its passes must not mix with the new hunt's.
    old, _answer = hunted_one_pass(client, sim)
    assert ask(client, hunt=OTHER_HUNT).pass_index == 1
    info = client.info("s1")
    assert list(info.replaced_runs) == [old]
    assert not [f for f in info.files if f.kind in (pb.DUMP, pb.OUTPUT)]
    assert not (tmp_path / "data/sessions/s1/dump").exists() or not any(
        p.is_file() for p in (tmp_path / "data/sessions/s1/dump").rglob("*")
    )
    assert {f.kind for f in info.files} == {pb.GOLDEN, pb.FUSION_RULE}  # the session's own files stay
    with pytest.raises(grpc.RpcError) as caught:  # the old hunt's agent, still going, is told
        ask(client, old)
    assert "no hunt" in caught.value.details()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("setup", "code", "said"),
    [
        ("no session", grpc.StatusCode.NOT_FOUND, "s1"),
        ("no golden", grpc.StatusCode.FAILED_PRECONDITION, "session s1 holds no golden data"),
        ("no rule", grpc.StatusCode.FAILED_PRECONDITION, "session s1 holds no fusion rule"),
        ("closed", grpc.StatusCode.FAILED_PRECONDITION, "session s1 is closed and its results are final"),
        ("protocol 2", grpc.StatusCode.FAILED_PRECONDITION, "hunt protocol 2 is unknown to this host"),
        ("bad hunt id", grpc.StatusCode.INVALID_ARGUMENT, "a hunt needs its id"),
    ],
)
def test_refusals_are_one_line_with_their_status(
    client: Client, sim: SimulationResult, setup: str, code: grpc.StatusCode, said: str
) -> None:
    if setup == "no golden":
        client.open("s1")
    elif setup == "no rule":
        client.open("s1", golden_uploaded=True)
        client.send("s1", {k: v for k, v in simulation_files(sim).items() if k[0] == pb.GOLDEN})
    elif setup != "no session":
        session_files(client, sim)
    if setup == "closed":
        client.send("s1", {k: v for k, v in simulation_files(sim).items() if k[0] == pb.DUMP})
        client.close("s1")
    with pytest.raises(grpc.RpcError) as caught:
        ask(
            client, hunt="xyz" if setup == "bad hunt id" else HUNT, protocol=2 if setup == "protocol 2" else 1
        )
    details = caught.value.details()  # type: ignore[attr-defined]
    assert caught.value.code() == code and said in details and "\n" not in details, details  # type: ignore[attr-defined]


def test_next_capture_asks_for_the_token_like_every_call(hosts: object, tmp_path: Path) -> None:
    from tests.host.server.hostkit import Hosts

    assert isinstance(hosts, Hosts)
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    server: HostServer = hosts.start(tmp_path / "data", token_file=token)
    with pytest.raises(grpc.RpcError) as caught:
        ask(hosts.client(server))
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED  # type: ignore[attr-defined]


def _trailing(error: grpc.RpcError) -> dict[str, str]:
    return dict(error.trailing_metadata() or ())  # type: ignore[attr-defined]


def test_a_hunt_asking_while_its_session_closes_is_refused_and_drops_nothing(
    client: Client, sim: SimulationResult, held_close: HeldClose
) -> None:
    # NextCapture checked only for a closed session: during a close, a new hunt's begin dropped
    # the earlier hunt's passes (files and rows) under the closing comparison, and a new pass was
    # planned whose START was refused once the model had run again.
    old, _answer = hunted_one_pass(client, sim)
    held = {f.path for f in client.info("s1").files}
    answers: list[object] = []
    closer = threading.Thread(target=lambda: answers.append(client.close("s1")))
    closer.start()
    try:
        assert held_close.entered.wait(CALL_TIMEOUT_S)
        for finished, hunt in (("", OTHER_HUNT), (old, HUNT)):  # a new hunt, and the old one's next pass
            with pytest.raises(grpc.RpcError) as caught:
                ask(client, finished, hunt=hunt)
            assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION  # type: ignore[attr-defined]
            assert caught.value.details() == CLOSING_REFUSAL.format("s1")  # type: ignore[attr-defined]
            assert _trailing(caught.value)[CLOSED_METADATA] == "closing"
    finally:
        held_close.release.set()
        closer.join(CALL_TIMEOUT_S)
    (info,) = answers
    assert isinstance(info, pb.SessionInfo) and info.state == pb.SessionInfo.CLOSED
    assert {f.path for f in info.files} == held and not info.replaced_runs
    with pytest.raises(grpc.RpcError) as caught:
        ask(client, old)
    assert _trailing(caught.value)[CLOSED_METADATA] == "closed"


def test_a_close_while_a_hunt_plans_its_next_pass_is_refused_as_during_an_upload(
    client: Client, sim: SimulationResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The check and the close's start are atomic: a close beginning while a pass is planned (the
    # planner drops an earlier hunt's passes and compares this one's) is refused, as while an
    # agent streams; the hunt's agent closes the session itself after its verdict.
    from dumpcmp.host.server.hunts import Hunts

    session_files(client, sim)
    client.send("s1", {k: v for k, v in simulation_files(sim).items() if k[0] == pb.DUMP})
    planning, release = threading.Event(), threading.Event()
    real = Hunts.next_capture

    def slow(self: Hunts, request: pb.NextCaptureRequest) -> pb.CapturePlan:
        planning.set()
        assert release.wait(CALL_TIMEOUT_S)
        return real(self, request)

    monkeypatch.setattr(Hunts, "next_capture", slow)
    answers: list[pb.CapturePlan] = []
    asker = threading.Thread(target=lambda: answers.append(ask(client)))
    asker.start()
    try:
        assert planning.wait(CALL_TIMEOUT_S)
        with pytest.raises(grpc.RpcError) as caught:
            client.close("s1")
        assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION  # type: ignore[attr-defined]
        assert STREAMING_METADATA in _trailing(caught.value)
    finally:
        release.set()
        asker.join(CALL_TIMEOUT_S)
    assert answers and answers[0].pass_index == 1
    assert client.close("s1").state == pb.SessionInfo.CLOSED  # the plan answered: nothing holds it


def test_the_close_of_a_hunt_session_says_what_the_hunt_concluded_and_which_pass_each_capture_is(
    client: Client, sim: SimulationResult
) -> None:
    # Its summary read as one run's: the passes' captures as shards, a first divergence of its own.
    done, answer = hunted_one_pass(client, sim)
    concluded = answer.WhichOneof("next") == "verdict"
    info = client.close("s1")
    first, second, *_rest = info.summary.splitlines()
    ended = "verdict " if concluded else "no verdict (it ended before one)"
    assert first.startswith(f"hunt of small_cnn@dev0 (hunt {HUNT}): {ended}"), first
    assert first.endswith("; the rows below are its passes' captures, each compared on its own"), first
    assert second == f"  pass 1: statistics of every op: run {done}: dump/20260101000001/0/small_cnn/1", (
        second
    )
