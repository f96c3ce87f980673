"""Command-line values converted without importing pydantic.

typer converts every option value (``--help`` included) through a pydantic adapter, and importing
pydantic cost each run ~0.15 s (~0.3 s on a loaded machine) before any work. ``plain_values``
gives a command's parameters a conversion of their own for the plain types (text, paths, whole
and real numbers, enums, flags); any other type, and every value typer would refuse, still goes
through typer, so its results and messages stay typer's.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Iterable
from enum import Enum
from pathlib import Path
from typing import Any

__all__ = ["plain_values"]

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


class _NotPlain(Exception):
    """A value (or an option) the plain conversion leaves to typer."""


def _plain(value: Any, annotation: Any, info: Any, param: Any, ctx: Any) -> Any:
    """``value`` of an option annotated ``annotation`` as typer would convert it, for the types and
    values compare has (given on the command line as text, or the default); ``_NotPlain`` for
    anything else, including every value typer refuses."""
    if types.NoneType in typing.get_args(annotation):  # X | None
        inner = [a for a in typing.get_args(annotation) if a is not types.NoneType]
        if len(inner) != 1:
            raise _NotPlain
        annotation = inner[0]
    if getattr(info, "parser", None) is not None or not isinstance(annotation, type):
        raise _NotPlain
    if annotation is Path and isinstance(value, (str, Path)):
        from typer._param_types import coerce_cli_path

        # typer's own path checks (exists, readable...), given a Path: it builds a pydantic
        # adapter only to turn a str into one.
        return coerce_cli_path(Path(value), info, path_type=Path, param=param, ctx=ctx)
    if annotation is bool and type(value) is bool:
        return value
    if issubclass(annotation, Enum) and info.case_sensitive:
        for member in annotation:
            if member is value or member.value == value:
                return member
        raise _NotPlain
    if annotation is str and isinstance(value, str):
        return value
    number: int | float
    if annotation is int and type(value) is int:
        number = value
    elif annotation is int and isinstance(value, str) and _INT.fullmatch(value):
        number = int(value)
    elif annotation is float and type(value) is float:
        number = value
    elif annotation is float and isinstance(value, str) and _FLOAT.fullmatch(value):
        number = float(value)
    else:
        raise _NotPlain
    low, high = info.min, info.max
    if info.clamp or (low is not None and number < low) or (high is not None and number > high):
        raise _NotPlain
    return number


class _PlainValues:
    """A typer runtime parameter that converts option values itself.

    typer converts every option value through a pydantic adapter, and importing pydantic cost
    each run ~0.15 s (~0.3 s on a loaded machine) before any work. Values this cannot convert
    exactly as typer would, and every value typer would refuse, go to typer's own conversion,
    so messages stay typer's.
    """

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if value is None and not (param.multiple or param.nargs == -1):
            return None
        descriptor = param.type_descriptor
        try:
            return _plain(value, descriptor.annotation, descriptor.parameter_info, param, ctx)
        except _NotPlain:
            from typer._coercion import build_runtime_param

            return build_runtime_param(descriptor).coerce(value, param=param, ctx=ctx)


def plain_values(params: Iterable[Any]) -> None:
    """Give each of ``params`` (typer parameters) the plain conversion, before parsing."""
    for param in params:
        # typer builds a parameter's runtime on first use (None until then); parameters whose
        # internals differ from this typer's are left alone.
        if getattr(param, "_runtime_param", False) is None and hasattr(param, "type_descriptor"):
            param._runtime_param = _PlainValues()
