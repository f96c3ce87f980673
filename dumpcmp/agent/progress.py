"""The agent's progress line: files and bytes acknowledged, send rate, backlog, on a terminal.

Off a terminal (a log, a pipe, a test) it draws nothing (the command prints one summary line
at the end instead), but says in one line when the host cannot be reached and when it is again:
an agent retrying for minutes must not look like one that hangs.
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

_RETELL_S = 30.0  # off a terminal, a host still unreachable is said again this often


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
        self._plain = False  # entered off a terminal: lines about the connection only
        self._lost: tuple[float, float] | None = None  # the host unreachable since, last said at
        self._busy_since: float | None = None  # the host turning the upload away since

    def __enter__(self) -> UploadProgress:
        if self._console.is_terminal:
            self._live = Live(self._line(), console=self._console, auto_refresh=False, transient=True)
            self._live.__enter__()
        else:
            self._plain = True
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._live is not None:
            self._live.__exit__(kind, exc, tb)
            self._live = None
        self._plain = False

    def refresh(self) -> None:
        if self._live is not None:
            self._live.update(self._line(), refresh=True)
        elif self._plain:
            self._tell_connection(self._stats())

    def _tell_connection(self, s: UploadStats) -> None:
        """A line when the uploader starts retrying, again every _RETELL_S, and when it is back;
        a host at its upload limit is said to be busy (it was "cannot reach the host")."""
        now = time.monotonic()
        if s.busy:
            if self._busy_since is None:
                self._busy_since = now
                self._say(f"the host is busy: {s.busy} (the agent tries again by itself until --give-up)")
            return
        if self._busy_since is not None:
            since, self._busy_since = self._busy_since, None
            if not s.retrying:
                self._say(f"the host took the upload after {now - since:.0f} s")
        retrying = s.retrying and not s.connected
        if self._lost is None:
            if retrying:
                self._lost = (now, now)
                self._say("cannot reach the host; retrying until --give-up")
            return
        since, said = self._lost
        if not retrying:
            self._lost = None
            self._say(f"reached the host again after {now - since:.0f} s")
        elif now - said >= _RETELL_S:
            self._lost = (since, now)
            self._say(f"still cannot reach the host after {now - since:.0f} s")

    def _say(self, line: str) -> None:
        self._console.print(f"agent: {line}", markup=False, soft_wrap=True)

    def _line(self) -> Text:
        s = self._stats()
        now = time.monotonic()
        then, sent_then = self._rate_at
        if now - then >= 1.0:  # a rate over the last second or so, not since the start
            self._rate = (s.bytes_sent - sent_then) / (now - then)
            self._rate_at = (now, s.bytes_sent)
        state = " · host busy, retrying" if s.busy else "" if s.connected else " · connecting…"
        extra = self._extra()
        line = (
            f"{s.files_done} files · {human_bytes(s.bytes_done)} acknowledged · "
            f"{human_bytes(self._rate)}/s · backlog {s.backlog_files} · in flight {s.in_flight}"
            + (f" · {s.reconnects} reconnects" if s.reconnects else "")
            + state
            + (f" · {printable(extra)}" if extra else "")  # the watched path: a name may hold "\n"
        )
        # Wrapped, not cut at the terminal's width: the state and the watched path come last.
        return Text(line, no_wrap=False, overflow="fold")
