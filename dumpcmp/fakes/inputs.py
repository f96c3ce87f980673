"""Model inputs for the simulator and the golden runner: from .npy / .bin files, or seeded random.

A ``.bin`` file is raw element bytes (what msit and ais_bench feed a model), so it needs the
shape and dtype from the caller; a ``.npy`` carries both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np

from dumpcmp.errors import ConfigError, ModelError
from dumpcmp.proto.npy import load_npy
from dumpcmp.proto.sniff import what_is

from .onnx_model import ValueSpec

__all__ = [
    "fitted_inputs",
    "load_input",
    "parse_dtype",
    "parse_named",
    "parse_shape",
    "random_inputs",
    "resolve_inputs",
]


def parse_shape(text: str) -> tuple[str | None, tuple[int, ...]]:
    """``name:1,3,224,224`` or ``1,3,224,224`` → (name or None, dims)."""
    name, _, dims = text.rpartition(":")
    try:
        shape = tuple(int(d) for d in dims.replace("x", ",").split(",") if d.strip())
    except ValueError:
        raise ConfigError(f"input shape {text!r}: expected [NAME:]D0,D1,... with integer dims") from None
    if not shape or any(d <= 0 for d in shape):
        raise ConfigError(f"input shape {text!r}: dims must be positive integers")
    return (name or None), shape


def parse_dtype(text: str) -> tuple[str | None, np.dtype]:
    """``name:float16`` or ``float32`` → (name or None, dtype)."""
    name, _, dtype = text.rpartition(":")
    try:
        return (name or None), np.dtype(dtype)
    except TypeError:
        raise ConfigError(f"input dtype {text!r}: {dtype!r} is not a numpy dtype name") from None


T = TypeVar("T")


def parse_named(
    values: Sequence[tuple[str | None, T]], specs: Sequence[ValueSpec], what: str
) -> dict[str, T]:
    """Per-input settings: a named value applies to that input, an unnamed one to all."""
    names = [s.name for s in specs]
    result: dict[str, T] = {}
    for name, value in values:
        if name is None:
            result.update({n: value for n in names if n not in result})
        elif name not in names:
            raise ConfigError(f"{what} for {name!r}: the model's inputs are {', '.join(names)}")
        else:
            result[name] = value
    return result


def load_input(
    path: str | Path,
    spec: ValueSpec | None = None,
    *,
    shape: Sequence[int] | None = None,
    dtype: np.dtype | None = None,
) -> np.ndarray:
    """Read one input file; ``shape``/``dtype`` (else the model's) describe a raw .bin."""
    source = Path(path)
    if not source.is_file():
        raise ConfigError(f"input file {source} does not exist")
    if source.suffix.lower() == ".npy":
        data = load_npy(source, mmap=False)  # FormatError saying what a non-numeric or junk file is
        if shape is not None and tuple(data.shape) != tuple(shape):
            data = _reshaped(data, shape, source)
        return data.astype(dtype, copy=False) if dtype is not None else data
    kind = what_is(source) if source.suffix.lower() != ".bin" else None
    if kind is not None:  # x.json read as raw floats said only that its bytes did not fill the shape
        raise ConfigError(f"input file {source} is {kind}: give an .npy file or raw tensor bytes (.bin)")
    want_dtype = (
        np.dtype(dtype) if dtype is not None else (spec.dtype if spec is not None else np.dtype(np.float32))
    )
    want_shape = tuple(shape) if shape is not None else (spec.shape if spec is not None else None)
    raw = np.fromfile(source, dtype=want_dtype)
    if want_shape is None:
        return raw
    return _reshaped(raw, want_shape, source)


def _reshaped(data: np.ndarray, shape: Sequence[int], source: Path) -> np.ndarray:
    count = int(np.prod(shape, dtype=np.int64))
    if data.size != count:
        raise ConfigError(
            f"{source}: {data.size} elements do not fill shape {list(shape)} ({count} elements)"
        )
    return data.reshape(tuple(shape))


def random_inputs(specs: Sequence[ValueSpec], seed: int = 0) -> list[np.ndarray]:
    """Seeded inputs with the model's shapes: N(0,1) floats, small non-negative integers."""
    rng = np.random.default_rng(seed)
    arrays = []
    for spec in specs:
        if np.issubdtype(spec.dtype, np.floating):
            arrays.append(rng.standard_normal(spec.shape).astype(spec.dtype))
        elif spec.dtype == np.bool_:
            arrays.append(rng.integers(0, 2, spec.shape).astype(np.bool_))
        else:
            arrays.append(rng.integers(0, 10, spec.shape).astype(spec.dtype))
    return arrays


def resolve_inputs(
    specs: Sequence[ValueSpec],
    given: Sequence[np.ndarray | str | Path] = (),
    *,
    seed: int = 0,
    shapes: Mapping[str, Sequence[int]] | None = None,
    dtypes: Mapping[str, np.dtype] | None = None,
) -> list[np.ndarray]:
    """One array per graph input: the given arrays/files in input order, or random ones."""
    if not given:
        return random_inputs(specs, seed)
    if len(given) != len(specs):
        names = ", ".join(s.name for s in specs)
        raise ModelError(f"the model has {len(specs)} input(s) ({names}); {len(given)} given")
    arrays = []
    for spec, item in zip(specs, given, strict=True):
        if isinstance(item, np.ndarray):
            arrays.append(item)
            continue
        shape = (shapes or {}).get(spec.name)
        dtype = (dtypes or {}).get(spec.name)
        arrays.append(load_input(item, spec, shape=shape, dtype=dtype))
    return arrays


def fitted_inputs(
    specs: Sequence[ValueSpec], arrays: Sequence[np.ndarray]
) -> tuple[list[np.ndarray], list[str]]:
    """The arrays in the model's input dtypes, and a line for each one that had to be cast.

    A cast that at most rounds (float64 to float32, int64 to float32) is said, not refused: a
    float64 .npy is what numpy writes by default. One that changes values beyond rounding (a
    fraction or an out-of-range number into an integer type, a finite number into inf, an
    imaginary part dropped) is a ModelError: the golden run would not be of the data given.
    """
    fitted, notes = [], []
    for spec, array in zip(specs, arrays, strict=True):
        source = np.asarray(array)
        if source.dtype == spec.dtype:
            fitted.append(source)
            continue
        where = f"input {spec.name!r}: {source.dtype} given, the model takes {spec.dtype}"
        cast, lost = _cast(source, np.dtype(spec.dtype))
        if lost:
            raise ModelError(f"{where}, and casting would change {lost}; convert the file yourself")
        changed = np.count_nonzero((cast != source) & ~(np.isnan(cast) if cast.dtype.kind in "fc" else False))
        fitted.append(cast)
        notes.append(
            f"{where}: cast" + (f", {changed} of {source.size} values rounded" if changed else " exactly")
        )
    return fitted, notes


def _cast(source: np.ndarray, target: np.dtype) -> tuple[np.ndarray, str]:
    """``source`` as ``target``, and what the cast changed beyond rounding ("" if nothing)."""
    if source.dtype.kind == "c" and target.kind != "c":
        if np.any(source.imag != 0):
            return source, "the imaginary parts (dropped)"
        source = source.real
    with np.errstate(all="ignore"):
        cast = source.astype(target)
        if target.kind in "biu" and not np.array_equal(cast.astype(source.dtype), source):
            return cast, f"values (fractions, NaN or numbers outside {target}'s range)"
        if target.kind in "fc" and np.any(np.isfinite(source) & ~np.isfinite(cast)):
            return cast, f"values (numbers beyond {target}'s range would become inf)"
    return cast, ""
