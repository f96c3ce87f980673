"""A comparison run has the cyclic GC collect its youngest objects less often, and gives the
thresholds back as it found them, whatever the runs in other threads do."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from dumpcmp.errors import DumpcmpError
from dumpcmp.host import offline
from dumpcmp.host.pipeline import YOUNG_OBJECTS_PER_COLLECTION, fewer_collections
from dumpcmp.host.request import CompareRequest
from dumpcmp.proto.walker import DumpTree


@pytest.fixture
def default_thresholds() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*before)


def test_a_run_raises_the_young_threshold_and_restores_it(default_thresholds: tuple[int, int, int]) -> None:
    with fewer_collections():
        assert gc.get_threshold() == (YOUNG_OBJECTS_PER_COLLECTION, 10, 10)
    assert gc.get_threshold() == default_thresholds
    with pytest.raises(KeyError), fewer_collections():
        raise KeyError("a run that fails")
    assert gc.get_threshold() == default_thresholds


def test_overlapping_runs_restore_python_s_thresholds_when_the_last_ends(
    default_thresholds: tuple[int, int, int],
) -> None:
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with fewer_collections():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait(10)
    with fewer_collections():
        second_in.set()
        first_out.wait(10)
        assert gc.get_threshold()[0] == YOUNG_OBJECTS_PER_COLLECTION  # the first ended, not this one
    thread.join(10)
    assert gc.get_threshold() == default_thresholds


def test_run_compare_runs_under_it(
    default_thresholds: tuple[int, int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[int] = []

    def walk(root: Path) -> DumpTree:
        seen.append(gc.get_threshold()[0])
        return DumpTree(root)

    monkeypatch.setattr(offline, "walk_dump_tree", walk)
    (tmp_path / "npu").mkdir()
    (tmp_path / "golden").mkdir()
    np.save(tmp_path / "golden" / "conv.0.1700000000000000.npy", np.ones(4, np.float32))
    with pytest.raises(DumpcmpError, match="no dump files"):
        offline.run_compare(CompareRequest(tmp_path / "npu", tmp_path / "golden", out_dir=tmp_path / "out"))
    assert seen == [YOUNG_OBJECTS_PER_COLLECTION]
    assert gc.get_threshold() == default_thresholds


class _Record:
    """A tracked object, as a run's rows and entries are."""

    def __init__(self, number: int) -> None:
        self.number = [number]


@pytest.mark.parametrize("one_command", [False, True])
def test_a_one_command_process_keeps_what_a_run_leaves_out_of_the_gc_s_sight(
    default_thresholds: tuple[int, int, int], monkeypatch: pytest.MonkeyPatch, one_command: bool
) -> None:
    """A server's run leaves its objects to the GC as usual; a process that ends with its command
    (``keep_imported``) freezes them instead of walking them all once more at the run's end."""
    from dumpcmp.host import pipeline

    monkeypatch.setattr(pipeline, "_one_command", one_command)
    frozen = gc.get_freeze_count()
    try:
        with fewer_collections():
            kept = [_Record(n) for n in range(5000)]
        assert (gc.get_freeze_count() - frozen >= len(kept)) is one_command
        assert gc.get_threshold() == default_thresholds
    finally:
        gc.unfreeze()  # what the suite froze before is walked again: slower, never wrong
