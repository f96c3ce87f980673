"""Statistics-mode dump files (``dump_data: "stats"``, formats.md §3.4): one CSV per op run."""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dumpcmp.errors import DumpFormatError, UnsupportedDtypeError
from dumpcmp.proto.dtypes import dtype_by_name

FIXED_COLUMNS = ("Input/Output", "Index", "Data Size", "Data Type", "Format", "Shape")
# The selectable statistics, in the fixed order the device writes them, keyed by acl.json name.
STAT_COLUMNS: dict[str, str] = {
    "Max": "Max Value",
    "Min": "Min Value",
    "Avg": "Avg Value",
    "Nan": "Nan Count",
    "Negative Inf": "Negative Inf Count",
    "Positive Inf": "Positive Inf Count",
    "L2norm": "l2norm",
}
_KNOWN_STATS = frozenset(STAT_COLUMNS.values())
DEFAULT_STATS = ("Max", "Min", "Avg", "Nan", "Negative Inf", "Positive Inf")


@dataclass(frozen=True, slots=True)
class StatsRow:
    """One tensor's statistics; ``stats`` maps column name → value (NaN where the device wrote NA)."""

    kind: str
    index: int
    data_size: int
    data_type: str
    format: str
    shape: tuple[int, ...] | None
    count: int
    stats: dict[str, float]


def header_for(stats: Sequence[str] = DEFAULT_STATS) -> list[str]:
    chosen = [STAT_COLUMNS[name] for name in STAT_COLUMNS if name in stats]
    return (
        [*FIXED_COLUMNS, *chosen[:3], "Count", *chosen[3:]]
        if _is_default(stats)
        else [
            *FIXED_COLUMNS,
            "Count",
            *chosen,
        ]
    )


def _is_default(stats: Sequence[str]) -> bool:
    return tuple(s for s in STAT_COLUMNS if s in stats) == DEFAULT_STATS


def read_stats_csv(path: str | os.PathLike[str]) -> list[StatsRow]:
    """Parse a stats CSV; a malformed file raises DumpFormatError naming the line."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DumpFormatError(source, 0, f"cannot read stats CSV: {exc}") from exc
    lines = text.splitlines(keepends=True)
    rows = list(csv.reader(lines))
    # DumpFormatError's offset is a byte offset: where each line starts, for the line-level errors.
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line.encode("utf-8")))
    if not rows or tuple(rows[0][: len(FIXED_COLUMNS)]) != FIXED_COLUMNS or "Count" not in rows[0]:
        raise DumpFormatError(
            source, 0, f"not a stats CSV: the header must start with {', '.join(FIXED_COLUMNS)}"
        )
    header = rows[0]
    # A misspelt statistic would silently drop that statistic from every row of the file.
    unknown = [c for c in header[len(FIXED_COLUMNS) :] if c != "Count" and c not in _KNOWN_STATS]
    if unknown:
        raise DumpFormatError(source, 0, f"unknown column {unknown[0]!r} in the header")
    result = []
    for line_no, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) != len(header):
            raise DumpFormatError(
                source, starts[line_no - 1], f"line {line_no} has {len(row)} fields, the header {len(header)}"
            )
        values = dict(zip(header, row, strict=True))
        try:
            result.append(
                StatsRow(
                    kind=values["Input/Output"].lower(),
                    index=int(values["Index"]),
                    data_size=int(values["Data Size"]),
                    data_type=_data_type(values["Data Type"]),
                    format=values["Format"],
                    shape=_shape(values["Shape"]),
                    count=int(values["Count"]),
                    stats={c: _number(values[c]) for c in header[len(FIXED_COLUMNS) :] if c != "Count"},
                )
            )
        except ValueError as exc:
            raise DumpFormatError(source, starts[line_no - 1], f"line {line_no}: {exc}") from None
    return result


def format_stats_csv(rows: Sequence[StatsRow], stats: Sequence[str] = DEFAULT_STATS) -> str:
    """The CSV text a device writes for ``rows`` (writer side of ``read_stats_csv``)."""
    header = header_for(stats)
    lines = [",".join(header)]
    for r in rows:
        fixed = {
            "Input/Output": r.kind.capitalize(),
            "Index": str(r.index),
            "Data Size": str(r.data_size),
            "Data Type": r.data_type,
            "Format": r.format,
            "Shape": _shape_text(r.shape),
            "Count": str(r.count),
        }
        lines.append(",".join(fixed.get(c) or _text(r.stats.get(c, math.nan)) for c in header))
    return "\n".join(lines) + "\n"


def _shape(text: str) -> tuple[int, ...] | None:
    """Dims joined by ``x``; ``NA``: a scalar (the device writes no dims); ``-``: unknown."""
    text = text.strip()
    if text in ("-", ""):
        return None
    if text.upper() == "NA":
        return ()
    dims = tuple(int(d) for d in text.split("x"))
    if any(d < 0 for d in dims):
        raise ValueError(f"negative dimension in shape {text!r}")
    return dims


def _shape_text(shape: tuple[int, ...] | None) -> str:
    if shape is None:
        return "-"
    return "x".join(str(d) for d in shape) if shape else "NA"


def _data_type(text: str) -> str:
    """The dtype name as written, refused when it names no data type (a corrupt file)."""
    try:
        dtype_by_name(text)
    except UnsupportedDtypeError:
        raise ValueError(f"unknown data type {text!r}") from None
    return text


def _number(text: str) -> float:
    text = text.strip()
    return math.nan if text.upper() in ("NA", "N/A", "") else float(text)


def _text(value: float) -> str:
    if math.isnan(value):
        return "NA"
    return f"{value:g}" if not float(value).is_integer() else str(int(value))
