"""The shards of a run as one: their names, labels, one advice across them, one HTML page."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from dumpcmp.host.report.html import render_html, render_run_html
from dumpcmp.host.report.shards import ShardName, advise_run, shard_labels, span
from dumpcmp.host.report.table import ResultTable
from tests.host.report.reports_kit import chain_graph, chain_table
from tests.host.report.tables import offline, offline_table

STAMP = "20261124010203"


@pytest.mark.parametrize(
    ("stem", "run", "shard", "statistics"),
    [
        (f"0_net_3_result_{STAMP}", f"result_{STAMP}", "0_net_3", False),
        # a shard's statistics result is in its tensor result's run (was a run of its own)
        (f"0_net_3_stats_result_{STAMP}", f"result_{STAMP}", "0_net_3", True),
        # … and a single-shard run's is no shard named "stats" beside the run's one
        (f"stats_result_{STAMP}", f"result_{STAMP}", "", True),
        (f"0_stats_3_result_{STAMP}", f"result_{STAMP}", "0_stats_3", False),  # a model named stats
        (f"rank0_token1_compare_result_{STAMP}_1", f"compare_result_{STAMP}_1", "rank0_token1", False),
        (f"result_{STAMP}", f"result_{STAMP}", "", False),
        ("mine", "mine", "", False),
    ],
)  # fmt: skip
def test_a_result_name_splits_into_its_run_and_shard(
    stem: str, run: str, shard: str, statistics: bool
) -> None:
    assert ShardName.of(stem) == ShardName(run, shard, statistics)


@pytest.mark.parametrize(
    ("shards", "labels"),
    [
        (["0_net_0", "0_net_1"], ["step 0", "step 1"]),
        (["0_net_0", "1_net_0"], ["device 0", "device 1"]),
        (["0_a_b_0", "0_c_0"], ["model a_b", "model c"]),
        (["rank0_token0", "rank1_token1"], ["rank 0 token 0", "rank 1 token 1"]),
        (["rank0_token0", "elsewhere"], ["rank0_token0", "elsewhere"]),
        # two runs into one dump path: the dump time directory in front (was "device 20261124010203")
        ([f"{STAMP}_0_net_0", f"{STAMP}_0_net_1", "20261124010209_0_net_0"],
         [f"run {STAMP} step 0", f"run {STAMP} step 1", "run 20261124010209 step 0"]),
        # a tree without its device level beside one with it: the walker's device is its time
        # directory; labels said "run None device 0" and "run … device small model cnn"
        (["0_small_cnn_0", f"{STAMP}_small_cnn_0"], ["device 0", f"device {STAMP}"]),
        ([f"{STAMP}_0_net_0", "1_net_0"], [f"run {STAMP} device 0", "device 1"]),
    ],
)  # fmt: skip
def test_shards_are_labelled_by_what_tells_them_apart(shards: list[str], labels: list[str]) -> None:
    assert shard_labels(shards) == labels


def test_a_span_of_numbered_shards_is_ranges_and_others_are_listed() -> None:
    assert span([f"step {k}" for k in (0, 1, 2, 3, 4, 7, 9, 10)]) == "steps 0-4, 7, 9, 10"
    assert span(["rank 0 token 0", "rank 1 token 1"]) == "rank 0 token 0, rank 1 token 1"
    assert span([f"device {k} step 0" for k in range(8)]).endswith("device 5 step 0 and 2 more")


def _steps() -> tuple[list[ResultTable], list[str]]:
    """Four steps: 0 and 1 agree, 2 diverges at op #1, 3 at op #2."""
    clean = [offline(0, "a", red=0.001), offline(1, "b", "input", red=0.001), offline(1, "b", red=0.001),
             offline(2, "c", "input", red=0.001), offline(2, "c", red=0.001)]  # fmt: skip
    at_b = [*clean[:2], offline(1, "b", cos=0.5, red=0.9), offline(2, "c", "input", cos=0.5, red=0.9),
            offline(2, "c", cos=0.5, red=0.9)]  # fmt: skip
    at_c = [*clean[:4], offline(2, "c", cos=0.5, red=0.9)]
    tables = [offline_table(*rows) for rows in (clean, clean, at_b, at_c)]
    return tables, [f"0_net_{k}_result_{STAMP}" for k in range(4)]


def test_the_run_says_each_finding_once_with_the_shards_it_holds_in() -> None:
    run = advise_run(*_steps())
    lines = run.lines()
    assert (
        lines[0]
        == "shards: 4 (steps 0-3), diverging: 2 (steps 2, 3); the first: step 2, first divergence at op #1 b"
    )
    assert lines[1].startswith("network consistent: all 5 compared tensors agree")
    assert lines[1].endswith("[in 2 of 4: steps 0, 1; as in step 0]")
    assert lines[2].startswith("first divergence: op #1 b") and lines[2].endswith("[only in step 2]")
    assert lines[3].startswith("first divergence: op #2 c") and lines[3].endswith("[only in step 3]")
    assert [line for line, n in Counter(lines).items() if n > 1] == []
    doc = run.to_json()
    assert doc["diverging"] == ["step 2", "step 3"] and doc["compared"] == 20
    assert [f["shards"] for f in doc["findings"][:3]] == [["step 0", "step 1"], ["step 2"], ["step 3"]]
    assert [s["findings"][0]["kind"] for s in doc["shards"]] == ["network consistent"] * 2 + [
        "first divergence"
    ] * 2


def _block(page: str, name: str) -> object:
    found = re.search(rf'<script type="application/json" id="{name}">(.*?)</script>', page, re.S)
    assert found is not None, name
    return json.loads(found.group(1))


def test_the_run_page_has_an_overview_a_picker_and_every_shard_s_view() -> None:
    tables, stems = _steps()
    run = advise_run(tables, stems)
    graph = chain_graph(3)
    page = render_run_html(run, tables, [graph] * len(tables))
    shards = _block(page, "report-shards")
    assert isinstance(shards, list) and [s["label"] for s in shards] == [f"step {k}" for k in range(4)]
    assert _block(page, "report-data") == shards[0]["data"]
    assert shards[2]["findings"][0].startswith("first divergence: op #1 b")
    assert shards[3]["counts"][0] == ["red", 1, "abnormal"]
    rows = re.findall(r'<tr class="grade-(\w+)" data-shard="(\d)"><td>([^<]*)</td>', page)
    assert rows == [
        ("green", "0", "step 0"),
        ("green", "1", "step 1"),
        ("red", "2", "step 2"),
        ("red", "3", "step 3"),
    ]
    assert "<td>first divergence at op #2 c</td>" in page
    found = re.search(r'<ul class="findings" id="run-findings">(.*?)</ul>', page, re.S)
    assert found is not None and found.group(1).count("<li>") == len(run.lines())
    assert page.count("<script>") == 2  # plotly.js and the page's script, once for every shard


def test_a_single_result_page_has_no_shard_parts() -> None:
    page = render_html(chain_table(3))
    assert 'id="report-shards"' not in page and 'id="shard"' not in page and "Shards</h2>" not in page


def test_a_shard_that_compared_fewer_tensors_is_not_folded_into_another_s_all_clear() -> None:
    # tryout7 #7: a step that lost dump files was listed under "all 86 compared tensors agree
    # [... as in step 0]" though it compared 76.
    tables, stems = _steps()
    fewer = offline_table(*[offline(0, "a", red=0.001), offline(1, "b", red=0.001)])
    run = advise_run([tables[0], fewer, tables[2]], stems[:3])
    consistent = [line for line in run.lines() if line.startswith("network consistent")]
    assert consistent == [
        "network consistent: all 5 compared tensors agree - nothing to fix: every compared tensor is "
        "within the thresholds. [only in step 0]",
        "network consistent: all 2 compared tensors agree - nothing to fix: every compared tensor is "
        "within the thresholds. [only in step 1]",
    ]
