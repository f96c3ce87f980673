"""Progress for long runs: a rich bar on a terminal, plain lines otherwise (logs, CI)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dumpcmp.commands._output import error_console
from dumpcmp.launch import took_interrupt

if TYPE_CHECKING:
    from rich.progress import Progress

_PLAIN_EVERY_SECONDS = 5.0


@dataclass
class Tracker:
    """Counts finished units; ``start(total)`` once the total is known, ``advance(n)`` after."""

    description: str
    _progress: Progress | None = None
    _task: int | None = None
    _total: int = 0
    _done: int = 0
    _last_print: float = field(default_factory=time.monotonic)

    def start(self, total: int) -> None:
        self._total = total
        if self._progress is not None:
            self._task = self._progress.add_task(self.description, total=total)

    def advance(self, n: int = 1) -> None:
        if took_interrupt():  # between files: an interrupt Python dropped takes effect here
            raise KeyboardInterrupt
        self._done += n
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task, n)  # type: ignore[arg-type]
            self._progress.refresh()
            return
        now = time.monotonic()
        if now - self._last_print >= _PLAIN_EVERY_SECONDS or self._done == self._total:
            self._last_print = now
            print(f"{self.description}: {self._done}/{self._total}", file=sys.stderr, flush=True)


@contextmanager
def tracked(description: str) -> Iterator[Tracker]:
    if not sys.stderr.isatty():
        yield Tracker(description)
        return
    # Loaded only for a terminal: ~10 ms of every logged or scripted run otherwise.
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    # No refresh thread: compare may fork worker processes, and forking a threaded process is
    # unsafe (Python 3.12+ warns). The bar is redrawn on each advance instead.
    with Progress(*columns, console=error_console(), transient=True, auto_refresh=False) as progress:
        yield Tracker(description, progress)
