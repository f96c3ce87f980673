"""The same table as ``.xlsx`` (XlsxWriter), rows beyond the verdict thresholds marked red.

Cells hold what the CSV holds, but numeric columns are stored as numbers, so that Excel can
sort and filter them; NaN and infinities, which a spreadsheet cell cannot hold as numbers, stay
text as the CSV spells them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from dumpcmp.host.metrics.offline_data import OFFLINE_DATA_COLUMNS, MetricValues
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.sinks.table import TableShape
from dumpcmp.host.verdict import Thresholds
from dumpcmp.outputs import atomic_path

# StandardDeviation is "(mean;std),(mean;std)": text.
NUMERIC_COLUMNS = frozenset({"Index", "OpSequence", *OFFLINE_DATA_COLUMNS} - {"StandardDeviation"})


def write_xlsx(path: Path, rows: Sequence[ResultRow], shape: TableShape, *, thresholds: Thresholds) -> Path:
    """Write the table atomically, so a reader never sees half a workbook."""
    marked = ((shape.cells(row), thresholds.diverges(row.metrics)) for row in rows)
    return write_xlsx_table(path, shape.header(), marked, len(rows))


def write_xlsx_cells(
    path: Path, header: Sequence[str], rows: Sequence[Sequence[str]], *, thresholds: Thresholds
) -> Path:
    """The table from its CSV cells (a host's stored rows), diverging rows judged from the cells."""
    columns = list(header)
    metrics = [columns.index(name) if name in columns else -1 for name in OFFLINE_DATA_COLUMNS]
    marked = ((cells, thresholds.diverges(_metrics_of(cells, metrics))) for cells in rows)
    return write_xlsx_table(path, header, marked, len(rows))


def write_xlsx_table(
    path: Path, header: Sequence[str], rows: Iterable[tuple[Sequence[str], bool]], count: int
) -> Path:
    """``count`` rows of cells, each with whether it diverges (marked red)."""
    import xlsxwriter  # only this sink needs it

    numeric = [name in NUMERIC_COLUMNS for name in header]
    with atomic_path(path) as temp:
        book = xlsxwriter.Workbook(str(temp), {"strings_to_numbers": False})
        try:
            sheet = book.add_worksheet("result")
            bold = book.add_format({"bold": True})
            red = book.add_format({"bg_color": "#FFC7CE"})
            sheet.write_row(0, 0, header, bold)
            for i, (cells, diverges) in enumerate(rows, start=1):
                style = red if diverges else None
                for column, (cell, is_number) in enumerate(zip(cells, numeric, strict=True)):
                    value = _number(cell) if is_number else None
                    if value is None:
                        sheet.write_string(i, column, cell, style)
                    else:
                        sheet.write_number(i, column, value, style)
            sheet.freeze_panes(1, 0)
            sheet.autofilter(0, 0, count, len(header) - 1)
        finally:
            _close(book)
    return path


def _metrics_of(cells: Sequence[str], positions: Sequence[int]) -> MetricValues:
    """The metrics a row's cells hold (as rounded as the CSV has them)."""
    values = {
        name: (cells[at] if at >= 0 else "NaN")
        for name, at in zip(OFFLINE_DATA_COLUMNS, positions, strict=True)
    }
    spread = re.fullmatch(r"\(([^;]*);([^)]*)\),\(([^;]*);([^)]*)\)", values["StandardDeviation"])
    mean_x, std_x, mean_y, std_y = (_float(v) for v in (spread.groups() if spread else ("nan",) * 4))
    return MetricValues(
        cosine_similarity=_float(values["CosineSimilarity"]),
        max_absolute_error=_float(values["MaxAbsoluteError"]),
        accumulated_relative_error=_float(values["AccumulatedRelativeError"]),
        relative_euclidean_distance=_float(values["RelativeEuclideanDistance"]),
        kullback_leibler_divergence=_float(values["KullbackLeiblerDivergence"]),
        mean_x=mean_x,
        std_x=std_x,
        mean_y=mean_y,
        std_y=std_y,
        mean_absolute_error=_float(values["MeanAbsoluteError"]),
        root_mean_square_error=_float(values["RootMeanSquareError"]),
        max_relative_error=_float(values["MaxRelativeError"]),
        mean_relative_error=_float(values["MeanRelativeError"]),
        spread_computed=spread is not None,
    )


def _float(cell: str) -> float:
    try:
        return float(cell)
    except ValueError:
        return math.nan


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
