"""Result CSV → parser → the same verdict as in-process, over a real compare of simulated runs.

The advisor, the HTML report and the xlsx colours judge a result table read back from its cells;
the summary judges the comparison's own rows. Both ask ``host.verdict``; this checks that the
typed rows the parser gives back are judged as the comparison's were, row for row.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dumpcmp.commands.sim import simulate
from dumpcmp.host.offline import run_compare
from dumpcmp.host.report.advisor import advise
from dumpcmp.host.report.table import read_result
from dumpcmp.host.request import CompareRequest
from dumpcmp.host.summary import Tally
from dumpcmp.host.verdict import Agreement, Thresholds, agreement


@pytest.mark.parametrize(
    "faults",
    [
        (),
        ("/block1.pw/conv/Conv=noise:0.5",),
        ("/block1.pw/conv/Conv=nan:0.05", "/block2/Add=bias:0.5"),
    ],
    ids=["clean", "noise", "nan-and-bias"],
)
def test_the_verdict_read_back_from_the_csv_is_the_in_process_one(
    tmp_path: Path, faults: tuple[str, ...]
) -> None:
    sim = simulate("zoo:small_cnn", tmp_path / "sim", faults=faults, seed=3)
    thresholds = Thresholds()
    outcome = run_compare(
        CompareRequest(sim.npu_dump_dir, sim.golden_dir, sim.fusion_rule, out_dir=tmp_path / "out",
                       thresholds=thresholds)
    )  # fmt: skip
    (shard,) = outcome.shards
    assert shard.result_file is not None
    table = read_result(shard.result_file)
    assert len(table.rows) == len(shard.rows)
    in_process = [
        (r.tensor_index, agreement(r.metrics, thresholds), thresholds.breaches(r.metrics)) for r in shard.rows
    ]
    read_back = []
    for row in table.rows:
        assert row.values is not None
        read_back.append(
            (row.cells[table.header.index("TensorIndex")], agreement(row.values, thresholds),
             thresholds.breaches(row.values))
        )  # fmt: skip
    assert read_back == in_process
    verdicts = [a for _, a, _ in in_process]
    tally = Tally.of(outcome, thresholds)
    assert tally.diverging == verdicts.count(Agreement.DISAGREE)
    advice = advise(table)
    assert advice.compared == tally.compared
    assert advice.disagreeing == tally.diverging
    if not faults:
        assert Agreement.DISAGREE not in verdicts
    else:
        assert advice.first("first divergence") is not None
    if any("=nan" in fault for fault in faults):
        assert tally.appeared and advice.first("nan/inf appeared") is not None
