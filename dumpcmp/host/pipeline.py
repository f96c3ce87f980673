"""Tensor pairs of one dump file: find each tensor's golden, align both sides, compute the row.

``dumpcmp.host.core`` runs this per file; the session layer numbers and orders the rows. Each
target tensor becomes a ``TensorJob`` (header read, golden located) and then a row; nothing here
keeps state between files.
"""

from __future__ import annotations

import functools
import gc
import math
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from dumpcmp.errors import DumpcmpError, DumpFormatError, FormatError, MatchError, UnreadableTensorError
from dumpcmp.host.golden import GoldenSource, GoldenTensor, NpyGoldenDir
from dumpcmp.host.matcher import GoldenRef, Matcher, NoGolden, TensorIO, identity_ref
from dumpcmp.host.metrics.offline_data import MetricValues, compare_arrays, compare_rows
from dumpcmp.host.rows import NO_GOLDEN, ResultRow, dtype_label
from dumpcmp.host.verdict import Thresholds
from dumpcmp.proto.codec import DumpTensor, TensorKind, read_dump
from dumpcmp.proto.custom_converters import CustomConverters
from dumpcmp.proto.dtypes import DataType, Format, format_by_name, stored_as_is
from dumpcmp.proto.layouts import convert
from dumpcmp.proto.records import set_through_slots
from dumpcmp.proto.walker import DumpEntry

FP16_MAX = 65504.0
_OVERFLOW_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class CompareOptions:
    overflow_detection: bool = False
    jobs: int = 0  # 0: one worker per core
    custom: CustomConverters | None = None
    file_pair: bool = False  # -tp and -gp each name one file
    golden_is_one_tensor: bool = False  # -gp names one npy file: only output 0 has a counterpart
    # What the rows are judged by where they are made (``ResultFamily.row_verdicts``): the
    # summary's, so that it counts the workers' verdicts instead of reading every row back.
    thresholds: Thresholds = field(default_factory=Thresholds)

    @property
    def exact_shapes(self) -> bool:
        """File against file: the user named both tensors, so their shapes must be equal."""
        return self.file_pair


@set_through_slots
@dataclass(frozen=True, slots=True)
class TensorJob:
    """Everything needed to produce one row; ``tensor`` views its dump file's memory map.

    Jobs are made lazily, one file at a time, so only the files being compared are mapped.
    """

    op_sequence: int | None
    op_type: str
    npu_name: str
    ground_truth: str
    tensor_index: str
    tensor: DumpTensor | None
    golden: GoldenTensor | None
    origin_format: str = ""
    reason: str = ""


def matcher_for_dump(matcher: Matcher | None, entries: Iterable[DumpEntry]) -> Matcher | None:
    """``matcher`` for one shard: which ops of an L1 fusion group were dumped first and last.

    Call it with the whole shard before cutting it into batches; a batch alone cannot tell.
    """
    if matcher is None or not matcher.has_l1_fusion:
        return matcher  # nothing depends on the dump times: the shard's files are not read through
    times: dict[str, int] = {}
    for entry in entries:
        name = entry.name.op_name
        times[name] = min(entry.name.timestamp, times.get(name, entry.name.timestamp))
    return matcher.with_dump_times(times)


def file_jobs(
    entry: DumpEntry, golden: GoldenSource, matcher: Matcher | None, options: CompareOptions
) -> Iterator[TensorJob]:
    """One job per target tensor of one dump file; an unreadable file still gets one."""
    op_name = entry.name.op_name
    op_type = entry.name.op_type
    op_entry = matcher.entry(op_name) if matcher is not None else None
    sequence = op_entry.op_sequence if op_entry is not None else None
    # ``op_names``' originals, from the entry looked up once (three lookups were ~2 µs a file)
    truth = op_name if matcher is None else op_entry.ground_truth if op_entry is not None else ""
    try:
        dump = read_dump(entry.path)
    except DumpFormatError as exc:
        yield unreadable_file_job(entry, matcher, f"corrupt dump file: {exc}")
        return
    npu_name = dump.op_name or op_name
    if matcher is None:
        truth = npu_name  # NPU vs NPU by name: the golden op is the op of the same name
    one = options.golden_is_one_tensor
    for kind in (TensorKind.OUTPUT,) if one else (TensorKind.INPUT, TensorKind.OUTPUT):
        tensors = dump.tensors(kind)[:1] if one else dump.tensors(kind)
        label = _KIND_LABELS[kind]
        for tensor in tensors:
            ref = _reference(matcher, op_name, kind, tensor.index)
            found, reason = _locate(golden, ref)
            # By name (no rule file), an op whose namesake is missing has no counterpart.
            matched = matcher is not None or found is not None
            yield TensorJob(
                op_sequence=sequence,
                op_type=op_type,
                npu_name=npu_name,
                ground_truth=truth_column(truth, ref) if matched else NO_GOLDEN,
                tensor_index=f"{npu_name}:{label}:{tensor.index}",
                tensor=tensor,
                golden=found,
                origin_format=ref.origin_format if isinstance(ref, GoldenRef) else "",
                reason=reason,
            )


# An enum member's ``value`` is a descriptor call (~0.4 µs), asked for every tensor's row
_KIND_LABELS = {kind: kind.value for kind in TensorKind}


def unreadable_file_job(entry: DumpEntry, matcher: Matcher | None, reason: str) -> TensorJob:
    """The one job of a dump file with no readable tensors: its row carries ``reason``."""
    op_name = entry.name.op_name
    op_entry = matcher.entry(op_name) if matcher is not None else None
    sequence = op_entry.op_sequence if op_entry is not None else None
    _, truth = op_names(matcher, op_name)
    return TensorJob(sequence, entry.name.op_type, op_name, truth or NO_GOLDEN, f"{op_name}:*", None, None,
                     reason=reason)  # fmt: skip


def op_names(matcher: Matcher | None, op_name: str) -> tuple[str, str]:
    """An op's name as the fusion rule gives it, and its originals for the GroundTruth column ("":
    none), from ``op_name`` as its file names it: a statistics file, unlike a dump file, holds no
    op name of its own, so its rows would show the sanitised name (``_block2_Add``)."""
    if matcher is None:
        return op_name, op_name
    try:
        entry = matcher.entry(op_name)
    except DumpcmpError:
        return op_name, ""
    return (entry.name, entry.ground_truth) if entry is not None else (op_name, "")


def truth_column(truth: str, ref: GoldenRef | NoGolden) -> str:
    """The op's original names in every row of it, whether or not this tensor has a golden file;
    for ops GE inserted (no originals), the golden op looked up; ``*`` only with no counterpart."""
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
        if found is None:  # the reason is worded only when needed: ~1.5 us of every tensor's lookup
            return None, f"golden file {ref.key}.{{timestamp}}.npy not found in {golden.root}"
        return found, ""
    found = golden.tensor(ref.op_name, TensorKind(ref.io), ref.index)
    if found is None:
        return None, f"golden dump of {ref.op_name} ({ref.io} {ref.index}) not found in {golden.root}"
    return found, ""


def evaluate(job: TensorJob, options: CompareOptions, golden: np.ndarray | None = None) -> ResultRow:
    """Read both sides of one job and compute its row; any failure becomes the row's reason.

    ``golden``: the job's golden tensor, where the caller has loaded it already."""
    tensor = job.tensor
    if tensor is None or job.golden is None:
        shape = (tensor.original_shape or tensor.shape) if tensor is not None else None
        unavailable = MetricValues.unavailable(job.reason or "no golden tensor")
        return _row(job, options, golden_dtype="NaN", shape=shape, metrics=unavailable)
    try:
        x, y = aligned_pair(tensor, job.golden, job.origin_format, options, golden)
        metrics = compare_arrays(x, y)
        return _row(job, options, golden_dtype=dtype_label(y.dtype), shape=y.shape, metrics=metrics)
    except UnreadableTensorError as exc:
        unreadable = MetricValues.unavailable(str(exc))
        return _row(job, options, golden_dtype="NaN", shape=tensor.original_shape, metrics=unreadable,
                    readable=False)  # fmt: skip
    except DumpcmpError as exc:
        unpaired = MetricValues.unavailable(str(exc))
        return _row(job, options, golden_dtype="NaN", shape=tensor.original_shape, metrics=unpaired)


def aligned_pair(
    tensor: DumpTensor,
    golden: GoldenTensor,
    origin_format: str,
    options: CompareOptions,
    loaded: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Both sides of a pair as compared: the NPU tensor in the golden's layout and shape, the golden
    (``loaded``, where the caller has loaded it already).

    Raises a DumpcmpError (unreadable side, "shape mismatch [a] vs [b]") when they cannot be paired.
    """
    try:
        x = tensor.logical(options.custom)
    except FormatError as exc:
        raise UnreadableTensorError(str(exc)) from None
    y = golden.load() if loaded is None else loaded
    _refuse_raw_bits(x.dtype, y.dtype, golden.label)
    return _as_golden(x, origin_format, y.shape, options), y


def _as_golden(
    x: np.ndarray, origin_format: str, golden_shape: tuple[int, ...], options: CompareOptions
) -> np.ndarray:
    """The logical target tensor ``x`` in the golden's layout and shape."""
    x = _to_origin_format(x, origin_format, golden_shape, options.custom)
    return fit_golden_shape(x, golden_shape, exact=options.exact_shapes)


# Pairs of at most this many elements are compared in stacks (``evaluate_all``); a larger pair's
# own work outweighs the few microseconds a stack saves it.
STACK_MAX_ELEMENTS = 1 << 14
# Elements of one stack, at most (a pair alone may have more): a stack is copied together (both
# sides, the conversions of the kernels' input), and both passes read it whole, so it stays within
# a megabyte or so, however many tiny tensors a batch of files holds.
STACK_ELEMENTS = 1 << 16


# What the pairs of one stack share: the target's dtype as stored, device format, device and
# original shapes, sub-format; the golden's origin format (rule file), dtype and shape.
_StackKey = tuple[np.dtype, int, tuple[int, ...], tuple[int, ...], int, str, np.dtype, tuple[int, ...]]


def held_cheaply(job: TensorJob) -> bool:
    """Whether a caller of ``evaluate_all`` may hold ``job`` with others at no real cost in memory:
    its target tensor is small enough to be stacked, or absent (a row with no numbers)."""
    tensor = job.tensor
    return tensor is None or tensor.element_count <= STACK_MAX_ELEMENTS


def evaluate_all(jobs: Sequence[TensorJob], options: CompareOptions) -> list[ResultRow]:
    """``evaluate`` of each job, the same rows bit for bit, with the pairs of small tensors of one
    kind (dtype, layout, shapes, on both sides) compared in stacks: each stack's layout undone by
    one gather and its metrics computed by one kernel call (``compare_rows``). The tiny tensors
    of LLM and TorchAir dumps, tens of thousands a step, cost their calls far more than their
    elements. A pair that cannot be stacked, or a stack that fails (a layout that does not fit,
    a dtype without numbers), is evaluated alone: its row says why, as ``evaluate`` says it.
    """
    rows: list[ResultRow | None] = [None] * len(jobs)
    loaded: dict[int, np.ndarray] = {}
    stacks: dict[_StackKey, list[int]] = {}
    for i, job in enumerate(jobs):
        tensor = job.tensor
        as_is = stored_as_is(tensor.data_type) if tensor is not None and options.custom is None else None
        if as_is is None or job.golden is None or tensor is None or tensor.element_count > STACK_MAX_ELEMENTS:
            continue
        try:
            y = job.golden.load()
        except DumpcmpError:
            continue  # alone, its row says why
        if not 0 < y.size <= STACK_MAX_ELEMENTS:  # an empty pair's row has no numbers to stack
            rows[i] = evaluate(job, options, y)  # now: a large golden is not held
            continue
        loaded[i] = y
        key = (as_is, tensor.format, tensor.shape, tensor.original_shape, tensor.sub_format,
               job.origin_format, y.dtype, y.shape)  # fmt: skip
        stacks.setdefault(key, []).append(i)
    for key, kind in stacks.items():
        per_stack = max(1, STACK_ELEMENTS // loaded[kind[0]].size)
        for start in range(0, len(kind), per_stack):
            members = kind[start : start + per_stack]
            if len(members) < 2:
                continue
            goldens = [loaded[i] for i in members]
            try:
                metrics = _stack_metrics(key, [jobs[i] for i in members], goldens, options)
            except DumpcmpError:
                continue  # each pair alone says why
            golden_dtype = dtype_label(goldens[0].dtype)
            for i, y, values in zip(members, goldens, metrics, strict=True):
                rows[i] = _row(jobs[i], options, golden_dtype=golden_dtype, shape=y.shape, metrics=values)
    return [row if row is not None else evaluate(job, options, loaded.get(i)) for i, (row, job) in
            enumerate(zip(rows, jobs, strict=True))]  # fmt: skip


def _stack_metrics(
    key: _StackKey, jobs: Sequence[TensorJob], goldens: Sequence[np.ndarray], options: CompareOptions
) -> list[MetricValues]:
    """The metrics of pairs of one kind (``evaluate_all``'s ``key``), as ``evaluate`` computes
    each; raises the DumpcmpError that would stop any of them (then each is evaluated alone)."""
    as_is, _, _, _, _, origin_format, golden_dtype, golden_shape = key
    tensors = [job.tensor for job in jobs]
    first = tensors[0]
    assert first is not None and jobs[0].golden is not None
    _refuse_raw_bits(as_is, golden_dtype, jobs[0].golden.label)
    order = _stack_order(first.format, first.shape, first.original_shape, first.sub_format, origin_format,
                         golden_shape, options)  # fmt: skip
    payloads = np.concatenate([t.payload for t in tensors if t is not None]).view(as_is)
    x = payloads.reshape(len(tensors), -1)
    if order is not None:
        x = x.take(order, axis=1)  # C-contiguous, as x[:, order] need not be
    y = np.stack(goldens).reshape(len(goldens), -1)
    return compare_rows(x, y)


@functools.lru_cache(maxsize=128)
def _stack_order(
    device_format: int,
    shape: tuple[int, ...],
    original_shape: tuple[int, ...],
    sub_format: int,
    origin_format: str,
    golden_shape: tuple[int, ...],
    options: CompareOptions,
) -> np.ndarray | None:
    """Where each element of a target tensor of this geometry, as compared (``aligned_pair``:
    logical layout, the golden's layout and shape, C order), lies in its dump payload; None when
    in the same place. ``aligned_pair``'s own steps on a tensor of element numbers: every layout
    conversion only moves elements (a user's converter is never asked: it may compute)."""
    numbers = np.arange(math.prod(shape), dtype=np.int64)
    tensor = DumpTensor(TensorKind.OUTPUT, 0, int(DataType.DT_INT64), device_format, shape, original_shape,
                        numbers.nbytes, numbers.view(np.uint8), sub_format=sub_format)  # fmt: skip
    moved = _as_golden(tensor.logical(), origin_format, golden_shape, options)
    order = np.ascontiguousarray(moved).reshape(-1)  # fewer than the payload's: padding is cut
    if np.array_equal(order, numbers):
        return None
    order.flags.writeable = False  # cached: shared by every stack of this geometry
    return order


def _refuse_raw_bits(target: np.dtype, golden: np.dtype, label: str) -> None:
    """MatchError for a golden of unsigned integers as wide as a 16- or 8-bit float target: the
    float's bits saved as integers (np.save of a bf16 array's view, an old converter), which
    compared as numbers gave cosine -0.41 on a tensor that agrees."""
    if target.kind not in "biu" and golden.kind == "u" and golden.itemsize == target.itemsize <= 2:
        raise MatchError(
            f"golden {label} holds {golden} integers where the target is {dtype_label(target)}: the "
            "float's raw bits? Write it as float32 (convert dump2npy does) or name its type in a "
            '.npy.json sidecar ({"dtype": "bfloat16"})'
        )


def _row(
    job: TensorJob,
    options: CompareOptions,
    *,
    golden_dtype: str,
    shape: tuple[int, ...] | None,
    metrics: MetricValues,
    readable: bool = True,
) -> ResultRow:
    tensor = job.tensor
    return ResultRow(
        index=0,  # numbered by the session layer, which knows the file's place in the shard
        op_sequence=job.op_sequence,
        op_type=job.op_type,
        npu_name=job.npu_name,
        npu_dtype=tensor.dtype_name if tensor is not None else "NaN",
        npu_address=tensor.address if tensor is not None else None,
        ground_truth=job.ground_truth,
        golden_dtype=golden_dtype,
        golden_address=None,
        tensor_index=job.tensor_index,
        shape=tuple(shape) if shape is not None else None,
        overflow=_fp16_overflow(tensor) if options.overflow_detection and tensor is not None else None,
        metrics=metrics,
        dump_readable=tensor is not None and readable,
        golden_key=job.golden.key if job.golden is not None else "",
    )


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


def fit_golden_shape(x: np.ndarray, golden_shape: tuple[int, ...], *, exact: bool) -> np.ndarray:
    """``x`` shaped like the golden tensor, or MatchError "shape mismatch [a] vs [b]".

    Device padding is gone by now: the layout conversion cut it to the dump header's original
    shape. Whatever still differs is a real mismatch, never cut away. Only unit dimensions may
    differ (ATC's (1,512,1,1800) for ONNX's (1,512,1800)), and not when ``exact``: in a
    file-against-file compare the shapes must be equal.
    """
    if x.shape == golden_shape:
        return x
    if not exact and _without_units(x.shape) == _without_units(golden_shape):
        return x.reshape(golden_shape)
    raise MatchError(f"shape mismatch {list(x.shape)} vs {list(golden_shape)}")


def _without_units(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d for d in shape if d != 1)


def _fp16_overflow(tensor: DumpTensor) -> bool | None:
    """A float16 tensor overflows when it holds ±inf, NaN or |v| ≥ 65504 (metrics.md §1.1)."""
    if tensor.data_type != DataType.DT_FLOAT16:
        return False
    try:
        values = tensor.array()
    except DumpcmpError:
        return None
    return fp16_overflows(values)


def fp16_overflows(values: np.ndarray) -> bool:
    """True when float16 ``values`` hold ±inf, NaN or |v| ≥ 65504 (an .npy target is checked too)."""
    flat = values.reshape(-1)
    for start in range(0, flat.size, _OVERFLOW_CHUNK):
        chunk = flat[start : start + _OVERFLOW_CHUNK]
        with np.errstate(invalid="ignore"):
            if not np.all(np.abs(chunk) < FP16_MAX):  # NaN compares false, so it counts too
                return True
    return False


def keep_imported() -> None:
    """Call once a command's modules are imported: what they made lives as long as the process.

    Out of the cyclic GC's sight, the ~300K objects of numpy, protobuf, llvmlite and our own
    modules are no longer walked by every full collection that planning triggers (rule files
    make tens of thousands of records): ~15 ms of a quarter-gigabyte compare, and the collection
    in ``freeze_long_lived`` then walks only what came after. No collection first: imports leave
    next to no garbage, and walking them to find none is the cost this saves.

    The process runs this one command: what a comparison leaves (``fewer_collections``) is kept
    out of sight as well.
    """
    global _one_command
    _one_command = True
    gc.freeze()


def freeze_long_lived() -> None:
    """Call once the metric kernels are loaded: what exists then lives as long as the run.

    numba's type registries are ~100K objects; out of the cyclic GC's sight (``gc.freeze``)
    no full collection walks them again, interpreter exit no longer spends ~0.5 s on them, and
    forked workers do not copy the pages such a walk would touch. Garbage is collected first,
    so nothing frozen is garbage yet; each later call only walks what came since.
    """
    gc.collect()
    gc.freeze()


# The cyclic GC's youngest generation, collected after this many new objects during a run
# (Python's default: 700). A run makes next to no cyclic garbage (21 objects after a whole
# 9,000-file compare on Dask with collection off), while each collection walks every young
# record: 10,000 cost the coordinator 0.2-0.45 s of CPU a run (38 young and 3 middle collections
# of a 9,000-file tree), and its median slope was 97 µs a file against 73 with 1,000,000
# (bench/scale.py's trees, five interleaved rounds, a loaded 2-core box). A million still
# bounds what cycles could pile up in a run of a million files.
YOUNG_OBJECTS_PER_COLLECTION = 1_000_000
_collecting_less = threading.Lock()
_open_runs: list[tuple[int, int, int]] = []  # Python's thresholds, once for every run going on
_one_command = False  # the process ends with the command that called ``keep_imported``


@contextmanager
def fewer_collections() -> Iterator[None]:
    """While a comparison runs, the cyclic GC collects its youngest objects every
    ``YOUNG_OBJECTS_PER_COLLECTION`` new ones instead of every 700, and so its older generations
    as much more seldom.

    A run makes records by the hundred thousand (dump entries, the golden index, rows) that live
    to its end and hold no cycles; every collection of the older generations walked them all
    again: ~40 % of the coordinator's CPU per file on a 2-worker Dask cluster and ~13 % of
    ``-j 1``'s (bench/scale.py), and half the parsing of a 9,000-op rule file. Cycles made
    meanwhile are still collected, later. Runs in several threads at once keep the raised
    threshold until the last one ends.

    At the end, the first young collection walks what the run leaves: its rows, entries and
    plan, ~10 objects a file, all alive (128 ms after a 9,000-file compare on Dask against 51-63
    after 1,500 files: ~10 µs a file, a fifth of the coordinator's CPU per file). A process that
    runs one command (``keep_imported``) ends soon after, and what the run leaves is read until
    then: frozen instead, it is never walked. The cyclic garbage the run made (~1,500 objects)
    then stays until the process ends; a server's runs are collected as usual.
    """
    with _collecting_less:
        thresholds = _open_runs[0] if _open_runs else gc.get_threshold()
        _open_runs.append(thresholds)
        gc.set_threshold(max(YOUNG_OBJECTS_PER_COLLECTION, thresholds[0]), *thresholds[1:])
    try:
        yield
    finally:
        with _collecting_less:
            _open_runs.pop()
            if not _open_runs:
                if _one_command:
                    gc.freeze()
                gc.set_threshold(*thresholds)


def locate_golden(
    golden: GoldenSource, matcher: Matcher | None, op_name: str, kind: TensorKind, index: int
) -> tuple[GoldenRef | NoGolden, GoldenTensor | None, str]:
    """The golden tensor of one target tensor, found as dump files find theirs, or why there is none.

    Statistics dumps (``host.stats_compare``) look their golden tensors up through this.
    """
    ref = _reference(matcher, op_name, kind, index)
    found, reason = _locate(golden, ref)
    return ref, found, reason
