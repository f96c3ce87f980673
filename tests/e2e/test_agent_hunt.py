"""``agent run --hunt`` end to end: a real host on loopback, the simulated NPU through the live
path, the hunt's passes as runs of their own; its refusals are one line."""

from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from dumpcmp.agent.hunt import HuntPass, run_hunt
from dumpcmp.agent.run import AgentRun, PreparedRun, new_run_token
from dumpcmp.agent.session import SessionPlan
from dumpcmp.agent.uploader import UploadSettings
from dumpcmp.cli import app
from dumpcmp.commands.sim import prepare_agent_run
from dumpcmp.errors import TransferError
from dumpcmp.fakes.executor import OpRun
from dumpcmp.fakes.npu import SimulatedAcl
from dumpcmp.host.server.serve import HostConfig, HostServer, start
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from dumpcmp.proto.channel import ChannelOptions
from dumpcmp.proto.runs import run_slot, run_token
from tests.agent.recording_host import RecordingHost, ServerHandle, serving
from tests.e2e.agent_host_kit import Processes, dumpcmp, procs_fixture, session_info, wait_for  # noqa: F401
from tests.host.server.hostkit import Hosts, host_fixture, hosts_fixture  # noqa: F401 (fixtures)

FAULT = "/block2/Add=bias:0.5"


@pytest.fixture(autouse=True)
def _plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")


def cli(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(map(str, args)))
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def hunt_cli(address: str, session: str, tmp_path: Path, *extra: object) -> tuple[int, str]:
    return cli(
        "agent", "run", "--host", address, "--session", session, "--model", "zoo:small_cnn", "--sim",
        "--hunt", "--state", tmp_path / f"state-{session}", *extra,
    )  # fmt: skip


def live_runs(server: HostServer, session: str) -> list[str]:
    return server.service.store.live_runs(session)


def test_host_results_and_advise_of_a_hunt_session_say_the_verdict_and_each_pass_first(
    hosts: Hosts, host: HostServer, tmp_path: Path
) -> None:
    # `host results` of a hunt session said "first statistics divergence: ... /head/Softmax" of the
    # hunt that pinned /block2/Add, and `advise --host` advised each pass's table as if it were the
    # run: nothing said which pass a result was, or what the hunt had concluded.
    address = f"127.0.0.1:{host.port}"
    code, out = hunt_cli(address, "h1", tmp_path, "--inject", FAULT)
    assert code == 0, out
    runs = sorted(r for r in live_runs(host, "h1") if run_slot(r) != "small_cnn.hunt@dev0")
    held = host.service.store.files("h1", pb.DUMP)
    dumps = {f.run_id: "/".join(f.path.split("/")[:4]) for f in held}
    said = [
        f"hunt of small_cnn@dev0 (hunt {run_token(runs[0])}): verdict isolated: /block2/Add, after 2 passes; "
        "the rows below are its passes' captures, each compared on its own",
        f"  pass 1: statistics of every op: run {runs[0]}: dump/{dumps[runs[0]]}",
        f"  pass 2: tensors of 1 op (/block2/Add): run {runs[1]}: dump/{dumps[runs[1]]}",
    ]
    code, out = cli("host", "results", "h1", "--host", address)
    assert code == 0 and out.splitlines()[1:4] == said, out
    code, out = cli("advise", "--host", address, "--session", "h1", "-o", tmp_path / "advice")
    assert code == 0 and out.splitlines()[:3] == said, out


def test_a_hunt_sessions_results_agree_with_its_verdict(
    hosts: Hosts, host: HostServer, tmp_path: Path
) -> None:
    # Under the verdict (v_proj), the summary said "first divergence: step 0, index 100 ...
    # trans_TransData_41" as the session's, advise --host said pass 2's window input meant "the
    # network's inputs (or constants) differ", and --html advised both windows' rows as one network.
    address = f"127.0.0.1:{host.port}"
    code, out = cli(
        "agent", "run", "--host", address, "--session", "hw", "--model", "zoo:transformer", "--sim", "--hunt",
        "--inject", "/layers.2/attn.v_proj/Add=layout", "--state", tmp_path / "state",
    )  # fmt: skip
    assert code == 0 and "verdict: isolated: /layers.2/attn.v_proj/MatMul" in out, out
    code, out = cli("host", "results", "hw", "--host", address, "--html", tmp_path / "hw.html")
    assert code == 0, out
    places = [
        line
        for line in out.splitlines()
        if line.startswith(("first divergence: ", "statistics move away ", "first statistics divergence: "))
    ]
    assert places and all(re.search(r"(?:: | at )pass \d, step 0, index", line) for line in places), out
    code, out = cli("advise", "--host", address, "--session", "hw", "-o", tmp_path / "advice")
    assert code == 0, out
    assert "inputs (or constants) differ" not in out, out
    # Each pass advised on its own, named by its pass (its result files' names do not say which).
    blocks = [line for line in out.splitlines() if line.startswith("result ")]
    assert blocks == ["result hunt_pass1_statistics", "result hunt_pass2", "result hunt_pass3"], out
    lines = out.splitlines()
    pass_2, pass_3 = (lines[lines.index(b) + 1] for b in blocks[1:])
    assert pass_2.startswith("first divergence: /layers.2/attn/v/Transpose produces op #2"), out
    assert "/layers.2/attn/v/Transpose was not dumped" in pass_2, out
    assert pass_3.startswith("first divergence: op #0 /layers.2/attn.v_proj/MatMul"), out
    html = (tmp_path / "hw.html").read_text()
    assert "inputs (or constants) differ" not in html
    assert "diverging: 2" in html and "/layers.2/attn/v/Transpose was not dumped" in html


def test_a_fault_is_isolated_in_passes_and_the_results_hold_every_pass(
    hosts: Hosts, host: HostServer, tmp_path: Path
) -> None:
    code, out = hunt_cli(f"127.0.0.1:{host.port}", "h1", tmp_path, "--inject", FAULT)
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].startswith("pass 1: statistics (outputs) of every op: 20 files,"), out
    assert lines[1].startswith("pass 2: tensors (inputs and outputs) of 1 op (/block2/Add): 1 file,"), out
    assert "verdict: isolated: /block2/Add, after 2 passes" in lines, out
    assert any(line.startswith("hunt: 2 passes, ") and "of a full capture's ~" in line for line in lines), out
    assert "session h1 on" in out and "(closed)" in out
    # One numbering in the closing summary, the op's place in the model: pass 2's capture of one
    # op called it "index 0", the statistics line below "index 8".
    named = [
        re.search(r"first(?: divergence:| at) pass \d, step 0, index (\d+) Add /block2/Add \(", line)
        for line in lines
        if line.startswith(("first divergence: ", "statistics move away from the golden's first at "))
    ]
    assert len(named) == 2 and all(named) and len({m[1] for m in named if m}) == 1, out
    assert {m[1] for m in named if m} != {"0"}, out
    client = hosts.client(host)
    # Pass 1's statistics land in the statistics result file, pass 2's tensors as rows: each pass
    # its own model load, so its own directory and shard.
    info = client.info("h1")
    assert any("stats_result" in name for name in info.result_files), info.result_files
    assert any(n.endswith(".csv") and "stats_result" not in n for n in info.result_files), info.result_files
    dumps = {f.path.split("/")[3] for f in info.files if f.kind == pb.DUMP}
    assert len(dumps) == 2 and {r.shard.model_id for r in client.rows("h1")} < dumps
    runs = live_runs(host, "h1")
    # The hunt's golden data, rule and inputs as a run of their own, then each pass's.
    slots = ["small_cnn.hunt1@dev0", "small_cnn.hunt2@dev0", "small_cnn.hunt@dev0"]
    assert sorted(run_slot(r) for r in runs) == slots
    assert len({run_token(r) for r in runs}) == 1
    own = host.service.store.files("h1")
    assert {f.run_id for f in own if f.kind in (pb.GOLDEN, pb.FUSION_RULE, pb.INPUT)} == {
        r for r in runs if run_slot(r) == "small_cnn.hunt@dev0"
    }
    outputs = [f for f in info.files if f.kind == pb.OUTPUT]
    passes = sorted(r for r in runs if run_slot(r) != "small_cnn.hunt@dev0")
    assert sorted(f.path.split("/")[0] for f in outputs) == passes  # each pass's outputs, per run
    assert not (tmp_path / "state-h1" / "hunts").exists() or not any(
        (tmp_path / "state-h1" / "hunts").iterdir()
    )
    # host results --csv: pass 2's rows, and pass 1's statistics table beside them.
    code, out = cli("host", "results", "h1", "--host", f"127.0.0.1:{host.port}", "--csv", tmp_path / "h1.csv")
    assert code == 0, out
    tensors, statistics = _csv_rows(tmp_path / "h1.csv"), _csv_rows(tmp_path / "h1.statistics.csv")
    assert any("/block2/Add" in row for row in tensors) and len(statistics) >= 20, (tensors, statistics)
    assert f"wrote {tmp_path / 'h1.statistics.csv'}" in out.splitlines(), out


def _csv_rows(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()[1:]


def test_a_hunt_run_again_after_its_session_was_deleted_sends_everything_afresh(
    hosts: Hosts, host: HostServer, tmp_path: Path
) -> None:
    # The journal kept the earlier passes' entries of a finished hunt (only the last pass's were
    # forgotten): the rerun said 373 files "acknowledged earlier, but the host no longer has it and
    # it is gone here", failed, and left the session open.
    address = f"127.0.0.1:{host.port}"
    code, out = hunt_cli(address, "h1", tmp_path, "--inject", FAULT)
    assert code == 0, out
    hosts.client(host).stub.DeleteSession(pb.DeleteSessionRequest(session="h1"), timeout=30)
    code, out = hunt_cli(address, "h1", tmp_path, "--inject", FAULT)
    assert code == 0 and "warning" not in out and "(closed)" in out, out


def test_a_fault_free_model_stops_after_pass_1_with_no_divergence(host: HostServer, tmp_path: Path) -> None:
    code, out = hunt_cli(f"127.0.0.1:{host.port}", "h1", tmp_path)
    assert code == 0, out
    assert out.startswith("pass 1: statistics (outputs) of every op:"), out
    assert "pass 2" not in out
    assert "verdict: no divergence, after 1 pass" in out.splitlines()
    # Its results are statistics alone: --csv writes that table (it wrote a header and no row).
    code, out = cli("host", "results", "h1", "--host", f"127.0.0.1:{host.port}", "--csv", tmp_path / "h1.csv")
    assert code == 0 and len(_csv_rows(tmp_path / "h1.csv")) >= 20, out


def test_the_full_capture_a_hunt_is_set_against_has_every_step(host: HostServer, tmp_path: Path) -> None:
    estimates = []
    for steps in ("1", "3"):
        code, out = hunt_cli(f"127.0.0.1:{host.port}", f"s{steps}", tmp_path, "--steps", steps)
        assert code == 0, out
        found = re.search(r"of a full capture's ~([0-9.]+) KB\)", out)
        assert found is not None, out
        estimates.append(float(found.group(1)))
    assert estimates[1] == pytest.approx(3 * estimates[0], rel=0.01), estimates


def test_a_pass_over_pass_bytes_says_why(host: HostServer, tmp_path: Path) -> None:
    code, out = hunt_cli(f"127.0.0.1:{host.port}", "h1", tmp_path, "--inject", FAULT, "--pass-bytes", "1")
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].endswith("(over --pass-bytes: the statistics pass is not bounded)"), out
    assert lines[1].endswith("(over --pass-bytes: a window holds at least one op)"), out
    assert "verdict: isolated: /block2/Add, after 2 passes" in lines, out


def test_max_passes_bounds_the_hunt_and_says_it_is_undecided(host: HostServer, tmp_path: Path) -> None:
    code, out = hunt_cli(f"127.0.0.1:{host.port}", "h1", tmp_path, "--inject", FAULT, "--max-passes", "1")
    assert code == 0, out
    verdict = [line for line in out.splitlines() if line.startswith("verdict: ")]
    assert "pass 2" not in out and len(verdict) == 1, out
    assert verdict[0].startswith("verdict: undecided: ") and verdict[0].endswith(", after 1 pass"), out
    assert any(line.startswith("hunt: 1 pass, ") for line in out.splitlines()), out


class _Killed(Exception):
    """Stands for a SIGKILL of the agent in the middle of pass 2."""


def _prepared(tmp_path: Path, *faults: str) -> PreparedRun:
    token = new_run_token()
    return prepare_agent_run("zoo:small_cnn", tmp_path / "state" / "runs" / token, token, faults=faults)


def _agent(address: str, tmp_path: Path, *, golden: bool = True) -> AgentRun:
    plan = SessionPlan("h1", "small_cnn", golden_uploaded=golden, fusion_rule_name="fusion_rule.json")
    return AgentRun(ChannelOptions(address), plan, tmp_path / "state", UploadSettings(give_up=30.0))


def test_an_agent_killed_between_passes_and_run_again_restarts_the_hunt_cleanly(
    hosts: Hosts, host: HostServer, tmp_path: Path
) -> None:
    address = f"127.0.0.1:{host.port}"
    first = _prepared(tmp_path, FAULT)
    backend = first.runtime.backend
    assert isinstance(backend, SimulatedAcl)
    ran: list[str] = []

    def op_ran(op: OpRun) -> None:
        ran.append(op.op.name)
        if len(ran) == 25:  # pass 1 ran 20 ops: pass 2 has started, its START on its way
            raise _Killed

    backend.on_op = op_ran
    passes: list[str] = []
    with pytest.raises(_Killed):
        run_hunt(
            _agent(address, tmp_path),
            first,
            "--model zoo:small_cnn",
            on_pass=lambda p: passes.append(p.run_id),
        )
    (old_pass,) = passes
    assert old_pass in live_runs(host, "h1")
    again = run_hunt(_agent(address, tmp_path), _prepared(tmp_path, FAULT), "--model zoo:small_cnn")
    assert again.verdict.kind == "isolated" and again.verdict.culprit == "/block2/Add"
    runs = live_runs(host, "h1")
    assert {run_token(r) for r in runs} == {again.hunt} and len(runs) == len(again.passes) + 1  # + its files
    assert old_pass in hosts.client(host).info("h1").replaced_runs
    info = again.outcome.uploader.close_session()
    assert not info.nothing_compared
    dumps = [f.path for f in info.files if f.kind == pb.DUMP]
    assert len(dumps) == sum(p.dump_files for p in again.passes)  # nothing of the killed hunt is left


def test_a_host_without_golden_data_is_one_line(host: HostServer, tmp_path: Path) -> None:
    run = _prepared(tmp_path)
    files = run.files
    no_golden = dataclasses.replace(run, files=lambda m: [f for f in files(m) if f[0] != pb.GOLDEN])
    with pytest.raises(TransferError) as caught:
        run_hunt(_agent(f"127.0.0.1:{host.port}", tmp_path, golden=False), no_golden, "--model zoo:small_cnn")
    said = str(caught.value)
    assert said.startswith(f"host 127.0.0.1:{host.port}: session h1 holds no golden data"), said
    assert "\n" not in said


@pytest.fixture
def old_host(tmp_path: Path) -> Iterator[ServerHandle]:
    with serving(RecordingHost(tmp_path / "old-host")) as handle:  # a servicer without NextCapture
        yield handle


def test_a_host_older_than_the_hunt_is_one_line(old_host: ServerHandle, tmp_path: Path) -> None:
    code, out = hunt_cli(old_host.target, "h1", tmp_path)
    assert code == 1 and out.strip().count("\n") == 0, out
    assert f"host {old_host.target} does not support --hunt" in out and "upgrade it" in out


def test_hunt_with_an_om_and_no_ascendcl_is_one_line(
    host: HostServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH", "LD_LIBRARY_PATH"):
        monkeypatch.delenv(variable, raising=False)
    om = tmp_path / "m.om"
    om.write_bytes(b"an offline model")
    acl = tmp_path / "acl.json"
    (tmp_path / "dump").mkdir()
    acl.write_text(
        json.dumps({"dump": {"dump_path": str(tmp_path / "dump"), "dump_list": [{"model_name": "m"}]}})
    )
    inputs = tmp_path / "in.npy"
    np.save(inputs, np.zeros(3, np.float32))
    code, out = cli(
        "agent", "run", "--host", f"127.0.0.1:{host.port}", "--session", "h1", "--model", om, "--acl-config",
        acl, "--input", inputs, "--hunt", "--state", tmp_path / "state",
    )  # fmt: skip
    assert code == 1 and out.startswith("Error: ") and out.strip().count("\n") == 0, out
    assert "libascendcl" in out and "set ASCEND_TOOLKIT_HOME" in out and "--acl-lib" not in out


@pytest.mark.parametrize(
    ("source", "said"),
    [
        (["--watch", "."], "--hunt go with --model, not --watch"),
        ([], "give one of --watch DUMP_PATH or --model"),
    ],
)
def test_hunt_goes_with_a_model(tmp_path: Path, source: list[str], said: str) -> None:
    code, out = cli("agent", "run", "--host", "127.0.0.1:1", "--session", "h1", *source, "--hunt")
    assert code == 1 and said in out and out.strip().count("\n") == 0, out


@pytest.mark.parametrize("option", [["--max-passes", "3"], ["--pass-bytes", "0"]])
def test_hunt_options_without_hunt_are_refused(tmp_path: Path, option: list[str]) -> None:
    code, out = cli(
        "agent", "run", "--host", "127.0.0.1:1", "--session", "h1", "--model", "zoo:small_cnn", "--sim",
        *option, "--state", tmp_path / "state",
    )  # fmt: skip
    assert code == 1 and "--max-passes and --pass-bytes go with --hunt" in out, out
    assert out.strip().count("\n") == 0, out


def test_a_host_restarted_between_passes_is_asked_again_and_the_hunt_goes_on(
    hosts: Hosts, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    first = hosts.start(data)
    port = first.port
    restarted: list[HostServer] = []

    def restart_later() -> None:
        time.sleep(1.0)  # the agent asks meanwhile: the host is down
        restarted.append(start(HostConfig(f"127.0.0.1:{port}", data)))

    def after_pass(done: HuntPass) -> None:
        if done.index == 1:
            hosts.stop(first)
            threading.Thread(target=restart_later, daemon=True).start()

    try:
        hunted = run_hunt(
            _agent(f"127.0.0.1:{port}", tmp_path), _prepared(tmp_path, FAULT), "--model zoo:small_cnn",
            give_up=30.0, on_pass=after_pass,
        )  # fmt: skip
        assert hunted.verdict.kind == "isolated" and len(hunted.passes) == 2
        assert not hunted.outcome.uploader.close_session().nothing_compared
    finally:
        for server in restarted:
            server.stop(grace=0)


def test_an_agent_sigkilled_between_passes_and_run_again_restarts_the_hunt_cleanly(
    procs: Processes, tmp_path: Path
) -> None:
    # Real processes: the host paused once pass 1 is acknowledged (the agent then waits for its next
    # capture), the agent SIGKILLed there, the same command run again.
    host = procs.host(tmp_path / "real")
    args = ("--model", "zoo:small_cnn", "--sim", "--hunt", "--inject", FAULT, "--state", tmp_path / "st")
    killed = procs.agent(tmp_path / "agent1.log", host, "ko", *args)
    wait_for(lambda: "pass 1: " in killed.output or killed.process.poll() is not None, "pass 1")
    host.pause()
    killed.kill()
    host.resume()
    assert "verdict" not in killed.output, killed.output
    again = dumpcmp("agent", "run", "--host", host.address, "--session", "ko", *args)
    assert again.code == 0 and "verdict: isolated: /block2/Add" in again.output, again.output
    info = session_info(host.address, "ko")
    assert info.state == pb.SessionInfo.CLOSED and info.replaced_runs
    tokens = {run_token(f.path.split("/")[0]) for f in info.files if f.kind == pb.OUTPUT}
    assert len(tokens) == 1  # every pass's outputs of one hunt: the new one
    dump_dirs = {f.path.split("/")[3] for f in info.files if f.kind == pb.DUMP}
    assert len(dump_dirs) == again.output.count("\npass ") + again.output.startswith("pass ")


def test_ctrl_c_once_the_hunts_files_are_acknowledged_leaves_a_rerun_that_finishes(
    host: HostServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C after the golden data, rule and inputs were acknowledged (journalled), before pass
    # 1's dump: the session, holding no dump file, is deleted. Its journal entries went on
    # naming golden files the run's cleanup had removed: every rerun failed on them.
    import dumpcmp.agent.hunt as hunt_module

    real_pass = hunt_module._run_pass
    calls: list[int] = []

    def interrupted_once(*args: Any, **kwargs: Any) -> HuntPass:
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return real_pass(*args, **kwargs)

    monkeypatch.setattr(hunt_module, "_run_pass", interrupted_once)
    address = f"127.0.0.1:{host.port}"
    code, out = hunt_cli(address, "ki", tmp_path, "--inject", FAULT)
    assert code != 0 and "interrupted" in out and "holding no dump file, was deleted" in out, out
    for _ in range(2):  # and again, once it finished and left the session open
        code, out = hunt_cli(address, "ki", tmp_path, "--inject", FAULT, "--keep-open")
        assert code == 0 and "verdict: isolated: /block2/Add" in out, out
        assert "warning" not in out and "not delivered" not in out, out


def _plain_run(address: str, session: str, tmp_path: Path, *extra: object) -> None:
    code, out = cli(
        "agent", "run", "--host", address, "--session", session, "--model", "zoo:small_cnn", "--sim",
        "--keep-open", "--state", tmp_path / "state-plain", *extra,
    )  # fmt: skip
    assert code == 0 and "(open)" in out, out


@pytest.mark.parametrize("seed", ["0", "7"])
def test_a_hunt_into_a_session_holding_a_plain_runs_golden_data_stops_before_it_begins(
    host: HostServer, tmp_path: Path, seed: str
) -> None:
    # The session compares with one run's golden data. The same seed makes the same golden bytes,
    # but under other names (each golden file is named by the time it was made): refused too.
    address = f"127.0.0.1:{host.port}"
    _plain_run(address, "r2", tmp_path)
    plain = live_runs(host, "r2")
    code, out = hunt_cli(address, "r2", tmp_path, "--seed", seed)
    assert code == 1 and out.strip().count("\n") == 0, out
    assert out.startswith("Error: the host refused the hunt's golden data, rule and inputs: ")
    assert f"session r2 already holds the golden data of run {plain[0]}" in out
    assert "verdict" not in out and "pass 1" not in out
    assert live_runs(host, "r2") == plain
    assert not (host.service.data_dir / "sessions" / "r2" / "hunts").exists()  # NextCapture never came


def test_a_hunt_of_another_model_into_a_hunted_session_is_refused_in_one_line(
    host: HostServer, tmp_path: Path
) -> None:
    address = f"127.0.0.1:{host.port}"
    code, out = hunt_cli(address, "m2", tmp_path, "--inject", FAULT, "--keep-open")
    assert code == 0 and "verdict: isolated: /block2/Add" in out, out
    first = sorted(live_runs(host, "m2"))
    code, out = cli(
        "agent", "run", "--host", address, "--session", "m2", "--model", "zoo:transformer_block", "--sim",
        "--hunt", "--state", tmp_path / "state-m2b",
    )  # fmt: skip
    assert code == 1 and out.strip().count("\n") == 0, out
    assert "the host refused the hunt's golden data, rule and inputs: session m2 already holds" in out
    assert "verdict" not in out and "pass 1" not in out
    assert sorted(live_runs(host, "m2")) == first  # the first hunt's runs, and only theirs
