"""Google Model Explorer node-data overlays: one metric per file, keyed by the golden model's ops.

Model Explorer shows the original (ONNX / framework) model, so each value is filed under the
original op names a row was compared with; a fused NPU op's value goes to every one of its
originals. A TorchAir table's golden side is the FX graph: its values are filed under the FX node
named by each row's bench npy file (``add_1`` of ``add_1-aten.add.Tensor.OUTPUT.0.{ts}.npy``), the
node ids Model Explorer's PyTorch adapter gives an ExportedProgram's graph (``node.name``); a fused
GE op's outputs were compared with its last member's, so that FX node carries them. A fusion-off
comparison (GE against GE) has no FX side, and no overlay.

The file is Model Explorer's single-graph node-data form
``{"name", "results": {node: {"value"}}, "thresholds": [{"value", "bgColor"}]}``, which its UI
applies to the graph on screen (``--node_data_paths=...`` or "Load node data" in the UI).
Each node gets its op's worst output value: the lowest cosine, the highest error.

Colours follow the row grades of the xlsx and HTML report (``grading.grade_rows``), given per node
as ``bgColor`` (which Model Explorer puts before the thresholds): one rule for every report. A
value must be a number, so NaN/inf in the data (the worst a value can be) is written as the
metric's worst end (cosine -1, error 1e308) with the red of its grade.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from dumpcmp.host.report.grading import Grade, GradeThresholds, RowJudge, grade_rows
from dumpcmp.host.report.table import OFFLINE_DATA, ResultTable, TensorResult, bench_side, fx_node

RED, YELLOW, GREEN = "#e53935", "#fdd835", "#43a047"


@dataclass(frozen=True, slots=True)
class Overlay:
    """One metric as node data: which column, which way is worse, the colour bands."""

    label: str  # in the file name and Model Explorer's data name
    columns: tuple[str, ...]  # the metric column, by family (the first one the table has)
    worst: Callable[[Sequence[float]], float]
    # (upper bound, colour): Model Explorer colours a value with the first band it is <= to.
    bands: tuple[tuple[float, str], ...]
    nan_value: float  # the metric's worst end: what NaN/inf in the data is written as


OVERLAYS = (
    Overlay("cosine", ("CosineSimilarity", "Cosine"), min, ((0.9, RED), (0.99, YELLOW), (1.0, GREEN)), -1.0),
    Overlay(
        "max_rel_err",
        ("MaxRelativeError", "MaxRelativeErr"),
        max,
        ((0.01, GREEN), (0.5, YELLOW), (1e308, RED)),
        1e308,
    ),
)


def node_data(table: ResultTable, overlay: Overlay) -> dict[str, object] | None:
    """The overlay's document for ``table``; None when the table has no such column, or names
    no golden ops (a TorchAir table of GE against GE)."""
    column = next((c for c in overlay.columns if c in table.header), None)
    if column is None:
        return None
    judge = RowJudge(table, GradeThresholds())
    grades = grade_rows(table)
    values: dict[str, list[tuple[float, Grade]]] = {}
    for row, names in _golden_nodes(table):
        # A node's colour is its result: the op's outputs, not the inputs it was handed; a row
        # whose numbers are NaN for NaN/inf in the data is judged, and the worst of all.
        if row.io != "output" or not judge.judged(row):
            continue
        value = row.metric(column)
        if row.cells[table.header.index(column)].strip().endswith("%"):  # TorchAir statistics mode
            value /= 100
        for name in names:
            values.setdefault(name, []).append((value, grades[row.position].grade))
    if not values and table.family != OFFLINE_DATA:
        return None  # GE against GE: no FX node to file anything under
    results = {name: _result(overlay, found) for name, found in values.items()}
    return {
        "name": f"dumpcmp {column}",
        "results": results,
        "thresholds": [{"value": limit, "bgColor": colour} for limit, colour in overlay.bands],
    }


def _golden_nodes(table: ResultTable) -> list[tuple[TensorResult, tuple[str, ...]]]:
    """Each target row with the golden model's nodes it was compared with."""
    if table.family == OFFLINE_DATA:
        return [(row, row.originals) for row in table.targets()]
    where = table.header.index("Data Name") if "Data Name" in table.header else None
    found: list[tuple[TensorResult, tuple[str, ...]]] = []
    for row in table.targets():
        node = fx_node(bench_side(row.cells[where])) if where is not None else ""
        found.append((row, (node,) if node else ()))
    return found


_GRADE_COLOUR = {Grade.RED: RED, Grade.YELLOW: YELLOW, Grade.GREEN: GREEN}
_SEVERITY = (Grade.NONE, Grade.GREEN, Grade.YELLOW, Grade.RED)


def _result(overlay: Overlay, found: Sequence[tuple[float, Grade]]) -> dict[str, object]:
    finite = [v for v, _ in found if math.isfinite(v)]
    value = overlay.worst(finite) if len(finite) == len(found) else overlay.nan_value
    grade = max((g for _, g in found), key=_SEVERITY.index)
    colour = _GRADE_COLOUR.get(grade)
    return {"value": value, "bgColor": colour} if colour else {"value": value}


def write_overlays(table: ResultTable, stem: Path) -> list[Path]:
    """``{stem}_model_explorer_{label}.json`` for each overlay the table has a column for."""
    written = []
    for overlay in OVERLAYS:
        doc = node_data(table, overlay)
        if doc is None:
            continue
        target = stem.with_name(f"{stem.name}_model_explorer_{overlay.label}.json")
        from dumpcmp.host.report.files import write_new_text

        text = json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False)
        written.append(write_new_text(target, text))  # an earlier run's overlay stays
    return written
