"""Hand-made result tables for the grading and advisor tests: one call per row, defaults for the rest."""

from __future__ import annotations

from dumpcmp.host.report.table import ResultTable, table_from_cells

OFFLINE_HEADER = [
    "Index", "OpType", "NPUDump", "DataType", "GroundTruth", "DataType", "TensorIndex", "Shape",
    "CosineSimilarity", "MaxAbsoluteError", "AccumulatedRelativeError", "RelativeEuclideanDistance",
    "KullbackLeiblerDivergence", "StandardDeviation", "MeanAbsoluteError", "RootMeanSquareError",
    "MaxRelativeError", "MeanRelativeError", "CompareFailReason",
]  # fmt: skip
OVERFLOW_HEADER = [*OFFLINE_HEADER[:8], "OverFlow", *OFFLINE_HEADER[8:]]
TORCHAIR_REAL_HEADER = [
    "API Name", "Stack Info", "Data Name", "Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr",
    "One Thousandth Err Ratio", "Five Thousandth Err Ratio", "Requires_grad Consistent",
    "Result", "Accuracy Reached or Not", "Err_message",
]  # fmt: skip
TORCHAIR_STATS_HEADER = [
    "API Name", "Stack Info", "Data Name", "Max diff", "Min diff", "Mean diff", "L2norm diff",
    "MaxRelativeErr", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr",
    "Result", "Accuracy Reached or Not", "Err_message",
]  # fmt: skip


def offline(
    index: int | None,
    op: str,
    io: str = "output",
    *,
    cos: float | str = 1.0,
    red: float | str = 0.0,
    max_abs: float | str = 0.0,
    max_rel: float | str = 0.0,
    reason: str = "",
    truth: str = "",
    dtype: str = "DT_FLOAT16",
    k: int = 0,
    overflow: str | None = None,
) -> list[str]:
    """One offline_data row; metrics not given are those of an exact match."""
    numbers = [cos, max_abs, 0.0, red, 0.0]
    cells = [_cell(v) for v in numbers] + ["(0.000;1.000),(0.000;1.000)"]
    cells += [_cell(v) for v in (0.0, 0.0, max_rel, 0.0)]
    if isinstance(cos, str):  # "NaN": a row without numbers
        cells = ["NaN"] * 10
    row = [
        "" if index is None else str(index), "Conv2D", op, dtype, truth or op, "DT_FLOAT",
        f"{op}:{io}:{k}", "[2,2]", *cells, reason,
    ]  # fmt: skip
    if overflow is not None:
        row.insert(8, overflow)
    return row


def offline_table(*rows: list[str]) -> ResultTable:
    header = OVERFLOW_HEADER if rows and len(rows[0]) == len(OVERFLOW_HEADER) else OFFLINE_HEADER
    return table_from_cells([header, *rows], source="hand-made")


def torchair(
    op: str,
    io: str = "output",
    *,
    cos: float | str = 1.0,
    max_abs: float | str = 0.0,
    max_rel: float | str = 0.0,
    ratio: float | str = 1.0,
    k: int = 0,
) -> list[str]:
    """One TorchAir real-data row."""
    values = [cos, max_abs, max_abs, max_rel, ratio, ratio]
    passed = isinstance(cos, float) and cos >= 0.99 and isinstance(max_rel, float) and max_rel < 0.01
    return [
        f"{op}.{io}.{k}", "", f"['{op}.npy', 'fx_{op}.npy']", *(_cell(v) for v in values), "N/A",
        "PASS" if passed else "FAIL", "Yes" if passed else "No", "",
    ]  # fmt: skip


def torchair_table(*rows: list[str]) -> ResultTable:
    return table_from_cells([TORCHAIR_REAL_HEADER, *rows], source="hand-made")


def _cell(value: float | str) -> str:
    return value if isinstance(value, str) else f"{value:.6f}"
