"""The HTML report as a file: self-contained, data escaped, the flags that write it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dumpcmp.host.report.html import NO_GRAPH, render_html, write_html
from tests.host.report.reports_kit import HOSTILE, chain_graph, chain_table, simulated_result


def _json_block(page: str, block: str) -> object:
    found = re.search(rf'<script type="application/json" id="{block}">(.*?)</script>', page, re.S)
    assert found is not None
    return json.loads(found.group(1))


def test_the_page_loads_nothing_from_anywhere() -> None:
    page = render_html(chain_table(6, bad_from=3), graph=chain_graph(6))
    assert "Content-Security-Policy" in page and "connect-src 'none'" in page
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", page, re.I)
    assert page.count("<script") == 4  # data, figures, plotly.js inlined, the page's own


def test_hostile_op_names_stay_text() -> None:
    table = chain_table(4, bad_from=2, names={2: HOSTILE})
    page = render_html(table, graph=chain_graph(4, names={2: HOSTILE}))
    assert HOSTILE not in page  # nowhere raw: not in markup, not in a script block
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page  # the advisor's finding, escaped
    data = _json_block(page, "report-data")
    assert isinstance(data, dict) and HOSTILE in data["rows"][4]  # the json round-trips the name
    figures = _json_block(page, "report-figures")
    assert isinstance(figures, dict)
    hover = json.dumps(figures["graph"]["data"][-1]["text"])
    assert "&lt;script&gt;" in hover and "<script>" not in hover  # plotly labels read a few tags


def test_first_divergence_is_marked_on_the_metric_plot() -> None:
    figures = _json_block(render_html(chain_table(8, bad_from=5)), "report-figures")
    assert isinstance(figures, dict)
    layout = figures["metrics"]["layout"]
    assert layout["shapes"][0]["x0"] == 5 and "first divergence: op #5" in layout["annotations"][0]["text"]
    assert layout["yaxis2"]["type"] == "log"
    assert "graph" not in figures


def test_without_a_graph_the_section_says_how_to_get_one(tmp_path: Path) -> None:
    page = write_html(tmp_path / "r.html", chain_table(3)).read_text(encoding="utf-8")
    assert NO_GRAPH.split(":")[0] in page and 'id="graph-missing"' in page


def test_compare_writes_html_and_model_explorer_beside_the_result(tmp_path: Path) -> None:
    run = simulated_result(tmp_path, "--html", "--model-explorer")
    stem = run.result.with_suffix("")
    page = stem.with_suffix(".html").read_text(encoding="utf-8")
    figures = _json_block(page, "report-figures")
    assert isinstance(figures, dict) and "graph" in figures  # -fr gives the graph
    assert run.fault_op in json.dumps(figures["graph"]["data"][-1]["text"])
    overlay = json.loads(Path(f"{stem}_model_explorer_cosine.json").read_text())
    assert overlay["results"]["/stem/conv/Conv"]["value"] < 0.99
    assert Path(f"{stem}_model_explorer_max_rel_err.json").is_file()


def test_an_unreadable_graph_is_one_line_and_leaves_no_report(tmp_path: Path) -> None:
    from dumpcmp.errors import RuleFileError
    from dumpcmp.host.report.files import ReportRequest, reports_beside

    csv_path = tmp_path / "result_1.csv"
    header = "Index,NPUDump,TensorIndex,CosineSimilarity,RelativeEuclideanDistance"
    csv_path.write_text(f"{header}\n0,a,a:output:0,1,0\n")
    bad = tmp_path / "rules.json"
    bad.write_text("{")
    with pytest.raises(RuleFileError, match=r"rules\.json: not valid json"):
        reports_beside(csv_path, ReportRequest(html=True, graph=bad))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result_1.csv", "rules.json"]


def test_advise_writes_the_report_with_its_own_findings(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from dumpcmp.cli import app

    run = simulated_result(tmp_path)
    out = tmp_path / "advised"
    result = CliRunner().invoke(
        app, ["advise", str(run.result), "-o", str(out), "--html", "--graph", str(run.fusion_rule)]
    )
    assert result.exit_code == 0, result.output
    page = (out / run.result.with_suffix(".html").name).read_text(encoding="utf-8")
    first = result.output.splitlines()[0]
    assert first.startswith("first divergence: op #")
    assert '<span class="kind">first divergence</span>' + first.split(" - ")[0].split("divergence")[1] in page
    assert 'id="graph"' in page


def test_advise_with_an_unreadable_graph_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from dumpcmp.cli import app

    csv_path = tmp_path / "result_20260101000000.csv"
    header = "Index,NPUDump,TensorIndex,CosineSimilarity,RelativeEuclideanDistance"
    csv_path.write_text(f"{header}\n0,a,a:output:0,1,0\n")
    bad = tmp_path / "rules.json"
    bad.write_text('{"graph": 3}')
    result = CliRunner().invoke(app, ["advise", str(csv_path), "--html", "--graph", str(bad)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.strip() == f"Error: {bad}: 'graph' must be an array, got a number"
    assert sorted(p.name for p in tmp_path.iterdir()) == [csv_path.name, "rules.json"]
