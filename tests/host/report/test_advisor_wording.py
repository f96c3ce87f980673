"""How the advisor words what it found: capped suspects, unbounded growth, one block per shard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dumpcmp.commands.advise import advise_results
from dumpcmp.host.report.advisor import advise, write_advice
from tests.commands.test_advise_cli import STAMP, write_csv
from tests.host.report.tables import offline, offline_table


def test_suspects_beyond_ten_are_counted_in_one_line_and_all_kept_in_the_json(tmp_path: Path) -> None:
    rows = []
    for i in range(12):  # every op grows its error 100x (and more, later): 12 suspects
        rows += [offline(i, f"op{i}", "input", red=0.001 * (i + 1)), offline(i, f"op{i}", cos=0.5, red=0.9)]
    advice = advise(offline_table(*rows))
    suspects = [line for line in advice.lines() if line.startswith("suspect")]
    assert len(suspects) == 11 and suspects[-1].startswith("suspects: 2 more")
    _, data = write_advice(advice, tmp_path, STAMP)
    assert len(json.loads(data.read_text())["suspects"]) == 12


def test_an_error_growing_from_zero_to_inf_is_not_infx() -> None:
    table = offline_table(offline(0, "a", "input", red=0.0), offline(0, "a", cos=0.5, red="inf"))
    (suspect,) = advise(table).suspects
    assert "infx" not in suspect.line() and "without bound" in suspect.line()


def test_the_shards_of_a_run_are_one_block_and_each_run_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = write_csv(tmp_path / f"0_net_0_result_{STAMP}.csv")
    second = write_csv(tmp_path / f"0_net_1_result_{STAMP}.csv")
    other = write_csv(tmp_path / "0_net_0_result_20261124010204.csv")  # another run, a second later
    advise_results([first, second, other])
    out = capsys.readouterr().out
    # One block for the two steps of the first run, one for the other run's single shard.
    assert out.count("advisor findings for ") == 2 and out.count("first divergence: op #1") == 2
    assert f"advisor findings for {tmp_path / f'result_{STAMP}'} (2 shards):" in out
    assert f"advisor findings for {other}:" in out
    assert "shards: 2 (steps 0, 1), diverging: 2 (steps 0, 1); the first: step 0" in out
    assert {p.name for p in tmp_path.glob("*advisor_*.txt")} == {
        f"advisor_{STAMP}.txt",
        "0_net_0_advisor_20261124010204.txt",
    }
