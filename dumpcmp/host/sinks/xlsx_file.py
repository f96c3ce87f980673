"""Result tables as ``.xlsx`` (XlsxWriter): any family, rows coloured by their grade.

One writer for every result table (header + rows of cells): the offline_data table of a
comparison or a host session, and TorchAir's. Rows are red / yellow / green by the colour rules
of metrics.md §2 (:func:`dumpcmp.host.report.grading.grade_rows`), the header is frozen and
filtered, columns are as wide as their cells, and the advisor's findings get a sheet of their own.

Cells hold what the CSV holds, but numeric columns are stored as numbers, so that Excel can
sort and filter them; NaN and infinities, which a spreadsheet cell cannot hold as numbers, stay
text as the CSV spells them.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dumpcmp.host.metrics.offline_data import OFFLINE_DATA_COLUMNS
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.sinks.table import TableShape
from dumpcmp.host.verdict import Thresholds
from dumpcmp.outputs import atomic_path

if TYPE_CHECKING:
    from dumpcmp.host.report.advisor import Advice
    from dumpcmp.host.report.grading import RowGrade

# Metric columns of both families; StandardDeviation is "(mean;std),(mean;std)" and the MD5
# columns hold hex: text. A percentage cell ("12.5%") does not parse and stays text too.
NUMERIC_COLUMNS = frozenset(
    {"Index", "OpSequence", *OFFLINE_DATA_COLUMNS, "Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr",
     "One Thousandth Err Ratio", "Five Thousandth Err Ratio", "Max diff", "Min diff", "Mean diff",
     "L2norm diff", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr"}
    - {"StandardDeviation"}
)  # fmt: skip
FILLS = {"red": "#FFC7CE", "yellow": "#FFEB9C", "green": "#C6EFCE"}  # Excel's own "good/neutral/bad"
MAX_WIDTH = 60  # characters; longer cells (GroundTruth of a big fused op) wrap at the edge
ADVISOR_HEADER = ("Detection", "Index", "Op", "Originals", "Detail", "Evidence", "Advice")


def write_xlsx(path: Path, rows: Sequence[ResultRow], shape: TableShape, *, thresholds: Thresholds) -> Path:
    """A comparison's rows as the offline_data table, with the advisor's sheet."""
    return write_xlsx_cells(path, shape.header(), [shape.cells(r) for r in rows], thresholds=thresholds)


def write_xlsx_cells(
    path: Path, header: Sequence[str], rows: Sequence[Sequence[str]], *, thresholds: Thresholds
) -> Path:
    """The table from its CSV cells (any family), graded and advised from the cells alone."""
    from dumpcmp.host.report.advisor import advise
    from dumpcmp.host.report.grading import GradeThresholds, grade_rows
    from dumpcmp.host.report.table import table_from_cells

    table = table_from_cells([header, *rows], source=str(path))
    limits = GradeThresholds(verdict=thresholds)
    return write_result_xlsx(
        path, header, rows, grades=grade_rows(table, limits), advice=advise(table, limits)
    )


def write_result_xlsx(
    path: Path,
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    grades: Sequence[RowGrade] | None = None,
    advice: Advice | None = None,
) -> Path:
    """Write atomically, so a reader never sees half a workbook.

    ``grades`` (one per row) colour the rows; ``advice`` adds the "advisor" sheet.
    """
    import xlsxwriter  # only this sink needs it

    if grades is not None and len(grades) != len(rows):
        raise ValueError(f"{len(grades)} grades for {len(rows)} rows")
    numeric = [name in NUMERIC_COLUMNS for name in header]
    widths = [len(name) for name in header]
    # Built in memory, then written: a full disk stops our write, not XlsxWriter's zip file,
    # which, left half-closed, printed a traceback when it was collected.
    buffer = io.BytesIO()
    with atomic_path(path) as temp:
        book = xlsxwriter.Workbook(buffer, {"strings_to_numbers": False, "in_memory": True})
        try:
            sheet = book.add_worksheet("result")
            bold = book.add_format({"bold": True, "bg_color": "#F2F2F2", "bottom": 1})
            fills = {grade: book.add_format({"bg_color": colour}) for grade, colour in FILLS.items()}
            sheet.write_row(0, 0, header, bold)
            for i, cells in enumerate(rows, start=1):
                style = fills.get(grades[i - 1].grade.value) if grades is not None else None
                for column, (cell, is_number) in enumerate(zip(cells, numeric, strict=True)):
                    widths[column] = max(widths[column], len(cell))
                    value = _number(cell) if is_number else None
                    if value is None:
                        sheet.write_string(i, column, cell, style)
                    else:
                        sheet.write_number(i, column, value, style)
            for column, width in enumerate(widths):
                sheet.set_column(column, column, min(width, MAX_WIDTH) + 2)
            sheet.freeze_panes(1, 0)
            sheet.autofilter(0, 0, len(rows), len(header) - 1)
            if advice is not None:
                _advisor_sheet(book, advice, bold)
        finally:
            book.close()
        temp.write_bytes(buffer.getvalue())
    return path


def _advisor_sheet(book: Any, advice: Advice, bold: Any) -> None:
    sheet = book.add_worksheet("advisor")
    lines: list[tuple[str, int | None, str, str, str, str, str]] = [
        (f.kind, f.order, f.op_name, ", ".join(f.originals), f.detail, _evidence(f.evidence), f.advice)
        for f in advice.findings
    ]
    lines += [
        ("suspect", s.order, s.op_name, ", ".join(s.originals),
         f"amplifies {s.metric} {s.amplification:.1f}x", _evidence({"input error": s.input_error,
         "output error": s.output_error}), "")
        for s in advice.suspects
    ]  # fmt: skip
    sheet.write_row(0, 0, ADVISOR_HEADER, bold)
    widths = [len(h) for h in ADVISOR_HEADER]
    for r, line in enumerate(lines, start=1):
        for c, value in enumerate(line):
            if isinstance(value, int):
                sheet.write_number(r, c, value)
            else:
                sheet.write_string(r, c, value or "")
            widths[c] = max(widths[c], len(str(value or "")))
    for c, width in enumerate(widths):
        sheet.set_column(c, c, min(width, MAX_WIDTH * 2) + 2)
    sheet.freeze_panes(1, 0)


def _evidence(values: Any) -> str:
    return ", ".join(f"{name} {value:.6g}" for name, value in values.items())


def _number(cell: str) -> float | None:
    """The CSV cell's value if it is a finite number (the CSV's rounding kept), else None."""
    try:
        value = float(cell)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
