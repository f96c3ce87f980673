"""The report files written beside a result: ``{stem}.html`` and Model Explorer overlays.

The commands (``compare``, ``advise``, ``host results``) ask for them the same way, so the
names and the graph lookup are decided once, here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dumpcmp.host.report.advisor import Advice
from dumpcmp.host.report.graph import OpGraph
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
        from dumpcmp.host.report.grading import GradeThresholds
        from dumpcmp.host.report.graph import graph_for
        from dumpcmp.host.report.html import write_html

        if graph is None and request.graph is not None:
            graph = graph_for(request.graph, model)
        target = html_path or stem.with_name(stem.name + ".html")
        limits = GradeThresholds(verdict=request.verdict) if request.verdict is not None else None
        # A name the user gave is theirs to replace; a derived one never replaces another report.
        fresh = html_path is None
        written.append(
            write_html(target, table, graph=graph, advice=advice, thresholds=limits, new_name=fresh)
        )
    if request.model_explorer:
        from dumpcmp.host.report.model_explorer import write_overlays

        written += write_overlays(table, stem)
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
    from dumpcmp.host.sinks.csv_file import claim_new_path

    claimed = claim_new_path(path)
    try:
        return write_text(claimed, text)
    except BaseException:
        claimed.unlink(missing_ok=True)  # our empty claim; another run's file was never touched
        raise
