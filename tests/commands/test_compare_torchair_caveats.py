"""TorchAir summaries that must not read as more certain than they are: a first FAIL right after
a pair that could not be compared, and an all-PASS of statistics only."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from dumpcmp.cli import app

runner = CliRunner()


def invoke(*args: object) -> list[str]:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def simulated(tmp: Path, fault: str) -> Path:
    invoke("sim", "run", "zoo:small_cnn", "--torchair", "-o", tmp / "sim", "--inject", fault)
    return tmp / "sim"


def compare(sim: Path, out: Path, *extra: str) -> list[str]:
    return invoke(
        "compare", "-m", "torchair", "-tp", sim / "msprobe_ge_dump", "-gp", sim / "msprobe_fx_dump",
        "-o", out, *extra,
    )  # fmt: skip


def test_a_first_fail_after_an_unreadable_pair_warns_it_may_start_earlier(tmp_path: Path) -> None:
    sim = simulated(tmp_path, "/block2/Add=bias:0.5")
    (relu,) = sim.rglob("relu_4-*OUTPUT.0.*.npy")
    relu.write_bytes(relu.read_bytes()[:100])  # cut short
    lines = compare(sim, tmp_path / "out")
    first = next(i for i, line in enumerate(lines) if line.startswith("first FAIL:"))
    assert lines[first + 1].startswith("warning: it may start earlier: 1 tensor pair right before it")
    assert "bench tensor unreadable" in lines[first + 2] and relu.name in lines[first + 2]


def test_an_all_pass_of_statistics_says_what_statistics_cannot_see(tmp_path: Path) -> None:
    sim = simulated(tmp_path, "/block2/Add=noise")
    lines = compare(sim, tmp_path / "out", "--summary-mode", "statistics")
    assert lines[-2].startswith("no FAIL: all ") and lines[-2].endswith(" compared tensor pairs PASS")
    assert lines[-1].startswith("note: statistics mode compares max, min, mean and L2 norm only")
    real = compare(sim, tmp_path / "real")
    assert not any(line.startswith("note: statistics") for line in real)
