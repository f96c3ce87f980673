"""Command lines read as the user meant them, or refused: never silently reinterpreted.

click reads an unknown single-dash word such as ``-overflow_detection`` (msprobe's spelling) as
the short option ``-o`` with the value ``verflow_detection`` glued on, and ``-tp ""`` as the
current directory. ``StrictCommand`` (``StrictGroup`` for a group's own options) looks at the
arguments before click does:

* ``-long_name`` is read as ``--long_name`` when the command has that long option (the
  spelling of the CANN scripts, whose options all take one dash);
* any other single-dash word of more than one letter that is not an option of the command is an
  error naming the long option it most likely misspells, or else saying that a short option's
  value goes after a space (``-o DIR``, ``-j 4``): a glued value is never read, nor suggested
  for a word the CANN scripts use (``-out`` is msaccucmp's option, not ``-o ut``);
* ``-x=VALUE`` is ``-x VALUE`` (click would keep the ``=`` in the value);
* an empty path, as an option's value or as an argument, is an error, not the current directory;
* a single-valued option given twice, under one spelling or two (``-tp A -l B``), is an error:
  click would silently keep the last. Options that take a list, and counters, may repeat.

Errors are one line and exit code 2, click's code for a bad command line.
"""

from __future__ import annotations

import difflib
import math
import os
import typing
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import typer
from typer.core import TyperCommand, TyperGroup

from dumpcmp.commands._output import USAGE_EXIT_CODE, usage_error
from dumpcmp.proto.sniff import not_regular

__all__ = ["USAGE_EXIT_CODE", "StrictCommand", "StrictGroup", "checked_args", "given_in_order", "refusal"]

# The multi-letter options of the CANN scripts users come from (msaccucmp compare and convert,
# compare_vector, the dump conversion script). Where a command has no such option, the word is
# theirs, not a short option with a glued value: ``-out DIR`` never gets the hint ``-o ut``.
CANN_SPELLINGS = frozenset(
    ("-out", "-cf", "-map", "-alg", "-max", "-advisor", "-overflow_detection", "-custom", "-type", "-target")
)


class _Option(Protocol):
    """What is read of a click option (typer may vendor its own click, so no isinstance)."""

    name: str | None
    opts: list[str]
    secondary_opts: list[str]
    is_flag: bool
    count: bool
    multiple: bool


class FlagError(Exception):
    """A command-line argument that would be read otherwise than the user meant."""


class StrictCommand(TyperCommand):
    """A typer command whose arguments pass ``checked_args`` before click parses them."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        checked = _strictly_read(self, args, group=False)
        ctx.meta[_GIVEN_ARGS] = tuple(checked)
        return super().parse_args(ctx, checked)


_GIVEN_ARGS = "dumpcmp.given_args"


def given_in_order(ctx: Any, names: Collection[str]) -> list[tuple[str, str]]:
    """(parameter name, value) for every value of the repeatable options ``names``, in the order
    the command line gave them: click keeps each option's values in order, but not how two
    options interleave (``--model a --layer x --model b``). Only for a ``StrictCommand``.
    """
    parser = ctx.command.make_parser(ctx)
    values, _, order = parser.parse_args(args=list(ctx.meta[_GIVEN_ARGS]))
    pending = {name: list(values.get(name) or ()) for name in names}
    found = []
    for param in order:  # one entry per occurrence
        left = pending.get(param.name)
        if left:
            found.append((param.name, left.pop(0)))
    return found


class StrictGroup(TyperGroup):
    """A typer group whose own options (those before the subcommand) pass ``checked_args``;
    the subcommand checks the rest itself."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _strictly_read(self, args, group=True))


def _strictly_read(command: Any, args: list[str], *, group: bool) -> list[str]:
    try:
        return checked_args(command.params, args, path_parameters(command.callback), group=group)
    except FlagError as exc:
        usage_error(str(exc))


def path_parameters(callback: Callable[..., Any] | None) -> frozenset[str]:
    """The parameters of a command function annotated as a path (alone, optional or in a list)."""
    if callback is None:
        return frozenset()
    hints = typing.get_type_hints(callback)

    def is_path(hint: object) -> bool:
        return hint is Path or any(is_path(arg) for arg in typing.get_args(hint))

    return frozenset(name for name, hint in hints.items() if is_path(hint))


def checked_args(
    params: Sequence[Any], args: Sequence[str], paths: frozenset[str] = frozenset(), *, group: bool = False
) -> list[str]:
    """``args`` with CANN-style spellings made click's; raises FlagError for a misread one.

    ``paths`` names the parameters whose value is a path, which must not be empty. For a
    ``group``, the first word that is neither an option nor a value names the subcommand: it and
    what follows are the subcommand's to check.
    """
    options: dict[str, _Option] = {
        name: p
        for p in params
        if getattr(p, "param_type_name", "") == "option"
        for name in (*p.opts, *p.secondary_opts)
    }
    arguments = [p for p in params if getattr(p, "param_type_name", "") == "argument"]
    out: list[str] = []
    value_of: _Option | None = None  # the option whose value the next argument is
    given: dict[str | None, str] = {}  # option name -> the spelling it was first given as
    positionals = 0
    for position, arg in enumerate(args):
        if value_of is not None:
            _check_value(value_of, value_of.opts[0], arg, paths)
            out.append(arg)
            value_of = None
            continue
        if group and (arg == "--" or not arg.startswith("-")):
            out.extend(args[position:])
            break
        if arg == "--":
            for offset, rest in enumerate(args[position + 1 :]):
                _check_argument(arguments, positionals + offset, rest, paths)
            out.extend(args[position:])
            break
        if not arg.startswith("-") or len(arg) < 2:
            _check_argument(arguments, positionals, arg, paths)
            positionals += 1
            out.append(arg)
            continue
        name, equals, value = arg.partition("=")
        spelled = _spelling(name, options)
        if spelled is None:
            out.append(arg)  # a "--" word click does not know: click says so itself
            continue
        option = options[spelled]
        _check_once(option, spelled, given)
        takes_value = _takes_value(option)
        if equals and takes_value:
            _check_value(option, option.opts[0], value, paths)
            out += [spelled, value]
        else:
            out.append(spelled + equals + value)
            value_of = option if takes_value else None
    return out


def _spelling(name: str, options: dict[str, _Option]) -> str | None:
    """The option ``name`` means; None for an unknown ``--`` word; FlagError for a misread one."""
    if name in options:
        return name
    if name.startswith("--"):
        return None
    if f"-{name}" in options:
        return f"-{name}"
    if len(name) == 2:
        return None  # an unknown short option: click's own error names it
    glued = None if name in CANN_SPELLINGS else _glued_to(name, options)
    if glued is not None and len(glued) > 2:
        raise _glued_error(name, glued)
    hint = _closest(name, options)
    if hint is not None:
        raise FlagError(f"no such option: {name}; did you mean {hint}?")
    if glued is not None:
        raise _glued_error(name, glued)
    if name in CANN_SPELLINGS:
        raise FlagError(f"no such option: {name} (a CANN script's option; this command has none like it)")
    raise FlagError(f"no such option: {name}")


def _glued_to(name: str, options: dict[str, _Option]) -> str | None:
    """The longest value-taking option ``name`` starts with, in one-dash spelling (``-tp``)."""
    spellings = {opt if opt.startswith("-") and not opt.startswith("--") else opt[1:]: option
                 for opt, option in options.items()}  # fmt: skip
    starts = [
        spelling
        for spelling, option in spellings.items()
        if name.startswith(spelling) and len(spelling) < len(name) and _takes_value(option)
    ]
    return max(starts, key=len, default=None)


def _glued_error(name: str, option: str) -> FlagError:
    value = name[len(option) :]
    return FlagError(f"{name}: write the value of {option} after a space: {option} {value}")


def _takes_value(option: _Option) -> bool:
    return not option.is_flag and not option.count


def _check_once(option: _Option, spelled: str, given: dict[str | None, str]) -> None:
    """FlagError when a single-valued option comes again: click would silently keep the last."""
    if option.multiple or option.count:
        return
    first = given.get(option.name)
    if first is None:
        given[option.name] = spelled
        return
    if first == spelled:
        raise FlagError(f"{spelled} is given twice; give it once")
    if option.is_flag:
        raise FlagError(f"{first} and {spelled} set the same switch; give one of them")
    raise FlagError(f"{first} and {spelled} both give {_described(option)}; give it once")


def _described(option: _Option) -> str:
    """``the target path`` for ``--target-path``: the option's long name in words."""
    long_names = [opt for opt in (*option.opts, *option.secondary_opts) if opt.startswith("--")]
    words = (long_names[0] if long_names else option.opts[0]).lstrip("-").replace("-", " ").replace("_", " ")
    return f"the {words}"


def _closest(name: str, options: dict[str, _Option]) -> str | None:
    """The long option ``name`` most likely misspells (short ones are too short to tell)."""
    bare = {opt.lstrip("-").replace("-", "_"): opt for opt in options if len(opt.lstrip("-")) > 1}
    found = difflib.get_close_matches(name.lstrip("-").replace("-", "_"), bare, n=1, cutoff=0.6)
    return bare[found[0]] if found else None


def _check_value(param: Any, label: str, value: str, paths: frozenset[str]) -> None:
    """FlagError for an empty path (click would read it as the current directory), for a
    device, FIFO or socket (reading /dev/zero took all memory, a FIFO blocked forever), and for
    NaN given to a number with bounds (click's range check lets NaN through)."""
    if getattr(param.type, "name", "") == "float range" and _is_nan(value):
        raise FlagError(f"{label} {value}: not a number; give one {_bounds(param.type)}")
    if param.name not in paths:
        return
    if value == "":
        raise FlagError(f"{label}: empty path (give a file or directory; '.' for this one)")
    special = "" if os.path.isdir(value) else not_regular(Path(value))
    if special.startswith("not a regular file"):
        raise FlagError(f"{label} {value}: {special}")


def _check_argument(arguments: Sequence[Any], position: int, value: str, paths: frozenset[str]) -> None:
    """``_check_value`` for the ``position``-th positional word, against the argument it fills."""
    for argument in arguments:
        if argument.nargs < 0 or position < argument.nargs:
            _check_value(argument, argument.human_readable_name.upper(), value, paths)
            return
        position -= argument.nargs


def refusal(context: typer.Context, reasons: Mapping[str, str]) -> str | None:
    """One line refusing the options the command line gave among ``reasons`` (parameter name ->
    why this run has no use for it), options of one reason together; None when none was given.

    A default value is never refused, only what the user typed (or set in the environment): an
    option this run would ignore must not look like it did something.
    """
    by_reason: dict[str, list[str]] = {}
    for param in context.command.params:
        name = param.name
        source = context.get_parameter_source(name) if name is not None and name in reasons else None
        if name is not None and source is not None and source.name not in _UNSET:
            by_reason.setdefault(reasons[name], []).append(param.opts[0])
    return "; ".join(f"{', '.join(options)}: {why}" for why, options in by_reason.items()) or None


_UNSET = ("DEFAULT", "DEFAULT_MAP")


def _is_nan(value: str) -> bool:
    try:
        return math.isnan(float(value))
    except ValueError:
        return False  # not a number at all: click says so itself


def _bounds(kind: Any) -> str:
    """``>= 0.1``, ``<= 1``, or both, from a click number range."""
    low = f"{'>' if kind.min_open else '>='} {kind.min:g}" if kind.min is not None else ""
    high = f"{'<' if kind.max_open else '<='} {kind.max:g}" if kind.max is not None else ""
    return " and ".join(part for part in (low, high) if part)
