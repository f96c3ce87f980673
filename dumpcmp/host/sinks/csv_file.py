"""``result_{timestamp}.csv`` writer."""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from pathlib import Path

from dumpcmp.host.rows import ResultRow
from dumpcmp.host.sinks.table import TableShape


def write_csv(path: Path, rows: Sequence[ResultRow], shape: TableShape) -> Path:
    """Write the table atomically, so a reader never sees half a result file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.part")
    with temp.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(shape.header())
        writer.writerows(shape.cells(r) for r in rows)
    os.replace(temp, path)
    return path
