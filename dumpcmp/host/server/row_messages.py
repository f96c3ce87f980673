"""A result row as the ``dumpcmp.v1.ResultRow`` message WatchRows sends, a statistics row as
``dumpcmp.v1.StatsRow``, and back.

Doubles carry every float as it is (NaN, ±inf, -0.0), so a client formats the same cells the
host would; what may be absent (a golden-only row's index, an unknown shape, a statistic the dump
does not carry) is said explicitly.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path

from dumpcmp.errors import TransferError
from dumpcmp.host.metrics.offline_data import MetricValues
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.server.stored_rows import METRIC_NUMBERS, metric_values
from dumpcmp.host.stats_compare import Statistics, StatsResult
from dumpcmp.host.verdict import SpecialValues
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb


def row_message(row: ResultRow) -> pb.ResultRow:
    return pb.ResultRow(
        index=row.index,
        op_sequence=row.op_sequence,
        op_type=row.op_type,
        npu_name=row.npu_name,
        npu_dtype=row.npu_dtype,
        npu_address=row.npu_address,
        ground_truth=row.ground_truth,
        golden_dtype=row.golden_dtype,
        golden_address=row.golden_address,
        tensor_index=row.tensor_index,
        shape=row.shape or (),
        shape_known=row.shape is not None,
        overflow=row.overflow,
        metrics=_metrics_message(row.metrics),
        dump_unreadable=not row.dump_readable,
        golden_key=row.golden_key,
    )


def result_row(message: pb.ResultRow) -> ResultRow:
    def present(name: str) -> int | None:
        return int(getattr(message, name)) if message.HasField(name) else None

    return ResultRow(
        index=present("index"),
        op_sequence=present("op_sequence"),
        op_type=message.op_type,
        npu_name=message.npu_name,
        npu_dtype=message.npu_dtype,
        npu_address=present("npu_address"),
        ground_truth=message.ground_truth,
        golden_dtype=message.golden_dtype,
        golden_address=present("golden_address"),
        tensor_index=message.tensor_index,
        shape=tuple(message.shape) if message.shape_known else None,
        overflow=message.overflow if message.HasField("overflow") else None,
        metrics=_metrics(message.metrics),
        dump_readable=not message.dump_unreadable,
        golden_key=message.golden_key,
    )


def _metrics_message(m: MetricValues) -> pb.MetricValues:
    return pb.MetricValues(
        numbers=m.numbers(),
        spread_not_computed=not m.spread_computed,
        reasons=m.reasons,
        finite=None if m.finite is None else _metrics_message(m.finite),
        special=None if m.special is None else pb.SpecialValues(**asdict(m.special)),
    )


def _metrics(message: pb.MetricValues) -> MetricValues:
    if len(message.numbers) != len(METRIC_NUMBERS):
        count = len(message.numbers)
        raise TransferError(f"a row from the host has {count} metric numbers, not {len(METRIC_NUMBERS)}")
    values = metric_values(
        list(message.numbers),
        tuple(message.reasons),
        spread_computed=not message.spread_not_computed,
        finite=_metrics(message.finite) if message.HasField("finite") else None,
    )
    if not message.HasField("special"):
        return values
    s = message.special
    mismatched = s.mismatched if s.HasField("mismatched") else None
    return replace(
        values, special=SpecialValues(s.target_nan, s.target_inf, s.golden_nan, s.golden_inf, mismatched)
    )


def stats_message(row: StatsResult) -> pb.StatsRow:
    return pb.StatsRow(
        index=row.index,
        op_type=row.op_type,
        npu_name=row.npu_name,
        ground_truth=row.ground_truth,
        tensor_index=row.tensor_index,
        dump_path="" if row.dump_file is None else str(row.dump_file),
        data_type=row.data_type,
        format=row.format,
        shape=row.shape or (),
        shape_known=row.shape is not None,
        count=row.count,
        target=_statistics_message(row.target),
        golden=_statistics_message(row.golden),
        reasons=row.reasons,
        dump_unreadable=not row.dump_readable,
        golden_key=row.golden_key,
        target_nan_inf=row.target_nan_inf,
        missing_nan_inf=row.missing_nan_inf,
        counts_compared=row.counts_compared,
    )


def stats_row(message: pb.StatsRow) -> StatsResult:
    return StatsResult(
        index=message.index if message.HasField("index") else None,
        op_type=message.op_type,
        npu_name=message.npu_name,
        ground_truth=message.ground_truth,
        tensor_index=message.tensor_index,
        dump_file=Path(message.dump_path) if message.dump_path else None,
        data_type=message.data_type,
        format=message.format,
        shape=tuple(message.shape) if message.shape_known else None,
        count=message.count if message.HasField("count") else None,
        target=_statistics(message.target) if message.HasField("target") else None,
        golden=_statistics(message.golden) if message.HasField("golden") else None,
        reasons=tuple(message.reasons),
        dump_readable=not message.dump_unreadable,
        golden_key=message.golden_key,
        target_nan_inf=message.target_nan_inf,
        missing_nan_inf=message.missing_nan_inf,
        counts_compared=message.counts_compared,
    )


_STATISTICS = ("max", "min", "mean", "l2norm")


def _statistics_message(stats: Statistics | None) -> pb.Statistics | None:
    return None if stats is None else pb.Statistics(**dict(zip(_STATISTICS, stats.values(), strict=True)))


def _statistics(message: pb.Statistics) -> Statistics:
    return Statistics(*(getattr(message, name) if message.HasField(name) else None for name in _STATISTICS))
