"""Result tables read back from their cells: both families, CSV and xlsx, bad files."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
import xlsxwriter

from dumpcmp.errors import FormatError
from dumpcmp.host.report.table import OFFLINE_DATA, TORCHAIR, read_result, table_from_cells

OFFLINE_HEADER = [
    "Index", "OpType", "NPUDump", "DataType", "GroundTruth", "DataType", "TensorIndex", "Shape",
    "OverFlow", "CosineSimilarity", "MaxAbsoluteError", "AccumulatedRelativeError",
    "RelativeEuclideanDistance", "KullbackLeiblerDivergence", "StandardDeviation",
    "MeanAbsoluteError", "RootMeanSquareError", "MaxRelativeError", "MeanRelativeError",
    "CompareFailReason",
]  # fmt: skip
METRICS = ["0.5", "1.0", "2.0", "0.3", "0.1", "(0;1),(0;1)", "0.2", "0.4", "0.9", "0.05"]
OFFLINE_ROWS = [
    ["0", "Conv2D", "conv1:a", "DT_FLOAT16", "conv1,bn1", "DT_FLOAT", "conv1:a:output:0", "[1,2]", "YES",
     *METRICS, ""],
    ["1", "Add", "add", "DT_FLOAT16", "*", "NaN", "add:input:1", "[2]", "NaN",
     *["NaN"] * 10, "no framework counterpart"],
    ["", "", "*", "NaN", "relu.0", "NaN", "*", "NaN", "NaN",
     *["NaN"] * 10, "golden tensor with no NPU counterpart"],
]  # fmt: skip


def test_offline_rows_keep_order_ops_and_metrics(tmp_path: Path) -> None:
    table = table_from_cells([OFFLINE_HEADER, *OFFLINE_ROWS], source="x.csv")
    assert table.family == OFFLINE_DATA
    first, second, golden_only = table.rows
    # The op name holds ':' itself; the tensor is the last two fields of TensorIndex.
    assert (first.op_name, first.io, first.tensor_index, first.order) == ("conv1:a", "output", 0, 0)
    assert first.originals == ("conv1", "bn1")
    assert first.dtype == "DT_FLOAT16"  # the NPU side's DataType, not the golden's
    assert first.overflow is True and first.compared
    assert first.metric("CosineSimilarity") == 0.5 and first.metric("MeanRelativeError") == 0.05
    assert second.originals == () and not second.compared and second.reason == "no framework counterpart"
    assert golden_only.is_golden_only and table.targets() == (first, second)


def test_torchair_rows_group_tensors_by_op_in_order() -> None:
    header = ["API Name", "Stack Info", "Data Name", "Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr",
              "One Thousandth Err Ratio", "Five Thousandth Err Ratio", "Requires_grad Consistent",
              "Result", "Accuracy Reached or Not", "Err_message"]  # fmt: skip
    rows = [
        ["Add_1.input.0", "", "['Add.Add_1.1.1.1', 'add_1-aten.add.Tensor.INPUT.0.1.npy']",
         "1.0", "0", "0", "0", "1.0", "1.0", "N/A", "pass", "Yes", ""],
        ["Add_1.output.0", "", "['Add.Add_1.1.1.1', 'N/A']", "N/A", "N/A", "N/A", "N/A", "N/A", "N/A", "N/A",
         "FAIL", "No", "no FX tensor"],
        ["Mul.output.0", "", "[a, b]", "0.5", "1", "2", "inf", "0.1", "0.2", "N/A", "FAIL", "No", "cosine"],
    ]  # fmt: skip
    table = table_from_cells([header, *rows])
    assert table.family == TORCHAIR and table.mode == "real"
    add_in, add_out, mul = table.rows
    assert (add_in.order, add_out.order, mul.order) == (0, 0, 1)
    assert add_in.originals == ("add_1",) and add_out.originals == ()  # the FX node of the npy file
    assert add_in.result == "PASS" and not add_out.compared
    assert math.isinf(mul.metric("MaxRelativeErr"))


def test_csv_and_xlsx_read_the_same(tmp_path: Path) -> None:
    path = tmp_path / "result.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([OFFLINE_HEADER, *OFFLINE_ROWS])
    book_path = tmp_path / "result.xlsx"
    book = xlsxwriter.Workbook(book_path)
    sheet = book.add_worksheet()
    for r, row in enumerate([OFFLINE_HEADER, *OFFLINE_ROWS]):
        sheet.write_row(r, 0, row)
    book.close()
    from_csv, from_xlsx = read_result(path), read_result(book_path)
    assert [r.cells for r in from_csv.rows] == [r.cells for r in from_xlsx.rows]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.csv", None, "no such result file"),
        ("notes.txt", "hello", "expected a .csv or .xlsx file"),
        ("other.csv", "a,b\n1,2\n", "not a dumpcmp result table"),
        ("broken.xlsx", "not a zip", "not a result table: not an xlsx workbook"),
        ("renamed.csv", b"PK\x03\x04\xff\xfe binary", "not a result table: not UTF-8 text"),
    ],
)
def test_bad_files_are_one_line_errors(
    tmp_path: Path, name: str, content: str | bytes | None, message: str
) -> None:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(FormatError, match=message) as info:
        read_result(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_the_row_of_an_unreadable_ge_file_belongs_to_its_op() -> None:
    header = ["API Name", "Stack Info", "Data Name", "Cosine", "MaxAbsErr", "One Thousandth Err Ratio",
              "Result", "Err_message"]  # fmt: skip
    rows = [
        ["mm_0.output.0", "", "[a, /fx/mm-aten.mm.default.OUTPUT.0.1.npy]", "1.0", "0", "1", "PASS", ""],
        ["Add_1.*", "", "[/ge/Add.Add_1.1.0.1, ]", "N/A", "N/A", "N/A", "FAIL", "corrupt GE file: cut short"],
    ]  # fmt: skip
    mm, add = table_from_cells([header, *rows]).rows
    assert (mm.op_name, mm.originals) == ("mm_0", ("mm",))
    assert (add.op_name, add.io, add.order, add.originals) == ("Add_1", "", 1, ())  # joins the graph's Add_1
