"""NPU fusion on against fusion off (``-cfr``) on simulated builds of one model."""

from __future__ import annotations

import pytest

from dumpcmp.commands.sim import simulate
from dumpcmp.host.offline import run_compare
from dumpcmp.host.request import CompareRequest
from dumpcmp.host.rows import ResultRow


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> list[ResultRow]:
    tmp_path = tmp_path_factory.mktemp("close_fusion")
    on = simulate("zoo:small_cnn", tmp_path / "on", seed=1)
    off = simulate("zoo:small_cnn", tmp_path / "off", seed=1, no_fusion=True)
    request = CompareRequest(
        on.npu_dump_dir,
        off.npu_dump_dir,
        fusion_rule=on.fusion_rule,
        close_fusion_rule=off.fusion_rule,
        out_dir=tmp_path / "out",
    )
    return run_compare(request).rows


def test_cast_and_transdata_of_both_builds_are_paired(rows: list[ResultRow]) -> None:
    copies = [r for r in rows if r.index is not None and r.op_type in ("Cast", "TransData")]
    assert len(copies) >= 4
    for row in copies:
        assert (row.ground_truth, row.cosine > 0.999) == (row.npu_name, True), row
    golden_only = {r.ground_truth for r in rows if r.index is None}
    assert not {r.npu_name for r in copies} & golden_only


def test_inputs_from_the_graph_input_are_compared(rows: list[ResultRow]) -> None:
    # The first conv reads the graph input through Cast/TransData; no build dumps a Data op,
    # so its input is compared with the fusion-off conv's input, not reported as missing.
    targets = [r for r in rows if r.index is not None]
    missing = [r for r in targets if any("not found" in reason for reason in r.reasons)]
    assert not missing, missing
    first_conv = next(r for r in targets if r.op_type == "Conv2D" and r.tensor_index.endswith(":input:0"))
    assert first_conv.cosine > 0.999, first_conv
