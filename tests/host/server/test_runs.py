"""One run is one run on the host: a run replaces the earlier runs of its slot (model and device)
whoever sends it, a run bringing another run's golden data is refused whole, and nothing that a
replaced run or a host crash left behind stays in the session's tree."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import grpc
import pytest

from dumpcmp.fakes.simulate import SimulationResult
from dumpcmp.host.server.serve import HostServer
from dumpcmp.host.server.service import DumpCompareService
from dumpcmp.host.server.store import SessionStore
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from dumpcmp.proto.runs import run_identity, run_slot
from tests.agent.recording_host import uploader_for
from tests.host.server.hostkit import (  # noqa: F401 (fixture: held_close)
    CALL_TIMEOUT_S,
    Client,
    HeldClose,
    Hosts,
    file_messages,
    held_close_fixture,
    session_settings,
    simulation_files,
)

Ack = pb.UploadAck


def _run(device: int, token: str, model: str = "small_cnn") -> str:
    return run_identity(model, device, "20261128061351", token)


def _mark(client: Client, run_id: str, event: int, agent: str) -> pb.UploadAck:
    mark = pb.RunMark(session="s1", run_id=run_id, event=event, agent_id=agent)  # type: ignore[arg-type]
    (ack,) = client.upload([pb.UploadMessage(run=mark)])
    return ack


def _first_run_started(client: Client) -> tuple[str, str]:
    """Session s1 opened and a run started in it (by agent "a"); that run's id, and the id of a
    later run of its model and device."""
    client.open("s1")
    first, again = _run(0, "aaaaaaaa"), _run(0, "bbbbbbbb")
    _mark(client, first, pb.RunMark.START, "a")
    return first, again


def _dump(run_id: str, name: str) -> dict[tuple[int, str], bytes]:
    return {(pb.DUMP, f"20261128061351/0/small_cnn/1/0/{name}"): run_id.encode()}


def test_a_run_identity_names_its_slot() -> None:
    assert run_slot(_run(3, "0123abcd", "a@b c")) == "a_b_c@dev3"
    assert run_slot("0123456789abcdef") == ""  # an older agent's id: no slot
    assert run_slot("m@dev0@2026@0123abcd") == ""


def test_a_rerun_replaces_its_slots_finished_run_whichever_agent_process_sends_it(client: Client) -> None:
    # `agent run --model M --sim --keep-open` then the same command (or a kill during the close,
    # after END, then a rerun): the session held both runs, 21 of 29 rows twice.
    client.open("s1")
    first, other_device, again = _run(0, "aaaaaaaa"), _run(1, "bbbbbbbb"), _run(0, "cccccccc")
    assert _mark(client, first, pb.RunMark.START, "agent-1").status == Ack.RUN_ACCEPTED
    client.send("s1", _dump(first, "Add.a.1.1.1"), run_id=first)
    assert _mark(client, first, pb.RunMark.END, "agent-1").status == Ack.RUN_ACCEPTED
    assert _mark(client, other_device, pb.RunMark.START, "agent-2").message == ""
    client.send("s1", {(pb.DUMP, "20261128061351/1/small_cnn/1/0/Add.a.1.1.1"): b"dev1"}, run_id=other_device)
    ack = _mark(client, again, pb.RunMark.START, "agent-3")  # another state directory, another process
    assert (ack.status, ack.message) == (Ack.RUN_ACCEPTED, f"replaced runs: {first}")
    info = client.info("s1")
    assert [f.path for f in info.files] == ["20261128061351/1/small_cnn/1/0/Add.a.1.1.1"]
    assert list(info.replaced_runs) == [first]
    late = client.send("s1", _dump(first, "Add.b.2.1.2"), run_id=first)
    replaced = f"run {first} was replaced by a later run"
    assert [(a.status, a.message) for a in late] == [(Ack.REFUSED, replaced)]


def test_a_run_bringing_golden_data_into_a_session_of_another_runs_is_refused_whole(
    client: Client, tmp_path: Path
) -> None:
    # Four simulated agents (seeds 0-3, devices 0-3) into one session: each dump was compared
    # with whichever run's golden file was newest (cosine 0.028 where offline gives 1.000).
    client.open("s1")
    one, two = _run(0, "aaaaaaaa"), _run(1, "bbbbbbbb")
    _mark(client, one, pb.RunMark.START, "a")
    _mark(client, two, pb.RunMark.START, "b")
    assert {a.status for a in client.send("s1", {(pb.GOLDEN, "conv.0.1.npy"): b"1"}, run_id=one)} == {
        Ack.STORED
    }
    assert client.send("s1", {(pb.INPUT, "0.x.npy"): b"in"}, run_id=two)[0].status == Ack.STORED
    (refused,) = client.send("s1", {(pb.GOLDEN, "conv.0.2.npy"): b"2"}, run_id=two)
    assert refused.status == Ack.REFUSED
    assert refused.message.startswith(f"session s1 already holds the golden data of run {one}")
    (later,) = client.send("s1", {(pb.DUMP, "t/1/m/1/0/Add.a.1.1.1"): b"d"}, run_id=two)
    assert (later.status, later.message) == (
        Ack.REFUSED,
        f"run {two} was refused: the session holds another run's golden data "
        "(stream it into a session of its own)",
    )
    assert _mark(client, two, pb.RunMark.END, "b").status == Ack.REFUSED
    assert [f.path for f in client.info("s1").files] == ["conv.0.1.npy"]  # its input went too
    assert not any((tmp_path / "data/sessions/s1/inputs").iterdir())


@pytest.mark.parametrize("same_size", [False, True])
def test_a_run_bringing_another_fusion_rule_is_refused_whole_and_the_sessions_rule_kept(
    client: Client, tmp_path: Path, same_size: bool
) -> None:
    # A refused `--watch` agent (its golden data another run's) still had its fusion rule stored
    # over the session's: the close then read resnet's rule for small_cnn's dump (27 ops "not in
    # the fusion rule file", the wrong first divergence).
    client.open("s1")
    one, two = _run(0, "aaaaaaaa"), _run(1, "bbbbbbbb")
    _mark(client, one, pb.RunMark.START, "a")
    client.send("s1", {(pb.FUSION_RULE, "fusion_rule.json"): b"rule-one"}, run_id=one)
    other = b"rule-two" if same_size else b"another rule"
    (watched,) = client.send("s1", {(pb.FUSION_RULE, "fusion_rule.json"): other})  # a watch: no run
    assert watched.status == Ack.REFUSED
    assert watched.message.startswith(
        f"session s1 already holds another fusion rule fusion_rule.json (of run {one})"
    )
    _mark(client, two, pb.RunMark.START, "b")
    client.send("s1", {(pb.INPUT, "0.x.npy"): b"in"}, run_id=two)
    (refused,) = client.send("s1", {(pb.FUSION_RULE, "fusion_rule.json"): other}, run_id=two)
    assert refused.status == Ack.REFUSED
    (later,) = client.send("s1", {(pb.DUMP, "t/1/m/1/0/Add.a.1.1.1"): b"d"}, run_id=two)
    assert later.status == Ack.REFUSED
    assert [f.path for f in client.info("s1").files] == ["fusion_rule.json"]
    assert (tmp_path / "data/sessions/s1/rules/fusion_rule.json").read_bytes() == b"rule-one"
    assert not any((tmp_path / "data/sessions/s1/inputs").iterdir())


@pytest.mark.parametrize("second_run", [False, True])
def test_a_stored_dump_file_is_never_replaced_by_other_content(
    client: Client, tmp_path: Path, second_run: bool
) -> None:
    # Two `--watch` agents whose trees share relative paths: the second's bytes were renamed over
    # the first's acknowledged files (deleted from the device with --delete-acked): data lost.
    client.open("s1")
    path = "20261128061351/0/small_cnn/1/0/Add.a.1.1.1"
    (first,) = client.send("s1", {(pb.DUMP, path): b"agent A"})
    assert first.status == Ack.STORED
    run = _run(1, "bbbbbbbb") if second_run else ""
    if run:
        _mark(client, run, pb.RunMark.START, "b")
    (again,) = client.send("s1", {(pb.DUMP, path): b"agent A"}, run_id=run)
    assert again.status == Ack.DUPLICATE  # the same file once more (a rerun after a crash)
    (other,) = client.send("s1", {(pb.DUMP, path): b"agent B"}, run_id=run)
    assert other.status == Ack.REFUSED
    assert other.message.startswith(f"session s1 already holds another dump file {path} (of run (no run), ")
    assert (tmp_path / "data/sessions/s1/dump" / path).read_bytes() == b"agent A"


def test_a_watch_bringing_another_golden_file_of_a_tensor_the_session_holds_is_refused(
    client: Client, tmp_path: Path
) -> None:
    # Two `--watch --golden` agents (no runs) with golden data of other seeds: the close compared
    # the first's dump with the second's golden files, every tensor "diverging" from op 0.
    client.open("s1")
    held = "golden/_block1_Relu.0.1795895639031834.npy"
    assert client.send("s1", {(pb.GOLDEN, held): b"seed 0"})[0].status == Ack.STORED
    assert client.send("s1", {(pb.GOLDEN, held): b"seed 0"})[0].status == Ack.DUPLICATE  # resent
    twin, other_op = (
        "golden/_block1_Relu.0.1795895639039999.npy",
        "golden/_block1_Relu.1.1795895639039999.npy",
    )
    (refused, other_output) = client.send(
        "s1", {(pb.GOLDEN, twin): b"seed 1", (pb.GOLDEN, other_op): b"seed 1"}
    )
    assert (refused.status, refused.message) == (
        Ack.REFUSED,
        f"session s1 already holds {held}, another golden file of this tensor; a session compares with one "
        "set of golden data: stream other golden data into a new session",
    )
    assert other_output.status == Ack.STORED  # output 1: another tensor
    golden_dir = tmp_path / "data/sessions/s1/golden"
    assert sorted(p.name for p in golden_dir.rglob("*.npy")) == sorted(
        PurePosixPath(p).name for p in (held, other_op)
    )


def test_an_agent_whose_run_is_refused_counts_none_of_its_files_as_delivered(
    host: HostServer, client: Client, tmp_path: Path
) -> None:
    # Two simulated agents of one model racing into one session: the refused one reported
    # "2 files sent (117.1 KB)", its inputs, stored before its golden file was refused and then
    # dropped with its run.
    client.open("s1")
    one, two = _run(0, "aaaaaaaa"), _run(1, "bbbbbbbb")
    _mark(client, one, pb.RunMark.START, "a")
    client.send("s1", {(pb.GOLDEN, "conv.0.1.npy"): b"one"}, run_id=one)
    local = tmp_path / "files"
    local.mkdir()
    (local / "in.npy").write_bytes(b"input")
    (local / "golden.npy").write_bytes(b"two")
    uploader = uploader_for(f"127.0.0.1:{host.port}", tmp_path / "state", "s1")
    uploader.start()
    uploader.add_run_mark(two, pb.RunMark.START)
    uploader.add_file(pb.INPUT, "0.in.npy", local / "in.npy", run_id=two)
    uploader.settle()  # the input stored before the golden file is on its way
    uploader.add_file(pb.GOLDEN, "conv.0.2.npy", local / "golden.npy", run_id=two)
    report = uploader.finish()
    assert (report.stored, report.bytes_delivered) == (0, 0)
    assert [f.path for f in client.info("s1").files] == ["conv.0.1.npy"]


def test_a_replaced_run_leaves_no_empty_directory(client: Client, tmp_path: Path) -> None:
    client.open("s1")
    first = _run(0, "aaaaaaaa")
    _mark(client, first, pb.RunMark.START, "a")
    client.send("s1", _dump(first, "Add.a.1.1.1") | {(pb.DUMP, "keep/Add.k.1.1.1"): b"k"})
    client.send("s1", {(pb.DUMP, "20261128061351/0/small_cnn/1/1/Add.b.2.1.2"): b"b"}, run_id=first)
    _mark(client, _run(0, "bbbbbbbb"), pb.RunMark.START, "a")
    dump = tmp_path / "data/sessions/s1/dump"
    assert sorted(p.relative_to(dump).as_posix() for p in dump.rglob("*")) == [
        "20261128061351",
        "20261128061351/0",
        "20261128061351/0/small_cnn",
        "20261128061351/0/small_cnn/1",
        "20261128061351/0/small_cnn/1/0",
        "20261128061351/0/small_cnn/1/0/Add.a.1.1.1",  # sent without a run: not the run's
        "keep",
        "keep/Add.k.1.1.1",
    ]


def test_a_file_renamed_into_place_but_never_recorded_is_removed_when_the_host_starts(
    hosts: Hosts, host: HostServer, client: Client, tmp_path: Path
) -> None:
    # Host killed between a file's rename and its record, then an agent rerun: 241 files on
    # disk, 240 in the store, and an offline compare of the directory found one result too many.
    client.open("s1")
    client.send("s1", {(pb.DUMP, "t/0/m/1/0/Add.a.1.1.1"): b"kept"})
    hosts.stop(host)
    session = tmp_path / "data/sessions/s1"
    orphan = session / "dump/t/0/m/1/1/Add.a.1.1.2"
    orphan.parent.mkdir(parents=True)
    orphan.write_bytes(b"never acknowledged")
    (session / "golden").mkdir()
    (session / "golden/x.0.1.npy").write_bytes(b"never acknowledged")
    restarted = hosts.start(tmp_path / "data")
    assert [f.path for f in hosts.client(restarted).info("s1").files] == ["t/0/m/1/0/Add.a.1.1.1"]
    assert sorted(p.relative_to(session).as_posix() for p in session.rglob("*") if p.is_file()) == [
        "dump/t/0/m/1/0/Add.a.1.1.1"
    ]
    assert not (session / "dump/t/0/m/1/1").exists()
    store = SessionStore(tmp_path / "data")
    try:
        assert [f.path for f in store.files("s1")] == ["t/0/m/1/0/Add.a.1.1.1"]
    finally:
        store.close()


def test_an_oversized_files_refusal_is_its_reason(hosts: Hosts, tmp_path: Path) -> None:
    # It read `(4, "11 bytes: larger than this host's limit of 10")`.
    client = hosts.client(hosts.start(tmp_path / "data", max_file_size=10))
    client.open("s1")
    (ack,) = client.send("s1", {(pb.DUMP, "big"): b"x" * 11})
    assert (ack.status, ack.message) == (Ack.REFUSED, "11 bytes: larger than this host's limit of 10")


def test_of_two_runs_golden_files_on_the_way_at_once_one_is_taken(client: Client, tmp_path: Path) -> None:
    # Both first golden files found a session without golden data, and both were stored.
    client.open("s1")
    one, two = _run(0, "aaaaaaaa"), _run(1, "bbbbbbbb")
    _mark(client, one, pb.RunMark.START, "a")
    _mark(client, two, pb.RunMark.START, "b")
    messages = file_messages("s1", pb.GOLDEN, "conv.0.1.npy", b"golden of one", run_id=one)
    release = threading.Event()

    def slow() -> Iterator[pb.UploadMessage]:
        yield from messages[:-1]
        assert release.wait(CALL_TIMEOUT_S)
        yield messages[-1]

    acks: list[pb.UploadAck] = []
    sender = threading.Thread(target=lambda: acks.extend(client.stub.Upload(slow(), timeout=CALL_TIMEOUT_S)))
    sender.start()
    incoming = tmp_path / "data/sessions/s1/.incoming"
    deadline = time.monotonic() + CALL_TIMEOUT_S
    while not (incoming.is_dir() and any(incoming.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.01)  # until the host is receiving run one's golden file
    try:
        (second,) = client.send("s1", {(pb.GOLDEN, "conv.0.2.npy"): b"golden of two"}, run_id=two)
    finally:
        release.set()
        sender.join(CALL_TIMEOUT_S)
    assert second.status == Ack.REFUSED and f"golden data of run {one}" in second.message
    assert [a.status for a in acks] == [Ack.STORED]
    assert [f.path for f in client.info("s1").files] == ["conv.0.1.npy"]


def test_a_start_applies_to_the_files_after_it_in_the_stream_whatever_is_still_committing(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # START was applied when answered, after the files before it were committed; the receiving
    # side checked the rerun's first golden file meanwhile, against the run START replaces.
    first, again = _first_run_started(client)
    client.send("s1", {(pb.GOLDEN, "conv.0.1.npy"): b"1"}, run_id=first)
    _mark(client, first, pb.RunMark.END, "a")
    real_end = DumpCompareService.end_files

    def slow_end(self: DumpCompareService, *args: object) -> list[pb.UploadAck]:
        time.sleep(0.5)  # the disk is slow: the receiving side runs ahead
        return real_end(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(DumpCompareService, "end_files", slow_end)
    mark = pb.RunMark(session="s1", run_id=again, event=pb.RunMark.START, agent_id="b")
    messages = [
        *file_messages("s1", pb.DUMP, "unmarked/Add.a.1.1.1", b"before the start"),
        pb.UploadMessage(run=mark),
        *file_messages("s1", pb.GOLDEN, "conv.0.2.npy", b"2", run_id=again),
    ]
    acks = client.upload(messages)
    assert [(a.status, a.message) for a in acks] == [
        (Ack.STORED, ""),
        (Ack.RUN_ACCEPTED, f"replaced runs: {first}"),
        (Ack.STORED, ""),
    ]


def test_a_file_whose_run_was_replaced_while_it_was_committed_drops_its_run(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another agent's run of the same model and device started while this run's last files were
    # being made durable: they were refused without saying the run was dropped, and the agent
    # said "28 files sent" of a run the host had dropped whole, then advised closing the session.
    first, again = _first_run_started(client)
    real_add = SessionStore.add_files

    def rival_starts_first(self: SessionStore, session: str, files: Any) -> list[str]:
        self.start_run(session, again, "b")  # between the file's checks and its record
        return real_add(self, session, files)

    monkeypatch.setattr(SessionStore, "add_files", rival_starts_first)
    (ack,) = client.send("s1", _dump(first, "Add.a.1.1.1"), run_id=first)
    assert (ack.status, ack.message, ack.run_dropped) == (
        Ack.REFUSED,
        f"run {first} was replaced by a later run",
        True,
    )


def test_a_refused_files_removal_never_takes_the_file_another_stream_stored_at_its_path(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two agents' runs of one model and device started at once: the first's fusion rule, renamed
    # into place, was refused at its record (replaced meanwhile by the second's START) and then
    # removed from the disk, after the second's own rule had been stored at that path. The
    # session listed a rule it no longer had, and its close failed: "cannot read the file".
    first, again = _first_run_started(client)
    rule = {(pb.FUSION_RULE, "fusion_rule.json"): b"{}"}
    real_add = SessionStore.add_files
    rival_acks: list[pb.UploadAck] = []

    def rival() -> None:
        mark = pb.RunMark(session="s1", run_id=again, event=pb.RunMark.START, agent_id="b")  # type: ignore[arg-type]
        rival_acks.extend(
            client.upload(
                [pb.UploadMessage(run=mark), *file_messages("s1", *next(iter(rule)), b"{}", run_id=again)]
            )
        )

    other = threading.Thread(target=rival, name="rival-agent")

    def rival_stores_its_rule_meanwhile(self: SessionStore, session: str, files: Any) -> list[str]:
        if any(f.run_id == first for f in files) and not other.is_alive():
            other.start()
            other.join(timeout=1.0)  # done now, unless it waits for this record
        return real_add(self, session, files)

    monkeypatch.setattr(SessionStore, "add_files", rival_stores_its_rule_meanwhile)
    (ack,) = client.send("s1", rule, run_id=first)
    other.join(timeout=CALL_TIMEOUT_S)
    assert not other.is_alive()
    assert ack.status == Ack.REFUSED
    assert [a.status for a in rival_acks] == [Ack.RUN_ACCEPTED, Ack.STORED]
    assert [(f.kind, f.path) for f in client.info("s1").files] == [(pb.FUSION_RULE, "fusion_rule.json")]
    assert (tmp_path / "data/sessions/s1/rules/fusion_rule.json").read_bytes() == b"{}"


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> SimulationResult:
    from dumpcmp.commands.sim import simulate

    return simulate("zoo:small_cnn", tmp_path_factory.mktemp("sim") / "run")


def test_a_run_never_ended_is_dropped_when_the_session_closes(client: Client, sim: SimulationResult) -> None:
    # An agent killed mid-run and never rerun: the closed session's results held its part run.
    client.open("s1", **session_settings())
    files = simulation_files(sim)
    plan = {key: data for key, data in files.items() if key[0] != pb.DUMP}
    dumps = sorted(key for key in files if key[0] == pb.DUMP)
    client.send("s1", plan | {key: files[key] for key in dumps[:-3]})  # a complete run, unmarked
    part = _run(1, "aaaaaaaa")
    _mark(client, part, pb.RunMark.START, "a")
    other = {(pb.DUMP, key[1].replace("/0/", "/1/", 1)): files[key] for key in dumps[:2]}
    client.send("s1", other, run_id=part)
    client.send("s1", {key: files[key] for key in dumps[-3:]})
    info = client.close("s1")
    assert list(info.replaced_runs) == [part]
    assert f"replaced runs (their files dropped): {part} (not ended when the session closed)" in info.summary
    assert {f.path for f in info.files if f.kind == pb.DUMP} == {path for _kind, path in dumps}
    assert not {row.dump_file for row in client.rows("s1")} & {path for _kind, path in other}


def _closing(client: Client, session: str) -> tuple[threading.Thread, list[object]]:
    """A close of ``session`` in a thread: its answer (or error) lands in the list."""
    answers: list[object] = []

    def close() -> None:
        try:
            answers.append(client.close(session))
        except grpc.RpcError as exc:
            answers.append(exc)

    closer = threading.Thread(target=close)
    closer.start()
    return closer, answers


def _ended_run(client: Client, sim: SimulationResult) -> None:
    """A whole run of ``sim`` on device 0 in a new session s1, started and ended."""
    client.open("s1", **session_settings())
    run_id = _run(0, "aaaaaaaa")
    _mark(client, run_id, pb.RunMark.START, "a")
    client.send("s1", simulation_files(sim), run_id=run_id)
    _mark(client, run_id, pb.RunMark.END, "a")


def test_a_session_being_closed_says_so_until_its_close_ends(
    client: Client, sim: SimulationResult, held_close: HeldClose
) -> None:
    # It said only "open" until the comparison ended: an agent refused meanwhile said "(open)" and
    # told the user to close a session that was closed a moment later.
    _ended_run(client, sim)
    assert not client.info("s1").closing
    closer, _answers = _closing(client, "s1")
    assert held_close.entered.wait(CALL_TIMEOUT_S)
    info = client.info("s1")
    assert (info.state, info.closing) == (pb.SessionInfo.OPEN, True)
    (listed,) = client.stub.ListSessions(pb.ListSessionsRequest(), timeout=CALL_TIMEOUT_S).sessions
    assert listed.closing
    held_close.release.set()
    closer.join(CALL_TIMEOUT_S)
    info = client.info("s1")
    assert (info.state, info.closing) == (pb.SessionInfo.CLOSED, False)


def test_a_run_starting_while_the_session_closes_is_refused_and_the_closed_run_kept(
    client: Client, sim: SimulationResult, tmp_path: Path, held_close: HeldClose
) -> None:
    # Two agents into one session, the second 0.3-0.5 s after the first: its START, during the
    # first agent's close, replaced the finished run; the closed session had 176 rows, 3 CSVs
    # and not one file in its store or on disk.
    _ended_run(client, sim)
    second = _run(0, "bbbbbbbb")  # a rerun on the same device: it would replace the first run
    closer, answers = _closing(client, "s1")
    assert held_close.entered.wait(CALL_TIMEOUT_S)
    refused = _mark(client, second, pb.RunMark.START, "b")
    assert (refused.status, refused.message, refused.run_dropped) == (
        Ack.REFUSED,
        "session s1 is closing: its results are final; stream into a new session name",
        False,
    )
    (file_of_it,) = client.send("s1", {(pb.DUMP, "t/0/m/1/0/Add.z.1.1.1"): b"z"}, run_id=second)
    assert (file_of_it.status, file_of_it.message) == (Ack.REFUSED, refused.message)
    held_close.release.set()
    closer.join(CALL_TIMEOUT_S)
    (info,) = answers
    assert isinstance(info, pb.SessionInfo) and info.state == pb.SessionInfo.CLOSED
    assert not info.replaced_runs
    kept = {f.path for f in info.files if f.kind == pb.DUMP}
    assert kept and kept == {row.dump_file for row in client.rows("s1") if row.dump_file}
    dump = tmp_path / "data/sessions/s1/dump"
    assert {p.relative_to(dump).as_posix() for p in dump.rglob("*") if p.is_file()} == kept
    late = _mark(client, _run(0, "cccccccc"), pb.RunMark.START, "c")
    assert (late.status, late.message) == (Ack.REFUSED, "session s1 is closed")


def test_two_closes_at_once_both_answer(client: Client, sim: SimulationResult, held_close: HeldClose) -> None:
    # The second `host close` waited until --timeout (600 s), holding a host thread: the worker
    # ended after the first close and never answered the second one queued behind it.
    client.open("s1", **session_settings())
    client.send("s1", simulation_files(sim))
    one, answers_one = _closing(client, "s1")
    two, answers_two = _closing(client, "s1")
    assert held_close.entered.wait(CALL_TIMEOUT_S)
    time.sleep(0.3)  # the second call waiting too
    held_close.release.set()
    one.join(CALL_TIMEOUT_S)
    two.join(CALL_TIMEOUT_S)
    assert not one.is_alive() and not two.is_alive()
    for answers in (answers_one, answers_two):
        (info,) = answers
        assert isinstance(info, pb.SessionInfo) and info.state == pb.SessionInfo.CLOSED


def test_a_close_asked_of_a_stopped_sessions_comparison_is_answered(tmp_path: Path) -> None:
    # A close queued behind the worker's end (host shutdown, a delete) was never answered.
    from dumpcmp.errors import DumpcmpError
    from dumpcmp.host.server.worker import Notifier, SessionWorker

    store = SessionStore(tmp_path)
    try:
        store.open_session("s1", "m", pb.CompareSettings(golden_uploaded=True).SerializeToString(), None)
        worker = SessionWorker(tmp_path, "s1", store, Notifier())
        worker.stop()
        done = worker.close()
        with pytest.raises(DumpcmpError, match="its comparison stopped"):
            done.result(timeout=CALL_TIMEOUT_S)
    finally:
        store.close()


def test_an_agent_whose_run_was_refused_does_not_hold_the_session_open(
    client: Client, sim: SimulationResult
) -> None:
    # `agent run --sim --device 0` and `--device 1` into one session: the second run, refused
    # for its own golden data, still streamed; the first agent's close was refused ("another
    # agent is still streaming into it"), the second failed, and nobody closed the session.
    _ended_run(client, sim)
    second = _run(1, "bbbbbbbb")
    refused = threading.Event()
    release = threading.Event()
    acks: list[pb.UploadAck] = []

    def still_streaming() -> Iterator[pb.UploadMessage]:
        yield pb.UploadMessage(run=pb.RunMark(session="s1", run_id=second, event=pb.RunMark.START))
        yield from file_messages("s1", pb.GOLDEN, "conv.0.2.npy", b"its own golden", run_id=second)
        assert refused.wait(CALL_TIMEOUT_S)
        assert release.wait(CALL_TIMEOUT_S)  # the agent simulates on: more files to come

    def answers() -> None:
        for ack in client.stub.Upload(still_streaming(), timeout=CALL_TIMEOUT_S):
            acks.append(ack)
            if ack.status == Ack.REFUSED:
                refused.set()

    sender = threading.Thread(target=answers)
    sender.start()
    try:
        assert refused.wait(CALL_TIMEOUT_S)
        info = client.close("s1")
    finally:
        release.set()
        sender.join(CALL_TIMEOUT_S)
    assert info.state == pb.SessionInfo.CLOSED
    assert [a.status for a in acks] == [Ack.RUN_ACCEPTED, Ack.REFUSED]
