"""``compare -d OP [-i INDEX] [-t input|output]``: one tensor, element by element (metrics.md §1.2)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from dumpcmp.errors import DumpcmpError, MatchError
from dumpcmp.host.golden import GoldenSource
from dumpcmp.host.matcher import Matcher, TensorIO
from dumpcmp.host.metrics.detail import write_detail
from dumpcmp.host.pipeline import CompareOptions, TensorJob, aligned_pair, file_jobs
from dumpcmp.host.verdict import Agreement, agreement
from dumpcmp.proto.codec import read_dump
from dumpcmp.proto.names import sanitize_dump_name
from dumpcmp.proto.walker import DumpEntry, DumpTree, GroupKey

if TYPE_CHECKING:
    from dumpcmp.host.request import CompareRequest, DetailRequest
    from dumpcmp.host.rows import ResultRow


def check_detail_op(detail: DetailRequest, tree: DumpTree) -> None:
    """A ``-d`` op (or tensor index) that is not in the target dump is an error before the
    compare, not after it."""
    found = [e for entries in tree.groups.values() for e in _entries_of(detail.op, entries)]
    if not found:
        raise MatchError(f"op {detail.op!r} (-d) is not in the target dump")
    if all(e.is_stats for e in found):
        raise MatchError(
            f"op {detail.op!r} (-d) has statistics only in the target dump: -d compares a tensor "
            "element by element; dump it with dump_data tensor"
        )
    try:
        dump = read_dump(found[-1].path)
    except DumpcmpError:
        return  # the compare reports the unreadable file in its own row
    count = len(dump.inputs if detail.io == "input" else dump.outputs)
    if detail.index >= count:
        raise MatchError(f"op {detail.op!r} has no {detail.io} {detail.index} (-i): its dump has {count}")


def _entries_of(op: str, entries: list[DumpEntry]) -> list[DumpEntry]:
    wanted = sanitize_dump_name(op)
    return [e for e in entries if e.name.op_name == wanted or e.name.match_name == wanted]


def write_op_detail(
    request: CompareRequest,
    tree: DumpTree,
    golden: GoldenSource,
    matcher_for: Callable[[GroupKey], Matcher | None],
    options: CompareOptions,
    compared: Mapping[GroupKey, Sequence[ResultRow]],
) -> tuple[tuple[Path, ...], str]:
    """The detail files of the op's tensor, and which shard they are of ("step 7, the first of
    the 12 steps it ran in where it is beyond the thresholds").

    Of a tree of several shards (steps), the first shard whose row of that tensor (``compared``:
    each shard's result rows) is beyond the thresholds: the user who follows a finding "only in
    step 7" to ``-d`` wants step 7's elements, not a healthy step's. Where the tensor agrees in
    every shard, the first shard it ran in."""
    detail = request.detail
    assert detail is not None
    shards = [
        (key, chosen)
        for key, entries in sorted(tree.groups.items())
        if (chosen := _entries_of(detail.op, entries))
    ]
    if not shards:
        raise MatchError(f"op {detail.op!r} (-d) is not in the target dump")
    suffix = f":{detail.io}:{detail.index}"
    wanted = sanitize_dump_name(detail.op)
    diverging = [
        at
        for at, (key, _) in enumerate(shards)
        if any(
            sanitize_dump_name(row.npu_name) == wanted
            and row.tensor_index.endswith(suffix)
            and agreement(row.metrics, request.thresholds) is Agreement.DISAGREE
            for row in compared.get(key, ())
        )
    ]
    key, chosen = shards[diverging[0] if diverging else 0]
    where = f"step {key.step}"
    if len(shards) > 1:
        where += f", the first of the {len(shards)} steps it ran in" + (
            " where it is beyond the thresholds" if diverging else "; it is within the thresholds in each"
        )
    for job in file_jobs(chosen[-1], golden, matcher_for(key), options):
        if job.tensor_index.endswith(suffix):
            return _write(job, request.out_dir, detail.io, detail.index, options), where
    raise MatchError(f"op {detail.op!r} has no {detail.io} {detail.index} in its dump file")


def _write(
    job: TensorJob, out_dir: Path, io: TensorIO, index: int, options: CompareOptions
) -> tuple[Path, ...]:
    if job.tensor is None or job.golden is None:
        raise MatchError(
            f"{job.tensor_index} cannot be compared in detail: {job.reason or 'no golden tensor'}"
        )
    tensor = job.tensor
    try:
        x, y = aligned_pair(tensor, job.golden, job.origin_format, options)
    except DumpcmpError as exc:
        raise MatchError(f"{job.tensor_index} cannot be compared in detail: {exc}") from None
    files = write_detail(
        x,
        y,
        out_dir,
        job.npu_name,
        io,
        index,
        left_name=job.npu_name,
        right_name=job.golden.label,
        fmt_name=tensor.format_name,
    )
    return tuple(files)
