"""Rows as columnar batches: how a batch of files' rows crosses between processes and machines.

A worker that compares a batch of files sends back one ``FileBatch``: per file, how many rows and
statistics rows it made, and the rows themselves as ``Columns``: numpy structured arrays (a
column per leaf field of the record, nested records flattened; a nested record that may be None,
or one of a union, gets a table of its own holding only the rows that have it), the batch's
distinct strings as one NUL-joined UTF-8 blob, and one flat integer array for the
variable-length fields (shapes, reasons). Pickled, that is a few buffers and a class reference,
not one Python object per row and cell. The coordinator makes the typed records again
(``ResultRow``, ``TorchairRow``, ``StatsResult``: what the session layer and the sinks read), a
batch's rows on their first use (``BatchRows``): a plain compare writes the lines the workers
formatted and counts the verdicts they sent (``row_verdicts``), and never makes them.

The layout is derived from the record's type hints, so a field added to a row travels without
a change here. Supported fields: ``float``, ``int``, ``bool``, ``str``, ``Path``, enums, each
optionally ``| None``; ``tuple[int, ...]`` and ``tuple[str, ...]`` (optionally ``| None``); nested frozen
dataclasses and unions of them (optionally ``| None``), a record nested in itself included
(``MetricValues.finite``).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import itertools
import operator
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from dumpcmp.errors import InternalError

if TYPE_CHECKING:
    from dumpcmp.host.row_verdicts import RowVerdicts

R = TypeVar("R")
_SEPARATOR = "\x00"  # never in a tensor, op or file name, nor in a reason
_EMPTY = np.empty(0, dtype=[("", "?")])  # a table without rows (nor tables nested in it)


@dataclass(frozen=True, slots=True)
class Columns(Generic[R]):
    """Records of one type, column by column (see the module's docstring)."""

    record: type[R]
    tables: tuple[np.ndarray, ...]  # the records' own first, then each nested one's
    strings: bytes
    items: np.ndarray  # the variable-length fields' elements, column after column


class _Pool:
    """The strings of a batch being encoded: each distinct one once, referred to by number."""

    def __init__(self) -> None:
        # Each string's number is its place: taken as ``ids.setdefault(text, len(ids))``
        self.ids: dict[str, int] = {}

    def blob(self) -> bytes:
        return _SEPARATOR.join(self.ids).encode()


@dataclass
class _Shared:
    """What every table of one batch shares while it is encoded."""

    pool: _Pool
    items: list[int]
    tables: list[np.ndarray]


@dataclass
class _Encoding:
    """One table being encoded: its columns (name → numpy type, values)."""

    shared: _Shared
    columns: dict[str, tuple[str, list[Any]]]

    @property
    def pool(self) -> _Pool:
        return self.shared.pool

    @property
    def items(self) -> list[int]:
        return self.shared.items

    def table(self, node: _Node, values: list[Any]) -> None:
        """``values`` (none of them None) encoded by ``node`` as a table of their own, the next
        one in the batch's order (taken before any table nested in it, as decoding reads them)."""
        place = len(self.shared.tables)
        self.shared.tables.append(_EMPTY)
        if not values:  # nor any table nested in it: a record nested in itself ends here
            return
        own = _Encoding(self.shared, {})
        node.encode("", values, own)
        table = np.empty(len(values), dtype=[(name, kind) for name, (kind, _) in own.columns.items()])
        for name, (_, column) in own.columns.items():
            table[name] = column
        self.shared.tables[place] = table


@dataclass
class _Reading:
    """What every table of one batch shares while it is decoded: where each reading is."""

    tables: tuple[np.ndarray, ...]
    strings: list[str]
    items: list[int]
    next_table: int = 0
    next_item: int = 0


@dataclass
class _Decoding:
    """One table being decoded."""

    reading: _Reading
    table: np.ndarray

    @property
    def strings(self) -> list[str]:
        return self.reading.strings

    def masked(self, values: list[Any], name: str) -> list[Any]:
        """``values`` with None where the column's None mask (``name?``) says so."""
        mask = self.table[name + "?"]
        if not mask.any():  # most columns of most batches: a value in every row
            return values
        return [None if gone else v for v, gone in zip(values, mask.tolist(), strict=True)]

    def take(self, counts: list[int], strings: list[str] | None) -> list[tuple[Any, ...] | None]:
        """The next elements of a variable-length field as tuples, ``counts[i]`` for row i (-1:
        None); with ``strings``, the elements are numbers of strings and come back as those."""
        reading = self.reading
        items, at = reading.items, reading.next_item
        if counts and 0 < counts[0] == min(counts) == max(counts):  # every row as long: shapes
            end = at + counts[0] * len(counts)
            elements = items[at:end] if strings is None else map(strings.__getitem__, items[at:end])
            reading.next_item = end
            return list(zip(*[iter(elements)] * counts[0], strict=True))  # the tuples made in C
        out: list[tuple[Any, ...] | None] = []
        for count in counts:
            if count < 0:
                out.append(None)
                continue
            part = items[at : at + count]
            out.append(tuple(map(strings.__getitem__, part)) if strings is not None else tuple(part))
            at += count
        reading.next_item = at
        return out

    def table_of(self, node: _Node) -> list[Any]:
        """The records of the next table, decoded by ``node``."""
        reading = self.reading
        table = reading.tables[reading.next_table]
        reading.next_table += 1
        return node.decode("", _Decoding(reading, table)) if len(table) else []


class _Node:
    """One field's columns: how to write a column of its values and read them back."""

    def encode(self, name: str, values: list[Any], into: _Encoding) -> None:
        raise NotImplementedError

    def decode(self, name: str, into: _Decoding) -> list[Any]:
        raise NotImplementedError


class _Number(_Node):
    """``float`` or ``int``: a float64 or int64 column, and a None mask if optional."""

    def __init__(self, kind: str, optional: bool) -> None:
        self.kind = kind
        self.optional = optional

    def encode(self, name: str, values: list[Any], into: _Encoding) -> None:
        if self.optional:
            into.columns[name + "?"] = ("?", [v is None for v in values])
            values = [0 if v is None else v for v in values]
        into.columns[name] = (self.kind, values)

    def decode(self, name: str, into: _Decoding) -> list[Any]:
        values: list[Any] = into.table[name].tolist()
        if self.optional:
            return into.masked(values, name)
        return values


class _Bool(_Node):
    def __init__(self, optional: bool) -> None:
        self.optional = optional

    def encode(self, name: str, values: list[Any], into: _Encoding) -> None:
        into.columns[name] = ("i1", [-1 if v is None else int(v) for v in values])

    def decode(self, name: str, into: _Decoding) -> list[Any]:
        if not self.optional:  # never -1: numpy makes the bools
            return into.table[name].astype(bool).tolist()  # type: ignore[no-any-return]
        return [None if v < 0 else bool(v) for v in into.table[name].tolist()]


class _Choice(_Node):
    """An ``Enum``: the member's place in its class (-1: None)."""

    def __init__(self, kind: type[Enum]) -> None:
        self.members = list(kind)
        self.places = {member: place for place, member in enumerate(self.members)}

    def encode(self, name: str, values: list[Any], into: _Encoding) -> None:
        places = self.places
        into.columns[name] = ("i2", [-1 if v is None else places[v] for v in values])

    def decode(self, name: str, into: _Decoding) -> list[Any]:
        members = self.members
        return [None if place < 0 else members[place] for place in into.table[name].tolist()]


class _Text(_Node):
    """``str`` or ``Path``: a number into the batch's strings (-1: None)."""

    def __init__(self, kind: type, optional: bool) -> None:
        self.kind = kind
        self.optional = optional

    def encode(self, name: str, values: list[Any], into: _Encoding) -> None:
        # The pool's own dict, not ``_Pool.id``: a method call per cell was the most of what
        # encoding a batch of records cost (dump entries, when they went to a cluster so).
        ids = into.pool.ids
        if self.kind is str and not self.optional:
            numbers = [ids.setdefault(v, len(ids)) for v in values]
        else:
            numbers = [-1 if v is None else ids.setdefault(str(v), len(ids)) for v in values]
        into.columns[name] = ("i4", numbers)

    def decode(self, name: str, into: _Decoding) -> list[Any]:
        strings = into.strings
        if self.kind is str and not self.optional:
            return [strings[i] for i in into.table[name].tolist()]
        kind = self.kind
        return [None if i < 0 else kind(strings[i]) for i in into.table[name].tolist()]


class _Tuple(_Node):
    """``tuple[int, ...]`` or ``tuple[str, ...]``: a count column (-1: None), elements in ``items``."""

    def __init__(self, of_str: bool, optional: bool) -> None:
        self.of_str = of_str
        self.optional = optional

    def encode(self, name: str, values: list[Any], into: _Encoding) -> None:
        into.columns[name] = ("i4", [-1 if v is None else len(v) for v in values])
        ids, items = into.pool.ids, into.items
        for value in values:
            if value:
                items.extend([ids.setdefault(v, len(ids)) for v in value] if self.of_str else value)

    def decode(self, name: str, into: _Decoding) -> list[Any]:
        return into.take(into.table[name].tolist(), into.strings if self.of_str else None)


class _Record(_Node):
    """A nested dataclass: its fields' columns under ``name.``, and a None mask if optional."""

    def __init__(self, cls: type, optional: bool) -> None:
        self.cls = cls
        self.optional = optional

    @property
    def fields(self) -> list[tuple[str, _Node]]:
        return _fields(self.cls)

    def encode(self, name: str, values: list[Any], into: _Encoding) -> None:
        if self.optional:  # a table of its own for the rows that have one
            into.columns[name + "?"] = ("?", [v is None for v in values])
            into.table(self.required, [v for v in values if v is not None])
            return
        for field_name, node in self.fields:
            node.encode(f"{name}.{field_name}", list(map(operator.attrgetter(field_name), values)), into)

    def decode(self, name: str, into: _Decoding) -> list[Any]:
        if self.optional:
            present = into.table_of(self.required)
            if not present:  # most batches of most nested records (NaN/inf found nowhere)
                return [None] * len(into.table)
            made = iter(present)
            return [None if gone else next(made) for gone in into.table[name + "?"].tolist()]
        columns = [node.decode(f"{name}.{field_name}", into) for field_name, node in self.fields]
        return _made(self.cls, columns)

    @property
    def required(self) -> _Record:
        return _Record(self.cls, optional=False)


class _Union(_Node):
    """One of several dataclasses: a tag column (-1: None), a table per alternative."""

    def __init__(self, alternatives: list[_Record]) -> None:
        self.alternatives = [alt.required for alt in alternatives]

    def encode(self, name: str, values: list[Any], into: _Encoding) -> None:
        kinds = [alt.cls for alt in self.alternatives]
        tags = [-1 if v is None else kinds.index(type(v)) for v in values]
        into.columns[name] = ("i1", tags)
        for number, alt in enumerate(self.alternatives):
            into.table(alt, [v for v, tag in zip(values, tags, strict=True) if tag == number])

    def decode(self, name: str, into: _Decoding) -> list[Any]:
        made = [iter(into.table_of(alt)) for alt in self.alternatives]
        return [None if tag < 0 else next(made[tag]) for tag in into.table[name].tolist()]


def _node(hint: Any) -> _Node:
    optional = False
    members: tuple[Any, ...] = (hint,)
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        members = typing.get_args(hint)
        optional = type(None) in members
        members = tuple(m for m in members if m is not type(None))
    if len(members) > 1:
        alternatives = [_node(m) for m in members]
        if not all(isinstance(a, _Record) for a in alternatives):
            raise InternalError(f"row batches carry unions of records only, not {hint}")
        return _Union([a for a in alternatives if isinstance(a, _Record)])
    (kind,) = members
    if kind is float:
        return _Number("f8", optional)
    if kind is bool:
        return _Bool(optional)
    if kind is int:
        return _Number("i8", optional)
    if kind in (str, Path):
        return _Text(kind, optional)
    if isinstance(kind, type) and issubclass(kind, Enum):
        return _Choice(kind)
    if typing.get_origin(kind) is tuple:
        element, *rest = typing.get_args(kind)
        if rest != [Ellipsis] or element not in (int, str):
            raise InternalError(f"row batches carry tuple[int, ...] and tuple[str, ...], not {kind}")
        return _Tuple(element is str, optional)
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        return _Record(kind, optional)
    raise InternalError(f"row batches cannot carry a field of type {kind}")


def _made(cls: type, columns: list[list[Any]]) -> list[Any]:
    """Records of ``cls`` again, field ``i`` of record ``j`` from ``columns[i][j]``.

    Each column is set through its slot, one C-level pass per column, as unpickling a record
    does, not through ``__init__``: a frozen dataclass's ``__init__`` sets each field with a
    Python-level ``object.__setattr__`` call, and that was most of what reading a batch's rows
    back cost the coordinator (~6 of ~10 µs a row). Classes with slots and no ``__post_init__``
    only (``_slot_setters``); others through ``__init__``.
    """
    setters = _slot_setters(cls)
    if setters is None or not columns:
        return list(map(cls, *columns))
    records: list[Any] = list(map(object.__new__, itertools.repeat(cls, len(columns[0]))))
    for setter, column in zip(setters, columns, strict=True):
        collections.deque(map(setter, records, column), maxlen=0)
    return records


@functools.cache
def _slot_setters(cls: type) -> list[Callable[[Any, Any], None]] | None:
    """The ``__set__`` of each field's slot of dataclass ``cls``, in field order; None when its
    records must be made through ``__init__`` (no slots, or a ``__post_init__`` to run)."""
    if hasattr(cls, "__post_init__"):
        return None
    slots = [cls.__dict__.get(f.name) for f in dataclasses.fields(cls)]
    if not all(isinstance(slot, types.MemberDescriptorType) for slot in slots):
        return None
    return [slot.__set__ for slot in slots]  # type: ignore[union-attr]


@functools.cache
def _fields(cls: type) -> list[tuple[str, _Node]]:
    """Each field of the dataclass ``cls`` with its node; read on first use, so that a record
    nested in itself (``MetricValues.finite``) is no endless recursion."""
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    if not all(f.init for f in fields):
        raise InternalError(f"{cls.__name__}: a field __init__ does not take cannot be made again")
    return [(f.name, _node(hints[f.name])) for f in fields]


def encode(records: Sequence[R]) -> Columns[R] | None:
    """``records`` (all of one dataclass type) as columns; None when there are none."""
    if not records:
        return None
    cls: type = type(records[0])
    shared = _Shared(_Pool(), [], [])
    _Encoding(shared, {}).table(_Record(cls, optional=False), list(records))
    items = np.array(shared.items, dtype=np.int64)
    if items.size and items.min() >= -(1 << 31) and items.max() < 1 << 31:
        items = items.astype(np.int32)  # string numbers and shapes: half the bytes
    return Columns(cls, tuple(shared.tables), shared.pool.blob(), items)


def decode(columns: Columns[R] | None) -> list[R]:
    """The records ``encode`` was given, made again."""
    if columns is None:
        return []
    strings = columns.strings.decode().split(_SEPARATOR)
    reading = _Reading(columns.tables, strings, columns.items.tolist())
    record: type = columns.record
    return _Decoding(reading, columns.tables[0]).table_of(_Record(record, optional=False))


@dataclass(frozen=True, slots=True)
class FileBatch:
    """The rows and statistics rows of consecutive files: ``counts[i]`` = (rows, stats, formatted)
    of file i; ``text``: the lines of the files formatted by the worker (see ``FileRows.text``),
    one per row, NUL-joined (a CSV line holds no NUL); ``verdicts``: the rows' verdicts, where the
    worker's family judges its rows (``ResultFamily.row_verdicts``)."""

    counts: np.ndarray
    rows: Columns[Any] | None
    stats: Columns[Any] | None
    text: bytes = b""
    verdicts: RowVerdicts | None = None

    @classmethod
    def of(
        cls,
        files: Sequence[tuple[Sequence[Any], Sequence[Any], Sequence[str] | None]],
        verdicts: RowVerdicts | None = None,
    ) -> FileBatch:
        """(rows, stats rows, each row's line or None) of each file, in file order, and the
        verdicts of all their rows, if judged."""
        counts = np.array(
            [(len(rows), len(stats), text is not None) for rows, stats, text in files], dtype=np.int32
        ).reshape(-1, 3)
        rows = encode([r for rows, _, _ in files for r in rows])
        stats = encode([s for _, stats, _ in files for s in stats])
        lines = [line for _, _, text in files if text is not None for line in text]
        return cls(counts, rows, stats, _SEPARATOR.join(lines).encode(), verdicts)

    def files(
        self, places: Sequence[int | None] | None = None
    ) -> list[tuple[BatchRows, tuple[Any, ...], tuple[str, ...] | None]]:
        """(rows, stats rows, each row's line or None) of each file again, the rows made on their
        first use (``BatchRows``); ``places``: each file's rows' ``index`` instead of the one they
        were sent with (None: keep that)."""
        if places is not None and self.rows is not None:
            _place(self.rows.tables[0], places, self.counts[:, 0])
        batch = _Batch(self.rows, self.verdicts)
        stats = tuple(decode(self.stats))  # tuples sliced, each file's part a tuple at once
        lines = tuple(self.text.decode().split(_SEPARATOR)) if self.text else ()
        out: list[tuple[BatchRows, tuple[Any, ...], tuple[str, ...] | None]] = []
        at_row = at_stat = at_line = 0
        for row_count, stat_count, formatted in self.counts.tolist():
            row_end, stat_end = at_row + row_count, at_stat + stat_count
            text = None
            if formatted:
                text = lines[at_line : at_line + row_count]
                at_line += row_count
            out.append((BatchRows(batch, at_row, row_end), stats[at_stat:stat_end], text))
            at_row, at_stat = row_end, stat_end
        return out


class _Batch:
    """The rows of one batch a worker sent, made once, on the first use of any of them."""

    __slots__ = ("_golden_keys", "_rows", "columns", "verdicts")

    def __init__(self, columns: Columns[Any] | None, verdicts: RowVerdicts | None) -> None:
        self.columns = columns
        self.verdicts = verdicts
        self._rows: tuple[Any, ...] | None = None
        self._golden_keys: list[str] | None = None

    def rows(self) -> tuple[Any, ...]:
        if self._rows is None:
            self._rows = tuple(decode(self.columns))
        return self._rows

    def golden_keys(self) -> list[str]:
        """Each row's ``golden_key``, read from its column alone."""
        if self._golden_keys is None:
            if self._rows is not None or self.columns is None:
                self._golden_keys = [r.golden_key for r in self.rows()]
            else:
                strings = self.columns.strings.decode().split(_SEPARATOR)
                numbers = self.columns.tables[0][".golden_key"].tolist()
                self._golden_keys = [strings[i] for i in numbers]
        return self._golden_keys


class MadeOnUse(Sequence[R]):
    """A sequence of records made on its first use (``_made``), equal to, hashed and shown as
    the tuple of them."""

    __slots__ = ()

    def _made(self) -> tuple[R, ...]:
        raise NotImplementedError

    def __iter__(self) -> typing.Iterator[R]:
        return iter(self._made())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and self._made() == tuple(other)

    def __hash__(self) -> int:
        return hash(self._made())

    def __repr__(self) -> str:
        return repr(self._made())


class BatchRows(MadeOnUse[Any]):
    """One file's rows of a worker's batch, a sequence like the tuple they were: the batch's rows
    are made on the first use of any (``_Batch``); their golden keys and verdicts
    (``row_verdicts.verdicts_of``) are read without making them."""

    __slots__ = ("batch", "start", "stop")

    def __init__(self, batch: _Batch, start: int, stop: int) -> None:
        self.batch = batch
        self.start = start
        self.stop = stop

    def _made(self) -> tuple[Any, ...]:
        return self.batch.rows()[self.start : self.stop]

    def __len__(self) -> int:
        return self.stop - self.start

    @typing.overload
    def __getitem__(self, at: int) -> Any: ...

    @typing.overload
    def __getitem__(self, at: slice) -> tuple[Any, ...]: ...

    def __getitem__(self, at: int | slice) -> Any:
        return self._made()[at]

    def golden_keys(self) -> list[str]:
        return self.batch.golden_keys()[self.start : self.stop]


def _place(table: np.ndarray, places: Sequence[int | None], rows_per_file: np.ndarray) -> None:
    """Set the rows' ``index`` (their first field, ``int | None``) to their file's place."""
    if table.dtype.names is None or table.dtype.names[:2] != (".index?", ".index"):
        raise InternalError("rows placed by file have no `index: int | None` as their first field")
    known = np.array([p is not None for p in places], dtype=bool)
    table[".index?"] = np.repeat(~known, rows_per_file)
    table[".index"] = np.repeat(np.array([p or 0 for p in places], dtype=np.int64), rows_per_file)
