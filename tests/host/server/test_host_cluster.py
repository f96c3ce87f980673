"""``host serve --cluster``: every session compares on a Dask cluster (two worker processes on the
loopback) and closes with offline compare's CSVs; an unreachable scheduler is one line; without
the option nothing imports Dask."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from dumpcmp.commands.sim import simulate
from dumpcmp.fakes.simulate import SimulationResult
from dumpcmp.host.core import FileRows
from dumpcmp.host.offline import run_compare
from dumpcmp.host.request import CompareRequest
from dumpcmp.host.server.serve import ClusterConfig, HostConfig, HostServer, start
from dumpcmp.host.workers import Work
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from tests.host.server.hostkit import Client, Hosts, session_settings, simulation_files

distributed = pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}  # the subprocesses run this checkout's dumpcmp
TIMEOUT = 120  # a bound for a machine other jobs load too; never reached when all is well
FAULT = "/block1.pw/conv/Conv=noise:0.5"


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> SimulationResult:
    return simulate("zoo:small_cnn", tmp_path_factory.mktemp("sim") / "run", steps=2, faults=(FAULT,), seed=3)


def _by_shard(paths: Iterator[Path]) -> dict[str, bytes]:
    """Result CSVs by name without the timestamp."""
    return {path.name.rsplit("_", 1)[0]: path.read_bytes() for path in paths}


@pytest.fixture(scope="module")
def expected(sim: SimulationResult, tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    request = CompareRequest(sim.npu_dump_dir, sim.golden_dir, fusion_rule=sim.fusion_rule)
    outcome = run_compare(replace(request, out_dir=tmp_path_factory.mktemp("offline")))
    csvs = _by_shard(iter([s.result_file for s in outcome.shards if s.result_file is not None]))
    assert len(csvs) == 2  # one per step: the sessions' batches span two plans
    return csvs


@pytest.fixture(scope="module")
def hosts() -> Iterator[Hosts]:
    made = Hosts()
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(scope="module")
def cluster_host(hosts: Hosts, tmp_path_factory: pytest.TempPathFactory) -> HostServer:
    return hosts.start(tmp_path_factory.mktemp("host") / "data", cluster=ClusterConfig("local:2", TIMEOUT))


@pytest.fixture
def client(hosts: Hosts, cluster_host: HostServer) -> Client:
    return hosts.client(cluster_host)


@pytest.fixture
def nothing_compared_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host process itself must not compare a file: the cluster's workers do."""

    def refuse(work: Work, start: int, stop: int) -> list[FileRows]:
        raise AssertionError("compared in the host process")

    monkeypatch.setattr(Work, "compare", refuse)  # what every local pool compares files through


def _session_csvs(client: Client, session: str) -> dict[str, bytes]:
    info = client.info(session)
    names = [n for n in info.result_files if "result_" in n and n.endswith(".csv")]
    return {name.rsplit("_", 1)[0]: client.fetch(session, name) for name in names}


@pytest.mark.usefixtures("nothing_compared_here")
def test_a_session_compared_on_the_cluster_closes_with_offline_compares_csvs(
    client: Client, cluster_host: HostServer, sim: SimulationResult, expected: dict[str, bytes]
) -> None:
    assert cluster_host.dashboard_link is not None
    assert cluster_host.dashboard_link.startswith("http://127.0.0.1:")
    client.open("s1", **session_settings())
    files = simulation_files(sim)
    # Dump files first: compared once the golden data lands, then again in a batch of their own.
    order = sorted(files, key=lambda key: key[0] != pb.DUMP)
    assert {a.status for a in client.send("s1", {key: files[key] for key in order})} == {pb.UploadAck.STORED}
    info = client.close("s1")
    assert info.state == pb.SessionInfo.CLOSED
    assert _session_csvs(client, "s1") == expected


@pytest.mark.usefixtures("nothing_compared_here")
def test_sessions_uploaded_one_file_at_a_time_share_the_cluster(
    hosts: Hosts, cluster_host: HostServer, sim: SimulationResult, expected: dict[str, bytes]
) -> None:
    clients = [hosts.client(cluster_host) for _ in range(2)]
    for number, client in enumerate(clients):
        client.open(f"one-by-one{number}", **session_settings())
    for key, data in simulation_files(sim).items():  # each file its own upload: many small batches
        for number, client in enumerate(clients):
            client.send(f"one-by-one{number}", {key: data})
    for number, client in enumerate(clients):
        client.close(f"one-by-one{number}")
        assert _session_csvs(client, f"one-by-one{number}") == expected


def test_stopping_the_host_stops_the_local_cluster_it_started(tmp_path: Path) -> None:
    before = set(multiprocessing.active_children())
    server = start(HostConfig("127.0.0.1:0", tmp_path / "data", cluster=ClusterConfig("local:1", TIMEOUT)))
    started = set(multiprocessing.active_children()) - before
    assert started  # the cluster's worker process
    server.stop(grace=0)
    assert not set(multiprocessing.active_children()) & started


def _cli(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    script = "import sys; from dumpcmp.cli import main; sys.argv[0] = 'dumpcmp'; main()"
    command = [sys.executable, "-c", script, "host", "serve", *(str(a) for a in args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, cwd=cwd, env=ENV)


def test_an_unreachable_scheduler_is_one_line_and_nothing_listens(tmp_path: Path) -> None:
    done = _cli(
        "--data", "data", "--listen", "127.0.0.1:0",
        "--cluster", "tcp://127.0.0.1:1", "--cluster-timeout", "0.5",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith(
        "Error: cannot reach the Dask scheduler at tcp://127.0.0.1:1 (timeout 0.5 s): "
    )
    assert "listening" not in done.stdout
    assert list(tmp_path.iterdir()) == []  # not even the data directory


def test_a_host_without_cluster_imports_no_dask(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "import dumpcmp.commands.host\n"
        "from dumpcmp.host.server.serve import HostConfig, start\n"
        f"server = start(HostConfig('127.0.0.1:0', Path({str(tmp_path / 'data')!r})))\n"
        "server.stop(grace=0)\n"
        "print(sorted(m for m in ('dask', 'distributed', 'dumpcmp.host.cluster') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=TIMEOUT, env=ENV
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


def test_host_serve_on_a_local_cluster_prints_its_dashboard_and_stops_it(tmp_path: Path) -> None:
    psutil = pytest.importorskip("psutil")
    script = "import sys; from dumpcmp.cli import main; sys.argv[0] = 'dumpcmp'; main()"
    command = [sys.executable, "-c", script, "host", "serve", "--listen", "127.0.0.1:0", "--data", "data"]
    command += ["--cluster", "local:1"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=ENV
    ) as host:
        watchdog = threading.Timer(TIMEOUT, host.kill)  # a host that never says it listens fails the test
        watchdog.start()
        try:
            assert host.stdout is not None
            first = host.stdout.readline()
            assert first.startswith("dumpcmp host listening on 127.0.0.1:"), first + host.communicate()[1]
            workers = psutil.Process(host.pid).children(recursive=True)
            assert workers  # the cluster's worker process (and Python's helpers for starting it)
            host.send_signal(signal.SIGTERM)
            stdout, stderr = host.communicate(timeout=TIMEOUT)
        finally:
            watchdog.cancel()
    assert host.returncode == 0, stderr
    assert stdout.strip() == "host stopped"
    assert stderr.startswith("Dask dashboard: http://127.0.0.1:"), stderr
    assert "Traceback" not in stderr
    _, alive = psutil.wait_procs(workers, timeout=TIMEOUT)
    assert not alive
