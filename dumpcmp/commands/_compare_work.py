"""What ``compare`` does once its command line is read (``-m offline_data`` and ``-m torchair``):
compare, say what came out, write the advisor's findings and the reports.

No typer, click or option parsing here: this runs in the process ``dumpcmp.handoff`` forks at
launch, which calls ``warm()`` while the command line loads in the other, or in the command's own
process when there is none (tests, other platforms). The heavy modules load in ``warm()`` or in
the functions, never at this module's import: the command line imports it for the records.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dumpcmp.commands._cluster import file_runner
from dumpcmp.commands._output import counted, fail, say, user_errors
from dumpcmp.commands.progress import tracked
from dumpcmp.outputs import kept_if_written
from dumpcmp.printable import skipped_lines

if TYPE_CHECKING:
    from dumpcmp.host.report.files import ReportRequest
    from dumpcmp.host.report.graph import OpGraph
    from dumpcmp.host.report.shards import AdvisedRun
    from dumpcmp.host.request import CompareRequest
    from dumpcmp.host.rule_set import RuleSet
    from dumpcmp.host.torchair.run import TorchairRequest


@dataclass(frozen=True, slots=True)
class ReportFlags:
    html: bool
    model_explorer: bool


@dataclass(frozen=True, slots=True)
class OfflineJob:
    """An offline_data compare as the command line resolved it."""

    request: CompareRequest
    advisor: bool
    reports: ReportFlags
    cluster: str | None
    cluster_timeout: float
    rules: RuleSet | None = None  # read by the command line (``read_rules_early``)


@dataclass(frozen=True, slots=True)
class TorchairLimits:
    cosine: float
    max_relative: float
    statistics: float
    thousandth: float
    five_thousandth: float


@dataclass(frozen=True, slots=True)
class TorchairJob:
    """A torchair compare as the command line resolved it (``summary_mode``: real, statistics, md5)."""

    target: Path
    golden: Path
    output: Path
    summary_mode: str
    xlsx: bool
    jobs: int
    advisor: bool
    reports: ReportFlags
    limits: TorchairLimits


# What every offline compare loads (numpy, the codec and the pipeline come with them)
_LOADED_BY_WARM = ("dumpcmp.host.offline", "dumpcmp.host.summary")


def warm() -> None:
    """Load what every offline compare needs, and make the metric kernels' JIT engine."""
    from dumpcmp.host.metrics._native import load_engine

    for module in _LOADED_BY_WARM:
        importlib.import_module(module)
    load_engine()


def read_rules_early(request: CompareRequest) -> RuleSet | None:
    """The request's rule files, read by the command line while the work process still loads: a
    1092-op ATC json takes ~40 ms to read, ~15 ms to unpickle. None when there is none to read, or
    reading failed: the work then reads them again and reports the problem in its place among the
    other checks (a -tp without dump files is the error to report first, say)."""
    if request.fusion_rule is None or not request.target.is_dir():
        return None
    from dumpcmp.errors import DumpcmpError
    from dumpcmp.host.rule_set import RuleSet

    try:
        return RuleSet.load(request)
    except (DumpcmpError, OSError):
        return None


def run_offline(job: OfflineJob) -> None:
    """Compare, print the skipped files and the summary, then advise and report if asked; exit 1
    when nothing could be compared (the summary says why)."""
    from dumpcmp.host.offline import run_compare
    from dumpcmp.host.pipeline import keep_imported
    from dumpcmp.host.summary import Tally, nothing_compared, summarize

    keep_imported()
    request = job.request
    target = request.target
    if request.fusion_rule is None and request.close_fusion_rule is None and target.is_dir():
        from dumpcmp.host.torchair.layout import holds_graph_dumps

        if holds_graph_dumps(target):
            fail(f"-tp {target} looks like a TorchAir run (GE graph dumps dynamo_*.txt): add -m torchair")
    with (
        kept_if_written(request.out_dir),
        user_errors(),
        file_runner(job.cluster, job.cluster_timeout) as runner,
        tracked("comparing dump files") as tracker,
    ):
        outcome = run_compare(
            request, on_plan=tracker.start, on_progress=tracker.advance, runner=runner, rules=job.rules
        )
    print_skipped(outcome.skipped)
    tally = Tally.of(outcome, request.thresholds)
    for line in summarize(outcome, request.thresholds, tally):
        say(line)
    advised: list[AdvisedRun] = []
    if job.advisor:
        from dumpcmp.commands.advise import advise_results
        from dumpcmp.host.report.grading import GradeThresholds

        with user_errors():
            # Statistics dumps' results too; the verdict's own thresholds.
            results = [p for s in outcome.shards for p in (s.result_file, s.stats_file) if p is not None]
            advised = advise_results(results, GradeThresholds(verdict=request.thresholds))
    if job.reports.html or job.reports.model_explorer:
        from dumpcmp.host.report.files import ReportRequest

        write_reports(
            [(p, s.key.model, None) for s in outcome.shards for p in (s.result_file, s.stats_file)],
            ReportRequest(
                html=job.reports.html,
                model_explorer=job.reports.model_explorer,
                graph=request.fusion_rule,
                verdict=request.thresholds,
            ),
            advised,
        )
    problem = nothing_compared(outcome, request.thresholds, tally=tally) or outcome.detail_error
    if problem:
        fail(problem)


def write_reports(
    results: Sequence[tuple[Path | None, str, OpGraph | None]],
    request: ReportRequest,
    advised: Sequence[AdvisedRun] = (),
) -> None:
    """The reports of each (result file, model name, its graph if read already): one per run;
    ``advised``: the runs the advisor read already."""
    from dumpcmp.host.report.files import reports_of_results

    with user_errors():
        for path in reports_of_results(results, request, advised):
            say(f"report: {path}")


def print_skipped(skipped: Sequence[tuple[Path, str]]) -> None:
    """The files passed over, a few by name (the rest counted)."""
    for line in skipped_lines([f"{path}: {reason}" for path, reason in skipped]):
        say(line)


def torchair_request(job: TorchairJob) -> TorchairRequest:
    from dumpcmp.host.metrics.torchair import ErrorBounds
    from dumpcmp.host.torchair.family import SummaryMode
    from dumpcmp.host.torchair.rows import TorchairThresholds
    from dumpcmp.host.torchair.run import TorchairRequest

    limits = job.limits
    return TorchairRequest(
        target=job.target,
        golden=job.golden,
        out_dir=job.output,
        mode=SummaryMode(job.summary_mode),
        xlsx=job.xlsx,
        jobs=job.jobs,
        thresholds=TorchairThresholds(
            cosine=limits.cosine,
            max_relative=limits.max_relative,
            statistics=limits.statistics,
            bounds=ErrorBounds(limits.thousandth, limits.five_thousandth),
        ),
    )


def run_torchair(job: TorchairJob) -> None:
    """Compare the GE dump with the FX dump (or the fusion-off GE dump), print the summary, then
    advise and report if asked; exit 1 when nothing could be compared."""
    from dumpcmp.errors import DumpcmpError
    from dumpcmp.host.pipeline import keep_imported
    from dumpcmp.host.torchair.layout import FUSED_OP_TYPE, open_inputs
    from dumpcmp.host.torchair.run import run_torchair as compare_ge_dump
    from dumpcmp.host.torchair.summary import nothing_compared_torchair, summarize_torchair

    keep_imported()
    request = torchair_request(job)
    with kept_if_written(job.output), user_errors(), tracked("comparing GE dump files") as tracker:
        inputs = open_inputs(job.target, job.golden)
        outcome = compare_ge_dump(request, on_plan=tracker.start, on_progress=tracker.advance, inputs=inputs)
    print_skipped(outcome.skipped)
    fused = inputs.fused_bench_ops
    if fused:
        say(
            f"warning: the GE dump -gp {job.golden} has {counted(len(fused), 'fused op')} ({FUSED_OP_TYPE}, "
            f"e.g. {fused[0]}): it was dumped with fusion on; fusion on vs off expects it with fusion off"
        )
    for line in summarize_torchair(outcome):
        say(line)
    advised: list[AdvisedRun] = []
    if job.advisor:
        from dumpcmp.commands.advise import advise_results

        with user_errors():
            advised = advise_results([s.result_file for s in outcome.shards if s.result_file is not None])
    if job.reports.html or job.reports.model_explorer:
        from dumpcmp.host.report.files import ReportRequest
        from dumpcmp.host.report.ge_graph_view import load_ge_graph

        report = ReportRequest(html=job.reports.html, model_explorer=job.reports.model_explorer)
        graphs: dict[int, OpGraph] = {}  # each rank's network, read once for all its tokens
        for rank, files in inputs.target.graphs.items() if job.reports.html else ():
            try:
                graphs[rank] = load_ge_graph(files)
            except DumpcmpError as exc:  # its rows say so already; the report goes without a graph
                say(f"rank {rank}'s report has no graph: {exc}")
        write_reports([(s.result_file, "", graphs.get(s.key.rank)) for s in outcome.shards], report, advised)
    problem = nothing_compared_torchair(outcome)
    if problem is not None:
        fail(problem)
