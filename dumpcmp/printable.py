"""Text for a terminal: control characters shown as escapes, every other character as is;
counts with their noun, and the list of skipped files.

A newline in a file or op name would make one error line two, and an ESC sequence in one would
recolour (or retitle, or worse) the user's terminal. ``printable`` writes each control
character (C0, DEL, C1) as Python writes it in a string literal (``\\n``, ``\\t``, ``\\x1b``),
so the line stays one line and says exactly which character the name holds; non-ASCII names
(Chinese op names) are left alone. Result files keep names exactly: this is for terminals.

A leaf module, so that the CLI's consoles and the host's session summary (read by remote
clients) escape alike, and say counts and skipped files alike.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["SKIPPED_SHOWN", "counted", "joined", "printable", "skipped_lines"]

SKIPPED_SHOWN = 10  # files passed over that are named; the rest are counted

_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
_CONTROLS = [*range(0x20), 0x7F, *range(0x80, 0xA0)]
_ESCAPES = {code: _SHORT.get(chr(code), f"\\x{code:02x}") for code in _CONTROLS}


def printable(text: str) -> str:
    """``text`` with every control character written as its escape."""
    return text.translate(_ESCAPES)


def counted(number: int, noun: str) -> str:
    """``1 file``, ``3 files``: a count and its noun, singular for one."""
    return f"{number} {noun}" + ("" if number == 1 else "s")


def joined(names: Sequence[str]) -> str:
    """``'a'``, ``'a' and 'b'``, ``'a', 'b' and 'c'``: names quoted, as a sentence lists them."""
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"


def skipped_lines(skipped: Sequence[str]) -> list[str]:
    """``skipped PATH: REASON`` for the first files passed over (each given as ``PATH: REASON``),
    then how many more: every command that skips files says them so."""
    lines = [f"skipped {item}" for item in skipped[:SKIPPED_SHOWN]]
    if len(skipped) > SKIPPED_SHOWN:
        lines.append(f"… and {len(skipped) - SKIPPED_SHOWN} more files skipped")
    return lines
