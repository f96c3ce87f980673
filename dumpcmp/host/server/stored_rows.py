"""A result row as SQLite columns, and back: the session store keeps rows as data, not CSV text.

Every field of ``ResultRow`` is a column of its own type: metrics REAL, indices and addresses
INTEGER, names TEXT, and the row's shard (device, model, model id, step and the dump's time
directory: ``GroupKey``) as five TEXT columns, so that a query across sessions reads numbers
(``SELECT … WHERE cosine_similarity < 0.99``) and a session's rows can be split by shard.

Two float values SQLite does not keep are kept deliberately:

* NaN is stored as NULL (SQLite itself turns a NaN REAL into NULL). A metric is never missing (a
  pair without numbers has NaN in every metric), so NULL in a metric column always means NaN.
  Infinities are REAL values SQLite keeps as they are.
* -0.0 comes back as 0.0; a sink writes ``-0.000000`` for it, so the signs of zero are kept in a
  bit mask per metric group (``…neg_zero``), bit i for the i-th number of ``METRIC_NUMBERS``.

Rows of the "not compared" kind (no metric is a number, neither of all elements nor of the
finite ones) are marked in ``compared``, the reasons (prose) are a JSON list, the shape a JSON
list or NULL (no shape known).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import astuple, dataclass, fields, replace
from typing import Generic, TypeVar

from dumpcmp.host.metrics.offline_data import MetricValues
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.stats_compare import StatsResult
from dumpcmp.host.verdict import SpecialValues
from dumpcmp.proto.walker import GroupKey

# The floats of a MetricValues in column order (StandardDeviation is four of them).
METRIC_NUMBERS = tuple(
    f.name for f in fields(MetricValues) if f.name not in ("reasons", "spread_computed", "finite", "special")
)
# ``MetricValues.special`` (NaN/inf counts of the pair's data); NULL counts: none were counted.
SPECIAL_COLUMNS = tuple(f"special_{f.name}" for f in fields(SpecialValues))
SHARD_COLUMNS = ("shard_device", "shard_model", "shard_model_id", "shard_step", "shard_time")
_ROW_FIELDS = (
    ("row_index", "INTEGER"),  # the Index column; NULL for golden-only rows
    ("op_sequence", "INTEGER"),
    ("op_type", "TEXT NOT NULL"),
    ("npu_name", "TEXT NOT NULL"),
    ("npu_dtype", "TEXT NOT NULL"),
    ("npu_address", "INTEGER"),  # uint64 addresses as their two's-complement int64
    ("ground_truth", "TEXT NOT NULL"),
    ("golden_dtype", "TEXT NOT NULL"),
    ("golden_address", "INTEGER"),
    ("tensor_index", "TEXT NOT NULL"),
    ("shape", "TEXT"),  # a JSON list of dimensions, NULL when unknown
    ("overflow", "INTEGER"),  # 1, 0, NULL (not detected)
    ("dump_readable", "INTEGER NOT NULL"),
    ("golden_key", "TEXT NOT NULL"),
    # 0: the "not compared" kind: no metric is a number, nor one of the finite elements
    ("compared", "INTEGER NOT NULL"),
)


def _metric_group(prefix: str) -> list[tuple[str, str]]:
    return [
        *((prefix + name, "REAL") for name in METRIC_NUMBERS),  # NULL: NaN
        (prefix + "neg_zero", "INTEGER NOT NULL"),
        (prefix + "spread_computed", "INTEGER NOT NULL"),
        (prefix + "reasons", "TEXT NOT NULL"),  # a JSON list of prose
    ]


# The finite-elements metrics (``MetricValues.finite``) are a second group, present when has_finite.
VALUE_COLUMNS: tuple[tuple[str, str], ...] = (
    *((name, "TEXT NOT NULL") for name in SHARD_COLUMNS),
    *_ROW_FIELDS,
    *_metric_group(""),
    ("has_finite", "INTEGER NOT NULL"),
    *_metric_group("finite_"),
    *((name, "INTEGER") for name in SPECIAL_COLUMNS),
)
COLUMN_NAMES = tuple(name for name, _ in VALUE_COLUMNS)


def table_sql(table: str, columns: Sequence[tuple[str, str]]) -> tuple[str, str]:
    """CREATE TABLE and INSERT of a table of rows: store order, session, dump file, then ``columns``."""
    names = [name for name, _ in columns]
    create = (
        f"CREATE TABLE {table} (\n"
        "    seq INTEGER PRIMARY KEY AUTOINCREMENT,\n"
        "    session TEXT NOT NULL REFERENCES sessions(name),\n"
        "    dump_file TEXT NOT NULL,  -- relative to the dump root, '' for golden-only rows\n"
        + ",\n".join(f"    {name} {kind}" for name, kind in columns)
        + "\n)"
    )
    places = ", ".join("?" * len(names))
    insert = f"INSERT INTO {table} (session, dump_file, {', '.join(names)}) VALUES (?, ?, {places})"
    return create, insert


ROWS_TABLE, INSERT_ROW = table_sql("rows", VALUE_COLUMNS)
SELECT_ROW = f"seq, dump_file, {', '.join(COLUMN_NAMES)}"

_UINT64 = 1 << 64
_INT64_MAX = (1 << 63) - 1


R = TypeVar("R", ResultRow, StatsResult)


@dataclass(frozen=True, slots=True)
class ShardRow(Generic[R]):
    """A row (a tensor's or a statistics row) with its shard and the dump file it came from."""

    dump_file: str  # relative to the dump root; "" for a golden-only row
    shard: GroupKey
    row: R


def values_of(row: ShardRow[ResultRow]) -> tuple[object, ...]:
    """The values of ``COLUMN_NAMES`` for ``row``."""
    r, k = row.row, row.shard
    finite = r.metrics.finite
    return (
        k.device, k.model, k.model_id, k.step, k.session,
        r.index, r.op_sequence, r.op_type, r.npu_name, r.npu_dtype, _int64(r.npu_address),
        r.ground_truth, r.golden_dtype, _int64(r.golden_address), r.tensor_index,
        None if r.shape is None else json.dumps(list(r.shape)),
        None if r.overflow is None else int(r.overflow),
        int(r.dump_readable), r.golden_key, int(r.metrics.has_numbers or finite is not None),
        *_metric_values(r.metrics),
        int(finite is not None),
        *_metric_values(finite if finite is not None else MetricValues.unavailable("")),
        *(astuple(special) if (special := r.metrics.special) is not None else (None,) * len(SPECIAL_COLUMNS)),
    )  # fmt: skip


def row_of(values: Sequence[object]) -> ShardRow[ResultRow]:
    """The ShardRow of ``values``: ``dump_file`` then ``COLUMN_NAMES``, as ``SELECT_ROW`` less seq."""
    dump_file, *v = values
    shard = GroupKey(*(str(x) for x in v[:5]))
    (index, op_sequence, op_type, npu_name, npu_dtype, npu_address, ground_truth, golden_dtype,
     golden_address, tensor_index, shape, overflow, dump_readable, golden_key, _) = v[5:20]  # fmt: skip
    group = len(METRIC_NUMBERS) + 3
    metrics = _metrics_of(v[20 : 20 + group])
    if v[20 + group]:
        metrics = replace(metrics, finite=_metrics_of(v[21 + group : 21 + 2 * group]))
    special = v[21 + 2 * group :]
    if special[0] is not None:
        metrics = replace(metrics, special=SpecialValues(*(_opt_int(x) for x in special)))  # type: ignore[arg-type]
    row = ResultRow(
        index=_opt_int(index),
        op_sequence=_opt_int(op_sequence),
        op_type=str(op_type),
        npu_name=str(npu_name),
        npu_dtype=str(npu_dtype),
        npu_address=_uint64(npu_address),
        ground_truth=str(ground_truth),
        golden_dtype=str(golden_dtype),
        golden_address=_uint64(golden_address),
        tensor_index=str(tensor_index),
        shape=None if shape is None else tuple(json.loads(str(shape))),
        overflow=None if overflow is None else bool(overflow),
        metrics=metrics,
        dump_readable=bool(dump_readable),
        golden_key=str(golden_key),
    )
    return ShardRow(str(dump_file), shard, row)


def _metric_values(m: MetricValues) -> list[object]:
    numbers = m.numbers()
    neg_zero = sum(1 << i for i, x in enumerate(numbers) if x == 0.0 and math.copysign(1.0, x) < 0)
    return [
        *(None if math.isnan(x) else x for x in numbers),
        neg_zero,
        int(m.spread_computed),
        json.dumps(list(m.reasons)),
    ]


def _metrics_of(values: Sequence[object]) -> MetricValues:
    count = len(METRIC_NUMBERS)
    neg_zero = int(values[count])  # type: ignore[call-overload]
    numbers = [
        -0.0 if neg_zero >> i & 1 else (math.nan if x is None else float(x))  # type: ignore[arg-type]
        for i, x in enumerate(values[:count])
    ]
    reasons = tuple(json.loads(str(values[count + 2])))
    return metric_values(numbers, reasons, spread_computed=bool(values[count + 1]))


def metric_values(
    n: Sequence[float], reasons: tuple[str, ...], *, spread_computed: bool, finite: MetricValues | None = None
) -> MetricValues:
    """The MetricValues of the numbers ``n`` in ``METRIC_NUMBERS`` order."""
    return MetricValues(
        cosine_similarity=n[0], max_absolute_error=n[1], accumulated_relative_error=n[2],
        relative_euclidean_distance=n[3], kullback_leibler_divergence=n[4],
        mean_x=n[5], std_x=n[6], mean_y=n[7], std_y=n[8],
        mean_absolute_error=n[9], root_mean_square_error=n[10], max_relative_error=n[11],
        mean_relative_error=n[12],
        reasons=reasons, spread_computed=spread_computed, finite=finite,
    )  # fmt: skip


def _int64(value: int | None) -> int | None:
    return value - _UINT64 if value is not None and value > _INT64_MAX else value


def _uint64(value: object) -> int | None:
    if value is None:
        return None
    number = int(value)  # type: ignore[call-overload]
    return number + _UINT64 if number < 0 else number


def _opt_int(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]
