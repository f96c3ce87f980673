"""The product end to end: simulated NPU dumps compared with golden runs through ``dumpcmp compare``."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dumpcmp.cli import app
from dumpcmp.commands.sim import simulate
from dumpcmp.host.sinks.xlsx_file import NUMERIC_COLUMNS

runner = CliRunner()


def compare(*args: str | Path) -> list[dict[str, str]]:
    out = Path(str(args[args.index("-o") + 1]))
    result = runner.invoke(app, ["compare", *map(str, args)])
    assert result.exit_code == 0, result.output
    (path,) = out.glob("result_*.csv")
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    header = rows[0]
    return [dict(zip(header, row, strict=True)) for row in rows[1:]]


def first_bad_output(rows: list[dict[str, str]], threshold: float = 0.99) -> dict[str, str] | None:
    for row in rows:
        cos = row["CosineSimilarity"]
        if row["Index"] and ":output:" in row["TensorIndex"] and cos != "NaN" and float(cos) < threshold:
            return row
    return None


@pytest.mark.parametrize(
    ("model", "fault_op"),
    [("zoo:small_cnn", "/block1.pw/conv/Conv"), ("zoo:transformer_block", "/mlp.fc1/MatMul")],
)
def test_first_bad_op_is_the_faulty_one(tmp_path: Path, model: str, fault_op: str) -> None:
    sim = simulate(model, tmp_path / "sim", faults=(f"{fault_op}=noise:0.5",), seed=3)
    rows = compare(
        "-tp", sim.npu_dump_dir, "-gp", sim.golden_dir, "-fr", sim.fusion_rule, "-o", tmp_path / "out"
    )
    bad = first_bad_output(rows)
    assert bad is not None
    assert bad["NPUDump"] == sim.fault_npu_ops[fault_op]
    assert fault_op in bad["GroundTruth"].split(",")


@pytest.mark.parametrize("model", ["zoo:small_cnn", "zoo:transformer_block"])
def test_clean_run_agrees_everywhere(tmp_path: Path, model: str) -> None:
    sim = simulate(model, tmp_path / "sim")
    rows = compare(
        "-tp", sim.npu_dump_dir, "-gp", sim.golden_dir, "-fr", sim.fusion_rule, "-o", tmp_path / "out"
    )
    outputs = [
        r for r in rows if r["Index"] and ":output:" in r["TensorIndex"] and r["CosineSimilarity"] != "NaN"
    ]
    assert outputs
    assert all(float(r["CosineSimilarity"]) >= 0.999 for r in outputs), [
        (r["TensorIndex"], r["CosineSimilarity"]) for r in outputs if float(r["CosineSimilarity"]) < 0.999
    ]


def test_fusion_on_against_fusion_off_with_close_fusion_rule(tmp_path: Path) -> None:
    fused = simulate("zoo:small_cnn", tmp_path / "on", seed=1)
    unfused = simulate("zoo:small_cnn", tmp_path / "off", seed=1, no_fusion=True)
    rows = compare(
        "-tp", fused.npu_dump_dir, "-gp", unfused.npu_dump_dir,
        "-fr", fused.fusion_rule, "-cfr", unfused.fusion_rule, "-o", tmp_path / "out",
    )  # fmt: skip
    compared = [r for r in rows if r["Index"] and r["CosineSimilarity"] != "NaN"]
    assert len(compared) >= 10
    assert all(float(r["CosineSimilarity"]) > 0.999 for r in compared)


def test_npu_against_npu_with_only_a_fusion_rule_is_refused(tmp_path: Path) -> None:
    sim = simulate("zoo:small_cnn", tmp_path / "sim")
    result = runner.invoke(
        app,
        ["compare", "-tp", str(sim.npu_dump_dir), "-gp", str(sim.npu_dump_dir), "-fr", str(sim.fusion_rule)],
    )
    assert result.exit_code == 1
    assert "-cfr" in result.output
    assert "Traceback" not in result.output


def test_quantised_model_against_float_golden_with_quant_rule(tmp_path: Path) -> None:
    sim = simulate("zoo:small_cnn", tmp_path / "sim", quantize=("/block1.pw/conv/Conv",))
    assert sim.quant_rule is not None
    rows = compare(
        "-tp", sim.npu_dump_dir, "-gp", sim.golden_dir, "-fr", sim.fusion_rule, "-qfr", sim.quant_rule,
        "-o", tmp_path / "out",
    )  # fmt: skip
    targets = [r for r in rows if r["Index"]]
    quant_rows = [r for r in targets if "Quant" in r["OpType"]]
    assert quant_rows, "the quantised layer shows up as AscendQuant/AscendDequant ops"
    compared = [r for r in targets if r["CosineSimilarity"] != "NaN" and ":output:" in r["TensorIndex"]]
    assert compared
    # int8 layers cost precision but stay recognisably the same network.
    assert all(float(r["CosineSimilarity"]) > 0.9 for r in compared)
    assert all(r["CompareFailReason"] for r in targets if r["CosineSimilarity"] == "NaN")


def test_quant_rule_is_refused_for_npu_vs_npu(tmp_path: Path) -> None:
    sim = simulate("zoo:small_cnn", tmp_path / "sim", quantize=("/block1.pw/conv/Conv",))
    assert sim.quant_rule is not None
    result = runner.invoke(app, ["compare", "-tp", str(sim.npu_dump_dir), "-gp", str(sim.npu_dump_dir),
                                 "-qfr", str(sim.quant_rule)])  # fmt: skip
    assert result.exit_code == 1
    assert "-qfr" in result.output


def test_overflow_column_flags_the_overflowing_op(tmp_path: Path) -> None:
    sim = simulate("zoo:small_cnn", tmp_path / "sim", faults=("/block2/Add=overflow",))
    rows = compare("-tp", sim.npu_dump_dir, "-gp", sim.golden_dir, "-fr", sim.fusion_rule,
                   "--overflow-detection", "-o", tmp_path / "out")  # fmt: skip
    flagged = [r for r in rows if r.get("OverFlow") == "YES"]
    assert flagged
    assert flagged[0]["NPUDump"] == sim.fault_npu_ops["/block2/Add"]
    first_row = rows[0]
    assert first_row["OverFlow"] == "NO"


def test_xlsx_holds_the_same_table(tmp_path: Path) -> None:
    import openpyxl

    sim = simulate("zoo:small_cnn", tmp_path / "sim", faults=("/block2/Add=bias:1",))
    out = tmp_path / "out"
    rows = compare(
        "-tp", sim.npu_dump_dir, "-gp", sim.golden_dir, "-fr", sim.fusion_rule, "--xlsx", "-o", out
    )
    (book_path,) = out.glob("result_*.xlsx")
    sheet = openpyxl.load_workbook(book_path).active
    assert sheet is not None
    values = [list(row) for row in sheet.iter_rows(values_only=True)]
    (csv_path,) = out.glob("result_*.csv")
    with csv_path.open(newline="") as handle:
        table = list(csv.reader(handle))
    assert len(table) == len(rows) + 1
    # Numbers are numbers (Excel sorts and filters them), equal to the CSV's text; the rest is text.
    as_text = [["" if c is None else c if isinstance(c, str) else float(c) for c in row] for row in values]
    expected = [[_cell(name, text) for name, text in zip(table[0], row, strict=True)] for row in table[1:]]
    assert as_text == [table[0], *expected]
    cosine = table[0].index("CosineSimilarity")
    assert all(isinstance(row[cosine], (int, float)) for row in values[1:] if row[cosine] != "NaN")


def _cell(column: str, text: str) -> str | float:
    return float(text) if column in NUMERIC_COLUMNS and text not in ("", "NaN", "inf", "-inf") else text
    return text


def test_rule_directory_picks_each_models_rule_file(tmp_path: Path) -> None:
    cnn = simulate("zoo:small_cnn", tmp_path / "cnn")
    tfm = simulate("zoo:transformer_block", tmp_path / "tfm")
    tree = tmp_path / "both"
    rules = tmp_path / "rules"
    golden = tmp_path / "golden"
    for sim in (cnn, tfm):
        assert sim.run_dir is not None
        _copy_tree(sim.npu_dump_dir, tree)
        _copy_tree(sim.golden_dir, golden)
        rules.mkdir(exist_ok=True)
        (rules / f"{sim.model_name}.json").write_bytes(sim.fusion_rule.read_bytes())
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["compare", "-tp", str(tree), "-gp", str(golden), "-fr", str(rules), "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    files = sorted(p.name for p in out.glob("*_result_*.csv"))
    assert len(files) == 2  # one per (device, model, step)
    assert any("small_cnn" in f for f in files) and any("transformer_block" in f for f in files)


def _copy_tree(src: Path, dst: Path) -> None:
    for path in src.rglob("*"):
        if path.is_file():
            target = dst / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())


def test_nan_fault_is_reported_with_counts(tmp_path: Path) -> None:
    sim = simulate("zoo:small_cnn", tmp_path / "sim", faults=("/block3/conv/Conv=nan",))
    rows = compare(
        "-tp", sim.npu_dump_dir, "-gp", sim.golden_dir, "-fr", sim.fusion_rule, "-o", tmp_path / "out"
    )
    npu_op = sim.fault_npu_ops["/block3/conv/Conv"]
    row = next(r for r in rows if r["NPUDump"] == npu_op and ":output:" in r["TensorIndex"])
    assert "NaN" in row["CompareFailReason"] or "nan" in row["CompareFailReason"].lower()
    assert row["CosineSimilarity"] == "NaN" or math.isnan(float(row["CosineSimilarity"]))


def test_bad_golden_files_give_reason_rows(tmp_path: Path) -> None:
    import numpy as np

    sim = simulate("zoo:small_cnn", tmp_path / "sim")
    # Outputs of the fused conv-bn-relu ops, which the NPU side is compared with.
    (garbage,) = sim.golden_dir.glob("_block1_dw_act_Relu.0.*.npy")
    (reshaped,) = sim.golden_dir.glob("_block1_pw_act_Relu.0.*.npy")
    garbage.write_bytes(b"\x93NUMPY not really")
    np.save(reshaped, np.zeros(7, dtype=np.float32))
    rows = compare(
        "-tp", sim.npu_dump_dir, "-gp", sim.golden_dir, "-fr", sim.fusion_rule, "-o", tmp_path / "out"
    )
    reasons = [r["CompareFailReason"] for r in rows if r["Index"]]
    assert any("damaged .npy header" in r and garbage.name in r for r in reasons)
    assert any(r.startswith("shape mismatch") and "[7]" in r for r in reasons)
    good = [r for r in rows if r["Index"] and r["CosineSimilarity"] not in ("NaN",)]
    assert len(good) > 10  # every other tensor is still compared


def _stats_simulation(tmp_path: Path, faults: tuple[str, ...] = ()) -> tuple[Path, Path, Path]:
    """small_cnn run under the acl.json `config acl --data stats` writes: stats CSVs, no tensors."""
    dump = tmp_path / "dump"
    dump.mkdir()
    config = tmp_path / "acl.json"
    made = runner.invoke(app, ["config", "acl", "--dump-path", str(dump), "--model", "small_cnn",
                               "--data", "stats", "--mode", "all", "-o", str(config)])  # fmt: skip
    assert made.exit_code == 0, made.output
    sim = simulate("zoo:small_cnn", tmp_path / "sim", acl_config=config, faults=faults, seed=2)
    assert all(p.suffix == ".csv" for p in dump.rglob("*") if p.is_file())
    return dump, sim.golden_dir, sim.fusion_rule


def _stats_compare(tmp_path: Path, dump: Path, golden: Path, rule: Path) -> tuple[str, list[dict[str, str]]]:
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["compare", "-tp", str(dump), "-gp", str(golden), "-fr", str(rule), "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    (path,) = out.glob("stats_result_*.csv")
    with path.open(newline="") as handle:
        return result.output, list(csv.DictReader(handle))


def test_statistics_dump_of_a_clean_run_passes(tmp_path: Path) -> None:
    output, rows = _stats_compare(tmp_path, *_stats_simulation(tmp_path))
    compared = [r for r in rows if r["Result"] != "N/A"]
    assert len(compared) >= 20
    assert all(r["Result"] == "PASS" for r in compared), [
        r["TensorIndex"] for r in compared if r["Result"] != "PASS"
    ]
    assert "statistics beyond threshold (|diff| / max(|NPU|, |golden|) > 0.5): 0" in output
    assert "ops compared" not in output and "nothing compared" not in output


def test_statistics_dump_finds_the_faulty_op(tmp_path: Path) -> None:
    fault = "/block1.pw/conv/Conv"
    output, rows = _stats_compare(tmp_path, *_stats_simulation(tmp_path, (f"{fault}=bias:1",)))
    first = next(r for r in rows if r["Result"] == "FAIL")
    assert ":output:" in first["TensorIndex"]
    assert first["NPUDump"] == "/block1.pw/conv/Conv/block1.pw/act/Relu"  # the op's name, not its file's
    line = next(x for x in output.splitlines() if x.startswith("first statistics divergence: "))
    assert f"index {first['Index']} Conv2D {first['NPUDump']}" in line
    assert line.endswith(".csv") and "dump file " in line


def test_statistics_divergence_after_an_op_not_dumped_says_so(tmp_path: Path) -> None:
    # /block2.pw/conv/Conv (task 8) not dumped: the Add after it became "index 7", and nothing said
    # an op before it was missing.
    dump, golden, rule = _stats_simulation(tmp_path, ("/block2/Add=bias:1",))
    (missing,) = dump.rglob("Conv2D._block2_pw_conv_Conv.8.*")
    missing.unlink()
    output, _ = _stats_compare(tmp_path, dump, golden, rule)
    lines = output.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("first statistics divergence"))
    assert "index 7 Add /block2/Add" in lines[first]
    assert lines[first + 1] == (
        "warning: it may start earlier: an op before it may not have been dumped (the dump's task ids "
        "skip from 7 to 9 right before it; index 7 counts the dumped ops only)"
    )


def test_statistics_rows_name_ops_as_tensor_rows_do(tmp_path: Path) -> None:
    # A statistics file holds no op name: its rows showed the sanitised file name
    # (_block2_Add where a tensor dump's rows say /block2/Add) and, as ground truth, the one
    # golden op looked up, not every original op of a fused op.
    (tmp_path / "stats").mkdir()
    dump, golden, rule = _stats_simulation(tmp_path / "stats")
    _, stats = _stats_compare(tmp_path / "stats", dump, golden, rule)
    sim = simulate("zoo:small_cnn", tmp_path / "real" / "sim", seed=2)
    out = tmp_path / "real" / "out"
    args = ["compare", "-tp", sim.npu_dump_dir, "-gp", golden, "-fr", rule, "-o", out]
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    ((path,),) = [list(out.glob("result_*.csv"))]
    with path.open(newline="") as handle:
        real = {
            r["TensorIndex"]: (r["NPUDump"], r["GroundTruth"])
            for r in csv.DictReader(handle)
            if r["TensorIndex"]
        }
    named = {r["TensorIndex"]: (r["NPUDump"], r["GroundTruth"]) for r in stats if r["TensorIndex"]}
    assert named == real
    assert any("," in truth for _, truth in named.values())  # fused ops name every original


def _chain_model(path: Path, names: tuple[str, ...]) -> Path:
    """An ONNX model of Sigmoid, Relu, Softmax nodes in a row, named ``names``."""
    import onnx
    from onnx import TensorProto, helper

    kinds = ("Sigmoid", "Relu", "Softmax")
    values = ["x", *(f"v{i}" for i in range(len(names) - 1)), "y"]
    nodes = [
        helper.make_node(kinds[i % 3], [values[i]], [values[i + 1]], name=name)
        for i, name in enumerate(names)
    ]
    spec = [1, 4, 4, 4]
    graph = helper.make_graph(
        nodes,
        path.stem,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, spec)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, spec)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_ops_sharing_a_golden_file_name_are_said_and_not_compared(tmp_path: Path) -> None:
    model = _chain_model(tmp_path / "coll.onnx", ("/x/sig", "_x_sig", "/out/sm"))
    sim = simulate(model, tmp_path / "sim", faults=("/x/sig=bias:0.5",))
    assert sim.golden_warnings == (
        "ops '/x/sig' and '_x_sig' share the golden file name _x_sig.*.npy: compare cannot tell their "
        "files apart and leaves their tensors uncompared; rename one of them",
    )
    result = runner.invoke(
        app,
        ["compare", "-tp", str(sim.npu_dump_dir), "-gp", str(sim.golden_dir), "-fr", str(sim.fusion_rule),
         "-o", str(tmp_path / "out"), "--advisor"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    said = "ops '/x/sig' and '_x_sig' share the golden file name _x_sig.*.npy"
    assert f"skipped {sim.golden_dir}/_x_sig.*.npy: {said}" in result.output
    assert "a second run here" not in result.output and "input inconsistency" not in result.output
    (path,) = (tmp_path / "out").glob("result_*.csv")
    with path.open(newline="") as handle:
        table = list(csv.reader(handle))
    rows = [dict(zip(table[0], row, strict=True)) for row in table[1:] if row[0]]
    shared = [r for r in rows if r["CosineSimilarity"] == "NaN"]
    assert {r["TensorIndex"] for r in shared} >= {"_x_sig:input:0", "_x_sig:output:0", "/out/sm:input:0"}
    assert all(said in r["CompareFailReason"] for r in shared)
    compared = {r["TensorIndex"] for r in rows if r["CosineSimilarity"] != "NaN"}
    assert "/out/sm:output:0" in compared and "trans_Cast_0:input:0" in compared


def test_op_names_too_long_for_a_file_name_are_written_as_cann_does(tmp_path: Path) -> None:
    long = "/" + "L" * 300
    sim = simulate(_chain_model(tmp_path / "long.onnx", (long, "r")), tmp_path / "sim")
    step = sim.dump_files[0].parent
    mapping = (step / "mapping.csv").read_text().splitlines()
    [(numeric, original)] = [line.split(",") for line in mapping]
    assert numeric.isdigit() and original.startswith("Sigmoid._" + "L" * 300 + ".")
    [(golden_numeric, golden_original)] = [
        line.split(",") for line in (sim.golden_dir / "mapping.csv").read_text().splitlines()
    ]
    assert golden_numeric.removesuffix(".npy").isdigit()
    assert golden_original.startswith("_" + "L" * 300 + ".0.")
    rows = compare(
        "-tp", sim.npu_dump_dir, "-gp", sim.golden_dir, "-fr", sim.fusion_rule, "-o", tmp_path / "out"
    )
    sigmoid = [r for r in rows if r["NPUDump"] == long]
    assert len(sigmoid) == 2 and all(float(r["CosineSimilarity"]) > 0.99 for r in sigmoid)


def test_golden_npy_made_dump_files_compare_with_the_fusion_rule_as_the_npy(tmp_path: Path) -> None:
    sim = simulate("zoo:small_cnn", tmp_path / "sim", faults=("/block2/Add=bias:0.5",))
    dumped = tmp_path / "golden_dumps"
    made = runner.invoke(app, ["convert", "npy2dump", "-i", str(sim.golden_dir), "-o", str(dumped)])
    assert made.exit_code == 0, made.output
    npy = compare(
        "-tp", sim.npu_dump_dir, "-gp", sim.golden_dir, "-fr", sim.fusion_rule, "-o", tmp_path / "a"
    )
    dump = compare("-tp", sim.npu_dump_dir, "-gp", dumped, "-fr", sim.fusion_rule, "-o", tmp_path / "b")
    columns = ("TensorIndex", "GroundTruth", "CosineSimilarity", "MaxAbsoluteError", "CompareFailReason")
    assert [[r[c] for c in columns] for r in dump] == [[r[c] for c in columns] for r in npy]
    bad = first_bad_output(dump)
    assert bad is not None and bad["NPUDump"] == "/block2/Add"
    by_name = runner.invoke(
        app, ["compare", "-tp", str(sim.npu_dump_dir), "-gp", str(dumped), "-o", str(tmp_path / "c")]
    )
    assert by_name.exit_code == 1 and "needs -fr/--fusion-rule-file" in by_name.output
