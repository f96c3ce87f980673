"""The agent's on-disk record of files the host acknowledged, one JSON line per file.

A line is appended and flushed when the host's acknowledgement arrives, so a killed agent
process loses nothing the kernel already holds; ``sync`` makes the file durable (fsync) and runs
before the agent forgets a file for good (``--delete-acked``) and when the journal closes. A
torn last line (the machine died mid-write) is ignored: that file is then simply checked
against the host's list again, never skipped.

The journal answers one question for the uploader: was this exact file (same size and mtime)
acknowledged by the host before, and with which checksum?
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import IO

from dumpcmp.errors import TransferError
from dumpcmp.outputs import atomic_path, make_dirs_durably, sync_dir

__all__ = ["Journal", "JournalEntry", "agent_id", "forget_run", "holding_session"]

_SUFFIX = ".journal"
_LOCK_SUFFIX = ".lock"


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One acknowledged file: ``kind`` is the FileKind name, ``path`` the name sent on the wire."""

    kind: str
    path: str
    size: int
    sha256: str  # hex: the checksum the file was sent with, SHA-256 (64 digits) or XXH3-128 (32)
    mtime_ns: int
    local: str  # the file on this machine, so a restart can tell whether it still exists
    run_id: str = ""  # the model run it belongs to, when the agent marks runs

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind, self.path)


_FIELDS = tuple(f.name for f in fields(JournalEntry))


class Journal:
    """Acknowledged files of one session, kept in ``STATE_DIR/{session}.journal``."""

    def __init__(self, state_dir: Path, session: str) -> None:
        self.path = state_dir / f"{session}{_SUFFIX}"
        self._entries: dict[tuple[str, str], JournalEntry] = {}
        self._lock = threading.Lock()  # the ack reader and the sender both record
        try:
            make_dirs_durably(state_dir)
            existed = self.path.exists()
            if existed:
                self._load()
            self._handle: IO[str] = self.path.open("a", encoding="utf-8")
            if not existed:  # its entry durable before the first ack in it lets --delete-acked delete
                sync_dir(state_dir)
            if self._handle.tell() > 0 and not self._ends_with_newline():
                self._handle.write("\n")  # end the torn line, or the next entry would be glued to it
                self._handle.flush()
        except OSError as exc:
            raise TransferError(f"agent state {self.path}: {exc.strerror or exc}") from None
        self._unsynced = False

    def _load(self) -> None:
        with self.path.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    entry = JournalEntry(**json.loads(line))
                except (ValueError, TypeError):
                    continue  # a torn last line: that file is reconciled with the host again
                self._entries[entry.key] = entry

    def _ends_with_newline(self) -> bool:
        with self.path.open("rb") as handle:
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) == b"\n"

    def get(self, kind: str, path: str) -> JournalEntry | None:
        with self._lock:
            return self._entries.get((kind, path))

    def entries(self) -> list[JournalEntry]:
        with self._lock:
            return list(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def record(self, *entries: JournalEntry) -> None:
        """Append ``entries`` in one write (flushed to the kernel, not yet fsynced: see ``sync``)."""
        # A dict of the fields, not asdict (which copies each value deeply): ~60 us less a file.
        lines = "".join(
            json.dumps({name: getattr(entry, name) for name in _FIELDS}, separators=(",", ":")) + "\n"
            for entry in entries
        )
        with self._lock:
            if self._handle.closed:
                # A reader thread of a connection that was just abandoned; the host holds the
                # file, so the next start finds it in the host's list instead.
                return
            try:
                self._handle.write(lines)
                self._handle.flush()
            except OSError as exc:
                raise TransferError(f"agent state {self.path}: {exc.strerror or exc}") from None
            for entry in entries:
                self._entries[entry.key] = entry
            self._unsynced = True

    def sync(self) -> None:
        """Make every recorded entry durable."""
        with self._lock:
            if self._unsynced and not self._handle.closed:
                os.fsync(self._handle.fileno())
                self._unsynced = False

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.sync()
        with self._lock:
            self._handle.close()


def forget_run(path: Path, run_id: str) -> None:
    """Rewrite the closed journal at ``path`` without the entries of ``run_id``, whose local
    files are being deleted: the host holds them, and a later open must not report them as
    files it lost and that cannot be sent again."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise TransferError(f"agent state {path}: {exc.strerror or exc}") from None
    kept = [line for line in lines if _run_of(line) != run_id]
    with atomic_path(path) as temp:
        temp.write_text("".join(kept), encoding="utf-8")


def _run_of(line: str) -> str | None:
    try:
        return str(json.loads(line)["run_id"])
    except (ValueError, TypeError, KeyError):
        return None  # a torn line: kept, as loading ignores it


def agent_id(state_dir: Path) -> str:
    """A stable id for the agent owning ``state_dir``, made on first use."""
    path = state_dir / "agent-id"
    try:
        text = path.read_text(encoding="utf-8").strip()
        if text:
            return text
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise TransferError(f"agent state {path}: {exc.strerror or exc}") from None
    new = uuid.uuid4().hex
    with atomic_path(path) as temp:
        temp.write_text(new + "\n", encoding="utf-8")
    return new


@contextlib.contextmanager
def holding_session(state_dir: Path, session: str) -> Iterator[None]:
    """This process is the one agent of ``state_dir`` streaming into ``session`` until the block
    ends (or the process does, however it ends); another is refused at once, in one line.

    Two agents sharing a state directory share its journal and its agent id: the host took both
    for one agent, and both runs of one model and device were accepted (the earlier one then
    replaced without its agent learning it), while each rewrote the other's journal. The lock
    file is left in place: removing it would let a third agent lock a new file while a second
    still holds the old one."""
    path = state_dir / f"{session}{_LOCK_SUFFIX}"
    try:
        make_dirs_durably(state_dir)
        handle = path.open("a+", encoding="utf-8")
    except OSError as exc:
        raise TransferError(f"agent state {path}: {exc.strerror or exc}") from None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip()
            who = f"another agent (process {holder})" if holder.isdigit() else "another agent"
            raise TransferError(
                f"--state {state_dir}: {who} is streaming into session {session} with this state "
                "directory; wait for it to end, or give this agent another --state or --session"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield  # the lock goes with the handle's close
