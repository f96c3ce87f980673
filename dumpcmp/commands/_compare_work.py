"""What ``compare -m offline_data`` does once its command line is read: compare, say what came
out, write the advisor's findings and the reports.

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
from dumpcmp.commands._output import console, fail, user_errors
from dumpcmp.commands.progress import tracked
from dumpcmp.outputs import kept_if_written
from dumpcmp.printable import skipped_lines

if TYPE_CHECKING:
    from rich.console import Console

    from dumpcmp.host.report.files import ReportRequest
    from dumpcmp.host.report.graph import OpGraph
    from dumpcmp.host.request import CompareRequest


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


# What every offline compare loads (numpy, protobuf, the codec, the pipeline come with them)
_WORK_MODULES = ("dumpcmp.host.offline", "dumpcmp.host.summary")


def warm() -> None:
    """Load what every offline compare needs, and make the metric kernels' JIT engine."""
    from dumpcmp.host.metrics._native import load_engine

    for module in _WORK_MODULES:
        importlib.import_module(module)
    load_engine()


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
        outcome = run_compare(request, on_plan=tracker.start, on_progress=tracker.advance, runner=runner)
    out = console()
    print_skipped(out, outcome.skipped)
    tally = Tally.of(outcome, request.thresholds)
    for line in summarize(outcome, request.thresholds, tally):
        out.print(line, markup=False)
    if job.advisor:
        from dumpcmp.commands.advise import advise_results
        from dumpcmp.host.report.grading import GradeThresholds

        with user_errors():
            # Statistics dumps' results too; the verdict's own thresholds.
            results = [p for s in outcome.shards for p in (s.result_file, s.stats_file) if p is not None]
            advise_results(results, GradeThresholds(verdict=request.thresholds))
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
        )
    problem = nothing_compared(outcome, request.thresholds, tally=tally) or outcome.detail_error
    if problem:
        fail(problem)


def write_reports(results: Sequence[tuple[Path | None, str, OpGraph | None]], request: ReportRequest) -> None:
    """The reports of each (result file, model name, its graph if read already), beside the file."""
    from dumpcmp.host.report.files import reports_beside

    with user_errors():
        for result, model, graph in results:
            if result is not None:
                for path in reports_beside(result, request, model=model, graph=graph):
                    console().print(f"report: {path}", markup=False)


def print_skipped(out: Console, skipped: Sequence[tuple[Path, str]]) -> None:
    """The files passed over, a few by name (the rest counted)."""
    for line in skipped_lines([f"{path}: {reason}" for path, reason in skipped]):
        out.print(line, markup=False)
