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
