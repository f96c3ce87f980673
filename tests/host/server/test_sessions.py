"""Sessions end to end on the simulated NPU: results equal offline compare, runs, resume, watchers."""

from __future__ import annotations

import csv
import io
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import grpc
import pytest

from dumpcmp.commands.sim import simulate
from dumpcmp.fakes.simulate import SimulationResult
from dumpcmp.host.live import Added, LiveCompare
from dumpcmp.host.offline import run_compare
from dumpcmp.host.request import CompareRequest
from dumpcmp.host.server import store as store_module
from dumpcmp.host.server.serve import HostServer
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from tests.host.server.hostkit import (
    CALL_TIMEOUT_S,
    Client,
    Hosts,
    offline_csv,
    session_settings,
    simulation_files,
)

Ack = pb.UploadAck
FAULT = "/block1.pw/conv/Conv=noise:0.5"


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> SimulationResult:
    return simulate("zoo:small_cnn", tmp_path_factory.mktemp("sim") / "run", faults=(FAULT,), seed=3)


@pytest.fixture(scope="module")
def expected_csv(sim: SimulationResult, tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return offline_csv(sim, tmp_path_factory.mktemp("offline"))


def result_csv(client: Client, session: str) -> bytes:
    info = client.info(session)
    (name,) = [n for n in info.result_files if n.startswith("result_") and n.endswith(".csv")]
    return client.fetch(session, name)


def test_closed_session_equals_offline_compare(
    client: Client, host: HostServer, sim: SimulationResult, expected_csv: bytes, tmp_path: Path
) -> None:
    client.open("s1", **session_settings())
    files = simulation_files(sim)
    # Dump files first: the plan is built without golden data and rebuilt when it lands.
    order = sorted(files, key=lambda key: key[0] != pb.DUMP)
    acks = client.send("s1", {key: files[key] for key in order})
    assert {a.status for a in acks} == {Ack.STORED}
    info = client.close("s1")
    assert info.state == pb.SessionInfo.CLOSED
    assert result_csv(client, "s1") == expected_csv
    assert "diverge" in info.summary.lower() or "first" in info.summary.lower()
    # The stored rows are the table's rows, value for value.
    table = list(csv.reader(io.StringIO(expected_csv.decode())))
    header, body = table[0], table[1:]
    batches = list(client.stub.WatchRows(pb.WatchRowsRequest(session="s1"), timeout=CALL_TIMEOUT_S))
    columns = list(batches[0].columns)
    stored = [dict(zip(columns, r.cells, strict=True)) for b in batches for r in b.rows]
    projected = [[row[c] if c != "DataType" else "" for c in header] for row in stored]
    assert [[c if h != "DataType" else "" for h, c in zip(header, r, strict=True)] for r in body] == projected
    assert info.rows == len(body)
    # Where a user finds everything on the host.
    session_dir = Path(info.data_dir)
    assert session_dir == (tmp_path / "data/sessions/s1").resolve()
    assert sorted(p.name for p in (session_dir / "results").iterdir()) == sorted(info.result_files)
    assert (session_dir / "rules/fusion_rule.json").read_bytes() == sim.fusion_rule.read_bytes()


def wait_for_rows_of(client: Client, session: str, dump_files: int) -> list[pb.Row]:
    """The session's rows once every dump file has some (bounded: the test fails, not hangs)."""
    deadline = time.monotonic() + CALL_TIMEOUT_S
    while time.monotonic() < deadline:
        rows = client.rows(session)
        if len({r.dump_file for r in rows}) == dump_files:
            return rows
        time.sleep(0.05)
    raise AssertionError(f"rows of {dump_files} dump files not computed in {CALL_TIMEOUT_S} s")


def test_follower_sees_rows_as_files_land_then_the_close(
    client: Client, sim: SimulationResult, expected_csv: bytes
) -> None:
    client.open("s1", **session_settings())
    batches: list[pb.RowBatch] = []
    request = pb.WatchRowsRequest(session="s1", follow=True)
    follower = threading.Thread(
        target=lambda: batches.extend(client.stub.WatchRows(request, timeout=CALL_TIMEOUT_S))
    )
    follower.start()
    client.send("s1", simulation_files(sim))
    live = wait_for_rows_of(client, "s1", len(sim.dump_files))
    assert all(r.dump_file for r in live)  # golden-only rows come with the close
    client.close("s1")
    follower.join(CALL_TIMEOUT_S)
    assert not follower.is_alive()
    assert batches[-1].session_closed
    followed = [r for b in batches for r in b.rows]
    assert [r.seq for r in followed] == sorted(r.seq for r in followed)
    assert {r.seq for r in live} <= {r.seq for r in followed}  # streamed before the close
    final = client.rows("s1")
    assert [r.cells for r in followed[-len(final) :]] == [r.cells for r in final]
    assert client.rows("s1", after=final[9].seq) == final[10:]  # a watch resumes after a seq
    assert len(final) == expected_csv.count(b"\n") - 1


def test_golden_data_arriving_late_recompares_every_file(
    client: Client, sim: SimulationResult, expected_csv: bytes
) -> None:
    client.open("s1", **session_settings())
    files = simulation_files(sim)
    golden = [key for key in files if key[0] == pb.GOLDEN]
    early = {key: data for key, data in files.items() if key not in golden[1:]}
    client.send("s1", early)
    first = wait_for_rows_of(client, "s1", len(sim.dump_files))
    client.send("s1", {key: files[key] for key in golden[1:]})
    client.close("s1")
    assert result_csv(client, "s1") == expected_csv
    (batch, *_) = client.stub.WatchRows(pb.WatchRowsRequest(session="s1"), timeout=CALL_TIMEOUT_S)
    cosine = list(batch.columns).index("CosineSimilarity")

    def uncompared(rows: list[pb.Row]) -> int:
        return sum(r.cells[cosine] == "NaN" for r in rows if r.dump_file)

    assert uncompared(first) > uncompared(client.rows("s1"))  # rows made without golden data were redone


def test_unfinished_run_is_replaced_by_the_next(
    client: Client, host: HostServer, tmp_path: Path, sim: SimulationResult, expected_csv: bytes
) -> None:
    broken = simulate("zoo:small_cnn", tmp_path / "broken", faults=("/block2/Add=noise:1.0",), seed=3)
    client.open("s1", **session_settings())
    interrupted = {k: v for k, v in list(simulation_files(broken).items()) if k[0] == pb.DUMP}
    half = dict(list(interrupted.items())[: len(interrupted) // 2])
    start1 = pb.UploadMessage(run=pb.RunMark(session="s1", run_id="r1", event=pb.RunMark.START))
    acks = client.upload([start1])
    assert acks[0].status == Ack.RUN_ACCEPTED
    assert {a.status for a in client.send("s1", half, run_id="r1")} == {Ack.STORED}
    start2 = pb.UploadMessage(run=pb.RunMark(session="s1", run_id="r2", event=pb.RunMark.START))
    (ack,) = client.upload([start2])
    assert (ack.status, ack.message) == (Ack.RUN_ACCEPTED, "replaced runs: r1")
    assert not list((tmp_path / "data/sessions/s1/dump").rglob("*.*.*"))  # r1's files are gone
    assert {a.status for a in client.send("s1", simulation_files(sim), run_id="r2")} == {Ack.STORED}
    # A late file of the replaced run is refused, not mixed in.
    late = dict(list(interrupted.items())[-1:])
    assert [a.status for a in client.send("s1", late, run_id="r1")] == [Ack.REFUSED]
    end2 = pb.UploadMessage(run=pb.RunMark(session="s1", run_id="r2", event=pb.RunMark.END))
    assert client.upload([end2])[0].status == Ack.RUN_ACCEPTED
    info = client.close("s1")
    assert list(info.replaced_runs) == ["r1"]
    assert (
        info.summary.splitlines()[-1]
        == "replaced runs (their files dropped): r1 (by a later run of its model and device)"
    )
    assert result_csv(client, "s1") == expected_csv
    # An ended run is not replaced by the next one.
    assert client.info("s1").replaced_runs == ["r1"]


def _sent_while_up(
    hosts: Hosts, data: Path, files: dict[tuple[int, str], bytes], *, close: bool = False
) -> pb.SessionInfo | None:
    """``files`` sent into a new open session s1 of a host on ``data`` (closed with ``close``:
    the close's answer), then the host stopped."""
    host = hosts.start(data)
    client = hosts.client(host)
    client.open("s1", **session_settings())
    client.send("s1", files)
    closed = client.close("s1") if close else None
    hosts.stop(host)
    return closed


def _dumps_deleted(data: Path, files: dict[tuple[int, str], bytes], count: int) -> list[str]:
    """The session's dump paths, sorted, the first ``count`` of them deleted from s1's directory."""
    dumps = sorted(path for kind, path in files if kind == pb.DUMP)
    for path in dumps[:count]:
        (data / "sessions/s1/dump" / path).unlink()
    return dumps


def test_host_restart_resumes_open_sessions(
    hosts: Hosts, tmp_path: Path, sim: SimulationResult, expected_csv: bytes
) -> None:
    data = tmp_path / "data"
    files = simulation_files(sim)
    items = list(files.items())
    _sent_while_up(hosts, data, dict(items[: len(items) // 2]))
    # A crash leaves a temporary upload behind, and loses one stored file.
    (data / "sessions/s1/.incoming/dead.part").write_bytes(b"half")
    lost_kind, lost_path = items[0][0]
    assert lost_kind == pb.FUSION_RULE
    (data / "sessions/s1/rules" / lost_path).unlink()

    second = hosts.start(data)
    (said,) = second.service.start_problems
    assert (
        said.startswith("session s1: 1 acknowledged file missing or changed in ")
        and f"rules/{lost_path}" in said
    )
    client = hosts.client(second)
    resumed = client.open("s1", **session_settings())
    held = {(f.kind, f.path) for f in resumed.files}
    assert held == {key for key, _ in items[1 : len(items) // 2]}
    acks = client.send("s1", files)  # an agent resends what it has no ack for; here: all of it
    assert sum(a.status == Ack.DUPLICATE for a in acks) == len(held)
    assert sum(a.status == Ack.STORED for a in acks) == len(files) - len(held)
    assert "incomplete" not in client.close("s1").summary  # the lost file came again
    assert result_csv(client, "s1") == expected_csv
    assert not (data / "sessions/s1/.incoming/dead.part").exists()
    assert client.info("s1").rows == expected_csv.count(b"\n") - 1


def test_acknowledged_files_deleted_by_hand_are_said_at_start_and_by_the_close(
    hosts: Hosts, tmp_path: Path, sim: SimulationResult
) -> None:
    # Dump files deleted from an open session's directory while the host was down went unmentioned:
    # the store forgot them, and the close's summary said "no divergence" of the files left.
    data = tmp_path / "data"
    files = simulation_files(sim)
    _sent_while_up(hosts, data, files)
    dumps = _dumps_deleted(data, files, 3)
    second = hosts.start(data)
    (said,) = second.service.start_problems
    assert said == (
        f"session s1: 3 acknowledged files missing or changed in {(data / 'sessions/s1').resolve()} (e.g. "
        f"dump/{dumps[0]}); an agent that resumes the session sends them again; its close says the results "
        "lack any that never come"
    )
    summary = hosts.client(second).close("s1").summary.splitlines()
    assert summary[0] == (
        f"incomplete: 3 files the host had acknowledged went missing from its disk and never came again "
        f"(e.g. dump/{dumps[0]}): these results lack them"
    )
    hosts.stop(second)
    assert not hosts.start(data).service.start_problems  # a closed session: its results are stored


def test_a_closed_sessions_files_deleted_by_hand_are_said_at_start_its_results_kept(
    hosts: Hosts, tmp_path: Path, sim: SimulationResult, expected_csv: bytes
) -> None:
    # Open sessions were checked at start; a closed one's deleted files went unmentioned, and an
    # offline compare of its directory then silently lacked them.
    data = tmp_path / "data"
    files = simulation_files(sim)
    closed = _sent_while_up(hosts, data, files, close=True)
    assert closed is not None
    dumps = _dumps_deleted(data, files, 2)
    second = hosts.start(data)
    (said,) = second.service.start_problems
    assert said == (
        f"session s1 (closed): 2 stored files missing or changed in {(data / 'sessions/s1').resolve()} "
        f"(e.g. dump/{dumps[0]}); its results stay as the close stored them, but the directory no longer "
        "holds all they were computed from"
    )
    client = hosts.client(second)
    info = client.info("s1")
    assert info.state == pb.SessionInfo.CLOSED and info.rows == closed.rows
    assert len([f for f in info.files if f.kind == pb.DUMP]) == len(dumps)  # as the close stored them
    assert result_csv(client, "s1") == expected_csv


def test_four_sessions_uploaded_at_once(hosts: Hosts, host: HostServer, tmp_path: Path) -> None:
    ops = ("/block1.pw/conv/Conv", "/block2/Add")
    sims = [simulate("zoo:small_cnn", tmp_path / f"sim{i}", faults=(f"{ops[i % 2]}=noise:0.{i + 1}",), seed=i)
            for i in range(4)]  # fmt: skip
    expected = [offline_csv(s, tmp_path / f"offline{i}") for i, s in enumerate(sims)]
    results: dict[int, bytes] = {}
    errors: list[BaseException] = []

    def agent(i: int) -> None:
        try:
            client = hosts.client(host)
            client.open(f"s{i}", **session_settings())
            acks = client.send(f"s{i}", simulation_files(sims[i]))
            assert {a.status for a in acks} == {Ack.STORED}
            client.close(f"s{i}")
            results[i] = result_csv(client, f"s{i}")
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)

    threads = [threading.Thread(target=agent, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(2 * CALL_TIMEOUT_S)
    assert not errors, errors
    assert [results[i] for i in range(4)] == expected
    assert len(set(expected)) == 4  # four different runs, each in its own session


def test_a_failed_comparison_is_redone_not_lost(
    client: Client, sim: SimulationResult, expected_csv: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    failures = []
    real_add = LiveCompare.add_many

    def add_failing_once(self: LiveCompare, dump_files: Sequence[Path]) -> Added:
        if not failures:
            failures.append(dump_files)
            raise RuntimeError("disk hiccup")
        return real_add(self, dump_files)

    monkeypatch.setattr(LiveCompare, "add_many", add_failing_once)
    client.open("s1", **session_settings())
    client.send("s1", simulation_files(sim))
    client.close("s1")
    assert failures
    assert result_csv(client, "s1") == expected_csv


def test_closing_before_the_files_came_is_refused_and_the_session_stays_open(
    client: Client, sim: SimulationResult, expected_csv: bytes
) -> None:
    client.open("s1", **session_settings())
    files = simulation_files(sim)
    client.send("s1", {key: data for key, data in files.items() if key[0] == pb.DUMP})
    with pytest.raises(grpc.RpcError) as caught:
        client.close("s1")
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION  # type: ignore[attr-defined]
    assert "waiting for the fusion rule fusion_rule.json" in caught.value.details()  # type: ignore[attr-defined]
    assert client.info("s1").state == pb.SessionInfo.OPEN
    client.send("s1", files)
    client.close("s1")
    assert result_csv(client, "s1") == expected_csv


def test_a_closed_session_is_not_reopened(client: Client, sim: SimulationResult) -> None:
    # An agent streaming into a finished session would see every file refused one by one.
    client.open("done", **session_settings())
    client.send("done", simulation_files(sim))
    client.close("done")
    with pytest.raises(grpc.RpcError) as caught:
        client.open("done")
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "session done is closed" in (caught.value.details() or "")


def test_a_run_replaces_only_its_own_agents_unfinished_run(
    client: Client, host: HostServer, sim: SimulationResult
) -> None:
    # Eight devices stream into one session at once: device 1 starting its run must not drop
    # device 0's run, which is still going; device 0 running again replaces its own.
    client.open("s1", **session_settings())

    def start(run_id: str, agent: str) -> pb.UploadAck:
        mark = pb.RunMark(session="s1", run_id=run_id, event=pb.RunMark.START, agent_id=agent)
        (ack,) = client.upload([pb.UploadMessage(run=mark)])
        return ack

    dumps = {k: v for k, v in simulation_files(sim).items() if k[0] == pb.DUMP}
    first = dict(list(dumps.items())[:3])
    assert start("a1", "device0").status == Ack.RUN_ACCEPTED
    assert {a.status for a in client.send("s1", first, run_id="a1")} == {Ack.STORED}
    other = start("b1", "device1")
    assert (other.status, other.message) == (Ack.RUN_ACCEPTED, "")
    assert {f.path for f in client.info("s1").files} == {path for _, path in first}
    again = start("a2", "device0")
    assert (again.status, again.message) == (Ack.RUN_ACCEPTED, "replaced runs: a1")
    assert not client.info("s1").files


def test_golden_data_of_a_second_finished_run_is_refused(client: Client, sim: SimulationResult) -> None:
    # Two simulated runs with other inputs in one session: the first run's dump would be
    # compared with the second run's golden files (the newest win), a silently wrong verdict.
    client.open("s1", **session_settings())
    golden = {k: v for k, v in simulation_files(sim).items() if k[0] == pb.GOLDEN}

    def mark(run_id: str, event: int) -> pb.UploadAck:
        message = pb.RunMark(session="s1", run_id=run_id, event=event, agent_id=run_id)  # type: ignore[arg-type]
        (ack,) = client.upload([pb.UploadMessage(run=message)])
        return ack

    mark("r1", pb.RunMark.START)
    assert {a.status for a in client.send("s1", golden, run_id="r1")} == {Ack.STORED}
    mark("r1", pb.RunMark.END)
    mark("r2", pb.RunMark.START)
    second = {(kind, path.replace(".npy", "0.npy")): data for (kind, path), data in golden.items()}
    acks = client.send("s1", dict(list(second.items())[:1]), run_id="r2")
    assert [a.status for a in acks] == [Ack.REFUSED]
    assert "already holds the golden data of run r1" in acks[0].message


def test_a_store_error_after_sqlite_ended_the_transaction_is_one_store_error(tmp_path: Path) -> None:
    # On a full disk SQLite rolls the transaction back itself; our ROLLBACK then raised "cannot
    # rollback - no transaction is active", a traceback instead of the store's one line.
    from dumpcmp.errors import StoreError
    from dumpcmp.host.server import store as store_module

    opened = store_module.SessionStore(tmp_path)
    with (
        pytest.raises(StoreError, match="session store: database or disk is full"),
        opened._transaction() as db,
    ):
        db.execute("ROLLBACK")
        raise sqlite3.OperationalError("database or disk is full")
    opened.close()


@pytest.mark.parametrize("mapping_first", [True, False])
def test_a_long_name_mapped_by_mapping_csv_is_compared_as_offline(
    client: Client, sim: SimulationResult, tmp_path: Path, mapping_first: bool
) -> None:
    """A dump file stored under a numeric name with ``mapping.csv`` (formats.md §2.3) is the
    file the mapping names, whichever of the two lands first; nothing is dropped unsaid."""
    files = simulation_files(sim)
    dumps = sorted(key for key in files if key[0] == pb.DUMP)
    renamed = dumps[5]
    directory, _, original = renamed[1].rpartition("/")
    numeric = (pb.DUMP, f"{directory}/1234567890123")
    mapping = (pb.DUMP, f"{directory}/mapping.csv")
    files[numeric] = files.pop(renamed)
    files[mapping] = f"1234567890123,{original}\n".encode()
    # compare reads the same tree from disk
    tree = tmp_path / "npu"
    for (kind, path), data in files.items():
        if kind == pb.DUMP:
            (tree / path).parent.mkdir(parents=True, exist_ok=True)
            (tree / path).write_bytes(data)
    offline = run_compare(
        CompareRequest(tree, sim.golden_dir, fusion_rule=sim.fusion_rule, out_dir=tmp_path / "offline")
    )
    assert not offline.skipped
    (shard,) = offline.shards
    assert shard.result_file is not None
    client.open("s1", **session_settings())
    pair = [mapping, numeric] if mapping_first else [numeric, mapping]
    rest = {key: data for key, data in files.items() if key not in pair}
    client.send("s1", rest)
    for key in pair:  # one upload each: the second lands after the first was compared
        client.send("s1", {key: files[key]})
        wait_for_rows_of(client, "s1", len(sim.dump_files) - 1 + (key == pair[-1]))
    info = client.close("s1")
    assert result_csv(client, "s1") == shard.result_file.read_bytes()
    assert "skipped" not in info.summary


def test_a_file_the_host_cannot_name_is_a_skipped_line_of_the_summary(
    client: Client, sim: SimulationResult
) -> None:
    files = simulation_files(sim)
    directory = next(path for kind, path in files if kind == pb.DUMP).rpartition("/")[0]
    files[(pb.DUMP, f"{directory}/1234567890123")] = b"no mapping names this"
    client.open("s1", **session_settings())
    client.send("s1", files)
    info = client.close("s1")
    line = f"skipped {Path(info.data_dir) / 'dump' / directory / '1234567890123'}: not a dump file name"
    assert line in info.summary


@pytest.mark.parametrize(
    ("settings", "golden", "rule"),
    [
        ({"golden_uploaded": True, "fusion_rule_name": "r.json"}, "--golden", "--fusion-rule"),
        (
            {"golden_host_path": "/g", "fusion_rule_host_path": "/r.json"},
            "--golden-on-host",
            "--fusion-rule-on-host",
        ),
    ],
)
def test_a_session_names_its_inputs_by_the_agents_options(
    settings: dict[str, object], golden: str, rule: str, tmp_path: Path
) -> None:
    """ "Nothing compared" says what to check in the words the user ran the agent with."""
    from dumpcmp.host.server.worker import Plan

    inputs = Plan.of(tmp_path, pb.CompareSettings(**settings)).inputs  # type: ignore[arg-type]
    assert (inputs.golden, inputs.fusion_rule) == (golden, rule)


def test_an_sqlite_file_of_something_else_is_refused_naming_it_and_left_alone(tmp_path: Path) -> None:
    from dumpcmp.errors import StoreError

    db = sqlite3.connect(tmp_path / store_module.DB_NAME)
    db.execute("CREATE TABLE sessions (x)")
    db.commit()
    db.close()
    before = (tmp_path / store_module.DB_NAME).read_bytes()
    path = tmp_path / store_module.DB_NAME
    with pytest.raises(StoreError) as raised:
        store_module.SessionStore(tmp_path)
    assert str(raised.value) == f"{path}: not a dumpcmp session store (an SQLite database of something else)"
    assert path.read_bytes() == before
