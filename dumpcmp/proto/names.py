"""File-name grammar of CANN dumps and golden npy files (formats.md §2.3, §2.4)."""

from __future__ import annotations

_DUMP_UNSAFE = str.maketrans({" ": "_", ".": "_", "/": "_", "\\": "_"})
_GOLDEN_UNSAFE = str.maketrans({".": "_", "/": "_"})


def sanitize_dump_name(name: str) -> str:
    """GE's ReplaceStringElem: space, '.', '/', '\\' become '_' in op types, op and model names."""
    return name.translate(_DUMP_UNSAFE)


def sanitize_golden_name(name: str) -> str:
    """How golden npy files are keyed: '/' and '.' become '_' (msaccucmp's lookup rule)."""
    return name.translate(_GOLDEN_UNSAFE)
