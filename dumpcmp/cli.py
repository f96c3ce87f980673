"""The ``dumpcmp`` command line: composes the command modules, nothing of weight lives here."""

from __future__ import annotations

import os
import signal
from types import FrameType
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from dumpcmp import __version__
from dumpcmp.commands import compare, config, convert, demo, golden, inspect, sim
from dumpcmp.commands._output import console, interrupted


class _Group(TyperGroup):
    """Ctrl-C anywhere in a command is one line and exit 130, not a silent exit or a traceback."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            interrupted()


app = typer.Typer(
    name="dumpcmp",
    help="Find the operator where an Ascend NPU run stops agreeing with its golden run.",
    cls=_Group,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(convert.app, name="convert", help="Convert dump files to npy, npy to dump files, or layouts.")
app.add_typer(config.app, name="config", help="Write and check acl.json dump configurations.")
app.add_typer(sim.app, name="sim", help="Run models on the simulated NPU.")
inspect.register(app)
golden.register(app)
compare.register(app)
demo.register(app)


def _print_version(value: bool) -> None:
    if value:
        console().print(f"dumpcmp {__version__}", markup=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """Find the operator where an Ascend NPU run stops agreeing with its golden run."""


def _stop_on_sigterm() -> None:
    """SIGTERM ends a run as Ctrl-C does: temporaries removed, the one "interrupted" line.

    Forked workers inherit the handler; in them it falls back to the default action (they end
    with the parent anyway), so only the process that owns the output cleans up and reports.
    """
    owner = os.getpid()

    def handler(signum: int, frame: FrameType | None) -> None:
        if os.getpid() != owner:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def main() -> None:
    _stop_on_sigterm()
    app()


if __name__ == "__main__":
    main()
