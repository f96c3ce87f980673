"""The report files written beside a result: ``{stem}.html`` and Model Explorer overlays.

The commands (``compare``, ``advise``, ``host results``) ask for them the same way, so the
names and the graph lookup are decided once, here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dumpcmp.host.report.advisor import Advice
from dumpcmp.host.report.table import ResultTable


@dataclass(frozen=True, slots=True)
class ReportRequest:
    """Which report files to write, and where the network graph comes from."""

    html: bool = False
    model_explorer: bool = False
    graph: Path | None = None  # an ATC rule file, or a directory of them (picked by ``model``)

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
) -> list[Path]:
    """Write what ``request`` asks for as ``{stem}.html`` (or ``html_path``) and
    ``{stem}_model_explorer_{metric}.json``; the paths written, in that order."""
    written: list[Path] = []
    if request.html:
        from dumpcmp.host.report.graph import graph_for
        from dumpcmp.host.report.html import write_html

        graph = graph_for(request.graph, model) if request.graph is not None else None
        target = html_path or stem.with_name(stem.name + ".html")
        written.append(write_html(target, table, graph=graph, advice=advice))
    if request.model_explorer:
        from dumpcmp.host.report.model_explorer import write_overlays

        written += write_overlays(table, stem)
    return written


def reports_beside(
    result: Path, request: ReportRequest, *, model: str = "", advice: Advice | None = None
) -> list[Path]:
    """The reports of a result file (CSV or xlsx), named after it."""
    from dumpcmp.host.report.table import read_result

    return write_reports(read_result(result), result.with_suffix(""), request, model=model, advice=advice)
