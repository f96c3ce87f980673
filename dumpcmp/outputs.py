"""Where commands write: output directories checked before work starts, files written whole or not at all.

Every command that writes (compare, convert, sim run, golden, demo) goes through these two
functions, so a bad ``-o`` is one line before any work, and an interrupted or failed write never
leaves a half file or a hidden temporary behind.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from dumpcmp.errors import OutputError

__all__ = [
    "NAME_MAX",
    "atomic_path",
    "holds_nothing",
    "kept_if_written",
    "link_new",
    "make_dirs_durably",
    "new_file",
    "new_output_dir",
    "prepare_output_dir",
    "sync_dir",
    "temp_beside",
    "writing",
]


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def prepare_output_dir(path: Path, option: str = "-o", *, durable: bool = False) -> Path:
    """Make ``path`` (and its parents) and prove a file can be written there; else one clear error.

    ``option`` names the flag the user gave the path with, so the message says what to change;
    ``durable``: each directory made is fsynced into its parent (``make_dirs_durably``).
    """
    if path.exists() and not path.is_dir():
        raise OutputError(f"{option} {path}: is a file, not a directory")
    try:
        if durable:
            make_dirs_durably(path)
        else:
            path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{option} {path}: cannot create the directory ({_reason(exc)})") from None
    try:
        handle, probe = tempfile.mkstemp(prefix=".dumpcmp-probe-", dir=path)
    except OSError as exc:
        raise OutputError(f"{option} {path}: not writable ({_reason(exc)})") from None
    os.close(handle)
    os.unlink(probe)
    return path


def sync_dir(path: Path) -> None:
    """fsync a directory: the entries made in it (a new file, a new directory) survive a power cut."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs_durably(path: Path) -> None:
    """``mkdir -p path``, each directory it makes fsynced into its parent.

    A file made durable (fsync, rename, fsync of its directory) in a directory whose own entry is
    not could still vanish with it in a power cut: the host acknowledges such files, and an agent
    with --delete-acked then deletes its copy."""
    for directory in reversed(_missing_dirs(path)):
        with contextlib.suppress(FileExistsError):
            directory.mkdir()
        sync_dir(directory.parent)


def _missing_dirs(path: Path) -> list[Path]:
    """``path`` and its parents that do not exist yet, deepest first: what making it creates."""
    return [p for p in (path, *path.parents) if not p.exists()]


@contextlib.contextmanager
def kept_if_written(path: Path) -> Iterator[Path]:
    """Around a run that makes ``path`` when it starts: the directories it made are removed again
    on the way out (success, failure or Ctrl-C) while they are empty, so a run that wrote
    nothing (every input unreadable, a disk full from the first file) leaves no trace."""
    made = _missing_dirs(path)
    try:
        yield path
    finally:
        for directory in made:
            try:
                directory.rmdir()  # only an empty one goes
            except OSError:
                break


@contextlib.contextmanager
def new_output_dir(
    path: Path, option: str = "-o", *, durable: bool = False, whole: bool = False
) -> Iterator[Path]:
    """``prepare_output_dir`` for a block that may fail: what it created goes again on failure.

    A command refused for a bad input found only once work started (an unknown fault target, an
    input of the wrong shape) must not leave a directory of half a run behind. Only directories
    this call created are removed, with what the block wrote into them; a directory that existed
    before is never removed. An interrupted run (Ctrl-C, SIGTERM) keeps what it wrote: those
    files are complete, and the run says it did not finish.

    ``whole``: the block writes one whole (a simulation, a demo's run) of which a part is of no
    use and would only make its rerun refuse the directory as taken: interrupted as well, what
    it wrote goes, and a directory that was empty before (``holds_nothing``) is emptied again.
    """
    made = _missing_dirs(path)
    emptied = whole and not made and holds_nothing(path)
    prepare_output_dir(path, option, durable=durable)
    try:
        yield path
    except Exception:
        _undo(path, made, emptied=emptied)
        raise
    except BaseException:
        if whole:
            _undo(path, made, emptied=emptied)
        raise


def holds_nothing(path: Path) -> bool:
    """Whether ``path`` is missing or an empty directory: all a failed run made in it can go."""
    try:
        return not path.exists() or (path.is_dir() and not any(path.iterdir()))
    except OSError:
        return False


def _undo(path: Path, made: list[Path], *, emptied: bool) -> None:
    """Remove the directories ``made`` (with what is in them); ``emptied``: ``path``'s contents."""
    if made:
        shutil.rmtree(made[-1], ignore_errors=True)
    elif emptied:
        for child in list(path.iterdir()):
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; on success it becomes ``target``, on any error it is gone.

    ``OSError`` while writing (full disk, read-only filesystem, permissions) becomes an
    :class:`OutputError` naming ``target``; other exceptions (Ctrl-C included) pass unchanged.
    """
    temp = target.with_name(_temp_name(target.name))
    try:
        with writing(target):
            target.parent.mkdir(parents=True, exist_ok=True)
            yield temp
            os.replace(temp, target)
    finally:
        with contextlib.suppress(OSError):
            temp.unlink()


def new_file(path: Path, write: Callable[[Path], object]) -> Path:
    """A new file at ``path``, or at the first free ``{stem}_{n}{suffix}`` beside it: never over
    an existing file (a user's, or another run's of the same second); the path written.

    ``write`` fills a temporary path beside it (hidden, of this call alone); once it returns, the
    file is linked onto the free name and its temporary name removed. A name is taken only by a
    whole file: a run killed at any moment, ``kill -9`` included, leaves no empty or half file
    under it (creating the name empty first, then replacing it, left a killed run's 0-byte file,
    and the next run wrote ``_1`` beside it). ``OSError`` becomes :class:`OutputError` naming
    ``path``; anything else raised (Ctrl-C included) passes, the temporary file gone.
    """
    temp = temp_beside(path)
    try:
        with writing(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            write(temp)
            return link_new(temp, path)
    finally:
        with contextlib.suppress(OSError):
            temp.unlink()


def temp_beside(path: Path) -> Path:
    """A hidden temporary name beside ``path``, of this caller alone, for ``link_new`` to publish."""
    return path.with_name(_temp_name(f"{path.name}.{secrets.token_hex(4)}"))


def link_new(temp: Path, path: Path) -> Path:
    """Give ``temp`` the first free name of ``path``'s (``link`` fails on a taken one: two runs
    never pick one name); where the file system has no hard links (FAT, some network and FUSE
    mounts), the name is created empty and at once replaced."""
    candidate, n = path, 0
    while True:
        try:
            os.link(temp, candidate)
            return candidate
        except FileExistsError:
            pass
        except OSError as exc:
            if exc.errno not in _NO_HARD_LINKS:
                raise
            try:
                os.close(os.open(candidate, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            except FileExistsError:
                pass
            else:
                os.replace(temp, candidate)
                return candidate
        n += 1
        candidate = path.with_name(f"{path.stem}_{n}{path.suffix}")


# What link(2) says on a file system without hard links
_NO_HARD_LINKS = frozenset({errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS})

NAME_MAX = 255  # bytes in one file name on Linux file systems


def _temp_name(name: str) -> str:
    """``.{name}.part``, or a digest of ``name`` where that is too long for a file name although
    ``name`` itself is not."""
    temp = f".{name}.part"
    if len(os.fsencode(temp)) <= NAME_MAX:
        return temp
    return f".{hashlib.sha256(os.fsencode(name)).hexdigest()}.part"


@contextlib.contextmanager
def writing(target: Path) -> Iterator[None]:
    """``OSError`` in the block (full disk, read-only filesystem, permissions) becomes an
    :class:`OutputError` naming ``target``; a write or close says no file name of its own."""
    try:
        yield
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {_reason(exc)}") from None
