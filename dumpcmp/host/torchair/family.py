"""The TorchAir result family: GE dump files against FX dumps (or GE with fusion off).

The plan's matcher (the inputs side's, ``PairMatcher``) turns one GE dump file into
``TensorPair`` records; this family turns each pair into one ``TorchairRow`` in the summary mode
asked (real data, statistics, md5), and writes each (rank, token) shard's
``compare_result_{ts}.csv`` (``rank{R}_token{T}_compare_result_{ts}.csv`` when the run has several
shards). The session layer and the worker pools call it through ``dumpcmp.host.core``'s
``ResultFamily``, as they call offline_data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

import numpy as np

from dumpcmp.errors import DumpcmpError, InternalError
from dumpcmp.host.core import ComparePlan, FileRows, FileText
from dumpcmp.host.golden import GoldenSource
from dumpcmp.host.metrics.torchair import RealValues, crc32_of, real_metrics, stats_of
from dumpcmp.host.torchair.records import TensorLoader, TensorPair, TensorStats, TorchairShardKey
from dumpcmp.host.torchair.rows import Md5Values, StatsValues, TorchairRow, TorchairThresholds, Values
from dumpcmp.host.verdict import NOT_COMPARED, NotCompared, md5_verdict, real_verdict, stats_verdict
from dumpcmp.proto.walker import DumpEntry

if TYPE_CHECKING:
    from dumpcmp.host.session import ResultSettings

RESULT_KIND = "compare_result"


class SummaryMode(str, Enum):
    real = "real"
    statistics = "statistics"
    md5 = "md5"


@runtime_checkable
class PairMatcher(Protocol):
    """The inputs side's matcher: one GE dump file → its tensor pairs (picklable, frozen)."""

    def pairs(self, entry: DumpEntry) -> list[TensorPair]: ...


class _Unreadable(Exception):
    """A side's loader failed; ``target`` says whether it was the GE (NPU) side."""

    def __init__(self, target: bool, reason: str) -> None:
        super().__init__(reason)
        self.target = target


def _load(loader: TensorLoader | None, target: bool) -> np.ndarray | None:
    if loader is None:
        return None
    try:
        return loader()
    except DumpcmpError as exc:
        side = "NPU" if target else "bench"
        raise _Unreadable(target, f"{side} tensor unreadable: {exc}") from None


def _stats(given: TensorStats | None, loader: TensorLoader | None, target: bool) -> TensorStats | None:
    if given is not None:
        return given
    array = _load(loader, target)
    return stats_of(array) if array is not None else None


def _crc(given: TensorStats | None, loader: TensorLoader | None, target: bool) -> tuple[int | None, str]:
    """A side's CRC-32 and the dtype its bytes are in ("" when unknown)."""
    if given is not None and given.crc32 is not None:
        return given.crc32, given.dtype
    array = _load(loader, target)
    return (crc32_of(array), array.dtype.name) if array is not None else (None, "")


def _dtype_clash(npu: str, bench: str) -> str:
    """Why two CRC-32 values cannot be compared: the bytes are of different dtypes ("" if not)."""
    try:
        differ = bool(npu and bench and np.dtype(npu) != np.dtype(bench))
    except TypeError:
        return ""  # a dtype spelled another way (a stats dump's DT_ name): nothing to judge by
    if not differ:
        return ""
    return f"CRC-32 compares bytes, and the two sides hold different dtypes ({npu} vs {bench})"


_Measured = tuple[Values, str, tuple[str, ...]]  # values, result, reasons


def _real(pair: TensorPair, limits: TorchairThresholds) -> _Measured:
    x, y = _load(pair.load_target, True), _load(pair.load_bench, False)
    if x is None or y is None:
        missing = "NPU" if x is None else "bench"
        held = NotCompared.STATISTICS_ONLY if _has_stats(pair, x is None) else NotCompared.NO_DATA
        why = f"real-data mode needs both tensors; the {missing} side has {held.value}"
        return RealValues.unavailable(why, held), NOT_COMPARED, (why,)
    values = real_metrics(x, y, limits.bounds)
    result, broke = real_verdict(values, limits)
    return values, result, (*values.reasons, *broke)


def _has_stats(pair: TensorPair, target: bool) -> bool:
    return (pair.target_stats if target else pair.bench_stats) is not None


def _statistics(pair: TensorPair, limits: TorchairThresholds) -> _Measured:
    values = StatsValues(
        _stats(pair.target_stats, pair.load_target, True), _stats(pair.bench_stats, pair.load_bench, False)
    )
    result, broke = stats_verdict(values, limits)
    if result == NOT_COMPARED:
        return values, result, (_missing("statistics", values.target is None, values.golden is None),)
    return values, result, broke


def _md5(pair: TensorPair, limits: TorchairThresholds) -> _Measured:
    (npu, npu_dtype), (bench, bench_dtype) = (
        _crc(pair.target_stats, pair.load_target, True),
        _crc(pair.bench_stats, pair.load_bench, False),
    )
    values = Md5Values(npu, bench)
    clash = _dtype_clash(npu_dtype, bench_dtype)
    if clash and values.has_numbers:  # e.g. a Cast compared with its own input: never equal bytes
        return values, NOT_COMPARED, (clash,)
    result, broke = md5_verdict(values)
    if result == NOT_COMPARED:
        return values, result, (_missing("CRC-32", values.npu is None, values.bench is None),)
    return values, result, broke


def _missing(what: str, npu: bool, bench: bool) -> str:
    """Why a statistics or md5 row has no verdict."""
    if npu or bench:
        sides = " and ".join(side for side, lacks in (("NPU", npu), ("bench", bench)) if lacks)
        return f"no {what} for the {sides} side"
    return f"no {what} value is a number on both sides (NaN in the data, or not kept)"


_MEASURES: dict[SummaryMode, Callable[[TensorPair, TorchairThresholds], _Measured]] = {
    SummaryMode.real: _real,
    SummaryMode.statistics: _statistics,
    SummaryMode.md5: _md5,
}


def _nothing(mode: SummaryMode) -> Values:
    if mode is SummaryMode.real:
        return RealValues(None, None, None, None, None, None)
    if mode is SummaryMode.statistics:
        return StatsValues(None, None)
    return Md5Values(None, None)


@dataclass(frozen=True, slots=True)
class Torchair:
    """``compare --mode torchair``: rows of metrics.md §2 in one summary mode."""

    mode: SummaryMode = SummaryMode.real
    thresholds: TorchairThresholds = field(default_factory=TorchairThresholds)
    name: ClassVar[str] = "torchair"

    def row(self, pair: TensorPair) -> TorchairRow:
        """One pair's row; whatever stops it from being compared becomes its Err_message."""
        # A GE tensor with neither data nor statistics comes from a GE file that could not be read.
        readable = pair.load_target is not None or pair.target_stats is not None
        base = TorchairRow(None, pair.api_name, pair.npu_label, pair.bench_label, _nothing(self.mode),
                           NOT_COMPARED, dump_readable=readable)  # fmt: skip
        given = (pair.reason,) if pair.reason else ()
        try:
            values, result, reasons = _MEASURES[self.mode](pair, self.thresholds)
        except _Unreadable as exc:
            return _with_reason(base, (*given, str(exc)), readable=not exc.target)
        except DumpcmpError as exc:  # an unsupported dtype, say
            return _with_reason(base, (*given, str(exc)), readable=readable)
        # Every row without a verdict, and every FAIL, has a reason by now (the measures give one);
        # the inputs side's reason for a missing counterpart says it better than "no data".
        if given and result == NOT_COMPARED:
            reasons = ()
        return TorchairRow(None, pair.api_name, pair.npu_label, pair.bench_label, values, result,
                           (*given, *reasons), dump_readable=readable)  # fmt: skip

    def compare_file(self, entry: DumpEntry, plan: ComparePlan) -> FileRows[TorchairRow]:
        matcher = plan.matcher
        if not isinstance(matcher, PairMatcher):
            raise InternalError(f"a torchair plan with a {type(matcher).__name__} matcher")
        try:
            pairs = matcher.pairs(entry)
        except DumpcmpError as exc:
            return self.failed_file(entry, plan, str(exc))
        return FileRows(entry, rows=tuple(self.row(pair) for pair in pairs))

    def compare_files(self, entries: Sequence[DumpEntry], plan: ComparePlan) -> list[FileRows[TorchairRow]]:
        return [self.compare_file(entry, plan) for entry in entries]

    def failed_file(self, entry: DumpEntry, plan: ComparePlan, reason: str) -> FileRows[TorchairRow]:
        """One row for a GE file with no readable tensors (corrupt, crashed every worker)."""
        row = TorchairRow(None, entry.name.op_name, str(entry.path), "", _nothing(self.mode), NOT_COMPARED,
                          (reason,), dump_readable=False)  # fmt: skip
        return FileRows(entry, rows=(row,))

    def shard_order(self, key: TorchairShardKey) -> tuple[object, ...]:
        return (key.rank, key.token)

    def result_name(
        self, key: TorchairShardKey, keys: Sequence[TorchairShardKey], stamp: str, kind: str = RESULT_KIND
    ) -> str:
        """``compare_result_{ts}.csv``; with several (rank, token) shards, ``rank{R}_token{T}_`` in front."""
        kind = RESULT_KIND if kind == "result" else kind
        return f"{kind}_{stamp}.csv" if len(keys) == 1 else f"{key.label}_{kind}_{stamp}.csv"

    def closing_rows(self, golden: GoldenSource | None, used: set[str]) -> list[TorchairRow]:
        return []  # every FX tensor is reached through a GE op: there are no golden-only rows

    def row_text(self, rows: Sequence[TorchairRow], plan: ComparePlan) -> tuple[str, ...] | None:
        return None  # the TorchAir table is written from its rows

    def row_verdicts(self, rows: Sequence[TorchairRow], plan: ComparePlan) -> None:
        return None  # its summary reads each row's PASS/FAIL (``torchair.summary``)

    def write_table(
        self, path: Path, rows: Sequence[TorchairRow], settings: ResultSettings, text: Sequence[FileText] = ()
    ) -> tuple[Path, Path | None]:
        from dumpcmp.host.sinks.torchair_table import write_torchair_table

        return write_torchair_table(path, rows, self.mode.value, xlsx=settings.xlsx)


def _with_reason(row: TorchairRow, reasons: tuple[str, ...], *, readable: bool = True) -> TorchairRow:
    return TorchairRow(row.index, row.api_name, row.npu_label, row.bench_label, row.values, NOT_COMPARED,
                       reasons, dump_readable=readable)  # fmt: skip
