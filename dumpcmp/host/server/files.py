"""Received files on disk: written whole or not at all, never outside the session directory.

A file arrives into ``sessions/NAME/.incoming/`` (so a half file is never inside the dump tree
a comparison walks), is hashed as it is written, fdatasynced, and only then renamed into
``sessions/NAME/{dump,golden,rules,inputs}/<path>``, whose directory is fsynced after. Files
finished together are committed together (``commit_all``): all of them made durable by one
``syncfs`` (else every one fdatasynced), then the renames, then one fsync per directory that
gained files. Every directory on the way is opened with
``O_NOFOLLOW`` relative to its parent's descriptor, so a symlink planted anywhere in the session
directory (or a name racing with one) cannot redirect a write elsewhere.

A stored file's pages leave the page cache once nothing is about to read them (``drop_cached``,
and ``commit_all``'s ``cached``): a host receives far more than it reads back soon, and writing
into pages the kernel just freed costs much less than into fresh ones (bench/stream.py's large
files: the host's CPU per GB 2.95 -> 2.39 s, medians of 6 runs on a loaded 2-core VM).

Writes go through the page cache. Two ways around it were measured for dump files nothing reads
soon, and left out (bench/stream.py's large files, interleaved runs, loaded 2-core VM on ext4):
O_DIRECT from an aligned staging buffer (one user copy; its writes on a thread of their own while
the next buffer fills) took the host's system time per GB from 1.07-1.34 to 0.59-0.83 s but its
user time up by about as much (all of it 1.86-2.21 -> 1.82-2.29 s), and the stream's rate from
196-248 to 113-174 MB/s: ext4 writes one extending direct write of a file at a time, and the
disk waits for each. RWF_DONTCACHE (Linux 6.14+): 2.45 -> 2.33 s per GB, 218 -> 174 MB/s, and
small files cost more (3.58 -> 4.06 s per GB), its writeback starting at every write.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import platform
import secrets
import shutil
import stat
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from dumpcmp.errors import DumpcmpError, TransferError
from dumpcmp.proto._gen.dumpcmp_v1_pb2 import FileKind
from dumpcmp.proto.upload_wire import new_digest

KIND_DIRS: dict[int, str] = {
    FileKind.DUMP: "dump",
    FileKind.GOLDEN: "golden",
    FileKind.FUSION_RULE: "rules",
    FileKind.INPUT: "inputs",
    FileKind.OUTPUT: "outputs",  # a run's model outputs ({run_id}/{index}.output.npy)
}
RESULTS_DIR = "results"
INCOMING_DIR = ".incoming"
_DELETED_PREFIX = ".deleted-"  # session names never start with "."
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


class UnsafePath(TransferError):
    """A path under the session directory leads through a symlink or a non-directory."""


def session_dir(data_dir: Path, session: str) -> Path:
    return data_dir / "sessions" / session


@contextlib.contextmanager
def opened_dir(base: Path, parts: tuple[str, ...], *, create: bool) -> Iterator[int]:
    """A descriptor of ``base/parts…``, each part opened without following symlinks."""
    fd = _open_dir(base, parts, create=create)
    try:
        yield fd
    finally:
        os.close(fd)


def _open_dir(base: Path, parts: tuple[str, ...], *, create: bool) -> int:
    """``opened_dir``'s descriptor, for the caller to close."""
    fd = os.open(base, _DIR_FLAGS)
    try:
        for part in parts:
            if create:
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
                else:  # its entry durable before any file in it is: see outputs.make_dirs_durably
                    os.fsync(fd)
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise UnsafePath(
                    f"{'/'.join(parts)}: {part!r} is not a plain directory ({exc.strerror})"
                ) from None
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


class IncomingDirs:
    """The ``.incoming`` directories of the sessions one upload stream writes into, each opened
    (made, the first time) once a second at most rather than for every file it receives: that
    was three mkdirs and four opens a file. A session deleted meanwhile (no stream into it, or
    its deletion is refused) has its file refused at the commit, which finds its path gone."""

    FRESH_S = 1.0

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir
        self._open: dict[str, tuple[float, int]] = {}  # session: (opened when, descriptor)

    def get(self, session: str) -> int:
        now = time.monotonic()
        held = self._open.pop(session, None)
        if held is not None:
            if now - held[0] <= self.FRESH_S:
                self._open[session] = held
                return held[1]
            os.close(held[1])
        fd = _open_dir(self._data_dir, ("sessions", session, INCOMING_DIR), create=True)
        self._open[session] = (now, fd)
        return fd

    def close(self) -> None:
        for _when, fd in self._open.values():
            os.close(fd)
        self._open.clear()


_OPENED = itertools.count()  # the order files were opened in (``IncomingFile.opened``)
# A temporary file's name: this process's random prefix and a count, unique without a random
# draw (a getrandom call) for every file.
_TEMP_PREFIX = secrets.token_hex(8)
_TEMPS = itertools.count()


class IncomingFile:
    """One file being received: bytes go to a temporary file and into its checksum."""

    def __init__(
        self,
        data_dir: Path,
        session: str,
        kind: int,
        parts: tuple[str, ...],
        checksum: int = 0,
        dirs: IncomingDirs | None = None,  # an upload stream's; None: .incoming opened for this file
    ) -> None:
        self.data_dir = data_dir
        self.session = session
        self.kind = kind
        self.parts = parts
        self.checksum = checksum  # a dumpcmp.v1.Checksum: SHA256 (0) or XXH3_128
        self.received = 0
        self._hash = new_digest(checksum)
        self._temp = f"{_TEMP_PREFIX}-{next(_TEMPS)}.part"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        if dirs is not None:
            self._fd = os.open(self._temp, flags, 0o644, dir_fd=dirs.get(session))
        else:
            with opened_dir(data_dir, ("sessions", session, INCOMING_DIR), create=True) as incoming:
                self._fd = os.open(self._temp, flags, 0o644, dir_fd=incoming)
        self.opened = next(_OPENED)  # after the open: see _sync_file_system
        self._closed = False

    def write(self, data: bytes | memoryview) -> None:
        # Chunks are large: straight to the descriptor, no buffered file object copying them again.
        written = os.write(self._fd, data)
        if written < len(data):  # a signal, a full disk: the rest, from a view (no copy)
            view = memoryview(data)[written:]
            while view:
                view = view[os.write(self._fd, view) :]
        self._hash.update(data)
        self.received += len(data)

    def digest(self) -> bytes:
        return self._hash.digest()

    def commit(self) -> Path:
        """Make the file durable and rename it into place; its final path."""
        (error,) = commit_all([self])
        if error is not None:
            raise error
        return session_dir(self.data_dir, self.session).joinpath(KIND_DIRS[self.kind], *self.parts)

    def _sync(self, *, cached: bool, synced: bool = False) -> None:
        """Make the file durable (``synced``: it is already) and close it."""
        try:
            if not synced:
                os.fdatasync(self._fd)  # the data and the size, all a rename of a new file needs
            if not cached:
                _drop_pages(self._fd, self.received)  # clean now: freed at once, for the next writes
        finally:
            self._close()

    def _close(self) -> None:
        if not self._closed:
            self._closed = True
            os.close(self._fd)

    def discard(self) -> None:
        self._close()
        with (
            contextlib.suppress(OSError),
            opened_dir(self.data_dir, ("sessions", self.session, INCOMING_DIR), create=False) as incoming,
        ):
            os.unlink(self._temp, dir_fd=incoming)


def _keep(_file: IncomingFile) -> bool:
    return True


def commit_all(
    incoming: Sequence[IncomingFile], cached: Callable[[IncomingFile], bool] = _keep
) -> list[OSError | DumpcmpError | None]:
    """Make files durable together: each fdatasynced, then renamed into place, then each
    directory that gained one fsynced once. For each file, None when it is in place and durable,
    else what failed (a file whose directory's fsync failed is removed again: it was not durable).
    A file ``cached`` says no to leaves the page cache once durable (nothing reads it soon).
    """
    errors: list[OSError | DumpcmpError | None] = [None] * len(incoming)
    synced = len(incoming) > 1 and _sync_file_system(incoming)
    for number, file in enumerate(incoming):
        try:
            file._sync(cached=cached(file), synced=synced)
        except OSError as exc:
            errors[number] = exc
    with contextlib.ExitStack() as opened:
        # Each directory opened once for the whole group: (data dir, its parts) -> descriptor.
        dirs: dict[tuple[Path, tuple[str, ...]], int] = {}
        gained: dict[tuple[Path, tuple[str, ...]], list[int]] = {}

        def directory(base: Path, parts: tuple[str, ...], create: bool) -> tuple[Path, tuple[str, ...]]:
            if (base, parts) not in dirs:
                dirs[base, parts] = opened.enter_context(opened_dir(base, parts, create=create))
            return (base, parts)

        for number, file in enumerate(incoming):
            if errors[number] is not None:
                continue
            base = ("sessions", file.session)
            try:
                source = directory(file.data_dir, (*base, INCOMING_DIR), False)
                target = directory(file.data_dir, (*base, KIND_DIRS[file.kind], *file.parts[:-1]), True)
                os.replace(file._temp, file.parts[-1], src_dir_fd=dirs[source], dst_dir_fd=dirs[target])
            except (OSError, DumpcmpError) as exc:
                errors[number] = exc
                continue
            gained.setdefault(target, []).append(number)
        for target, numbers in gained.items():
            try:
                os.fsync(dirs[target])
            except OSError as exc:
                for number in numbers:
                    errors[number] = exc
                    with contextlib.suppress(OSError):
                        os.unlink(incoming[number].parts[-1], dir_fd=dirs[target])
    return errors


def _kernel_syncfs() -> Callable[[int], int] | None:
    """The C library's syncfs, where it reports write errors (Linux 5.8 and later): None else."""
    release = platform.release().split(".")
    if sys.platform != "linux" or not all(part.isdigit() for part in release[:2]):
        return None
    if (int(release[0]), int(release[1])) < (5, 8):  # an older one returned 0 after a failed write
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).syncfs
    except (AttributeError, OSError):
        return None
    function.argtypes = (ctypes.c_int,)
    function.restype = ctypes.c_int
    return function  # type: ignore[no-any-return]


# fdatasync flushes the disk's cache once per file; one syncfs flushes it once for a group
# (bench/stream.py's 400 real-sized files: 2.14 -> 1.50 s, medians of 6 on a loaded 2-core VM).
# It also writes whatever else is dirty on that file system, the price of the one flush.
_SYNCFS = _kernel_syncfs()


def _sync_file_system(incoming: Sequence[IncomingFile]) -> bool:
    """Whether one syncfs made every file of ``incoming`` durable (all on one file system); False
    when it could not, or failed: each is then fdatasynced, which tells which one failed."""
    if _SYNCFS is None:
        return False
    try:
        if len({os.fstat(file._fd).st_dev for file in incoming}) != 1:
            return False
    except OSError:
        return False
    # syncfs reports the file system's write errors since its descriptor was opened: the
    # earliest-opened file's covers every write of the group (any other's could miss an earlier
    # background write error of a file opened before it).
    earliest = min(incoming, key=lambda file: file.opened)
    return _SYNCFS(earliest._fd) == 0


# Smaller files keep their pages: below about 1 MiB the advice costs the host as much CPU as
# reusing the pages saves (0.1-0.2 ms a call; 2-core VM, files of 0.25-4 MiB).
_DROP_FROM = 1 << 20


def _drop_pages(fd: int, size: int) -> None:
    """Advise the kernel to free the clean pages of a file of ``size`` bytes (dirty ones stay)."""
    if size >= _DROP_FROM and hasattr(os, "posix_fadvise"):  # not on macOS: the cache keeps them
        with contextlib.suppress(OSError):  # advice only
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def drop_cached(data_dir: Path, session: str, kind: int, paths: Iterable[str]) -> None:
    """Free the page cache of stored files of ``kind`` (wire paths) that were read and will not
    be again soon (a compared dump file); a file gone meanwhile is skipped."""
    by_directory: dict[tuple[str, ...], list[str]] = {}
    for path in paths:
        *above, leaf = path.split("/")
        by_directory.setdefault(tuple(above), []).append(leaf)
    for parents, leaves in by_directory.items():
        with (
            contextlib.suppress(OSError, UnsafePath),
            opened_dir(data_dir, ("sessions", session, KIND_DIRS[kind], *parents), create=False) as parent,
        ):
            for leaf in leaves:
                try:
                    fd = os.open(leaf, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=parent)
                except OSError:
                    continue
                try:
                    _drop_pages(fd, os.fstat(fd).st_size)
                finally:
                    os.close(fd)


def remove_file(data_dir: Path, session: str, kind: int, parts: tuple[str, ...]) -> None:
    """Delete a stored file (a replaced run's), and the directories it leaves empty below its
    kind's directory (an offline compare of the session's tree would otherwise find a replaced
    run's empty shard); gone already is fine."""
    with (
        contextlib.suppress(FileNotFoundError, UnsafePath),
        opened_dir(data_dir, ("sessions", session, KIND_DIRS[kind], *parts[:-1]), create=False) as parent,
    ):
        os.unlink(parts[-1], dir_fd=parent)
    for depth in range(len(parts) - 1, 0, -1):  # the innermost directory first
        try:
            with opened_dir(
                data_dir, ("sessions", session, KIND_DIRS[kind], *parts[: depth - 1]), create=False
            ) as up:
                os.rmdir(parts[depth - 1], dir_fd=up)
        except (OSError, UnsafePath):
            return  # not empty (another file of the tree), or gone: the directories above stay too


def remove_unrecorded(data_dir: Path, session: str, recorded: set[tuple[int, str]]) -> None:
    """Delete every file under the session's kind directories that the store does not hold
    (``recorded``: kind and wire path), as ``remove_file`` does: a host that died between a
    file's rename into place and its record left it there, and no agent will ever claim it."""
    for kind, name in KIND_DIRS.items():
        root = session_dir(data_dir, session) / name
        for directory, _dirs, names in os.walk(root):
            for file_name in names:
                path = (Path(directory) / file_name).relative_to(root).as_posix()
                if (kind, path) not in recorded:
                    remove_file(data_dir, session, kind, tuple(path.split("/")))


def is_stored(data_dir: Path, session: str, kind: int, parts: tuple[str, ...], size: int) -> bool:
    """Whether the stored file is still there with its size (a resumed session trusts no more)."""
    try:
        with opened_dir(
            data_dir, ("sessions", session, KIND_DIRS[kind], *parts[:-1]), create=False
        ) as parent:
            info = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
    except (OSError, UnsafePath):
        return False
    return stat.S_ISREG(info.st_mode) and info.st_size == size


def clear_incoming(data_dir: Path, session: str) -> None:
    """Temporary files of uploads a crash interrupted; never acknowledged, so the agent resends."""
    shutil.rmtree(session_dir(data_dir, session) / INCOMING_DIR, ignore_errors=True)


@contextlib.contextmanager
def open_result(data_dir: Path, session: str, name: str, kind: int | None = None) -> Iterator[int]:
    """A read descriptor of one result file of the session, or of a file of ``kind`` it received
    (``name`` its '/'-path)."""
    *parents, leaf = name.split("/") if kind is not None else (name,)
    where = (RESULTS_DIR,) if kind is None else (KIND_DIRS[kind], *parents)
    with opened_dir(data_dir, ("sessions", session, *where), create=False) as results:
        fd = os.open(leaf, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=results)
    try:
        yield fd
    finally:
        os.close(fd)


def set_aside(data_dir: Path, session: str) -> Path | None:
    """Move a deleted session's directory out of its name's way; where it went (None: it had none)."""
    doomed = data_dir / "sessions" / f"{_DELETED_PREFIX}{session}-{secrets.token_hex(4)}"
    try:
        os.rename(session_dir(data_dir, session), doomed)
    except FileNotFoundError:
        return None
    return doomed


def remove_set_aside(doomed: Path | None) -> None:
    if doomed is not None:
        shutil.rmtree(doomed, ignore_errors=True)


def clear_deleted(data_dir: Path) -> None:
    """Directories of deleted sessions a stopped host had not finished removing."""
    for doomed in (data_dir / "sessions").glob(f"{_DELETED_PREFIX}*"):
        remove_set_aside(doomed)


# Files a session had acknowledged that were gone from its directory when the host started (one
# ``KIND_DIR/path`` a line): the store forgets them so that their agent sends them again, and the
# session's close says its results lack those that never came.
_MISSING = "missing-at-start"


def record_missing(data_dir: Path, session: str, missing: Sequence[str]) -> None:
    """Add ``missing`` (``KIND_DIR/path`` each) to the session's record of them, durably."""
    from dumpcmp.outputs import atomic_path, sync_dir

    path = session_dir(data_dir, session) / _MISSING
    known = dict.fromkeys([*missing_files(data_dir, session), *missing])
    with atomic_path(path) as temp, temp.open("w", encoding="utf-8") as out:
        out.write("".join(f"{name}\n" for name in known))
        out.flush()
        os.fsync(out.fileno())
    sync_dir(path.parent)


def missing_files(data_dir: Path, session: str) -> list[str]:
    """The session's files recorded missing at a start (``record_missing``), in their order."""
    try:
        text = (session_dir(data_dir, session) / _MISSING).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return [line for line in text.splitlines() if line]
