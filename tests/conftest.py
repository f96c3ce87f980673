"""Fixtures every suite may use: where the project's shared reference files live."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"
FIXTURES = SHARED / "fixtures"


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    """``../shared/fixtures`` beside the checkout (CI clones the project with shared/ beside it)."""
    if not FIXTURES.is_dir():
        pytest.skip(f"shared fixtures not found at {FIXTURES}")
    return FIXTURES


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
