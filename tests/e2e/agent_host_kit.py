"""Test kit for the agent ↔ host end-to-end tests: every piece a real ``dumpcmp`` process.

The host is ``dumpcmp host serve`` in a subprocess (it prints the port it took, so it can be
restarted on that same port); agents and the ``host``/``compare`` commands run as users run
them. Every wait is bounded; every process a test starts is stopped when it ends.
"""

from __future__ import annotations

import csv
import io
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
WAIT_S = 120.0  # the most any process or condition is waited for (two shared cores, slow CI)
_LISTENING = re.compile(r"dumpcmp host listening on [^:]+:(\d+),")


def cli_env() -> dict[str, str]:
    """The worktree's code, a plain wide terminal (no colour, no wrapping), in every subprocess."""
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "NO_COLOR": "1",
        "TERM": "dumb",
        "COLUMNS": "1000",
    }


@dataclass(frozen=True)
class Done:
    code: int
    output: str  # stdout and stderr together, as a user sees them


def dumpcmp(*args: object, timeout: float = WAIT_S) -> Done:
    """Run ``dumpcmp ARGS`` to the end; no output of any command may hold a traceback."""
    proc = subprocess.run(
        [sys.executable, "-m", "dumpcmp.cli", *map(str, args)],
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert "Traceback" not in proc.stdout, proc.stdout
    return Done(proc.returncode, proc.stdout)


@dataclass
class Background:
    """A ``dumpcmp`` process running while the test acts; its output goes to a file."""

    process: subprocess.Popen[bytes]
    log: Path

    @property
    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait(self, timeout: float = WAIT_S) -> Done:
        self.process.wait(timeout=timeout)
        output = self.output
        assert "Traceback" not in output, output
        return Done(self.process.returncode, output)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=WAIT_S)


def start_dumpcmp(log: Path, *args: object) -> Background:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "dumpcmp.cli", *map(str, args)],
            env=cli_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return Background(process, log)


def wait_for(condition: object, what: str, timeout: float = WAIT_S, every: float = 0.01) -> None:
    """Poll ``condition()`` until true; fail the test (not hang) after ``timeout``."""
    assert callable(condition)
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(every)


@dataclass
class HostProcess:
    """``dumpcmp host serve`` on a loopback port, restartable on the same port and data dir."""

    data: Path
    logs: Path
    options: tuple[object, ...] = ()
    port: int = 0
    current: Background | None = None
    started: int = 0

    def start(self) -> HostProcess:
        assert self.current is None or self.current.process.poll() is not None
        self.started += 1
        log = self.logs / f"host{self.started}.log"
        background = start_dumpcmp(
            log, "host", "serve", "--listen", f"127.0.0.1:{self.port}", "--data", self.data, *self.options
        )
        self.current = background

        def listening() -> bool:
            if background.process.poll() is not None:
                pytest.fail(f"the host exited:\n{background.output}")
            return _LISTENING.search(background.output) is not None

        wait_for(listening, "the host to listen")
        found = _LISTENING.search(background.output)
        assert found is not None
        self.port = int(found.group(1))
        return self

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def pause(self) -> None:
        """SIGSTOP: the host stores nothing more (a state a test can look at) until ``resume``."""
        assert self.current is not None
        self.current.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.current is not None
        self.current.process.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        assert self.current is not None
        self.current.process.send_signal(signal.SIGCONT)  # a stopped process dies only when continued
        self.current.kill()

    def stop(self) -> Done:
        """SIGTERM, the way a user stops ``host serve``: exit 0, no traceback."""
        assert self.current is not None
        self.current.process.send_signal(signal.SIGCONT)
        self.current.process.send_signal(signal.SIGTERM)
        return self.current.wait()

    def session_dir(self, session: str) -> Path:
        return self.data / "sessions" / session


@dataclass
class Processes:
    """Everything a test started; killed at its end whatever happened."""

    hosts: list[HostProcess] = field(default_factory=list)
    others: list[Background] = field(default_factory=list)

    def host(self, tmp: Path, *options: object, name: str = "host") -> HostProcess:
        host = HostProcess(tmp / name / "data", tmp / name / "logs", options)
        self.hosts.append(host)
        return host.start()

    def agent(self, log: Path, host: HostProcess, session: str, *args: object) -> Background:
        background = start_dumpcmp(log, "agent", "run", "--host", host.address, "--session", session, *args)
        self.others.append(background)
        return background

    def close(self) -> None:
        for background in self.others:
            background.kill()
        for host in self.hosts:
            if host.current is not None and host.current.process.poll() is None:
                host.kill()


@pytest.fixture(name="procs")
def procs_fixture() -> Iterator[Processes]:
    made = Processes()
    try:
        yield made
    finally:
        made.close()


def files_under(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root`` by its '/'-path relative to ``root``."""
    if not root.is_dir():
        return {}
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def run_files(run: Path) -> dict[int, dict[str, bytes]]:
    """A simulated agent run's files by kind, from its local directory (``STATE/runs/ID``: inputs,
    golden data, rule, npu dump), as a session that holds exactly that run lists them."""
    from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb

    return {
        pb.DUMP: files_under(run / "npu"),
        pb.GOLDEN: files_under(run / "golden"),
        pb.INPUT: files_under(run / "inputs"),
        pb.FUSION_RULE: {"fusion_rule.json": (run / "fusion_rule.json").read_bytes()},
    }


def count_files(root: Path) -> int:
    return sum(len(names) for _d, _s, names in os.walk(root))


def offline_results(session_dir: Path, out: Path, rule: str = "fusion_rule.json") -> dict[str, bytes]:
    """``dumpcmp compare -tp DUMP -gp GOLDEN -fr RULE -o OUT`` of a session's files where the
    host keeps them (as a user finds them): its result CSVs by name without the time stamp."""
    done = dumpcmp(
        "compare", "-tp", session_dir / "dump", "-gp", session_dir / "golden",
        "-fr", session_dir / "rules" / rule, "-o", out,
    )  # fmt: skip
    assert done.code == 0, done.output
    return {_stem(p.name): p.read_bytes() for p in out.glob("*result_*.csv")}


def _stem(name: str) -> str:
    """``0_small_cnn_3_result_20261123233844.csv`` → ``0_small_cnn_3_result``."""
    return name.rpartition("_")[0]


def host_results(address: str, session: str, result_files: list[str], **options: object) -> dict[str, bytes]:
    """The closed session's result CSVs as the host serves them, by name without the time stamp."""
    from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
    from dumpcmp.proto._gen.dumpcmp_v1_pb2_grpc import DumpCompareStub
    from dumpcmp.proto.channel import ChannelOptions, open_channel

    channel = open_channel(ChannelOptions(address, **options))  # type: ignore[arg-type]
    try:
        stub = DumpCompareStub(channel)
        fetched = {}
        for name in result_files:
            if "result_" in name and name.endswith(".csv"):
                request = pb.FetchResultRequest(session=session, name=name)
                fetched[_stem(name)] = b"".join(c.data for c in stub.FetchResult(request, timeout=30))
        return fetched
    finally:
        channel.close()


def results_csv(host: HostProcess, session: str, out: Path, *options: object, address: str = "") -> Done:
    done = dumpcmp("host", "results", session, "--host", address or host.address, "--csv", out, *options)
    assert done.code == 0, done.output
    assert f"session {session}: closed" in done.output, done.output
    return done


def assert_csv_is_the_offline_tables(got: bytes, offline: dict[str, bytes]) -> None:
    """``host results --csv``: one result table is that table byte for byte; several (one per
    step) are their rows one after another, value for value, each led by the Device, Model and
    Step of its table, without a column that is NaN in every row."""
    if len(offline) == 1:
        assert got == next(iter(offline.values()))
        return
    table = list(csv.reader(io.StringIO(got.decode())))
    assert table[0][:3] == ["Device", "Model", "Step"], table[0]
    assert not [name for i, name in enumerate(table[0]) if all(row[i] == "NaN" for row in table[1:])]
    rows = iter(table[1:])
    for name in sorted(offline, key=_step_order):
        header, *want = csv.reader(io.StringIO(offline[name].decode()))
        keep = _positions(table[0], header)
        shard = name.removesuffix("_result").split("_")  # {device}_{model}_{step}_result
        for expected in want:
            row = next(rows)
            assert [row[i] for i in keep] == expected, name
            assert [row[0], *row[1].split("_"), row[2]] == shard, name
    assert next(rows, None) is None


def _step_order(stem: str) -> tuple[int, ...]:
    return tuple(int(part) for part in stem.split("_") if part.isdigit())


def _positions(every: list[str], columns: list[str]) -> list[int]:
    """Where ``columns`` sit in ``every`` (same order; names such as DataType repeat)."""
    positions: list[int] = []
    for column in columns:
        positions.append(every.index(column, positions[-1] + 1 if positions else 0))
    return positions


def session_info(address: str, session: str, **options: object) -> Any:
    """``GetSession`` of the host at ``address`` (a ``dumpcmp.v1.SessionInfo``)."""
    from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
    from dumpcmp.proto._gen.dumpcmp_v1_pb2_grpc import DumpCompareStub
    from dumpcmp.proto.channel import ChannelOptions, open_channel

    channel = open_channel(ChannelOptions(address, **options))  # type: ignore[arg-type]
    try:
        return DumpCompareStub(channel).GetSession(pb.GetSessionRequest(session=session), timeout=30)
    finally:
        channel.close()


def assert_results_are_offline_compare(
    host: HostProcess, session: str, tmp: Path, *cli_options: object, address: str = "", **options: object
) -> Done:
    """The closed session's result files, and ``host results --csv``, are what ``dumpcmp compare``
    writes for the dump files, golden data and fusion rule the host stored; the command's output."""
    address = address or host.address
    info = session_info(address, session, **options)
    offline = offline_results(host.session_dir(session), tmp / f"offline-{session}")
    assert offline
    assert host_results(address, session, list(info.result_files), **options) == offline
    got = tmp / f"results-{session}" / "r.csv"
    got.parent.mkdir()  # host results makes no directory for a --csv file
    shown = results_csv(host, session, got, *cli_options, address=address)
    assert_csv_is_the_offline_tables(got.read_bytes(), offline)
    assert not [p for p in got.parent.iterdir() if p != got]  # no temporary left beside it
    return shown


def assert_session_holds(
    host: HostProcess, session: str, want: dict[int, dict[str, bytes]], address: str = "", **options: object
) -> Any:
    """The session lists each wanted file once, and holds it byte for byte where a user finds it
    (``DATA/sessions/NAME/{dump,golden,inputs,rules}``), with no half file left; its info."""
    from dumpcmp.host.server.files import INCOMING_DIR, KIND_DIRS

    info = session_info(address or host.address, session, **options)
    directory = host.session_dir(session)
    assert info.data_dir == str(directory.resolve())
    for kind, files in want.items():
        listed = [f.path for f in info.files if f.kind == kind]
        assert len(listed) == len(set(listed)), KIND_DIRS[kind]
        assert sorted(listed) == sorted(files), KIND_DIRS[kind]
        assert files_under(directory / KIND_DIRS[kind]) == files, KIND_DIRS[kind]
    assert not list((directory / INCOMING_DIR).glob("*"))
    return info
