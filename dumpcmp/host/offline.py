"""``compare -m offline_data``: argument rules, shards, result files and the summary."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from dumpcmp.errors import DumpcmpError, MatchError
from dumpcmp.host.fusion_rules import FusionRules, load_rules
from dumpcmp.host.golden import NpuDumpGolden, open_golden
from dumpcmp.host.matcher import Matcher
from dumpcmp.host.pipeline import CompareOptions, golden_only_rows, iter_jobs, run_jobs
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.sinks.csv_file import write_csv
from dumpcmp.host.sinks.table import TableShape
from dumpcmp.host.workers import rows_in_processes, worth_processes
from dumpcmp.proto.custom_converters import CustomConverters
from dumpcmp.proto.names import sanitize_dump_name
from dumpcmp.proto.walker import DumpTree, GroupKey, walk_dump_tree

COSINE_THRESHOLD = 0.99


@dataclass(frozen=True, slots=True)
class DetailRequest:
    op: str
    index: int = 0
    io: Literal["input", "output"] = "output"


@dataclass(frozen=True, slots=True)
class CompareRequest:
    """Everything ``compare -m offline_data`` was asked to do, resolved from the command line."""

    target: Path
    golden: Path
    fusion_rule: Path | None = None
    close_fusion_rule: Path | None = None
    quant_fusion_rule: Path | None = None
    out_dir: Path = Path(".")
    overflow_detection: bool = False
    detail: DetailRequest | None = None
    xlsx: bool = False
    jobs: int = 0
    custom: Path | None = None
    cosine_threshold: float = COSINE_THRESHOLD


@dataclass(frozen=True, slots=True)
class ShardOutcome:
    key: GroupKey
    result_file: Path
    rows: tuple[ResultRow, ...]
    xlsx_file: Path | None = None


@dataclass(frozen=True, slots=True)
class CompareOutcome:
    shards: tuple[ShardOutcome, ...]
    skipped: tuple[tuple[Path, str], ...] = ()
    detail_files: tuple[Path, ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def rows(self) -> list[ResultRow]:
        return [r for s in self.shards for r in s.rows]

    def compared_ops(self) -> int:
        return len({(s.key, r.index) for s in self.shards for r in s.rows if r.index is not None})

    def below_threshold(self, threshold: float) -> list[ResultRow]:
        return [r for r in self.rows if r.index is not None and r.below(threshold)]


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
            "NPU dump vs golden npy data needs -fr/--fusion-rule-file (the ATC json of the model)"
        )


def run_compare(
    request: CompareRequest,
    *,
    on_plan: Callable[[int], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> CompareOutcome:
    """Compare, write one result file per (device, model, step) shard, return what was written."""
    if not request.target.exists():
        raise DumpcmpError(f"target path {request.target} does not exist")
    golden = open_golden(request.golden)
    check_arguments(request, isinstance(golden, NpuDumpGolden))
    tree = walk_dump_tree(request.target)
    if not tree.groups:
        raise DumpcmpError(f"no dump files found under {request.target}" + _skipped_hint(tree))
    if request.detail is not None:
        from dumpcmp.host.detail_request import check_detail_op

        check_detail_op(request.detail, tree)
    custom = CustomConverters.load(request.custom) if request.custom else None
    options = CompareOptions(
        overflow_detection=request.overflow_detection,
        jobs=request.jobs,
        custom=custom,
        only_first_output=request.target.is_file() and request.golden.is_file(),
    )
    rules = _RuleSet.load(request)
    stamp = time.strftime("%Y%m%d%H%M%S")
    shards_in = [(key, [e for e in group if not e.is_stats]) for key, group in sorted(tree.groups.items())]
    matchers = [rules.matcher_for(key) for key, _ in shards_in]  # a missing rule file fails up front
    workers = options.jobs or os.cpu_count() or 1
    use_processes = worth_processes([e for _, entries in shards_in for e in entries], workers)
    if on_plan:
        on_plan(sum(len(entries) for _, entries in shards_in))
    shards = []
    for position, ((key, entries), matcher) in enumerate(zip(shards_in, matchers, strict=True)):
        if use_processes:
            rows_iter = rows_in_processes(entries, golden, matcher, options, workers, on_progress)
        else:
            rows_iter = run_jobs(iter_jobs(entries, golden, matcher, options), options, on_progress)
        rows = list(rows_iter)
        if position == len(shards_in) - 1:
            rows += golden_only_rows(golden)
        name = _result_name(key, [k for k, _ in shards_in], stamp)
        shards.append(_write_shard(request, key, rows, name, rules.present))
    detail_files: tuple[Path, ...] = ()
    if request.detail is not None:
        from dumpcmp.host.detail_request import write_op_detail

        detail_files = write_op_detail(request, tree, golden, rules.matcher_for, options)
    return CompareOutcome(
        tuple(shards),
        skipped=tuple((s.path, s.reason) for s in tree.skipped) + tuple(golden.skipped),
        detail_files=detail_files,
    )


def _result_name(key: GroupKey, keys: list[GroupKey], stamp: str) -> str:
    """``result_{ts}.csv`` for a single shard, else ``{device}_{model}_{step}_result_{ts}.csv``,
    with the session directory in front when two sessions hold the same (device, model, step)."""
    if len(keys) == 1:
        return f"result_{stamp}.csv"
    clash = sum(1 for k in keys if k.label == key.label) > 1
    label = f"{key.session}_{key.label}" if clash and key.session else key.label
    return f"{label}_result_{stamp}.csv"


def _write_shard(
    request: CompareRequest, key: GroupKey, rows: list[ResultRow], name: str, with_rules: bool
) -> ShardOutcome:
    shape = TableShape.of(rows, op_sequence=with_rules, overflow=request.overflow_detection)
    result = write_csv(request.out_dir / name, rows, shape)
    xlsx = None
    if request.xlsx:
        from dumpcmp.host.sinks.xlsx_file import write_xlsx

        xlsx = write_xlsx(result.with_suffix(".xlsx"), rows, shape, cosine_threshold=request.cosine_threshold)
    return ShardOutcome(key, result, tuple(rows), xlsx)


def _skipped_hint(tree: DumpTree) -> str:
    if not tree.skipped:
        return ""
    first = tree.skipped[0]
    return f" ({len(tree.skipped)} files skipped, e.g. {first.path.name}: {first.reason})"


@dataclass(frozen=True, slots=True)
class _RuleSet:
    """The rule file(s) of a run: one, or a directory of them picked per model name."""

    matchers: dict[str, Matcher]
    default: Matcher | None

    @property
    def present(self) -> bool:
        return self.default is not None or bool(self.matchers)

    @classmethod
    def load(cls, request: CompareRequest) -> _RuleSet:
        if request.fusion_rule is None:
            return cls({}, None)
        close = load_rules(request.close_fusion_rule) if request.close_fusion_rule else None
        quant = load_rules(request.quant_fusion_rule) if request.quant_fusion_rule else None
        if request.fusion_rule.is_dir():
            files = sorted(request.fusion_rule.glob("*.json"))
            if not files:
                raise DumpcmpError(f"fusion rule directory {request.fusion_rule} holds no .json files")
            matchers: dict[str, Matcher] = {}
            for path in files:
                rules = load_rules(path)
                matcher = _matcher(rules, close, quant)
                for name in {rules.name, path.stem, *rules.graph_names}:
                    if name:
                        matchers[sanitize_dump_name(name)] = matcher
            return cls(matchers, None)
        return cls({}, _matcher(load_rules(request.fusion_rule), close, quant))

    def matcher_for(self, key: GroupKey) -> Matcher | None:
        if self.default is not None or not self.matchers:
            return self.default
        found = self.matchers.get(key.model)
        if found is None:
            raise MatchError(
                f"no rule file in the -fr directory matches model {key.model!r} "
                f"(known: {', '.join(sorted(self.matchers))})"
            )
        return found


def _matcher(rules: FusionRules, close: FusionRules | None, quant: FusionRules | None) -> Matcher:
    if close is not None:
        return Matcher.with_close_rules(rules, close)
    if quant is not None:
        return Matcher.with_quant_rules(rules, quant)
    return Matcher(rules)


def summarize(outcome: CompareOutcome, threshold: float) -> list[str]:
    """Short lines for the terminal: where results are, how many ops, the first bad one."""
    lines = [f"result: {s.result_file}" for s in outcome.shards]
    lines += [f"result: {s.xlsx_file}" for s in outcome.shards if s.xlsx_file]
    bad = outcome.below_threshold(threshold)
    lines.append(
        f"ops compared: {outcome.compared_ops()}, tensors below CosineSimilarity {threshold}: {len(bad)}"
    )
    if bad:
        first = bad[0]
        lines.append(
            f"first: index {first.index} {first.op_type} {first.npu_name} ({first.tensor_index}), "
            f"cosine {first.cosine:.6f}, ground truth {first.ground_truth}"
        )
    lines += [f"detail: {p}" for p in outcome.detail_files]
    return lines
