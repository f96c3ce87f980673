"""``dumpcmp agent run --watch`` on a dump tree ``dumpcmp sim run`` wrote, into ``dumpcmp host
serve``: the host SIGKILLed and restarted mid-session, a dump file corrupted on disk, a wrong
token, TLS with a CA. Every piece is a real process on loopback."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import grpc
import pytest

from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from tests.e2e.agent_host_kit import (  # noqa: F401 (fixture: procs)
    Background,
    Done,
    HostProcess,
    Processes,
    assert_results_are_offline_compare,
    assert_session_holds,
    count_files,
    dumpcmp,
    files_under,
    offline_results,
    procs_fixture,
    session_info,
    wait_for,
)
from tests.host.server.hostkit import make_pki

WATCH = ("--until-idle", "1", "--quiet-time", "0.05", "--give-up", "120")


@pytest.fixture(scope="module")
def sim_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``dumpcmp sim run`` of a few steps with a fault: npu/, golden/, fusion_rule.json."""
    out = tmp_path_factory.mktemp("sim") / "run"
    done = dumpcmp(
        "sim", "run", "zoo:small_cnn", "--out", out, "--steps", "4", "--seed", "2",
        "--inject", "/block2/Add=noise:0.5",
    )  # fmt: skip
    assert done.code == 0, done.output
    return out


def copy_tree(source: Path, target: Path) -> Path:
    """A test's own copy of the dump tree (watching it leaves a state dir beside it)."""
    for name, data in files_under(source).items():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        (target / name).write_bytes(data)
    return target


def assert_holds_exactly(host: HostProcess, session: str, sim: Path, dump: Path, **options: object) -> None:
    """Each file of the tree, golden data and rule stored once, byte for byte, under DATA."""
    want = {
        pb.DUMP: files_under(dump),
        pb.GOLDEN: files_under(sim / "golden"),
        pb.FUSION_RULE: {"fusion_rule.json": (sim / "fusion_rule.json").read_bytes()},
    }
    assert_session_holds(host, session, want, **options)  # type: ignore[arg-type]


def delivered(output: str) -> tuple[int, int]:
    """The agent's count of files sent, and of files not sent because the host had them: each
    file of the tree is one or the other, exactly once."""
    said = re.search(r"\(closed\): (\d+) files? sent \([^)]*\)(?:, (\d+) already on the host)?", output)
    assert said is not None, output
    return int(said[1]), int(said[2] or 0)


def watch_args(sim: Path, dump: Path) -> tuple[object, ...]:
    return ("--watch", dump, "--golden", sim / "golden", "--fusion-rule", sim / "fusion_rule.json", *WATCH)


def test_host_killed_and_restarted_mid_session(procs: Processes, sim_tree: Path, tmp_path: Path) -> None:
    dump = copy_tree(sim_tree / "npu", tmp_path / "npu")
    host = procs.host(tmp_path)
    landed_dir = host.session_dir("h1") / "dump"
    agent = procs.agent(tmp_path / "agent.log", host, "h1", *watch_args(sim_tree, dump))
    wait_for(lambda: count_files(landed_dir) > 0, "the first dump files on the host", every=0.005)
    host.pause()
    landed = count_files(landed_dir)
    host.kill()
    assert 0 < landed < count_files(dump)  # killed mid-session
    assert agent.process.poll() is None  # the agent waits for the host to come back
    host.start()  # the same port and data directory
    done = agent.wait()
    assert done.code == 0, done.output
    assert "reconnect" in done.output
    sent, already = delivered(done.output)
    assert sent + already == count_files(dump) + count_files(sim_tree / "golden") + 1
    assert "(closed):" in done.output
    assert_holds_exactly(host, "h1", sim_tree, dump)
    assert_results_are_offline_compare(host, "h1", tmp_path)
    # ...which is also what compare makes of the files where the simulation wrote them
    here = offline_results_of(sim_tree, dump, tmp_path / "source")
    assert here == offline_results(host.session_dir("h1"), tmp_path / "again")
    assert host.stop().code == 0


def test_watching_agent_killed_mid_stream_and_rerun(procs: Processes, sim_tree: Path, tmp_path: Path) -> None:
    dump = copy_tree(sim_tree / "npu", tmp_path / "npu")
    host = procs.host(tmp_path)
    landed_dir = host.session_dir("a1") / "dump"
    first = procs.agent(tmp_path / "agent1.log", host, "a1", *watch_args(sim_tree, dump))
    wait_for(lambda: count_files(landed_dir) > 0, "the first dump files on the host", every=0.005)
    host.pause()
    try:
        first.kill()
    finally:
        host.resume()
    assert 0 < count_files(landed_dir) < count_files(dump)  # killed mid-stream
    done = procs.agent(tmp_path / "agent2.log", host, "a1", *watch_args(sim_tree, dump)).wait()
    assert done.code == 0, done.output
    sent, already = delivered(done.output)
    assert sent + already == count_files(dump) + count_files(sim_tree / "golden") + 1
    assert already > 0  # the journal's files were not offered again
    assert_holds_exactly(host, "a1", sim_tree, dump)
    assert_results_are_offline_compare(host, "a1", tmp_path)
    assert not session_info(host.address, "a1").replaced_runs  # no run marks: nothing to replace


def test_delete_acked_frees_the_dump_path_and_the_host_has_it_all(
    procs: Processes, sim_tree: Path, tmp_path: Path
) -> None:
    sim = copy_tree(sim_tree, tmp_path / "sim")
    host = procs.host(tmp_path)
    args = (*watch_args(sim, sim / "npu"), "--delete-acked")
    done = procs.agent(tmp_path / "agent.log", host, "d1", *args).wait()
    assert done.code == 0, done.output
    assert count_files(sim / "npu") == 0  # every dump file went, once the host had it
    assert files_under(sim / "golden") == files_under(sim_tree / "golden")  # the golden data stays
    assert_holds_exactly(host, "d1", sim_tree, sim_tree / "npu")
    assert_results_are_offline_compare(host, "d1", tmp_path)


def offline_results_of(sim: Path, dump: Path, out: Path) -> dict[str, bytes]:
    """compare of the tree the agent watched, in the host's session-dir layout."""
    layout = out / "session"
    copy_tree(dump, layout / "dump")
    copy_tree(sim / "golden", layout / "golden")
    (layout / "rules").mkdir()
    (layout / "rules" / "fusion_rule.json").write_bytes((sim / "fusion_rule.json").read_bytes())
    return offline_results(layout, out / "results")


def test_a_corrupted_dump_file_gets_its_reason_row_as_offline(
    procs: Processes, sim_tree: Path, tmp_path: Path
) -> None:
    dump = copy_tree(sim_tree / "npu", tmp_path / "npu")
    victim = sorted(p for p in dump.rglob("*") if p.is_file() and p.name.startswith("Relu."))[0]
    data = bytearray(victim.read_bytes())
    data[8:24] = b"\xff" * 16  # the header (after its 8-byte length) is garbage now
    victim.write_bytes(bytes(data))
    offline = offline_results_of(sim_tree, dump, tmp_path / "source")
    assert any(victim.name.encode() in table for table in offline.values())  # compare has its row
    host = procs.host(tmp_path)
    done = procs.agent(tmp_path / "agent.log", host, "c1", *watch_args(sim_tree, dump)).wait()
    assert done.code == 0, done.output
    assert_holds_exactly(host, "c1", sim_tree, dump)
    assert_results_are_offline_compare(host, "c1", tmp_path)
    # compare of the tree the agent watched says the same, naming the file where it lies
    here = {
        name: table.replace(
            str(tmp_path / "source" / "session").encode(), str(host.session_dir("c1")).encode()
        )
        for name, table in offline.items()
    }
    assert offline_results(host.session_dir("c1"), tmp_path / "again") == here
    reason = f"corrupt dump file: {host.session_dir('c1') / 'dump' / victim.relative_to(dump)}: at byte 8: "
    assert any(reason.encode() in table for table in here.values())


# What a host that wants a token says through the client (by whether --token-file was given): it
# read "UNAUTHENTICATED: a valid 'authorization: Bearer <token>' is required".
_REFUSED = {
    False: "it takes calls only with its bearer token: pass --token-file FILE",
    True: "it refused the bearer token in --token-file ",
}


def one_line_error(done: Done, *said: str) -> None:
    assert done.code == 1, done.output
    lines = done.output.strip().splitlines()
    assert len(lines) == 1, done.output
    assert lines[0].startswith("Error: "), done.output
    for text in said:
        assert text in lines[0], done.output


def test_a_wrong_or_missing_token_is_one_line_and_stores_nothing(
    procs: Processes, sim_tree: Path, tmp_path: Path
) -> None:
    (tmp_path / "token").write_text("right-token\n")
    (tmp_path / "wrong").write_text("wrong-token\n")
    host = procs.host(tmp_path, "--token-file", tmp_path / "token")
    dump = copy_tree(sim_tree / "npu", tmp_path / "npu")
    for token in (("--token-file", tmp_path / "wrong"), ()):
        done = procs.agent(
            tmp_path / f"agent{len(token)}.log", host, "t1", *watch_args(sim_tree, dump), *token
        ).wait()
        one_line_error(done, f"host {host.address}: {_REFUSED[bool(token)]}")
    done = procs.agent(
        tmp_path / "sim-agent.log", host, "t2", "--model", "zoo:small_cnn", "--sim",
        "--state", tmp_path / "state", "--token-file", tmp_path / "wrong",
    ).wait()  # fmt: skip
    one_line_error(done, _REFUSED[True])
    assert not (tmp_path / "state" / "runs").exists()  # refused before the model run, not after
    for command in (("sessions",), ("results", "t1")):
        done = dumpcmp("host", *command, "--host", host.address, "--token-file", tmp_path / "wrong")
        one_line_error(done, _REFUSED[True])
    assert list((host.data / "sessions").iterdir()) == []
    done = dumpcmp("host", "sessions", "--host", host.address, "--token-file", tmp_path / "token")
    assert (done.code, done.output.strip()) == (0, f"no sessions on {host.address}")


def test_mutual_tls_with_a_token_end_to_end(procs: Processes, sim_tree: Path, tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    (tmp_path / "token").write_text("t0ken\n")
    host = procs.host(
        tmp_path, "--tls-cert", pki.server_cert, "--tls-key", pki.server_key, "--client-ca", pki.ca,
        "--token-file", tmp_path / "token",
    )  # fmt: skip
    address = f"localhost:{host.port}"
    secure = ("--tls-ca", pki.ca, "--token-file", tmp_path / "token")
    client = ("--tls-cert", pki.client_cert, "--tls-key", pki.client_key)
    dump = copy_tree(sim_tree / "npu", tmp_path / "npu")
    done = dumpcmp(
        "agent", "run", "--host", address, "--session", "tls", *watch_args(sim_tree, dump), *secure,
        "--client-cert", pki.client_cert, "--client-key", pki.client_key,
    )  # fmt: skip
    assert done.code == 0, done.output
    assert f"session tls on {address} (closed)" in done.output
    options = {
        "tls_ca": pki.ca,
        "client_cert": pki.client_cert,
        "client_key": pki.client_key,
        "token_file": tmp_path / "token",
    }
    assert_holds_exactly(host, "tls", sim_tree, dump, address=address, **options)
    assert_results_are_offline_compare(host, "tls", tmp_path, *secure, *client, address=address, **options)
    # without the CA the host's certificate is not trusted: one line, nothing more stored
    done = dumpcmp(
        "host", "sessions", "--host", address, "--token-file", tmp_path / "token", "--timeout", "5"
    )
    one_line_error(done)


def test_a_watch_whose_golden_data_is_refused_sends_no_dump_file(
    procs: Processes, sim_tree: Path, tmp_path: Path
) -> None:
    """The golden files were refused (the session holds another run's), but the dump files went
    on and were taken, and --delete-acked deleted them here: the session then compared them with
    the other run's golden data."""
    host = procs.host(tmp_path)
    model = ("--model", "zoo:small_cnn", "--sim", "--keep-open", "--state", tmp_path / "state")
    first = procs.agent(tmp_path / "model.log", host, "d2", *model).wait()
    assert first.code == 0, first.output
    held = session_info(host.address, "d2")
    sim = copy_tree(sim_tree, tmp_path / "sim")
    watch = (*watch_args(sim, sim / "npu"), "--delete-acked")
    done = procs.agent(tmp_path / "agent.log", host, "d2", *watch).wait()
    assert done.code == 1, done.output
    assert "already holds the golden data of run" in done.output
    refused = f"{(sim / 'npu').resolve()}: not watched: the host refused its golden data or fusion rule"
    assert refused in done.output
    assert files_under(sim / "npu") == files_under(sim_tree / "npu")  # nothing deleted here
    after = session_info(host.address, "d2")
    assert sorted((f.kind, f.path) for f in after.files if f.kind == pb.DUMP) == sorted(
        (f.kind, f.path) for f in held.files if f.kind == pb.DUMP
    )


def test_an_agent_done_first_leaves_the_close_to_the_one_still_streaming(
    procs: Processes, sim_tree: Path, tmp_path: Path
) -> None:
    # Two agents into one session (a device each): the first done exited 1 with the host's
    # refusal to close while an agent streams, although every file of its own was delivered.
    host = procs.host(tmp_path)
    second = _watching_for_long(procs, host, "two", sim_tree, tmp_path / "later", "--device", "1")
    wait_for(lambda: _streams(host, "two") == 1, "the second agent streaming")
    dump = copy_tree(sim_tree / "npu", tmp_path / "npu")
    started = procs.agent(tmp_path / "first.log", host, "two", *watch_args(sim_tree, dump), "--device", "0")
    first = started.wait()
    assert first.code == 0, first.output
    assert (
        "session two left open: another agent is still streaming into it; the last agent to finish with "
        f"every file delivered closes it, or: dumpcmp host close two --host {host.address}\n" in first.output
    )
    assert "(open)" in first.output and "Error" not in first.output
    assert session_info(host.address, "two").state == pb.SessionInfo.OPEN
    second.process.send_signal(signal.SIGINT)  # the watch ends; this agent is the last: it closes
    done = second.wait()
    assert done.code == 0, done.output
    assert "(closed)" in done.output
    assert_holds_exactly(host, "two", sim_tree, dump)


def _watching_for_long(
    procs: Processes, host: HostProcess, session: str, sim: Path, dump: Path, *options: object
) -> Background:
    """An agent watching the empty ``dump`` (made now) with ``sim``'s golden data and rule: it
    streams into ``session`` until the test ends."""
    dump.mkdir()
    return procs.agent(
        dump.parent / f"{dump.name}.log", host, session, *watch_args(sim, dump)[: -len(WATCH)],
        "--until-idle", "120", "--quiet-time", "0.05", *options,
    )  # fmt: skip


def _streams(host: HostProcess, session: str) -> int:
    try:
        return int(session_info(host.address, session).streams)
    except grpc.RpcError:
        return 0  # not opened yet


def test_a_run_refused_while_another_agent_streams_is_not_told_to_end_its_session(
    procs: Processes, sim_tree: Path, tmp_path: Path
) -> None:
    # The refused run's last line advised `host close` or `host delete` of a session whose
    # golden data was another agent's, live and still streaming: that destroys the live run.
    host = procs.host(tmp_path)
    watching = _watching_for_long(procs, host, "live", sim_tree, tmp_path / "empty")
    golden = count_files(sim_tree / "golden")
    wait_for(
        lambda: (
            _streams(host, "live") == 1
            and sum(f.kind == pb.GOLDEN for f in session_info(host.address, "live").files) == golden
        ),
        "the watching agent's golden data on the host",
    )
    model = ("--model", "zoo:small_cnn", "--sim", "--state", tmp_path / "state", "--device", "1")
    refused = procs.agent(tmp_path / "model.log", host, "live", *model).wait()
    assert refused.code == 1, refused.output
    last = refused.output.strip().splitlines()[-1]
    assert "already holds the golden data of run (no run)" in last, last
    assert "host close" not in last and "host delete" not in last, last
    assert last.endswith(
        "; session live, which another agent is still streaming (the session is not closing), refuses it "
        "again: stream into another session name; close or delete it only once that agent has ended"
    ), last
    assert watching.process.poll() is None  # the live run streams on
    assert _streams(host, "live") == 1
