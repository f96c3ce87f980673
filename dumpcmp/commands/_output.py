"""What every command shares: its consoles and the rule that user errors are one line, exit 1."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from dumpcmp.errors import DumpcmpError


def console() -> Console:
    # Made per call: CliRunner swaps sys.stdout, and soft_wrap keeps paths on one line.
    return Console(soft_wrap=True, highlight=False)


def error_console() -> Console:
    return Console(stderr=True, soft_wrap=True, highlight=False)


def fail(message: str) -> NoReturn:
    error_console().print(f"[red]Error[/red]: {escape(message)}")
    raise typer.Exit(1) from None


@contextmanager
def user_errors() -> Iterator[None]:
    """A DumpcmpError is the user's to fix: print it without a traceback and exit 1.

    InternalError is deliberately not caught: a bug in dumpcmp keeps its traceback.
    """
    try:
        yield
    except DumpcmpError as exc:
        fail(str(exc))
