"""The agent's progress line: drawn on a terminal, silent elsewhere."""

from __future__ import annotations

import io
import time

import pytest
from rich.console import Console

from dumpcmp.agent.progress import UploadProgress
from dumpcmp.agent.uploader import UploadStats


def test_progress_line_on_a_terminal_and_nothing_off_it() -> None:
    stats = UploadStats(
        files_done=3, bytes_done=2_500_000, bytes_sent=3_000_000, backlog_files=4, in_flight=2,
        peak_in_flight=2, reconnects=1, connected=False, retrying=True,
    )  # fmt: skip
    for terminal in (True, False):
        out = io.StringIO()
        console = Console(file=out, force_terminal=terminal, width=200, color_system=None)
        with UploadProgress(console, lambda: stats, lambda: "watching /d") as progress:
            progress.refresh()
            shown = out.getvalue()
        if terminal:
            assert "3 files · 2.5 MB acknowledged" in shown
            assert "backlog 4 · in flight 2 · 1 reconnects · connecting… · watching /d" in shown
        else:  # the host unreachable: said in one line (it was silent until --give-up)
            assert out.getvalue() == "agent: cannot reach the host; retrying until --give-up\n"


def _stats(reconnects: int, connected: bool, busy: str = "") -> UploadStats:
    return UploadStats(
        1, 10, 10, 0, 0, 1, reconnects, connected, busy, retrying=reconnects > 0 and not connected
    )


def test_off_a_terminal_a_lost_host_is_one_line_now_and_then(monkeypatch: pytest.MonkeyPatch) -> None:
    # Off a terminal an agent whose host was down printed nothing until --give-up (300 s).
    now = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    out = io.StringIO()
    shown = [_stats(0, True)]
    steps = [(0, _stats(0, True)), (1, _stats(1, False)), (10, _stats(3, False)), (31, _stats(6, False)),
             (40, _stats(7, False)), (45, _stats(7, True)), (46, _stats(7, True))]  # fmt: skip
    with UploadProgress(Console(file=out, force_terminal=False, width=40), lambda: shown[0]) as progress:
        for at, stats in steps:
            now[0], shown[0] = 100.0 + at, stats
            progress.refresh()
    assert out.getvalue().splitlines() == [
        "agent: cannot reach the host; retrying until --give-up",
        "agent: still cannot reach the host after 30 s",
        "agent: reached the host again after 44 s",
    ]


def test_on_a_narrow_terminal_the_line_wraps_instead_of_being_cut() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=40, soft_wrap=True, color_system=None)
    with UploadProgress(console, lambda: _stats(0, False), lambda: "watching /data/dumps/run7") as progress:
        progress.refresh()
    assert "connecting…" in out.getvalue()
    assert "watching /data/dumps/run7" in out.getvalue()


def test_a_host_at_its_upload_limit_is_said_to_be_busy_not_unreachable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `host serve --max-uploads 1` and two agents: the one turned away printed "cannot reach the
    # host; retrying", as if the host were down. Between its tries it opens the session (connected).
    now = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    out = io.StringIO()
    words = "the host serves 1 uploads at once already (host serve --max-uploads); try again later"
    shown = [_stats(0, True)]
    steps = [(1, _stats(0, False, words)), (2, _stats(0, True, words)), (40, _stats(0, False, words)),
             (45, _stats(0, True))]  # fmt: skip
    with UploadProgress(Console(file=out, force_terminal=False, width=40), lambda: shown[0]) as progress:
        for at, stats in steps:
            now[0], shown[0] = 100.0 + at, stats
            progress.refresh()
    assert out.getvalue().splitlines() == [
        f"agent: the host is busy: {words} (the agent tries again by itself until --give-up)",
        "agent: the host took the upload after 44 s",
    ]
