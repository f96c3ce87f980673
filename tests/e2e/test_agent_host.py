"""``dumpcmp agent run`` into ``dumpcmp host serve``, both real processes on loopback: the host's
result CSV is the one ``dumpcmp compare`` writes for the files it stored, whatever happened on
the way (an agent killed mid-stream and rerun, several agents at once)."""

from __future__ import annotations

import re
import signal
import threading
import time
from pathlib import Path

from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from tests.e2e.agent_host_kit import (  # noqa: F401 (fixture: procs)
    HostProcess,
    Processes,
    assert_results_are_offline_compare,
    assert_session_holds,
    count_files,
    dumpcmp,
    files_under,
    procs_fixture,
    run_files,
    start_dumpcmp,
    wait_for,
)

FAULT = "/block2/Add=noise:0.5"


def run_dirs(state: Path) -> list[Path]:
    """The agent's simulated runs (``STATE/runs/RUN_ID``: inputs, golden, rule, npu dump)."""
    return sorted((state / "runs").iterdir(), key=lambda p: p.stat().st_mtime_ns)


def assert_holds_exactly_the_run(host: HostProcess, session: str, run: Path) -> pb.SessionInfo:
    """The session's files are the run's files (inputs, golden data, rule, dump), nothing else."""
    return assert_session_holds(host, session, run_files(run))


def test_sim_agent_into_a_real_host_gives_the_offline_compare_csv(procs: Processes, tmp_path: Path) -> None:
    host = procs.host(tmp_path)
    state = tmp_path / "state"
    agent = procs.agent(
        tmp_path / "agent.log", host, "s1", "--model", "zoo:small_cnn", "--sim", "--inject", FAULT,
        "--seed", "5", "--state", state, "--keep-run",
    )  # fmt: skip
    # a laptop following the session while it streams gets the same table when it closes
    wait_for(lambda: host.session_dir("s1").is_dir(), "the session on the host")
    follow = start_dumpcmp(
        tmp_path / "follow.log", "host", "results", "s1", "--host", host.address, "--follow",
        "--csv", tmp_path / "followed.csv",
    )  # fmt: skip
    done = agent.wait()
    assert done.code == 0, done.output
    followed = follow.wait()
    assert followed.code == 0 and "session s1: closed" in followed.output, followed.output
    (run,) = run_dirs(state)
    sent = count_files(run / "npu") + count_files(run / "golden") + count_files(run / "inputs") + 1
    directory = host.session_dir("s1").resolve()
    assert f"session s1 on {host.address} (closed): {sent} files sent" in done.output
    assert f"results on host {host.address} in {directory}" in done.output
    fetch = f"fetch the result files here: dumpcmp host results s1 --host {host.address} --out DIR"
    assert fetch in done.output
    result = re.search(r"^result: (\S+)$", done.output, re.MULTILINE)
    assert result is not None and Path(result[1]).parent == directory / "results"
    assert "first divergence: step 0, index 8 Add /block2/Add" in done.output

    assert_holds_exactly_the_run(host, "s1", run)
    shown = assert_results_are_offline_compare(host, "s1", tmp_path)
    assert f"result: {result[1]}" in shown.output
    got = tmp_path / "results-s1" / "r.csv"
    assert got.read_bytes() == Path(result[1]).read_bytes()
    assert (tmp_path / "followed.csv").read_bytes() == got.read_bytes()
    sessions = dumpcmp("host", "sessions", "--host", host.address)
    assert sessions.code == 0, sessions.output
    rows = got.read_text().count("\n") - 1
    assert sessions.output.startswith(f"s1  closed  {rows} rows  model small_cnn  from "), sessions.output
    assert host.stop().code == 0


def test_agent_killed_mid_stream_and_rerun_replaces_its_run(procs: Processes, tmp_path: Path) -> None:
    host = procs.host(tmp_path)
    state = tmp_path / "state"
    args = ("--model", "zoo:small_cnn", "--sim", "--inject", FAULT, "--steps", "6", "--state", state)
    args += ("--keep-run",)  # the runs' local files are checked against the host's
    dumps = host.session_dir("k1") / "dump"
    first = procs.agent(tmp_path / "agent1.log", host, "k1", *args)
    wait_for(lambda: count_files(dumps) > 0, "the first dump files on the host", every=0.005)
    host.pause()  # frozen: what it holds now is all it gets of the first run
    try:
        first.kill()
    finally:
        host.resume()
    (run1,) = run_dirs(state)
    landed = count_files(dumps)
    assert 0 < landed < count_files(run1 / "npu")  # killed mid-stream

    second = procs.agent(tmp_path / "agent2.log", host, "k1", *args)
    done = second.wait()
    assert done.code == 0, done.output
    old, run2 = run_dirs(state)
    assert old == run1
    sent = count_files(run2 / "npu") + count_files(run2 / "golden") + count_files(run2 / "inputs") + 1
    assert f"(closed): {sent} files sent" in done.output  # each file of the rerun once, no duplicate
    info = assert_holds_exactly_the_run(host, "k1", run2)  # nothing of the interrupted run is left
    (replaced,) = info.replaced_runs  # the run's identity ends with the name of its local directory
    assert replaced.startswith("small_cnn@dev0@") and replaced.endswith(f"@{run1.name}")
    assert (
        f"replaced runs (their files dropped): {replaced} (by a later run of its model and device)"
        in done.output
    )

    shown = assert_results_are_offline_compare(host, "k1", tmp_path)
    assert (
        f"replaced runs (their files dropped): {replaced} (by a later run of its model and device)"
        in shown.output
    )
    assert shown.output.count("replaced runs") == 1  # the closed session's summary says it, once
    sessions = dumpcmp("host", "sessions", "--host", host.address)
    assert sessions.code == 0 and f"replaced runs: {replaced}" in sessions.output, sessions.output


def test_four_agents_into_four_sessions_at_once(procs: Processes, tmp_path: Path) -> None:
    host = procs.host(tmp_path)
    agents = []
    for n in range(4):
        args = ("--model", "zoo:small_cnn", "--sim", "--inject", f"/block2/Add=noise:0.{5 + n}")
        args += ("--seed", n, "--device", n, "--state", tmp_path / f"state{n}", "--keep-run")
        agents.append(procs.agent(tmp_path / f"agent{n}.log", host, f"dev{n}", *args))
    outputs = [a.wait() for a in agents]
    for n, done in enumerate(outputs):
        assert done.code == 0, done.output
        (run,) = run_dirs(tmp_path / f"state{n}")
        info = assert_holds_exactly_the_run(host, f"dev{n}", run)
        assert [u.device for u in info.uploaders] == [n]
    csvs: dict[int, bytes] = {}

    def check(n: int) -> None:  # the four sessions' results asked for at once, too
        assert_results_are_offline_compare(host, f"dev{n}", tmp_path)
        csvs[n] = (tmp_path / f"results-dev{n}" / "r.csv").read_bytes()

    checkers = [threading.Thread(target=check, args=(n,)) for n in range(4)]
    for thread in checkers:
        thread.start()
    for thread in checkers:
        thread.join(timeout=180)
    assert sorted(csvs) == [0, 1, 2, 3]
    assert len(set(csvs.values())) == 4  # four different runs, not one result four times


def test_host_stopped_while_an_agent_streams_exits_and_the_agent_finishes_later(
    procs: Processes, tmp_path: Path
) -> None:
    # A second SIGTERM cut the stop short, and gRPC left a handler thread stuck sending an ack
    # on the stopped server: the host never exited, and the agent's stream hung with it.
    host = procs.host(tmp_path)
    args = ("--model", "zoo:transformer_block", "--sim", "--steps", "12", "--state", tmp_path / "state")
    dumps = host.session_dir("t1") / "dump"
    agent = procs.agent(tmp_path / "agent.log", host, "t1", *args)
    wait_for(lambda: count_files(dumps) > 100, "a hundred dump files on the host", every=0.005)
    assert host.current is not None
    # SIGTERM, and another while it stops (a wrapper such as `timeout` forwarding it does so).
    host.current.process.send_signal(signal.SIGTERM)
    time.sleep(0.2)  # the second lands while the first one's stop is under way
    stopped = host.stop()
    assert stopped.code == 0 and "host stopped" in stopped.output, stopped.output
    assert "Traceback" not in stopped.output
    host.start()  # the agent reconnects and delivers the rest
    done = agent.wait()
    assert done.code == 0, done.output
    assert_results_are_offline_compare(host, "t1", tmp_path)
