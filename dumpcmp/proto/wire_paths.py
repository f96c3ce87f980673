"""The file-path rule of the wire protocol (``FileStart.path``), for both sides.

A host turns an uploaded file's path into a path under one of the session's directories, so it
refuses anything that could climb out of it, hide in it or confuse a shell or a later reader
(``..``, absolute paths, empty parts, backslashes, NUL and other control characters, over-long
names). An agent checks the files it would send with the same rule and passes over those the
host would refuse: one oddly named golden file refused the whole run's golden data.
"""

from __future__ import annotations

import re

from dumpcmp.outputs import NAME_MAX

MAX_PATH_BYTES = 1024
MAX_DEPTH = 16
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def wire_path_problem(path: str, *, single_part: bool = False) -> str | None:
    """Why ``path`` is no relative "/"-separated path a host takes, or None when it is one."""
    if not path:
        return "empty path"
    if len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        return f"path longer than {MAX_PATH_BYTES} bytes"
    if "\\" in path:
        return "backslash in path (the separator is '/')"
    bad = _CONTROL.search(path)  # not a look at each character in Python: every file's path passes here
    if bad is not None:
        return f"control character {ord(bad.group()):#04x} in path"
    if path.startswith("/"):
        return "absolute path"
    parts = path.split("/")
    if single_part and len(parts) > 1:
        return "a file name, not a path, is expected here"
    if len(parts) > MAX_DEPTH:
        return f"more than {MAX_DEPTH} levels"
    for part in parts:
        if part == "":
            return "empty path part ('//' or a trailing '/')"
        if part in (".", ".."):
            return f"{part!r} in path"
        if len(part.encode("utf-8", "surrogatepass")) > NAME_MAX:
            return f"a path part is longer than {NAME_MAX} bytes"
    return None
