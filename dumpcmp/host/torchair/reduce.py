"""``dumpcmp reduce``: GE dump files and FX npy files replaced by their per-tensor summaries.

A long TorchAir run dumps far more than a disk holds; statistics and md5 comparisons need only a
few numbers per tensor. ``Reducer.reduce`` turns one file into a ``ReducedFile``
(``dumpcmp.proto.reduced`` describes the numbers and the file they go to), appends it durably
beside the original, and only then deletes the original. A file that cannot be read (truncated,
corrupt, a dtype without a decoder) is left in place and reported with its reason; nothing else
stops. A file whose summary is already on disk (a rerun after the deletion was lost) is only
deleted, so reruns are idempotent.

Statistics are computed chunk by chunk in float64, so a tensor costs its logical copy plus a
few MB whatever its size.
"""

from __future__ import annotations

import os
import threading
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dumpcmp.errors import BadFileNameError, ConfigError, FormatError
from dumpcmp.host.torchair.fx_golden import parse_fx_name
from dumpcmp.proto.codec import read_dump
from dumpcmp.proto.names import parse_dump_name
from dumpcmp.proto.npy import load_npy
from dumpcmp.proto.reduced import (
    REDUCED_FILE,
    STATISTICS,
    ReducedFile,
    ReducedTensor,
    append_reduced,
    read_reduced,
)
from dumpcmp.proto.sniff import not_regular
from dumpcmp.proto.walker import SkippedFile, dump_entry

__all__ = [
    "ReduceReport", "Reducer", "kind_of", "parse_keep", "skip_reason", "summarize", "tensor_summary",
    "tree_files",
]  # fmt: skip

_CHUNK = 1 << 20  # elements per statistics step: 8 MB of float64


def parse_keep(text: str) -> tuple[str, ...]:
    """``--keep min,max,…``: the statistics to keep, in the fixed order; ConfigError if unknown."""
    wanted = [part.strip().lower() for part in text.split(",") if part.strip()]
    unknown = [w for w in wanted if w not in STATISTICS]
    if unknown or not wanted:
        raise ConfigError(
            f"--keep {text!r}: " + (f"unknown statistic {unknown[0]!r}; " if unknown else "nothing to keep; ")
            + f"choose from {','.join(STATISTICS)}"
        )  # fmt: skip
    # A statistic named twice is a slip (another was meant, perhaps): said, as config acl says it.
    repeated = next((w for i, w in enumerate(wanted) if w in wanted[:i]), None)
    if repeated is not None:
        raise ConfigError(f"--keep {text!r}: names {repeated} more than once; name each once")
    return tuple(s for s in STATISTICS if s in wanted)


def kind_of(path: Path) -> str | None:
    """``ge`` for a binary dump file name, ``fx`` for an FX npy file name, None for anything else."""
    name = path.name
    if name.startswith(".") or name == REDUCED_FILE:
        return None
    if name.endswith(".npy"):
        try:
            parse_fx_name(name)
        except BadFileNameError:
            return None
        return "fx"
    try:
        parse_dump_name(name)
    except FormatError:
        return "ge" if name.isdigit() else None  # numeric long-name dumps (mapping.csv)
    return "ge"


def skip_reason(path: Path) -> str:
    """Why ``compare --mode torchair`` would pass over a file ``kind_of`` does not take, as it says
    it; "" for a file passed over quietly (graph dumps, logs, this tool's own summaries)."""
    name = path.name
    if name.startswith(".") or name == REDUCED_FILE:
        return ""
    if name.endswith(".npy"):
        try:
            parse_fx_name(name)
        except BadFileNameError as exc:
            return f"not an FX dump file name: {exc.reason}"
        return ""
    found = dump_entry(path, path.parent)
    return found.reason if isinstance(found, SkippedFile) else ""


def _not_readable(path: Path) -> str:
    """Why a file of a dump name is not reduced: a link (its target is reduced where it lies, and
    removing the link frees nothing) or no regular file (a FIFO would block the reader)."""
    if path.is_symlink():
        return "a symbolic link: not reduced (its target is reduced in its own directory)"
    return not_regular(path)


def tensor_summary(
    array: np.ndarray, keep: Sequence[str], io: str = "output", index: int = 0
) -> ReducedTensor:
    """The kept statistics of ``array`` (already logical and widened), computed in chunks."""
    flat = np.ascontiguousarray(array).reshape(-1)
    crc, highs, lows, sums, squares = 0, [], [], [], []
    for start in range(0, flat.size, _CHUNK):
        part = flat[start : start + _CHUNK]
        if "crc32" in keep:
            crc = zlib.crc32(part.tobytes(), crc)
        values = part.astype(np.float64)
        with np.errstate(all="ignore"):
            highs.append(values.max())
            lows.append(values.min())
            sums.append(values.sum())
            squares.append(np.square(values).sum())
    count = flat.size
    with np.errstate(all="ignore"):
        computed: dict[str, float | int | None] = {
            "max": float(np.max(highs)) if count else None,
            "min": float(np.min(lows)) if count else None,
            "mean": float(np.sum(sums) / count) if count else None,
            "l2norm": float(np.sqrt(np.sum(squares))) if count else 0.0,
            "crc32": crc,
        }
    stats = {key: computed[key] for key in keep}
    return ReducedTensor(io, index, array.dtype.name, tuple(int(d) for d in array.shape), stats)


def _widened(array: np.ndarray) -> np.ndarray:
    # ml_dtypes types (bf16, fp8…) are user-defined numpy types; the comparison loads them as float32.
    return array.astype(np.float32) if array.dtype.isbuiltin == 2 else array


def summarize(path: Path, kind: str, keep: Sequence[str]) -> ReducedFile:
    """The summary of one GE dump or FX npy file; FormatError when the file cannot be read whole."""
    size = path.stat().st_size
    if kind == "fx":
        io, index = _fx_position(path.name)
        tensors = (tensor_summary(_widened(np.asarray(load_npy(path))), keep, io, index),)
        return ReducedFile(path.name, kind, size, tensors)
    dump = read_dump(path)
    summaries = []
    for io, group in (("input", dump.inputs), ("output", dump.outputs)):
        for tensor in group:
            summaries.append(tensor_summary(_widened(tensor.logical()), keep, io, tensor.index))
    return ReducedFile(path.name, kind, size, tuple(summaries))


def _fx_position(name: str) -> tuple[str, int]:
    """``{node}-{target}.{INPUT|OUTPUT}.{k}.{ts}.npy`` -> (io, k); ("output", 0) otherwise."""
    fields = name.split(".")
    if len(fields) >= 4 and fields[-4] in ("INPUT", "OUTPUT") and fields[-3].isdigit():
        return fields[-4].lower(), int(fields[-3])
    return "output", 0


@dataclass
class ReduceReport:
    """What a reduce run did: files replaced, bytes freed, files left in place and why."""

    reduced: int = 0
    freed: int = 0
    kept: list[tuple[Path, str]] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)  # files compare passes over too
    seen: int = 0  # files looked at, reduced or not


class Reducer:
    """Reduces files one at a time (thread-safe); ``report`` accumulates over calls.

    An ``OutputError`` (the summary cannot be written) is raised to the caller: every further
    file would fail the same way, and no original is deleted without its summary.
    """

    def __init__(self, keep: Sequence[str] = STATISTICS) -> None:
        self.keep = tuple(keep)
        self.report = ReduceReport()
        self._lock = threading.Lock()
        self._known: dict[Path, dict[str, int]] = {}  # directory -> reduced name -> original size

    def reduce(self, path: Path, refusal: Callable[[Path], str | None] | None = None) -> bool:
        """Replace ``path`` by its summary; False when it is no dump or npy file, or was kept
        (as ``refusal`` may say, for a dump file the caller knows must stay whole)."""
        kind = kind_of(path)
        with self._lock:
            self.report.seen += 1
            why = skip_reason(path) if kind is None else _not_readable(path)
            if why:
                self.report.skipped.append((path, why))
            if kind is None or why:
                return False
            if refusal is not None and (refused := refusal(path)) is not None:
                self.report.kept.append((path, refused))
                return False
            return self._reduce(path, kind)

    def reduce_all(self, paths: Iterable[Path]) -> ReduceReport:
        for path in paths:
            self.reduce(path)
        return self.report

    def reduce_tree(self, root: Path) -> ReduceReport:
        """Every dump and npy file under ``root``, directory by directory in name order."""
        return self.reduce_all(tree_files(root))

    def _reduce(self, path: Path, kind: str) -> bool:
        try:
            size = path.stat().st_size
            known = self._known_in(path.parent)
            if known.get(path.name) != size:
                entry = summarize(path, kind, self.keep)
                append_reduced(path.parent, entry)
                known[path.name] = entry.size
        except FileNotFoundError:
            return False  # gone meanwhile (reduced by an earlier pass, or removed by its writer)
        except FormatError as exc:
            self.report.kept.append((path, _reason(exc, path)))
            return False
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            self.report.kept.append((path, f"summary written, original not deleted: {exc.strerror or exc}"))
            return False
        self.report.reduced += 1
        self.report.freed += size
        return True

    def _known_in(self, directory: Path) -> dict[str, int]:
        known = self._known.get(directory)
        if known is None:
            # A damaged line's original, if still on disk, is summarised again: that repairs it.
            entries = read_reduced(directory).entries
            known = self._known[directory] = {n: e.size for n, e in entries.items()}
        return known


def _reason(exc: FormatError, path: Path) -> str:
    """The error without the path the caller prints anyway."""
    text = str(exc)
    for prefix in (f"{path}: ", f"{path.name}: "):
        text = text.removeprefix(prefix)
    return text


def tree_files(root: Path) -> Iterable[Path]:
    """Every file under ``root``, directory by directory in name order."""
    for directory, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            yield Path(directory) / name
