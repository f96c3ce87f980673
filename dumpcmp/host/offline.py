"""``compare -m offline_data``: argument rules, shards, result files and the summary."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from dumpcmp.errors import DumpcmpError, MatchError
from dumpcmp.host.core import ComparePlan, FileRows
from dumpcmp.host.file_pair import compare_npy_target, is_npy_target
from dumpcmp.host.golden import GoldenSource, NpuDumpGolden, NpyGoldenDir, golden_skipped, open_golden
from dumpcmp.host.pipeline import CompareOptions, fewer_collections, matcher_for_dump
from dumpcmp.host.request import CompareRequest
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.rule_set import RuleSet
from dumpcmp.host.session import CompareOutcome, CompareSession, ResultSettings, shard_order
from dumpcmp.host.workers import Runner, compare_files, run_shards
from dumpcmp.outputs import prepare_output_dir
from dumpcmp.proto.custom_converters import CustomConverters
from dumpcmp.proto.walker import DumpEntry, DumpTree, GroupKey, walk_dump_tree


def check_arguments(request: CompareRequest, golden_is_npu: bool) -> None:
    """The CANN comparator's argument rules (formats.md §5.4), checked before any work."""
    if request.close_fusion_rule and not request.fusion_rule:
        raise MatchError("-cfr/--close-fusion-rule-file needs -fr/--fusion-rule-file as well")
    if golden_is_npu:
        if request.quant_fusion_rule:
            raise MatchError(
                "-qfr/--quant-fusion-rule-file is only for a quantised NPU dump against npy golden data"
            )
        if request.fusion_rule and not request.close_fusion_rule:
            raise MatchError(
                "NPU vs NPU: give -fr and -cfr together (fusion on vs off), or neither (match by op name)"
            )
        return
    if request.close_fusion_rule:
        raise MatchError("-cfr/--close-fusion-rule-file is only for NPU vs NPU comparisons")
    if not request.fusion_rule and not (request.target.is_file() and request.golden.is_file()):
        raise MatchError(
            "NPU dump vs golden data (npy files, or the dump files npy2dump makes of them) needs "
            "-fr/--fusion-rule-file (the ATC json of the model)"
        )


def run_compare(
    request: CompareRequest,
    *,
    on_plan: Callable[[int], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
    runner: Runner | None = None,
) -> CompareOutcome:
    """Compare, write one result file per (device, model, step) shard, return what was written.

    Tensor dumps give ``result`` files; statistics dumps give ``stats_result`` files beside them.
    ``runner`` computes the files through the core (the local pools by default; a cluster client
    is another runner), every shard's at once; it yields them in the order given, so each shard
    is written as soon as its last file is in.
    """
    with fewer_collections():
        return _compare(request, on_plan, on_progress, runner)


def _compare(
    request: CompareRequest,
    on_plan: Callable[[int], None] | None,
    on_progress: Callable[[int], None] | None,
    runner: Runner | None,
) -> CompareOutcome:
    if not request.target.exists():
        raise DumpcmpError(f"target path {request.target} does not exist")
    if is_npy_target(request.target) and request.golden.is_dir():
        raise DumpcmpError(
            f"an .npy target is compared with one golden file (.npy or dump file), "
            f"but {request.golden} is a directory"
        )
    if is_npy_target(request.target) and request.detail is not None:
        raise MatchError(
            f"-d {request.detail.op}: -tp {request.target} is an .npy file, one tensor with no ops to "
            "pick from; for -d, give -tp a dump file or a dump tree"
        )
    if request.target.is_dir() and request.golden.is_file():
        raise DumpcmpError(
            f"-tp {request.target} is a dump tree and -gp {request.golden} one file: give a golden "
            "directory (npy files or a second dump tree), or one dump file with -tp"
        )
    golden = open_golden(request.golden)
    stamp = time.strftime("%Y%m%d%H%M%S")
    if is_npy_target(request.target):
        prepare_output_dir(request.out_dir, "-o")
        return _compare_npy_file(request, golden, stamp)
    # The tree first: a -tp that holds no dumps (golden npy files, say) is the error to report,
    # not the -fr that such a run would also need.
    tree = walk_dump_tree(request.target)
    if not tree.groups:
        raise DumpcmpError(f"no dump files found under {request.target}" + _skipped_hint(tree))
    check_arguments(request, isinstance(golden, NpuDumpGolden))
    if request.detail is not None:
        from dumpcmp.host.detail_request import check_detail_op

        check_detail_op(request.detail, tree)
    custom = CustomConverters.load(request.custom) if request.custom else None
    options = CompareOptions(
        overflow_detection=request.overflow_detection,
        jobs=request.jobs,
        custom=custom,
        file_pair=request.target.is_file() and request.golden.is_file(),
        # A dump file against a dump file pairs every input and output by kind and index.
        golden_is_one_tensor=request.golden.is_file() and isinstance(golden, NpyGoldenDir),
        thresholds=request.thresholds,
    )
    rules = RuleSet.load(request)
    shards_in = [
        _split(key, group) for key, group in sorted(tree.groups.items(), key=lambda g: shard_order(g[0]))
    ]
    # A missing rule file fails up front.
    matchers = [matcher_for_dump(rules.matcher_for(s.key), s.tensors) for s in shards_in]
    prepare_output_dir(request.out_dir, "-o")  # every input checked; nothing compared yet
    workers = options.jobs or os.cpu_count() or 1
    if on_plan:
        on_plan(sum(len(s.tensors) + len(s.stats) for s in shards_in))
    session: CompareSession[ResultRow, GroupKey] = CompareSession(
        result_settings(request, rules.present, stamp), golden, [s.key for s in shards_in]
    )
    shards = []

    def shard_done(number: int, results: list[FileRows]) -> None:
        key = shards_in[number].key
        shard = session.shard(key)
        for result in results:
            shard.add(result)
        shards.append(session.write_shard(key))

    plans = [ComparePlan(golden, matcher, options) for matcher in matchers]
    work = [(plan, [*s.tensors, *s.stats]) for plan, s in zip(plans, shards_in, strict=True)]
    # The walker lists a shard's files in execution order: a tensor dump's place is its Index.
    places = [[*range(len(s.tensors)), *[None] * len(s.stats)] for s in shards_in]
    run_shards(runner or compare_files, work, workers, on_progress, shard_done, places)
    detail_files: tuple[Path, ...] = ()
    detail_where = detail_error = ""
    if request.detail is not None:
        from dumpcmp.host.detail_request import write_op_detail

        try:
            compared = {shard.key: shard.rows for shard in shards}
            detail_files, detail_where = write_op_detail(
                request, tree, golden, rules.matcher_for, options, compared
            )
        except DumpcmpError as exc:  # the results are written: say where, then why no detail
            detail_error = str(exc)
    return CompareOutcome(
        tuple(shards),
        skipped=tuple((s.path, s.reason) for s in tree.skipped)
        + golden_skipped(golden, rules.shared_golden_names()),
        target_skipped=len(tree.skipped),
        detail_files=detail_files,
        detail_where=detail_where,
        detail_error=detail_error,
        file_pair=options.file_pair,
    )


def result_settings(request: CompareRequest, with_rules: bool, stamp: str | None = None) -> ResultSettings:
    """How the result files of ``request`` are written; ``stamp`` defaults to now."""
    return ResultSettings(
        request.out_dir,
        stamp or time.strftime("%Y%m%d%H%M%S"),
        op_sequence=with_rules,
        overflow_detection=request.overflow_detection,
        xlsx=request.xlsx,
        thresholds=request.thresholds,
    )


@dataclass(frozen=True, slots=True)
class _ShardInput:
    key: GroupKey
    tensors: list[DumpEntry]
    stats: list[DumpEntry]


def _split(key: GroupKey, group: list[DumpEntry]) -> _ShardInput:
    return _ShardInput(key, [e for e in group if not e.is_stats], [e for e in group if e.is_stats])


def _compare_npy_file(request: CompareRequest, golden: GoldenSource, stamp: str) -> CompareOutcome:
    """``-tp a.npy``: one row against the one golden file."""
    key = GroupKey("0", request.target.stem, "0", "0")
    row = compare_npy_target(request.target, golden, overflow_detection=request.overflow_detection)
    session: CompareSession[ResultRow, GroupKey] = CompareSession(
        result_settings(request, False, stamp), golden, [key]
    )
    written = session.write_rows(key, [row])
    return CompareOutcome(
        (replace(written, dump_files=(request.target,)),), skipped=tuple(golden.skipped), file_pair=True
    )


def _skipped_hint(tree: DumpTree) -> str:
    if tree.skipped:
        first = tree.skipped[0]
        return f" ({len(tree.skipped)} files skipped, e.g. {first.path.name}: {first.reason})"
    npy = next(tree.root.rglob("*.npy"), None) if tree.root.is_dir() else None
    if npy is not None:
        return f" (it holds .npy files such as {npy.name}: golden data? -tp is the NPU dump, -gp the golden)"
    return ""
