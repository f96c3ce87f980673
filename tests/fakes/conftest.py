"""Shared simulator fixtures: compiled zoo models, their golden runs, and a cosine helper.

Compiling and running the zoo models takes a fraction of a second, but many tests read the
same results, so they are made once per session.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from dumpcmp.fakes.compiled import CompiledModel
from dumpcmp.fakes.compiler import CompileOptions, compile_model
from dumpcmp.fakes.executor import Execution
from dumpcmp.fakes.golden import GoldenRun, run_golden
from dumpcmp.fakes.inputs import random_inputs
from dumpcmp.fakes.zoo import build

ZOO_MODELS = ("small_cnn", "transformer_block")


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity in float64; NaN when either side has a NaN/inf or is all zero."""
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        return float("nan")
    denominator = np.linalg.norm(x) * np.linalg.norm(y)
    return float(x @ y / denominator) if denominator else float("nan")


def first_bad_op(execution: Execution, golden: GoldenRun, threshold: float = 0.999) -> str | None:
    """The first op in execution order with an output whose cosine to its golden is below threshold."""
    for run in execution.runs:
        for value, out in zip(run.outputs, run.op.outputs, strict=True):
            if not out.origin_name:
                continue
            score = cosine(value, golden.of(out.origin_name, out.origin_index))
            if not score >= threshold:  # NaN counts as bad
                return run.op.name
    return None


@dataclass(frozen=True)
class ZooCase:
    name: str
    model: object
    compiled: CompiledModel
    inputs: list[np.ndarray]
    golden: GoldenRun


@pytest.fixture(scope="session")
def zoo_case() -> Callable[[str, bool], ZooCase]:
    cache: dict[tuple[str, bool], ZooCase] = {}

    def make(name: str, fusion: bool = True) -> ZooCase:
        key = (name, fusion)
        if key not in cache:
            model = build(name)
            compiled = compile_model(model, name=name, options=CompileOptions(fusion=fusion))
            inputs = random_inputs(compiled.inputs, seed=3)
            cache[key] = ZooCase(name, model, compiled, inputs, run_golden(model, inputs))
        return cache[key]

    return make


@pytest.fixture(scope="session")
def cos() -> Callable[[np.ndarray, np.ndarray], float]:
    return cosine


@pytest.fixture(scope="session")
def first_bad() -> Callable[..., str | None]:
    return first_bad_op
