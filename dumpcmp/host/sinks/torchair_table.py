"""The TorchAir result table (metrics.md §2): its columns per summary mode and its cells.

API Name, Stack Info, Data Name, the mode's metric columns, Result, Accuracy Reached or Not,
Err_message. ``N/A`` = cannot be computed, ``NaN`` = NaN in the data, ``inf`` = division by zero.
Requires_grad Consistent is ``N/A``: neither GE nor FX dumps record requires_grad.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from dumpcmp.host.metrics.torchair import RealValues
from dumpcmp.host.sinks.csv_file import write_new_table
from dumpcmp.host.sinks.table import number
from dumpcmp.host.torchair.rows import StatsValues, TorchairRow

BASIC_COLUMNS = ("API Name", "Stack Info", "Data Name")
VERDICT_COLUMNS = ("Result", "Accuracy Reached or Not", "Err_message")
METRIC_COLUMNS: dict[str, tuple[str, ...]] = {
    "real": (
        "Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr", "One Thousandth Err Ratio",
        "Five Thousandth Err Ratio", "Requires_grad Consistent",
    ),
    "statistics": (
        "Max diff", "Min diff", "Mean diff", "L2norm diff",
        "MaxRelativeErr", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr",
    ),
    "md5": ("NPU MD5", "BENCH MD5"),
}  # fmt: skip
NOT_AVAILABLE = "N/A"
NO_GRAD_INFO = NOT_AVAILABLE  # dumps carry no requires_grad flag


def header(mode: str) -> list[str]:
    return [*BASIC_COLUMNS, *METRIC_COLUMNS[mode], *VERDICT_COLUMNS]


def cells(row: TorchairRow) -> list[str]:
    data_name = f"[{row.npu_label}, {row.bench_label}]"
    return [row.api_name, "", data_name, *metric_cells(row), row.result, row.accuracy_reached,
            "; ".join(row.reasons)]  # fmt: skip


def metric_cells(row: TorchairRow) -> list[str]:
    v = row.values
    if isinstance(v, RealValues):
        return [_value(v.cosine), _value(v.euc_dist), _value(v.max_abs_err), _value(v.max_relative_err),
                _value(v.one_thousandth_ratio), _value(v.five_thousandth_ratio), NO_GRAD_INFO]  # fmt: skip
    if isinstance(v, StatsValues):
        return [*(_value(d) for d in v.diffs()), *(_percent(r) for r in v.relative())]
    return [_crc(v.npu), _crc(v.bench)]


def _value(value: float | None) -> str:
    return NOT_AVAILABLE if value is None else number(value)


def _percent(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return _value(value)
    return f"{value * 100:.6f}%"


def _crc(value: int | None) -> str:
    return NOT_AVAILABLE if value is None else f"{value:08x}"


def write_torchair_table(
    path: Path, rows: Sequence[TorchairRow], mode: str, *, xlsx: bool = False
) -> tuple[Path, Path | None]:
    """The CSV at ``path`` (or the next free name) and, asked for, the same table as .xlsx (rows
    coloured by metrics.md §2's rules, the advisor's sheet: the xlsx sink's, for any family)."""
    columns = header(mode)
    table = [cells(r) for r in rows]
    result = write_new_table(path, columns, table)
    book = None
    if xlsx:
        from dumpcmp.host.sinks.xlsx_file import write_xlsx_cells
        from dumpcmp.host.verdict import Thresholds

        # offline_data's thresholds: the colour rules of a TorchAir table do not read them
        book = write_xlsx_cells(result.with_suffix(".xlsx"), columns, table, thresholds=Thresholds())
    return result, book
