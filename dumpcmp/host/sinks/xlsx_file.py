"""The same table as ``.xlsx`` (XlsxWriter), rows beyond the verdict thresholds marked red.

Cells hold what the CSV holds, but numeric columns are stored as numbers, so that Excel can
sort and filter them; NaN and infinities, which a spreadsheet cell cannot hold as numbers, stay
text as the CSV spells them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dumpcmp.host.metrics.offline_data import OFFLINE_DATA_COLUMNS
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.sinks.table import TableShape
from dumpcmp.host.verdict import Thresholds
from dumpcmp.outputs import atomic_path

# StandardDeviation is "(mean;std),(mean;std)": text.
NUMERIC_COLUMNS = frozenset({"Index", "OpSequence", *OFFLINE_DATA_COLUMNS} - {"StandardDeviation"})


def write_xlsx(path: Path, rows: Sequence[ResultRow], shape: TableShape, *, thresholds: Thresholds) -> Path:
    """Write the table atomically, so a reader never sees half a workbook."""
    import xlsxwriter  # only this sink needs it

    header = shape.header()
    numeric = [name in NUMERIC_COLUMNS for name in header]
    with atomic_path(path) as temp:
        book = xlsxwriter.Workbook(str(temp), {"strings_to_numbers": False})
        try:
            sheet = book.add_worksheet("result")
            bold = book.add_format({"bold": True})
            red = book.add_format({"bg_color": "#FFC7CE"})
            sheet.write_row(0, 0, header, bold)
            for i, row in enumerate(rows, start=1):
                style = red if thresholds.diverges(row.metrics) else None
                for column, (cell, is_number) in enumerate(zip(shape.cells(row), numeric, strict=True)):
                    value = _number(cell) if is_number else None
                    if value is None:
                        sheet.write_string(i, column, cell, style)
                    else:
                        sheet.write_number(i, column, value, style)
            sheet.freeze_panes(1, 0)
            sheet.autofilter(0, 0, len(rows), len(header) - 1)
        finally:
            _close(book)
    return path


def _close(book: Any) -> None:
    """Close (write) the workbook; XlsxWriter wraps a failed write, atomic_path wants the OSError."""
    from xlsxwriter.exceptions import FileCreateError

    try:
        book.close()
    except FileCreateError as exc:
        cause = exc.args[0] if exc.args and isinstance(exc.args[0], OSError) else OSError(str(exc))
        raise cause from None


def _number(cell: str) -> float | None:
    """The CSV cell's value if it is a finite number (the CSV's rounding kept), else None."""
    try:
        value = float(cell)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
