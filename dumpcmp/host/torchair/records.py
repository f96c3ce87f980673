"""The records TorchAir inputs hand to the TorchAir metric family (metrics.md §2).

The inputs side (layout discovery, GE graph, GE↔FX matcher) turns one GE dump file into
``TensorPair`` records; the metric family turns each pair into one result row. Neither side
knows how the other works, so a pair carries loaders, not arrays: a file is read only when its
row is computed, and a worker process builds the pairs itself from the dump file it is given.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

TensorLoader = Callable[[], np.ndarray]


@dataclass(frozen=True, slots=True, order=True)
class TorchairShardKey:
    """One comparison unit of a TorchAir run: a (rank, token) pair; token ids are GE's (from 0)."""

    rank: int
    token: int

    @property
    def label(self) -> str:
        return f"rank{self.rank}_token{self.token}"


@dataclass(frozen=True, slots=True)
class TensorStats:
    """Summary of one tensor: computed from its data, read from a stats dump, or from reduced data.

    A value that the source does not hold is ``None`` (a reduced file kept without crc32, a stats
    dump without l2norm); the metric family reports it as ``N/A``.
    """

    dtype: str
    shape: tuple[int, ...]
    max: float | None = None
    min: float | None = None
    mean: float | None = None
    l2norm: float | None = None
    crc32: int | None = None  # zlib.crc32 of the tensor's bytes (the md5 mode's value)


@dataclass(frozen=True, slots=True)
class TensorPair:
    """One GE tensor and what it is compared with; becomes exactly one result row.

    ``api_name`` names the GE side (``{ge_op}.{input|output}.{k}``); ``npu_label`` and
    ``bench_label`` are the two entries of the Data Name column. When the pair cannot be compared
    (no FX counterpart, unreadable file, …) ``reason`` says why and the loaders may be ``None``.
    Statistics-only data (stats dumps, reduced data) comes as ``*_stats`` with no loader.
    """

    api_name: str
    io: str  # "input" | "output"
    index: int
    npu_label: str
    bench_label: str
    load_target: TensorLoader | None = None  # logical layout, bf16/fp8 widened to float32
    load_bench: TensorLoader | None = None
    target_stats: TensorStats | None = None
    bench_stats: TensorStats | None = None
    reason: str = ""
