"""The report files written beside a result: ``{stem}.html`` and Model Explorer overlays.

The commands (``compare``, ``advise``, ``host results``) ask for them the same way, so the
names and the graph lookup are decided once, here. The shards of one run (``0_net_{step}_result_{ts}``,
``rank{R}_token{T}_compare_result_{ts}``) get one HTML report, ``{run}.html`` (``result_{ts}.html``),
with a shard picker; Model Explorer overlays stay one pair per shard (each is one model's node data).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dumpcmp.host.report.advisor import Advice
from dumpcmp.host.report.grading import GradeThresholds
from dumpcmp.host.report.graph import OpGraph
from dumpcmp.host.report.shards import AdvisedRun, RunAdvice, advise_run, run_groups
from dumpcmp.host.report.table import ResultTable
from dumpcmp.host.verdict import Thresholds
from dumpcmp.outputs import atomic_path


@dataclass(frozen=True, slots=True)
class ReportRequest:
    """Which report files to write, and where the network graph comes from."""

    html: bool = False
    model_explorer: bool = False
    graph: Path | None = None  # an ATC rule file, or a directory of them (picked by ``model``)
    verdict: Thresholds | None = None  # the comparison's own thresholds, when it had others

    @property
    def wanted(self) -> bool:
        return self.html or self.model_explorer


def write_reports(
    table: ResultTable,
    stem: Path,
    request: ReportRequest,
    *,
    model: str = "",
    advice: Advice | None = None,
    html_path: Path | None = None,
    graph: OpGraph | None = None,
) -> list[Path]:
    """Write what ``request`` asks for as ``{stem}.html`` (or ``html_path``) and
    ``{stem}_model_explorer_{metric}.json``; the paths written, in that order. Derived names
    never replace an existing file (the next free ``_1``, ``_2`` … is taken).

    ``graph``, when the caller has read it already, stands for ``request.graph``.
    """
    written: list[Path] = []
    if request.html:
        from dumpcmp.host.report.graph import graph_for
        from dumpcmp.host.report.html import write_html

        if graph is None and request.graph is not None:
            graph = graph_for(request.graph, model)
        target = html_path or stem.with_name(stem.name + ".html")
        limits = _grade_thresholds(request)
        # A name the user gave is theirs to replace; a derived one never replaces another report.
        fresh = html_path is None
        written.append(
            write_html(target, table, graph=graph, advice=advice, thresholds=limits, new_name=fresh)
        )
    if request.model_explorer:
        from dumpcmp.host.report.model_explorer import write_overlays

        written += write_overlays(table, stem)
    return written


def _grade_thresholds(request: ReportRequest) -> GradeThresholds | None:
    from dumpcmp.host.report.grading import GradeThresholds

    return GradeThresholds(verdict=request.verdict) if request.verdict is not None else None


def write_run_reports(
    run: RunAdvice,
    tables: Sequence[ResultTable],
    stems: Sequence[Path],
    request: ReportRequest,
    *,
    graphs: Sequence[OpGraph | None],
    name: str | None = None,
    html_path: Path | None = None,
) -> list[Path]:
    """The reports of a run of several shards (``tables``, from the results named ``stems``, in
    ``run``'s order): one ``{run}.html`` (``{name}.html``: one file held every shard's rows, or
    ``html_path``) beside the first, and each shard's overlays."""
    written: list[Path] = []
    if request.html:
        from dumpcmp.host.report.html import write_run_html

        target = html_path or stems[0].with_name((name or run.run) + ".html")
        limits = _grade_thresholds(request)
        # A name the user gave is theirs to replace; a derived one never replaces another report.
        fresh = html_path is None
        written.append(write_run_html(target, run, tables, graphs, thresholds=limits, new_name=fresh))
    if request.model_explorer:
        from dumpcmp.host.report.model_explorer import write_overlays

        for table, stem in zip(tables, stems, strict=True):
            written += write_overlays(table, stem)
    return written


def reports_of_results(
    results: Sequence[tuple[Path | None, str, OpGraph | None]],
    request: ReportRequest,
    advised: Sequence[AdvisedRun] = (),
) -> list[Path]:
    """The reports of a compare's result files, each (file, model name, its graph if read
    already): a single-shard run's beside its file, as ``reports_beside``; a run of several
    shards one report for all of them (``write_run_reports``). A run in ``advised`` (the
    advisor's, of the same compare) is not read nor advised again."""
    from dumpcmp.host.report.graph import graph_for
    from dumpcmp.host.report.table import read_result

    given = [(path, model, graph) for path, model, graph in results if path is not None]
    known = {a.paths: a for a in advised}
    written: list[Path] = []
    by_model: dict[str, OpGraph] = {}  # a rule file is read and laid out once per model, not per step
    for run in run_groups(given, lambda r: r[0].stem, lambda r: r[0].parent):
        graphs: list[OpGraph | None] = []
        for _, model, graph in run:
            if graph is None and request.html and request.graph is not None:
                graph = by_model.get(model) or by_model.setdefault(model, graph_for(request.graph, model))
            graphs.append(graph)
        reuse = known.get(tuple(path for path, _, _ in run))
        tables = list(reuse.tables) if reuse else [read_result(path) for path, _, _ in run]
        stems = [path.with_suffix("") for path, _, _ in run]
        if len(run) == 1:
            advice = reuse.advice if reuse and isinstance(reuse.advice, Advice) else None
            written += write_reports(
                tables[0], stems[0], request, model=run[0][1], advice=advice, graph=graphs[0]
            )
            continue
        if reuse and isinstance(reuse.advice, RunAdvice):
            run_advice = reuse.advice
        else:
            run_advice = advise_run(tables, [s.name for s in stems], _grade_thresholds(request), graphs[0])
        written += write_run_reports(run_advice, tables, stems, request, graphs=graphs)
    return written


def reports_beside(
    result: Path,
    request: ReportRequest,
    *,
    model: str = "",
    advice: Advice | None = None,
    graph: OpGraph | None = None,
) -> list[Path]:
    """The reports of a result file (CSV or xlsx), named after it."""
    from dumpcmp.host.report.table import read_result

    table = read_result(result)
    return write_reports(table, result.with_suffix(""), request, model=model, advice=advice, graph=graph)


def write_text(path: Path, text: str) -> Path:
    with atomic_path(path) as temp:
        temp.write_text(text, encoding="utf-8")
    return path


def write_new_text(path: Path, text: str) -> Path:
    """``text`` at ``path`` or the next free name beside it (never over an existing file)."""
    from dumpcmp.outputs import new_file

    return new_file(path, lambda temp: temp.write_text(text, encoding="utf-8"))
