"""NaN/inf on one side only, whatever the row's kind: one verdict (``verdict.special_side``) for the
colours, the advisor and the summary.

A statistics row (an offline statistics dump's, or TorchAir's) keeps no NaN/inf counts of its
data in the form a tensor row does; its counts or its statistics say which side holds them. The
golden side holding them is the golden run's fault, not the NPU's.
"""

from __future__ import annotations

import pytest

from dumpcmp.host.report.advisor import FIRST_DIVERGENCE, NAN_APPEARED, advise
from dumpcmp.host.report.grading import Grade, grade_rows
from dumpcmp.host.report.table import table_from_cells
from dumpcmp.host.stats_compare import STATS_RESULT_COLUMNS
from dumpcmp.host.verdict import Side, SpecialValues, special_side
from tests.host.report.tables import TORCHAIR_STATS_HEADER, offline, offline_table

GOLDEN_NAN = "target has 0 NaN and 0 inf, golden has 1 NaN and 0 inf; NaN/inf positions differ at 1 element"


@pytest.mark.parametrize(
    ("special", "target", "golden", "side"),
    [
        (SpecialValues(3, 0, 0, 0, 3), 0, 0, Side.TARGET),
        (SpecialValues(2, 0, 1, 0, 1), 0, 0, Side.TARGET),  # more NaN than the golden's
        (SpecialValues(0, 0, 1, 0, 1), 0, 0, Side.GOLDEN),
        (SpecialValues(0, 0, 0, 2), 0, 0, Side.GOLDEN),  # counts only: the golden's inf
        (SpecialValues(1, 0, 1, 0, 2), 0, 0, Side.TARGET),  # at other places: appeared
        (SpecialValues(1, 0, 1, 0, 0), 0, 0, None),  # the same places
        (None, 4, 0, Side.TARGET),  # a statistics row's counts
        (None, 0, 2, Side.GOLDEN),
        (None, 1, 2, Side.TARGET),  # the target's are the finding
        (None, 0, 0, None),
    ],
)
def test_special_side(special: SpecialValues | None, target: int, golden: int, side: Side | None) -> None:
    assert special_side(special, target, golden) is side


def _stats_row(index: int, op: str, result: str, reason: str, l2: str = "0.01%") -> list[str]:
    cells = dict.fromkeys(STATS_RESULT_COLUMNS, "N/A")
    cells.update(
        Index=str(index), OpType="Add", NPUDump=op, GroundTruth=op, TensorIndex=f"{op}:output:0",
        DataType="DT_FLOAT16", NormRelativeErr=l2, Result=result, CompareFailReason=reason,
    )  # fmt: skip
    return [cells[c] for c in STATS_RESULT_COLUMNS]


def test_a_statistics_row_whose_dump_counts_nan_beyond_the_golden_is_red() -> None:
    # tryout7 #6: 5 red, 18 yellow where the summary counted 23 NaN tensors (full tensors: 23 red).
    rows = [
        _stats_row(0, "conv", "PASS", ""),
        _stats_row(1, "add", "FAIL", "target holds 154 Nan", "3.6%"),
        _stats_row(2, "relu", "FAIL", "target holds 154 Nan", "3.6%"),
        _stats_row(3, "mul", "PASS", "target holds 2 Nan golden holds 2 NaN"),  # the golden's own
    ]
    table = table_from_cells([list(STATS_RESULT_COLUMNS), *rows])
    graded = grade_rows(table)
    assert [g.grade for g in graded] == [Grade.GREEN, Grade.RED, Grade.RED, Grade.GREEN]
    assert graded[2].why == "NaN/inf on the target side only (the dump counts 154 beyond the golden's)"


def _torchair_stats(op: str, result: str, reason: str, diff: str = "0.000001") -> list[str]:
    return [
        f"{op}.output.0", "", f"['{op}.bin', 'fx_{op}.npy']", *[diff] * 4, *["0.01%"] * 4,
        result, "Yes" if result == "PASS" else "No", reason,
    ]  # fmt: skip


def test_torchair_statistics_nan_on_the_npu_side_is_nan_inf_appeared_and_red() -> None:
    # tryout7 #8: real mode had the finding; statistics mode only a first divergence.
    npu = "Max NPU, Min NPU, Mean NPU, L2norm NPU NaN on one side only (NaN or inf in the data)"
    bench = "Max bench, Min bench NaN on one side only (NaN or inf in the data)"
    rows = [
        _torchair_stats("Conv", "PASS", ""),
        _torchair_stats("AddRelu", "FAIL", npu, "NaN"),
        _torchair_stats("Pool", "FAIL", npu, "NaN"),
    ]
    table = table_from_cells([TORCHAIR_STATS_HEADER, *rows])
    assert [r.side for r in table.rows] == [None, Side.TARGET, Side.TARGET]
    finding = advise(table).findings[0]
    assert (finding.kind, finding.order, finding.op_name) == (NAN_APPEARED, 1, "AddRelu")
    assert "its statistics: Max NPU" in finding.detail and "makes NaN from finite inputs" in finding.advice
    assert [g.grade for g in grade_rows(table)] == [Grade.GREEN, Grade.RED, Grade.RED]
    golden = table_from_cells([TORCHAIR_STATS_HEADER, _torchair_stats("Conv", "FAIL", bench, "NaN")])
    assert golden.rows[0].side is Side.GOLDEN and grade_rows(golden)[0].grade is not Grade.RED


def test_nan_in_the_golden_only_blames_the_golden_run_not_the_npu_op() -> None:
    # tryout7 #5: "fix this op" / "check this op's implementation ... on the NPU" for a finite NPU output.
    rows = [offline(0, "conv"), offline(1, "relu", "input"), offline(1, "relu", cos="NaN", reason=GOLDEN_NAN)]
    advice = advise(offline_table(*rows))
    (finding,) = advice.findings
    assert (finding.kind, finding.order) == (FIRST_DIVERGENCE, 1)
    assert "the golden holds NaN/inf the target does not (1 NaN and 0 inf in the golden" in finding.detail
    assert finding.advice.startswith("the golden run is what holds NaN/inf here, not the NPU")
    assert "implementation" not in finding.advice and finding.evidence["golden NaN"] == 1


def test_a_statistics_row_with_nan_in_the_golden_only_blames_the_golden_run() -> None:
    rows = [_stats_row(0, "conv", "PASS", ""), _stats_row(1, "add", "FAIL", "golden holds 3 NaN", "60%")]
    table = table_from_cells([list(STATS_RESULT_COLUMNS), *rows])
    assert table.rows[1].side is Side.GOLDEN
    finding = next(f for f in advise(table).findings if f.kind == FIRST_DIVERGENCE)
    assert "the golden holds NaN/inf the target does not (golden holds 3 NaN)" in finding.detail
    assert finding.advice.startswith("the golden run is what holds NaN/inf here")
