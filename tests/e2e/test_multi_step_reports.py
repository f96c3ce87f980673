"""Many shards are one report: a multi-step run compared with ``--html --advisor`` gets one HTML
report and one advisor result that look across the steps, and says nothing once per step.

Before, each of the N steps got its own report, advisor files and block of findings: every count
checked here was N times what it is now.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dumpcmp.cli import app
from dumpcmp.commands.sim import simulate

STEPS = 4
FAULT = "/attn.v_proj/Add=bias:0.5"  # fused into /attn.v_proj/MatMul, op #9
runner = CliRunner()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("steps")
    sim = simulate("zoo:transformer_block", tmp / "sim", steps=STEPS, faults=[FAULT])
    out = tmp / "out"
    result = runner.invoke(
        app,
        ["compare", "-m", "offline_data", "-tp", str(sim.npu_dump_dir), "-gp", str(sim.golden_dir),
         "-fr", str(sim.fusion_rule), "-o", str(out), "--html", "--advisor"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return out, result.output


def _block(page: str, name: str) -> Any:
    found = re.search(rf'<script type="application/json" id="{name}">(.*?)</script>', page, re.S)
    assert found is not None, name
    return json.loads(found.group(1))


def test_one_report_and_one_advisor_result_for_every_step(run: tuple[Path, str]) -> None:
    out, output = run
    names = sorted(p.name for p in out.iterdir())
    assert len([n for n in names if n.endswith(".csv")]) == STEPS  # the per-step results stay
    stamp = next(n for n in names if n.endswith(".csv")).removesuffix(".csv").rpartition("_")[2]
    extra = sorted(n for n in names if not n.endswith(".csv"))
    assert extra == [f"advisor_{stamp}.json", f"advisor_{stamp}.txt", f"result_{stamp}.html"]
    # Console: no line twice, the advisor's findings once, one advisor and one report line.
    lines = output.splitlines()
    assert [line for line, n in Counter(lines).items() if n > 1] == []
    assert output.count("first divergence: op #9 /attn.v_proj/MatMul") == 1
    assert output.count("suspect: op #9") == 1
    assert output.count("advisor: ") == 1 and output.count("report: ") == 1
    assert (
        f"shards: {STEPS} (steps 0-{STEPS - 1}), diverging: {STEPS} (steps 0-{STEPS - 1}); "
        "the first: step 0, first divergence at op #9 /attn.v_proj/MatMul"
    ) in lines
    assert f"[in all {STEPS} shards; as in step 0]" in output
    advice = json.loads((out / f"advisor_{stamp}.json").read_text())
    assert [s["label"] for s in advice["shards"]] == [f"step {k}" for k in range(STEPS)]
    assert advice["diverging"] == [f"step {k}" for k in range(STEPS)]
    assert (
        advice["findings"][0]["kind"] == "first divergence" and len(advice["findings"][0]["shards"]) == STEPS
    )


def test_the_report_has_a_shard_picker_over_every_step(run: tuple[Path, str]) -> None:
    out, _ = run
    (page_path,) = out.glob("*.html")
    page = page_path.read_text()
    shards = _block(page, "report-shards")
    assert [s["label"] for s in shards] == [f"step {k}" for k in range(STEPS)]
    assert _block(page, "report-data") == shards[0]["data"]  # the first step is shown as the page opens
    assert all(s["figures"]["graph"]["data"] for s in shards)  # each step colours the model's graph
    picker = re.search(r'<select id="shard">(.*?)</select>', page)
    assert picker is not None
    assert re.findall(r'<option value="(\d+)">([^<]*)</option>', picker.group(1)) == [
        (str(k), f"step {k}") for k in range(STEPS)
    ]
    assert len(re.findall(r'<tr class="grade-red" data-shard="\d+">', page)) == STEPS
    assert page.count("first divergence at op #9 /attn.v_proj/MatMul</td>") == STEPS
    # plotly.js once, not once a step.
    assert page.count("<script>") == 2


def test_advise_over_the_directory_gives_the_same_one_result(run: tuple[Path, str]) -> None:
    out, _ = run
    advised = runner.invoke(app, ["advise", str(out), "-o", str(out / "again")])
    assert advised.exit_code == 0, advised.output
    (text,) = (out / "again").glob("advisor_*.txt")
    (first,) = out.glob("advisor_*.txt")
    assert text.read_text() == first.read_text()
    assert advised.output.splitlines()[:-1] == first.read_text().splitlines()
