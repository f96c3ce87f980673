"""User format converters: ``DIR/format_convert/convert_{FROM}_to_{TO}.py`` (the ``-custom`` option).

Each file defines ``convert(shape_from, shape_to, array)``, as the CANN comparator expects:
the shapes are lists of ints and ``array`` is the flat device data; it returns a numpy array
holding the elements of ``shape_to``. A converter overrides the built-in one for its pair.
Files are loaded from their path; neither ``sys.path`` nor ``sys.modules`` is touched.
"""

from __future__ import annotations

import importlib.util
import inspect
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

from dumpcmp.errors import ConverterPluginError
from dumpcmp.proto.dtypes import Format, format_by_name

__all__ = ["CONVERT_DIR", "CustomConverter", "CustomConverters"]

CONVERT_DIR = "format_convert"
_PREFIX = "convert_"
_SEPARATOR = re.compile("_to_", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class CustomConverter:
    """One loaded converter file; calling it checks what the user function returns."""

    path: Path
    src: Format
    dst: Format
    func: Callable[..., object]

    def __call__(self, array: np.ndarray, shape_to: Sequence[int] | None) -> np.ndarray:
        """``array`` shaped in the source format → the result shaped ``shape_to`` (when given)."""
        target = None if shape_to is None else [int(d) for d in shape_to]
        try:
            result = self.func([int(d) for d in array.shape], target, array.reshape(-1))
        except Exception as exc:  # the user's code: any failure is theirs to see, with the file
            raise ConverterPluginError(self.path, f"convert() raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(result, np.ndarray):
            raise ConverterPluginError(
                self.path, f"convert() returned {type(result).__name__}, not a numpy array"
            )
        if target is None:
            return result
        if result.size != math.prod(target):
            raise ConverterPluginError(
                self.path,
                f"convert() returned {result.size} elements, shape {target} needs {math.prod(target)}",
            )
        return result.reshape(target)


class CustomConverters:
    """The user's converters, keyed by (source format, destination format)."""

    def __init__(self, converters: Iterable[CustomConverter] = ()) -> None:
        self._by_pair: dict[tuple[Format, Format], CustomConverter] = {}
        for converter in converters:
            pair = (converter.src, converter.dst)
            if pair in self._by_pair:
                first = self._by_pair[pair].path
                raise ConverterPluginError(
                    converter.path, f"a second converter for the pair (first: {first})"
                )
            self._by_pair[pair] = converter

    @classmethod
    def load(cls, directory: str | Path) -> CustomConverters:
        """Load every ``convert_*.py`` under ``directory/format_convert``."""
        root = Path(directory)
        folder = root / CONVERT_DIR
        if not root.is_dir():
            raise ConverterPluginError(root, "no such directory")
        if not folder.is_dir():
            raise ConverterPluginError(
                folder, f"no such directory; converters go in {CONVERT_DIR}/convert_{{FROM}}_to_{{TO}}.py"
            )
        files = sorted(p for p in folder.glob("*.py") if p.name != "__init__.py")
        return cls(_load_file(path) for path in files)

    def lookup(self, src: Format, dst: Format) -> CustomConverter | None:
        return self._by_pair.get((src, dst))

    @property
    def pairs(self) -> list[tuple[Format, Format]]:
        return sorted(self._by_pair)

    def __len__(self) -> int:
        return len(self._by_pair)


def _parse_name(path: Path) -> tuple[Format, Format]:
    stem = path.stem
    if not stem.startswith(_PREFIX):
        raise ConverterPluginError(path, "the name must be convert_{FROM}_to_{TO}.py")
    body = stem[len(_PREFIX) :]
    # Format names contain underscores (FRACTAL_NZ), so try every "_to_" as the separator.
    pairs = []
    for match in _SEPARATOR.finditer(body):
        try:
            pairs.append((format_by_name(body[: match.start()]), format_by_name(body[match.end() :])))
        except KeyError:
            continue
    if len(pairs) != 1:
        raise ConverterPluginError(path, "the name must be convert_{FROM}_to_{TO}.py with two format names")
    return pairs[0]


def _import(path: Path, src: Format, dst: Format) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_dumpcmp_convert_{src.name}_to_{dst.name}", path)
    if spec is None or spec.loader is None:
        raise ConverterPluginError(path, "cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        raise ConverterPluginError(path, f"import failed: {type(exc).__name__}: {exc}") from exc
    return module


def _load_file(path: Path) -> CustomConverter:
    src, dst = _parse_name(path)
    func = getattr(_import(path, src, dst), "convert", None)
    if not callable(func):
        raise ConverterPluginError(path, "defines no function convert(shape_from, shape_to, array)")
    try:
        signature = inspect.signature(func)
    except ValueError:  # some builtins have no signature; the call itself will tell
        signature = None
    if signature is not None:
        try:
            signature.bind(None, None, None)
        except TypeError as exc:
            raise ConverterPluginError(
                path, f"convert must take (shape_from, shape_to, array): {exc}"
            ) from exc
    return CustomConverter(path, src, dst, func)
