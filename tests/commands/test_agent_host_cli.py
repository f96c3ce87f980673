"""``dumpcmp agent run`` into a real host on loopback, then ``dumpcmp host``, as a new user runs
them: what they say and how they exit when the comparison cannot be made, or was first set up
wrong and is then given what it lacked."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dumpcmp.cli import app
from dumpcmp.commands.sim import simulate
from dumpcmp.fakes.simulate import SimulationResult
from dumpcmp.host.offline import CompareRequest, run_compare
from dumpcmp.host.server.serve import HostServer
from dumpcmp.host.summary import nothing_compared
from dumpcmp.host.verdict import Thresholds
from tests.host.server.hostkit import (  # noqa: F401 (fixtures: host, hosts)
    Hosts,
    host_fixture,
    hosts_fixture,
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
    # The host names its own copy of the rule file.
    line = line.replace(str(OTHER_MODELS_RULE), str(tmp_path / "data/sessions/s8/rules/tdnn.om.json"))
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
