"""``dumpcmp advise --host ADDR --session NAME``: a session's result files, or its rows so far."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dumpcmp.cli import app
from dumpcmp.commands.sim import simulate
from dumpcmp.fakes.simulate import SimulationResult
from dumpcmp.host.offline import run_compare
from dumpcmp.host.request import CompareRequest
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
    # Advised as if final: the dump files still coming may hold the first divergence.
    assert output.strip().splitlines()[-1] == (
        "session s2 is open: the findings cover only its rows so far (not final until it closes)"
    )
    assert len(list(tmp_path.glob("s2_advisor_*.json"))) == 1


def test_an_unknown_session_is_one_line(hosts: Hosts, host: HostServer, tmp_path: Path) -> None:
    code, output = advise("--host", f"127.0.0.1:{host.port}", "--session", "nope", "-o", tmp_path / "o")
    assert code == 1 and len(output.strip().splitlines()) == 1, output
    assert "nope" in output and not (tmp_path / "o").exists()


@pytest.mark.parametrize("steps", [1, 2])
def test_a_closed_statistics_session_is_advised_like_its_result_files(
    hosts: Hosts, host: HostServer, tmp_path: Path, steps: int
) -> None:
    config = tmp_path / "stats.json"
    (tmp_path / "stats-dump").mkdir()
    dump_list = [{"model_name": "small_cnn"}]
    dump = {"dump_path": str(tmp_path / "stats-dump"), "dump_data": "stats", "dump_list": dump_list}
    config.write_text(json.dumps({"dump": dump}))
    fault = ("/head/fc/Gemm=bias",)
    stats = simulate("zoo:small_cnn", tmp_path / "run", steps=steps, acl_config=config, faults=fault)
    client, session = hosts.client(host), f"st{steps}"
    client.open(session, **session_settings())
    client.send(session, simulation_files(stats))
    client.close(session)
    code, output = advise("--host", f"127.0.0.1:{host.port}", "--session", session, "-o", tmp_path / "adv")
    assert code == 0, output
    offline = tmp_path / "offline"
    request = CompareRequest(
        target=stats.npu_dump_dir, golden=stats.golden_dir, fusion_rule=stats.fusion_rule, out_dir=offline
    )
    run_compare(request)
    code, expected = advise(offline, "-o", tmp_path / "local_adv")
    assert code == 0, expected
    assert output.splitlines()[:-1] == expected.splitlines()[:-1]
    assert "first divergence: op #" in output
