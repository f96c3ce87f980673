"""Inputs in the model's dtypes: a cast that rounds is said, one that changes values is refused."""

from __future__ import annotations

import numpy as np
import pytest

from dumpcmp.errors import ModelError
from dumpcmp.fakes.inputs import fitted_inputs
from dumpcmp.fakes.onnx_model import ValueSpec


def _spec(dtype: type) -> list[ValueSpec]:
    return [ValueSpec("x", (3,), np.dtype(dtype))]


def test_the_declared_dtype_passes_untouched() -> None:
    given = np.ones(3, np.float32)
    (array,), notes = fitted_inputs(_spec(np.float32), [given])
    assert array is given and notes == []


@pytest.mark.parametrize(
    ("given", "dtype", "note"),
    [
        (np.array([0.5, np.nan, -2.0]), np.float32, "float64 given, the model takes float32: cast exactly"),
        (np.array([1, 2, 3], np.int64), np.float16, "int64 given, the model takes float16: cast exactly"),
        (np.array([1.0, 2.0, 3.0]), np.int32, "float64 given, the model takes int32: cast exactly"),
        (np.array([1 / 3, 1.0, 2.0]), np.float16, "float64 given, the model takes float16: cast, 1 of 3"),
    ],
)
def test_a_cast_that_at_most_rounds_is_said(given: np.ndarray, dtype: type, note: str) -> None:
    (array,), (line,) = fitted_inputs(_spec(dtype), [given])
    assert array.dtype == np.dtype(dtype)
    assert line.startswith(f"input 'x': {note}")


@pytest.mark.parametrize(
    ("given", "dtype", "lost"),
    [
        (np.array([0.5, 1.0, 2.0]), np.int32, "fractions, NaN or numbers outside int32's range"),
        (np.array([np.nan, 1.0, 2.0]), np.int64, "fractions, NaN"),
        (np.array([300, 1, 2]), np.uint8, "outside uint8's range"),
        (np.array([1e39, 1.0, 2.0]), np.float32, "would become inf"),
        (np.array([1 + 1j, 1, 2]), np.float32, "the imaginary parts"),
    ],
)
def test_a_cast_that_changes_values_is_refused(given: np.ndarray, dtype: type, lost: str) -> None:
    with pytest.raises(ModelError, match="casting would change") as caught:
        fitted_inputs(_spec(dtype), [given])
    assert lost in str(caught.value)
