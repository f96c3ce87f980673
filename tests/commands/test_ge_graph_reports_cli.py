"""TorchAir reports draw each rank's GE graph: ``compare -m torchair --html``, ``advise --graph``."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from dumpcmp.cli import app
from dumpcmp.fakes.torchair import simulate_torchair
from dumpcmp.host.report.grading import Grade
from dumpcmp.host.report.html import COLOURS

runner = CliRunner()
FAULT = "/attn.k_proj/Add"  # lands in GE op Add_1
FUSED = "RealDivSoftmaxV2"  # the attention's buffer-fused RealDiv + SoftmaxV2
EXTRA = "rank1_only"


@dataclass(frozen=True)
class Compared:
    sim_dir: Path
    out: Path
    output: str
    fault_op: str


def _cli(*args: object) -> Result:
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> Compared:
    """Two ranks with a fault; rank 1's optimized graph holds one op more, so whose graph a
    report draws shows."""
    tmp = tmp_path_factory.mktemp("ge-graph")
    sim = simulate_torchair("zoo:transformer_block", tmp / "sim", faults=[f"{FAULT}=bias:0.5"], ranks=2)
    (rank1,) = [p for p in sim.graph_files if p.name.startswith("dynamo_optimized_graph_1_rank_1_")]
    text = rank1.read_text()
    extra = f'  op {{\n    name: "{EXTRA}"\n    type: "Relu"\n    input: "Add_8:0"\n  }}\n}}\n'
    rank1.write_text(text[: text.rstrip().rindex("}")] + extra)
    out = tmp / "out"
    result = _cli("compare", "-m", "torchair", "-tp", sim.ge_dump_dir, "-gp", sim.fx_dump_dir, "-o", out,
                  "--html", "--model-explorer")  # fmt: skip
    assert result.exit_code == 0, result.output
    return Compared(tmp, out, result.output, sim.fault_ge_ops[FAULT])


def _graph(page: Path) -> list[dict[str, Any]]:
    found = re.search(
        r'<script type="application/json" id="report-figures">(.*?)</script>', page.read_text(), re.S
    )
    assert found is not None
    traces = json.loads(found.group(1))["graph"]["data"]
    assert isinstance(traces, list)
    return traces


def _colour(nodes: dict[str, Any], name: str) -> str:
    """The marker colour of the node whose hover text starts ``op #K {name}``."""
    (index,) = [i for i, t in enumerate(nodes["text"]) if t.split("<br>")[0].endswith(f" {name}")]
    return str(nodes["marker"]["color"][index])


def _shard_graphs(page: Path) -> dict[str, list[dict[str, Any]]]:
    """Each shard's graph traces in a run's one report, by the shard's label."""
    found = re.search(
        r'<script type="application/json" id="report-shards">(.*?)</script>', page.read_text(), re.S
    )
    assert found is not None
    return {shard["label"]: shard["figures"]["graph"]["data"] for shard in json.loads(found.group(1))}


def test_the_run_s_report_draws_each_rank_s_graph_fused_op_linked_fault_red(compared: Compared) -> None:
    (page,) = compared.out.glob("compare_result_*.html")  # one report for both ranks
    graphs = _shard_graphs(page)
    assert list(graphs) == ["rank 0", "rank 1"] and _graph(page) == graphs["rank 0"]
    for rank in (0, 1):
        traces = graphs[f"rank {rank}"]
        nodes = traces[-1]
        hover = json.dumps(nodes["text"])
        assert (EXTRA in hover) == (rank == 1)
        assert _colour(nodes, compared.fault_op) == COLOURS[Grade.RED]
        assert _colour(nodes, "BatchMatMulV2_1") == COLOURS[Grade.GREEN]  # the op before the fault
        links = next(t for t in traces if t["name"] == "original ops")
        assert f"original op RealDiv<br>fused into {FUSED}" in links["text"]
        assert f"original op SoftmaxV2<br>fused into {FUSED}" in links["text"]


def test_model_explorer_overlays_of_a_torchair_run_are_keyed_by_fx_node(compared: Compared) -> None:
    (overlay,) = compared.out.glob("rank0_token0_compare_result_*_model_explorer_cosine.json")
    results = json.loads(overlay.read_text())["results"]
    assert results["add_1"]["value"] < 0.99  # the FX node of the faulty GE op Add_1
    assert results["add"]["value"] > 0.99
    assert "_softmax" in results and not any("/" in name or name.endswith(".npy") for name in results)


def test_advise_draws_a_ge_graph_dump_given_with_graph(compared: Compared, tmp_path: Path) -> None:
    result_csv = next(compared.out.glob("rank0_token0_compare_result_*.csv"))
    graph = next((compared.sim_dir / "sim" / "msprobe_ge_dump").glob("dynamo_optimized_graph_1_rank_0_*.txt"))
    out = tmp_path / "advised"
    result = _cli("advise", result_csv, "-o", out, "--html", "--graph", graph)
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"first divergence: op #9 {compared.fault_op} (originals: add_1)")
    traces = _graph(out / result_csv.with_suffix(".html").name)
    assert _colour(traces[-1], compared.fault_op) == COLOURS[Grade.RED]
    assert any(t["name"] == "original ops" for t in traces)  # the original dump found beside it


def test_advise_with_a_graph_file_of_neither_kind_is_one_line_and_writes_nothing(
    compared: Compared, tmp_path: Path
) -> None:
    result_csv = tmp_path / next(compared.out.glob("rank0_token0_compare_result_*.csv")).name
    result_csv.write_bytes(next(compared.out.glob("rank0_*.csv")).read_bytes())
    wrong = tmp_path / "notes.txt"
    wrong.write_text("these are my notes\n")
    result = _cli("advise", result_csv, "--html", "--graph", wrong)
    assert result.exit_code == 1 and "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"Error: {wrong}: neither an ATC fusion rule json (atc --mode=1) nor a GE graph dump"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([result_csv.name, wrong.name])
