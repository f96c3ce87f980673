"""``result_{timestamp}.csv`` writer."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from dumpcmp.host.rows import ResultRow
from dumpcmp.host.sinks.table import TableShape
from dumpcmp.outputs import atomic_path


def write_csv(path: Path, rows: Sequence[ResultRow], shape: TableShape) -> Path:
    """Write the table atomically, so a reader never sees half a result file."""
    with atomic_path(path) as temp, temp.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(shape.header())
        writer.writerows(shape.cells(r) for r in rows)
    return path
