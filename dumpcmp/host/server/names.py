"""Names that arrive over the wire, checked before any of them touches the file system.

A session name becomes one directory; an uploaded file's path becomes a path under one of the
session's directories. Anything that could climb out of it, hide in it or confuse a shell or a
later reader (``..``, absolute paths, empty parts, backslashes, NUL and other control
characters, over-long names) is refused with the reason.
"""

from __future__ import annotations

from dumpcmp.errors import TransferError
from dumpcmp.proto.session_names import session_name_problem

MAX_PART_BYTES = 255  # NAME_MAX of Linux file systems
MAX_PATH_BYTES = 1024
MAX_DEPTH = 16


class BadWireName(TransferError):
    """A session or file name from a client that the host will not use."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"{name[:200]!r}: {reason}")


def check_session_name(name: str) -> str:
    problem = session_name_problem(name)
    if problem is not None:
        raise BadWireName(name, problem)
    return name


def check_relative_path(path: str, *, single_part: bool = False) -> tuple[str, ...]:
    """The parts of ``path``, a relative "/"-separated path; BadWireName when it is unsafe."""
    if not path:
        raise BadWireName(path, "empty path")
    if len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        raise BadWireName(path, f"path longer than {MAX_PATH_BYTES} bytes")
    if "\\" in path:
        raise BadWireName(path, "backslash in path (the separator is '/')")
    bad = next((c for c in path if ord(c) < 0x20 or ord(c) == 0x7F), None)
    if bad is not None:
        raise BadWireName(path, f"control character {ord(bad):#04x} in path")
    if path.startswith("/"):
        raise BadWireName(path, "absolute path")
    parts = tuple(path.split("/"))
    if single_part and len(parts) > 1:
        raise BadWireName(path, "a file name, not a path, is expected here")
    if len(parts) > MAX_DEPTH:
        raise BadWireName(path, f"more than {MAX_DEPTH} levels")
    for part in parts:
        if part == "":
            raise BadWireName(path, "empty path part ('//' or a trailing '/')")
        if part in (".", ".."):
            raise BadWireName(path, f"{part!r} in path")
        if len(part.encode("utf-8", "surrogatepass")) > MAX_PART_BYTES:
            raise BadWireName(path, f"a path part is longer than {MAX_PART_BYTES} bytes")
    return parts
