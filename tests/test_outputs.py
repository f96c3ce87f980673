"""Output directories are checked before work; files appear whole or not at all."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from dumpcmp.errors import OutputError
from dumpcmp.outputs import atomic_path, new_file, prepare_output_dir


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


def _text(content: str) -> Callable[[Path], object]:
    return lambda temp: temp.write_text(content)


def test_new_file_never_repeats_a_name_nor_replaces_a_file(tmp_path: Path) -> None:
    first = tmp_path / "result_1.csv"
    first.write_text("kept")
    with ThreadPoolExecutor(4) as pool:
        written = list(pool.map(lambda n: new_file(first, _text(str(n))), range(8)))
    assert sorted(p.name for p in written) == sorted(f"result_1_{n}.csv" for n in range(1, 9))
    assert sorted(p.read_text() for p in written) == [str(n) for n in range(8)]
    assert first.read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["result_1.csv", *(p.name for p in written)])


def test_new_file_on_a_file_system_without_hard_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(*_args: object, **_kwargs: object) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    (tmp_path / "r.csv").write_text("kept")
    monkeypatch.setattr(os, "link", refused)
    assert new_file(tmp_path / "r.csv", _text("new")) == tmp_path / "r_1.csv"
    assert [(p.name, p.read_text()) for p in sorted(tmp_path.iterdir())] == [
        ("r.csv", "kept"),
        ("r_1.csv", "new"),
    ]


def test_new_file_that_fails_leaves_nothing(tmp_path: Path) -> None:
    def interrupted(temp: Path) -> None:
        temp.write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        new_file(tmp_path / "r.csv", interrupted)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("under", ["file", "file/sub"])
def test_new_file_under_a_file_is_one_line(tmp_path: Path, under: str) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match=rf"^cannot write .*{under}/r\.csv: "):
        new_file(tmp_path / under / "r.csv", _text("x"))


# A run killed (kill -9) while it writes: no final name holds an empty or half file, and the next
# run takes the name. Claiming the name empty first, then replacing it, left a 0-byte file there.
_KILLED_WHILE_WRITING = """
import os, signal, sys
from pathlib import Path
from dumpcmp.outputs import new_file

def killed(temp):
    temp.write_text("half")
    os.kill(os.getpid(), signal.SIGKILL)

new_file(Path(sys.argv[1]), killed)
"""


def test_a_run_killed_while_it_writes_leaves_no_file_under_the_name(tmp_path: Path) -> None:
    target = tmp_path / "r.xlsx"
    done = subprocess.run([sys.executable, "-c", _KILLED_WHILE_WRITING, str(target)], timeout=60)
    assert done.returncode == -signal.SIGKILL
    assert [p for p in tmp_path.iterdir() if not p.name.startswith(".")] == []
    assert new_file(target, _text("whole")) == target
    assert target.read_text() == "whole"
