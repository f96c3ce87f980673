"""``dumpcmp reduce PATH [--watch] [--keep …]``: dump and npy files replaced by per-tensor summaries.

The work is ``dumpcmp.host.torchair.reduce``; this module walks PATH once, or watches it with the
agent's watcher (``DumpWatcher``), which hands over a file once it is whole: a binary dump by its
size equation (the agent's rule), an npy file by its header's size. Ctrl-C ends a watch with the
one summary line; files still incomplete then are reported and left in place.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from dumpcmp.commands._flags import StrictCommand
from dumpcmp.commands._output import console, counted, user_errors
from dumpcmp.printable import SKIPPED_SHOWN

if TYPE_CHECKING:
    from dumpcmp.agent.completeness import FileRole, Verdict
    from dumpcmp.host.torchair.reduce import Reducer, ReduceReport

__all__ = ["reduce", "register", "watch_and_reduce"]


def register(app: typer.Typer) -> None:
    """Add ``reduce`` to the top-level app (``dumpcmp reduce PATH``)."""
    app.command("reduce", cls=StrictCommand)(reduce)


def reduce(
    path: Annotated[Path, typer.Argument(help="A GE dump or FX dump directory.", show_default=False)],
    watch: Annotated[
        bool, typer.Option("--watch", help="Keep reducing files as they appear, until Ctrl-C.")
    ] = False,
    keep: Annotated[
        str, typer.Option("--keep", help="Statistics to keep, comma-separated: min,max,mean,l2norm,crc32.")
    ] = "min,max,mean,l2norm,crc32",
    duration: Annotated[
        float | None,
        typer.Option(
            "--duration", min=0.0, help="With --watch: stop after this many seconds.", show_default=False
        ),
    ] = None,
) -> None:
    """Replace GE dump and FX npy files by per-tensor summaries, to save disk on long runs.

    Each file under PATH becomes one line of dumpcmp_reduced.jsonl in its directory (statistics
    and CRC-32 of every tensor, for compare --mode torchair in statistics and md5 modes); the
    original is deleted once its line is safely on disk. Unreadable files are reported and kept.
    """
    from dumpcmp.errors import ConfigError
    from dumpcmp.host.torchair.reduce import Reducer, parse_keep

    with user_errors():
        if duration is not None and not watch:
            raise ConfigError("--duration: an option of --watch (a single pass ends by itself)")
        reducer = Reducer(parse_keep(keep))
        if not path.is_dir():
            raise ConfigError(f"{path}: " + ("not a directory" if path.exists() else "no such directory"))
        _refuse_offline_dump(path)
        if watch:
            printer = console()
            printer.print(f"watching {escape(str(path))} (Ctrl-C stops)")
            report = watch_and_reduce(path, reducer, duration=duration)
        else:
            report = _reduce_tree(path, reducer)
    if not report.seen and not watch:
        console().print(f"nothing to reduce: {escape(str(path))} holds no files (at any depth)")
        return
    _print_report(report, stopped=watch)


# msprobe's names. Not data_dump: users name offline dump paths that too, and an FX-only tree
# (npy files) holds no GE dump files, so it passes the check below anyway.
_TORCHAIR_DIRS = ("msprobe_ge_dump", "msprobe_fx_dump")
_GE_DUMP_DEPTH = 7  # msprobe_ge_dump/worldsize*/time/device/model/model_id/token


_NOT_TORCHAIR = (
    "not a TorchAir dump (no dynamo_*.txt GE graph dump beside it, no msprobe_ge_dump or "
    "msprobe_fx_dump directory): reduce keeps only statistics, which compare -m offline_data cannot use"
)


def _refuse_offline_dump(path: Path) -> None:
    """Only TorchAir dumps may be reduced: an offline (ATC model) dump tree reduced to summaries
    could never be compared again, since ``compare -m offline_data`` needs every tensor."""
    from dumpcmp.errors import ConfigError
    from dumpcmp.proto.walker import walk_dump_tree

    if _looks_torchair(path.resolve()) or not walk_dump_tree(path).entries:
        return
    raise ConfigError(f"{path}: {_NOT_TORCHAIR}; nothing was changed")


def _looks_torchair(directory: Path) -> bool:
    """Whether the dump files in or below ``directory`` (resolved) are a TorchAir run's."""
    from dumpcmp.host.torchair.layout import graph_dumps_in, holds_graph_dumps

    if any(part in _TORCHAIR_DIRS for part in directory.parts):
        return True
    # Below the dump root (a rank or token directory) the graph dumps are in an ancestor itself;
    # the ancestors' other subdirectories are not looked into (one of them may be / or /tmp).
    above = directory.parents[:_GE_DUMP_DEPTH]
    return holds_graph_dumps(directory) or any(graph_dumps_in(d) for d in above)


class _TorchairFiles:
    """The per-file form of ``_refuse_offline_dump``: a watched directory is empty when the watch
    starts, and a tree may hold an offline run beside a TorchAir one, so each binary dump file is
    checked, and one that is not a TorchAir run's is left in place (npy files pass, as an FX-only
    tree does). A directory once seen to be a TorchAir run's is not listed again for its next files."""

    def __init__(self) -> None:
        self._known: set[Path] = set()

    def refusal(self, path: Path) -> str | None:
        from dumpcmp.host.torchair.reduce import kind_of

        if kind_of(path) == "fx":
            return None
        directory = path.parent.resolve()
        if directory in self._known:
            return None
        if _looks_torchair(directory):
            self._known.add(directory)
            return None
        return _NOT_TORCHAIR


def _reduce_tree(root: Path, reducer: Reducer) -> ReduceReport:
    """Every file under ``root`` reduced, but an offline run's dump files (``_TorchairFiles``)."""
    from dumpcmp.host.torchair.reduce import tree_files

    torchair = _TorchairFiles()
    for path in tree_files(root):
        reducer.reduce(path, torchair.refusal)
    return reducer.report


def watch_and_reduce(
    root: Path,
    reducer: Reducer,
    *,
    duration: float | None = None,
    stop: threading.Event | None = None,
    quiet: float = 1.0,
) -> ReduceReport:
    """Reduce files under ``root`` as they become whole, until Ctrl-C, ``stop`` or ``duration``.

    Raises OutputError (after stopping the watcher) when a summary cannot be written.
    """
    from dumpcmp.agent.watcher import DumpWatcher
    from dumpcmp.errors import OutputError

    stop = stop or threading.Event()
    failures: list[OutputError] = []
    torchair = _TorchairFiles()

    def on_ready(path: Path) -> None:
        if failures:
            return
        try:
            reducer.reduce(path, torchair.refusal)
        except OutputError as exc:
            failures.append(exc)
            stop.set()

    watcher = DumpWatcher(root, on_ready, quiet=quiet, role=_role, complete=_complete)
    watcher.start()
    ends = None if duration is None else time.monotonic() + duration
    try:
        while not stop.wait(0.1):
            if ends is not None and time.monotonic() >= ends:
                break
    except KeyboardInterrupt:
        pass  # the user's way to end a watch: finish what is whole, then report
    finally:
        not_reduced = watcher.stop()
    if failures:
        raise failures[0]
    reducer.report.kept.extend((n.path, n.reason) for n in not_reduced if n.reason != "not a dump file name")
    return reducer.report


def _role(path: Path) -> FileRole:
    """The agent's roles, with npy files (FX dumps) watched like dump files and our own file quiet."""
    from dumpcmp.agent.completeness import FileRole, role_of
    from dumpcmp.host.torchair.reduce import kind_of

    kind = kind_of(path)
    if kind == "fx":
        return FileRole.DUMP
    if kind is None and not path.name.startswith("."):
        return FileRole.QUIET  # the reduced file, stats csv, graph txt: not ours to reduce
    return role_of(path)


def _complete(path: Path, role: FileRole) -> Verdict:
    from dumpcmp.agent.completeness import Verdict, check_complete
    from dumpcmp.errors import FormatError
    from dumpcmp.proto.npy import npy_size
    from dumpcmp.proto.sniff import not_regular

    if path.is_symlink() or not_regular(path):
        return Verdict(True, "")  # nothing to wait for: the reducer says why it passes it over
    if not path.name.endswith(".npy"):
        return check_complete(path, role)
    try:
        expected, size = npy_size(path), path.stat().st_size
    except (FormatError, OSError) as exc:
        return Verdict(False, str(exc))
    return Verdict(size >= expected, "" if size >= expected else f"{size} of {expected} bytes")


def _print_report(report: ReduceReport, *, stopped: bool) -> None:
    from dumpcmp.agent.progress import human_bytes

    printer = console()
    kept = f"; {counted(len(report.kept), 'file')} left in place" if report.kept else ""
    skipped = f"; {counted(len(report.skipped), 'file')} skipped" if report.skipped else ""
    prefix = "stopped: " if stopped else ""
    printer.print(
        f"{prefix}reduced {counted(report.reduced, 'file')}, freed {human_bytes(report.freed)}{kept}{skipped}"
    )
    for reason, paths in _by_reason(report.kept).items():
        if len(paths) == 1:
            printer.print(f"kept {escape(str(paths[0]))}: {escape(reason)}")
            continue
        # One line of a reason for many files: a watch refusing an offline run said it per file.
        printer.print(f"kept {counted(len(paths), 'file')}: {escape(reason)}")
        for path in paths[:SKIPPED_SHOWN]:
            printer.print(f"  {escape(str(path))}")
        if len(paths) > SKIPPED_SHOWN:
            printer.print(f"  … and {len(paths) - SKIPPED_SHOWN} more")
    for path, reason in report.skipped:
        printer.print(f"skipped {escape(str(path))}: {escape(reason)}")


def _by_reason(kept: list[tuple[Path, str]]) -> dict[str, list[Path]]:
    grouped: dict[str, list[Path]] = {}
    for path, reason in kept:
        grouped.setdefault(reason, []).append(path)
    return grouped
