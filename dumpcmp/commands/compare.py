"""``dumpcmp compare``: the CANN comparator's command line, same result files; ``--mode torchair``
compares a TorchAir run's GE dump with its FX dump.

The module is light to import (``--help`` and a refused option load neither numpy nor the
kernels): what a comparison needs is imported inside the functions that run it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, cast

import typer

from dumpcmp.commands._cluster import CLUSTER_HELP, DEFAULT_TIMEOUT, file_runner, for_cluster
from dumpcmp.commands._flags import StrictCommand, refusal
from dumpcmp.commands._output import console, counted, fail, say, user_errors
from dumpcmp.commands._report_flags import (
    VERDICT_DEFAULTS,
    CosineThreshold,
    Html,
    KlThreshold,
    ModelExplorer,
    MreThreshold,
    RedThreshold,
    RmseThreshold,
    StatsThreshold,
    threshold_problem,
)
from dumpcmp.commands.progress import tracked
from dumpcmp.host.request import CompareRequest, DetailRequest
from dumpcmp.host.verdict import Thresholds
from dumpcmp.outputs import kept_if_written
from dumpcmp.printable import skipped_lines

if TYPE_CHECKING:  # numpy, the codec and the kernels load when the comparison starts, not for --help
    from dumpcmp.host.report.files import ReportRequest
    from dumpcmp.host.report.graph import OpGraph
    from dumpcmp.host.report.shards import AdvisedRun
    from dumpcmp.host.torchair.run import TorchairRequest


class Mode(str, Enum):
    offline_data = "offline_data"
    torchair = "torchair"


class SummaryModeOption(str, Enum):
    real = "real"
    statistics = "statistics"
    md5 = "md5"


class TensorSide(str, Enum):
    input = "input"
    output = "output"


def compare(
    ctx: typer.Context,
    target: Annotated[
        Path,
        typer.Option(
            "-tp",
            "-l",
            "--target-path",
            "--target_path",
            help="NPU dump tree, or one dump file; --mode torchair: the GE dump (msprobe_ge_dump).",
        ),
    ],
    golden: Annotated[
        Path,
        typer.Option(
            "-gp",
            "-r",
            "--golden-path",
            "--golden_path",
            help="Golden npy directory, a second NPU dump tree, or one .npy file; --mode torchair: the FX "
            "dump (msprobe_fx_dump) or the GE dump of the same run with fusion off.",
        ),
    ],
    mode: Annotated[Mode, typer.Option("-m", "--mode", help="Comparison family.")] = Mode.offline_data,
    fusion_rule: Annotated[
        Path | None,
        typer.Option(
            "-fr",
            "-f",
            "--fusion-rule-file",
            "--fusion_rule_file",
            help="ATC json of the model (atc --mode=1), or a directory of them for several models.",
        ),
    ] = None,
    close_fusion_rule: Annotated[
        Path | None,
        typer.Option(
            "-cfr",
            "-cf",
            "--close-fusion-rule-file",
            "--close_fusion_rule_file",
            help="ATC json of the same model compiled with fusion off (NPU vs NPU).",
        ),
    ] = None,
    quant_fusion_rule: Annotated[
        Path | None,
        typer.Option(
            "-qfr",
            "-q",
            "--quant-fusion-rule-file",
            "--quant_fusion_rule_file",
            help="AMCT quant fusion json (quantised NPU model vs float golden).",
        ),
    ] = None,
    output: Annotated[
        Path, typer.Option("-o", "-out", "--output-path", "--output_path", help="Where result files go.")
    ] = Path("."),
    overflow_detection: Annotated[
        bool, typer.Option("--overflow-detection", "--overflow_detection", help="Add the OverFlow column.")
    ] = False,
    detail_op: Annotated[
        str | None,
        typer.Option(
            "-d",
            "--detail",
            help="Also write element-by-element detail of this op (of a tree of several steps: the first "
            "step where its tensor is beyond the thresholds, else its first step).",
        ),
    ] = None,
    detail_index: Annotated[int, typer.Option("-i", "--index", help="Tensor index for -d.")] = 0,
    detail_side: Annotated[
        TensorSide, typer.Option("-t", "--tensor", help="input or output tensor for -d.")
    ] = TensorSide.output,
    xlsx: Annotated[bool, typer.Option("--xlsx", help="Also write the table as .xlsx.")] = False,
    jobs: Annotated[
        int, typer.Option("-j", "--jobs", min=0, help="Parallel tensor pairs (0: all cores).")
    ] = 0,
    custom: Annotated[
        Path | None,
        typer.Option("-custom", "--custom", help="Directory whose format_convert/ holds user converters."),
    ] = None,
    cluster: Annotated[str | None, typer.Option("--cluster", help=CLUSTER_HELP)] = None,
    cluster_timeout: Annotated[
        float,
        typer.Option(
            "--cluster-timeout", min=0.1, help="Seconds to reach the --cluster scheduler and a worker."
        ),
    ] = DEFAULT_TIMEOUT,
    print_request: Annotated[
        bool, typer.Option("--print-request", help="Print the resolved request and stop.")
    ] = False,
    cosine_threshold: CosineThreshold = VERDICT_DEFAULTS.cosine,
    red_threshold: RedThreshold = VERDICT_DEFAULTS.relative_euclidean,
    kl_threshold: KlThreshold = VERDICT_DEFAULTS.kl,
    rmse_threshold: RmseThreshold = VERDICT_DEFAULTS.rmse,
    mre_threshold: MreThreshold = VERDICT_DEFAULTS.mean_relative,
    stats_threshold: StatsThreshold = VERDICT_DEFAULTS.statistics,
    advisor: Annotated[
        bool,
        typer.Option("--advisor", help="Also print the advisor's findings and write advisor_*.txt/.json."),
    ] = False,
    html: Html = False,
    model_explorer: ModelExplorer = False,
    summary_mode: Annotated[
        SummaryModeOption | None,
        typer.Option(
            "--summary-mode",
            "--summary_mode",
            help="--mode torchair: real data, statistics or md5.",
            show_default="real",
        ),
    ] = None,
    max_rel_threshold: Annotated[
        float,
        typer.Option(
            "--max-rel-threshold",
            help="--mode torchair real data: FAIL when MaxRelativeErr is not below this.",
        ),
    ] = 0.01,
    thousandth_bound: Annotated[
        float,
        typer.Option(
            "--thousandth-bound",
            help="--mode torchair: One Thousandth Err Ratio counts relative errors below this.",
        ),
    ] = 0.001,
    five_thousandth_bound: Annotated[
        float,
        typer.Option(
            "--five-thousandth-bound",
            help="--mode torchair: Five Thousandth Err Ratio counts relative errors below this.",
        ),
    ] = 0.005,
) -> None:
    """Compare an NPU dump with golden data; one CSV row per target tensor.

    --mode torchair compares a TorchAir run's GE dump with its FX dump, or with the GE dump of the
    same run with fusion off (metrics.md §2).
    """
    refused = refusal(ctx, _unused_options(mode, summary_mode, detail_op))
    if refused is not None:
        fail(refused)
    bad_limit = threshold_problem(ctx)
    if bad_limit is not None:
        fail(bad_limit)
    reports = ReportFlags(html, model_explorer)
    if mode is Mode.torchair:
        limits = TorchairLimits(
            cosine_threshold, max_rel_threshold, stats_threshold, thousandth_bound, five_thousandth_bound
        )
        torchair = _torchair_request(target, golden, output, summary_mode, xlsx, jobs, limits)
        if print_request:
            console().print(torchair)
            return
        _run_torchair(torchair, advisor, reports)
        return
    detail = None
    if detail_op is not None:
        detail = DetailRequest(detail_op, detail_index, cast(Literal["input", "output"], detail_side.value))
    request = CompareRequest(
        target=target,
        golden=golden,
        fusion_rule=fusion_rule,
        close_fusion_rule=close_fusion_rule,
        quant_fusion_rule=quant_fusion_rule,
        out_dir=output,
        overflow_detection=overflow_detection,
        detail=detail,
        xlsx=xlsx,
        jobs=jobs,
        custom=custom,
        thresholds=Thresholds(
            cosine_threshold, red_threshold, kl_threshold, rmse_threshold, mre_threshold, stats_threshold
        ),
    )
    if print_request:
        console().print(request)
        return
    if cluster is not None:
        request = for_cluster(request)
    _run_offline(request, advisor, reports, cluster, cluster_timeout)


_NOT_TORCHAIR = "not an option of --mode torchair"
_OFFLINE_ONLY = {
    "fusion_rule": f"{_NOT_TORCHAIR} (GE ops are matched through the GE graph dump's _fx_tensor_name)",
    "close_fusion_rule": f"{_NOT_TORCHAIR} (a fusion-off GE dump is given as -gp, matched by op name)",
    "quant_fusion_rule": f"{_NOT_TORCHAIR} (TorchAir runs are not AMCT-quantised models)",
    "detail_op": f"{_NOT_TORCHAIR} (element-by-element detail is written for offline_data rows)",
    "detail_index": f"{_NOT_TORCHAIR} (-i and -t belong to -d, an offline_data option)",
    "detail_side": f"{_NOT_TORCHAIR} (-i and -t belong to -d, an offline_data option)",
    "custom": f"{_NOT_TORCHAIR} (GE dumps are read by the built-in decoders)",
    "cluster": f"{_NOT_TORCHAIR} (it compares on this machine; copy the dumps here)",
    "cluster_timeout": f"{_NOT_TORCHAIR} (it compares on this machine; copy the dumps here)",
    "overflow_detection": f"{_NOT_TORCHAIR} (its table, metrics.md §2, has no OverFlow column)",
    **dict.fromkeys(
        ("red_threshold", "kl_threshold", "rmse_threshold", "mre_threshold"),
        f"{_NOT_TORCHAIR} (its verdicts use --cosine-threshold and --max-rel-threshold, "
        "or --stats-threshold)",
    ),
}
_TORCHAIR_ONLY = dict.fromkeys(
    ("summary_mode", "max_rel_threshold", "thousandth_bound", "five_thousandth_bound"),
    "an option of --mode torchair",
)
_REAL_ONLY = ("cosine_threshold", "max_rel_threshold", "thousandth_bound", "five_thousandth_bound")


_DETAIL_ONLY = dict.fromkeys(("detail_index", "detail_side"), "a choice of -d OP's tensor; no -d was given")


def _unused_options(mode: Mode, summary: SummaryModeOption | None, detail_op: str | None) -> dict[str, str]:
    """The options a run of this mode would ignore, with why (refused if given)."""
    if mode is not Mode.torchair:
        return _TORCHAIR_ONLY if detail_op is not None else {**_TORCHAIR_ONLY, **_DETAIL_ONLY}
    summary = summary or SummaryModeOption.real
    unused = dict(_OFFLINE_ONLY)
    if summary is not SummaryModeOption.real:
        unused.update(dict.fromkeys(_REAL_ONLY, f"a threshold of --summary-mode real, not {summary.value}"))
    if summary is not SummaryModeOption.statistics:
        unused["stats_threshold"] = f"a threshold of --summary-mode statistics, not {summary.value}"
    return unused


@dataclass(frozen=True, slots=True)
class ReportFlags:
    html: bool
    model_explorer: bool


@dataclass(frozen=True, slots=True)
class TorchairLimits:
    cosine: float
    max_relative: float
    statistics: float
    thousandth: float
    five_thousandth: float


def _torchair_request(
    target: Path,
    golden: Path,
    output: Path,
    summary_mode: SummaryModeOption | None,
    xlsx: bool,
    jobs: int,
    limits: TorchairLimits,
) -> TorchairRequest:
    from dumpcmp.host.metrics.torchair import ErrorBounds
    from dumpcmp.host.torchair.family import SummaryMode
    from dumpcmp.host.torchair.rows import TorchairThresholds
    from dumpcmp.host.torchair.run import TorchairRequest

    return TorchairRequest(
        target=target,
        golden=golden,
        out_dir=output,
        mode=SummaryMode(summary_mode.value if summary_mode else "real"),
        xlsx=xlsx,
        jobs=jobs,
        thresholds=TorchairThresholds(
            cosine=limits.cosine,
            max_relative=limits.max_relative,
            statistics=limits.statistics,
            bounds=ErrorBounds(limits.thousandth, limits.five_thousandth),
        ),
    )


def _run_offline(
    request: CompareRequest, advisor: bool, reports: ReportFlags, cluster: str | None, cluster_timeout: float
) -> None:
    """Compare, print the skipped files and the summary, then advise and report if asked; exit 1
    when nothing could be compared (the summary says why)."""
    from dumpcmp.host.offline import run_compare
    from dumpcmp.host.pipeline import keep_imported
    from dumpcmp.host.summary import Tally, nothing_compared, summarize

    keep_imported()
    target = request.target
    if request.fusion_rule is None and request.close_fusion_rule is None and target.is_dir():
        from dumpcmp.host.torchair.layout import holds_graph_dumps

        if holds_graph_dumps(target):
            fail(f"-tp {target} looks like a TorchAir run (GE graph dumps dynamo_*.txt): add -m torchair")
    with (
        kept_if_written(request.out_dir),
        user_errors(),
        file_runner(cluster, cluster_timeout) as runner,
        tracked("comparing dump files") as tracker,
    ):
        outcome = run_compare(request, on_plan=tracker.start, on_progress=tracker.advance, runner=runner)
    _print_skipped(outcome.skipped)
    tally = Tally.of(outcome, request.thresholds)
    for line in summarize(outcome, request.thresholds, tally):
        say(line)
    advised: list[AdvisedRun] = []
    graphs: dict[str, OpGraph] = {}  # each model's fusion rule, read once for the advisor and reports
    if (advisor or reports.html) and request.fusion_rule is not None:
        from dumpcmp.host.report.graph import graph_for

        rule = request.fusion_rule
        with user_errors():
            graphs = {m: graph_for(rule, m) for m in dict.fromkeys(s.key.model for s in outcome.shards)}
    if advisor:
        from dumpcmp.commands.advise import advise_results
        from dumpcmp.host.report.grading import GradeThresholds

        with user_errors():
            # Statistics dumps' results too; the verdict's own thresholds.
            results = {
                p: graphs.get(s.key.model) for s in outcome.shards for p in (s.result_file, s.stats_file) if p
            }
            known = {p: g for p, g in results.items() if g is not None}
            advised = advise_results(list(results), GradeThresholds(verdict=request.thresholds), known)
    if reports.html or reports.model_explorer:
        from dumpcmp.host.report.files import ReportRequest

        _write_reports(
            [
                (p, s.key.model, graphs.get(s.key.model))
                for s in outcome.shards
                for p in (s.result_file, s.stats_file)
            ],
            ReportRequest(
                html=reports.html,
                model_explorer=reports.model_explorer,
                graph=request.fusion_rule,
                verdict=request.thresholds,
            ),
            advised,
        )
    problem = nothing_compared(outcome, request.thresholds, tally=tally) or outcome.detail_error
    if problem:
        fail(problem)


def _write_reports(
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


def _print_skipped(skipped: Sequence[tuple[Path, str]]) -> None:
    """The files passed over, a few by name (the rest counted)."""
    for line in skipped_lines([f"{path}: {reason}" for path, reason in skipped]):
        say(line)


def _run_torchair(request: TorchairRequest, advisor: bool, reports: ReportFlags) -> None:
    """Compare the GE dump with the FX dump (or the fusion-off GE dump), print the summary, then
    advise and report if asked; exit 1 when nothing could be compared."""
    from dumpcmp.errors import DumpcmpError
    from dumpcmp.host.pipeline import keep_imported
    from dumpcmp.host.torchair.layout import FUSED_OP_TYPE, open_inputs
    from dumpcmp.host.torchair.run import run_torchair as compare_ge_dump
    from dumpcmp.host.torchair.summary import nothing_compared_torchair, summarize_torchair

    keep_imported()
    with kept_if_written(request.out_dir), user_errors(), tracked("comparing GE dump files") as tracker:
        inputs = open_inputs(request.target, request.golden)
        outcome = compare_ge_dump(request, on_plan=tracker.start, on_progress=tracker.advance, inputs=inputs)
    _print_skipped(outcome.skipped)
    fused = inputs.fused_bench_ops
    if fused:
        say(
            f"warning: the GE dump -gp {request.golden} has {counted(len(fused), 'fused op')} "
            f"({FUSED_OP_TYPE}, e.g. {fused[0]}): it was dumped with fusion on; fusion on vs off expects "
            "it with fusion off"
        )
    for line in summarize_torchair(outcome):
        say(line)
    advised: list[AdvisedRun] = []
    if advisor:
        from dumpcmp.commands.advise import advise_results

        with user_errors():
            advised = advise_results([s.result_file for s in outcome.shards if s.result_file is not None])
    if reports.html or reports.model_explorer:
        from dumpcmp.host.report.files import ReportRequest
        from dumpcmp.host.report.ge_graph_view import load_ge_graph

        report = ReportRequest(html=reports.html, model_explorer=reports.model_explorer)
        graphs: dict[int, OpGraph] = {}  # each rank's network, read once for all its tokens
        for rank, files in inputs.target.graphs.items() if reports.html else ():
            try:
                graphs[rank] = load_ge_graph(files)
            except DumpcmpError as exc:  # its rows say so already; the report goes without a graph
                say(f"rank {rank}'s report has no graph: {exc}")
        _write_reports([(s.result_file, "", graphs.get(s.key.rank)) for s in outcome.shards], report, advised)
    problem = nothing_compared_torchair(outcome)
    if problem is not None:
        fail(problem)


def register(app: typer.Typer) -> None:
    app.command("compare", cls=StrictCommand)(compare)
