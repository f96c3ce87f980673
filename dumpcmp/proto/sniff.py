"""What a file that is not the expected format looks like, for one useful error line.

A user who hands ``inspect`` an npy, json or csv file should read "x.npy is a numpy .npy file",
not a header length of 8453027202830724681 bytes. Only the first bytes are read.
"""

from __future__ import annotations

import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dumpcmp.errors import DumpFormatError, FormatError

__all__ = ["NPY_MAGIC", "named_if_not_a_dump", "not_a_dump", "not_regular", "what_is"]

NPY_MAGIC = b"\x93NUMPY"
_HEAD = 4096

_MAGICS: tuple[tuple[bytes, str], ...] = (
    (NPY_MAGIC, "a numpy .npy file"),
    (b"PK\x03\x04", "a zip archive (a numpy .npz file?)"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"\x7fELF", "an executable (ELF)"),
    (b"\x89HDF\r\n\x1a\n", "an HDF5 file"),
    (b"\x80\x02", "a Python pickle"),
    (b"\x80\x03", "a Python pickle"),
    (b"\x80\x04", "a Python pickle"),
    (b"\x80\x05", "a Python pickle"),
)


def what_is(path: Path) -> str | None:
    """ "a numpy .npy file", "a JSON file", "a CSV file", … or None when nothing is recognised."""
    try:
        with path.open("rb") as handle:
            head = handle.read(_HEAD)
    except OSError:
        return None
    for magic, kind in _MAGICS:
        if head.startswith(magic):
            return kind
    return _text_kind(head)


def not_a_dump(path: Path) -> str | None:
    """For a file that failed to read as a dump: "a JSON file, not a CANN dump file" when it is
    recognisably something else, None when it looks like nothing else (a damaged dump)."""
    kind = what_is(path)
    return None if kind is None else f"{kind}, not a CANN dump file"


@contextmanager
def named_if_not_a_dump(path: Path) -> Iterator[None]:
    """Around reading ``path`` as a dump: its DumpFormatError becomes "x.npy is a numpy .npy
    file, not a CANN dump file" when the file is recognisably something else."""
    try:
        yield
    except DumpFormatError:
        other = not_a_dump(path)
        if other is None:
            raise
        raise FormatError(f"{path} is {other}") from None


def _text_kind(head: bytes) -> str | None:
    if not head or b"\0" in head:
        return None
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # a multi-byte character cut at the end is still text
            return None
        text = head[: exc.start].decode("utf-8")
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith(("{", "[")):
        return "a JSON file"
    first = stripped.splitlines()[0] if stripped else ""
    if "Op Type" in first or "Input/Output" in first:
        return "a CSV file (a statistics dump, dump_data: stats?)"
    if first.count(",") >= 1:
        return "a CSV file"
    if stripped.startswith("<"):
        return "an XML or HTML file"
    return "a text file"


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"))  # fmt: skip


def not_regular(path: Path) -> str:
    """Why ``path`` is no file to read ("not a regular file: a FIFO"), "" for a regular file or one
    that is gone (a file reduced to a summary). Opening a FIFO would block its reader forever."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "" if not path.is_symlink() else "a symbolic link to nothing"
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    if stat.S_ISREG(mode):
        return ""
    kind = next((word for test, word in _KINDS if test(mode)), "special file")
    return f"not a regular file: {kind}"
