"""Names that arrive over the wire, checked before any of them touches the file system.

A session name becomes one directory (``proto.session_names``); an uploaded file's path becomes
a path under one of the session's directories (``proto.wire_paths``). A name that breaks the
rule is refused with the reason.
"""

from __future__ import annotations

from dumpcmp.errors import TransferError
from dumpcmp.proto.session_names import session_name_problem
from dumpcmp.proto.wire_paths import wire_path_problem


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
    problem = wire_path_problem(path, single_part=single_part)
    if problem is not None:
        raise BadWireName(path, problem)
    return tuple(path.split("/"))
