"""Reduced data: per-tensor summaries that stand in for dump files ``dumpcmp reduce`` deleted.

Format: one ``dumpcmp_reduced.jsonl`` per directory, UTF-8 JSON Lines. The first line is the
header ``{"format": "dumpcmp-reduced", "version": 1}``; every further line stands for one
original file of that directory::

    {"name": "Add.Add_1.5.0.1732410000000123", "kind": "ge", "size": 4321,
     "tensors": [{"io": "input", "index": 0, "dtype": "float16", "shape": [1, 8, 32],
                  "max": 3.25, "min": -2.0, "mean": 0.0123, "l2norm": 11.5, "crc32": 305419896}, …]}

* ``name`` is the original file name (the directory is where the jsonl file lies), ``kind`` is
  ``ge`` (a binary dump file, formats.md §1) or ``fx`` (an npy file), ``size`` its byte size.
* One entry per tensor: ``io`` ``input``/``output`` and ``index`` as in the dump file; an FX npy
  file holds one tensor whose io/index come from its name (``….INPUT.1.{ts}.npy``; ``output``/0
  when the name says neither).
* Every tensor is summarised as the comparison loads it: logical layout and shape (device
  padding never counted), bf16/fp8 widened to float32. ``dtype`` and ``shape`` are that array's.
* Statistics are those the user kept (``--keep``); an absent key is a statistic not kept (read
  back as ``None``). ``max``, ``min``, ``mean`` and ``l2norm`` (√Σx²) are computed in float64
  over every element: a NaN or inf in the data is the statistic's value, as numpy gives it;
  encoded as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (JSON has no such numbers).
  An empty tensor has no max/min/mean (null) and l2norm 0.
* ``crc32`` is ``zlib.crc32`` of that array's bytes in C order (the md5 mode's value,
  ``TensorStats.crc32``): equal logical tensors of one dtype have equal values whatever device
  layout the dump held them in.
* A later line for the same name replaces an earlier one. A last line without its newline is
  the torn tail of an interrupted append: readers skip it, the next append cuts it off.
* A whole line that is no record (bit rot, an edit) is skipped and reported as damaged, with the
  original's name when the line still shows it: the originals are gone, so one bad line must not
  cost the directory's other summaries. A damaged header line refuses the file.

Durability: a line is appended and fsynced (the directory too, when the file is new) before the
caller may delete the original, so an original is never gone without its summary on disk.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dumpcmp.errors import FormatError, OutputError

__all__ = [
    "REDUCED_FILE",
    "STATISTICS",
    "DamagedLine",
    "ReducedDirectory",
    "ReducedFile",
    "ReducedTensor",
    "append_reduced",
    "read_reduced",
    "walk_reduced",
]

REDUCED_FILE = "dumpcmp_reduced.jsonl"
STATISTICS = ("min", "max", "mean", "l2norm", "crc32")
_HEADER = {"format": "dumpcmp-reduced", "version": 1}
_SPECIAL = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
# A damaged line's "name" field, when the damage left it whole: names the original that is lost.
_NAME_FIELD = re.compile(rb'"name"\s*:\s*("(?:[^"\\]|\\.)*")')


@dataclass(frozen=True, slots=True)
class ReducedTensor:
    """The summary of one tensor; ``stats`` holds the statistics kept (float, or int for crc32)."""

    io: str  # "input" | "output"
    index: int
    dtype: str
    shape: tuple[int, ...]
    stats: Mapping[str, float | int | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ReducedFile:
    """The summary of one original file."""

    name: str
    kind: str  # "ge" | "fx"
    size: int
    tensors: tuple[ReducedTensor, ...]

    def tensor(self, io: str, index: int) -> ReducedTensor | None:
        return next((t for t in self.tensors if t.io == io and t.index == index), None)


@dataclass(frozen=True, slots=True)
class DamagedLine:
    """A complete line of a reduced file that holds no readable record."""

    path: Path  # the reduced file
    number: int  # 1-based line number
    name: str | None  # the original file's name, when the line still shows it
    reason: str

    def __str__(self) -> str:
        return f"{self.path.name} line {self.number}: not a reduced-data record ({self.reason})"


@dataclass(frozen=True, slots=True)
class ReducedDirectory:
    """One directory's reduced file: original file name -> summary, and the lines skipped as damaged."""

    entries: Mapping[str, ReducedFile] = field(default_factory=dict)
    damaged: tuple[DamagedLine, ...] = ()


def append_reduced(directory: Path, entry: ReducedFile) -> Path:
    """Append ``entry`` to ``directory``'s reduced file, durably; OutputError when it cannot be."""
    target = directory / REDUCED_FILE
    line = json.dumps(_encode(entry), separators=(",", ":"), allow_nan=False) + "\n"
    try:
        created = not target.exists()
        with open(target, "ab+") as handle:
            _cut_torn_tail(handle)
            if handle.tell() == 0:
                handle.write((json.dumps(_HEADER) + "\n").encode("utf-8"))
            handle.write(line.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        if created:
            _fsync_directory(directory)
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from None
    return target


def _cut_torn_tail(handle: Any) -> None:
    """Leave the handle at the end of the last whole line (an interrupted append left a part)."""
    end = handle.seek(0, os.SEEK_END)
    if end == 0:
        return
    handle.seek(end - 1)
    if handle.read(1) == b"\n":
        return
    handle.seek(0)
    whole = handle.read().rfind(b"\n") + 1
    handle.truncate(whole)
    handle.seek(whole)


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_reduced(directory: Path) -> ReducedDirectory:
    """The summaries of one directory (none when it holds no reduced file).

    A damaged line is skipped and listed; FormatError, naming the file, when the file cannot be
    read or its header is not ours (then no line of it can be trusted).
    """
    path = directory / REDUCED_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return ReducedDirectory()
    except OSError as exc:
        raise FormatError(f"{path}: cannot read: {exc.strerror or exc}") from None
    lines = data.split(b"\n")
    lines.pop()  # after the last newline: empty, or a torn line never completed
    entries: dict[str, ReducedFile] = {}
    damaged: list[DamagedLine] = []
    for number, raw in enumerate(lines, start=1):
        try:
            record = json.loads(raw)
            if number == 1:
                if record != _HEADER:
                    raise ValueError(f"header {raw[:80]!r} is not {_HEADER}")
                continue
            entry = _decode(record)
        except (ValueError, KeyError, TypeError) as exc:
            if number == 1:
                raise FormatError(f"{path}: line 1: not a reduced-data header ({exc})") from None
            damaged.append(DamagedLine(path, number, _damaged_name(raw), str(exc)))
            continue
        entries[entry.name] = entry
    # A later good line for the name restores what a damaged one lost.
    lost = tuple(d for d in damaged if d.name not in entries)
    return ReducedDirectory(entries, lost)


def _damaged_name(raw: bytes) -> str | None:
    found = _NAME_FIELD.search(raw)
    if found is None:
        return None
    try:
        name = json.loads(found.group(1))
    except ValueError:
        return None
    return name if isinstance(name, str) and name else None


def walk_reduced(root: Path) -> Iterator[tuple[Path, ReducedFile]]:
    """(original path, summary) for every reduced file under ``root``, directories in name order.

    FormatError for a damaged line: this whole-tree view has no place to list what it skips.
    """
    for directory, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if REDUCED_FILE in filenames:
            here = Path(directory)
            found = read_reduced(here)
            if found.damaged:
                raise FormatError(f"{here}/{found.damaged[0]}")
            for name, entry in sorted(found.entries.items()):
                yield here / name, entry


def _encode(entry: ReducedFile) -> dict[str, Any]:
    return {
        "name": entry.name,
        "kind": entry.kind,
        "size": entry.size,
        "tensors": [
            {
                "io": t.io,
                "index": t.index,
                "dtype": t.dtype,
                "shape": list(t.shape),
                **{k: _number(v) for k, v in t.stats.items()},
            }
            for t in entry.tensors
        ],
    }


def _number(value: float | int | None) -> float | int | str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def _decode(record: dict[str, Any]) -> ReducedFile:
    tensors = []
    for t in record["tensors"]:
        stats: dict[str, float | int | None] = {}
        for key in STATISTICS:
            if key in t:
                value = t[key]
                stats[key] = _SPECIAL[value] if isinstance(value, str) else value
        tensors.append(
            ReducedTensor(str(t["io"]), int(t["index"]), str(t["dtype"]), tuple(t["shape"]), stats)
        )
    return ReducedFile(str(record["name"]), str(record["kind"]), int(record["size"]), tuple(tensors))
