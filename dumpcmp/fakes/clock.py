"""Timestamps the way the runtime writes them: 16-digit microseconds, strictly increasing."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["MicroClock"]


class MicroClock:
    """Microseconds since the epoch; never repeats or goes back, so file order is execution order.

    ``source`` (microseconds) is injectable for tests that want fixed names.
    """

    def __init__(self, source: Callable[[], int] | None = None) -> None:
        self._source = source or (lambda: time.time_ns() // 1000)
        self._last = 0

    def __call__(self) -> int:
        self._last = max(int(self._source()), self._last + 1)
        return self._last

    def peek(self) -> int:
        """The source's current time, without consuming a timestamp."""
        return max(int(self._source()), self._last)
