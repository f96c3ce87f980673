"""NaN in the data: the HTML plot and the Model Explorer overlays show it as the worst value."""

from __future__ import annotations

from pathlib import Path

from dumpcmp.commands.sim import simulate
from dumpcmp.host.offline import run_compare
from dumpcmp.host.report.html import render_html
from dumpcmp.host.report.model_explorer import OVERLAYS, RED, node_data
from dumpcmp.host.report.table import ResultTable, read_result
from dumpcmp.host.request import CompareRequest
from tests.host.report.test_html import _json_block

FAULT = "/block3/conv/Conv"


def nan_run(tmp_path: Path) -> tuple[ResultTable, int]:
    """small_cnn with NaN injected at the block3 conv; the table and the faulty op's Index."""
    sim = simulate("zoo:small_cnn", tmp_path / "sim", faults=(f"{FAULT}=nan",))
    request = CompareRequest(
        target=sim.npu_dump_dir, golden=sim.golden_dir, fusion_rule=sim.fusion_rule, out_dir=tmp_path / "r"
    )
    (shard,) = run_compare(request).shards
    assert shard.result_file is not None
    table = read_result(shard.result_file)
    culprit = next(r.order for r in table.targets() if r.op_name == sim.fault_npu_ops[FAULT])
    assert culprit is not None
    return table, culprit


def test_nan_outputs_are_plotted_as_the_worst_value(tmp_path: Path) -> None:
    table, culprit = nan_run(tmp_path)
    figures = _json_block(render_html(table), "report-figures")
    assert isinstance(figures, dict)
    cosine, *_ = figures["metrics"]["data"]
    crosses = next(t for t in figures["metrics"]["data"] if t["name"] == "NaN/inf (worst) cosine")
    last = max(r.order for r in table.targets() if r.order is not None)
    # The culprit and every op after it: crosses at the bottom edge, hover saying NaN.
    assert crosses["x"] == list(range(culprit, last + 1))
    finite = [y for y in cosine["y"] if y is not None]
    assert all(y < min(finite) for y in crosses["y"]) and "worst cosine: NaN" in crosses["text"][0]
    # Never the inputs' values in the culprit's place (its inputs are fine).
    assert cosine["y"][cosine["x"].index(culprit)] is None


def test_model_explorer_keeps_the_nan_op_and_every_later_one_in_red(tmp_path: Path) -> None:
    table, _ = nan_run(tmp_path)
    cosine = node_data(table, OVERLAYS[0])
    assert cosine is not None
    results = cosine["results"]
    assert isinstance(results, dict)
    for node in (FAULT, "/head/fc/Gemm", "/head/Softmax"):
        assert results[node] == {"value": -1.0, "bgColor": RED}, node
