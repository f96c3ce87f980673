"""``dumpcmp host serve|sessions|results``: as a user runs them, errors one line, no traceback."""

from __future__ import annotations

import csv
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import openpyxl
import pytest
from typer.testing import CliRunner

from dumpcmp.cli import app
from dumpcmp.commands.sim import simulate
from dumpcmp.errors import DumpcmpError
from dumpcmp.fakes.simulate import SimulationResult
from dumpcmp.host.server import serve as serve_module
from dumpcmp.host.server.auth import TlsFiles
from dumpcmp.host.server.limits import DEFAULT_RECEIVE_WINDOW
from dumpcmp.host.server.serve import HostConfig, HostServer
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from tests.host.server.hostkit import (  # noqa: F401 (fixtures: host, hosts)
    CALL_TIMEOUT_S,
    Client,
    Hosts,
    host_fixture,
    hosts_fixture,
    make_pki,
    offline_csv,
    session_settings,
    simulation_files,
)

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> SimulationResult:
    return simulate(
        "zoo:small_cnn", tmp_path_factory.mktemp("sim") / "run", faults=("/block2/Add=noise:0.5",), seed=5
    )


def filled(client: Client, sim: SimulationResult, session: str = "s1") -> None:
    client.open(session, **session_settings())
    assert {a.status for a in client.send(session, simulation_files(sim))} == {pb.UploadAck.STORED}


def closed_session(client: Client, sim: SimulationResult, session: str = "s1") -> None:
    filled(client, sim, session)
    client.close(session)


def invoke(*args: object) -> tuple[int, str]:
    result = runner.invoke(app, ["host", *map(str, args)])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def test_results_csv_of_a_closed_session_equals_offline_compare(
    hosts: Hosts, host: HostServer, sim: SimulationResult, tmp_path: Path
) -> None:
    closed_session(hosts.client(host), sim)
    (tmp_path / "out").mkdir()
    code, output = invoke(
        "results", "s1", "--host", f"127.0.0.1:{host.port}", "--csv", tmp_path / "out/r.csv"
    )
    assert code == 0, output
    assert (tmp_path / "out/r.csv").read_bytes() == offline_csv(sim, tmp_path / "offline")
    assert "session s1: closed" in output
    assert "wrote" in output
    assert not list((tmp_path / "out").glob(".*"))


def test_results_xlsx_equals_compare_xlsx(
    hosts: Hosts, host: HostServer, sim: SimulationResult, tmp_path: Path
) -> None:
    closed_session(hosts.client(host), sim)
    code, output = invoke("results", "s1", "--host", f"127.0.0.1:{host.port}", "--xlsx", tmp_path / "r.xlsx")
    assert code == 0, output
    offline_dir = tmp_path / "offline"
    result = runner.invoke(app, ["compare", "-tp", str(sim.npu_dump_dir), "-gp", str(sim.golden_dir),
                                 "-fr", str(sim.fusion_rule), "-o", str(offline_dir), "--xlsx"])  # fmt: skip
    assert result.exit_code == 0, result.output
    (offline,) = (tmp_path / "offline").glob("*.xlsx")

    def cells(path: Path) -> list[list[tuple[object, object]]]:
        sheet = openpyxl.load_workbook(path).active
        assert sheet is not None
        return [[(c.value, c.fill.fgColor.rgb) for c in row] for row in sheet.iter_rows()]

    got, want = cells(tmp_path / "r.xlsx"), cells(offline)
    assert got == want
    assert any(fill == "FFFFC7CE" for row in want for _, fill in row)  # the faulty op is marked


def test_results_html_of_a_session_with_its_graph(
    hosts: Hosts, host: HostServer, sim: SimulationResult, tmp_path: Path
) -> None:
    closed_session(hosts.client(host), sim)
    target = tmp_path / "report" / "s1.html"
    target.parent.mkdir()
    code, output = invoke(
        "results", "s1", "--host", f"127.0.0.1:{host.port}", "--html", target, "--graph", sim.fusion_rule
    )
    assert code == 0, output
    assert f"wrote {target}" in output
    page = target.read_text(encoding="utf-8")
    assert 'id="graph"' in page and "/block2/Add" in page  # the rule file's graph, the faulty op
    assert "session s1" in page  # where the rows came from
    assert "warning" not in output


def test_results_html_with_another_models_graph_says_so_in_one_line(
    hosts: Hosts, host: HostServer, sim: SimulationResult, tmp_path: Path
) -> None:
    # It drew the other model's network, bare of the result's numbers, without a word (advise
    # --graph said so already).
    closed_session(hosts.client(host), sim)
    other = simulate("zoo:transformer_block", tmp_path / "other")
    code, output = invoke(
        "results", "s1", "--host", f"127.0.0.1:{host.port}", "--html", tmp_path / "s1.html", "--graph",
        other.fusion_rule,
    )  # fmt: skip
    assert code == 0, output
    (warning,) = [line for line in output.splitlines() if "warning" in line]
    assert warning.startswith("warning: --graph holds ") and warning.endswith(
        " ops the result names: is it this model's? the report's graph has no numbers on the others"
    )
    assert f"wrote {tmp_path / 's1.html'}" in output


def test_follow_waits_for_the_close(
    hosts: Hosts, host: HostServer, sim: SimulationResult, tmp_path: Path
) -> None:
    client = hosts.client(host)
    filled(client, sim)
    closer = threading.Timer(0.2, lambda: client.close("s1"))
    closer.start()
    try:
        code, output = invoke(
            "results", "s1", "--host", f"localhost:{host.port}", "--follow", "--csv", tmp_path / "r.csv"
        )
    finally:
        closer.join(30)
    assert code == 0, output
    assert "session s1: closed" in output
    assert (tmp_path / "r.csv").read_bytes() == offline_csv(sim, tmp_path / "offline")


def test_results_of_an_open_session_are_the_rows_so_far(
    hosts: Hosts, host: HostServer, tmp_path: Path
) -> None:
    hosts.client(host).open("s1")
    code, output = invoke("results", "s1", "--host", f"127.0.0.1:{host.port}", "--csv", tmp_path / "r.csv")
    assert code == 0, output
    assert "session s1: open (results so far), 0 dump files received, 0 compared, 0 not compared yet, " \
        "0 rows so far, no agent streaming" in output  # fmt: skip
    assert (tmp_path / "r.csv").read_text().startswith("Index,OpSequence,OpType,NPUDump,DataType,Address,")


def test_sessions_lists_every_session(hosts: Hosts, host: HostServer, sim: SimulationResult) -> None:
    client = hosts.client(host)
    closed_session(client, sim, "closed-one")
    client.open("open-one")
    code, output = invoke("sessions", "--host", f"127.0.0.1:{host.port}")
    assert code == 0, output
    lines = output.splitlines()
    assert lines[0].startswith("closed-one  closed  ")
    assert lines[1].startswith("open-one  open  0 rows")


def test_sessions_tells_two_agents_of_one_device_apart(hosts: Hosts, host: HostServer) -> None:
    # Two agents (two state directories) on one machine and device read "from vm:0, vm:0".
    client = hosts.client(host)
    for agent_id, device in (("de05fde3a71a4e99", 0), ("1c0a2409855845ec", 0), ("1c0a2409855845ec", 1)):
        uploader = pb.Uploader(host="vm", device=device, agent_id=agent_id, version="0.1.0")
        opening = pb.OpenSessionRequest(session="two", uploader=uploader)
        client.stub.OpenSession(opening, timeout=CALL_TIMEOUT_S)
    code, output = invoke("sessions", "--host", f"127.0.0.1:{host.port}")
    assert code == 0, output
    listed = "two  open  0 rows  model -  from vm:0 (agents 1c0a2409, de05fde3), vm:1\n"
    assert output.startswith(listed), output


def test_sessions_shows_the_model_a_watchs_dump_paths_name(hosts: Hosts, host: HostServer) -> None:
    # A watch's session showed "model wdB", the watched directory's name, for a small_cnn dump.
    client = hosts.client(host)
    client.stub.OpenSession(pb.OpenSessionRequest(session="w1"), timeout=CALL_TIMEOUT_S)  # a watch: no model
    client.send("w1", {(pb.DUMP, "20261128061351/0/small_cnn/1/0/Add.a.1.1.1"): b"d"})
    client.open("named")  # an agent given --model-name (here "m") keeps it
    client.send("named", {(pb.DUMP, "20261128061351/0/small_cnn/1/0/Add.a.1.1.1"): b"d"})
    code, output = invoke("sessions", "--host", f"127.0.0.1:{host.port}")
    assert code == 0, output
    assert "w1  open  0 rows  model small_cnn  " in output
    assert "named  open  0 rows  model m  " in output


def test_unknown_session_and_wrong_token_are_one_line(hosts: Hosts, tmp_path: Path) -> None:
    (tmp_path / "token").write_text("right\n")
    (tmp_path / "wrong").write_text("wrong\n")
    server = hosts.start(tmp_path / "data", token_file=tmp_path / "token")
    address = f"127.0.0.1:{server.port}"
    code, output = invoke("results", "nope", "--host", address, "--token-file", tmp_path / "token")
    assert (code, output.strip()) == (
        1,
        "Error: host 127.0.0.1:" + str(server.port) + ": no session 'nope' in the store",
    )
    code, output = invoke("sessions", "--host", address, "--token-file", tmp_path / "wrong")
    assert code == 1
    assert len(output.strip().splitlines()) == 1
    assert output == (  # it read "UNAUTHENTICATED: a valid 'authorization: Bearer <token>' is required"
        f"Error: host {address}: it refused the bearer token in --token-file {tmp_path / 'wrong'}: not the "
        "host's token\n"
    )


def test_unreachable_and_silent_hosts_fail_within_the_timeout(tmp_path: Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    code, output = invoke("sessions", "--host", f"127.0.0.1:{port}", "--timeout", "5")
    assert code == 1
    assert output.startswith(f"Error: cannot reach the host at 127.0.0.1:{port}")
    assert len(output.strip().splitlines()) == 1
    with socket.socket() as silent:  # accepts connections, never speaks
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        code, output = invoke("sessions", "--host", f"127.0.0.1:{silent.getsockname()[1]}", "--timeout", "1")
    assert code == 1
    assert len(output.strip().splitlines()) == 1
    assert "did not answer in time" in output or "cannot reach" in output


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["sessions", "--host", "nohost"], "expected HOST:PORT"),
        (
            ["sessions", "--host", "127.0.0.1:1", "--token-file", "/nonexistent/t"],
            "--token-file /nonexistent/t: cannot read",
        ),
        (
            ["sessions", "--host", "127.0.0.1:1", "--tls-cert", "c.pem"],
            "--tls-cert and --tls-key go together",
        ),
        (
            ["sessions", "--host", "127.0.0.1:1", "--client-key", "c.key"],
            "--tls-cert and --tls-key go together",
        ),
        (["serve", "--data", "DATA", "--tls-cert", "c.pem"], "--tls-cert and --tls-key go together"),
        (["serve", "--data", "DATA", "--client-ca", "ca.pem"], "--client-ca needs --tls-cert"),
        (["serve", "--data", "DATA", "--listen", "127.0.0.1"], "--listen '127.0.0.1': expected HOST:PORT"),
        (["serve", "--data", "FILE", "--listen", "127.0.0.1:0"], "is a file, not a directory"),
        (
            ["serve", "--data", "DATA", "--listen", "127.0.0.1:0", "--host-paths", "FILE"],
            "FILE: not an existing directory",
        ),
    ],
)
def test_bad_options_are_one_line(tmp_path: Path, args: list[str], said: str) -> None:
    (tmp_path / "FILE").write_text("x")
    args = [str(tmp_path / a) if a in ("DATA", "FILE") else a for a in args]
    code, output = invoke(*args)
    assert code == 1, output
    assert said in output
    assert len(output.strip().splitlines()) == 1
    assert not (tmp_path / "DATA").exists()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_serve_runs_until_sigterm(tmp_path: Path, signum: signal.Signals) -> None:
    """Ctrl-C or SIGTERM is how a server ends, not an interruption: exit 0 (as the README says)."""
    data = tmp_path / "data"
    command = [
        sys.executable,
        "-m",
        "dumpcmp.cli",
        "host",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data",
        str(data),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
    ) as process:
        assert process.stdout is not None
        first = process.stdout.readline()  # blocks until the host listens (or dies: then it is "")
        assert first.startswith("dumpcmp host listening on 127.0.0.1:"), (
            first + process.communicate(timeout=30)[1]
        )
        port = int(first.split(":")[1].split(",")[0])
        code, output = invoke("sessions", "--host", f"127.0.0.1:{port}")
        assert (code, output.strip()) == (0, f"no sessions on 127.0.0.1:{port}")
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert stdout.strip() == "host stopped"
    assert stderr == ""
    assert (data / "dumpcmp.sqlite").is_file()


@pytest.mark.parametrize("command", ["", "serve", "sessions", "results", "close", "delete"])
def test_host_commands_have_help(command: str) -> None:
    code, output = invoke(*command.split(), "--help")
    assert code == 0, output
    assert "Usage" in output


def test_sessions_over_mutual_tls_with_a_token(hosts: Hosts, tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    (tmp_path / "token").write_text("t0ken\n")
    tls = TlsFiles(pki.server_cert, pki.server_key, client_ca=pki.ca)
    server = hosts.start(tmp_path / "data", tls=tls, token_file=tmp_path / "token")
    address = f"localhost:{server.port}"
    secure = ["--tls-ca", pki.ca, "--token-file", tmp_path / "token"]
    code, output = invoke(
        "sessions", "--host", address, *secure, "--tls-cert", pki.client_cert, "--tls-key", pki.client_key
    )
    assert (code, output.strip()) == (0, f"no sessions on {address}")
    code, output = invoke("sessions", "--host", address, *secure, "--timeout", "5")  # no client certificate
    assert code == 1
    assert output.startswith(f"Error: cannot reach the host at {address}")


def test_out_downloads_every_result_file_of_a_multi_step_session(
    hosts: Hosts, host: HostServer, tmp_path: Path
) -> None:
    # One CSV per step, as compare writes them: --csv cannot be all of them, --out gets each.
    sim = simulate("zoo:small_cnn", tmp_path / "run", steps=2, faults=("/block2/Add=noise:0.5",))
    closed_session(hosts.client(host), sim, "two")
    code, output = invoke("results", "two", "--host", f"127.0.0.1:{host.port}", "--out", tmp_path / "got")
    assert code == 0, output
    offline = tmp_path / "offline"
    compare = runner.invoke(app, ["compare", "-tp", sim.npu_dump_dir, "-gp", sim.golden_dir,
                                  "-fr", sim.fusion_rule, "-o", offline])  # fmt: skip
    assert compare.exit_code == 0, compare.output
    expected = {p.name.rsplit("_result_", 1)[0]: p.read_bytes() for p in offline.glob("*.csv")}
    got = {p.name.rsplit("_result_", 1)[0]: p.read_bytes() for p in (tmp_path / "got").glob("*.csv")}
    assert len(got) == 2 and got == expected
    assert output.count("wrote ") == 2


def test_an_open_sessions_rows_are_in_shard_and_execution_order_and_advised_as_one_run(
    hosts: Hosts, host: HostServer, tmp_path: Path
) -> None:
    """Rows came in the order their files finished (Index 0,0,2,1 …, steps mixed), so --csv and the
    advisor read them out of order; and advise wrote one advice per step."""
    from tests.host.server.test_sessions import wait_for_rows_of

    sim = simulate("zoo:small_cnn", tmp_path / "run", steps=2, faults=("/block2/Add=noise:0.5",))
    files = simulation_files(sim)
    dumps = [key for key in files if key[0] == pb.DUMP]
    client = hosts.client(host)
    client.open("ord", **session_settings())
    client.send("ord", {k: v for k, v in files.items() if k[0] != pb.DUMP})
    client.send("ord", {k: files[k] for k in reversed(dumps)})  # the last op of the last step first
    wait_for_rows_of(client, "ord", len(dumps))
    address = f"127.0.0.1:{host.port}"
    code, output = invoke("results", "ord", "--host", address, "--csv", tmp_path / "r.csv")
    assert code == 0, output
    with (tmp_path / "r.csv").open(newline="") as table:
        rows = list(csv.DictReader(table))
    order = [(int(r["Step"]), int(r["Index"])) for r in rows]
    assert order == sorted(order) and {step for step, _ in order} == {0, 1}
    advised = runner.invoke(app, ["advise", "--host", address, "--session", "ord", "-o", tmp_path / "adv"])
    assert advised.exit_code == 0, advised.output
    assert advised.output.count("advisor: ") == 1
    assert "first divergence: op #" in advised.output and "/block2/Add" in advised.output


def test_csv_xlsx_and_html_of_a_multi_step_session_are_advised_across_its_steps(
    hosts: Hosts, host: HostServer, tmp_path: Path
) -> None:
    """The --csv/--xlsx table of several steps (led by their columns) was advised as one network, and
    --html was a one-shard page of every step's rows; advise --host saw the steps."""
    sim = simulate("zoo:small_cnn", tmp_path / "run", steps=2, faults=("/block2/Add=noise:0.5",))
    closed_session(hosts.client(host), sim, "two")
    address = f"127.0.0.1:{host.port}"
    out = tmp_path / "out"
    out.mkdir()
    code, output = invoke("results", "two", "--host", address, "--csv", out / "two.csv", "--xlsx",
                          out / "two.xlsx", "--html", out / "two.html")  # fmt: skip
    assert code == 0, output
    head = "shards: 2 (steps 0, 1), diverging: 2 (steps 0, 1); the first: step 0, first divergence at op #"
    for table in ("two.csv", "two.xlsx"):
        advised = runner.invoke(app, ["advise", str(out / table), "-o", str(tmp_path / table)])
        assert advised.exit_code == 0, advised.output
        assert advised.output.startswith(head), advised.output
    html = (out / "two.html").read_text()
    assert "</span>: 2 (steps 0, 1), diverging: 2 (steps 0, 1); the first: step 0" in html
    assert '"label":"step 1"' in html  # the shard picker's


def test_out_of_an_open_session_is_one_line(hosts: Hosts, host: HostServer, tmp_path: Path) -> None:
    hosts.client(host).open("s1")
    code, output = invoke("results", "s1", "--host", f"127.0.0.1:{host.port}", "--out", tmp_path / "got")
    assert code == 1
    # "(use --follow)" waited for ever: no agent streamed into it to close it.
    assert output.strip().endswith(
        f"its result files are written when it closes (no agent is streaming into it: dumpcmp host close "
        f"s1 --host 127.0.0.1:{host.port})"
    )
    assert len(output.strip().splitlines()) == 1
    assert not (tmp_path / "got").exists()  # the --out it made, empty, is gone again


@pytest.mark.parametrize(
    ("option", "target"),
    [
        ("--csv", "."),
        ("--csv", "existing_dir"),
        ("--csv", "cdir/"),
        ("--xlsx", "cdir/"),
        ("--xlsx", ".."),
        ("--html", "cdir/"),
    ],
)
def test_a_directory_as_the_table_file_is_one_line(
    hosts: Hosts, host: HostServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: str, target: str
) -> None:
    hosts.client(host).open("s1")
    work = tmp_path / "work"
    (work / "existing_dir").mkdir(parents=True)
    monkeypatch.chdir(work)
    code, output = invoke("results", "s1", "--host", f"127.0.0.1:{host.port}", option, target)
    assert (code, output.strip()) == (1, f"Error: {option} {target}: a file path is needed, not a directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "work"]  # data: the host's
    assert [p.name for p in work.rglob("*")] == ["existing_dir"]


@pytest.mark.parametrize(
    ("option", "target", "message"),
    [
        ("--csv", "", "--csv: the file path is empty"),
        ("--xlsx", "x.csv", "--xlsx x.csv: a .xlsx file's name, not a .csv one"),
        ("--html", "y.xlsx", "--html y.xlsx: a .html file's name, not a .xlsx one"),
    ],
)
def test_an_empty_path_or_another_format_s_suffix_is_one_line(
    hosts: Hosts,
    host: HostServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    option: str,
    target: str,
    message: str,
) -> None:
    """``--xlsx x.csv`` wrote an xlsx named .csv; ``--csv ""`` was called a directory."""
    hosts.client(host).open("s1")
    monkeypatch.chdir(tmp_path)
    code, output = invoke("results", "s1", "--host", f"127.0.0.1:{host.port}", option, target)
    assert (code, output.strip()) == (1, f"Error: {message}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


@pytest.mark.parametrize("option", ["--csv", "--xlsx", "--html"])
def test_a_fifo_or_device_as_the_table_file_is_one_line(
    hosts: Hosts, host: HostServer, tmp_path: Path, option: str
) -> None:
    """``--csv /dev/null`` wrote ``/dev/null_1``: the next free name beside a device."""
    hosts.client(host).open("s1")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    code, output = invoke("results", "s1", "--host", f"127.0.0.1:{host.port}", option, fifo)
    assert (code, output.strip()) == (
        1, f"Error: {option} {fifo}: not a regular file; give the path of a file to write"
    )  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "pipe"]


def test_serve_on_a_port_in_use_is_one_line_and_leaves_no_data_directory(tmp_path: Path) -> None:
    data = tmp_path / "data" / "host"
    env = {k: v for k, v in os.environ.items() if k != "GRPC_VERBOSITY"}
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "dumpcmp.cli", "host", "serve", "--listen", f"127.0.0.1:{port}",
             "--data", str(data)],
            env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(f"Error: --listen 127.0.0.1:{port}: cannot listen (")  # not gRPC's log
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_agent_naming_a_host_file_outside_host_paths_is_refused_in_one_line(
    hosts: Hosts, host: HostServer, tmp_path: Path
) -> None:
    from tests.agent.dumps import write_dumps

    write_dumps(tmp_path / "dump", 1)
    secret = tmp_path / "outside.bashrc"
    secret.write_text("export SECRET=1\n")
    target = f"127.0.0.1:{host.port}"
    result = runner.invoke(
        app,
        ["agent", "run", "--host", target, "--session", "s1", "--watch", str(tmp_path / "dump"),
         "--fusion-rule-on-host", str(secret), "--until-idle", "0"],
    )  # fmt: skip
    assert (result.exit_code, result.output.strip()) == (
        1,
        f"Error: host {target}: --fusion-rule-on-host {str(secret)!r}: this host allows "
        "no host paths (dumpcmp host serve --host-paths DIR); or send the fusion rule with --fusion-rule",
    )
    assert "Traceback" not in result.output
    assert not hosts.client(host).stub.ListSessions(pb.ListSessionsRequest(), timeout=30).sessions


def _cli(*args: object) -> subprocess.Popen[str]:
    """``dumpcmp host ARGS`` in its own process, its lines readable as they are printed."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "dumpcmp.cli", "host", *map(str, args)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)


def _read_until(process: subprocess.Popen[str], wanted: str, seen: list[str]) -> None:
    """Read the process's lines up to ``wanted`` (bounded: the process is killed after a while)."""
    assert process.stdout is not None
    watchdog = threading.Timer(CALL_TIMEOUT_S, process.kill)
    watchdog.start()
    try:
        for line in process.stdout:
            seen.append(line)
            if line.rstrip("\n") == wanted:
                return
    finally:
        watchdog.cancel()
    raise AssertionError(f"no line {wanted!r}: {seen}")


@contextmanager
def _following(address: str, *options: object) -> Iterator[subprocess.Popen[str]]:
    """``host results s1 --follow OPTIONS`` running; killed at the end if it still runs."""
    follower = _cli("results", "s1", "--host", address, "--follow", *options)
    try:
        yield follower
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()


def test_follow_waits_for_a_session_no_agent_opened_yet_and_says_how_it_stands(
    hosts: Hosts, host: HostServer, sim: SimulationResult, tmp_path: Path
) -> None:
    client = hosts.client(host)
    files = simulation_files(sim)
    dumps = {key: data for key, data in files.items() if key[0] == pb.DUMP}
    seen: list[str] = []
    address = f"127.0.0.1:{host.port}"
    with _following(address, "--csv", tmp_path / "r.csv") as follower:
        _read_until(
            follower,
            f"waiting for session s1 to appear on {address} (an agent opens it; Ctrl-C to stop)",
            seen,
        )
        client.open("s1", **session_settings())
        assert {a.status for a in client.send("s1", dumps)} == {pb.UploadAck.STORED}
        # the dump files are in, the golden data and rule not yet: nothing can be compared
        _read_until(
            follower,
            f"session s1: open (results so far), {len(dumps)} dump files received, 0 compared, "
            f"{len(dumps)} not compared yet (waiting for the fusion rule fusion_rule.json), 0 rows so far, "
            "no agent streaming",
            seen,
        )
        assert {a.status for a in client.send("s1", files)} >= {pb.UploadAck.STORED}
        client.close("s1")
        stdout, _ = follower.communicate(timeout=CALL_TIMEOUT_S)
    assert follower.returncode == 0, "".join(seen) + stdout
    assert "Traceback" not in stdout
    rows = (tmp_path / "r.csv").read_text().count("\n") - 1
    final = f"session s1: closed, {len(dumps)} dump files compared, {rows} rows"
    assert stdout.splitlines().count(final) == 1, stdout  # once: the results' line ends the follow
    assert (tmp_path / "r.csv").read_bytes() == offline_csv(sim, tmp_path / "offline")


def test_follow_gives_up_waiting_after_wait_seconds(host: HostServer) -> None:
    code, output = invoke("results", "s1", "--host", f"127.0.0.1:{host.port}", "--follow", "--wait", "0.2")
    assert code == 1
    waiting, error = output.strip().splitlines()
    assert (
        waiting
        == f"waiting for session s1 to appear on 127.0.0.1:{host.port} (an agent opens it; for up to 0.2 s)"
    )
    assert error == (
        f"Error: session s1 did not appear on 127.0.0.1:{host.port} within 0.2 s "
        "(is an agent running with --session s1?)"
    )


def _stopped_by_ctrl_c(host: HostServer, after: str, *options: object) -> list[str]:
    """The lines ``host results s1 --follow OPTIONS`` prints once Ctrl-C stops it after line ``after``."""
    seen: list[str] = []
    follower = _cli("results", "s1", "--host", f"127.0.0.1:{host.port}", "--follow", *options)
    try:
        _read_until(follower, after, seen)
        follower.send_signal(signal.SIGINT)
        rest, _ = follower.communicate(timeout=CALL_TIMEOUT_S)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    assert follower.returncode == 130
    return [line for line in rest.splitlines() if line.strip()]


def test_follow_is_stopped_by_ctrl_c_in_one_line(host: HostServer) -> None:
    address = f"127.0.0.1:{host.port}"
    waiting = f"waiting for session s1 to appear on {address} (an agent opens it; Ctrl-C to stop)"
    assert _stopped_by_ctrl_c(host, waiting) == [
        "interrupted: stopped waiting for session s1 to appear; nothing was written"
    ]


def test_ctrl_c_while_following_an_open_session_says_it_stopped_following(
    hosts: Hosts, host: HostServer, tmp_path: Path
) -> None:
    # It said "the run did not finish; files already written are complete, the rest were not
    # written": there is no run, and no file to write.
    hosts.client(host).open("s1", **session_settings())
    status = (
        "session s1: open (results so far), 0 dump files received, 0 compared, 0 not compared yet, "
        "0 rows so far, no agent streaming"
    )
    assert _stopped_by_ctrl_c(host, status, "--out", tmp_path / "out") == [
        "interrupted: stopped following session s1; the session is unchanged (still open on the host), "
        "and nothing was written"
    ]
    assert not (tmp_path / "out").exists()


class _Streaming:
    """An agent's upload call open into a session, sending nothing yet (as one watching an empty
    dump path), until the test ends it."""

    def __init__(self, client: Client, session: str) -> None:
        self._stop = threading.Event()

        def nothing() -> Iterator[pb.UploadMessage]:
            self._stop.wait(CALL_TIMEOUT_S)
            yield from ()

        from dumpcmp.proto.session_names import SESSION_METADATA

        self.call = client.stub.Upload(
            nothing(), timeout=CALL_TIMEOUT_S, metadata=((SESSION_METADATA, session),)
        )
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while not client.info(session).streams and time.monotonic() < deadline:
            time.sleep(0.01)  # the host has the call

    def end(self) -> None:
        self._stop.set()
        assert list(self.call) == []


def test_close_ends_a_session_an_agent_left_open(
    hosts: Hosts, host: HostServer, sim: SimulationResult, tmp_path: Path
) -> None:
    client = hosts.client(host)
    filled(client, sim)
    address = f"127.0.0.1:{host.port}"
    streaming = _Streaming(client, "s1")
    code, output = invoke("close", "s1", "--host", address)
    assert (code, output.strip()) == (
        1,
        "Error: session s1: 1 agent streaming into it right now; an agent closes its session itself when "
        "it is done (stop it first to close it here)",
    )
    streaming.end()  # the agent gave up
    code, output = invoke("close", "s1", "--host", address)
    assert code == 0, output
    info = client.info("s1")
    assert info.state == pb.SessionInfo.CLOSED
    lines = output.splitlines()
    assert lines[0] == f"session s1: closed, {info.dump_files} dump files compared, {info.rows} rows"
    assert lines[-1].startswith(f"result files on {address}: {info.data_dir}/results (result_")
    assert client.fetch("s1", info.result_files[0]) == offline_csv(sim, tmp_path / "offline")
    assert invoke("close", "s1", "--host", address) == (1, "Error: session s1 is closed already\n")


def test_a_refused_close_is_one_line_with_the_way_out(
    hosts: Hosts, host: HostServer, sim: SimulationResult
) -> None:
    # It read "Error: host H: FAILED_PRECONDITION: session st1: session st1 holds no dump files"
    # (an upload that stalled and was ended left the session empty): the gRPC code, the session
    # named twice, and nothing said of `host delete`, the only way out.
    client = hosts.client(host)
    address = f"127.0.0.1:{host.port}"
    client.open("st1")
    delete = f"dumpcmp host delete st1 --host {address} --yes"
    assert invoke("close", "st1", "--host", address) == (
        1,
        f"Error: host {address}: session st1 cannot be closed: it holds no dump files; nothing to compare, "
        f"so delete it: {delete}\n",
    )
    # Dump files without the rule and golden data they are compared with: send them, or delete.
    client.open("st2", **session_settings())
    dumps = {key: data for key, data in simulation_files(sim).items() if key[0] == pb.DUMP}
    client.send("st2", dumps)
    code, output = invoke("close", "st2", "--host", address)
    assert code == 1 and len(output.splitlines()) == 1, output
    assert output.startswith(
        f"Error: host {address}: session st2 cannot be closed: waiting for the fusion rule fusion_rule.json: "
        "run the agent into this session again with --fusion-rule fusion_rule.json to send it; it stays open "
        "until that is mended"
    ), output
    assert output.endswith(f"or delete it: dumpcmp host delete st2 --host {address} --yes\n"), output
    assert "FAILED_PRECONDITION" not in output


def test_delete_drops_a_session_from_the_store_and_the_disk(
    hosts: Hosts, host: HostServer, sim: SimulationResult, tmp_path: Path
) -> None:
    client = hosts.client(host)
    closed_session(client, sim)
    client.open("other")
    address = f"127.0.0.1:{host.port}"
    info = client.info("s1")
    directory = Path(info.data_dir)
    assert directory.is_dir()
    what = f"session s1 on {address} (closed, {len(info.files)} files, {info.rows} rows, {directory})"
    assert invoke("delete", "s1", "--host", address) == (
        1,
        f"Error: deleting {what} cannot be undone: add --yes\n",
    )
    assert client.info("s1").rows == info.rows  # asked, not done

    code, output = invoke("delete", "s1", "--host", address, "--yes")
    assert code == 0, output
    assert (
        output.strip()
        == f"deleted session s1: {len(info.files)} files and {info.rows} rows dropped, {directory} removed"
    )
    assert not directory.exists()
    assert not [p for p in (tmp_path / "data/sessions").iterdir() if p.name != "other"]
    assert [s.session for s in client.stub.ListSessions(pb.ListSessionsRequest()).sessions] == ["other"]
    assert invoke("results", "s1", "--host", address)[0] == 1  # gone
    # the name is free again: a new session of that name starts empty
    assert client.open("s1").rows == 0 and not client.info("s1").files
    assert invoke("delete", "nope", "--host", address, "--yes") == (
        1,
        f"Error: host {address}: no session 'nope' in the store\n",
    )


def test_delete_refuses_a_session_an_agent_streams_into(
    hosts: Hosts, host: HostServer, sim: SimulationResult
) -> None:
    client = hosts.client(host)
    filled(client, sim)
    streaming = _Streaming(client, "s1")
    try:
        code, output = invoke("delete", "s1", "--host", f"127.0.0.1:{host.port}", "--yes")
    finally:
        streaming.end()
    assert code == 1
    assert output.strip() == (
        f"Error: host 127.0.0.1:{host.port}: session s1: 1 agent upload streaming "
        "into it right now; stop the agent (or let it finish and close the session), then delete it"
    )
    assert Path(client.info("s1").data_dir).is_dir() and client.info("s1").files


def test_results_never_replace_a_users_file(
    hosts: Hosts, host: HostServer, sim: SimulationResult, tmp_path: Path
) -> None:
    """A file already there (a user's edited table) is kept: the download takes the next free
    name, as compare's result files do."""
    client = hosts.client(host)
    closed_session(client, sim)
    (name,) = [n for n in client.info("s1").result_files if n.endswith(".csv")]
    got = tmp_path / "got"
    got.mkdir()
    (got / name).write_text("edited")
    mine = {tmp_path / f"mine{suffix}": f"mine {suffix}" for suffix in (".csv", ".xlsx", ".html")}
    for path, text in mine.items():
        path.write_text(text)
    code, output = invoke(
        "results", "s1", "--host", f"127.0.0.1:{host.port}", "--out", got,
        "--csv", tmp_path / "mine.csv", "--xlsx", tmp_path / "mine.xlsx", "--html", tmp_path / "mine.html",
    )  # fmt: skip
    assert code == 0, output
    assert {p.read_text() for p in mine} == set(mine.values())
    assert (got / name).read_text() == "edited"
    fresh = got / name.replace(".csv", "_1.csv")
    assert fresh.read_bytes() == offline_csv(sim, tmp_path / "offline")
    assert (tmp_path / "mine_1.csv").read_bytes() == fresh.read_bytes()
    assert openpyxl.load_workbook(tmp_path / "mine_1.xlsx").active is not None
    assert (tmp_path / "mine_1.html").read_text().startswith("<!")
    for written in (tmp_path / "mine_1.csv", tmp_path / "mine_1.xlsx", tmp_path / "mine_1.html", fresh):
        assert f"wrote {written}" in output


# ``host results`` killed (kill -9) while it builds the workbook, after the CSV is written.
_KILLED_WHILE_THE_WORKBOOK_IS_BUILT = """
import os, signal, sys
import xlsxwriter
from dumpcmp.cli import main

xlsxwriter.Workbook.close = lambda self: os.kill(os.getpid(), signal.SIGKILL)
sys.argv = ["dumpcmp", *sys.argv[1:]]
main()
"""


def test_results_killed_while_writing_leave_no_empty_file_and_the_next_run_takes_the_name(
    hosts: Hosts, host: HostServer, sim: SimulationResult, tmp_path: Path
) -> None:
    """A name is taken by a whole file only: a 0-byte ``F`` left by the killed run was a damaged
    result, and the next run wrote ``F_1.xlsx`` beside it."""
    closed_session(hosts.client(host), sim)
    out = tmp_path / "out"
    out.mkdir()
    tables = {option: out / f"a.{option[2:]}" for option in ("--csv", "--xlsx")}
    args = ["host", "results", "s1", "--host", f"127.0.0.1:{host.port}"]
    args += [str(part) for option, path in tables.items() for part in (option, path)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _KILLED_WHILE_THE_WORKBOOK_IS_BUILT, *args], env=env,
                          capture_output=True, text=True, timeout=CALL_TIMEOUT_S)  # fmt: skip
    assert done.returncode == -signal.SIGKILL, done.stdout + done.stderr
    assert [p.name for p in out.iterdir() if not p.name.startswith(".")] == ["a.csv"]
    assert tables["--csv"].read_bytes() == offline_csv(sim, tmp_path / "offline")
    code, output = invoke(*args[1:4], args[4], "--xlsx", tables["--xlsx"])
    assert code == 0, output
    assert openpyxl.load_workbook(tables["--xlsx"]).active is not None


@pytest.mark.parametrize("option", ["--csv", "--xlsx", "--html"])
def test_a_table_file_in_a_missing_directory_is_one_line_and_makes_none(
    hosts: Hosts, host: HostServer, sim: SimulationResult, tmp_path: Path, option: str
) -> None:
    closed_session(hosts.client(host), sim)
    target = tmp_path / "no" / "such" / "x.out"
    code, output = invoke("results", "s1", "--host", f"127.0.0.1:{host.port}", option, target)
    assert (code, output.strip()) == (
        1, f"Error: {option} {target}: cannot write: directory {target.parent} does not exist"
    )  # fmt: skip
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--wait", "3"], "Error: --wait goes with --follow"),
        (["--graph", "m.onnx"], "Error: --graph goes with --html"),
    ],
)
def test_results_options_that_need_another_are_refused(args: list[str], said: str) -> None:
    code, output = invoke("results", "s1", "--host", "127.0.0.1:1", *args)
    assert code == 1
    assert output.strip().startswith(said) and len(output.strip().splitlines()) == 1


def test_results_say_replaced_runs_once(hosts: Hosts, host: HostServer, sim: SimulationResult) -> None:
    client = hosts.client(host)
    client.open("s1", **session_settings())
    dumps = {k: v for k, v in simulation_files(sim).items() if k[0] == pb.DUMP}
    client.upload([pb.UploadMessage(run=pb.RunMark(session="s1", run_id="r1", event=pb.RunMark.START))])
    client.send("s1", dict(list(dumps.items())[:3]), run_id="r1")
    client.upload([pb.UploadMessage(run=pb.RunMark(session="s1", run_id="r2", event=pb.RunMark.START))])
    client.send("s1", simulation_files(sim), run_id="r2")
    # r2 ends: a run never ended is dropped when the session closes (its agent died mid-run)
    client.upload([pb.UploadMessage(run=pb.RunMark(session="s1", run_id="r2", event=pb.RunMark.END))])
    client.close("s1")
    code, output = invoke("results", "s1", "--host", f"127.0.0.1:{host.port}")
    assert code == 0, output
    assert output.count("replaced runs") == 1 and "r1" in output


_MTLS_NO_CERT = (
    "it closed the TLS connection at once, as a host asking for client certificates (--client-ca) does: "
    "pass --tls-cert and --tls-key signed by that CA"
)


@pytest.mark.parametrize(
    "command", [["sessions"], ["results", "s1"], ["close", "s1"], ["delete", "s1", "--yes"]]
)
def test_every_host_command_gives_the_tls_hints(hosts: Hosts, tmp_path: Path, command: list[str]) -> None:
    # Only `agent run` explained a TLS failure; these printed gRPC's "Socket closed".
    pki = make_pki(tmp_path / "pki")
    server = hosts.start(tmp_path / "data", tls=TlsFiles(pki.server_cert, pki.server_key, client_ca=pki.ca))
    address = f"localhost:{server.port}"
    code, output = invoke(*command, "--host", address, "--tls-ca", pki.ca)
    assert (code, output.strip()) == (1, f"Error: cannot reach the host at {address}: {_MTLS_NO_CERT}")


@pytest.mark.parametrize("case", ["plaintext client", "plaintext host", "foreign client cert", "host name"])
def test_each_tls_mismatch_is_one_line_naming_what_to_change(hosts: Hosts, tmp_path: Path, case: str) -> None:
    pki, other = make_pki(tmp_path / "pki"), make_pki(tmp_path / "other", "other")
    tls = {
        "plaintext client": TlsFiles(pki.server_cert, pki.server_key),
        "plaintext host": None,
        "foreign client cert": TlsFiles(pki.server_cert, pki.server_key, client_ca=pki.ca),
        "host name": TlsFiles(pki.client_cert, pki.client_key),  # a certificate made out to "agent"
    }[case]
    server = hosts.start(tmp_path / "data", tls=tls)
    address = f"localhost:{server.port}"
    client = {
        "plaintext client": [],
        "plaintext host": ["--tls-ca", pki.ca],
        "foreign client cert": [
            "--tls-ca",
            pki.ca,
            "--tls-cert",
            other.client_cert,
            "--tls-key",
            other.client_key,
        ],
        "host name": ["--tls-ca", pki.ca],
    }[case]
    hint = {
        "plaintext client": "it closed the connection at once, as a TLS host does to a plaintext client: "
        "pass --tls-ca CA.pem (the CA of the host's certificate)",
        "plaintext host": f"the host does not speak TLS: drop --tls-ca {pki.ca} "
        "(or start the host with --tls-cert)",
        "foreign client cert": f"it closed the TLS connection at once: it does not trust --tls-cert "
        f"{other.client_cert} (signed by another CA than the host's --client-ca?)",
        "host name": "the host's certificate is not made out to localhost: connect by a name or address the "
        "certificate holds (--host)",
    }[case]
    code, output = invoke("sessions", "--host", address, *client)
    assert (code, output.strip()) == (1, f"Error: cannot reach the host at {address}: {hint}")


def test_a_key_that_is_not_its_certificates_is_named(tmp_path: Path) -> None:
    # The host said "cannot listen (Failed to bind to address ...)"; a client, "Failed to create
    # security handshaker".
    pki, other = make_pki(tmp_path / "pki"), make_pki(tmp_path / "other", "other")
    code, output = invoke("serve", "--data", tmp_path / "data", "--listen", "127.0.0.1:0",
                          "--tls-cert", pki.server_cert, "--tls-key", other.server_key)  # fmt: skip
    said = f"Error: --tls-key {other.server_key} is not the key of --tls-cert {pki.server_cert}"
    assert (code, output.strip()) == (1, said)
    assert not (tmp_path / "data").exists()
    code, output = invoke("sessions", "--host", "localhost:1", "--tls-ca", pki.ca,
                          "--tls-cert", pki.client_cert, "--tls-key", other.client_key)  # fmt: skip
    said = f"Error: --tls-key {other.client_key} is not the key of --tls-cert {pki.client_cert}"
    assert (code, output.replace("\n", " ").strip()) == (1, said)


@pytest.mark.parametrize(("given", "window"), [([], DEFAULT_RECEIVE_WINDOW), (["--receive-window", "0"], 0)])
def test_serve_takes_the_receive_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: list[str], window: int
) -> None:
    started: list[HostConfig] = []

    def start(config: HostConfig) -> HostServer:
        started.append(config)
        raise DumpcmpError("not started (test)")

    monkeypatch.setattr(serve_module, "start", start)
    code, output = invoke("serve", "--data", tmp_path / "data", "--listen", "127.0.0.1:0", *given)
    assert (code, output.strip()) == (1, "Error: not started (test)")
    assert [config.receive_window for config in started] == [window]


def test_follow_waits_for_a_host_that_went_away_and_came_back(
    hosts: Hosts, host: HostServer, sim: SimulationResult, tmp_path: Path
) -> None:
    # A host killed during `host results --follow` gave "it closed the connection at once, as a
    # TLS host does to a plaintext client: pass --tls-ca", and the follow ended (exit 1).
    hosts.client(host).open("s1", **session_settings())
    address = f"127.0.0.1:{host.port}"
    status = (
        "session s1: open (results so far), 0 dump files received, 0 compared, 0 not compared yet, "
        "0 rows so far, no agent streaming"
    )
    seen: list[str] = []
    with _following(address, "--csv", tmp_path / "r.csv") as follower:
        _read_until(follower, status, seen)
        hosts.stop(host)
        _read_until(
            follower,
            f"the host at {address} went away; waiting up to 300 s for it to come back (Ctrl-C to stop)",
            seen,
        )
        back = serve_module.start(HostConfig(address, tmp_path / "data"))  # on the same port
        hosts.servers.append(back)
        _read_until(follower, status, seen)  # followed again
        client = hosts.client(back)
        client.send("s1", simulation_files(sim))
        client.close("s1")
        stdout, _ = follower.communicate(timeout=CALL_TIMEOUT_S)
    assert follower.returncode == 0, "".join(seen) + stdout
    assert (tmp_path / "r.csv").read_bytes() == offline_csv(sim, tmp_path / "offline")


class _FailedCall(grpc.RpcError, grpc.Call):  # type: ignore[misc]
    """A call that failed as gRPC reports it: a code and its details."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def initial_metadata(self) -> None:
        return None

    def trailing_metadata(self) -> None:
        return None

    def is_active(self) -> bool:
        return False

    def time_remaining(self) -> None:
        return None

    def cancel(self) -> bool:
        return False

    def add_callback(self, callback: object) -> bool:
        return False


@pytest.mark.parametrize("tls_ca", [None, Path("ca.pem")])
def test_a_host_killed_during_a_call_is_said_so_not_diagnosed_as_tls(tls_ca: Path | None) -> None:
    # `host close` or `host results --follow` of a host killed -9 said "it closed the connection at
    # once, as a TLS host does to a plaintext client: pass --tls-ca CA.pem".
    from dumpcmp.proto.channel import ChannelOptions, call_failed

    broken = _FailedCall(grpc.StatusCode.UNAVAILABLE, "Stream removed (Socket closed)")
    assert str(call_failed(broken, "h:1", ChannelOptions("h:1", tls_ca))) == (
        "the host at h:1 went away during the call (Stream removed (Socket closed)); run the same "
        "command again once it is back"
    )
    at_once = _FailedCall(
        grpc.StatusCode.UNAVAILABLE,
        "failed to connect to all addresses; last error: UNAVAILABLE: ipv4:127.0.0.1:1: Socket closed",
    )
    assert "TLS" in str(call_failed(at_once, "h:1", ChannelOptions("h:1", tls_ca)))
