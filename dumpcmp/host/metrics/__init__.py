"""Metric families: chunked kernels that turn a (target, golden) tensor pair into numbers.

A family reads a pair in chunks (``chunk``), merges partial sums (``combine``) and applies the
spec's edge-case rules once at the end (``finish``), the shape of dask's reductions. Kernels
never mutate their inputs, format numbers or return strings; sinks format.

``FAMILIES`` maps the ``compare -m`` mode name to its family.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from dumpcmp.host.metrics.offline_data import (
    DEFAULT_CHUNK,
    OFFLINE_DATA,
    OFFLINE_DATA_COLUMNS,
    MetricValues,
    OfflineDataFamily,
    PairMeta,
    Partial,
    compare_arrays,
)

__all__ = [
    "DEFAULT_CHUNK",
    "FAMILIES",
    "OFFLINE_DATA",
    "OFFLINE_DATA_COLUMNS",
    "Family",
    "MetricValues",
    "OfflineDataFamily",
    "PairMeta",
    "Partial",
    "compare_arrays",
]

_P = TypeVar("_P")
_M = TypeVar("_M", contravariant=True)
_R = TypeVar("_R", covariant=True)


class Family(Protocol[_P, _M, _R]):
    """What every metric family provides.

    ``passes`` is how many times a pair is read: pass ``k > 0`` gets the combined partial of the
    passes before it as ``prior`` (offline_data needs min/max and means before KL and std).
    """

    name: str
    columns: tuple[str, ...]
    passes: int

    def chunk(
        self, x: npt.NDArray[np.generic], y: npt.NDArray[np.generic], prior: _P | None = None
    ) -> _P: ...

    def combine(self, a: _P, b: _P) -> _P: ...

    def finish(self, p: _P, meta: _M) -> _R: ...


FAMILIES: dict[str, Family[Partial, PairMeta, MetricValues]] = {OFFLINE_DATA.name: OFFLINE_DATA}
