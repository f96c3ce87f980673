"""One comparison pipeline for both sources: dump files in, result rows out.

The offline ``compare`` command feeds it a dump tree from disk; the streaming host feeds it the
files it received. Each target tensor becomes a ``TensorJob`` (header read, golden located),
and jobs are evaluated in a thread pool: numpy releases the GIL in the metric kernels, so
tensor pairs run in parallel while rows come back in execution order.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dumpcmp.errors import DumpcmpError, DumpFormatError
from dumpcmp.host.golden import GoldenSource, GoldenTensor, NpyGoldenDir
from dumpcmp.host.matcher import GoldenRef, Matcher, NoGolden, TensorIO, identity_ref
from dumpcmp.host.metrics.offline_data import MetricValues, compare_arrays
from dumpcmp.host.rows import NO_GOLDEN, ResultRow
from dumpcmp.proto.codec import DumpTensor, TensorKind, read_dump
from dumpcmp.proto.custom_converters import CustomConverters
from dumpcmp.proto.dtypes import DataType, Format, data_type_of, format_by_name
from dumpcmp.proto.layouts import convert
from dumpcmp.proto.walker import DumpEntry

FP16_MAX = 65504.0
_OVERFLOW_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class CompareOptions:
    overflow_detection: bool = False
    jobs: int = 0  # 0: one worker per core
    custom: CustomConverters | None = None
    only_first_output: bool = False  # file vs single npy file: one row


@dataclass(frozen=True, slots=True)
class TensorSlot:
    """Where a target tensor lives and what its header says, without holding its payload.

    Jobs for a whole tree are planned up front; holding memory maps there would keep every
    file's touched pages resident until the end, so evaluation opens the file again.
    """

    path: Path
    kind: TensorKind
    index: int
    dtype_name: str
    address: int
    shape: tuple[int, ...]

    @classmethod
    def of(cls, path: Path, tensor: DumpTensor) -> TensorSlot:
        return cls(path, tensor.kind, tensor.index, tensor.dtype_name, tensor.address,
                   tensor.original_shape or tensor.shape)  # fmt: skip

    def load(self) -> DumpTensor:
        return read_dump(self.path).tensors(self.kind)[self.index]


@dataclass(frozen=True, slots=True)
class TensorJob:
    """Everything needed to produce one row, decided before any payload byte is read."""

    index: int
    op_sequence: int | None
    op_type: str
    npu_name: str
    ground_truth: str
    tensor_index: str
    slot: TensorSlot | None
    golden: GoldenTensor | None
    origin_format: str = ""
    reason: str = ""


def plan_jobs(
    entries: Sequence[DumpEntry], golden: GoldenSource, matcher: Matcher | None, options: CompareOptions
) -> list[TensorJob]:
    """One job per target tensor, in execution order; unreadable files still get a row."""
    jobs: list[TensorJob] = []
    for index, entry in enumerate(e for e in entries if not e.is_stats):
        op_name = entry.name.op_name
        op_type = entry.name.op_type
        op_entry = matcher.entry(op_name) if matcher is not None else None
        sequence = op_entry.op_sequence if op_entry is not None else None
        truth = _ground_truth(matcher, op_name)
        try:
            dump = read_dump(entry.path)
        except DumpFormatError as exc:
            jobs.append(
                TensorJob(index, sequence, op_type, op_name, truth or NO_GOLDEN, f"{op_name}:*", None, None,
                          reason=f"corrupt dump file: {exc}")
            )  # fmt: skip
            continue
        npu_name = dump.op_name or op_name
        if matcher is None:
            truth = npu_name  # NPU vs NPU by name: the golden op is the op of the same name
        kinds = (TensorKind.OUTPUT,) if options.only_first_output else (TensorKind.INPUT, TensorKind.OUTPUT)
        for kind in kinds:
            tensors = dump.tensors(kind)[:1] if options.only_first_output else dump.tensors(kind)
            for tensor in tensors:
                ref = _reference(matcher, op_name, kind, tensor.index)
                found, reason = _locate(golden, ref)
                jobs.append(
                    TensorJob(
                        index=index,
                        op_sequence=sequence,
                        op_type=op_type,
                        npu_name=npu_name,
                        ground_truth=_truth_column(truth, ref) if found is not None else NO_GOLDEN,
                        tensor_index=f"{npu_name}:{kind.value}:{tensor.index}",
                        slot=TensorSlot.of(entry.path, tensor),
                        golden=found,
                        origin_format=ref.origin_format if isinstance(ref, GoldenRef) else "",
                        reason=reason,
                    )
                )
    return jobs


def _ground_truth(matcher: Matcher | None, op_name: str) -> str:
    if matcher is None:
        return op_name
    try:
        return matcher.ground_truth(op_name)
    except DumpcmpError:
        return ""


def _truth_column(truth: str, ref: GoldenRef | NoGolden) -> str:
    """The op's original names; for ops GE inserted (no originals), the golden op compared with."""
    if truth:
        return truth
    return ref.op_name if isinstance(ref, GoldenRef) else NO_GOLDEN


def _reference(matcher: Matcher | None, op_name: str, kind: TensorKind, index: int) -> GoldenRef | NoGolden:
    io: TensorIO = "input" if kind is TensorKind.INPUT else "output"
    if matcher is None:
        return identity_ref(op_name, io, index)
    return matcher.refs_for(op_name, io, index)


def _locate(golden: GoldenSource, ref: GoldenRef | NoGolden) -> tuple[GoldenTensor | None, str]:
    if isinstance(ref, NoGolden):
        return None, ref.reason
    if isinstance(golden, NpyGoldenDir):
        if ref.io != "output":
            return None, "golden npy files hold op outputs only; compare NPU dumps for inputs"
        found = golden.output(ref.op_name, ref.index)
        where = f"golden file {ref.key}.{{timestamp}}.npy"
    else:
        found = golden.tensor(ref.op_name, TensorKind(ref.io), ref.index)
        where = f"golden dump of {ref.op_name} ({ref.io} {ref.index})"
    if found is None:
        return None, f"{where} not found in {golden.root}"
    return found, ""


def evaluate(job: TensorJob, options: CompareOptions) -> ResultRow:
    """Read both sides of one job and compute its row; any failure becomes the row's reason."""
    slot = job.slot
    if slot is None or job.golden is None:
        unavailable = MetricValues.unavailable(job.reason or "no golden tensor")
        return _row(
            job, None, options, golden_dtype="NaN", shape=slot.shape if slot else None, metrics=unavailable
        )
    tensor = None
    try:
        tensor = slot.load()
        x = tensor.logical(options.custom)
        y = job.golden.load()
        x = _slice_to(_to_origin_format(x, job.origin_format, y.shape, options.custom), y.shape)
        metrics = compare_arrays(x, y)
        return _row(job, tensor, options, golden_dtype=_dtype_label(y.dtype), shape=y.shape, metrics=metrics)
    except DumpcmpError as exc:
        unreadable = MetricValues.unavailable(str(exc))
        return _row(job, tensor, options, golden_dtype="NaN", shape=slot.shape, metrics=unreadable)


def _row(
    job: TensorJob,
    tensor: DumpTensor | None,
    options: CompareOptions,
    *,
    golden_dtype: str,
    shape: tuple[int, ...] | None,
    metrics: MetricValues,
) -> ResultRow:
    slot = job.slot
    return ResultRow(
        index=job.index,
        op_sequence=job.op_sequence,
        op_type=job.op_type,
        npu_name=job.npu_name,
        npu_dtype=slot.dtype_name if slot is not None else "NaN",
        npu_address=slot.address if slot is not None else None,
        ground_truth=job.ground_truth,
        golden_dtype=golden_dtype,
        golden_address=None,
        tensor_index=job.tensor_index,
        shape=tuple(shape) if shape is not None else None,
        overflow=_overflow(tensor, slot, options),
        metrics=metrics,
    )


def _overflow(tensor: DumpTensor | None, slot: TensorSlot | None, options: CompareOptions) -> bool | None:
    if not options.overflow_detection or slot is None:
        return None
    try:
        return _fp16_overflow(tensor if tensor is not None else slot.load())
    except DumpcmpError:
        return None


def _to_origin_format(
    x: np.ndarray, origin_format: str, golden_shape: tuple[int, ...], custom: CustomConverters | None
) -> np.ndarray:
    """NPU tensors come back NCHW; a framework that wrote NHWC/HWCN golden data needs that layout."""
    if x.ndim != 4 or not origin_format or x.shape == golden_shape:
        return x
    try:
        target = format_by_name(origin_format)
    except KeyError:
        return x
    if target in (Format.NCHW, Format.ND):
        return x
    return convert(x, Format.NCHW, target, golden_shape, custom=custom)


def _slice_to(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Drop device padding the layout conversion kept, when the golden tensor is smaller."""
    if x.shape == shape or x.ndim != len(shape) or any(a < b for a, b in zip(x.shape, shape, strict=True)):
        return x
    return x[tuple(slice(0, d) for d in shape)]


def _dtype_label(dtype: np.dtype) -> str:
    try:
        return data_type_of(dtype).name
    except DumpcmpError:
        return str(dtype)


def _fp16_overflow(tensor: DumpTensor) -> bool | None:
    """A float16 tensor overflows when it holds ±inf, NaN or |v| ≥ 65504 (metrics.md §1.1)."""
    if tensor.data_type != DataType.DT_FLOAT16:
        return False
    try:
        flat = tensor.array().reshape(-1)
    except DumpcmpError:
        return None
    for start in range(0, flat.size, _OVERFLOW_CHUNK):
        chunk = flat[start : start + _OVERFLOW_CHUNK]
        with np.errstate(invalid="ignore"):
            if not np.all(np.abs(chunk) < FP16_MAX):  # NaN compares false, so it counts too
                return True
    return False


def run_jobs(
    jobs: Sequence[TensorJob], options: CompareOptions, progress: Callable[[int], None] | None = None
) -> Iterator[ResultRow]:
    """Evaluate jobs in parallel; rows come back in job order."""
    workers = options.jobs or os.cpu_count() or 1
    if workers == 1 or len(jobs) <= 1:
        for job in jobs:
            yield evaluate(job, options)
            if progress:
                progress(1)
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dumpcmp-compare") as pool:
        for row in pool.map(lambda j: evaluate(j, options), jobs):
            yield row
            if progress:
                progress(1)


def golden_only_rows(golden: GoldenSource) -> list[ResultRow]:
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
        for key in golden.unused()
    ]
