"""``compare -d OP`` twice into one ``-o``: detail files are never overwritten, as result files are not."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from dumpcmp.cli import app

runner = CliRunner()
OP = "stem_conv1_Conv2D_fused_relu"


def test_a_second_detail_into_one_output_directory_keeps_the_first(
    shared_fixtures: Path, tmp_path: Path
) -> None:
    dumps = shared_fixtures / "dumps" / "20261121093000"
    args = ["compare", "-tp", str(dumps), "-gp", str(dumps), "-o", str(tmp_path), "-d", OP]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    summary = tmp_path / f"{OP}_output_0_summary.txt"
    summary.write_text("the first run's summary, annotated by its user\n")
    second = runner.invoke(app, args)
    assert second.exit_code == 0, second.output
    assert "Traceback" not in second.output
    assert summary.read_text() == "the first run's summary, annotated by its user\n"
    detail = [line for line in second.output.splitlines() if line.startswith("detail (step 0): ")]
    assert [Path(line.split(": ", 1)[1]).name for line in detail] == [
        f"{OP}_output_0_summary_1.txt",
        f"{OP}_output_0_0_1.csv",
    ]
    names = sorted(p.name for p in tmp_path.iterdir())
    assert [n for n in names if n.startswith(OP)] == [
        f"{OP}_output_0_0.csv",
        f"{OP}_output_0_0_1.csv",
        f"{OP}_output_0_summary.txt",
        f"{OP}_output_0_summary_1.txt",
    ]
    assert len([n for n in names if n.startswith("result_")]) == 2
    assert not [n for n in names if n.startswith(".")]  # no temporary left behind
