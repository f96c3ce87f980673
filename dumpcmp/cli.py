"""The ``dumpcmp`` command line: composes the command modules, nothing of weight lives here."""

from __future__ import annotations

import typer

from dumpcmp.commands import compare, config, convert, demo, golden, inspect, sim

app = typer.Typer(
    name="dumpcmp",
    help="Find the operator where an Ascend NPU run stops agreeing with its golden run.",
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


def main() -> None:
    app()
