"""What every command shares: its consoles, and the rules that user errors are one line (exit 1)
and an interrupted run says so in one line (exit 130, as a shell reports SIGINT).

No typer here: the host and agent libraries' callers use it too. Exiting by SystemExit is what
click does with typer.Exit anyway."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

from dumpcmp.errors import DumpcmpError
from dumpcmp.launch import INTERRUPTED, INTERRUPTED_EXIT_CODE, took_interrupt
from dumpcmp.printable import counted as counted  # the commands say counts through here
from dumpcmp.printable import printable

if TYPE_CHECKING:  # rich loads on a console's first use: compare prints its plain lines by ``say``
    from rich.console import Console

USAGE_EXIT_CODE = 2


@functools.cache
def _console_class() -> type[Console]:
    from rich.console import Console

    class _EscapingConsole(Console):
        """A Console whose every string (printed, or a table's cell) has its control characters
        escaped (``dumpcmp.printable``): the one place that keeps a newline or an ESC sequence in
        a path or op name from splitting a line or running in the user's terminal."""

        def render_str(self, text: str, **options: Any) -> Any:
            return super().render_str(printable(text), **options)

        def on_broken_pipe(self) -> None:
            # rich's own answer ends the process (exit 1, without a word) before the files the
            # command was still to write.
            self.quiet = True
            _reader_gone(self.file)

    return _EscapingConsole


def console(width: int | None = None) -> Console:
    # Made per call: CliRunner swaps sys.stdout, and soft_wrap keeps paths on one line.
    return _console_class()(soft_wrap=True, highlight=False, emoji=False, width=width)  # ":x:" stays text


def error_console() -> Console:
    return _console_class()(stderr=True, soft_wrap=True, highlight=False, emoji=False)


def say(text: str) -> None:
    """One plain line on stdout, control characters escaped: what ``console().print(text,
    markup=False)`` prints, without loading rich (~25 ms that a compare spares)."""
    try:
        print(printable(text), flush=True)  # flushed as rich does: in order with stderr's lines
    except BrokenPipeError:
        _reader_gone(sys.stdout)


def _reader_gone(stream: Any) -> None:
    """The reader of ``stream`` left (``| head -1``): the rest of its output is dropped, and the
    command goes on to write the files it was asked for."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())  # later writes to the descriptor go nowhere
        os.close(devnull)


def _error_line(message: str) -> None:
    from rich.markup import escape

    error_console().print(f"[red]Error[/red]: {escape(message)}")


def fail(message: str) -> NoReturn:
    _error_line(message)
    raise SystemExit(1) from None


def usage_error(message: str) -> NoReturn:
    """A command line that cannot be read: one line, exit 2 (click's code for it)."""
    _error_line(message)
    raise SystemExit(USAGE_EXIT_CODE) from None


def interrupted(line: str = INTERRUPTED) -> NoReturn:
    # Every writer publishes whole files only (dumpcmp.outputs.atomic_path), so what is on disk
    # is complete; the line says that the set of files is not (or, given, what became of them).
    from rich.markup import escape

    error_console().print(f"[red]interrupted[/red]: {escape(line)}")
    raise SystemExit(INTERRUPTED_EXIT_CODE) from None


@contextmanager
def user_errors(interrupted_line: str = INTERRUPTED) -> Iterator[None]:
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
        interrupted(interrupted_line)
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
