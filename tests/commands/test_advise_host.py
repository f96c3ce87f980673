"""``dumpcmp advise --host ADDR --session NAME``: a session's result files, or its rows so far."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dumpcmp.cli import app
from dumpcmp.commands.sim import simulate
from dumpcmp.fakes.simulate import SimulationResult
from dumpcmp.host.server.serve import HostServer
from tests.host.server.hostkit import (  # noqa: F401 (fixtures: host, hosts)
    Hosts,
    host_fixture,
    hosts_fixture,
    offline_csv,
    session_settings,
    simulation_files,
)

runner = CliRunner()


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> SimulationResult:
    return simulate("zoo:small_cnn", tmp_path_factory.mktemp("sim") / "run", faults=("/head/fc/Gemm=bias",))


def advise(*args: object) -> tuple[int, str]:
    result = runner.invoke(app, ["advise", *map(str, args)])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def test_a_closed_session_is_advised_like_its_result_file(
    hosts: Hosts, host: HostServer, sim: SimulationResult, tmp_path: Path
) -> None:
    client = hosts.client(host)
    client.open("s1", **session_settings())
    client.send("s1", simulation_files(sim))
    client.close("s1")
    code, output = advise("--host", f"127.0.0.1:{host.port}", "--session", "s1", "-o", tmp_path / "adv")
    assert code == 0, output
    local = tmp_path / "local" / "result.csv"
    local.parent.mkdir()
    local.write_bytes(offline_csv(sim, tmp_path / "offline"))
    code, expected = advise(local, "-o", tmp_path / "local_adv")
    assert code == 0, expected
    assert output.splitlines()[:-1] == expected.splitlines()[:-1]  # the findings; then where they went
    assert output.startswith("first divergence: op #16 /head/fc/Gemm - inputs agree")
    assert len(list((tmp_path / "adv").glob("advisor_*.txt"))) == 1


def test_an_open_session_without_rows_says_nothing_was_compared(
    hosts: Hosts, host: HostServer, tmp_path: Path
) -> None:
    hosts.client(host).open("s2")
    code, output = advise("--host", f"127.0.0.1:{host.port}", "--session", "s2", "-o", tmp_path)
    assert code == 0, output
    assert output.startswith("nothing compared: the table has no rows")
    assert len(list(tmp_path.glob("s2_advisor_*.json"))) == 1


def test_an_unknown_session_is_one_line(hosts: Hosts, host: HostServer, tmp_path: Path) -> None:
    code, output = advise("--host", f"127.0.0.1:{host.port}", "--session", "nope", "-o", tmp_path / "o")
    assert code == 1 and len(output.strip().splitlines()) == 1, output
    assert "nope" in output and not (tmp_path / "o").exists()
