"""Model Explorer node-data overlays: its single-graph json, keyed by the golden model's ops."""

from __future__ import annotations

import json
from pathlib import Path

from dumpcmp.host.report.model_explorer import GREEN, OVERLAYS, RED, YELLOW, node_data, write_overlays
from dumpcmp.host.report.table import table_from_cells
from tests.host.report.reports_kit import chain_cells


def test_values_are_filed_under_every_original_op_worst_output_first() -> None:
    cells = chain_cells(3, bad_from=2)
    cells[6][5] = "/layer2/conv/Conv,/layer2/bn/BatchNormalization"  # op 2's output: a fused op
    cells.append([*cells[6][:7], "/layer2/conv/Conv:output:1", "[1]", "0.900000", *cells[6][10:]])
    cosine, max_rel = (node_data(table_from_cells(cells), overlay) for overlay in OVERLAYS)
    assert cosine is not None and max_rel is not None
    results = cosine["results"]
    assert isinstance(results, dict)
    assert results["/layer0/conv/Conv"] == {"value": 1.0, "bgColor": GREEN}
    # Op 2's two outputs: 0.5 and 0.9, the node shows the lower; both originals carry it.
    assert results["/layer2/conv/Conv"] == results["/layer2/bn/BatchNormalization"]
    assert results["/layer2/conv/Conv"]["value"] == 0.5
    assert max_rel["results"]["/layer2/conv/Conv"]["value"] == 2.5  # type: ignore[index]
    # The colour is the row grade of the xlsx and HTML report, whatever the band would say.
    assert (
        results["/layer2/conv/Conv"]["bgColor"] == max_rel["results"]["/layer2/conv/Conv"]["bgColor"] == RED
    )  # type: ignore[index]
    assert cosine["thresholds"][0] == {"value": 0.9, "bgColor": "#e53935"}  # type: ignore[index]


def test_nan_is_the_worst_number_in_red_and_the_file_is_strict_json(tmp_path: Path) -> None:
    cells = chain_cells(2)
    cells[2][9] = "NaN"  # op 0's output cosine
    written = write_overlays(table_from_cells(cells), tmp_path / "result_1")
    assert [p.name for p in written] == [
        "result_1_model_explorer_cosine.json",
        "result_1_model_explorer_max_rel_err.json",
    ]
    doc = json.loads(written[0].read_text(), parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    # Model Explorer's values are numbers: NaN is the cosine's worst end, red.
    assert doc["results"]["/layer0/conv/Conv"] == {"value": -1.0, "bgColor": RED}
    # Model Explorer takes a file as one graph's data when "results" has no "results" inside.
    assert "results" not in doc["results"]


TORCHAIR_HEADER = ["API Name", "Stack Info", "Data Name", "Cosine", "EucDist", "MaxAbsErr",
                   "MaxRelativeErr", "One Thousandth Err Ratio", "Five Thousandth Err Ratio",
                   "Requires_grad Consistent", "Result", "Accuracy Reached or Not",
                   "Err_message"]  # fmt: skip


def _torchair_row(api: str, bench: str, cosine: str) -> list[str]:
    return [api, "", f"[ge, {bench}]", cosine, "0", "0", "0", "1", "1", "N/A", "PASS", "Yes", ""]


def test_a_torchair_table_is_keyed_by_the_fx_node_of_each_bench_file() -> None:
    rows = [
        _torchair_row(
            "Add_1.input.0", "/fx/mm-aten.mm.default.OUTPUT.0.7.npy", "0.1"
        ),  # an input: not its colour
        _torchair_row("Add_1.output.0", "/fx/add_1-aten.add.Tensor.OUTPUT.0.7.npy", "0.95"),
        _torchair_row("ReluSigmoid.output.0", "/fx/sigmoid-aten.sigmoid.default.OUTPUT.0.7.npy", "1.0"),
        _torchair_row("trans_Cast_2.output.0", "/ge/Cast.trans_Cast_2.3.0.7 input 0", "1.0"),  # no FX node
    ]
    cosine = node_data(table_from_cells([TORCHAIR_HEADER, *rows]), OVERLAYS[0])
    assert cosine is not None
    green = {"bgColor": GREEN}  # the row grades' colour
    assert cosine["results"] == {"add_1": {"value": 0.95, **green}, "sigmoid": {"value": 1.0, **green}}


def test_a_torchair_table_of_ge_against_ge_has_no_fx_nodes_to_key_by() -> None:
    rows = [_torchair_row("Add.output.0", "/off/Add.Add.1.0.7 output 0", "1.0")]
    assert node_data(table_from_cells([TORCHAIR_HEADER, *rows]), OVERLAYS[0]) is None


def test_torchair_statistics_percentages_are_fractions_in_the_overlay() -> None:
    header = ["API Name", "Data Name", "Max diff", "Min diff", "Mean diff", "L2norm diff", "MaxRelativeErr",
              "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr", "Result", "Err_message"]  # fmt: skip
    row = ["Mul.output.0", "[ge, /fx/mul-aten.mul.Tensor.OUTPUT.0.7.npy]", "1", "1", "1", "1", "25.0%",
           "0%", "1%", "1%", "FAIL", "max"]  # fmt: skip
    max_rel = node_data(table_from_cells([header, row]), OVERLAYS[1])
    # FAIL by the statistics verdict, no red rule (0.25 < 0.5): yellow, as in the xlsx.
    assert max_rel is not None and max_rel["results"] == {"mul": {"value": 0.25, "bgColor": YELLOW}}
