"""Watch a dump path and hand over each file once it is complete.

watchdog reports changes (inotify on Linux; a polling observer when inotify is unavailable or
asked for). A changed file becomes a candidate; a candidate is handed to ``on_ready`` when it
is complete (``completeness.check_complete``) and either has been quiet for ``quiet`` seconds
or was just renamed into place or closed by its writer (but an empty file waits out the quiet
time: it is broken only if it stays empty). A candidate that is not complete waits for its next
change. ``stop`` walks the tree one last time, hands over what is complete, and returns the
files that never completed, with the reason: they are reported, not sent.

The watcher runs on its own threads and never calls AscendCL.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from watchdog.events import (
    DirCreatedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from dumpcmp.agent.completeness import FileRole, Verdict, check_complete, role_of

__all__ = ["DumpWatcher", "NotSent"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class NotSent:
    path: Path
    reason: str
    skipped: bool = False  # no dump file at all (as compare skips it), not a dump file left incomplete


@dataclass(slots=True)
class _Candidate:
    role: FileRole
    changed_at: float
    settled: bool  # renamed into place or closed by its writer: no quiet time needed
    checked: bool = False  # checked since its last change and found incomplete


# (size, mtime_ns): what a file looked like when it was handed over. One stat per file and check
# gives it, and whether the file is empty or quiet: a watch of tens of thousands of files a step
# pays for every stat.
_Stamp = tuple[int, int]
# A directory listed this long after its mtime holds every name added before that mtime.
_TRUSTED_AFTER_NS = 1_000_000_000


def _stamp(path: Path) -> _Stamp | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def _quiet_for(stamp: _Stamp, seconds: float) -> bool:
    """Whether the file of ``stamp`` has not been written for ``seconds``."""
    return time.time_ns() - stamp[1] >= seconds * 1e9


class DumpWatcher:
    """Hands every complete file under ``root`` to ``on_ready`` (from the watcher's thread).

    ``role`` and ``complete`` default to the agent's rules (``completeness``); a caller watching
    other files (``dumpcmp reduce`` watches npy files too) passes its own.
    """

    def __init__(
        self,
        root: Path,
        on_ready: Callable[[Path], None],
        *,
        quiet: float = 1.0,
        poll: bool = False,
        poll_interval: float = 0.5,
        exclude: tuple[Path, ...] = (),
        rescan_every: float = 2.0,
        role: Callable[[Path], FileRole] = role_of,
        complete: Callable[[Path, FileRole], Verdict] = check_complete,
    ) -> None:
        self.root = root.resolve()
        self._role = role
        self._complete = complete
        self._on_ready = on_ready
        self._quiet = quiet
        self._poll = poll
        self._poll_interval = poll_interval
        self._exclude = tuple(p.resolve() for p in exclude)
        # A path is under an excluded directory when its name starts with one of these.
        self._excluded_prefixes = tuple(os.path.join(p, "") for p in self._exclude)
        self._rescan_every = rescan_every
        self._lock = threading.Lock()
        self._candidates: dict[Path, _Candidate] = {}
        self._handed: dict[Path, _Stamp] = {}  # path -> (size, mtime_ns) when handed over
        # directory -> (mtime_ns, subdirectories) when a rescan last listed it
        self._listed: dict[str, tuple[int, list[str]]] = {}
        self._stop = threading.Event()
        self._observer: BaseObserver | None = None
        self._checker: threading.Thread | None = None
        self.last_change = time.monotonic()
        self.backend = ""

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self._observer = self._start_observer()
        # Files already there (an earlier run, a restarted agent) are candidates from the start;
        # the observer started first, so nothing written meanwhile falls between the two.
        for path in self._walk():
            self._touch(path, settled=False, old=True)
        self._checker = threading.Thread(target=self._check_loop, name="dumpcmp-watch-check", daemon=True)
        self._checker.start()

    def _start_observer(self) -> BaseObserver:
        handler = _Handler(self)
        if not self._poll:
            try:
                from watchdog.observers.inotify import InotifyObserver

                # watchdog warns from its own thread when a directory created under the watch is
                # added twice (its recursive add races the new directory's own event); the watch
                # is the same, nothing is lost, and the user must not see a RuntimeWarning for it.
                warnings.filterwarnings(
                    "ignore", message="Callback with id .* already exists for watch", category=RuntimeWarning
                )
                logging.getLogger("watchdog.observers.inotify").addFilter(_not_a_stop_race)
                observer: BaseObserver = InotifyObserver()
                observer.schedule(handler, str(self.root), recursive=True)
                observer.start()
                self.backend = "inotify"
                return observer
            except (ImportError, OSError) as exc:  # no inotify here, or out of watches
                log.info("inotify unavailable (%s); polling %s", exc, self.root)
        observer = PollingObserver(timeout=self._poll_interval)
        observer.schedule(handler, str(self.root), recursive=True)
        observer.start()
        self.backend = "polling"
        return observer

    def stop(self) -> list[NotSent]:
        """Stop watching; hand over what is complete now; return what never completed."""
        self._stop.set()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5.0)
        if self._checker is not None:
            self._checker.join(timeout=5.0)
        not_sent: list[NotSent] = []
        # The threads are stopped: no lock needed. A file waiting keeps the role found then.
        roles = {path: candidate.role for path, candidate in self._candidates.items()}
        for path in self._walk():
            sent = self._handed.get(path)
            stamp = _stamp(path) if sent is not None else None
            if sent is not None and stamp == sent:
                continue  # sent and not written since: every file of a long watch
            role = roles.get(path) or self._role(path)
            if role is FileRole.FOREIGN:
                not_sent.append(NotSent(path, "not a dump file name", skipped=True))
                continue
            if role not in (FileRole.DUMP, FileRole.SIDECAR):
                continue
            if sent is None:
                stamp = _stamp(path)
            if stamp is not None and stamp[0] == 0 and not _quiet_for(stamp, self._quiet):
                not_sent.append(NotSent(path, "incomplete: empty, created just before the watch ended"))
                continue
            verdict = self._complete(path, role)
            if verdict.complete:
                self._hand_over(path, stamp)
            elif verdict.skipped:
                not_sent.append(NotSent(path, verdict.reason, skipped=True))
            else:
                not_sent.append(NotSent(path, f"incomplete: {verdict.reason}"))
        return not_sent

    # -- events ----------------------------------------------------------------------------

    def _walk(self) -> Iterator[Path]:
        for directory, dirnames, filenames in os.walk(self.root):
            here = Path(directory)
            dirnames[:] = sorted(d for d in dirnames if here / d not in self._exclude)
            for name in sorted(filenames):
                yield here / name

    def _touch(self, path: Path, *, settled: bool, old: bool = False) -> None:
        with self._lock:
            known = self._candidates.get(path)
        # A writer's every write is an event: the name of a file seen before is not parsed again.
        role = known.role if known is not None else self._role(path)
        if known is None and (
            role not in (FileRole.DUMP, FileRole.SIDECAR)
            or (self._excluded_prefixes and str(path).startswith(self._excluded_prefixes))
        ):
            return
        now = time.monotonic()
        stamp = _stamp(path) if old or settled else None
        # A file found by the first walk counts as quiet since its mtime, not since the agent started.
        quiet = old and stamp is not None and _quiet_for(stamp, self._quiet)
        changed_at = now - self._quiet if quiet else now
        settled = settled and stamp is not None and stamp[0] > 0  # a writer may create, close, then fill it
        with self._lock:
            self._candidates[path] = _Candidate(role, changed_at, settled)
            self.last_change = now

    def _touch_tree(self, directory: Path) -> None:
        """A directory created or moved in: its files may predate the observer's watch on it."""
        for here, _dirs, files in os.walk(directory):
            for name in files:
                self._touch(Path(here) / name, settled=False)

    # -- checking --------------------------------------------------------------------------

    def _check_loop(self) -> None:
        tick = max(0.02, min(0.2, self._quiet / 4))
        last_walk = time.monotonic()
        while not self._stop.wait(tick):
            if time.monotonic() - last_walk >= self._rescan_every:
                self._rescan()
                last_walk = time.monotonic()
            self.check_now()

    def _rescan(self) -> None:
        """Pick up files the observer missed: a file written into a new directory before its watch
        was in place, or an overflowing inotify queue. Names only; nothing is read.

        A directory whose mtime is the one of its last listing holds the same names (adding or
        renaming a name in changes it), so it is not listed again: a rescan costs a stat per
        directory, not a look-up per file (14 us a file every 2 s, a third of a core for a dump of
        50,000 files)."""
        pending = [str(self.root)]
        while pending:
            directory = pending.pop()
            try:
                mtime = os.stat(directory).st_mtime_ns
            except OSError:
                self._listed.pop(directory, None)
                continue
            listed = self._listed.get(directory)
            if listed is not None and listed[0] == mtime:
                pending.extend(listed[1])
                continue
            subdirectories, names = self._list(directory)
            pending.extend(subdirectories)
            # A name added within the mtime's granularity (a clock tick) of the change before it
            # leaves the mtime as it was: a listing that recent is not trusted next time.
            if time.time_ns() - mtime > _TRUSTED_AFTER_NS:
                self._listed[directory] = (mtime, subdirectories)
            here = Path(directory)
            paths = [here / name for name in names]
            with self._lock:
                missed = [p for p in paths if p not in self._candidates and p not in self._handed]
            for path in missed:
                self._touch(path, settled=False, old=True)

    def _list(self, directory: str) -> tuple[list[str], list[str]]:
        """The subdirectories (but excluded ones) and the other names in ``directory``, as ``_walk``
        sees them (a link to a directory is one, and is not followed)."""
        subdirectories: list[str] = []
        names: list[str] = []
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    try:
                        is_directory = entry.is_dir()
                    except OSError:
                        is_directory = False
                    if not is_directory:
                        names.append(entry.name)
                    elif not entry.is_symlink() and Path(entry.path) not in self._exclude:
                        subdirectories.append(entry.path)
        except OSError:
            pass  # gone or unreadable: as os.walk, nothing of it
        return subdirectories, names

    def check_now(self) -> None:
        """Hand over every candidate that is due and complete."""
        now = time.monotonic()
        with self._lock:
            due = [
                (path, c)
                for path, c in self._candidates.items()
                if not c.checked and (c.settled or now - c.changed_at >= self._quiet)
            ]
        for path, candidate in due:
            # Taken before the check: a write after it changes the stamp, so the file is sent again
            # once complete again, never left at an older state.
            stamp = _stamp(path)
            handed = stamp is None or self._handed.get(path) == stamp  # gone, or an event of a sent file
            verdict = Verdict(True) if handed else self._complete(path, candidate.role)
            with self._lock:
                if self._candidates.get(path) is not candidate:
                    continue  # changed again while being checked: wait for quiet again
                if verdict.complete:
                    del self._candidates[path]
                else:
                    candidate.checked = True
                    continue
            self._hand_over(path, stamp)

    def _hand_over(self, path: Path, stamp: _Stamp | None) -> None:
        """``stamp``: the file as it was before the check that found it complete."""
        if stamp is None or self._handed.get(path) == stamp:
            return
        self._handed[path] = stamp
        self._on_ready(path)

    @property
    def waiting(self) -> int:
        """Files seen and not complete yet."""
        with self._lock:
            return len(self._candidates)


def _not_a_stop_race(record: logging.LogRecord) -> bool:
    """watchdog logs an error when its reading thread wakes after ``stop`` closed the inotify
    handle (a race inside its own stop: nothing is lost, the watch is over). With no logging
    configured it reached the user's terminal as a stray line before the agent's own."""
    return "called when the thread is inactive" not in record.getMessage()


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: DumpWatcher) -> None:
        self._watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        watcher = self._watcher
        if event.event_type in ("deleted", "opened", "closed_no_write"):
            return
        if isinstance(event, DirCreatedEvent | DirMovedEvent):
            target = event.dest_path if isinstance(event, DirMovedEvent) else event.src_path
            watcher._touch_tree(Path(os.fsdecode(target)))
            return
        if event.is_directory:
            return
        if isinstance(event, FileMovedEvent):
            watcher._touch(Path(os.fsdecode(event.dest_path)), settled=True)
            return
        watcher._touch(Path(os.fsdecode(event.src_path)), settled=isinstance(event, FileClosedEvent))
