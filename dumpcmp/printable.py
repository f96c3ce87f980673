"""Text for a terminal: control characters shown as escapes, every other character as is.

A newline in a file or op name would make one error line two, and an ESC sequence in one would
recolour (or retitle, or worse) the user's terminal. ``printable`` writes each control
character (C0, DEL, C1) as Python writes it in a string literal (``\\n``, ``\\t``, ``\\x1b``),
so the line stays one line and says exactly which character the name holds; non-ASCII names
(Chinese op names) are left alone. Result files keep names exactly: this is for terminals.

A leaf module, so that the CLI's consoles and the host's session summary (read by remote
clients) escape alike.
"""

from __future__ import annotations

__all__ = ["printable"]

_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
_CONTROLS = [*range(0x20), 0x7F, *range(0x80, 0xA0)]
_ESCAPES = {code: _SHORT.get(chr(code), f"\\x{code:02x}") for code in _CONTROLS}


def printable(text: str) -> str:
    """``text`` with every control character written as its escape."""
    return text.translate(_ESCAPES)
