"""What every command shares: its consoles, and the rules that user errors are one line (exit 1)
and an interrupted run says so in one line (exit 130, as a shell reports SIGINT).

No typer here: a command's work may run in the process ``dumpcmp.handoff`` starts, which never
loads the command line. Exiting by SystemExit is what click does with typer.Exit anyway."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

from rich.console import Console
from rich.markup import escape

from dumpcmp.errors import DumpcmpError
from dumpcmp.launch import INTERRUPTED, INTERRUPTED_EXIT_CODE, took_interrupt
from dumpcmp.printable import counted as counted  # the commands say counts through here
from dumpcmp.printable import printable

USAGE_EXIT_CODE = 2


class _EscapingConsole(Console):
    """A Console whose every string (printed, or a table's cell) has its control characters
    escaped (``dumpcmp.printable``): the one place that keeps a newline or an ESC sequence in a
    path or op name from splitting a line or running in the user's terminal."""

    def render_str(self, text: str, **options: Any) -> Any:
        return super().render_str(printable(text), **options)

    def on_broken_pipe(self) -> None:
        # The reader of this output left (``| head -1``): the rest of it is dropped, and the
        # command goes on to write the files it was asked for. rich's own answer ends the
        # process (exit 1, without a word) before them.
        self.quiet = True
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.file.fileno())  # later consoles write to the same descriptor
            os.close(devnull)


def console(width: int | None = None) -> Console:
    # Made per call: CliRunner swaps sys.stdout, and soft_wrap keeps paths on one line.
    return _EscapingConsole(soft_wrap=True, highlight=False, emoji=False, width=width)  # ":x:" stays text


def error_console() -> Console:
    return _EscapingConsole(stderr=True, soft_wrap=True, highlight=False, emoji=False)


def fail(message: str) -> NoReturn:
    error_console().print(f"[red]Error[/red]: {escape(message)}")
    raise SystemExit(1) from None


def usage_error(message: str) -> NoReturn:
    """A command line that cannot be read: one line, exit 2 (click's code for it)."""
    error_console().print(f"[red]Error[/red]: {escape(message)}")
    raise SystemExit(USAGE_EXIT_CODE) from None


def interrupted() -> NoReturn:
    # Every writer publishes whole files only (dumpcmp.outputs.atomic_path), so what is on disk
    # is complete; the line says that the set of files is not.
    error_console().print(f"[red]interrupted[/red]: {INTERRUPTED}")
    raise SystemExit(INTERRUPTED_EXIT_CODE) from None


@contextmanager
def user_errors() -> Iterator[None]:
    """A DumpcmpError is the user's to fix: print it without a traceback and exit 1; Ctrl-C is
    one line and exit 130.

    An OSError that reaches here is the machine's (a full or read-only disk, a permission): one
    line naming the file. InternalError is deliberately not caught: a bug in dumpcmp keeps its
    traceback.
    """
    try:
        yield
    except DumpcmpError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        interrupted()
    except RuntimeError as exc:
        _broken_workers(exc)
    except OSError as exc:
        fail(f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror or str(exc))


def _broken_workers(exc: RuntimeError) -> NoReturn:
    """A pool whose worker process died: of the interrupt that reached the whole process group
    (its own Ctrl-C line), or killed otherwise (one line); any other RuntimeError is a bug."""
    from concurrent.futures import BrokenExecutor

    if not isinstance(exc, BrokenExecutor):
        raise exc
    if took_interrupt():
        interrupted()
    fail(f"a worker process ended abruptly (killed? out of memory?): {INTERRUPTED}")
