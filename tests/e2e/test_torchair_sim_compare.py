"""``sim run --torchair`` with one injected fault, then ``compare --mode torchair`` on what it wrote:
the faulty op is the first FAIL and nothing before it fails, in every layout, rank and mode."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from dumpcmp.cli import app

runner = CliRunner()
FAULT = "/block2/Add=bias:0.5"
FAULTY_GE_OP = "AddRelu_4"  # the fused GE op /block2/Add ends up in (sim run says so)


def cli(*args: object) -> Result:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


def _simulate(out: Path, *extra: str) -> Result:
    return cli("sim", "run", "zoo:small_cnn", "--out", out, "--torchair", "--inject", FAULT, *extra)


def _tables(out: Path) -> list[list[dict[str, str]]]:
    tables = []
    for path in sorted(out.glob("*compare_result_*.csv")):
        with path.open(newline="") as handle:
            tables.append(list(csv.DictReader(handle)))
    return tables


def _first_fault_row(rows: list[dict[str, str]]) -> int:
    return next(i for i, r in enumerate(rows) if r["API Name"] == f"{FAULTY_GE_OP}.output.0")


@pytest.mark.parametrize(
    ("layout", "ranks", "fx_dir"),
    [("new", 2, "msprobe_fx_dump"), ("legacy", 1, "msprobe_fx_dump"), ("old", 1, "data_dump")],
)
def test_the_faulty_op_is_the_first_fail_and_everything_before_it_passes(
    tmp_path: Path, layout: str, ranks: int, fx_dir: str
) -> None:
    sim = tmp_path / "sim"
    made = _simulate(sim, "--torchair-layout", layout, "--ranks", str(ranks))
    assert f"-> GE op {FAULTY_GE_OP}" in made.output
    out = tmp_path / "out"
    result = cli(
        "compare", "-m", "torchair", "-tp", sim / "msprobe_ge_dump", "-gp", sim / fx_dir, "-o", out, "-j", "1"
    )
    tables = _tables(out)
    assert len(tables) == ranks  # compare_result_… alone, or rank{R}_token0_… per rank
    for rows in tables:
        fault = _first_fault_row(rows)
        assert [r["Result"] for r in rows[:fault]] == ["PASS"] * fault
        assert rows[fault]["Result"] == "FAIL" and rows[fault]["Err_message"]
        assert all(r["Err_message"] for r in rows if r["Result"] == "FAIL")
        assert any(r["Result"] == "FAIL" for r in rows[fault + 1 :])  # the ops it feeds
    assert f"first FAIL: rank 0 token 0, {FAULTY_GE_OP}.output.0" in result.output


def test_md5_and_statistics_modes_on_the_simulated_run(tmp_path: Path) -> None:
    sim = tmp_path / "sim"
    _simulate(sim)
    ge, fx = sim / "msprobe_ge_dump", sim / "msprobe_fx_dump"
    for mode in ("md5", "statistics"):
        out = tmp_path / mode
        cli("compare", "-m", "torchair", "-tp", ge, "-gp", fx, "-o", out, "--summary-mode", mode)
        (rows,) = _tables(out)
        fault = _first_fault_row(rows)
        if mode == "md5":
            assert rows[fault]["Result"] == "FAIL", rows[fault]
            assert all(len(r["NPU MD5"]) == 8 and len(r["BENCH MD5"]) == 8 for r in rows)
        else:  # a 0.5 bias moves the mean, within the 0.5-of-its-size statistics rule
            assert float(rows[fault]["Mean diff"]) > 0.1 and rows[fault]["Result"] == "PASS"


def test_fusion_on_against_fusion_off(tmp_path: Path) -> None:
    sim = tmp_path / "sim"
    _simulate(sim, "--fusion-off-tree")
    out = tmp_path / "out"
    cli("compare", "-m", "torchair", "-tp", sim / "msprobe_ge_dump", "-gp", sim / "fusion_off", "-o", out)
    (rows,) = _tables(out)
    failing = [r["API Name"] for r in rows if r["Result"] == "FAIL"]
    assert failing and failing[0].startswith(FAULTY_GE_OP)


def test_reduced_data_gives_the_same_statistics_and_md5_columns(tmp_path: Path) -> None:
    sim = tmp_path / "sim"
    _simulate(sim)
    ge, fx = sim / "msprobe_ge_dump", sim / "msprobe_fx_dump"
    modes = {
        "md5": ("NPU MD5", "BENCH MD5"),
        "statistics": ("Max diff", "Min diff", "Mean diff", "L2norm diff"),
    }
    full = {}
    for mode in modes:
        cli(
            "compare",
            "-m",
            "torchair",
            "-tp",
            ge,
            "-gp",
            fx,
            "-o",
            tmp_path / f"full_{mode}",
            "--summary-mode",
            mode,
        )
        (full[mode],) = _tables(tmp_path / f"full_{mode}")
    cli("reduce", sim)
    assert not list(ge.rglob("Cast.*"))  # the originals are gone: only summaries are read
    for mode, columns in modes.items():
        cli("compare", "-m", "torchair", "-tp", ge, "-gp", fx, "-o", tmp_path / mode, "--summary-mode", mode)
        (rows,) = _tables(tmp_path / mode)
        keep = ("API Name", *columns, "Result")
        assert [[r[c] for c in keep] for r in rows] == [[r[c] for c in keep] for r in full[mode]]
    real = runner.invoke(app, ["compare", "-m", "torchair", "-tp", ge, "-gp", fx, "-o", tmp_path / "real"])
    assert real.exit_code == 1 and "nothing compared" in real.output and "statistics only" in real.output


@pytest.mark.parametrize("kept", [None, "min,max"])
def test_statistics_name_where_they_move_away_not_the_first_fail_downstream(
    tmp_path: Path, kept: str | None
) -> None:
    # The bias keeps the faulty op within the 0.5 statistics rule; the first FAIL and the
    # advisor's first divergence both named the last op, SoftmaxV2. Reduced to min and max (no
    # L2 norm, no golden values in a TorchAir table), the advisor still named SoftmaxV2.
    sim = tmp_path / "sim"
    _simulate(sim)
    ge, fx = sim / "msprobe_ge_dump", sim / "msprobe_fx_dump"
    if kept is not None:
        cli("reduce", ge, "--keep", kept)
        cli("reduce", fx, "--keep", kept)
    out = tmp_path / "out"
    result = cli("compare", "-m", "torchair", "-tp", ge, "-gp", fx, "-o", out, "--summary-mode", "statistics",
                 "--advisor")  # fmt: skip
    lines = result.output.splitlines()
    (moved,) = (line for line in lines if line.startswith("statistics move away"))
    assert moved.startswith(
        f"statistics move away from the golden's first at rank 0 token 0, {FAULTY_GE_OP}.output.0:"
    )
    assert any(
        line.startswith("first FAIL: rank 0 token 0, SoftmaxV2.output.0") for line in lines
    )  # the rule's
    (first,) = (line for line in lines if line.startswith("first divergence:"))
    assert first.startswith(f"first divergence: op #13 {FAULTY_GE_OP} ")
    assert "its statistics move away from the golden's here" in first and "accumulating" in first
    assert "Statistics cannot see noise or a permutation" in first  # the op blamed may be downstream


def test_an_infinite_statistic_against_a_finite_golden_fails_where_it_appears(tmp_path: Path) -> None:
    # inf/inf made its distance NaN, which passed: the first FAIL and the advisor named Conv2D_4.
    sim = tmp_path / "sim"
    cli("sim", "run", "zoo:small_cnn", "--out", sim, "--torchair", "--inject", "/block2/Add=inf:0.1")
    out = tmp_path / "out"
    result = cli("compare", "-m", "torchair", "-tp", sim / "msprobe_ge_dump", "-gp", sim / "msprobe_fx_dump",
                 "-o", out, "--summary-mode", "statistics", "--advisor")  # fmt: skip
    lines = result.output.splitlines()
    (fail,) = (line for line in lines if line.startswith("first FAIL:"))
    assert fail.startswith(f"first FAIL: rank 0 token 0, {FAULTY_GE_OP}.output.0: Max NPU inf")
    assert fail.endswith("where the other side is finite")
    (first,) = (line for line in lines if line.startswith("first divergence:"))
    assert first.startswith(f"first divergence: op #13 {FAULTY_GE_OP} ")


@pytest.mark.parametrize("kept", [None, "min,max"])
def test_statistics_of_a_fault_free_run_move_nowhere(tmp_path: Path, kept: str | None) -> None:
    sim = tmp_path / "sim"
    cli("sim", "run", "zoo:small_cnn", "--out", sim, "--torchair")
    if kept is not None:
        cli("reduce", sim, "--keep", kept)
    out = tmp_path / "out"
    result = cli("compare", "-m", "torchair", "-tp", sim / "msprobe_ge_dump", "-gp", sim / "msprobe_fx_dump",
                 "-o", out, "--summary-mode", "statistics", "--advisor")  # fmt: skip
    assert "statistics move away" not in result.output
    assert "statistics cannot place" not in result.output
    assert "no FAIL: all 77 compared tensor pairs PASS" in result.output
    assert "network consistent: all 77 compared tensors agree" in result.output
