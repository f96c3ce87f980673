"""One run is one run, end to end: real agents into a real host (issue 20's findings).

A rerun of a model on a device replaces that device's earlier run of it in the session,
whatever became of the earlier one (killed, closed half way, or left open on purpose); several
simulated agents into one session never mix: the first run's golden data is the session's, the
others are refused, and the results are those of one complete run.
"""

from __future__ import annotations

import re
from pathlib import Path

from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from tests.e2e.agent_host_kit import (  # noqa: F401 (fixture: procs)
    Processes,
    assert_results_are_offline_compare,
    assert_session_holds,
    dumpcmp,
    procs_fixture,
    run_files,
    session_info,
)

FAULT = "/block2/Add=bias:0.5"
_KEPT = re.compile(r"^run (\S+): its local files are in (\S+)$", re.MULTILINE)


def test_a_rerun_after_keep_open_replaces_the_first_run(procs: Processes, tmp_path: Path) -> None:
    # The reproduction: `$A --keep-open; $A; dumpcmp host close ko` held both runs (the
    # first as a second shard), 21 of 29 rows twice, a 21-tensor model counted as 22 and "all clear".
    host = procs.host(tmp_path)
    agent = ("agent", "run", "--host", host.address, "--session", "ko", "--model", "zoo:small_cnn", "--sim")
    agent += ("--inject", FAULT, "--state", tmp_path / "st")
    first = dumpcmp(*agent, "--keep-open")
    assert first.code == 0, first.output
    kept = _KEPT.search(first.output)
    assert kept is not None, first.output
    first_run = kept.group(1)
    second = dumpcmp(*agent, "--keep-run")
    assert second.code == 0, second.output
    rerun = _KEPT.search(second.output)
    assert rerun is not None, second.output
    info = assert_session_holds(host, "ko", run_files(Path(rerun.group(2))))  # the second run's only
    assert list(info.replaced_runs) == [first_run]
    assert info.state == pb.SessionInfo.CLOSED
    assert (
        f"replaced runs (their files dropped): {first_run} (by a later run of its model and device)"
        in second.output
    )
    assert_results_are_offline_compare(host, "ko", tmp_path)  # the host's tree holds nothing else


def test_simulated_agents_on_four_devices_into_one_session_give_one_runs_results(
    procs: Processes, tmp_path: Path
) -> None:
    # Four agents (seeds 0-3, devices 0-3) into one session: two exited 1, `host close` then
    # succeeded with 55-65 duplicate keys per shard and cosines of 0.028 where offline gave 1.000.
    host = procs.host(tmp_path)
    agents = []
    for n in range(4):
        args = ("--model", "zoo:small_cnn", "--sim", "--seed", n, "--device", n)
        args += ("--state", tmp_path / f"state{n}", "--keep-open", "--keep-run")
        agents.append(procs.agent(tmp_path / f"agent{n}.log", host, "four", *args))
    done = [a.wait() for a in agents]
    taken = [n for n, d in enumerate(done) if d.code == 0]
    assert len(taken) == 1, [d.output for d in done]
    for n, d in enumerate(done):
        if n not in taken:
            assert d.code == 1 and "refused by the host" in d.output and "golden data" in d.output, d.output
    kept = _KEPT.search(done[taken[0]].output)
    assert kept is not None
    closed = dumpcmp("host", "close", "four", "--host", host.address)
    assert closed.code == 0, closed.output
    info = assert_session_holds(host, "four", run_files(Path(kept.group(2))))
    assert {f.path.split("/")[1] for f in info.files if f.kind == pb.DUMP} == {str(taken[0])}
    assert_results_are_offline_compare(host, "four", tmp_path)
    assert session_info(host.address, "four").state == pb.SessionInfo.CLOSED


def test_a_refused_simulated_run_says_what_happened_once_and_truly(procs: Processes, tmp_path: Path) -> None:
    # The refused agent printed a line for its golden files, one for its dump files and one for
    # its END; "0 files sent (405.3 KB)" (the refused files' bytes); END counted as a file.
    host = procs.host(tmp_path)
    agent = ("agent", "run", "--host", host.address, "--session", "one", "--model", "zoo:small_cnn", "--sim")
    first = dumpcmp(*agent, "--device", "0", "--state", tmp_path / "s0", "--keep-open")
    assert first.code == 0, first.output
    second = dumpcmp(*agent, "--device", "1", "--state", tmp_path / "s1", "--keep-run")
    assert second.code == 1, second.output
    (warning,) = [line for line in second.output.splitlines() if line.startswith("warning:")]
    assert "refused by the host: session one already holds the golden data of run small_cnn@dev0@" in warning
    kept = _KEPT.search(second.output)
    assert kept is not None, second.output
    run_dir = Path(kept.group(2))
    refused = [p for sub in ("golden", "npu") for p in (run_dir / sub).rglob("*") if p.is_file()]
    assert f" and {len(refused) - 1} other files: refused by the host" in warning
    # It said "2 files sent" of the run's inputs and rule, which the host held as the first run's.
    delivered = [p for p in (run_dir / "inputs").rglob("*") if p.is_file()] + [run_dir / "fusion_rule.json"]
    files = len(refused) + len(delivered)
    assert f"(open): {files} files sent, none kept (the host refused the run)" in second.output
    # A rerun into "one" is refused alike: what does work is said instead of "left open"; and that
    # the host holds none of the run's files.
    said = "was refused by the host (session one already holds the golden data of run small_cnn@dev0@"
    whole = (
        f"the host holds none of its {files} files ({len(delivered)} acknowledged before the host dropped "
    )
    again = "them with the run); the host refuses it again in a rerun into session one: stream into another"
    last = second.output.strip().splitlines()[-1]
    assert last.startswith("Error: run small_cnn@dev1@") and said in last and whole + again in last, last


def _refused_for_its_state(output: str, state: Path, session: str) -> None:
    """The one line of an agent refused because another agent streams into ``session`` with its
    state directory: it ran nothing and sent nothing."""
    (line,) = output.strip().splitlines()
    assert line.startswith(f"Error: --state {state}: another agent (process "), output
    assert line.endswith(
        f"is streaming into session {session} with this state directory; wait for it to end, "
        "or give this agent another --state or --session"
    ), output


def test_an_agent_whose_state_directory_another_agent_streams_with_is_refused_first(
    procs: Processes, tmp_path: Path
) -> None:
    # Two agents sharing one --state shared its journal and its agent id: both their runs were
    # accepted into the session, and each rewrote the other's journal.
    from dumpcmp.agent.journal import holding_session

    host = procs.host(tmp_path)
    state = tmp_path / "st"
    agent = ("agent", "run", "--host", host.address, "--session", "held", "--model", "zoo:small_cnn", "--sim")
    with holding_session(state, "held"):  # as the other agent does, running
        refused = dumpcmp(*agent, "--state", state)
    assert refused.code == 1
    _refused_for_its_state(refused.output, state, "held")
    assert not (state / "runs").exists()  # nothing simulated, nothing kept
    sessions = dumpcmp("host", "sessions", "--host", host.address)
    assert "held" not in sessions.output, sessions.output  # nothing sent: no session opened
    other = dumpcmp(*agent, "--state", state)  # the lock went with its holder
    assert other.code == 0, other.output


def test_two_simulated_agents_sharing_one_state_directory_have_one_run_accepted(
    procs: Processes, tmp_path: Path
) -> None:
    # Started together into one session, both exited 0 in 8 of 20 trials: the second to end said
    # "left open: another agent is still streaming into it" of a run the first had replaced.
    host = procs.host(tmp_path)
    state = tmp_path / "st"
    for trial in range(3):
        session = f"both{trial}"
        agents = [
            procs.agent(tmp_path / f"{session}-{n}.log", host, session, "--model", "zoo:small_cnn", "--sim",
                        "--state", state)
            for n in range(2)
        ]  # fmt: skip
        done = [a.wait() for a in agents]
        assert sorted(d.code for d in done) == [0, 1], [d.output for d in done]
        taken, refused = sorted(done, key=lambda d: d.code)
        _refused_for_its_state(refused.output, state, session)
        info = session_info(host.address, session)
        assert info.state == pb.SessionInfo.CLOSED, taken.output
        assert not info.replaced_runs, taken.output  # the refused agent started no run
        assert not list((state / "runs").iterdir())  # and kept none
