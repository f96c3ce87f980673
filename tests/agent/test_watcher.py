"""The dump-path watcher: files are handed over once complete, never early, never twice."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from dumpcmp.agent.completeness import FileRole, check_complete, role_of
from dumpcmp.agent.watcher import DumpWatcher, NotSent
from tests.agent.dumps import STEP_DIR, dump_content, dump_name


class Handed:
    def __init__(self) -> None:
        self.paths: list[Path] = []
        self.lock = threading.Lock()

    def __call__(self, path: Path) -> None:
        with self.lock:
            self.paths.append(path)

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Path]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.paths) >= count:
                    return list(self.paths)
            time.sleep(0.02)
        return list(self.paths)


def _step(root: Path) -> Path:
    step = root / STEP_DIR
    step.mkdir(parents=True, exist_ok=True)
    return step


@pytest.mark.parametrize("poll", [False, True], ids=["inotify", "polling"])
def test_a_file_written_in_pieces_is_handed_over_only_when_whole(tmp_path: Path, poll: bool) -> None:
    root = tmp_path / "dump"
    step = _step(root)
    handed = Handed()
    watcher = DumpWatcher(root, handed, quiet=0.3, poll=poll, poll_interval=0.05)
    watcher.start()
    content = dump_content(20_000)
    path = step / dump_name(0)
    try:
        with path.open("wb") as handle:
            pieces = [content[i : i + 20_000] for i in range(0, len(content), 20_000)]
            for piece in pieces[:-1]:
                handle.write(piece)
                handle.flush()
                time.sleep(0.05)
            # Incomplete and quiet for longer than the quiet time: still not handed over.
            time.sleep(0.8)
            assert handed.paths == []
            handle.write(pieces[-1])
        assert handed.wait_for(1) == [path.resolve()]
    finally:
        not_sent = watcher.stop()
    assert not_sent == []
    assert handed.paths == [path.resolve()]  # once, not again at stop
    assert watcher.backend == ("polling" if poll else "inotify")


def test_a_file_renamed_into_place_needs_no_quiet_time(tmp_path: Path) -> None:
    root = tmp_path / "dump"
    step = _step(root)
    handed = Handed()
    watcher = DumpWatcher(root, handed, quiet=3600.0)
    watcher.start()
    try:
        temp = step / ".part"
        temp.write_bytes(dump_content(100))
        os.replace(temp, step / dump_name(1))
        assert handed.wait_for(1) == [(step / dump_name(1)).resolve()]
    finally:
        watcher.stop()


def test_files_already_there_and_in_new_directories_are_found(tmp_path: Path) -> None:
    root = tmp_path / "dump"
    old = _step(root) / dump_name(0)
    old.write_bytes(dump_content(10))
    handed = Handed()
    watcher = DumpWatcher(root, handed, quiet=0.1)
    watcher.start()
    try:
        deep = root / "20240101000001" / "1" / "net" / "1" / "0"
        deep.mkdir(parents=True)
        (deep / dump_name(2)).write_bytes(dump_content(10))
        got = handed.wait_for(2)
    finally:
        watcher.stop()
    assert sorted(got) == sorted([old.resolve(), (deep / dump_name(2)).resolve()])


def test_stop_reports_what_never_completed_and_hands_over_the_rest(tmp_path: Path) -> None:
    root = tmp_path / "dump"
    step = _step(root)
    handed = Handed()
    watcher = DumpWatcher(root, handed, quiet=3600.0)  # only stop() can hand anything over
    watcher.start()
    whole = step / dump_name(0)
    whole.write_bytes(dump_content(10))
    torn = step / dump_name(1)
    torn.write_bytes(dump_content(1000)[:-7])
    (step / "notes.txt").write_text("ignored quietly")
    (step / "garbage name").write_text("x")
    (step / ".hidden.part").write_text("a writer's temporary")
    not_sent = watcher.stop()
    assert handed.paths == [whole.resolve()]
    reasons = {n.path.name: n.reason for n in not_sent}
    assert set(reasons) == {torn.name, "garbage name"}
    assert reasons[torn.name].startswith("incomplete: ") and "still being written" in reasons[torn.name]
    assert reasons["garbage name"] == "not a dump file name"


def test_the_state_directory_inside_the_dump_path_is_left_alone(tmp_path: Path) -> None:
    root = tmp_path / "dump"
    state = root / "state"
    state.mkdir(parents=True)
    (state / dump_name(5)).write_bytes(dump_content(10))
    handed = Handed()
    watcher = DumpWatcher(root, handed, quiet=0.05, exclude=(state,))
    watcher.start()
    assert watcher.stop() == []
    assert handed.paths == []


@pytest.mark.parametrize(
    ("name", "role"),
    [
        (dump_name(0), FileRole.DUMP),
        (dump_name(0) + ".csv", FileRole.SIDECAR),
        ("mapping.csv", FileRole.SIDECAR),
        ("12345678901234567890", FileRole.DUMP),
        (".Conv2D.c.1.2.3.part", FileRole.HIDDEN),
        ("acl.json", FileRole.QUIET),
        ("core.dump.zip", FileRole.FOREIGN),
    ],
)
def test_roles(name: str, role: FileRole) -> None:
    assert role_of(Path(name)) is role


def test_the_size_equation_decides_completeness(tmp_path: Path) -> None:
    content = dump_content(100)
    path = tmp_path / dump_name(0)
    write: Callable[[bytes], int] = path.write_bytes
    write(content[:-1])
    verdict = check_complete(path, FileRole.DUMP)
    assert not verdict.complete and "truncated" in verdict.reason
    write(content)
    assert check_complete(path, FileRole.DUMP).complete


def test_every_prefix_of_a_dump_waits_and_the_whole_file_is_complete(tmp_path: Path) -> None:
    """The header-only size check agrees with the codec at every byte a writer may have reached,
    for a header longer than the check's first read as well."""
    path = tmp_path / dump_name(0)
    for content in (dump_content(40), dump_content(40, op_name="n" * 6000)):
        header_end = 8 + int.from_bytes(content[:8], "little")
        cuts = [*range(0, header_end + 16), *range(header_end + 16, len(content), 37)]
        for cut in cuts:
            path.write_bytes(content[:cut])
            assert not check_complete(path, FileRole.DUMP).complete or cut == 0, cut  # empty: broken
        path.write_bytes(content)
        assert check_complete(path, FileRole.DUMP).complete


def test_a_dump_whose_size_equation_holds_is_complete_without_its_payloads_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The codec read every file whole (~150 us of the agent's per-file cost); the header says it all.
    from dumpcmp.agent import completeness
    from dumpcmp.proto import codec

    path = tmp_path / dump_name(0)
    path.write_bytes(dump_content(1000))
    monkeypatch.setattr(codec, "read_dump", lambda p: pytest.fail(f"{p} read whole"))
    assert check_complete(path, FileRole.DUMP).complete
    assert codec.NANO_MAGIC.to_bytes(4, "little") == completeness._NANO_MARK  # left to the codec


def test_the_agent_library_starts_without_numpy() -> None:
    # The codec (and numpy, ~0.1 s of every agent's start) loads only for a file whose size
    # equation fails; a watch of complete files never needs it.
    probe = "import sys, dumpcmp.agent.run; print(sorted({'numpy', 'dumpcmp.proto.codec'} & {*sys.modules}))"
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert result.stdout.strip() == "[]", result.stderr


def test_a_whole_but_broken_dump_is_sent_a_short_one_waits(tmp_path: Path) -> None:
    """More bytes cannot mend a broken header or bytes beyond the declared ones: such a file is
    sent, so that the host reports it unreadable as compare does, instead of waiting forever."""
    content = dump_content(100)
    path = tmp_path / dump_name(0)
    path.write_bytes(content + b"x")
    assert check_complete(path, FileRole.DUMP).complete
    path.write_bytes(content[:8] + b"\xff" * 16 + content[24:])
    assert check_complete(path, FileRole.DUMP).complete
    path.write_bytes(content[:8] + b"\xff" * 16)  # the header itself still being written
    assert not check_complete(path, FileRole.DUMP).complete


def test_a_file_the_observer_missed_is_found_by_the_rescan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dumpcmp.agent import watcher as watcher_module

    monkeypatch.setattr(watcher_module._Handler, "on_any_event", lambda self, event: None)  # every event lost
    root = tmp_path / "dump"
    step = _step(root)
    handed = Handed()
    watcher = DumpWatcher(root, handed, quiet=0.05, rescan_every=0.1)
    watcher.start()
    try:
        (step / dump_name(3)).write_bytes(dump_content(10))
        assert handed.wait_for(1) == [(step / dump_name(3)).resolve()]
    finally:
        watcher.stop()


def test_a_rescan_lists_only_directories_whose_names_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rescan looked every file up every 2 s; a directory whose mtime is that of its last
    listing is not listed again, and one whose listing was as recent as its mtime's clock tick
    is listed again (a name added in the same tick leaves the mtime as it was)."""
    root = tmp_path / "dump"
    step = _step(root)
    watcher = DumpWatcher(root, Handed(), quiet=0.05)  # not started: no observer, only rescans
    listed: list[str] = []
    real_list = watcher._list
    monkeypatch.setattr(watcher, "_list", lambda d: (listed.append(d), real_list(d))[1])
    old = time.time() - 10
    (step / dump_name(0)).write_bytes(dump_content(10))
    for directory in (step, *step.parents):
        if directory.is_relative_to(root):
            os.utime(directory, (old, old))
    watcher._rescan()
    assert watcher.waiting == 1 and str(step) in listed
    listed.clear()
    watcher._rescan()
    assert listed == [], "unchanged directories listed again"
    (step / dump_name(1)).write_bytes(dump_content(10))  # a new name: a new mtime
    watcher._rescan()
    assert listed == [str(step)] and watcher.waiting == 2
    # A listing within the mtime's tick of the last change is not trusted.
    now = time.time_ns()
    os.utime(step, ns=(now, now))
    watcher._rescan()
    (step / dump_name(2)).write_bytes(dump_content(10))
    os.utime(step, ns=(now, now))  # added in the same tick: the mtime did not move
    watcher._rescan()
    assert watcher.waiting == 3


def test_a_header_length_no_header_reaches_is_broken_not_still_being_written(tmp_path: Path) -> None:
    # 3000 random bytes said "header length 11863333008514665676 bytes": the file waited forever,
    # was never sent, and the host's summary never named it.
    path = tmp_path / dump_name(0)
    path.write_bytes((11863333008514665676).to_bytes(8, "little") + b"\x00" * 2992)
    assert check_complete(path, FileRole.DUMP).complete
    path.write_bytes((4096).to_bytes(8, "little") + b"\x00" * 100)  # a header still being written
    assert not check_complete(path, FileRole.DUMP).complete


def _watching(tmp_path: Path, quiet: float) -> tuple[Path, Handed, DumpWatcher]:
    """A started watcher of a new dump path: its step directory, what it handed over, itself."""
    step = _step(tmp_path / "dump")
    handed = Handed()
    watcher = DumpWatcher(tmp_path / "dump", handed, quiet=quiet)
    watcher.start()
    return step, handed, watcher


def test_an_empty_dump_file_is_broken_once_quiet_not_waited_for(tmp_path: Path) -> None:
    # It waited as "incomplete" for ever, so the agent never closed the session.
    step, handed, watcher = _watching(tmp_path, quiet=1.5)
    try:
        empty = step / dump_name(4)
        empty.touch()
        assert check_complete(empty, FileRole.DUMP).complete  # asked only once quiet: broken
        time.sleep(0.1)
        assert handed.paths == []  # not before the quiet time, though its writer closed it
        assert handed.wait_for(1) == [empty.resolve()]
    finally:
        not_sent = watcher.stop()
    assert not_sent == [] and handed.paths == [empty.resolve()]


def test_an_empty_file_just_created_is_incomplete_when_the_watch_ends(tmp_path: Path) -> None:
    step, handed, watcher = _watching(tmp_path, quiet=3600.0)
    (step / dump_name(5)).touch()
    time.sleep(0.2)
    not_sent = watcher.stop()
    assert handed.paths == []
    assert [(n.path.name, n.reason) for n in not_sent] == [
        (dump_name(5), "incomplete: empty, created just before the watch ended")
    ]


def test_watchdogs_own_stop_race_is_not_printed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # "InotifyEmitter.queue_events() called when the thread is inactive" appeared, now and then,
    # as a line of its own before the agent's output when a watch stopped right after it began.
    watcher = DumpWatcher(tmp_path / "dump", Handed())
    watcher.start()
    watcher.stop()
    if watcher.backend != "inotify":
        pytest.skip("no inotify here")
    logger = logging.getLogger("watchdog.observers.inotify")
    with caplog.at_level(logging.ERROR, logger="watchdog.observers.inotify"):
        logger.error("InotifyEmitter.queue_events() called when the thread is inactive")
        logger.error("something else went wrong")
    assert [r.getMessage() for r in caplog.records] == ["something else went wrong"]


def test_a_fifo_or_a_link_to_a_device_among_the_dumps_is_skipped_not_read(tmp_path: Path) -> None:
    """A FIFO named like a dump file blocked the watch in open() for ever; a link to /dev/zero
    was sent as an empty dump file. Both are passed over, as compare passes them over."""
    step, handed, watcher = _watching(tmp_path, quiet=0.2)
    os.mkfifo(step / dump_name(1))
    (step / dump_name(2)).symlink_to("/dev/zero")
    whole = step / dump_name(0)
    whole.write_bytes(dump_content(10))
    ended: list[list[NotSent]] = []
    try:
        assert handed.wait_for(1) == [whole.resolve()]
        time.sleep(0.5)  # past the quiet time of all three: each was checked
    finally:
        stopping = threading.Thread(target=lambda: ended.append(watcher.stop()), daemon=True)
        stopping.start()
        stopping.join(30)
    assert ended, "the watch blocked on the FIFO"
    assert {(n.path.name, n.reason, n.skipped) for n in ended[0]} == {
        (dump_name(1), "not a regular file: a FIFO", True),
        (dump_name(2), "not a regular file: a character device", True),
    }
    assert handed.paths == [whole.resolve()]


def test_a_symbolic_link_among_the_dumps_is_skipped_not_followed(tmp_path: Path) -> None:
    """`ln -s /etc/passwd DUMP/.../Passwd.x.1.1.1`: the watch sent the file the link led to,
    and the host's session held a file from outside the directory watched."""
    step, handed, watcher = _watching(tmp_path, quiet=0.2)
    outside = tmp_path / "secret"
    outside.write_bytes(dump_content(7))  # whole by the size equation: it would have been sent
    (step / dump_name(1)).symlink_to(outside)
    whole = step / dump_name(0)
    whole.write_bytes(dump_content(10))
    try:
        assert handed.wait_for(1) == [whole.resolve()]
        time.sleep(0.5)  # past the quiet time of both
    finally:
        ended = watcher.stop()
    assert [(n.path.name, n.skipped) for n in ended] == [(dump_name(1), True)]
    assert ended[0].reason.startswith("a symbolic link: not followed")
    assert handed.paths == [whole.resolve()]
