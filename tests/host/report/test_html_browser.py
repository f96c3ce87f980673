"""The HTML report in a real browser: Debian's headless Chromium, driven by Playwright.

Every page is opened from file:// with all other requests aborted and recorded, so "opens
offline" is checked, not assumed. Screenshots are written to ``tests/artifacts/`` (gitignored;
CI may keep them) and their paths printed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from dumpcmp.host.report.graph import load_graph
from dumpcmp.host.report.html import write_html
from dumpcmp.host.report.table import read_result, table_from_cells
from tests.host.report.reports_kit import (
    HOSTILE,
    chain_cells,
    chain_graph,
    chain_table,
    op_name,
    simulated_result,
)

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
# Without the networking switches Chromium reaches for Google's services at every start.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
WAIT_MS = 120_000  # bound on every wait; a loaded CI machine is slow, never infinite
MAX_BYTES = 20 * 1024 * 1024

if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} not found (Debian: apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install .[test])"
)


@dataclass
class Page:
    """A page and what it did: console errors, page errors, requests other than file://."""

    page: Any
    errors: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)

    def open(self, path: Path) -> float:
        """Load ``path``; seconds until the report says it is drawn."""
        start = time.monotonic()
        self.page.goto(path.as_uri(), timeout=WAIT_MS)
        self.page.wait_for_selector("body[data-ready='1']", state="attached", timeout=WAIT_MS)
        return time.monotonic() - start

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        target = ARTIFACTS / name
        self.page.screenshot(path=str(target), full_page=True)
        print(f"screenshot: {target}")
        return target


@pytest.fixture
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    # One browser per test: Playwright's loop threads end with it (tests may leave no thread).
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=str(CHROMIUM), args=FLAGS, headless=True,
            viewport={"width": 1400, "height": 1000}, timeout=WAIT_MS,
        )  # fmt: skip
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    tab = browser.new_page()
    watched = Page(tab)

    def route(handle: Any) -> None:
        url = handle.request.url
        if url.startswith("file:"):
            handle.continue_()
        else:
            watched.outside.append(url)
            handle.abort()

    tab.route("**/*", route)
    tab.on("console", lambda m: watched.errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: watched.errors.append(str(e)))
    try:
        yield watched
    finally:
        tab.close()


def _click_node(page: Page, name: str) -> None:
    """Click the graph's point for op ``name`` where Plotly draws it (Plotly hit-tests the mouse)."""
    find = "(name) => FIGURES.graph.data.at(-1).text.findIndex((s) => s.includes(name))"
    index = page.page.evaluate(find, name)
    assert index >= 0
    point = page.page.locator("#graph .scatterlayer .trace").last.locator(".point").nth(index)
    page.page.locator("#graph").scroll_into_view_if_needed()  # the mouse clicks only what is on screen
    box = point.bounding_box()
    assert box is not None
    page.page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.page.wait_for_selector("#details:not([hidden])", timeout=WAIT_MS)


def test_report_of_a_simulated_fault(tmp_path: Path, page: Page) -> None:
    run = simulated_result(tmp_path)
    table = read_result(run.result)
    report = write_html(tmp_path / "report.html", table, graph=load_graph(run.fusion_rule))
    seconds = page.open(report)
    print(f"small_cnn report ({report.stat().st_size} bytes) drawn in {seconds:.2f} s")
    assert page.errors == [] and page.outside == []
    assert page.page.locator("#findings li").first.inner_text().startswith("first divergence: op #")

    # The filter: the faulty op's rows, counted in the page and in the table.
    needle = run.fault_op
    page.page.fill("#filter", needle)
    want = sum(1 for r in table.rows if any(needle.lower() in c.lower() for c in r.cells))
    assert page.page.locator("#rows tr").count() == want > 0
    assert page.page.inner_text("#row-count").startswith(f"{want} of {len(table.rows)} rows")
    page.page.select_option("#grade-filter", "red")
    reds = page.page.locator("#rows tr.grade-red").count()
    assert page.page.locator("#rows tr").count() == reds > 0

    # Clicking the faulty op in the graph shows its rows and the error histogram.
    _click_node(page, needle)
    assert needle in page.page.inner_text("#detail-title")
    own = sum(1 for r in table.rows if r.op_name == needle)
    assert page.page.locator("#detail-rows tr").count() == own
    assert page.page.locator("#histogram .main-svg").count() > 0
    page.screenshot("report_small_cnn.png")
    assert page.errors == [] and page.outside == []


def test_a_table_row_opens_its_op_and_sorting_works(tmp_path: Path, page: Page) -> None:
    graph = chain_graph(12, fused_every=3)
    report = write_html(tmp_path / "r.html", chain_table(12, bad_from=7), graph=graph)
    page.open(report)
    page.page.locator("#head th", has_text="CosineSimilarity").click()
    first = page.page.locator("#rows tr").first.locator("td").nth(9).inner_text()
    assert first == "0.500000"  # ascending: the disagreeing rows first
    page.page.locator("#rows tr").first.click()
    assert page.page.inner_text("#detail-title").startswith("op #")
    assert page.errors == [] and page.outside == []


def test_hostile_op_names_render_as_text(tmp_path: Path, page: Page) -> None:
    names = {3: HOSTILE}
    table = chain_table(6, bad_from=3, names=names)
    report = write_html(tmp_path / "h.html", table, graph=chain_graph(6, names))
    page.open(report)
    assert page.page.evaluate("window.__pwned") is None  # no injected script or handler ran
    assert HOSTILE in page.page.inner_text("#findings")
    page.page.fill("#filter", "__pwned")
    assert page.page.locator("#rows tr").count() == 2
    assert page.page.locator("#rows tr").first.locator("td").nth(3).inner_text() == HOSTILE
    _click_node(page, "__pwned")
    assert HOSTILE in page.page.inner_text("#detail-title")
    assert page.page.locator("img").count() == 0
    assert page.page.evaluate("window.__pwned") is None
    assert page.errors == [] and page.outside == []


def test_a_5000_op_report_opens_and_stays_small(tmp_path: Path, page: Page) -> None:
    ops = 5000
    started = time.monotonic()
    table, graph = chain_table(ops, bad_from=4000), chain_graph(ops, fused_every=4)
    report = write_html(tmp_path / "big.html", table, graph=graph)
    written = time.monotonic() - started
    size = report.stat().st_size
    seconds = page.open(report)
    print(
        f"{ops}-op report: {size / 1e6:.1f} MB, built and written in {written:.2f} s, "
        f"drawn in Chromium in {seconds:.2f} s (cpus: {os.cpu_count()})"
    )
    assert size < MAX_BYTES
    assert page.page.inner_text("#row-count").startswith(f"{2 * ops} of {2 * ops} rows")
    page.page.fill("#filter", "/layer4321/")
    assert page.page.locator("#rows tr").count() == 2
    page.screenshot("report_5000_ops.png")
    assert page.errors == [] and page.outside == []


def test_a_torchair_report_opens_a_fused_ge_node_s_rows(tmp_path: Path, page: Page) -> None:
    from typer.testing import CliRunner

    from dumpcmp.cli import app
    from dumpcmp.fakes.torchair import simulate_torchair

    sim = simulate_torchair("zoo:transformer_block", tmp_path / "sim", faults=["/attn.k_proj/Add=bias:0.5"])
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["compare", "-m", "torchair", "-tp", str(sim.ge_dump_dir), "-gp", str(sim.fx_dump_dir),
              "-o", str(out), "--html"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (report,) = out.glob("compare_result_*.html")
    table = read_result(report.with_suffix(".csv"))
    seconds = page.open(report)
    print(f"transformer_block TorchAir report ({report.stat().st_size} bytes) drawn in {seconds:.2f} s")
    fused = next(op.name for op in sim.graph.ops if op.fused)
    _click_node(page, fused)
    assert fused in page.page.inner_text("#detail-title")
    own = sum(1 for r in table.rows if r.op_name == fused)
    assert page.page.locator("#detail-rows tr").count() == own > 0
    # Two dump paths per Data Name cell must not push the metric columns off the page.
    cosine = page.page.locator("#head th", has_text="Cosine").bounding_box()
    assert cosine is not None and cosine["x"] + cosine["width"] < 1400
    page.screenshot("report_torchair_transformer_block.png")
    assert page.errors == [] and page.outside == []


def test_the_plot_shows_the_verdicts_error_metric_and_another_can_be_chosen(
    tmp_path: Path, page: Page
) -> None:
    cells = chain_cells(6, bad_from=3)
    rel = cells[0].index("RelativeEuclideanDistance")
    cells[2][rel] = "0.000000"  # op 0's output: an exact 0, which has no logarithm
    report = write_html(tmp_path / "m.html", table_from_cells(cells))
    page.open(report)
    error_trace = "FIGURES.metrics.data.find((t) => t.yaxis === 'y2').name"
    assert page.page.evaluate(error_trace).startswith("RelativeEuclideanDistance")  # what the verdict uses
    page.page.select_option("#error-metric", "MaxRelativeError")
    page.page.wait_for_function(f"{error_trace}.startsWith('MaxRelativeError')", timeout=WAIT_MS)
    assert page.page.evaluate("FIGURES.metrics.layout.yaxis2.title.text") == "MaxRelativeError (log)"
    # Back to the verdict's metric; op 0's exact 0 is marked as such in its histogram, not at 1e-12.
    page.page.select_option("#error-metric", "RelativeEuclideanDistance")
    page.page.locator("#rows tr").nth(1).click()
    page.page.wait_for_selector("#details:not([hidden])", timeout=WAIT_MS)
    assert "exact 0" in page.page.inner_text("#histogram")
    assert page.errors == [] and page.outside == []


def test_the_shard_picker_shows_each_shard_of_a_run(tmp_path: Path, page: Page) -> None:
    from dumpcmp.host.report.html import write_run_html
    from dumpcmp.host.report.shards import advise_run

    # Three steps of a 10-op chain: clean, diverging at op #6, diverging at op #3 and 2 ops longer.
    tables = [chain_table(10), chain_table(10, bad_from=6), chain_table(12, bad_from=3)]
    run = advise_run(tables, [f"0_net_{k}_result_20261124010203" for k in range(3)])
    graphs = [chain_graph(12, fused_every=3)] * 3
    report = write_run_html(tmp_path / "run.html", run, tables, graphs)
    page.open(report)
    assert page.page.locator("#shard-rows tr").count() == 3
    assert page.page.inner_text("#run-findings").startswith(
        "shards: 3 (steps 0-2), diverging: 2 (steps 1, 2)"
    )
    assert page.page.inner_text("#row-count").startswith("20 of 20 rows")
    assert page.page.inner_text("#findings").startswith("network consistent")

    page.page.locator("#shard-rows tr[data-shard='2']").click()  # the overview's row picks its shard
    page.page.wait_for_selector("body[data-shard='2'][data-ready='1']", state="attached", timeout=WAIT_MS)
    assert page.page.inner_text("#row-count").startswith("24 of 24 rows")
    assert page.page.inner_text("#findings").startswith("first divergence: op #3")
    assert page.page.input_value("#shard") == "2"
    assert page.page.locator("#summary .grade-red b").inner_text() != "0"
    _click_node(page, op_name(4))  # the graph shows the picked shard's grades and opens its rows
    assert page.page.locator("#detail-rows tr").count() == 2

    page.page.select_option("#shard", "1")  # and so does the picker
    page.page.wait_for_selector("body[data-shard='1'][data-ready='1']", state="attached", timeout=WAIT_MS)
    assert page.page.inner_text("#findings").startswith("first divergence: op #6")
    assert page.page.locator("#details").is_hidden()
    page.screenshot("report_shards.png")
    assert page.errors == [] and page.outside == []
