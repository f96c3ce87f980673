"""The offline-data family's shards and names: shard order, result file names, golden-only rows.

Kept apart from the session layer, which asks the family for them (``dumpcmp.host.core``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dumpcmp.host.golden import GoldenSource
from dumpcmp.host.metrics.offline_data import MetricValues
from dumpcmp.host.rows import NO_GOLDEN, ResultRow
from dumpcmp.proto.walker import GroupKey


def shard_order(key: GroupKey) -> tuple[tuple[int, int, str], ...]:
    """Shards by session, device, model and step, numbers as numbers (step 2 before step 10)."""
    return directories_order((key.session, key.device, key.model, key.model_id, key.step))


def directories_order(names: Iterable[str]) -> tuple[tuple[int, int, str], ...]:
    """Directory names in order: numbers as numbers, before other names."""
    return tuple((0, int(f), "") if f.isdigit() else (1, 0, f) for f in names)


def result_name(key: GroupKey, keys: Sequence[GroupKey], stamp: str, kind: str = "result") -> str:
    """``result_{ts}.csv`` for a single shard, else ``{device}_{model}_{step}_result_{ts}.csv``;
    when two sessions (dump time directories: two runs into one dump path) hold the same
    (device, model, step), every shard has its session directory in front, so that the names
    of one run read alike. Statistics results are named the same with ``stats_result``."""
    if len(keys) == 1:
        return f"{kind}_{stamp}.csv"
    clash = len({k.label for k in keys}) < len(keys)
    label = f"{key.session}_{key.label}" if clash and key.session else key.label
    return f"{label}_{kind}_{stamp}.csv"


def golden_only_rows(golden: GoldenSource, used: set[str]) -> list[ResultRow]:
    """Golden tensors nothing was compared with, listed after every target row (metrics.md §1.3)."""
    return [
        ResultRow(
            index=None,
            op_sequence=None,
            op_type="",
            npu_name=NO_GOLDEN,
            npu_dtype="NaN",
            npu_address=None,
            ground_truth=key,
            golden_dtype="NaN",
            golden_address=None,
            tensor_index=NO_GOLDEN,
            shape=None,
            overflow=None,
            metrics=MetricValues.unavailable("golden tensor with no NPU counterpart"),
        )
        for key in golden.unused(used)
    ]
