"""The ``dumpcmp`` command line: composes the command modules, nothing of weight lives here.

A command's module is imported when that command runs (or shows its own help), never for the
others: importing every command module cost each run ~0.3 s of imports it had no use for
(numpy, onnx model code, acl.json models, rich's markdown...). ``dumpcmp --help`` lists the
commands from ``_COMMANDS`` without importing any of them.
"""

from __future__ import annotations

if __name__ == "__main__":
    # ``python -m dumpcmp.cli``: start as the ``dumpcmp`` executable does, with Ctrl-C taken as one
    # line before typer loads (~0.1 s, when a traceback came from inside its import). The command
    # line is then this module imported again under its own name; this copy stops in ``main``.
    from dumpcmp.__main__ import main as _start

    _start()

import importlib
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from dumpcmp import __version__
from dumpcmp.commands._output import console, interrupted, usage_error
from dumpcmp.launch import prepare_process

# Command → the one line ``dumpcmp --help`` shows, in its order. Command ``c`` lives in module
# ``dumpcmp.commands.c``, which has ``register(app)`` adding the command, or a sub-app ``app``.
_COMMANDS: dict[str, str] = {
    "inspect": "Show a dump file: header fields and, per tensor, dtype, format, shapes and statistics.",
    "golden": "Write golden npy files from an ONNX model run on onnxruntime.",
    "compare": "Compare an NPU dump with golden data; one CSV row per target tensor.",
    "demo": "Stream a simulated NPU run with one fault to a local host, name the first bad op.",
    "convert": "Convert dump files to npy, npy to dump files, or layouts.",
    "config": "Write and check acl.json dump configurations.",
    "sim": "Run models on the simulated NPU.",
    "agent": "Stream dump files to a host comparator, from a dump path or a model run here.",
    "host": "Serve sessions to agents; list sessions and fetch their results.",
    "advise": "Say in words what went wrong and where, from a result table (CSV, xlsx or a host session).",
    "reduce": "Replace GE dump and FX npy files by per-tensor summaries, to save disk on long runs.",
}


def load_command(name: str) -> Any:
    """The click command ``name``, importing its module now."""
    module = importlib.import_module(f"dumpcmp.commands.{name}")
    holder = typer.Typer()
    if hasattr(module, "register"):
        module.register(holder)
    else:
        holder.add_typer(module.app, name=name, help=_COMMANDS[name])
    return typer.main.get_group(holder).commands[name]


class _Group(TyperGroup):
    """Commands loaded on use; Ctrl-C anywhere in a command is one line and exit 130, not a
    silent exit or a traceback; a command line click cannot read (an unknown option or command,
    a missing value) is one line and exit 2, as ``StrictCommand``'s refusals are, not typer's
    boxed usage text."""

    _listing = False  # True while the top-level help lists the commands

    def list_commands(self, ctx: Any) -> list[str]:
        return list(_COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in _COMMANDS:
            return None
        if self._listing:  # the list needs a name and a line, not the command's module
            return TyperCommand(cmd_name, help=_COMMANDS[cmd_name])
        return load_command(cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except Exception as exc:
            _one_line_if_usage(exc)
            raise

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            interrupted()
        except Exception as exc:  # a subcommand's (or sub-group's) command line, or a command's ctx.fail
            _one_line_if_usage(exc)
            raise


def _one_line_if_usage(exc: Exception) -> None:
    """Exit 2 with click's message in one line when ``exc`` is click's UsageError (matched by
    name: typer vendors its own click); "no arguments, show the help" stays click's to show."""
    kinds = [kind.__name__ for kind in type(exc).__mro__]
    if "UsageError" not in kinds or "NoArgsIsHelpError" in kinds:
        return
    suggestions = _suggestions(exc) if "NoSuchOption" in kinds else []
    if suggestions:
        usage_error(f"no such option: {exc.option_name}; did you mean {' or '.join(suggestions)}?")  # type: ignore[attr-defined]
    message = exc.format_message().rstrip(".")  # type: ignore[attr-defined]
    if message[1:2].islower():  # "No such option: ..." as the other usage errors say it
        message = message[0].lower() + message[1:]
    usage_error(message)


def _suggestions(exc: Any) -> list[str]:
    """click's close matches for an unknown option, one per option in its first ``--`` spelling
    (click offers -out, --output_path and --output-path: three names of one option)."""
    params = exc.ctx.command.params if exc.ctx is not None else []
    found: list[str] = []
    for name in exc.possibilities or ():
        param = next((p for p in params if name in (*p.opts, *p.secondary_opts)), None)
        spellings = [*param.opts, *param.secondary_opts] if param is not None else [name]
        shown = next((s for s in spellings if s.startswith("--")), name)
        if shown not in found:
            found.append(shown)
    return found


app = typer.Typer(
    name="dumpcmp",
    help="Find the operator where an Ascend NPU run stops agreeing with its golden run.",
    cls=_Group,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


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


def main() -> None:
    prepare_process()
    app()
