"""``result_{timestamp}.csv`` writer."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from dumpcmp.errors import OutputError
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.sinks.table import TableShape
from dumpcmp.outputs import new_file


def write_csv(
    path: Path, rows: Sequence[ResultRow], shape: TableShape, text: Sequence[tuple[int, Sequence[str]]] = ()
) -> Path:
    """The result table as ``path`` (or the next free name, see ``write_new_table``); the path written.

    ``text``: (Index, lines) of the files of the first rows, their lines made by ``row_lines``
    with OpSequence and without addresses (``shape`` has none then: a file whose rows have one
    is never given as text); the rows after them are formatted here.
    """
    done = sum(len(lines) for _, lines in text)
    keep = shape.op_sequence
    lines = (f"{index},{line if keep else line.partition(',')[2]}" for index, file in text for line in file)
    return write_new_table(path, shape.header(), (shape.cells(r) for r in rows[done:]), lines)


def row_lines(rows: Sequence[ResultRow], shape: TableShape) -> tuple[str, ...]:
    """Each row's CSV line after its Index cell, newline included, as ``write_new_table`` writes it."""
    lines: list[str] = []
    writer = csv.writer(_Lines(lines), lineterminator="\n")
    writer.writerows(shape.cells(r)[1:] for r in rows)
    return tuple(lines)


class _Lines:
    """A file to ``csv.writer`` that keeps each line it is given: the writer writes a row in one call."""

    def __init__(self, lines: list[str]) -> None:
        self.write = lines.append


def write_new_table(
    path: Path, header: Sequence[str], cells: Iterable[Sequence[str]], lines: Iterable[str] = ()
) -> Path:
    """Write a CSV table atomically, so a reader never sees half a result file; the path written.
    ``lines``, already CSV (each with its newline), come between the header and ``cells``.

    An existing result is never overwritten: two compares into one directory within the same
    second (one timestamp) get ``result_{ts}.csv`` and ``result_{ts}_1.csv`` (``new_file``).
    """

    def write(temp: Path) -> None:
        with temp.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(header)
            handle.writelines(lines)
            writer.writerows(cells)

    return new_file(path, write)


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
