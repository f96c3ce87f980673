"""Row colours (metrics.md §2): each rule on a small hand-made table, for both families."""

from __future__ import annotations

import pytest

from dumpcmp.host.report.grading import Grade, GradeThresholds, grade_rows
from dumpcmp.host.report.table import table_from_cells
from dumpcmp.host.verdict import Thresholds
from tests.host.report.tables import (
    TORCHAIR_STATS_HEADER,
    offline,
    offline_table,
    torchair,
    torchair_table,
)

NAN_TARGET_ONLY = (
    "target has 3 NaN and 1 inf, golden has 0 NaN and 0 inf; NaN/inf positions differ at 4 elements"
)
NAN_BOTH = "target has 3 NaN and 0 inf, golden has 3 NaN and 0 inf; NaN/inf positions agree"


def grades(table_rows: list[list[str]], *, family: str = "offline") -> list[Grade]:
    table = offline_table(*table_rows) if family == "offline" else torchair_table(*table_rows)
    result = grade_rows(table)
    assert len(result) == len(table.rows)
    return [g.grade for g in result]


# ------------------------------------------------------------------------- offline_data


def test_offline_clean_rows_are_green_and_rows_without_numbers_none() -> None:
    rows = [
        offline(0, "conv", "input", red=0.0002),
        offline(0, "conv", red=0.0004),
        offline(1, "add", "input", cos="NaN", reason="no framework counterpart"),
        offline(None, "*", cos="NaN", reason="golden tensor with no NPU counterpart"),
    ]
    assert grades(rows) == [Grade.GREEN, Grade.GREEN, Grade.NONE, Grade.NONE]


def test_offline_nan_inf_on_the_target_side_only_is_red_even_when_every_metric_is_nan() -> None:
    rows = [
        offline(0, "a", cos="NaN", reason=NAN_TARGET_ONLY),
        offline(1, "b", cos=1.0, reason=NAN_BOTH),
    ]
    graded = grade_rows(offline_table(*rows))
    assert graded[0].grade is Grade.RED and "target side only (4 values)" in graded[0].why
    assert graded[1].grade is Grade.GREEN  # both sides hold the same NaN: not the target's fault


def test_offline_max_absolute_error_above_1e10_is_red() -> None:
    (graded,) = grade_rows(offline_table(offline(0, "a", max_abs=2e10)))
    assert graded.grade is Grade.RED and "MaxAbsoluteError 2e+10 > 1e+10" in graded.why


def test_offline_max_relative_error_is_red_only_beside_a_breach() -> None:
    # Rounding near golden zeros gives MaxRelativeError >= 0.5 on clean rows (1.57 on a clean
    # small_cnn): alone it is no evidence.
    clean, bad = grade_rows(
        offline_table(offline(0, "a", max_rel=1.5), offline(1, "b", max_rel=0.5, red=0.2))
    )
    assert clean.grade is Grade.GREEN
    assert bad.grade is Grade.RED and "MaxRelativeError 0.5 >= 0.5" in bad.why


def test_offline_inputs_agree_output_does_not_is_red() -> None:
    rows = [offline(3, "conv", "input", red=0.001), offline(3, "conv", red=0.3, cos=0.95)]
    inputs, output = grade_rows(offline_table(*rows))
    assert inputs.grade is Grade.GREEN
    assert output.grade is Grade.RED
    assert "inputs agree" in output.why and "RelativeEuclideanDistance 0.300000 > 0.05" in output.why


def test_offline_error_growing_tenfold_is_yellow() -> None:
    # Inputs already off (0.06 > 0.05): not red by the inputs-agree rule, but the op makes it 10x worse.
    rows = [offline(3, "conv", "input", red=0.06), offline(3, "conv", red=0.6)]
    assert grades(rows) == [Grade.YELLOW, Grade.YELLOW]
    assert "grows 10.0x" in grade_rows(offline_table(*rows))[1].why


def test_offline_growth_is_measured_above_the_floor() -> None:
    # Exact inputs and a rounding-sized output error: no growth to speak of.
    rows = [offline(0, "cast", "input", red=0.0), offline(0, "cast", red=0.0004)]
    assert grades(rows) == [Grade.GREEN, Grade.GREEN]


def test_offline_cosine_drop_above_point_one_is_yellow() -> None:
    rows = [offline(3, "conv", "input", cos=0.98, red=0.06), offline(3, "conv", cos=0.85, red=0.09)]
    output = grade_rows(offline_table(*rows))[1]
    assert output.grade is Grade.YELLOW and "CosineSimilarity drops 0.130" in output.why


def test_offline_inherited_disagreement_is_yellow_not_green() -> None:
    rows = [offline(3, "relu", "input", cos=0.95, red=0.2), offline(3, "relu", cos=0.95, red=0.2)]
    output = grade_rows(offline_table(*rows))[1]
    assert output.grade is Grade.YELLOW and "inherited" in output.why


def test_offline_agreement_follows_the_given_verdict_thresholds() -> None:
    rows = [offline(3, "conv", "input", red=0.01), offline(3, "conv", red=0.08)]
    assert grades(rows)[1] is Grade.RED
    loose = GradeThresholds(verdict=Thresholds(relative_euclidean=0.1))
    assert grade_rows(offline_table(*rows), loose)[1].grade is Grade.GREEN


# ---------------------------------------------------------------------------- torchair


def test_torchair_clean_rows_are_green() -> None:
    rows = [torchair("Add_1", "input"), torchair("Add_1", max_abs=0.001, ratio=0.99)]
    assert grades(rows, family="torchair") == [Grade.GREEN, Grade.GREEN]


@pytest.mark.parametrize(
    ("row", "why"),
    [
        (torchair("Mul", max_abs="NaN", cos="NaN", max_rel="NaN", ratio="NaN"), "NaN/inf in the data"),
        (torchair("Mul", max_abs=3e10, ratio=0.95), "MaxAbsErr 3e+10 > 1e+10"),
        (torchair("Mul", max_rel=0.5, ratio=0.95), "MaxRelativeErr 0.5 >= 0.5"),
    ],
)
def test_torchair_row_alone_red_rules(row: list[str], why: str) -> None:
    (graded,) = grade_rows(torchair_table(row))
    assert graded.grade is Grade.RED and why in graded.why


def test_torchair_inputs_agree_output_does_not_is_red() -> None:
    rows = [torchair("Mul", "input", ratio=0.95), torchair("Mul", "input", k=1), torchair("Mul", ratio=0.5)]
    assert grades(rows, family="torchair") == [Grade.GREEN, Grade.GREEN, Grade.RED]


def test_torchair_ratio_between_the_thresholds_is_not_red() -> None:
    rows = [torchair("Mul", "input", ratio=0.95), torchair("Mul", ratio=0.85)]
    assert grades(rows, family="torchair") == [Grade.GREEN, Grade.GREEN]
    # ... but a drop by more than 0.1 is yellow.
    rows = [torchair("Mul", "input", ratio=0.95), torchair("Mul", ratio=0.8)]
    assert grades(rows, family="torchair") == [Grade.GREEN, Grade.YELLOW]


def test_torchair_growth_and_cosine_drop_are_yellow() -> None:
    grow = [torchair("Mul", "input", max_abs=0.01, ratio=0.95), torchair("Mul", max_abs=0.2, ratio=0.92)]
    assert grades(grow, family="torchair") == [Grade.GREEN, Grade.YELLOW]
    drop = [torchair("Mul", "input", cos=0.999, ratio=0.95), torchair("Mul", cos=0.85, ratio=0.93)]
    assert grade_rows(torchair_table(*drop))[1].why.startswith("Cosine drops 0.149")


def test_torchair_statistics_relative_errors_are_percentages() -> None:
    def row(name: str, rel: str, result: str) -> list[str]:
        return [f"{name}.output.0", "", "[a, b]", "1", "0", "0", "0", rel, "0%", "0%", "0%", result, "", ""]

    table = table_from_cells([TORCHAIR_STATS_HEADER, row("A", "60%", "FAIL"), row("B", "40%", "PASS")])
    red, green = grade_rows(table)
    assert red.grade is Grade.RED and "MaxRelativeErr 0.6 >= 0.5" in red.why
    assert green.grade is Grade.GREEN


def test_a_torchair_row_without_a_verdict_is_not_compared() -> None:
    """md5 of two dtypes (a Cast against its own input) has both CRCs but no verdict: grey, not
    green, and not counted as normal."""
    header = ["API Name", "Stack Info", "Data Name", "NPU MD5", "BENCH MD5", "Result",
              "Accuracy Reached or Not", "Err_message"]  # fmt: skip
    rows = [
        ["Cast.output.0", "", "[a, b]", "1a2b3c4d", "5e6f7a8b", "N/A", "No", "different dtypes"],
        ["Add.output.0", "", "[c, d]", "1a2b3c4d", "1a2b3c4d", "PASS", "Yes", ""],
    ]
    grades = grade_rows(table_from_cells([header, *rows]))
    assert [g.grade for g in grades] == [Grade.NONE, Grade.GREEN]
