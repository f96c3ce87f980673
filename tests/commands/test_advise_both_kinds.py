"""A dump of one run holding tensor dumps and statistics dumps (``result_*`` and
``stats_result_*`` of the same shard) is advised as one shard: one walk of its ops, the tensor
rows first, the statistics rows for the ops without a tensor dump; not as two shards, each
looking like a step of its own."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from typer.testing import CliRunner

from dumpcmp.cli import app
from dumpcmp.commands.sim import simulate
from dumpcmp.proto.names import parse_dump_name
from tests.commands.test_advise_cli import STAMP, files
from tests.commands.test_advise_stats import stats_row, write_stats
from tests.e2e.test_sim_compare import _stats_simulation as stats_simulation
from tests.host.report.tables import OFFLINE_HEADER, offline

runner = CliRunner()
BY_STATISTICS = "(by its statistics: the shard has no tensor dump of it)"


def write_tensors(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([OFFLINE_HEADER, *rows])
    return path


def one_shard(directory: Path, prefix: str = "") -> None:
    """Tensors of conv and relu (both agree), statistics of every op: relu's FAIL (its tensors
    say otherwise, and win), add's output FAIL though its input passes."""
    directory.mkdir(parents=True, exist_ok=True)
    write_tensors(directory / f"{prefix}result_{STAMP}.csv", [offline(0, "conv"), offline(1, "relu")])
    write_stats(
        directory / f"{prefix}stats_result_{STAMP}.csv",
        [
            stats_row(0, "conv", "output", "PASS"),
            stats_row(1, "relu", "output", "FAIL", "45%"),
            stats_row(2, "add", "input", "PASS"),
            stats_row(2, "add", "output", "FAIL", "40.5%"),
            stats_row(3, "out", "output", "FAIL", "30%"),
        ],
    )


def test_a_shard_of_both_kinds_is_one_walk_of_its_ops(tmp_path: Path) -> None:
    one_shard(tmp_path)
    result = runner.invoke(app, ["advise", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    # Was "shards: 2 ((whole run), stats)", relu blamed from its statistics in a shard "stats".
    assert not any(line.startswith("shards:") for line in lines), result.output
    assert lines[0].startswith("first divergence: op #2 add - inputs agree, output 0 does not"), lines[0]
    assert BY_STATISTICS in lines[0]
    # every op before it compared by its tensors, which agree: statistics hide nothing upstream
    assert "Statistics cannot see noise" not in lines[0]
    assert "relu" not in result.output
    assert {f"advisor_{STAMP}.txt", f"advisor_{STAMP}.json"} <= set(files(tmp_path))
    assert not [name for name in files(tmp_path) if name.startswith("stats_advisor")]


def test_the_steps_of_a_run_of_both_kinds_are_its_shards(tmp_path: Path) -> None:
    for step in (0, 1):
        one_shard(tmp_path, f"0_net_{step}_")
    result = runner.invoke(app, ["advise", str(tmp_path), "--html"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    # Was two runs, "result_…" and "stats_result_…", each of 2 shards and advised on its own.
    assert lines[0] == (
        "shards: 2 (steps 0, 1), diverging: 2 (steps 0, 1); the first: step 0, first divergence at op #2 add"
    ), result.output
    assert lines[1].startswith("first divergence: op #2 add") and lines[1].endswith(
        "[in all 2 shards; as in step 0]"
    )
    assert sum(line.startswith("advisor: ") for line in lines) == 1
    report = (tmp_path / f"result_{STAMP}.html").read_text(encoding="utf-8")
    labels = re.findall(r'<option value="\d+">([^<]*)</option>', report)
    assert labels == ["step 0", "step 0, statistics", "step 1", "step 1, statistics"], labels


def test_compare_advisor_of_a_tree_of_both_kinds_gives_one_finding(tmp_path: Path) -> None:
    fault = "/block2/Add=bias:1"
    dump, _, _ = stats_simulation(tmp_path, (fault,))
    (step_dir,) = {p.parent for p in dump.rglob("*.csv")}
    sim = simulate("zoo:small_cnn", tmp_path / "tensors", faults=(fault,), seed=2)
    assert sim.run_dir is not None
    for path in (sim.run_dir / "0").iterdir():  # tensors of the ops before the faulty Add (task 9)
        if parse_dump_name(path.name).task_id < 9:
            (step_dir / path.name).write_bytes(path.read_bytes())
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["compare", "-tp", str(dump), "-gp", str(sim.golden_dir), "-fr", str(sim.fusion_rule),
              "-o", str(out), "--advisor"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    advice = result.output.split("advisor findings:\n")[1].splitlines()
    # Was "shards: 2 ((whole run), stats), diverging: 1 (stats)" and "network consistent … [only in
    # (whole run)]" beside the statistics' first divergence.
    assert advice[0].startswith("first divergence: op #8 /block2/Add - inputs agree"), result.output
    assert BY_STATISTICS in advice[0]
    assert not [line for line in advice if line.startswith(("shards:", "network consistent"))], result.output
    assert len(list(out.glob("advisor_*.txt"))) == 1
