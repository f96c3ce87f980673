"""``dumpcmp agent run`` into a real host on loopback, then ``dumpcmp host``, as a new user runs
them: what they say and how they exit when the comparison cannot be made, or was first set up
wrong and is then given what it lacked."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dumpcmp.cli import app
from dumpcmp.commands.sim import simulate
from dumpcmp.fakes.simulate import SimulationResult
from dumpcmp.host.offline import run_compare
from dumpcmp.host.request import CompareRequest
from dumpcmp.host.server.auth import TlsFiles
from dumpcmp.host.server.serve import HostServer
from dumpcmp.host.summary import nothing_compared
from dumpcmp.host.verdict import Thresholds
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from tests.commands.test_agent_cli import signalled
from tests.host.server.hostkit import (  # noqa: F401 (fixtures: host, hosts, held_close)
    HeldClose,
    Hosts,
    held_close_fixture,
    host_fixture,
    hosts_fixture,
    make_pki,
    offline_csv,
)

OTHER_MODELS_RULE = Path("/work/shared/fixtures/atc/tdnn.om.json")
if not OTHER_MODELS_RULE.is_file():  # the fixtures live beside the repository
    OTHER_MODELS_RULE = Path(__file__).resolve().parents[3] / "shared/fixtures/atc/tdnn.om.json"


@pytest.fixture(autouse=True)
def _plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> SimulationResult:
    return simulate("zoo:small_cnn", tmp_path_factory.mktemp("sim") / "run", seed=3)


def cli(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(map(str, args)))
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def agent_watch(
    host: HostServer, session: str, sim: SimulationResult, tmp_path: Path, *extra: object
) -> tuple[int, str]:
    return cli(
        "agent", "run", "--host", f"127.0.0.1:{host.port}", "--session", session,
        "--watch", sim.npu_dump_dir, "--state", tmp_path / f"state-{session}",
        "--until-idle", "0", "--quiet-time", "0", *extra,
    )  # fmt: skip


def test_a_session_that_compared_nothing_is_compares_one_line_and_exit_1(
    hosts: Hosts, host: HostServer, sim: SimulationResult, tmp_path: Path
) -> None:
    # Another model's rule: not one tensor has numbers. compare -m offline_data exits 1 with
    # "nothing compared: ..."; the agent and host results said "compared: 0" and exited 0.
    assert OTHER_MODELS_RULE.is_file()
    local = run_compare(
        CompareRequest(
            target=sim.npu_dump_dir,
            golden=sim.golden_dir,
            fusion_rule=OTHER_MODELS_RULE,
            out_dir=tmp_path / "o",
        )
    )
    line = nothing_compared(local, Thresholds())
    assert line is not None and line.startswith("nothing compared: ")
    code, out = agent_watch(
        host, "s8", sim, tmp_path, "--golden", sim.golden_dir, "--fusion-rule", OTHER_MODELS_RULE
    )
    assert code == 1, out
    # The host names its own copy of the rule file, and the agent's options, not compare's.
    line = line.replace(str(OTHER_MODELS_RULE), str(tmp_path / "data/sessions/s8/rules/tdnn.om.json"))
    compare_terms = "check that -gp holds the golden data of this very model and -fr is its ATC json"
    assert compare_terms in line
    line = line.replace(
        compare_terms, compare_terms.replace("-gp", "--golden").replace("-fr", "--fusion-rule")
    )
    assert out.splitlines()[-1] == f"Error: {line}"
    assert out.count("nothing compared") == 1
    address = f"127.0.0.1:{host.port}"
    code, out = cli("host", "results", "s8", "--host", address, "--csv", tmp_path / "x.csv")
    assert code == 1, out
    assert out.splitlines()[-1] == f"Error: {line}"
    assert (tmp_path / "x.csv").is_file()  # written, as compare writes its table, then exit 1


def test_a_session_that_compared_something_exits_0(
    hosts: Hosts, host: HostServer, sim: SimulationResult, tmp_path: Path
) -> None:
    code, out = agent_watch(
        host, "ok", sim, tmp_path, "--golden", sim.golden_dir, "--fusion-rule", sim.fusion_rule
    )
    assert code == 0, out
    assert "nothing compared" not in out
    code, out = cli("host", "results", "ok", "--host", f"127.0.0.1:{host.port}")
    assert code == 0, out


def _odd_names_model(path: Path) -> Path:
    """Sigmoid ``tab<TAB>name``, then Relu ``back\\slash``: names of a model from elsewhere."""
    import onnx
    from onnx import TensorProto, helper

    tensor = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in ("x", "y")]
    nodes = [helper.make_node("Sigmoid", ["x"], ["a"], name="tab\tname"),
             helper.make_node("Relu", ["a"], ["y"], name="back\\slash")]  # fmt: skip
    graph = helper.make_graph(nodes, "odd", tensor[:1], tensor[1:])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_a_sim_run_of_odd_op_names_sends_what_the_host_takes_and_names_what_it_does_not(
    hosts: Hosts, host: HostServer, tmp_path: Path
) -> None:
    # A tab in an op name went into the dump and golden file names: the dump file was skipped as
    # no dump file, and the golden file left out without a word (the host then said its golden
    # was "not found"). Names are made without control characters now; a golden file the host
    # still takes no file by (msaccucmp's golden names keep a backslash) is named in one line.
    code, out = cli(
        "agent", "run", "--host", f"127.0.0.1:{host.port}", "--session", "odd", "--sim",
        "--model", _odd_names_model(tmp_path / "odd.onnx"), "--state", tmp_path / "state",
    )  # fmt: skip
    said = [line for line in out.splitlines() if line.startswith("skipped ")]
    assert len(said) == 1, out
    assert re.fullmatch(
        r"skipped .*/golden/back\\slash\.0\.[0-9]+\.npy: a name the host takes no file by "
        r"\(backslash in path \(the separator is '/'\)\)",
        said[0],
    ), out
    golden = {p.name.rpartition(".0.")[0] for p in (tmp_path / "data/sessions/odd/golden").rglob("*.npy")}
    assert golden == {"x", "tab_name"}, out
    assert code == 0, out  # the Relu's tensors compare nothing; the Sigmoid's compare


def test_a_session_that_lacked_its_golden_and_rule_is_fixed_by_running_again_with_them(
    hosts: Hosts, host: HostServer, sim: SimulationResult, tmp_path: Path
) -> None:
    # The second, correct run said "needs -fr/--fusion-rule-file" although it gave --fusion-rule:
    # the session kept the settings of its first open, which named no golden data and no rule.
    code, out = agent_watch(host, "q1", sim, tmp_path)
    assert code == 1, out
    assert out.splitlines()[-1] == (
        f"Error: host 127.0.0.1:{host.port}: session q1 cannot be closed: waiting for golden data: "
        "run the agent into this session again with --golden DIR to send it"
    )
    code, out = agent_watch(
        host, "q1", sim, tmp_path, "--golden", sim.golden_dir, "--fusion-rule", sim.fusion_rule
    )
    assert code == 0, out
    assert "(closed)" in out
    client = hosts.client(host)
    info = client.info("q1")
    assert info.state == pb.SessionInfo.CLOSED and info.settings.fusion_rule_name == sim.fusion_rule.name
    assert client.fetch("q1", info.result_files[0]) == offline_csv(sim, tmp_path / "offline")


def test_a_session_refuses_a_run_that_names_another_rule_in_one_line(
    hosts: Hosts, host: HostServer, sim: SimulationResult, tmp_path: Path
) -> None:
    # Its rows would mix two comparisons: said, with what to do.
    code, out = agent_watch(
        host, "r1", sim, tmp_path, "--golden", sim.golden_dir, "--fusion-rule", sim.fusion_rule, "--keep-open"
    )
    assert code == 0, out
    other = tmp_path / "other.json"
    other.write_bytes(sim.fusion_rule.read_bytes())
    code, out = agent_watch(host, "r1", sim, tmp_path, "--fusion-rule", other)
    assert code == 1 and len(out.strip().splitlines()) == 1, out
    assert out.strip() == (
        f"Error: host 127.0.0.1:{host.port}: session r1 compares with the fusion rule "
        f"{sim.fusion_rule.name} sent by an agent (--fusion-rule), this run gives other.json sent by an "
        "agent (--fusion-rule); delete the session first (dumpcmp host delete r1) or stream into a new "
        "session name"
    )


def test_a_refused_watch_keeps_the_sessions_rule_and_says_so_truly(
    hosts: Hosts, host: HostServer, sim: SimulationResult, tmp_path: Path
) -> None:
    # A --watch whose golden data was refused (another run's is the session's) still had its rule
    # stored over the session's, said "1 file sent", then "left open, so its results never lack
    # them": the close compared small_cnn's dump through another model's rule.
    address = f"127.0.0.1:{host.port}"
    code, out = cli(
        "agent", "run", "--host", address, "--session", "rr1", "--model", "zoo:small_cnn", "--sim",
        "--state", tmp_path / "state-sim", "--keep-open",
    )  # fmt: skip
    assert code == 0, out
    rule = tmp_path / "data/sessions/rr1/rules/fusion_rule.json"
    before = rule.read_bytes()
    other = tmp_path / "other/fusion_rule.json"  # another model's rule, named as the session's
    other.parent.mkdir()
    other.write_bytes(OTHER_MODELS_RULE.read_bytes())
    empty = tmp_path / "empty"
    empty.mkdir()
    for extra in (("--golden", sim.golden_dir), ()):
        code, out = cli(
            "agent", "run", "--host", address, "--session", "rr1", "--watch", empty, "--state",
            tmp_path / "state-watch", "--until-idle", "0", "--fusion-rule", other, *extra,
        )  # fmt: skip
        assert code == 1, out
        assert rule.read_bytes() == before, out
        assert "fusion_rule.json: refused by the host: session rr1 already holds another fusion rule" in out
        assert "(open): 0 files sent (0 B)" in out, out
        last = out.strip().splitlines()[-1]
        assert last.endswith(
            "the host refuses them again in a rerun into session rr1: stream into another session name, "
            f"or end this one first: dumpcmp host close rr1 --host {address} (its results then lack them) "
            f"or dumpcmp host delete rr1 --host {address}"
        ), out


def test_an_empty_dump_file_is_reported_unreadable_and_the_session_closes(
    hosts: Hosts, host: HostServer, sim: SimulationResult, tmp_path: Path
) -> None:
    # A dump file its writer never filled waited as "incomplete" for ever: the agent left the
    # session open (exit 1), so the comparison never ended.
    dump = tmp_path / "npu"
    shutil.copytree(sim.npu_dump_dir, dump)
    step = next(p.parent for p in dump.rglob("*") if p.is_file())
    empty = step / "Relu.never_written.99.2.1700000000000099"
    empty.touch()
    os.utime(empty, (time.time() - 5, time.time() - 5))  # empty for longer than the quiet time
    code, out = cli(
        "agent", "run", "--host", f"127.0.0.1:{host.port}", "--session", "e1", "--watch", dump,
        "--state", tmp_path / "state", "--until-idle", "0.2", "--quiet-time", "0.1",
        "--golden", sim.golden_dir, "--fusion-rule", sim.fusion_rule,
    )  # fmt: skip
    assert code == 0, out
    assert "(closed)" in out and "not sent" not in out
    unreadable = [line for line in out.splitlines() if line.startswith("unreadable dump file ")]
    assert len(unreadable) == 1 and empty.name in unreadable[0], out
    assert "unreadable dump files: 1" in out


def _sessions(hosts: Hosts, host: HostServer) -> list[str]:
    reply = hosts.client(host).stub.ListSessions(pb.ListSessionsRequest(), timeout=10.0)
    return [s.session for s in reply.sessions]


@pytest.mark.parametrize(
    "case",
    ["bad acl.json", "input of another shape", "acl.json of another model", "empty watch", "watch of strays"],
)
def test_an_agent_run_that_fails_leaves_no_empty_session_behind(
    hosts: Hosts, host: HostServer, tmp_path: Path, case: str
) -> None:
    # Each left an empty open session that `host close` could not close ("holds no dump files").
    import numpy as np

    address = f"127.0.0.1:{host.port}"
    sim = ("--model", "zoo:small_cnn", "--sim")
    if case == "bad acl.json":
        acl = tmp_path / "bad.json"
        acl.write_text('{"dump": {{')
        args: tuple[object, ...] = (*sim, "--acl-config", acl)
        said = f"Error: {acl}: line 1, column 11: not valid JSON: "
    elif case == "input of another shape":
        wrong = tmp_path / "wrong.npy"
        np.save(wrong, np.zeros((3, 3), np.float32))
        args, said = (
            (*sim, "--input", wrong),
            "Error: input 'input': the model expects shape [1, 3, 16, 16], given [3, 3]",
        )
    elif case == "acl.json of another model":
        acl = tmp_path / "acl.json"
        (tmp_path / "dp").mkdir()
        acl.write_text(
            json.dumps(
                {"dump": {"dump_path": str(tmp_path / "dp"), "dump_list": [{"model_name": "resnet50"}]}}
            )
        )
        args = (*sim, "--acl-config", acl)
        said = (
            "Error: --model zoo:small_cnn: the simulated run dumped no file (does the dump_list of "
            f"--acl-config {acl} name this model?)"
        )
    elif case == "empty watch":
        (tmp_path / "empty").mkdir()
        args = ("--watch", tmp_path / "empty", "--until-idle", "0")
        said = (
            f"Error: --watch {tmp_path / 'empty'}: no dump file to send, nothing to compare; session o1, "
            f"opened by this run and holding no dump file, was deleted from host {address}"
        )
    else:
        stray = tmp_path / "strays" / "Add.x.y.z.bak"
        stray.parent.mkdir()
        stray.write_bytes(b"not a dump")
        args = ("--watch", stray.parent, "--until-idle", "0", "--quiet-time", "0")
        said = (
            f"Error: --watch {stray.parent}: no dump file to send (1 other file skipped, e.g. {stray}: not a "
            f"dump file name), nothing to compare; session o1, opened by this run and holding no dump file, "
            f"was deleted from host {address}"
        )
    code, out = cli(
        "agent", "run", "--host", address, "--session", "o1", "--state", tmp_path / "state", *args
    )
    assert code == 1 and len(out.strip().splitlines()) == 1 and out.startswith(said), out
    assert _sessions(hosts, host) == []
    assert not list((tmp_path / "state" / "runs").glob("*"))  # a run that never reached the host


def test_an_empty_session_that_was_there_before_is_left_alone(
    hosts: Hosts, host: HostServer, tmp_path: Path
) -> None:
    hosts.client(host).open("o2")  # another agent's, or a user's, session
    (tmp_path / "empty").mkdir()
    code, out = cli("agent", "run", "--host", f"127.0.0.1:{host.port}", "--session", "o2", "--watch",
                    tmp_path / "empty", "--state", tmp_path / "state", "--until-idle", "0")  # fmt: skip
    assert code == 1 and "holds no dump files" in out and "deleted" not in out, out
    assert _sessions(hosts, host) == ["o2"]


def test_a_watch_ended_by_ctrl_c_that_saw_no_dump_file_deletes_its_empty_session(
    hosts: Hosts, host: HostServer, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    address = f"127.0.0.1:{host.port}"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    agent = subprocess.Popen(
        [sys.executable, "-m", "dumpcmp.cli", "agent", "run", "--host", address, "--session", "o3",
         "--watch", str(empty), "--state", str(tmp_path / "state")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    output = signalled(agent, signal.SIGINT, lambda: "o3" in _sessions(hosts, host))
    assert agent.returncode == 1, output  # Ctrl-C is how a watch ends; it found nothing
    assert output.strip().splitlines()[-1] == (
        f"Error: --watch {empty}: no dump file to send, nothing to compare; session o3, opened by this run "
        f"and holding no dump file, was deleted from host {address}"
    )
    assert _sessions(hosts, host) == []


@pytest.mark.parametrize(
    "host_tls", [True, False], ids=["tls host, plaintext agent", "plaintext host, tls agent"]
)
def test_tls_on_one_side_only_is_one_line_at_once(hosts: Hosts, tmp_path: Path, host_tls: bool) -> None:
    # A plaintext agent retried a TLS host's "Socket closed" until --give-up (300 s by default).
    pki = make_pki(tmp_path / "pki")
    tls = TlsFiles(pki.server_cert, pki.server_key) if host_tls else None
    server = hosts.start(tmp_path / "data", tls=tls)
    address = f"127.0.0.1:{server.port}"
    dump = tmp_path / "dump"
    dump.mkdir()
    ca = () if host_tls else ("--tls-ca", pki.ca)
    code, out = cli("agent", "run", "--host", address, "--session", "t1", "--watch", dump, "--state",
                    tmp_path / "state", "--until-idle", "0", "--give-up", "5", *ca)  # fmt: skip
    hint = (
        "it closed the connection at once, as a TLS host does to a plaintext client: pass --tls-ca CA.pem "
        "(the CA of the host's certificate)"
        if host_tls
        else f"the host does not speak TLS: drop --tls-ca {pki.ca} (or start the host with --tls-cert)"
    )
    assert (code, out.strip()) == (1, f"Error: cannot reach the host at {address}: {hint}")
    assert not (tmp_path / "state").exists()


def test_a_host_asking_for_a_client_certificate_is_one_line_at_once(hosts: Hosts, tmp_path: Path) -> None:
    # Mutual TLS without a client certificate ("Socket closed") was retried until --give-up.
    pki = make_pki(tmp_path / "pki")
    server = hosts.start(tmp_path / "data", tls=TlsFiles(pki.server_cert, pki.server_key, client_ca=pki.ca))
    address = f"localhost:{server.port}"
    dump = tmp_path / "dump"
    dump.mkdir()
    started = time.monotonic()
    code, out = cli("agent", "run", "--host", address, "--session", "t1", "--watch", dump,
                    "--state", tmp_path / "state", "--until-idle", "0", "--give-up", "30",
                    "--tls-ca", pki.ca)  # fmt: skip
    assert time.monotonic() - started < 20
    assert (code, out.strip()) == (
        1,
        f"Error: cannot reach the host at {address}: it closed the TLS connection at once, as a host asking "
        "for client certificates (--client-ca) does: pass --tls-cert and --tls-key signed by that CA",
    )


def _sim_agent(host: HostServer, session: str, tmp_path: Path) -> tuple[object, ...]:
    return (
        "agent", "run", "--host", f"127.0.0.1:{host.port}", "--session", session,
        "--model", "zoo:small_cnn", "--sim", "--state", tmp_path / "state",
    )  # fmt: skip


def _closed_line(address: str, session: str, state: str = "closed") -> str:
    return (
        f"Error: session {session} on host {address} is {state} and its results are final: see them with "
        f"dumpcmp host results {session} --host {address}, or stream into a new session name"
    )


def test_a_session_closed_between_the_agents_first_look_and_its_open_is_one_line(
    hosts: Hosts, host: HostServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `agent run` racing `host close` of its session (about 1 in 5 trials): a close that ended
    # between the agent's GetSession and its OpenSession gave
    # "Error: host H: FAILED_PRECONDITION: session race is closed and its results are final; ...".
    import dumpcmp.agent.run as agent_run

    agent = _sim_agent(host, "race", tmp_path)
    code, out = cli(*agent, "--keep-open")
    assert code == 0, out
    looked = agent_run.reach_host

    def looked_then_closed(*args: Any) -> Any:
        found = looked(*args)
        hosts.client(host).close("race")  # `host close` ends now
        return found

    monkeypatch.setattr(agent_run, "reach_host", looked_then_closed)
    code, out = cli(*agent)
    assert (code, out.strip()) == (1, _closed_line(f"127.0.0.1:{host.port}", "race")), out


def test_a_run_refused_because_its_session_is_closing_says_so_and_that_the_host_holds_none_of_it(
    hosts: Hosts, host: HostServer, tmp_path: Path, held_close: HeldClose
) -> None:
    # The agent whose run START came during another hand's close said "0 files sent", then
    # "49 files not delivered (see the warnings above); session was closed meanwhile (not by this
    # agent): its results lack them": its results never held any of them.
    agent = _sim_agent(host, "shut", tmp_path)
    code, out = cli(*agent, "--keep-open")
    assert code == 0, out
    closer = threading.Thread(target=lambda: hosts.client(host).close("shut"))
    closer.start()
    try:
        assert held_close.entered.wait(60)
        code, out = cli(*agent)
    finally:
        held_close.release.set()
        closer.join(60)
    assert code == 1, out
    last = out.strip().splitlines()[-1]
    address = f"127.0.0.1:{host.port}"
    assert re.fullmatch(
        re.escape(_closed_line(address, "shut", "closing"))
        + r"; run small_cnn@dev0@\d{14}@[0-9a-f]{16} was refused: the host holds none of its \d+ files",
        last,
    ), last


def test_a_run_replaced_after_its_end_by_another_agents_still_streaming_is_not_said_delivered(
    hosts: Hosts, host: HostServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two agents of one model and device into one session at once: the first's run, every file
    # acknowledged and ended, was replaced by the second's START before the first closed. The
    # first said "left open: another agent is still streaming into it" and "48 files sent", exit
    # 0, as the second did of its own run: both runs said accepted, one of them dropped.
    from dumpcmp.agent.uploader import Uploader
    from tests.host.server.hostkit import run_mark

    rival = "small_cnn@dev0@20990101000000@00000000deadbeef"
    real_close = Uploader.close_session
    release = threading.Event()
    streams: list[Any] = []

    def rival_streams_first(self: Uploader) -> Any:
        def messages() -> Any:
            yield run_mark("both", rival, pb.RunMark.START)
            release.wait(60.0)  # the other agent's run streams on

        answers = hosts.client(host).stub.Upload(messages(), timeout=60.0)
        streams.append(answers)
        assert next(answers).status == pb.UploadAck.RUN_ACCEPTED
        return real_close(self)

    monkeypatch.setattr(Uploader, "close_session", rival_streams_first)
    try:
        code, out = cli(*_sim_agent(host, "both", tmp_path))
    finally:
        release.set()
        for answers in streams:
            list(answers)  # the rival's stream ends
    assert code == 1, out
    assert "left open" not in out, out
    assert re.search(
        r"session both on \S+ \(open\): (\d+) files sent, none kept \(the host refused the run\)", out
    )
    last = out.strip().splitlines()[-1]
    assert re.fullmatch(
        r"Error: run (small_cnn@dev0@\d{14}@[0-9a-f]{16}) was replaced by a later run of its model and "
        r"device: the host holds none of its (\d+) files \(\2 acknowledged before the host dropped them "
        r"with the run\); session both holds that run now, which another agent is still streaming \(the "
        r"session is not closing\); wait for it to end, or stream into another session name",
        last,
    ), last


def test_a_run_replaced_by_a_later_one_while_it_streamed_says_so_and_not_to_rerun(
    hosts: Hosts, host: HostServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An agent whose run another agent's later run of the same model and device replaced said
    # "0 files sent", then "38 files not delivered ...; the host refuses them again in a rerun":
    # its files had been stored and dropped with the run, and a rerun would replace the other.
    from dumpcmp.agent.uploader import Uploader
    from tests.host.server.hostkit import run_mark

    real_mark = Uploader.add_run_mark
    later = "small_cnn@dev0@20990101000000@00000000deadbeef"

    def replaced_before_its_end(self: Uploader, run_id: str, event: pb.RunMark.Event) -> None:
        if event == pb.RunMark.END:
            self.settle()  # every file of the run stored: then another agent's run starts
            hosts.client(host).upload([run_mark("late", later, pb.RunMark.START)])
        real_mark(self, run_id, event)

    monkeypatch.setattr(Uploader, "add_run_mark", replaced_before_its_end)
    code, out = cli(*_sim_agent(host, "late", tmp_path), "--keep-open")
    assert code == 1, out
    last = out.strip().splitlines()[-1]
    assert re.fullmatch(
        r"Error: run (small_cnn@dev0@\d{14}@[0-9a-f]{16}) was replaced by a later run of its model and "
        r"device: the host holds none of its (\d+) files \(\2 acknowledged before the host dropped them "
        r"with the run\); session late holds that run now \(a rerun would replace it in turn\)",
        last,
    ), last
