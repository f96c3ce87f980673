"""``result_{timestamp}.csv`` writer."""

from __future__ import annotations

import csv
import itertools
from collections.abc import Sequence
from pathlib import Path

from dumpcmp.host.rows import ResultRow
from dumpcmp.host.sinks.table import TableShape
from dumpcmp.outputs import atomic_path


def write_csv(path: Path, rows: Sequence[ResultRow], shape: TableShape) -> Path:
    """Write the table atomically, so a reader never sees half a result file; the path written.

    An existing result is never overwritten: two compares into one directory within the same
    second (one timestamp) get ``result_{ts}.csv`` and ``result_{ts}_1.csv``.
    """
    target = unused_path(path)
    with atomic_path(target) as temp, temp.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(shape.header())
        writer.writerows(shape.cells(r) for r in rows)
    return target


def unused_path(path: Path) -> Path:
    """``path``, or ``{stem}_{n}{suffix}`` with the smallest n for which no such file exists."""
    candidates = itertools.chain(
        [path], (path.with_name(f"{path.stem}_{n}{path.suffix}") for n in itertools.count(1))
    )
    return next(p for p in candidates if not p.exists())
