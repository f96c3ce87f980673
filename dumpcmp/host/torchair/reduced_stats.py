"""Reduced data as the TorchAir inputs side reads it: ``TensorStats`` per tensor of each original file.

``dumpcmp reduce`` deleted the original GE dump and FX npy files; what is left is one
``dumpcmp_reduced.jsonl`` per directory (``dumpcmp.proto.reduced``). The inputs side looks a
file up by the path it had (``reduced_tree``) or by its name within a directory
(``reduced_in``), and asks for the tensor it pairs: ``stats.get("output", 0)``. A statistic the
reduce run did not keep is ``None`` in ``TensorStats`` (the metric family shows ``N/A``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dumpcmp.proto.reduced import DamagedLine, ReducedFile, ReducedTensor, read_reduced, walk_reduced

from .records import TensorStats

__all__ = ["ReducedStats", "damaged_stats", "reduced_in", "reduced_tree", "tensor_stats"]


@dataclass(frozen=True, slots=True)
class ReducedStats:
    """The summaries of one original file: ``kind`` ``ge`` (dump file) or ``fx`` (npy, one tensor).

    ``tensors`` are ``(io, index, stats)`` in file order; an FX file's one tensor has the io and
    index its name gives (``….INPUT.1.{ts}.npy`` -> ``("input", 1)``).
    """

    name: str
    kind: str
    size: int
    tensors: tuple[tuple[str, int, TensorStats], ...]
    # Why the summary cannot be read (its line of the reduced file is damaged); "" when it can.
    # The file still stands where it was, so that its tensors are counted as unreadable.
    damaged: str = ""

    def get(self, io: str, index: int) -> TensorStats | None:
        """Tensor ``index`` of ``io`` (``input`` | ``output``); None when the file held no such tensor."""
        return next((stats for i, k, stats in self.tensors if i == io and k == index), None)

    @property
    def tensor(self) -> TensorStats:
        """The first tensor: the only one of an FX npy file."""
        return self.tensors[0][2]


def tensor_stats(tensor: ReducedTensor) -> TensorStats:
    stats = tensor.stats

    def number(key: str) -> float | None:
        value = stats.get(key)
        return None if value is None else float(value)

    crc = stats.get("crc32")
    return TensorStats(
        dtype=tensor.dtype,
        shape=tensor.shape,
        max=number("max"),
        min=number("min"),
        mean=number("mean"),
        l2norm=number("l2norm"),
        crc32=None if crc is None else int(crc),
    )


def damaged_stats(line: DamagedLine, name: str) -> ReducedStats:
    """The stand-in for ``name``, whose summary is the damaged ``line``."""
    return ReducedStats(name, "", 0, (), damaged=f"unreadable summary: {line}")


def _stats(entry: ReducedFile) -> ReducedStats:
    tensors = tuple((t.io, t.index, tensor_stats(t)) for t in entry.tensors)
    return ReducedStats(entry.name, entry.kind, entry.size, tensors)


def reduced_in(directory: Path) -> tuple[dict[str, ReducedStats], tuple[DamagedLine, ...]]:
    """Original file name -> its summaries, for the files reduced in ``directory``; and the
    lines of its reduced file skipped as damaged."""
    found = read_reduced(directory)
    return {name: _stats(entry) for name, entry in found.entries.items()}, found.damaged


def reduced_tree(root: Path) -> dict[Path, ReducedStats]:
    """Original file path -> its summaries, for every file reduced under ``root``."""
    return {path: _stats(entry) for path, entry in walk_reduced(root)}
