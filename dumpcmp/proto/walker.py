"""Find dump files at any depth and group them by (device, model, model id, step).

CANN trees are ``{dump_path}/{time}/{device}/{model}/{model_id}/{step}/{file}`` (formats.md
§2.1), but single-op and newer layouts differ, so grouping reads the four directories above a
file when they fit that shape and falls back to the file's own directory otherwise. Every file
that is not taken is reported with the reason, never dropped silently.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from dumpcmp.errors import BadFileNameError
from dumpcmp.proto.names import MAPPING_FILE, STATS_SUFFIX, DumpName, parse_dump_name, read_mapping
from dumpcmp.proto.records import pickled_as_values, set_through_slots
from dumpcmp.proto.sniff import not_regular

# Files that sit in dump trees but are not dumps; skipped without comment.
_QUIET_SUFFIXES = (
    ".txt",
    ".json",
    ".npy",
    ".bin",
    ".log",
    ".pbtxt",
    ".md",
    ".onnx",
    ".om",
    ".py",
    ".html",
    ".xlsx",
)
# compare's own result tables (result_{ts}.csv, a shard's ..._result_{ts}_1.csv), as a run with the
# default "-o ." leaves them in the tree it compared: no dump file, whatever their .csv says.
_RESULT_TABLE = re.compile(r"(?:^|_)result_\d{14}(?:_\d+)?\.csv$")


@pickled_as_values
@dataclass(frozen=True, slots=True, order=True)
class GroupKey:
    """One result file's worth of dumps: a (device, model, model id, step) shard.

    ``session`` is the ``{time}`` directory above the device (``YYYYMMDDhhmmss``), so that two dump
    sessions written into one dump path stay two shards instead of doubling each other's rows.
    """

    device: str
    model: str
    model_id: str
    step: str
    session: str = ""

    @property
    def label(self) -> str:
        return f"{self.device}_{self.model}_{self.step}"


@pickled_as_values
@set_through_slots
@dataclass(frozen=True, slots=True)
class DumpEntry:
    path: Path
    name: DumpName
    group: GroupKey
    is_stats: bool = False


@dataclass(frozen=True, slots=True)
class SkippedFile:
    path: Path
    reason: str


@dataclass(slots=True)
class DumpTree:
    """Everything a walk found: dump files by group, and what it passed over and why."""

    root: Path
    groups: dict[GroupKey, list[DumpEntry]] = field(default_factory=dict)
    skipped: list[SkippedFile] = field(default_factory=list)

    @property
    def entries(self) -> list[DumpEntry]:
        return [e for key in sorted(self.groups) for e in self.groups[key]]


def walk_dump_tree(root: str | os.PathLike[str]) -> DumpTree:
    """Walk ``root`` (a directory or a single dump file) in a deterministic order."""
    base = Path(root)
    tree = DumpTree(base)
    if base.is_file():
        _add(tree, dump_entry(base, base.parent))
        return tree
    for here, files in listed_files(base):
        mapping = mapping_of(here, files)
        group = directory_group(here, base)
        # The directory's list, looked up once: hashing its group key (a dataclass's __hash__ in
        # Python) for every file cost ~1 us a file.
        grouped: list[DumpEntry] | None = None
        for filename, irregular in files:
            if filename == MAPPING_FILE:
                continue
            path = child_path(here, filename)
            found = (
                SkippedFile(path, irregular)
                if irregular
                else _entry(path, mapping.get(filename, filename), group, filename)
            )
            if isinstance(found, DumpEntry):
                if grouped is None:
                    grouped = tree.groups.setdefault(group, [])
                grouped.append(found)
            else:
                _add(tree, found)
    for entries in tree.groups.values():
        entries.sort(key=lambda e: (e.name.timestamp, e.name.task_id, str(e.path)))
    return tree


def listed_files(root: Path) -> Iterator[tuple[Path, list[tuple[str, str]]]]:
    """Each directory under ``root`` (top-down, sorted, as ``os.walk`` visits them, unreadable
    ones passed over) with its files, sorted: (name, why it is no regular file or "").

    Reads the file types the directory listing gives, so a regular file costs no ``stat`` (a
    stat per file was a third of planning a thousand-file compare).
    """
    try:
        with os.scandir(root) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError:
        return
    directories = [_is_directory(e) for e in entries]  # asked once an entry: a call and a try each
    files = [e for e, is_directory in zip(entries, directories, strict=True) if not is_directory]
    yield root, [(e.name, "" if _is_regular(e) else not_regular(Path(e.path))) for e in files]
    for entry, is_directory in zip(entries, directories, strict=True):
        if is_directory and not entry.is_symlink():  # os.walk's default: links not followed
            yield from listed_files(root / entry.name)


# CPython's own listings (``Path.iterdir``, ``glob``) join a listed name to its directory without
# parsing it again; ``directory / name`` parses it, ~3-7 µs of every dump and golden file a run
# lists. Private, so looked up once and tried once, with the public join where an interpreter
# lacks it or it joins otherwise.
_JOIN_LISTED: Callable[[Path, str], Path] | None = getattr(Path, "_make_child_relpath", None)
if _JOIN_LISTED is not None and _JOIN_LISTED(Path("/a"), "b.1") != Path("/a/b.1"):
    _JOIN_LISTED = None


def child_path(directory: Path, name: str) -> Path:
    """``directory / name`` for a ``name`` a listing of ``directory`` gave: one path component,
    neither empty nor ``.`` or ``..``."""
    return _JOIN_LISTED(directory, name) if _JOIN_LISTED is not None else directory / name


def mapping_of(directory: Path, files: list[tuple[str, str]]) -> dict[str, str]:
    """The ``mapping.csv`` of a directory ``listed_files`` gave with ``files`` ({} without one)."""
    return read_mapping(directory) if any(name == MAPPING_FILE for name, _ in files) else {}


def _is_directory(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_regular(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def _add(tree: DumpTree, found: DumpEntry | SkippedFile | None) -> None:
    if isinstance(found, SkippedFile):
        tree.skipped.append(found)
    elif found is not None:
        tree.groups.setdefault(found.group, []).append(found)


def dump_entry(path: Path, base: Path, name: str | None = None) -> DumpEntry | SkippedFile | None:
    """What a walk of ``base`` makes of the file ``path`` (named ``name`` by a mapping file):
    a dump entry, a file skipped with its reason, or None for a file quietly passed over."""
    irregular = not_regular(path)
    if irregular:
        return SkippedFile(path, irregular)
    return _entry(path, path.name if name is None else name, directory_group(path.parent, base))


def arrived_entry(path: Path, base: Path, mapping: dict[str, str]) -> DumpEntry | SkippedFile | None:
    """``dump_entry`` for a file met alone (a host receiving it), named as a walk names it: through
    ``mapping``, its directory's ``read_mapping``; the mapping file itself is no entry."""
    if path.name == MAPPING_FILE:
        return None
    return dump_entry(path, base, mapping.get(path.name))


def _entry(path: Path, name: str, group: GroupKey, filename: str = "") -> DumpEntry | SkippedFile | None:
    """``dump_entry`` for a regular file whose directory's group is known; ``filename``: its
    own name, where the caller has it (``path.name`` splits the path again)."""
    if (filename or path.name).startswith("."):  # its own name: a mapping file's entry is no hidden file
        return SkippedFile(path, "hidden or temporary file (still being written?)")
    is_stats = name.endswith(STATS_SUFFIX)
    stem = name[: -len(STATS_SUFFIX)] if is_stats else name
    try:
        parsed = parse_dump_name(stem)
    except BadFileNameError as exc:
        if (not name.endswith(_QUIET_SUFFIXES) or is_stats) and not _RESULT_TABLE.search(name):
            mapped = f"{MAPPING_FILE} names it {name!r}, " if name != path.name else ""
            return SkippedFile(path, f"{mapped}not a dump file name: {exc.reason}")
        return None
    return DumpEntry(path, parsed, group, is_stats)


def directory_group(directory: Path, base: Path) -> GroupKey:
    """The group of the files in ``directory`` of a walk of ``base``."""
    try:
        parts = directory.relative_to(base).parts
    except ValueError:
        parts = directory.parts
    # A root inside the tree (the device or step directory, or one file) leaves fewer than four
    # directories below it: the directories above the root then still name the group.
    absolute = directory.absolute().parts
    for candidate in (parts, absolute):
        if _is_group(candidate):
            device, model, model_id, step = candidate[-4:]
            # The session directory may lie above the root, as the group's own levels may.
            session = absolute[-5] if len(absolute) >= 5 and _SESSION.match(absolute[-5]) else ""
            return GroupKey(device, model, model_id, step, session)
    return GroupKey("0", parts[-1] if parts else base.name or "dump", "0", "0")


_SESSION = re.compile(r"^[0-9]{14}$")


def model_of(wire_path: str) -> str:
    """The model name a dump file's '/'-separated path names (``…/{device}/{model}/{model_id}/{step}/FILE``),
    or "" when its directories are no dump group."""
    parts = tuple(wire_path.split("/")[:-1])
    return parts[-3] if _is_group(parts) else ""


def _is_group(parts: tuple[str, ...]) -> bool:
    """``{device}/{model}/{model_id}/{step}``: three numeric levels around the model name."""
    return len(parts) >= 4 and parts[-4].isdigit() and parts[-2].isdigit() and parts[-1].isdigit()
