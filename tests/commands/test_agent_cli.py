"""``dumpcmp agent run`` against a recording host on loopback: what arrives, in which order,
exactly once across a SIGKILL, and one line for every user mistake."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from dumpcmp.commands import agent
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from tests.agent.dumps import STEP_DIR, dump_content, dump_name, write_dumps
from tests.agent.recording_host import RecordingHost, ServerHandle, serving

REPO = Path(__file__).resolve().parents[2]
EMPTY_RULE = '{"graph": [{"name": "g", "op": []}]}'  # an ATC --mode=1 json with no ops


@pytest.fixture(autouse=True)
def _plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerHandle]:
    with serving(RecordingHost(tmp_path / "host")) as handle:
        yield handle


def _cli() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(agent.app, name="agent")
    return app


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(_cli(), ["agent", "run", *args])
    return result.exit_code, result.output


def test_watch_streams_every_complete_file_and_closes_the_session(
    server: ServerHandle, tmp_path: Path
) -> None:
    dump = tmp_path / "dump"
    files = write_dumps(dump, 4)
    golden = tmp_path / "golden"
    golden.mkdir()
    (golden / "conv0.0.1700000000000000.npy").write_bytes(b"npy")
    rule = tmp_path / "rule.json"
    rule.write_text(EMPTY_RULE)
    code, out = run(
        "--host", server.target, "--session", "w1", "--watch", str(dump), "--until-idle", "0.5",
        "--quiet-time", "0.1", "--golden", str(golden), "--fusion-rule", str(rule),
    )  # fmt: skip
    assert code == 0, out
    assert "session w1 on" in out and "(closed): 6 files sent" in out
    assert "Traceback" not in out
    host = server.host
    assert [p for _s, p, _st in host.acks[:2]] == ["conv0.0.1700000000000000.npy", "rule.json"]
    for path in files:
        assert host.stored_count(path.relative_to(dump).as_posix()) == 1
    session = host.sessions["w1"]
    assert session.closed
    assert (
        session.request.settings.golden_uploaded and session.request.settings.fusion_rule_name == "rule.json"
    )
    assert (tmp_path / "dump.dumpcmp-agent" / "w1.journal").is_file()  # the state dir beside the dump path


def test_a_fifo_a_device_link_and_a_link_out_in_the_golden_directory_are_skipped_and_said(
    server: ServerHandle, tmp_path: Path
) -> None:
    """A FIFO in --golden blocked the agent in open() (a SIGTERM did not end it); a link to
    /dev/zero would have been read for ever; a link to a file outside the directory put that file
    (/etc/passwd) into the host's session. All are passed over, said as compare says them."""
    dump = tmp_path / "dump"
    write_dumps(dump, 1)
    golden = tmp_path / "golden"
    golden.mkdir()
    (golden / "conv0.0.1700000000000000.npy").write_bytes(b"npy")
    os.mkfifo(golden / "conv1.0.1700000000000001.npy")
    (golden / "conv2.0.1700000000000002.npy").symlink_to("/dev/zero")
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0\n")
    (golden / "conv3.0.1700000000000003.npy").symlink_to(secret)
    rule = tmp_path / "rule.json"
    rule.write_text(EMPTY_RULE)
    code, out = run(
        "--host", server.target, "--session", "g1", "--watch", str(dump), "--until-idle", "0.3",
        "--quiet-time", "0.1", "--golden", str(golden), "--fusion-rule", str(rule),
    )  # fmt: skip
    assert code == 0, out
    assert out.splitlines()[:3] == [
        f"skipped {golden / 'conv1.0.1700000000000001.npy'}: not a regular file: a FIFO",
        f"skipped {golden / 'conv2.0.1700000000000002.npy'}: not a regular file: a character device",
        f"skipped {golden / 'conv3.0.1700000000000003.npy'}: a symbolic link: not followed (the agent sends "
        "only files inside the directory)",
    ]
    assert [p for _s, p, _st in server.host.acks[:2]] == ["conv0.0.1700000000000000.npy", "rule.json"]


def test_a_fusion_rule_given_as_a_link_is_sent(server: ServerHandle, tmp_path: Path) -> None:
    # A file named on the command line is the user's choice, link or not; only links met inside a
    # directory are passed over. The uploader's O_NOFOLLOW open refused it ("not sent").
    dump, golden = _dump_and_golden(tmp_path)
    rule = tmp_path / "rules" / "model.json"
    rule.parent.mkdir()
    rule.write_text(EMPTY_RULE)
    link = tmp_path / "rule.json"
    link.symlink_to(rule)
    code, out = run(
        "--host", server.target, "--session", "l1", "--watch", str(dump), "--until-idle", "0.3",
        "--quiet-time", "0.1", "--golden", str(golden), "--fusion-rule", str(link),
    )  # fmt: skip
    assert code == 0, out
    assert "not sent" not in out
    assert server.host.stored_count("rule.json") == 1
    assert server.host.sessions["l1"].request.settings.fusion_rule_name == "rule.json"


def test_a_golden_file_the_host_cannot_name_is_skipped_and_said_the_rest_sent(
    server: ServerHandle, tmp_path: Path
) -> None:
    # One `back\slash.0.1.npy` in --golden: the host refused the golden data, nothing was sent
    # ("not watched"), and the session stayed open; an offline compare takes that directory.
    dump, golden = _dump_and_golden(tmp_path)
    (golden / "back\\slash.0.1.npy").write_bytes(b"npy")
    (golden / "a\nb.0.1.npy").write_bytes(b"npy")
    rule = tmp_path / "rule.json"
    rule.write_text(EMPTY_RULE)
    code, out = run(
        "--host", server.target, "--session", "g2", "--watch", str(dump), "--until-idle", "0.3",
        "--quiet-time", "0.1", "--golden", str(golden), "--fusion-rule", str(rule),
    )  # fmt: skip
    assert code == 0, out
    assert out.splitlines()[:2] == [
        f"skipped {golden}/a\\nb.0.1.npy: a name the host takes no file by (control character 0x0a in path)",
        f"skipped {golden}/back\\slash.0.1.npy: a name the host takes no file by (backslash in path "
        "(the separator is '/'))",
    ]
    assert [p for _s, p, _st in server.host.acks[:2]] == ["conv0.0.1700000000000000.npy", "rule.json"]
    assert server.host.sessions["g2"].request.model == ""  # the host names it from the dump paths


def test_the_hosts_paths_are_said_to_be_the_hosts_with_how_to_fetch_them(
    server: ServerHandle, tmp_path: Path
) -> None:
    # The agent printed "results on the host in /srv/..." and the host's "result: /srv/..." as if
    # they were paths here; the agent box usually is another machine.
    dump = tmp_path / "dump"
    write_dumps(dump, 1)
    server.host.closing_summary = (
        "result: /srv/s/results/r.csv\nunreadable dump file /srv/s/a\\nb\x1b[2J: junk"
    )
    server.host.closing_results = ["r.csv"]
    token = tmp_path / "token"
    token.write_text("t")
    server.host.token = "t"
    code, out = run("--host", server.target, "--session", "w9", "--watch", str(dump), "--until-idle", "0.3",
                    "--quiet-time", "0.1", "--token-file", str(token))  # fmt: skip
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].startswith(f"session w9 on {server.target} (closed): 1 file sent")
    assert lines[0].endswith(f"; results on host {server.target} in {server.host.data_dir / 'w9'}")
    assert lines[1:] == [
        "result: /srv/s/results/r.csv",
        "unreadable dump file /srv/s/a\\nb\\x1b[2J: junk",  # the host escaped its newline; the ESC, here
        f"fetch the result files here: dumpcmp host results w9 --host {server.target} --out DIR "
        f"--token-file {token}",
    ]


def test_watch_reports_files_that_never_complete(server: ServerHandle, tmp_path: Path) -> None:
    dump = tmp_path / "dump"
    write_dumps(dump, 1)
    torn = dump / STEP_DIR / "Relu.relu1.9.0.1700000000000009"
    torn.write_bytes(dump_content(100)[:-3])
    code, out = run("--host", server.target, "--session", "w2", "--watch", str(dump), "--until-idle", "0.3",
                    "--quiet-time", "0.1")  # fmt: skip
    assert code == 1
    assert f"{torn}: not sent: incomplete: " in out
    assert out.strip().splitlines()[-1] == (
        "Error: 1 file not delivered (see the warnings above); "
        "session w2 is left open, so its results never lack them: run the same command again once they "
        f"are whole, or dumpcmp host close w2 --host {server.target} (its results then lack them, and "
        "the first divergence may lie in one)"
    )
    assert server.host.statuses(torn.relative_to(dump).as_posix()) == []
    assert not server.host.sessions["w2"].closed  # a verdict without the torn file would be final


def test_sim_sends_the_marked_run_inputs_golden_and_rule_first(server: ServerHandle, tmp_path: Path) -> None:
    code, out = run("--host", server.target, "--session", "m1", "--model", "zoo:small_cnn", "--sim",
                    "--state", str(tmp_path / "state"))  # fmt: skip
    assert code == 0, out
    host = server.host
    assert all(status in (pb.UploadAck.STORED, pb.UploadAck.RUN_ACCEPTED) for _s, _p, status in host.acks)
    session = host.sessions["m1"]
    by_kind = {
        kind: [p for (k, p) in session.files if k == kind] for kind in (pb.INPUT, pb.GOLDEN, pb.FUSION_RULE)
    }
    assert len(by_kind[pb.INPUT]) == 1 and by_kind[pb.FUSION_RULE] == ["fusion_rule.json"]
    assert by_kind[pb.GOLDEN]
    dumps = [p for (k, p) in session.files if k == pb.DUMP]
    assert dumps and all(
        p.startswith("20") and p.count("/") == 5 for p in dumps
    )  # {time}/{dev}/{model}/{id}/{step}/f
    # START, then the plan files, then the dump, then END; every file tagged with the run.
    order = [p for _s, p, _st in host.acks]
    plan_files = by_kind[pb.INPUT] + by_kind[pb.GOLDEN] + by_kind[pb.FUSION_RULE]
    assert order[0].startswith("run:") and order[-1] == order[0]
    assert max(order.index(p) for p in plan_files) < min(order.index(p) for p in dumps)
    (run_id, _), (same, _) = session.runs
    assert [event for _run, event in session.runs] == [pb.RunMark.START, pb.RunMark.END] and run_id == same
    assert set(session.file_runs.values()) == {run_id}
    settings = session.request.settings
    assert settings.golden_uploaded and settings.fusion_rule_name == "fusion_rule.json"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--session", "x"], "give one of --watch DUMP_PATH or --model MODEL"),
        (
            ["--session", "x", "--watch", "d", "--model", "m"],
            "give one of --watch DUMP_PATH or --model MODEL",
        ),
        (["--session", "x", "--watch", "d", "--sim"], "--sim, --input, --inject and --hunt go with --model"),
        (
            ["--session", "x", "--model", "m.om"],
            "--model m.om: no such file (on AscendCL the model is an .om",
        ),
        (
            ["--session", "x", "--model", "m.om", "--golden", "gone"],
            "--golden gone: no such",
        ),
    ],
)
def test_user_mistakes_are_one_line(
    args: list[str], line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = run("--host", "127.0.0.1:1", *args)
    assert code == 1
    assert out.strip() == f"Error: {line}" or out.strip().startswith(f"Error: {line}")
    assert "Traceback" not in out and len(out.strip().splitlines()) == 1


def test_bad_host_address_and_token(server: ServerHandle, tmp_path: Path) -> None:
    write_dumps(tmp_path / "d", 1)
    code, out = run("--host", "nohost", "--session", "x", "--watch", str(tmp_path / "d"))
    assert (code, out.strip()) == (1, "Error: --host 'nohost': expected HOST:PORT")
    server.host.token = "secret"
    token = tmp_path / "token"
    token.write_text("guess\n")
    code, out = run("--host", server.target, "--session", "x", "--watch", str(tmp_path / "d"),
                    "--token-file", str(token), "--until-idle", "0")  # fmt: skip
    assert code == 1
    assert out.strip() == (f"Error: host {server.target}: UNAUTHENTICATED: missing or wrong bearer token")


def _agent_process(
    target: str, dump: Path, session: str, until_idle: float | None = 0.3
) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    idle = ["--until-idle", str(until_idle)] if until_idle is not None else []
    return subprocess.Popen(
        [sys.executable, "-m", "dumpcmp.cli", "agent", "run", "--host", target, "--session", session,
         "--watch", str(dump), "--quiet-time", "0.05", *idle],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip


def _sim_agent_process(target: str, session: str, state: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "dumpcmp.cli", "agent", "run", "--host", target, "--session", session,
         "--model", "zoo:small_cnn", "--sim", "--state", str(state)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip


def signalled(process: subprocess.Popen[bytes], signum: int, ready: Callable[[], bool]) -> str:
    """Send ``signum`` once ``ready()`` (or after a minute), and the output of the process, which
    must end within 30 s of it (killed otherwise, and the test fails)."""
    try:
        deadline = time.monotonic() + 60
        while not ready() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.02)
        process.send_signal(signum)
        output, _ = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return output.decode()


def test_sigkill_mid_stream_then_rerun_delivers_every_file_exactly_once(
    server: ServerHandle, tmp_path: Path
) -> None:
    dump = tmp_path / "dump"
    files = write_dumps(dump, 40, elements=20_000)
    host = server.host
    host.ack_delay = 0.05
    first = _agent_process(server.target, dump, "k1")
    try:
        deadline = time.monotonic() + 60
        while len(host.acks) < 8 and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.01)
        first.send_signal(signal.SIGKILL)
    finally:
        first.wait(timeout=30)
        assert first.stdout is not None
        first.stdout.close()
    assert first.returncode == -signal.SIGKILL
    before = len([a for a in host.acks if a[2] == pb.UploadAck.STORED])
    assert 0 < before < 40  # killed mid-stream
    host.ack_delay = 0.0
    second = _agent_process(server.target, dump, "k1")
    out, _ = second.communicate(timeout=120)
    assert second.returncode == 0, out.decode()
    for path in files:
        assert host.stored_count(path.relative_to(dump).as_posix()) == 1
    duplicates = [a for a in host.acks if a[2] == pb.UploadAck.DUPLICATE]
    assert len(duplicates) <= 1  # at most the file answered while the agent died


def test_sigterm_flushes_then_closes(server: ServerHandle, tmp_path: Path) -> None:
    dump = tmp_path / "dump"
    files = write_dumps(dump, 5)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-m", "dumpcmp.cli", "agent", "run", "--host", server.target, "--session", "t1",
         "--watch", str(dump), "--quiet-time", "0.05"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while server.host.opened == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 0, out.decode()
    assert "(closed): 5 files sent" in out.decode()
    for path in files:
        assert server.host.stored_count(path.relative_to(dump).as_posix()) == 1


def test_watch_follows_a_dump_being_written(server: ServerHandle, tmp_path: Path) -> None:
    """The simulated NPU writes its dump chunk by chunk while the agent watches: every file
    arrives once, whole, and none early."""
    from dumpcmp.commands.sim import simulate

    out = tmp_path / "sim"
    dump = out / "npu"
    dump.mkdir(parents=True)
    agent = _agent_process(server.target, dump, "live1", until_idle=None)
    try:
        deadline = time.monotonic() + 60
        while server.host.opened == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        result = simulate("zoo:small_cnn", out, steps=2, atomic=False)
        # Sent while watching, not by the final walk at stop: wait for them before stopping.
        while len(server.host.acks) < len(result.dump_files) and time.monotonic() < deadline + 60:
            time.sleep(0.02)
        assert len(server.host.acks) == len(result.dump_files)
        agent.send_signal(signal.SIGTERM)
        output, _ = agent.communicate(timeout=120)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.communicate()
    assert agent.returncode == 0, output.decode()
    assert result.dump_files
    for path in result.dump_files:
        name = path.relative_to(dump).as_posix()
        assert server.host.statuses(name) == [pb.UploadAck.STORED], name
        assert (server.host.data_dir / "live1" / "DUMP" / name).read_bytes() == path.read_bytes()


def test_watch_dot_keeps_its_state_beside_the_dump_path(
    server: ServerHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dump = tmp_path / "dump"
    write_dumps(dump, 1)
    monkeypatch.chdir(dump)
    code, out = run("--host", server.target, "--session", "dot", "--watch", ".", "--until-idle", "0")
    assert code == 0, out
    assert (tmp_path / "dump.dumpcmp-agent" / "dot.journal").is_file()
    assert not any(p.name.endswith("dumpcmp-agent") for p in dump.iterdir())


@pytest.mark.parametrize(
    ("session", "said"),
    [
        ("../escape2", "--session '../escape2': a session name is 1 to 128 of A-Z a-z 0-9 _ . -"),
        ("a/b", "--session 'a/b': a session name is 1 to 128 of A-Z a-z 0-9 _ . -"),
        (".hidden", "--session '.hidden': a session name must not start with '.'"),
        # The commands printed for it (`dumpcmp host results -rf ...`) read it as an option.
        ("-rf", "--session '-rf': a session name must not start with '-'"),
        ("x" * 129, f"--session '{'x' * 129}': a session name is 1 to 128 of A-Z a-z 0-9 _ . -"),
    ],
    ids=["dotdot", "slash", "hidden", "dash", "long"],
)
@pytest.mark.parametrize("source", ["watch", "model"])
def test_a_bad_session_name_is_refused_before_anything_is_made_or_run(
    server: ServerHandle,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    session: str,
    said: str,
    source: str,
) -> None:
    work = tmp_path / "work"
    dump = work / "dump"
    write_dumps(dump, 1)
    before = sorted(work.rglob("*"))
    monkeypatch.chdir(dump)
    what = ["--watch", str(dump)] if source == "watch" else ["--model", "zoo:small_cnn", "--sim"]
    code, out = run("--host", server.target, "--session", session, *what, "--until-idle", "0")
    assert (code, out.strip()) == (1, f"Error: {said}")
    assert "Traceback" not in out
    assert sorted(work.rglob("*")) == before  # no journal, no state dir, no model output
    assert server.host.opened == 0 and not server.host.sessions


def test_watch_of_a_missing_path_is_refused_up_front(
    server: ServerHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = run("--host", server.target, "--session", "w", "--watch", "nosuch/npu", "--until-idle", "0")
    assert (code, out.strip()) == (
        1, "Error: --watch nosuch/npu: no such dump directory (start the agent once it exists)"
    )  # fmt: skip
    assert "Traceback" not in out
    assert not list(tmp_path.iterdir())  # neither nosuch/npu nor nosuch/npu.dumpcmp-agent
    assert server.host.opened == 0 and not server.host.sessions


@pytest.mark.parametrize(
    ("option", "make", "said"),
    [
        ("--golden", lambda p: p.write_text("{}"), "not a directory (give the directory of the golden data)"),
        ("--golden", lambda p: p.mkdir(), "no files in it, so nothing to compare the dump against"),
        ("--golden", lambda p: None, "no such directory"),
        ("--fusion-rule", lambda p: p.mkdir(), "a directory (give the ATC fusion rule .json file)"),
        ("--fusion-rule", lambda p: None, "no such file"),
    ],
)
def test_watch_checks_the_golden_and_rule_paths_before_anything_streams(
    server: ServerHandle, tmp_path: Path, option: str, make: Callable[[Path], object], said: str
) -> None:
    # Found only at the close before, and worded as the host sees its own copy:
    # "golden path hostdata/sessions/a5/golden holds neither golden npy files nor NPU dump files".
    dump = tmp_path / "dump"
    write_dumps(dump, 1)
    given = tmp_path / "given"
    make(given)
    code, out = run("--host", server.target, "--session", "w", "--watch", str(dump), option, str(given),
                    "--until-idle", "0")  # fmt: skip
    assert (code, out.strip()) == (1, f"Error: {option} {given}: {said}")
    assert server.host.opened == 0 and not server.host.sessions
    assert not (tmp_path / "dump.dumpcmp-agent").exists()


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("/block1/dw/conv/Conv=overflow", "cannot inject a fault at '/block1/dw/conv/Conv'"),
        # a fault that injects nothing ran, and the run's "all clear" read as the fault going unseen
        ("/block2/Add=scale:1", "Error: fault '/block2/Add=scale:1': scale 1 injects nothing"),
    ],
)
def test_sim_checks_its_faults_before_the_session_opens(
    server: ServerHandle, tmp_path: Path, fault: str, said: str
) -> None:
    # A misspelt fault op failed only after the host had opened an empty session for the run.
    code, out = run("--host", server.target, "--session", "s1", "--model", "zoo:small_cnn", "--sim",
                    "--inject", fault, "--state", str(tmp_path / "state"))  # fmt: skip
    assert code == 1 and said in out and "Traceback" not in out and len(out.strip().splitlines()) == 1
    assert server.host.opened == 0 and not server.host.sessions


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (("--golden", "gz", "--fusion-rule", "rule.json"), "--golden and --fusion-rule do not go with --sim"),
        (("--golden", "gz"), "--golden does not go with --sim"),  # it asked for --fusion-rule
        (("--fusion-rule-on-host", "/h/rule.json"), "--fusion-rule-on-host does not go with --sim"),
    ],
)
def test_sim_refuses_a_golden_or_rule_of_its_own_in_one_line(
    server: ServerHandle, tmp_path: Path, given: tuple[str, ...], said: str
) -> None:
    # --golden and --fusion-rule with --sim were accepted and silently ignored.
    (tmp_path / "gz").mkdir()
    (tmp_path / "gz" / "a.npy").write_bytes(b"npy")
    (tmp_path / "rule.json").write_text("{}")
    paths = [str(tmp_path / v) if v in ("gz", "rule.json") else v for v in given]
    code, out = run("--host", server.target, "--session", "s1", "--model", "zoo:small_cnn", "--sim", *paths,
                    "--state", str(tmp_path / "state"))  # fmt: skip
    assert (code, out.strip()) == (
        1, f"Error: {said}: the simulator makes the run's own golden data and fusion rule"
    )  # fmt: skip
    assert server.host.opened == 0 and not server.host.sessions


def test_golden_npy_without_a_fusion_rule_is_refused_before_anything_streams(
    server: ServerHandle, tmp_path: Path
) -> None:
    # A TorchAir GE dump watched with its FX npy dump as --golden streamed every file, then the
    # host refused to compare at the close, and the session could not be closed.
    dump = tmp_path / "dump"
    write_dumps(dump, 1)
    golden = tmp_path / "fx"
    golden.mkdir()
    (golden / "add-aten.add.Tensor.OUTPUT.0.20240125031118787351.npy").write_bytes(b"npy")
    code, out = run("--host", server.target, "--session", "w", "--watch", str(dump), "--golden", str(golden),
                    "--until-idle", "0")  # fmt: skip
    assert code == 1 and "give --fusion-rule" in out and "compare -m torchair" in out
    assert server.host.opened == 0 and not server.host.sessions


def _acl_json(path: Path, dump_path: Path) -> Path:
    dump_path.mkdir()
    path.write_text(json.dumps({"dump": {"dump_path": str(dump_path), "dump_list": [{"model_name": "m"}]}}))
    return path


@pytest.mark.parametrize(
    ("what", "said"),
    [
        (
            "om without --input",
            "give the model's inputs with --input (an .om's input shapes are not read here)",
        ),
        ("zoo without --sim", "--model zoo:small_cnn: an ONNX model runs on the simulated NPU: add --sim"),
        ("bad input npy", "in.npy: not a numpy .npy file (a text file)"),
    ],
)
def test_a_model_run_is_checked_before_the_host_holds_a_session(
    server: ServerHandle, tmp_path: Path, what: str, said: str
) -> None:
    # Each of these failed only after the host had opened an empty session for the run.
    om = tmp_path / "fake.om"
    om.write_bytes(b"not run")
    acl = _acl_json(tmp_path / "acl.json", tmp_path / "dump")
    bad = tmp_path / "in.npy"
    bad.write_text("junk")
    model = {"zoo without --sim": ["--model", "zoo:small_cnn"]}.get(what, ["--model", str(om)])
    inputs = ["--input", str(bad)] if what == "bad input npy" else []
    code, out = run("--host", server.target, "--session", "om1", *model, "--acl-config", str(acl), *inputs,
                    "--state", str(tmp_path / "state"))  # fmt: skip
    assert code == 1 and said in out and out.startswith("Error: "), out
    assert "Traceback" not in out and len(out.strip().splitlines()) == 1
    assert server.host.opened == 0 and not server.host.sessions


def _dump_and_golden(tmp_path: Path) -> tuple[Path, Path]:
    """A dump to watch and a golden directory of one (unread) npy file."""
    write_dumps(tmp_path / "dump", 1)
    golden = tmp_path / "golden"
    golden.mkdir()
    (golden / "conv0.0.1700000000000000.npy").write_bytes(b"npy")
    return tmp_path / "dump", golden


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("{not json", "not valid json: Expecting property name enclosed in double quotes at line 1 column 2"),
        ("{}", "'graph' missing (is this an ATC --mode=1 json?)"),
    ],
)
def test_a_malformed_fusion_rule_is_refused_before_anything_is_uploaded(
    server: ServerHandle, tmp_path: Path, content: str, said: str
) -> None:
    # It was uploaded together with the whole dump before the run failed.
    dump, golden = _dump_and_golden(tmp_path)
    rule = tmp_path / "bad.json"
    rule.write_text(content)
    code, out = run("--host", server.target, "--session", "w", "--watch", str(dump), "--golden", str(golden),
                    "--fusion-rule", str(rule), "--until-idle", "0")  # fmt: skip
    assert (code, out.strip()) == (1, f"Error: --fusion-rule {rule}: {said}")
    assert server.host.opened == 0 and not server.host.sessions and not server.host.acks
    assert not (tmp_path / "dump.dumpcmp-agent").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_an_unreadable_golden_file_is_refused_before_anything_streams(
    server: ServerHandle, tmp_path: Path
) -> None:
    dump, golden = _dump_and_golden(tmp_path)
    locked = next(golden.iterdir())
    locked.chmod(0)
    try:
        code, out = run("--host", server.target, "--session", "w", "--watch", str(dump),
                        "--golden", str(golden), "--until-idle", "0")  # fmt: skip
    finally:
        locked.chmod(0o600)
    assert (code, out.strip()) == (1, f"Error: --golden {golden}: cannot read {locked}")
    assert server.host.opened == 0 and not server.host.sessions


def test_files_that_are_no_dump_files_are_skipped_and_the_session_closes(
    server: ServerHandle, tmp_path: Path
) -> None:
    # A stray "Add.x.y.z.bak" said "not sent: not a dump file name ... session left open" and
    # exit 1, while README.txt passed silently and compare skips both.
    dump = tmp_path / "dump"
    files = write_dumps(dump, 2)
    step = dump / STEP_DIR
    strays = [step / "Add.x.y.z.bak", step / f"{dump_name(0)}.trunc"]
    strays += [step / f"core.{n}" for n in range(10)]
    for path in strays:
        path.write_bytes(dump_content(10))
    (step / "README.txt").write_text("notes")
    code, out = run("--host", server.target, "--session", "st1", "--watch", str(dump), "--until-idle", "0.3",
                    "--quiet-time", "0.1")  # fmt: skip
    assert code == 0, out
    lines = out.splitlines()
    skipped = [line for line in lines if line.startswith("skipped ")]
    assert len(skipped) == 10 and all(line.endswith(": not a dump file name") for line in skipped), out
    assert f"skipped {strays[0]}: not a dump file name" in skipped
    assert "… and 2 more files skipped" in lines
    assert "README.txt" not in out and "not sent" not in out and "warning" not in out
    assert "session st1 on" in out and "(closed): 2 files sent" in out
    assert server.host.sessions["st1"].closed
    assert sorted(p for _k, p in server.host.sessions["st1"].files) == [
        f.relative_to(dump).as_posix() for f in files
    ]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_a_watch_at_once_while_the_host_is_away_and_a_rerun_finishes(
    tmp_path: Path, signum: int
) -> None:
    # With the host gone the agent retries for --give-up (300 s); Ctrl-C and SIGTERM waited all
    # that time ("flushing" to a host that was not there), then said "gave up", exit 1.
    dump = tmp_path / "dump"
    files = write_dumps(dump, 3)
    server = ServerHandle(RecordingHost(tmp_path / "host"))
    try:
        agent = _agent_process(server.target, dump, "away", until_idle=None)
        more = dump / STEP_DIR / dump_name(7)

        def host_gone() -> bool:
            if len(server.host.acks) < 3:
                return False
            server.stop()  # the host goes away: the agent retries
            more.write_bytes(dump_content(50, seed=7))  # ready, not sent: waits for the host
            time.sleep(0.5)
            return True

        text = signalled(agent, signum, host_gone)  # before the fix: not before --give-up (300 s)
        assert agent.returncode == 130, text
        assert "Traceback" not in text
        assert text.strip().splitlines()[-1] == (
            "interrupted: the agent stopped before every file was sent; session away is left open on host "
            f"{server.target}: run the same command again to finish it (files the host acknowledged are "
            f"not sent again), or drop it: dumpcmp host delete away --host {server.target}"
        )
        server.start()  # back on the same port: the same command finishes the session
        again = _agent_process(server.target, dump, "away")
        output, _ = again.communicate(timeout=120)
        assert again.returncode == 0, output.decode()
    finally:
        server.stop()
    for path in [*files, more]:
        assert server.host.stored_count(path.relative_to(dump).as_posix()) == 1
    assert server.host.sessions["away"].closed


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_an_agent_that_never_reached_its_host_at_once(tmp_path: Path, signum: int) -> None:
    dump = tmp_path / "dump"
    write_dumps(dump, 1)
    server = ServerHandle(RecordingHost(tmp_path / "host"))
    target = server.target
    server.stop()  # nothing listens there
    agent = _agent_process(target, dump, "never", until_idle=None)
    started = time.monotonic()
    output = signalled(agent, signum, lambda: time.monotonic() - started > 2.0)  # the upload retrying
    assert agent.returncode == 130, output
    assert output.strip().splitlines()[-1] == (
        "interrupted: the agent stopped before every file was sent; session never was not opened on host "
        f"{target} (not reached); run the same command again"
    )


def test_a_closed_simulated_runs_local_files_are_removed(server: ServerHandle, tmp_path: Path) -> None:
    # Every run kept its whole directory (dump, golden, inputs) in STATE/runs for ever.
    state = tmp_path / "state"
    code, out = run("--host", server.target, "--session", "d1", "--model", "zoo:small_cnn", "--sim",
                    "--state", str(state))  # fmt: skip
    assert code == 0, out
    assert not list((state / "runs").iterdir())
    assert (state / "d1.journal").read_text() == ""  # the run's entries went with its files
    # A host that lost the session (deleted, another host) gets the next run whole, with no
    # complaint about the removed files.
    with serving(RecordingHost(tmp_path / "host2")) as other:
        code, out = run("--host", other.target, "--session", "d1", "--model", "zoo:small_cnn", "--sim",
                        "--state", str(state))  # fmt: skip
    assert code == 0 and "warning" not in out, out
    assert not list((state / "runs").iterdir())


@pytest.mark.parametrize("option", ["--keep-open", "--keep-run"])
def test_a_simulated_run_keeps_its_files_while_its_session_is_open_or_when_asked(
    server: ServerHandle, tmp_path: Path, option: str
) -> None:
    state = tmp_path / "state"
    code, out = run("--host", server.target, "--session", "d2", "--model", "zoo:small_cnn", "--sim",
                    "--state", str(state), option)  # fmt: skip
    assert code == 0, out
    (run_dir,) = (state / "runs").iterdir()
    assert (run_dir / "fusion_rule.json").is_file() and list((run_dir / "golden").iterdir())
    assert f"its local files are in {run_dir}" in out  # named, not left in STATE/runs unsaid


def test_an_interrupted_simulated_run_says_its_session_is_open_and_what_to_do(
    server: ServerHandle, tmp_path: Path
) -> None:
    # It said only "the run did not finish; files already written are complete...".
    server.host.ack_delay = 0.05
    agent = _sim_agent_process(server.target, "i1", tmp_path / "state")
    output = signalled(agent, signal.SIGINT, lambda: len(server.host.acks) >= 5)
    assert agent.returncode == 130, output
    assert output.strip().splitlines()[-1] == (
        "interrupted: the agent stopped before every file was sent; session i1 is left open on host "
        f"{server.target}: run the same command again to finish it (the model runs again, and that run "
        f"replaces the unfinished one), or drop it: dumpcmp host delete i1 --host {server.target}"
    )
    assert not server.host.sessions["i1"].closed
    # Gone: the rerun simulates afresh (they piled up in STATE/runs, unnamed, one per failed run).
    assert not list((tmp_path / "state" / "runs").iterdir())


def test_ctrl_c_before_the_upload_starts_says_nothing_was_sent(
    server: ServerHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C while the agent reached the host said "the run did not finish; files already
    # written are complete, the rest were not written": the agent writes no files.
    def interrupted(*_args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("dumpcmp.agent.run.reach_host", interrupted)
    code, out = run("--host", server.target, "--session", "k1", "--model", "zoo:small_cnn", "--sim",
                    "--state", str(tmp_path / "state"))  # fmt: skip
    assert code == 130
    assert out.strip() == (
        "interrupted: the agent stopped before it sent anything into session k1; run the same command again"
    )
    assert "k1" not in server.host.sessions


def test_ctrl_c_while_the_session_closes_says_every_file_was_sent(
    server: ServerHandle, tmp_path: Path
) -> None:
    # It said "stopped before every file was sent" when every file was sent.
    server.host.close_gate = threading.Event()
    agent = _sim_agent_process(server.target, "c1", tmp_path / "state")
    try:
        output = signalled(agent, signal.SIGINT, server.host.closing.is_set)
    finally:
        server.host.close_gate.set()
    assert agent.returncode == 130, output
    # It said "session c1 is left open", and the host closed it: the close had reached it.
    assert output.strip().splitlines()[-1] == (
        f"interrupted: the agent stopped while the session was closing; session c1 may have closed on "
        f"host {server.target} (the close had reached it): see how it stands with dumpcmp host results c1 "
        f"--host {server.target}; if it is still open, run the same command again to finish it"
    )
    assert not list((tmp_path / "state" / "runs").iterdir())  # the rerun simulates afresh


def test_a_rerun_into_a_closed_session_says_so_and_how_to_see_its_results(
    server: ServerHandle, tmp_path: Path
) -> None:
    # After a Ctrl-C during a close that the host finished, the rerun ran the model, then failed
    # with "FAILED_PRECONDITION: session cl8 is closed and its results are final".
    code, out = run("--host", server.target, "--session", "c2", "--model", "zoo:small_cnn", "--sim",
                    "--state", str(tmp_path / "state"))  # fmt: skip
    assert code == 0, out
    code, out = run("--host", server.target, "--session", "c2", "--model", "zoo:small_cnn", "--sim",
                    "--state", str(tmp_path / "state"))  # fmt: skip
    assert code == 1
    assert out.strip() == (
        f"Error: session c2 on host {server.target} is closed and its results are final: see them with "
        f"dumpcmp host results c2 --host {server.target}, or stream into a new session name"
    )
    assert server.host.opened == 1


def test_a_simulated_run_that_gives_up_says_its_rerun_simulates_afresh(tmp_path: Path) -> None:
    # It said "unacknowledged files are sent on the next run": a --sim rerun sends none of them.
    server = ServerHandle(RecordingHost(tmp_path / "host"))
    target = server.target
    server.stop()  # nothing listens there
    state = tmp_path / "state"
    code, out = run("--host", target, "--session", "g1", "--model", "zoo:small_cnn", "--sim",
                    "--state", str(state), "--give-up", "0.5")  # fmt: skip
    assert code == 1
    *retrying, line = out.strip().splitlines()  # off a terminal, a status line while it retries
    assert all(r.startswith("agent: cannot reach the host; retrying") for r in retrying), out
    assert line.startswith(f"Error: host {target}: gave up after ") and line.endswith(
        "; the next run simulates the model afresh and replaces this one"
    ), line
    assert not list((state / "runs").iterdir())


def test_a_killed_agents_run_directory_goes_with_the_next_run_a_kept_or_running_one_stays(
    server: ServerHandle, tmp_path: Path
) -> None:
    # A SIGKILLed --sim agent cannot clean up: its STATE/runs/ID stayed for ever, unnamed.
    from dumpcmp.agent.run import claim_run_dir

    runs = tmp_path / "state" / "runs"
    killed = runs / "0123456789abcdef"
    (killed / "npu").mkdir(parents=True)
    (killed / ".running").touch()  # its agent died holding it: the lock went with the process
    kept = runs / "fedcba9876543210"
    (kept / "npu").mkdir(parents=True)
    (kept / ".kept").touch()
    with claim_run_dir(runs / "00000000aaaaaaaa"):  # another agent's run, going on right now
        code, out = run("--host", server.target, "--session", "d3", "--model", "zoo:small_cnn", "--sim",
                        "--state", str(tmp_path / "state"))  # fmt: skip
    assert code == 0, out
    assert sorted(p.name for p in runs.iterdir()) == ["00000000aaaaaaaa", "fedcba9876543210"]


def test_a_run_refused_in_a_session_closed_meanwhile_says_it_is_closed(
    server: ServerHandle, tmp_path: Path
) -> None:
    # The loser of two racing agents said "session d is left open" of a session the winner had
    # closed; its START and END refusals were two lines (and two "files") for one refused run.
    server.host.refuse_runs = True
    closer = threading.Thread(target=_close_when_opened, args=(server.host, "e1"))
    closer.start()
    try:
        code, out = run("--host", server.target, "--session", "e1", "--model", "zoo:small_cnn", "--sim",
                        "--state", str(tmp_path / "state"))  # fmt: skip
    finally:
        closer.join(timeout=30)
    assert code == 1, out
    (warning,) = [line for line in out.splitlines() if line.startswith("warning:")]
    assert warning.startswith("warning: run small_cnn@dev0@") and "refused by the host" in warning
    assert f"session e1 on {server.target} (closed): " in out
    # It said "1 file not delivered" (the run's START) of a run none of whose 48 files counts.
    last = out.strip().splitlines()[-1]
    assert re.fullmatch(
        r"Error: run small_cnn@dev0@\d{14}@[0-9a-f]{16} was refused by the host \(run was replaced\): "
        r"the host holds none of its 48 files \(48 acknowledged before the host dropped them with the "
        r"run\); session e1 was closed meanwhile \(not by this agent\)",
        last,
    ), last


def test_a_run_refused_because_another_agent_closes_the_session_says_it_is_closed(
    server: ServerHandle, tmp_path: Path
) -> None:
    # An agent starting while another closes the session: the host says "open" until the close
    # ends, and the refused agent said to close or delete a session already being closed.
    from dumpcmp.proto.session_names import CLOSING_REFUSAL

    server.host.refuse_runs = True
    server.host.run_refusal = CLOSING_REFUSAL.format("e2")
    code, out = run("--host", server.target, "--session", "e2", "--model", "zoo:small_cnn", "--sim",
                    "--state", str(tmp_path / "state"))  # fmt: skip
    assert code == 1, out
    assert f"session e2 on {server.target} (closed): " in out
    # The line of a session found closed, and what became of this run.
    last = out.strip().splitlines()[-1]
    assert last.startswith(
        f"Error: session e2 on host {server.target} is closing and its results are final: see them with "
        f"dumpcmp host results e2 --host {server.target}, or stream into a new session name; run "
        "small_cnn@dev0@"
    ), last
    assert last.endswith(
        " was refused: the host holds none of its 48 files (48 acknowledged before the host dropped them "
        "with the run)"
    )


def _close_when_opened(host: RecordingHost, session: str) -> None:
    """Close ``session`` as another agent would, once it exists (bounded)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with host.lock:
            if session in host.sessions:
                host.sessions[session].closed = True
                return
        time.sleep(0.01)
