"""A statistics row (``StatsResult``: a ``dump_data: stats`` tensor against its golden) as SQLite
columns, and back: the session store keeps them as data beside the tensor rows (``stored_rows``).

Each statistic of each side is a REAL column (``target_max`` … ``golden_l2norm``), so a query
reads numbers (``SELECT … WHERE abs(target_l2norm - golden_l2norm) > …``). A statistic the dump
does not carry is NULL, as is a side not known at all (``has_target``/``has_golden`` 0). SQLite
turns NaN into NULL too and 0.0 back from -0.0: ``stat_nan`` and ``stat_neg_zero`` hold a bit per
number (bit i for the i-th of ``STAT_NUMBERS``), so a sink writes the same cells from the row read
back as from the row stored.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path

from dumpcmp.host.server.stored_rows import SHARD_COLUMNS, ShardRow, table_sql
from dumpcmp.host.stats_compare import Stat, Statistics, StatsResult
from dumpcmp.proto.walker import GroupKey

_SIDES = ("target", "golden")
_STATS = ("max", "min", "mean", "l2norm")
STAT_NUMBERS = tuple(f"{side}_{name}" for side in _SIDES for name in _STATS)
STATS_COLUMNS: tuple[tuple[str, str], ...] = (
    *((name, "TEXT NOT NULL") for name in SHARD_COLUMNS),
    ("row_index", "INTEGER"),  # the Index column; NULL for golden-only rows
    ("op_type", "TEXT NOT NULL"),
    ("npu_name", "TEXT NOT NULL"),
    ("ground_truth", "TEXT NOT NULL"),
    ("tensor_index", "TEXT NOT NULL"),
    ("dump_path", "TEXT"),  # the stats file as the host holds it; NULL for golden-only rows
    ("data_type", "TEXT NOT NULL"),
    ("format", "TEXT NOT NULL"),
    ("shape", "TEXT"),  # a JSON list of dimensions, NULL when unknown
    ("count", "INTEGER"),
    ("has_target", "INTEGER NOT NULL"),
    ("has_golden", "INTEGER NOT NULL"),
    *((name, "REAL") for name in STAT_NUMBERS),  # NULL: not carried, or NaN (``stat_nan``)
    ("stat_nan", "INTEGER NOT NULL"),
    ("stat_neg_zero", "INTEGER NOT NULL"),
    ("reasons", "TEXT NOT NULL"),  # a JSON list of prose
    ("dump_readable", "INTEGER NOT NULL"),
    ("golden_key", "TEXT NOT NULL"),
    ("target_nan_inf", "INTEGER NOT NULL"),
    ("missing_nan_inf", "INTEGER NOT NULL"),
    ("counts_compared", "INTEGER NOT NULL"),  # 1: the dump's NaN/inf counts were compared
)
STATS_COLUMN_NAMES = tuple(name for name, _ in STATS_COLUMNS)
STATS_ROWS_TABLE, INSERT_STATS_ROW = table_sql("stats_rows", STATS_COLUMNS)
STATS_INDEXES = (
    "CREATE INDEX stats_rows_by_session ON stats_rows (session, seq)",
    "CREATE INDEX stats_rows_by_file ON stats_rows (session, dump_file)",
)
SELECT_STATS_ROW = f"seq, dump_file, {', '.join(STATS_COLUMN_NAMES)}"


def stats_values_of(row: ShardRow[StatsResult]) -> tuple[object, ...]:
    """The values of ``STATS_COLUMN_NAMES`` for ``row``."""
    r, k = row.row, row.shard
    numbers = [*_side(r.target), *_side(r.golden)]
    return (
        k.device, k.model, k.model_id, k.step, k.session,
        r.index, r.op_type, r.npu_name, r.ground_truth, r.tensor_index,
        None if r.dump_file is None else str(r.dump_file),
        r.data_type, r.format, None if r.shape is None else json.dumps(list(r.shape)), r.count,
        int(r.target is not None), int(r.golden is not None),
        *(None if x is None or math.isnan(x) else x for x in numbers),
        _bits(x is not None and math.isnan(x) for x in numbers),
        _bits(x is not None and x == 0.0 and math.copysign(1.0, x) < 0 for x in numbers),
        json.dumps(list(r.reasons)), int(r.dump_readable), r.golden_key, r.target_nan_inf,
        r.missing_nan_inf, int(r.counts_compared),
    )  # fmt: skip


def stats_row_of(values: Sequence[object]) -> ShardRow[StatsResult]:
    """The row of ``values``: ``dump_file`` then ``STATS_COLUMN_NAMES``, as ``SELECT_STATS_ROW`` less seq."""
    dump_file, *v = values
    shard = GroupKey(*(str(x) for x in v[:5]))
    (index, op_type, npu_name, ground_truth, tensor_index, dump_path, data_type, fmt, shape, count,
     has_target, has_golden) = v[5:17]  # fmt: skip
    count_numbers = len(STAT_NUMBERS)
    stored = v[17 : 17 + count_numbers]
    nan, neg_zero = (int(x) for x in v[17 + count_numbers : 19 + count_numbers])  # type: ignore[call-overload]
    reasons, readable, golden_key, nan_inf, missing, counts_compared = v[19 + count_numbers :]
    numbers: list[Stat] = []
    for i, x in enumerate(stored):
        if nan >> i & 1:
            numbers.append(math.nan)
        elif x is None:
            numbers.append(None)
        else:
            numbers.append(-0.0 if neg_zero >> i & 1 else float(x))  # type: ignore[arg-type]
    row = StatsResult(
        index=None if index is None else int(index),  # type: ignore[call-overload]
        op_type=str(op_type),
        npu_name=str(npu_name),
        ground_truth=str(ground_truth),
        tensor_index=str(tensor_index),
        dump_file=None if dump_path is None else Path(str(dump_path)),
        data_type=str(data_type),
        format=str(fmt),
        shape=None if shape is None else tuple(json.loads(str(shape))),
        count=None if count is None else int(count),  # type: ignore[call-overload]
        target=Statistics(*numbers[:4]) if has_target else None,
        golden=Statistics(*numbers[4:]) if has_golden else None,
        reasons=tuple(json.loads(str(reasons))),
        dump_readable=bool(readable),
        golden_key=str(golden_key),
        target_nan_inf=int(nan_inf),  # type: ignore[call-overload]
        missing_nan_inf=int(missing),  # type: ignore[call-overload]
        counts_compared=bool(counts_compared),
    )
    return ShardRow(str(dump_file), shard, row)


def _side(stats: Statistics | None) -> tuple[Stat, ...]:
    return stats.values() if stats is not None else (None,) * len(_STATS)


def _bits(flags: Iterable[bool]) -> int:
    return sum(1 << i for i, flag in enumerate(flags) if flag)
