"""A summary of a run captured twice, statistics of every op and tensors of a few (a hunt's
passes): its "it may start earlier" lines name the run's ops, numbered as the run numbers them,
not by the few-op capture's own numbering."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from dumpcmp.cli import app
from dumpcmp.commands.sim import simulate
from dumpcmp.proto.names import parse_dump_name
from tests.e2e.test_sim_compare import _stats_simulation as stats_simulation

FAULT = "/block2/Add=bias:1"
WINDOW = (7, 8, 9)  # the task ids of /block2.gconv (index 6), /block2.pw/conv/Conv (7), /block2/Add (8)


def _two_captures(tmp_path: Path, window: tuple[int, ...], cut: int | None = None) -> list[str]:
    """small_cnn's statistics of every op, then tensors of the ops of tasks ``window`` as a
    capture of its own (another model load, as a hunt's pass is; the dump file of task ``cut``
    cut short), compared together."""
    dump, _, _ = stats_simulation(tmp_path, (FAULT,))
    (stats_dir,) = {p.parent for p in dump.rglob("*.csv")}
    sim = simulate("zoo:small_cnn", tmp_path / "tensors", faults=(FAULT,), seed=2)
    assert sim.run_dir is not None
    window_dir = stats_dir.parent.parent / "2" / "0"
    window_dir.mkdir(parents=True)
    for path in (sim.run_dir / "0").iterdir():
        task = parse_dump_name(path.name).task_id if path.is_file() else None
        if task in window:
            data = path.read_bytes()
            (window_dir / path.name).write_bytes(data[:100] if task == cut else data)
    result = CliRunner().invoke(
        app, ["compare", "-tp", str(dump), "-gp", str(sim.golden_dir), "-fr", str(sim.fusion_rule),
              "-o", str(tmp_path / "out")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def _after_first_divergence(lines: list[str]) -> list[str]:
    at = next(i for i, line in enumerate(lines) if line.startswith("first divergence: "))
    assert "index 8 Add /block2/Add" in lines[at], lines[at]  # the run's numbering, not the pass's 2
    return lines[at + 1 :]


def test_an_op_missing_from_the_few_op_capture_is_named_as_the_run_numbers_it(tmp_path: Path) -> None:
    # The tensors of /block2.pw/conv/Conv (task 8) not captured: the warning said "index 8 counts
    # the dumped ops only", of an index the run's statistics gave, and named no op.
    following = _after_first_divergence(_two_captures(tmp_path, (7, 9)))
    assert following[0] == (
        "warning: it may start earlier: index 7 Conv2D /block2.pw/conv/Conv, right before it, was not "
        "in its dump (its task ids skip from 7 to 9)"
    ), following


def test_an_unreadable_file_of_the_few_op_capture_is_numbered_as_the_run(tmp_path: Path) -> None:
    # The tensor dump of /block2.pw/conv/Conv cut short: it was "index 1", its place in the pass.
    following = _after_first_divergence(_two_captures(tmp_path, WINDOW, cut=8))
    assert following[0] == (
        "warning: it may start earlier: 1 unreadable dump file right before it could not be compared:"
    )
    assert following[1].startswith("  index 7 Conv2D _block2_pw_conv_Conv ("), following
