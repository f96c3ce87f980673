"""The agent's progress line: drawn on a terminal, silent elsewhere."""

from __future__ import annotations

import io

from rich.console import Console

from dumpcmp.agent.progress import UploadProgress
from dumpcmp.agent.uploader import UploadStats


def test_progress_line_on_a_terminal_and_nothing_off_it() -> None:
    stats = UploadStats(
        files_done=3, bytes_done=2_500_000, bytes_sent=3_000_000, backlog_files=4, in_flight=2,
        peak_in_flight=2, reconnects=1, connected=False,
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
        else:
            assert out.getvalue() == ""
