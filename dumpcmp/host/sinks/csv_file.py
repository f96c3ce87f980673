"""``result_{timestamp}.csv`` writer."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from dumpcmp.errors import OutputError
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.sinks.table import TableShape
from dumpcmp.outputs import atomic_path


def write_csv(path: Path, rows: Sequence[ResultRow], shape: TableShape) -> Path:
    """The result table as ``path`` (or the next free name, see ``write_new_table``); the path written."""
    return write_new_table(path, shape.header(), (shape.cells(r) for r in rows))


def write_new_table(path: Path, header: Sequence[str], cells: Iterable[Sequence[str]]) -> Path:
    """Write a CSV table atomically, so a reader never sees half a result file; the path written.

    An existing result is never overwritten: two compares into one directory within the same
    second (one timestamp) get ``result_{ts}.csv`` and ``result_{ts}_1.csv``.
    """
    target = claim_new_path(path)
    try:
        with atomic_path(target) as temp, temp.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(header)
            writer.writerows(cells)
    except BaseException:
        target.unlink(missing_ok=True)  # still the empty claim: nothing replaced it
        raise
    return target


def claim_new_path(path: Path) -> Path:
    """Create ``path``, or the first free ``{stem}_{n}{suffix}``, empty and exclusively.

    Exclusive creation (O_EXCL) means two runs writing at the same moment never pick one name;
    the caller then replaces the empty claim with the whole file.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    candidate, n = path, 0
    while True:
        try:
            os.close(os.open(candidate, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            n += 1
            candidate = path.with_name(f"{path.stem}_{n}{path.suffix}")
            continue
        except OSError as exc:
            raise OutputError(f"cannot write {candidate}: {exc.strerror or exc}") from None
        return candidate
