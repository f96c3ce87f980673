"""The journal of acknowledged files survives restarts and torn writes."""

from __future__ import annotations

from pathlib import Path

from dumpcmp.agent.journal import Journal, JournalEntry, agent_id
from tests.durability import FsyncLog


def entry(path: str, size: int = 10) -> JournalEntry:
    return JournalEntry("DUMP", path, size, "ab" * 32, 123, f"/local/{path}", "run1")


def test_entries_survive_a_restart(tmp_path: Path) -> None:
    with Journal(tmp_path, "s") as journal:
        journal.record(entry("a"))
        journal.record(entry("b"))
        journal.record(entry("a", size=20))  # sent again after a change: the last line wins
    with Journal(tmp_path, "s") as journal:
        assert len(journal) == 2
        assert journal.get("DUMP", "a") == entry("a", size=20)
        assert journal.get("GOLDEN", "a") is None
    with Journal(tmp_path, "other") as journal:
        assert len(journal) == 0  # one journal per session


def test_a_torn_last_line_is_ignored(tmp_path: Path) -> None:
    with Journal(tmp_path, "s") as journal:
        journal.record(entry("a"))
    with (tmp_path / "s.journal").open("a") as handle:
        handle.write('{"kind":"DUMP","path":"b","si')
    with Journal(tmp_path, "s") as journal:
        assert [e.path for e in journal.entries()] == ["a"]
        journal.record(entry("c"))  # appended after the torn line, on a line of its own
    with Journal(tmp_path, "s") as journal:
        assert sorted(e.path for e in journal.entries()) == ["a", "c"]


def test_agent_id_is_stable(tmp_path: Path) -> None:
    first = agent_id(tmp_path / "state")
    assert first == agent_id(tmp_path / "state")
    assert first != agent_id(tmp_path / "other")


def test_a_record_after_close_is_dropped_not_raised(tmp_path: Path) -> None:
    journal = Journal(tmp_path, "s")
    journal.close()
    journal.record(entry("late"))
    with Journal(tmp_path, "s") as again:
        assert len(again) == 0


def test_a_new_journal_and_its_directories_are_durable_before_the_first_sync(
    tmp_path: Path, fsync_log: FsyncLog
) -> None:
    # The directories were made without an fsync of their parents: an entry synced before
    # --delete-acked deleted the local file could vanish with its directory in a power cut.
    base = tmp_path.resolve()
    state = base / "a" / "state"
    with Journal(state, "s") as journal:
        journal.record(entry("x"))
        journal.sync()
        at_sync = list(fsync_log.events)
    assert fsync_log.made(base) == [base / "a", state]
    assert fsync_log.unsynced(at_sync) == []
    # The journal file's own entry in its directory, too.
    assert ("fsync", state) in at_sync[at_sync.index(("mkdir", state)) + 1 :]
