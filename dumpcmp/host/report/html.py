"""One self-contained HTML report of a result table: summary, advisor, plots, graph, table.

Everything the page needs is inside the file: plotly.js from the installed plotly package, the
rows and figures as inlined JSON, a Content-Security-Policy that allows no network at all, so
the report opens the same from a mail attachment on a machine without internet. Figures are
plotly figures built here; the graph's placement is networkx's (:mod:`.graph`).
"""

from __future__ import annotations

import html
import itertools
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dumpcmp.host.report.advisor import FIRST_DIVERGENCE, Advice, advise
from dumpcmp.host.report.grading import Grade, GradeThresholds, RowGrade, RowJudge, grade_rows
from dumpcmp.host.report.graph import OpGraph, layered_positions
from dumpcmp.host.report.html_page import CSP, SCRIPT, STYLE
from dumpcmp.host.report.shards import RunAdvice, ShardAdvice
from dumpcmp.host.report.table import OFFLINE_DATA, ResultTable
from dumpcmp.printable import counted

SEVERITY = {Grade.NONE: 0, Grade.GREEN: 1, Grade.YELLOW: 2, Grade.RED: 3}
COLOURS = {Grade.RED: "#e53935", Grade.YELLOW: "#f9a825", Grade.GREEN: "#43a047", Grade.NONE: "#9e9e9e"}
# The plot's error metric, by family (log scale): the first column the table has.
ERROR_COLUMNS = ("MaxRelativeError", "MaxRelativeErr", "RelativeEuclideanDistance", "MaxAbsErr")
COSINE_COLUMNS = ("CosineSimilarity", "Cosine")
# Above this many ops the original ops of fused ops are named in the hover text, not drawn: a
# marker and a link each would bury the network under them.
BIG_GRAPH = 1000
# Errors of exactly 0 have no logarithm; the plots put them at this floor instead of dropping them.
ERROR_FLOOR = 1e-12
NO_GRAPH = (
    "No network graph: pass the model's ATC fusion rule file (compare -fr model.json, or "
    "--graph model.json) to draw the ops, their data edges and the original ops of fused ops."
)


@dataclass(frozen=True, slots=True)
class OpSummary:
    """One target op of the table, as the plots and the graph show it."""

    index: int  # position in ``ops``, the id the page uses
    order: int
    name: str
    op_type: str
    originals: tuple[str, ...]
    grade: Grade
    cosine: float  # worst (lowest) over the op's output rows, NaN when none or not a number
    error: float  # worst (highest) over the op's output rows, NaN when none or not a number
    # An output row was judged but its metric is NaN/inf (NaN/inf in the data): the worst value,
    # plotted at the axis edge and never mistaken for "not compared".
    cosine_special: bool = False
    error_special: bool = False


def write_html(
    path: Path,
    table: ResultTable,
    *,
    graph: OpGraph | None = None,
    advice: Advice | None = None,
    title: str = "",
    thresholds: GradeThresholds | None = None,
    new_name: bool = False,
) -> Path:
    """Write the report atomically; ``advice`` defaults to the advisor's on ``table``.

    With ``new_name`` an existing file is never replaced: the report takes the next free name
    (``{stem}_1.html`` …), as result and advisor files do; the path written is returned.
    """
    text = render_html(table, graph=graph, advice=advice, title=title, thresholds=thresholds)
    from dumpcmp.host.report.files import write_new_text, write_text

    return write_new_text(path, text) if new_name else write_text(path, text)


def render_html(
    table: ResultTable,
    *,
    graph: OpGraph | None = None,
    advice: Advice | None = None,
    grades: Sequence[RowGrade] | None = None,
    title: str = "",
    thresholds: GradeThresholds | None = None,
) -> str:
    view = _view(table, graph, advice, grades, thresholds, {})
    title = title or f"dumpcmp report: {Path(table.source).name or 'result'}"
    return _page(view, title, _describe(table))


@dataclass(frozen=True, slots=True)
class _View:
    """One result table as the page shows it: its data and figures, tally and findings."""

    data: dict[str, Any]
    figures: dict[str, Any]
    grades: tuple[RowGrade, ...]
    advice: Advice
    error_names: tuple[str, ...]


def _view(
    table: ResultTable,
    graph: OpGraph | None,
    advice: Advice | None,
    grades: Sequence[RowGrade] | None,
    thresholds: GradeThresholds | None,
    layouts: dict[int, dict[str, tuple[float, float]]],
) -> _View:
    """``layouts``: the graphs placed already, by ``id`` (the shards of a run share their model's)."""
    grades = tuple(grades) if grades is not None else grade_rows(table, thresholds)
    advice = advice if advice is not None else advise(table, thresholds, graph)
    judge = RowJudge(table, thresholds or GradeThresholds())
    cosine_name = _first(table.header, COSINE_COLUMNS)
    # The verdict's own error measure first: the plot should show what decided the grades.
    error_names = [n for n in dict.fromkeys((judge.error_name, *ERROR_COLUMNS)) if n in table.header]
    error_name = error_names[0] if error_names else ""
    ops, row_op, value_rows = _ops(table, judge, grades, cosine_name, error_name)
    divergence = advice.first(FIRST_DIVERGENCE)
    figures: dict[str, Any] = {}
    if cosine_name or error_name:
        order = divergence.order if divergence is not None else None
        figures["metrics"] = _metric_figure(ops, cosine_name, error_name, order)
    if graph is not None and graph.nodes:
        if id(graph) not in layouts:
            layouts[id(graph)] = layered_positions(graph)
        figures["graph"] = _graph_figure(graph, ops, layouts[id(graph)])
    members = _fused_members(graph, ops) if graph is not None else {}
    data = {
        "header": list(table.header),
        "rows": [list(r.cells) for r in table.rows],
        "grade": [g.grade.value for g in grades],
        "why": [g.why for g in grades],
        "rowOp": row_op,
        "ops": [
            {
                "name": o.name,
                "order": o.order,
                "type": o.op_type,
                "originals": list(o.originals),
                "members": list(members.get(o.name, ())),
                "grade": o.grade.value,
            }
            for o in ops
        ],
        # Every error metric per row, for the page's metric choice (the plot and the histogram).
        "errs": {name: [_json_number(r.metric(name)) for r in table.rows] for name in error_names},
        "errName": error_name or "error",
        "valueRow": value_rows,
        "errorFloor": ERROR_FLOOR,
    }
    return _View(data, figures, grades, advice, tuple(error_names))


def _page(view: _View, title: str, source: str, shards: str = "", shard_data: str = "") -> str:
    from plotly.offline import get_plotlyjs

    return _PAGE.format(
        csp=CSP,
        title=html.escape(title),
        style=STYLE,
        heading=html.escape(title),
        source=html.escape(source),
        shards=shards,
        counts=_counts(view.grades),
        findings=_findings(view.advice.lines()),
        metrics_section=_section("metrics", "metrics", "Metrics by execution order", view.figures)
        + _error_choice(view.error_names),
        graph_section=_section("graph", "graph", "Network graph", view.figures, empty=NO_GRAPH),
        data=_script_json(view.data),
        figures=_script_json(view.figures),
        shard_data=shard_data,
        plotly=get_plotlyjs(),
        script=SCRIPT,
    )


def write_run_html(
    path: Path,
    run: RunAdvice,
    tables: Sequence[ResultTable],
    graphs: Sequence[OpGraph | None],
    *,
    thresholds: GradeThresholds | None = None,
    new_name: bool = False,
) -> Path:
    """Write the one report of a run's shards (``tables`` in ``run``'s order), as ``write_html``."""
    from dumpcmp.host.report.files import write_new_text, write_text

    text = render_run_html(run, tables, graphs, thresholds=thresholds)
    return write_new_text(path, text) if new_name else write_text(path, text)


def render_run_html(
    run: RunAdvice,
    tables: Sequence[ResultTable],
    graphs: Sequence[OpGraph | None],
    *,
    title: str = "",
    thresholds: GradeThresholds | None = None,
) -> str:
    """One page for every shard of a run: the run's findings, an overview of the shards (which
    diverge, where first) and a shard picker; the picked shard is shown as a one-shard report
    shows its table (a shard of tensor and statistics results: each, under the shard's advice).
    The graph of a model is laid out once for all its shards."""
    layouts: dict[int, dict[str, tuple[float, float]]] = {}
    shown = [(shard, k) for shard in run.shards for k in shard.tables]
    views = [_view(tables[k], graphs[k], shard.advice, None, thresholds, layouts) for shard, k in shown]
    labels = [_table_label(shard, tables[k]) for shard, k in shown]
    picker = [
        {
            "label": label,
            "source": _describe(tables[k]),
            "counts": _tally(view.grades),
            "findings": view.advice.lines(),
            "data": view.data,
            "figures": view.figures,
        }
        for label, (_, k), view in zip(labels, shown, views, strict=True)
    ]
    title = title or f"dumpcmp report: {run.run} ({counted(len(run.shards), 'shard')})"
    shard_data = f'<script type="application/json" id="report-shards">{_script_json(picker)}</script>'
    overview = _shards_section(run, [shard for shard, _ in shown], labels, views)
    return _page(views[0], title, _describe(tables[shown[0][1]]), overview, shard_data)


def _table_label(shard: ShardAdvice, table: ResultTable) -> str:
    """The shard's label; its statistics result's, of a shard of both, with the word said."""
    if len(shard.tables) > 1 and table.mode == "statistics":
        return f"{shard.label}, statistics"
    return shard.label


def _shards_section(
    run: RunAdvice, shards: Sequence[ShardAdvice], labels: Sequence[str], views: Sequence[_View]
) -> str:
    """The run's findings, the picker and the overview table (a row per table shown, with its
    shard's first fault; a click picks it)."""
    options = "".join(f'<option value="{k}">{html.escape(label)}</option>' for k, label in enumerate(labels))
    head = "".join(
        f"<th>{html.escape(name)}</th>" for name in ("shard", *_COUNT_LABELS.values(), "first fault")
    )
    rows = []
    for k, (shard, label, view) in enumerate(zip(shards, labels, views, strict=True)):
        tally = dict((grade, n) for grade, n, _ in _tally(view.grades))
        worst = next((g for g in SEVERITY_ORDER if tally[g.value] and g is not Grade.GREEN), Grade.GREEN)
        worst = worst if tally[worst.value] else Grade.NONE
        cells = [label, *(str(tally[g.value]) for g in SEVERITY_ORDER), shard.fault_place()]
        rows.append(
            f'<tr class="grade-{worst.value}" data-shard="{k}">'
            + "".join(f"<td>{html.escape(c)}</td>" for c in cells)
            + "</tr>"
        )
    return (
        '<h2 id="shards-heading">Shards</h2>'
        + _findings(run.lines(), "run-findings")
        + '<div class="controls"><label for="shard">shard shown below: </label>'
        + f'<select id="shard">{options}</select></div>'
        + f'<div class="scroll"><table id="shard-table"><thead><tr>{head}</tr></thead>'
        + f'<tbody id="shard-rows">{"".join(rows)}</tbody></table></div>'
    )


def _first(header: Sequence[str], names: Sequence[str]) -> str:
    return next((n for n in names if n in header), "")


def _ops(
    table: ResultTable, judge: RowJudge, grades: Sequence[RowGrade], cosine_name: str, error_name: str
) -> tuple[list[OpSummary], list[int | None], list[bool]]:
    """The target ops in execution order, each row's op index (None for golden-only rows), and
    whether a row is one its op's value is taken from (a judged output)."""
    value_rows = [False] * len(table.rows)
    keys: dict[tuple[int, str], list[int]] = {}
    for i, row in enumerate(table.rows):
        if row.order is not None:
            keys.setdefault((row.order, row.op_name), []).append(i)
    ops: list[OpSummary] = []
    row_op: list[int | None] = [None] * len(table.rows)
    for index, ((order, name), members) in enumerate(sorted(keys.items(), key=lambda kv: kv[0][0])):
        rows = [table.rows[i] for i in members]
        # An op's value is its outputs' (never its inputs', even when the outputs have no numbers).
        outputs = [r for r in rows if r.io != "input"] or rows
        judged = [r for r in outputs if judge.judged(r)]
        for row in judged:
            value_rows[row.position] = True
        cosine, cosine_special = _worst([r.metric(cosine_name) for r in judged], min, cosine_name)
        error, error_special = _worst([r.metric(error_name) for r in judged], max, error_name)
        # An op's colour is its result: an input it was handed bad does not make it red.
        own = [i for i in members if table.rows[i].io != "input" and grades[i].grade is not Grade.NONE]
        worst = max((grades[i].grade for i in own or members), key=SEVERITY.__getitem__)
        ops.append(
            OpSummary(
                index=index,
                order=order,
                name=name,
                op_type=next((r.op_type for r in rows if r.op_type), ""),
                originals=next((r.originals for r in rows if r.io == "output" and r.originals), ())
                or next((r.originals for r in rows if r.originals), ()),
                grade=worst,
                cosine=cosine,
                error=error,
                cosine_special=cosine_special,
                error_special=error_special,
            )
        )
        for i in members:
            row_op[i] = index
    return ops, row_op, value_rows


def _worst(values: Sequence[float], pick: Any, name: str) -> tuple[float, bool]:
    """(the worst finite value or NaN, whether a judged value is NaN/inf: worse than any number)."""
    if not name or not values:
        return math.nan, False
    finite = [v for v in values if math.isfinite(v)]
    special = len(finite) < len(values)
    return (math.nan if special or not finite else float(pick(finite))), special


def _metric_figure(
    ops: Sequence[OpSummary], cosine_name: str, error_name: str, divergence: int | None
) -> dict[str, Any]:
    x = [o.order for o in ops]
    hover = [_hover(o) for o in ops]
    colours = [COLOURS[o.grade] for o in ops]
    traces: list[dict[str, Any]] = []
    if cosine_name:
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"{cosine_name} (worst output)",
                "x": x,
                "y": [_json_number(o.cosine) for o in ops],
                "customdata": [o.index for o in ops],
                "text": hover,
                "hovertemplate": "%{text}<extra></extra>",
                "line": {"color": "#1e88e5", "width": 1},
                "marker": {"color": colours, "size": 7},
            }
        )
    if error_name:
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"{error_name} (worst output, log)",
                "x": x,
                "y": [_log_ready(o.error) for o in ops],
                "yaxis": "y2",
                "customdata": [o.index for o in ops],
                "text": hover,
                "hovertemplate": "%{text}<extra></extra>",
                "line": {"color": "#8e24aa", "width": 1, "dash": "dot"},
                "marker": {"color": "#8e24aa", "size": 4, "symbol": "diamond"},
            }
        )
    traces += _special_traces(ops, hover)
    layout: dict[str, Any] = {
        "template": "none",
        "margin": {"t": 30, "r": 70, "b": 50, "l": 60},
        "hovermode": "closest",
        "legend": {"orientation": "h", "y": 1.1},
        "xaxis": {"title": {"text": "execution order (op index)"}},
        "yaxis": {"title": {"text": cosine_name}, "side": "left"},
        "yaxis2": {
            "title": {"text": f"{error_name} (log)"},
            "type": "log",
            "overlaying": "y",
            "side": "right",
            "exponentformat": "power",
            "dtick": 1,
        },
    }
    if divergence is not None:
        layout["shapes"] = [
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": divergence,
                "x1": divergence,
                "y0": 0,
                "y1": 1,
                "line": {"color": "#c62828", "width": 2, "dash": "dash"},
            }
        ]
        layout["annotations"] = [
            {
                "x": divergence,
                "y": 1,
                "xref": "x",
                "yref": "paper",
                "text": f"first divergence: op #{divergence}",
                "showarrow": False,
                "xanchor": "left",
                "yanchor": "top",
                "font": {"color": "#c62828"},
            }
        ]
    return {"data": traces, "layout": layout}


def _special_traces(ops: Sequence[OpSummary], hover: Sequence[str]) -> list[dict[str, Any]]:
    """NaN/inf values as red crosses at the worst edge of their axis: below the lowest cosine,
    above the highest error (a log axis has no place for inf, a cosine axis none for NaN)."""
    traces = []
    cosines = [o.cosine for o in ops if math.isfinite(o.cosine)]
    errors = [o.error for o in ops if math.isfinite(o.error) and o.error > 0]
    low = min([*cosines, 0.0])
    edges = (
        ("cosine_special", "y", low - 0.05 * (max([*cosines, 1.0]) - low + 1e-9)),
        ("error_special", "y2", max([*errors, ERROR_FLOOR]) * 10),
    )
    for field, axis, edge in edges:
        marked = [(o, h) for o, h in zip(ops, hover, strict=True) if getattr(o, field)]
        if not marked:
            continue
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "NaN/inf (worst)" + (" error" if axis == "y2" else " cosine"),
                "x": [o.order for o, _ in marked],
                "y": [edge] * len(marked),
                "yaxis": axis,
                "customdata": [o.index for o, _ in marked],
                "text": [h for _, h in marked],
                "hovertemplate": "%{text}<extra></extra>",
                "marker": {"color": COLOURS[Grade.RED], "size": 11, "symbol": "x"},
            }
        )
    return traces


def _graph_figure(
    graph: OpGraph, ops: Sequence[OpSummary], positions: Mapping[str, tuple[float, float]]
) -> dict[str, Any]:
    """Ops placed by networkx (``positions``), edges as one line trace, originals of fused ops
    hung below them."""
    lookup = graph.lookup()
    by_node: dict[str, OpSummary] = {}
    for op in ops:
        node = lookup.get(op.name)
        if node is not None:
            by_node.setdefault(node, op)
    edge_x: list[float | None] = []
    edge_y: list[float | None] = []
    for src, dst in graph.edges:
        (x0, y0), (x1, y1) = positions[src], positions[dst]
        edge_x += [x0, x1, None]
        edge_y += [y0, y1, None]
    widest = max(Counter(x for x, _ in positions.values()).values())
    big = len(graph.nodes) > BIG_GRAPH
    traces: list[dict[str, Any]] = [
        _line_trace(edge_x, edge_y, "data edges", {"color": "#b0bec5", "width": 1}),
    ]
    fused = [n for n in graph.nodes if graph.is_fused(n)]
    if fused and not big:
        traces += _original_traces(graph, fused, positions)
    node_x = [positions[n][0] for n in graph.nodes]
    node_y = [positions[n][1] for n in graph.nodes]
    grades = [by_node[n].grade if n in by_node else Grade.NONE for n in graph.nodes]
    text = [
        (_hover(by_node[n]) if n in by_node else _bare_hover(graph, n)) + _members_hover(graph, n, by_node)
        for n in graph.nodes
    ]
    outline = {"color": "#37474f", "width": 0 if big else 1}
    traces.append(
        {
            "type": "scatter",
            "mode": "markers",
            "x": _rounded(node_x),
            "y": _rounded(node_y),
            "text": text,
            "hovertemplate": "%{text}<extra></extra>",
            "name": "NPU ops (worst grade)" + (", originals in the hover text" if big and fused else ""),
            "customdata": [by_node[n].index if n in by_node else -1 for n in graph.nodes],
            "marker": {"color": [COLOURS[g] for g in grades], "size": 6 if big else 11, "line": outline},
        }
    )
    layout = {
        "template": "none",
        "height": min(900, 260 + 40 * widest),
        "margin": {"t": 30, "r": 20, "b": 20, "l": 20},
        "hovermode": "closest",
        "showlegend": True,
        "legend": {"orientation": "h", "y": 1.08},
        "xaxis": {"visible": False},
        "yaxis": {"visible": False},
        "dragmode": "pan",
    }
    return {"data": traces, "layout": layout}


def _original_traces(
    graph: OpGraph, fused: Sequence[str], positions: Mapping[str, tuple[float, float]]
) -> list[dict[str, Any]]:
    """The original ops of each fused op, in a short column under it, linked by dotted lines.

    The column stands a little right of the op, off the edges that leave it, and fits in the gap
    down to the next op of its layer (in a layer of one, the drawing's own height).
    """
    layers: dict[float, list[float]] = {}
    for x, y in positions.values():
        layers.setdefault(x, []).append(y)
    xs = sorted(layers)
    dx = 0.3 * min((b - a for a, b in itertools.pairwise(xs)), default=1.0)
    link_x: list[float | None] = []
    link_y: list[float | None] = []
    at_x: list[float] = []
    at_y: list[float] = []
    text: list[str] = []
    wide = max(layers.values(), key=len)
    usual_gap = (max(wide) - min(wide)) / (len(wide) - 1) if len(wide) > 1 else 1.0
    for node in fused:
        x, y = positions[node]
        below = [other for other in layers[x] if other < y]
        names = graph.originals[node]
        step = 0.8 * (y - max(below) if below else usual_gap) / (len(names) + 1)
        column = [y - k * step for k in range(1, len(names) + 1)]
        link_x += [x, *[x + dx] * len(names), None]
        link_y += [y, *column, None]
        at_x += [x + dx] * len(names)
        at_y += column
        text += [f"original op {_escape(name)}<br>fused into {_escape(node)}" for name in names]
    return [
        _line_trace(
            link_x, link_y, "fused op → original ops", {"color": "#7e57c2", "width": 1, "dash": "dot"}
        ),
        {
            "type": "scatter",
            "mode": "markers",
            "x": _rounded(at_x),
            "y": _rounded(at_y),
            "text": text,
            "hovertemplate": "%{text}<extra></extra>",
            "name": "original ops",
            "marker": {
                "color": "#ede7f6",
                "size": 6,
                "symbol": "diamond",
                "line": {"color": "#7e57c2", "width": 1},
            },
        },
    ]


def _line_trace(
    x: Sequence[float | None], y: Sequence[float | None], name: str, line: Mapping[str, Any]
) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "lines",
        "x": _rounded(x),
        "y": _rounded(y),
        "hoverinfo": "skip",
        "line": dict(line),
        "name": name,
    }


def _fused_members(graph: OpGraph, ops: Sequence[OpSummary]) -> dict[str, tuple[str, ...]]:
    """The graph's members of each fused op of the table, by the table's op name, where the table
    names other originals (TorchAir rows name one FX node; the graph knows every member)."""
    lookup = graph.lookup()
    found = {}
    for op in ops:
        node = lookup.get(op.name)
        if node is not None and graph.is_fused(node) and graph.originals[node] != op.originals:
            found[op.name] = graph.originals[node]
    return found


def _members_hover(graph: OpGraph, node: str, by_node: Mapping[str, OpSummary]) -> str:
    """The graph's own originals of a fused node, when the table named others (TorchAir rows
    name the FX node of the last member; the graph knows every member)."""
    members = graph.originals.get(node, ())
    shown = by_node[node].originals if node in by_node else ()
    if not graph.is_fused(node) or members == shown:
        return ""
    return "<br>fused from: " + _escape(", ".join(members))


def _bare_hover(graph: OpGraph, node: str) -> str:
    return f"{_escape(node)} ({_escape(graph.types.get(node, ''))})<br>no rows in the table"


def _hover(op: OpSummary) -> str:
    lines = [f"op #{op.order} {_escape(op.name)}" + (f" ({_escape(op.op_type)})" if op.op_type else "")]
    lines.append(f"grade: {op.grade.value}")
    if op.cosine_special:
        lines.append("worst cosine: NaN (NaN/inf in the data)")
    elif not math.isnan(op.cosine):
        lines.append(f"worst cosine: {op.cosine:.6f}")
    if op.error_special:
        lines.append("worst error: NaN/inf")
    elif not math.isnan(op.error):
        lines.append(f"worst error: {op.error:.6g}")
    if op.originals and op.originals != (op.name,):
        lines.append("originals: " + _escape(", ".join(op.originals)))
    return "<br>".join(lines)


def _escape(text: str) -> str:
    """Text for a Plotly label: Plotly reads a few HTML tags in labels, so data must not hold any."""
    return html.escape(text, quote=False)


def _rounded(values: Sequence[float | None]) -> list[float | None]:
    return [None if v is None else round(v, 5) for v in values]


def _json_number(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _log_ready(value: float) -> float | None:
    if not math.isfinite(value):
        return None
    return max(value, ERROR_FLOOR)


def _describe(table: ResultTable) -> str:
    family = "offline_data" if table.family == OFFLINE_DATA else f"torchair ({table.mode or 'unknown mode'})"
    return f"{table.source or 'result table'} · {family} family · {len(table.rows)} rows"


SEVERITY_ORDER = (Grade.RED, Grade.YELLOW, Grade.GREEN, Grade.NONE)
_COUNT_LABELS = {
    Grade.RED: "abnormal",
    Grade.YELLOW: "suspicious",
    Grade.GREEN: "normal",
    Grade.NONE: "not compared",
}


def _tally(grades: Sequence[RowGrade]) -> list[tuple[str, int, str]]:
    """(grade, rows of it, its label), most severe first: the page's counts."""
    tally = Counter(g.grade for g in grades)
    return [(g.value, tally[g], _COUNT_LABELS[g]) for g in SEVERITY_ORDER]


def _counts(grades: Sequence[RowGrade]) -> str:
    return "".join(
        f'<span class="count grade-{grade}"><b>{n}</b> {label}</span>' for grade, n, label in _tally(grades)
    )


def _findings(lines: Sequence[str], anchor: str = "findings") -> str:
    if not lines:
        return '<p class="note">The advisor has no findings.</p>'
    items = []
    for line in lines:
        kind, sep, rest = line.partition(":")
        body = (
            f'<span class="kind">{html.escape(kind)}</span>{html.escape(sep + rest)}'
            if sep
            else html.escape(line)
        )
        items.append(f"<li>{body}</li>")
    return f'<ul class="findings" id="{anchor}">' + "".join(items) + "</ul>"


def _error_choice(names: Sequence[str]) -> str:
    """The plot's error metric, chosen in the page (the verdict's own is the default)."""
    if len(names) < 2:
        return ""
    options = "".join(f'<option value="{html.escape(n)}">{html.escape(n)}</option>' for n in names)
    return (
        '<div class="controls"><label for="error-metric">error metric (log scale): </label>'
        f'<select id="error-metric">{options}</select></div>'
    )


def _section(anchor: str, key: str, heading: str, figures: Mapping[str, Any], empty: str = "") -> str:
    if key in figures:
        body = f'<div id="{key}" class="plot"></div>'
    else:
        body = f'<p class="note" id="{key}-missing">{html.escape(empty or "No metric columns to plot.")}</p>'
    return f'<h2 id="{anchor}-heading">{html.escape(heading)}</h2>{body}'


def _script_json(value: object) -> str:
    """JSON safe inside a <script> element: no '<', '>' or '&' to end it or open a comment."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return (
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{style}</style>
</head><body>
<h1>{heading}</h1>
{shards}<p class="source" id="source">{source}</p>
<div class="summary" id="summary">{counts}</div>
<h2>Advisor</h2>
{findings}
{metrics_section}
{graph_section}
<div id="details" hidden>
<h2 id="detail-title"></h2>
<div class="summary"><span id="detail-grade"></span><span id="detail-originals" class="count"></span></div>
<div class="scroll"><table><thead><tr id="detail-head"></tr></thead>
<tbody id="detail-rows"></tbody></table></div>
<div id="histogram" class="plot"></div>
</div>
<h2>Result table</h2>
<div class="controls">
<input type="search" id="filter" placeholder="filter rows (any cell contains…)" aria-label="filter rows">
<select id="grade-filter" aria-label="grade"><option value="">all grades</option>
<option value="red">red</option><option value="yellow">yellow</option><option value="green">green</option>
<option value="none">not compared</option></select>
<span id="row-count"></span> <button id="more" hidden>show more</button>
</div>
<div class="scroll"><table id="table"><thead><tr id="head"></tr></thead>
<tbody id="rows"></tbody></table></div>
<script type="application/json" id="report-data">{data}</script>
<script type="application/json" id="report-figures">{figures}</script>
{shard_data}<script>{plotly}</script>
<script>{script}</script>
</body></html>
"""
