"""The advisor on damaged tables, TorchAir trans ops and NaN/inf outputs: no confident wrong finding."""

from __future__ import annotations

import json

import pytest

from dumpcmp.errors import FormatError
from dumpcmp.host.report.advisor import (
    FIRST_DIVERGENCE,
    FP16_OVERFLOW,
    INPUT_INCONSISTENCY,
    NOTHING_COMPARED,
    advise,
)
from dumpcmp.host.report.table import table_from_cells
from tests.host.report.tables import (
    OFFLINE_HEADER,
    TORCHAIR_REAL_HEADER,
    offline,
    offline_table,
    torchair,
    torchair_table,
)

NAN_APPEARED = "nan/inf appeared"  # spelled here, not imported: the kinds are part of the output
UNREADABLE_CELLS = "unreadable cells"


def chain(damage: str | None) -> list[list[str]]:
    """Op 1 diverges, op 2 inherits it; ``damage`` replaces op 1's cosine cells."""
    rows = [
        offline(0, "a", "input", red=0.0005),
        offline(0, "a", red=0.0005),
        offline(1, "add", "input", red=0.0005),
        offline(1, "add", cos=0.9, red=0.3),
        offline(2, "relu", "input", cos=0.9, red=0.3),
        offline(2, "relu", cos=0.9, red=0.3),
    ]
    if damage is not None:
        cos = OFFLINE_HEADER.index("CosineSimilarity")
        for row in rows[2:4]:
            row[cos] = damage
    return rows


def kinds(rows: list[list[str]]) -> list[str]:
    return [f.kind for f in advise(offline_table(*rows)).findings]


@pytest.mark.parametrize("damage", ["abc", "0,2", "", "-2", "1.5"])
def test_a_cell_that_is_not_a_number_makes_its_row_not_compared_and_is_said_once(damage: str) -> None:
    advice = advise(offline_table(*chain(damage)))
    assert [f.kind for f in advice.findings] == [UNREADABLE_CELLS, FIRST_DIVERGENCE]
    why = f"{damage!r}, outside [-1, 1]" if damage in ("-2", "1.5") else repr(damage)
    assert advice.findings[0].detail.startswith(
        f"2 cells not numbers or out of range, e.g. row 4 column CosineSimilarity ({why})"
    )
    start = advice.findings[1]
    # Never "input inconsistency" at the damaged op, nor a problem node after it: the error
    # starts at the op without numbers or at the first one already wrong.
    assert start.order == 1 and "op #1 not compared" in start.detail and "or at op #2" in start.detail
    assert INPUT_INCONSISTENCY not in kinds(chain(damage))


def test_undamaged_chain_is_the_plain_first_divergence() -> None:
    assert kinds(chain(None)) == [FIRST_DIVERGENCE]


@pytest.mark.parametrize(
    ("drop", "message"),
    [
        (
            ("CosineSimilarity", "RelativeEuclideanDistance"),
            "no CosineSimilarity, RelativeEuclideanDistance column",
        ),
        (("Index",), "no Index column"),
        (("TensorIndex",), "no TensorIndex column"),
    ],
)
def test_a_table_missing_a_column_the_advisor_needs_is_refused(drop: tuple[str, ...], message: str) -> None:
    keep = [i for i, name in enumerate(OFFLINE_HEADER) if name not in drop]
    cells = [[row[i] for i in keep] for row in [OFFLINE_HEADER, *chain(None)]]
    with pytest.raises(FormatError, match=message) as info:
        table_from_cells(cells, source="t.csv")
    assert str(info.value).startswith("t.csv: ") and "\n" not in str(info.value)


def test_a_torchair_table_missing_its_ratio_column_is_refused() -> None:
    drop = TORCHAIR_REAL_HEADER.index("One Thousandth Err Ratio")
    rows = [TORCHAIR_REAL_HEADER, torchair("Add")]
    with pytest.raises(FormatError, match="no One Thousandth Err Ratio column"):
        table_from_cells([r[:drop] + r[drop + 1 :] for r in rows])


def test_amplification_says_when_the_input_error_was_floored() -> None:
    advice = advise(offline_table(*chain(None)))
    (suspect,) = advice.suspects
    # 0.3 / 0.0005 would be 600x; the floor (1e-3) makes it 300x, and the line says so.
    assert round(suspect.amplification) == 300
    assert "(input 0.0005 (floored to 0.001) -> output 0.3)" in suspect.line()
    assert suspect.to_json()["error_floor"] == 0.001
    assert advice.findings[0].evidence["error floor"] == 0.001


def ge_row(
    op: str, *, cos: float = 1.0, ratio: float = 1.0, reason: str = "", own: bool = False
) -> list[str]:
    """A TorchAir row; ``own``: a GE trans op compared with its own input (no FX counterpart)."""
    bad = ratio <= 0.9  # a row whose elements disagree fails the verdict too (MaxRelativeErr)
    row = torchair(op, cos=cos, ratio=ratio, max_abs=0.5 if bad else 0.0, max_rel=0.5 if bad else 0.0)
    ge_file = f"/d/ge/{op}.1.0.17"
    bench = f"{ge_file} input 0" if own else f"/d/fx/{op.lower()}_1-aten.{op.lower()}.default.OUTPUT.0.9.npy"
    row[2] = f"[{ge_file}, {bench}]"
    row[-1] = reason
    return row


def test_torchair_trans_ops_compared_with_themselves_are_no_recovery() -> None:
    table = torchair_table(
        ge_row("Conv"), ge_row("Add", ratio=0.2, cos=0.99), ge_row("Relu", ratio=0.3, cos=0.99),
        ge_row("trans_Cast_5", own=True),
    )  # fmt: skip
    finding = advise(table).first(FIRST_DIVERGENCE)
    assert finding is not None and finding.order == 1
    assert "accumulating: 1 of 1 later ops" in finding.detail and "trans_Cast_5" not in finding.detail
    assert finding.originals == ("add_1",)  # the FX node, not its npy file's path
    assert "originals: add_1)" in finding.line()


def test_torchair_inf_on_the_target_side_is_fp16_overflow_with_its_counts() -> None:
    reason = "target has 0 NaN and 30 inf, golden has 0 NaN and 0 inf Cosine nan < 0.99"
    bad = ge_row("Mul", ratio=0.2, reason=reason)
    bad[3] = "NaN"
    advice = advise(torchair_table(ge_row("Conv"), bad))
    finding = advice.findings[0]
    assert (finding.kind, finding.order) == (FP16_OVERFLOW, 1)
    assert "30 inf on the target side" in finding.detail and finding.evidence["target inf"] == 30


def test_nan_from_finite_inputs_is_not_called_an_overflow_and_shows_its_counts() -> None:
    reason = "target has 12 NaN and 0 inf, golden has 0 NaN and 0 inf; NaN/inf positions differ"
    advice = advise(offline_table(offline(0, "a"), offline(1, "div", cos="NaN", reason=reason)))
    finding = advice.findings[0]
    assert (finding.kind, finding.order) == (NAN_APPEARED, 1)
    assert "65504" not in finding.line() and "[target NaN 12, target inf 0" in finding.line()
    assert json.dumps(advice.to_json())  # counts are plain numbers in the JSON


def test_an_op_whose_golden_is_missing_is_not_skipped_for_the_next_op() -> None:
    # Op 1's golden was unreadable: its output and op 2's input from it have no numbers, op 2's
    # other input agrees. Op 2 is not the start for certain: the error may start at op 1.
    missing = "golden file a_add.0.npy not found"
    rows = [
        offline(0, "a", red=0.0005),
        offline(1, "add", "input", red=0.0005),
        offline(1, "add", cos="NaN", reason=missing),
        offline(2, "mul", "input", cos="NaN", reason=missing),
        offline(2, "mul", "input", red=0.0005, k=1),
        offline(2, "mul", cos=0.9, red=0.3),
        offline(3, "relu", "input", cos=0.9, red=0.3),
        offline(3, "relu", cos=0.9, red=0.3),
    ]
    (start,) = advise(offline_table(*rows)).findings
    assert start.kind == FIRST_DIVERGENCE
    assert start.order == 1 and "op #1 not compared" in start.detail and "or at op #2" in start.detail


def test_torchair_shard_with_only_trans_ops_checked_against_themselves_is_no_all_clear() -> None:
    # Rank 1's FX dump missing: its GE trans ops still agree with their own inputs, nothing else.
    missing = torchair("Add", cos="N/A", max_abs="N/A", max_rel="N/A", ratio="N/A")
    missing[-3:] = ["N/A", "", "no FX dump for rank 1 token 0"]
    table = torchair_table(ge_row("trans_Cast_0", own=True), ge_row("trans_TransData_1", own=True), missing)
    advice = advise(table)
    assert [f.kind for f in advice.findings] == [NOTHING_COMPARED]
    (line,) = advice.lines()
    assert "only 2 GE-inserted op outputs were compared, each with its own input" in line
    assert "no FX dump for rank 1 token 0" in line
