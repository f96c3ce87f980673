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

from .onnx_model import ValueSpec

__all__ = ["load_input", "parse_dtype", "parse_named", "parse_shape", "random_inputs", "resolve_inputs"]


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
