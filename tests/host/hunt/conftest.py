"""Fixtures of the hunt's tests: a simulated NPU that carries out each capture (``simhunt``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.host.hunt.simhunt import SimHunt


@pytest.fixture
def sim_hunt(tmp_path: Path) -> Callable[..., SimHunt]:
    """``sim_hunt(model, *faults)``: a model on the simulated NPU, run once per capture."""

    def make(model: str, *faults: str) -> SimHunt:
        return SimHunt(model, tmp_path / "hunt", tuple(faults))

    return make
