"""Output directories are checked before work; files appear whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dumpcmp.errors import OutputError
from dumpcmp.outputs import atomic_path, prepare_output_dir


def test_prepare_output_dir_makes_missing_parents(tmp_path: Path) -> None:
    out = prepare_output_dir(tmp_path / "a" / "b")
    assert out.is_dir()
    assert list(out.iterdir()) == []  # the write probe leaves nothing


def test_prepare_output_dir_refuses_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "result.csv"
    blocker.write_text("x")
    with pytest.raises(OutputError, match=r"^--out .*result\.csv: is a file, not a directory$"):
        prepare_output_dir(blocker, "--out")


def test_prepare_output_dir_under_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputError, match="cannot create the directory"):
        prepare_output_dir(blocker / "sub")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_prepare_output_dir_refuses_read_only(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(OutputError, match="not writable"):
            prepare_output_dir(locked)
    finally:
        locked.chmod(0o700)


def test_atomic_path_replaces_on_success(tmp_path: Path) -> None:
    target = tmp_path / "out" / "r.csv"
    with atomic_path(target) as temp:
        temp.write_text("whole")
    assert target.read_text() == "whole"
    assert sorted(p.name for p in target.parent.iterdir()) == ["r.csv"]


def test_atomic_path_writes_a_name_too_long_for_its_temporary(tmp_path: Path) -> None:
    target = tmp_path / ("r" * 251)  # a legal name; ".{name}.part" is not
    with atomic_path(target) as temp:
        temp.write_text("whole")
    assert [p.name for p in tmp_path.iterdir()] == [target.name]
    assert target.read_text() == "whole"


def test_atomic_path_leaves_nothing_on_interrupt(tmp_path: Path) -> None:
    target = tmp_path / "r.csv"
    with pytest.raises(KeyboardInterrupt), atomic_path(target) as temp:
        temp.write_text("half")
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_atomic_path_turns_os_errors_into_one_line(tmp_path: Path) -> None:
    target = tmp_path / "r.csv"
    with pytest.raises(OutputError, match=r"cannot write .*r\.csv: "), atomic_path(target) as temp:
        temp.write_text("half")
        raise OSError(28, "No space left on device")
    assert list(tmp_path.iterdir()) == []
