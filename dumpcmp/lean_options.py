"""Option values converted without pydantic where typer's conversion is plain.

typer converts every option's value through a pydantic TypeAdapter, built on first use: importing
pydantic and building the adapters cost every ``dumpcmp compare`` ~0.1-0.15 s before any work,
more than comparing a quarter-gigabyte tree takes. ``lean_options`` gives each option of a
command a converter that returns what typer's adapter would for the plain cases, computed the
way it computes them, and hands every other value to typer's own converter, pydantic and all:

* a value already of the option's type (a default): itself, bounds checked;
* a path spelled as ``Path`` would print it: typer's own path checks, then ``Path``;
* an enum member named on the command line: typer's own choice matching;
* plain decimal text for an int or float option within its bounds: ``int``/``float`` of it,
  which parse such text exactly as pydantic does.

Anything else (other types, lists, custom parsers, a value out of bounds, a choice or a path
typer rejects) goes to typer, so its errors read exactly as before. Only typer versions that
convert through ``_runtime_param`` are touched; with any other, commands are left as they are.
"""

from __future__ import annotations

import re
from enum import Enum
from pathlib import Path
from typing import Any

_INTEGER = re.compile(r"0|[1-9][0-9]*")  # no sign, no leading zeros, no "_": nothing to argue about
_DECIMAL = re.compile(r"(0|[1-9][0-9]*)(\.[0-9]+)?")


class _NotPlain(Exception):
    """This value goes to typer's own converter."""


class _LeanConversion:
    """Stands in for typer's runtime parameter of one option (``coerce`` is all typer calls)."""

    def __init__(self, descriptor: Any) -> None:
        self.descriptor = descriptor
        self._typer: Any = None

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if value is None:
            return None  # as typer's: single-valued options only get here
        try:
            return self._plain(value, param, ctx)
        except Exception:  # whatever typer would say about it, typer says
            return self._typer_conversion().coerce(value, param=param, ctx=ctx)

    def _typer_conversion(self) -> Any:
        if self._typer is None:
            from typer._coercion import build_runtime_param

            self._typer = build_runtime_param(self.descriptor)
        return self._typer

    def _plain(self, value: Any, param: Any, ctx: Any) -> Any:
        from typer._param_types import coerce_cli_choice, coerce_cli_path

        annotation, info = self.descriptor.annotation, self.descriptor.parameter_info
        if not isinstance(annotation, type) or info.parser is not None:
            raise _NotPlain
        if issubclass(annotation, Enum):
            return coerce_cli_choice(
                value, choices=list(annotation), case_sensitive=info.case_sensitive, ctx=ctx
            )
        if annotation in (bool, str) and type(value) is annotation:
            return value
        if annotation in (int, float):
            return _bounded(_number(int if annotation is int else float, value), info)
        if issubclass(annotation, Path) and info.path_type is None and not info.allow_dash:
            if isinstance(value, str) and str(annotation(value)) == value:
                # Spelled as the Path prints, so typer's checks see the same name either way.
                checked = coerce_cli_path(value, info, path_type=None, param=param, ctx=ctx)
                return annotation(checked)  # type: ignore[arg-type]  # a str given, a str back
            if isinstance(value, annotation):
                return coerce_cli_path(value, info, path_type=annotation, param=param, ctx=ctx)
        raise _NotPlain


def _number(kind: type[int] | type[float], value: Any) -> int | float:
    if isinstance(value, (int, float)) and type(value) is kind:  # not a bool for an int
        return value
    pattern = _INTEGER if kind is int else _DECIMAL
    if isinstance(value, str) and pattern.fullmatch(value):
        return kind(value)
    raise _NotPlain


def _bounded(number: int | float, info: Any) -> int | float:
    if info.clamp:
        raise _NotPlain
    if info.min is not None and not number >= info.min:
        raise _NotPlain
    if info.max is not None and not number <= info.max:
        raise _NotPlain
    return number


def lean_options(command: Any) -> Any:
    """``command`` (a click command or group typer built) with its single-valued options, its
    ``--help`` included, converted without pydantic where that is plain; returns it."""
    for param in getattr(command, "params", ()):
        lean_option(param)
    built = command.get_help_option  # typer makes the --help option when a command line is parsed

    def get_help_option(ctx: Any) -> Any:
        return lean_option(built(ctx))

    command.get_help_option = get_help_option
    return command


def lean_option(param: Any) -> Any:
    """``param`` converted as ``lean_options`` says, when it is typer's and single-valued."""
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None or getattr(param, "_runtime_param", False) is not None:
        return param  # not typer's parameter of this kind, or a converter already built
    if param.multiple or param.nargs != 1 or descriptor.file_annotation is not None:
        return param
    param._runtime_param = _LeanConversion(descriptor)
    return param
