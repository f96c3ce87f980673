"""Fixtures every suite may use: where the project's shared reference files live."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.durability import fsync_log  # noqa: F401 (a fixture for every suite)

SHARED = Path(__file__).resolve().parents[2] / "shared"
FIXTURES = SHARED / "fixtures"


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    """``../shared/fixtures`` beside the checkout (CI clones the project with shared/ beside it)."""
    if not FIXTURES.is_dir():
        pytest.skip(f"shared fixtures not found at {FIXTURES}")
    return FIXTURES


# What the user's shell may export that changes how rich and click draw: colour switches, terminal
# kind and width, CI markers. Every test starts without them; a test that needs one sets it.
_TERMINAL_VARIABLES = (
    "NO_COLOR",
    "FORCE_COLOR",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "TERM",
    "COLORTERM",
    "COLUMNS",
    "LINES",
    "CI",
    "GITHUB_ACTIONS",
    "JUPYTER_COLUMNS",
    "JUPYTER_LINES",
)


@pytest.fixture(autouse=True)
def neutral_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite passes whatever the user's shell exports (NO_COLOR=1 TERM=dumb COLUMNS=1000 CI=true)."""
    for name in _TERMINAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """A test that leaves a thread running (server, watcher, pool) fails: loops must be bounded."""
    before = set(threading.enumerate())
    yield
    leaked = [t for t in threading.enumerate() if t not in before and t.is_alive() and not t.daemon]
    for thread in leaked:
        thread.join(timeout=2.0)
    still = [t.name for t in leaked if t.is_alive()]
    assert not still, f"threads left running: {still}"
