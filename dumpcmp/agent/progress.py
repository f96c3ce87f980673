"""The agent's progress line: files and bytes acknowledged, send rate, backlog; on a terminal only.

Off a terminal (a log, a pipe, a test) it draws nothing: the command prints one summary line
at the end instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType

from rich.console import Console
from rich.live import Live
from rich.text import Text

from dumpcmp.agent.uploader import UploadStats
from dumpcmp.printable import printable

__all__ = ["UploadProgress", "human_bytes"]


def human_bytes(count: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(count) < 1000 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    raise AssertionError("unreachable")


class UploadProgress:
    """A live status line fed from ``stats()``; ``extra()`` adds the caller's words (e.g. watching)."""

    def __init__(
        self, console: Console, stats: Callable[[], UploadStats], extra: Callable[[], str] = lambda: ""
    ) -> None:
        self._console = console
        self._stats = stats
        self._extra = extra
        self._live: Live | None = None
        self._started = time.monotonic()
        self._rate_at = (self._started, 0)
        self._rate = 0.0

    def __enter__(self) -> UploadProgress:
        if self._console.is_terminal:
            self._live = Live(self._line(), console=self._console, auto_refresh=False, transient=True)
            self._live.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._live is not None:
            self._live.__exit__(kind, exc, tb)
            self._live = None

    def refresh(self) -> None:
        if self._live is not None:
            self._live.update(self._line(), refresh=True)

    def _line(self) -> Text:
        s = self._stats()
        now = time.monotonic()
        then, sent_then = self._rate_at
        if now - then >= 1.0:  # a rate over the last second or so, not since the start
            self._rate = (s.bytes_sent - sent_then) / (now - then)
            self._rate_at = (now, s.bytes_sent)
        state = "" if s.connected else " · connecting…"
        extra = self._extra()
        return Text(
            f"{s.files_done} files · {human_bytes(s.bytes_done)} acknowledged · "
            f"{human_bytes(self._rate)}/s · backlog {s.backlog_files} · in flight {s.in_flight}"
            + (f" · {s.reconnects} reconnects" if s.reconnects else "")
            + state
            + (f" · {printable(extra)}" if extra else "")  # the watched path: a name may hold "\n"
        )
