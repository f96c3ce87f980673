"""The same table as ``.xlsx`` (XlsxWriter), rows beyond the verdict thresholds marked red."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dumpcmp.host.rows import ResultRow
from dumpcmp.host.sinks.table import TableShape
from dumpcmp.host.verdict import Thresholds


def write_xlsx(path: Path, rows: Sequence[ResultRow], shape: TableShape, *, thresholds: Thresholds) -> Path:
    import xlsxwriter  # only this sink needs it

    path.parent.mkdir(parents=True, exist_ok=True)
    book = xlsxwriter.Workbook(str(path), {"strings_to_numbers": False})
    try:
        sheet = book.add_worksheet("result")
        bold = book.add_format({"bold": True})
        red = book.add_format({"bg_color": "#FFC7CE"})
        header = shape.header()
        sheet.write_row(0, 0, header, bold)
        for i, row in enumerate(rows, start=1):
            sheet.write_row(i, 0, shape.cells(row), red if thresholds.diverges(row.metrics) else None)
        sheet.freeze_panes(1, 0)
        sheet.autofilter(0, 0, len(rows), len(header) - 1)
    finally:
        book.close()
    return path
