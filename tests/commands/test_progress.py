"""Progress of long runs: a live bar on a terminal, plain count lines elsewhere."""

from __future__ import annotations

import io
import sys

import pytest

from dumpcmp.commands.progress import tracked


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_live_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setenv("TERM", "xterm-256color")  # TERM=dumb (as in CI) turns the live bar off
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    with tracked("comparing dump files") as tracker:
        tracker.start(3)
        tracker.advance(3)
    assert "\x1b[" in terminal.getvalue()  # the live bar's control sequences
    assert "comparing dump files" in terminal.getvalue()


def test_a_log_gets_plain_count_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    with tracked("comparing dump files") as tracker:
        tracker.start(3)
        tracker.advance(3)
    assert log.getvalue() == "comparing dump files: 3/3\n"
