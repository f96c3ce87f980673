"""Which files under a dump path are worth sending, and whether one has finished being written.

A dump file is finished when its size equation holds (formats.md §1: the header declares every
payload's size, the file is exactly header + payloads), or when it is broken in a way more
bytes cannot mend (so that the host reports it, as compare would). Files
without an equation (statistics ``.csv``, ``mapping.csv``) are finished when quiet; the watcher
applies the quiet time to every file alike, so a dump file that happens to be consistent between
two appends of a writer is not sent early.

The equation is checked from the header alone (its 8-byte length, then the header): a file whose
equation holds is whole whatever its payloads say, so its payloads are not read. Only a file whose
equation fails is read by the one dump codec, which tells a file still being written from a broken
one (and reads the other layouts, formats.md §1.2/§1.3).

An empty dump file is finished too, as a broken one: the watcher asks only once a file has been
quiet for the settle time (an empty one is never taken as settled earlier), and a writer that
created a file and wrote nothing for that long has failed. Waiting for it kept the session open
for ever; sent, it is reported unreadable by the host.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from dumpcmp.errors import BadFileNameError, DumpFormatError, TruncatedDumpError
from dumpcmp.proto.names import MAPPING_FILE, STATS_SUFFIX, parse_dump_name
from dumpcmp.proto.sniff import not_regular

# The walker's list of files that sit in dump trees but are not dumps: the agent leaves out
# exactly what a comparison would pass over quietly.
from dumpcmp.proto.walker import _QUIET_SUFFIXES

__all__ = ["FileRole", "Verdict", "check_complete", "is_empty", "role_of"]


class FileRole(Enum):
    DUMP = "dump"  # a binary dump file: has a size equation
    SIDECAR = "sidecar"  # statistics csv or mapping.csv: complete when quiet
    HIDDEN = "hidden"  # a writer's temporary (".name.part"): wait for its rename
    QUIET = "quiet"  # a known non-dump file (logs, json, npy): not sent, not reported
    FOREIGN = "foreign"  # a name that is no dump file name: not sent, reported


def role_of(path: Path) -> FileRole:
    name = path.name
    if name.startswith("."):
        return FileRole.HIDDEN
    if name == MAPPING_FILE:
        return FileRole.SIDECAR
    is_stats = name.endswith(STATS_SUFFIX)
    stem = name[: -len(STATS_SUFFIX)] if is_stats else name
    try:
        parse_dump_name(stem)
    except BadFileNameError:
        # Numeric long-name files (mapping.csv) are dumps too; their names are all digits.
        if name.isdigit():
            return FileRole.DUMP
        return FileRole.QUIET if name.endswith(_QUIET_SUFFIXES) and not is_stats else FileRole.FOREIGN
    return FileRole.SIDECAR if is_stats else FileRole.DUMP


LINK_NOT_FOLLOWED = "a symbolic link: not followed (the agent sends only files inside the directory)"


def not_sendable(path: Path) -> str:
    """Why ``path`` is no file the agent sends, "" for a regular file (or one gone meanwhile).

    A symbolic link is never followed, wherever it leads: the runtime writes no links, and one
    in a dump or golden directory (``ln -s /etc/passwd .../Passwd.x.1.1.1``) put a file from
    outside the directory given into the host's session."""
    if why := not_regular(path):
        return why
    return LINK_NOT_FOLLOWED if path.is_symlink() else ""


@dataclass(frozen=True, slots=True)
class Verdict:
    complete: bool
    reason: str = ""  # why not, for the report of files that never completed
    skipped: bool = False  # never a file to send (a FIFO, a device): passed over as compare does


def check_complete(path: Path, role: FileRole) -> Verdict:
    """Whether ``path`` (of ``role`` DUMP or SIDECAR) holds a whole file now."""
    if why := not_sendable(path):  # opening a FIFO blocks; a link to /dev/zero sends no dump
        return Verdict(False, why, skipped=True)
    if role is FileRole.SIDECAR:
        return Verdict(path.is_file(), "" if path.is_file() else "gone")
    if _equation_holds(path):
        return Verdict(True)
    if is_empty(path):
        return Verdict(True)
    from dumpcmp.proto.codec import read_dump

    try:
        read_dump(path)
    except TruncatedDumpError as exc:
        return Verdict(_impossible_header_length(path), exc.reason)
    except DumpFormatError:
        # Whole but unreadable (a broken header, bytes beyond what it declares): no later write
        # mends it, so it is sent and the host reports it unreadable, as compare does.
        return Verdict(True)
    return Verdict(True)


# The header's first bytes are read with its length: most headers are a few hundred bytes.
_FIRST_READ = 4096
# Bytes 8..11 of a file of the nano layout (codec.NANO_MAGIC, formats.md §1.3), which the codec
# reads: spelt out so that a watch imports the codec (and numpy, ~0.15 s of the agent's start)
# only for a file whose equation fails.
_NANO_MARK = b"\x5a\x5a\x5a\x5a"


def _equation_holds(path: Path) -> bool:
    """Whether ``path`` is a 2.0 dump file whose size equation holds (formats.md §1.1), read from
    its header alone: 8 + H + the payload sizes the header declares == the file's size.

    True means whole: the codec would then read it or find it broken, never truncated. False
    says nothing (still being written, another layout, unreadable): the codec decides."""
    from dumpcmp.proto._gen import dump_data_pb2  # loaded by the first dump file, as the codec does

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    except OSError:
        return False
    try:
        size = os.fstat(fd).st_size
        head = os.pread(fd, _FIRST_READ, 0)
        if len(head) < 12 or head[8:12] == _NANO_MARK:
            return False
        end = 8 + int.from_bytes(head[:8], "little")
        if end > size:
            return False
        header = head[8:end] if end <= len(head) else head[8:] + os.pread(fd, end - len(head), len(head))
    except OSError:
        return False
    finally:
        os.close(fd)
    message = dump_data_pb2.DumpData()
    try:
        if message.ParseFromString(header) != len(header):
            return False
    except Exception:  # protobuf's DecodeError, or whatever its C implementation raises
        return False
    declared = sum(item.size for items in (message.input, message.output, message.buffer, message.space)
                   for item in items)  # fmt: skip
    return end + declared == size


# Headers describe tensors (names, shapes, sizes): far below this even for thousands of tensors.
MAX_HEADER_BYTES = 1 << 30


def _impossible_header_length(path: Path) -> bool:
    """Whether the 8-byte header length says more than any header holds (random bytes said
    1.2e19): no writer will ever get there, so the file is broken, not still being written."""
    try:
        with path.open("rb") as handle:
            head = handle.read(8)
    except OSError:
        return False
    return len(head) == 8 and int.from_bytes(head, "little") > MAX_HEADER_BYTES


def is_empty(path: Path) -> bool:
    try:
        return path.stat().st_size == 0
    except OSError:
        return False
