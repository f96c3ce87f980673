"""A few trials of the fault harness (``bench/faults.py``) at fixed moments: SIGKILLs of the
agent, the host or both during a simulated model run, a watch and the close, then a restart and
a rerun; every invariant of the harness holds after each."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.faults import Reference, reference, trial


@pytest.fixture(scope="module")
def ref(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    return reference(tmp_path_factory.mktemp("reference"), steps_counts=(1,))


@pytest.mark.parametrize(
    ("scenario", "victim", "delay"),
    [("model", "both", 0.5), ("watch", "host", 0.3), ("close", "agent", 0.0)],
)
def test_a_killed_run_restarted_and_rerun_holds_every_invariant(
    ref: Reference, tmp_path: Path, scenario: str, victim: str, delay: float
) -> None:
    # `delay` is a fraction of a clean run's time: the kill lands inside the run on any machine.
    moment = delay if scenario == "close" else delay * ref.model_seconds
    result = trial(scenario, victim, 1, moment, tmp_path, ref)
    assert result.broken == (), result.line(0)
