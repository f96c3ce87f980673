"""End-to-end offline comparison on the real ATC rule files, with dumps and golden data made to fit."""

from __future__ import annotations

import csv
import shutil
import zlib
from pathlib import Path

import numpy as np
import pytest

from dumpcmp.errors import DumpcmpError, MatchError
from dumpcmp.host.fusion_rules import RuleOp, TensorDesc, load_rules
from dumpcmp.host.matcher import GoldenRef, Matcher
from dumpcmp.host.offline import run_compare
from dumpcmp.host.request import CompareRequest, DetailRequest
from dumpcmp.host.summary import summarize
from dumpcmp.host.verdict import Thresholds
from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, TensorKind, read_dump, write_dump
from dumpcmp.proto.dtypes import Format, dtype_by_name, format_by_name, numpy_dtype
from dumpcmp.proto.layouts import to_device
from dumpcmp.proto.names import dump_file_name, golden_file_name

NOT_EXECUTED = {"Data", "Const", "NetOutput", "AtomicAddrClean", "Send", "Recv", "StreamActive"}
STAMP0 = 1763700000000000


def _values(key: str, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(key.encode()))
    return rng.standard_normal(shape).astype(np.float32)


def _device_tensor(kind: TensorKind, index: int, desc: TensorDesc, logical: np.ndarray) -> DumpTensor | None:
    """The tensor as the NPU would dump it, or None when the desc is one we do not fake."""
    try:
        data_type = dtype_by_name(desc.device_dtype)
        fmt = format_by_name(desc.device_format)
        dtype = numpy_dtype(data_type)
    except (KeyError, DumpcmpError):
        return None
    if not np.issubdtype(dtype, np.floating):
        return None
    values = logical.astype(dtype)
    if fmt in (Format.NC1HWC0, Format.FRACTAL_NZ, Format.FRACTAL_Z):
        device = to_device(values, fmt, Format.NCHW if values.ndim == 4 else Format.ND)
    elif fmt in (Format.ND, Format.NCHW, Format.NHWC):
        device = values
    else:
        return None
    if tuple(device.shape) != desc.device_shape:
        return None
    return DumpTensor.from_array(
        kind, index, device, format=fmt, original_shape=logical.shape, data_type=data_type
    )


def make_case(rule_file: Path, root: Path) -> tuple[Path, Path, dict[str, np.ndarray]]:
    """A dump tree and a golden directory for every executed op of ``rule_file``."""
    rules = load_rules(rule_file)
    matcher = Matcher(rules)
    golden: dict[str, np.ndarray] = {}
    dump_dir = root / "npu" / "20261122000000" / "0" / rules.name / "1" / "0"
    stamp = STAMP0
    for op in rules.ops:
        if op.type in NOT_EXECUTED or not op.outputs:
            continue
        tensors = _op_tensors(op, matcher, golden)
        if not tensors:
            continue
        stamp += 1
        inputs = tuple(t for t in tensors if t.kind is TensorKind.INPUT)
        outputs = tuple(t for t in tensors if t.kind is TensorKind.OUTPUT)
        dump = DumpFile("", Layout.V2, "2.0", stamp, op.name, inputs=inputs, outputs=outputs)
        write_dump(dump_dir / dump_file_name(op.type, op.name, op.id, 1, stamp), dump)
    golden_dir = root / "golden"
    golden_dir.mkdir()
    for key, array in golden.items():
        name, _, index = key.rpartition(".")
        np.save(golden_dir / golden_file_name(name, int(index), STAMP0), array)
    return root / "npu", golden_dir, golden


def _op_tensors(op: RuleOp, matcher: Matcher, golden: dict[str, np.ndarray]) -> list[DumpTensor]:
    tensors = []
    for kind, descs in (
        (TensorKind.INPUT, op.input_descs[: len(op.data_inputs)]),
        (TensorKind.OUTPUT, op.outputs),
    ):
        for index, desc in enumerate(descs):
            if not desc.origin_shape:
                continue
            ref = matcher.refs_for(op.name, kind.value, index)  # type: ignore[arg-type]
            if isinstance(ref, GoldenRef):
                logical = golden.setdefault(ref.key, _values(ref.key, desc.origin_shape))
                if logical.shape != desc.origin_shape:
                    continue
            else:
                logical = _values(f"{op.name}:{kind.value}:{index}", desc.origin_shape)
            tensor = _device_tensor(kind, index, desc, logical)
            if tensor is not None:
                tensors.append(tensor)
    return tensors


def read_result(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    header = rows[0]
    # Two columns are called DataType; key the second one apart.
    header = [
        h if (h != "DataType" or i == header.index("DataType")) else "GoldenDataType"
        for i, h in enumerate(header)
    ]
    return [dict(zip(header, r, strict=True)) for r in rows[1:]]


@pytest.fixture(scope="module")
def tdnn_case(shared_fixtures: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The tdnn rule file with a dump tree and golden directory made to fit it (built once)."""
    rule_file = shared_fixtures / "atc" / "tdnn.om.json"
    npu, golden_dir, _ = make_case(rule_file, tmp_path_factory.mktemp("tdnn"))
    return rule_file, npu, golden_dir


def _check_all_matched(rows: list[dict[str, str]]) -> None:
    compared = [r for r in rows if r["CosineSimilarity"] not in ("NaN", "")]
    assert len(compared) >= 5
    for row in compared:
        # fp16 rounding of N(0,1) values keeps the cosine this close to 1.
        assert float(row["CosineSimilarity"]) > 0.9999, row
        assert row["GroundTruth"] != "*"
    for row in rows:
        if row["GroundTruth"] == "*" and row["Index"]:
            assert row["CompareFailReason"], row  # every unmatched tensor says why


def test_tdnn_rule_file_maps_every_dumped_tensor(tdnn_case: tuple[Path, Path, Path], tmp_path: Path) -> None:
    rule_file, npu, golden_dir = tdnn_case
    outcome = run_compare(CompareRequest(npu, golden_dir, fusion_rule=rule_file, out_dir=tmp_path, jobs=2))
    (shard,) = outcome.shards
    rows = read_result(shard.result_file)
    _check_all_matched(rows)
    assert shard.result_file.name.startswith("result_")
    assert "OpSequence" in rows[0]
    fused = [r for r in rows if "," in r["GroundTruth"]]
    assert fused, "tdnn has many-to-one fusions; their GroundTruth lists every original op"


def test_msquickcmp_rule_file_maps_every_dumped_tensor(shared_fixtures: Path, tmp_path: Path) -> None:
    rule_file = shared_fixtures / "atc" / "msquickcmp_model.json"
    npu, golden_dir, _ = make_case(rule_file, tmp_path)
    outcome = run_compare(CompareRequest(npu, golden_dir, fusion_rule=rule_file, out_dir=tmp_path / "out"))
    rows = read_result(outcome.shards[0].result_file)
    _check_all_matched(rows)
    cast_rows = [r for r in rows if r["NPUDump"] == "trans_Cast_0"]
    # GE inserted this Cast (no original op); its output is compared with the graph input it casts.
    assert any(r["GroundTruth"] == "boxes_all" for r in cast_rows)


def test_corrupt_files_give_reason_rows_and_leave_the_rest_intact(
    tdnn_case: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    rule_file, pristine, golden_dir = tdnn_case
    npu = tmp_path / "npu"
    shutil.copytree(pristine, npu)
    clean = run_compare(CompareRequest(npu, golden_dir, fusion_rule=rule_file, out_dir=tmp_path / "clean"))
    files = sorted(p for p in npu.rglob("*") if p.is_file())
    truncated, garbage = files[1], files[3]
    bad_ops = {read_dump(truncated).op_name, read_dump(garbage).op_name}
    truncated.write_bytes(truncated.read_bytes()[:-7])
    garbage.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00" + b"\xff" * 40)
    broken = run_compare(CompareRequest(npu, golden_dir, fusion_rule=rule_file, out_dir=tmp_path / "broken"))

    def target_rows(rows: list[dict[str, str]]) -> list[tuple[str, ...]]:
        keys = (
            "TensorIndex",
            "GroundTruth",
            "CosineSimilarity",
            "MaxAbsoluteError",
            "KullbackLeiblerDivergence",
        )
        return [tuple(r[k] for k in keys) for r in rows if r["Index"] and not r["TensorIndex"].endswith(":*")]

    clean_rows = read_result(clean.shards[0].result_file)
    broken_rows = read_result(broken.shards[0].result_file)
    bad_rows = [r for r in broken_rows if r["TensorIndex"].endswith(":*")]
    assert len(bad_rows) == 2
    assert all("corrupt dump file" in r["CompareFailReason"] for r in bad_rows)
    expected = [r for r in target_rows(clean_rows) if r[0].rsplit(":", 2)[0] not in bad_ops]
    assert target_rows(broken_rows) == expected


def test_npu_vs_golden_npy_needs_a_rule_file(tdnn_case: tuple[Path, Path, Path], tmp_path: Path) -> None:
    _, npu, golden_dir = tdnn_case
    with pytest.raises(MatchError, match="-fr"):
        run_compare(CompareRequest(npu, golden_dir, out_dir=tmp_path))


def test_close_fusion_rule_needs_fusion_rule(tdnn_case: tuple[Path, Path, Path], tmp_path: Path) -> None:
    rule_file, npu, _ = tdnn_case
    with pytest.raises(MatchError, match="-cfr"):
        run_compare(CompareRequest(npu, npu, close_fusion_rule=rule_file, out_dir=tmp_path))


def test_npu_vs_npu_by_name_detects_a_changed_op(shared_fixtures: Path, tmp_path: Path) -> None:
    src = shared_fixtures / "dumps" / "20261121093000"
    outcome = run_compare(CompareRequest(src, src, out_dir=tmp_path / "same"))
    assert all(r.cosine == pytest.approx(1.0) for r in outcome.rows if r.index is not None)
    lines = summarize(outcome, Thresholds())
    assert any(line.startswith("tensors beyond thresholds (CosineSimilarity < 0.99") for line in lines)
    assert lines[-2].endswith("): 0")
    assert lines[-1].startswith("no divergence: all ")


def test_detail_writes_summary_and_csv(shared_fixtures: Path, tmp_path: Path) -> None:
    src = shared_fixtures / "dumps" / "20261121093000"
    request = CompareRequest(
        src, src, out_dir=tmp_path / "out", detail=DetailRequest("stem/conv1/Conv2D.fused relu", 0, "output")
    )
    outcome = run_compare(request)
    names = sorted(p.name for p in outcome.detail_files)
    assert any(n.endswith("_summary.txt") for n in names)
    assert any(n.endswith(".csv") for n in names)


def test_missing_target_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DumpcmpError, match="does not exist"):
        run_compare(CompareRequest(tmp_path / "nope", tmp_path, out_dir=tmp_path))


def test_worker_processes_give_the_same_result_file(
    tdnn_case: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dumpcmp.host import workers

    rule_file, npu, pristine = tdnn_case
    golden_dir = tmp_path / "golden"
    shutil.copytree(pristine, golden_dir)
    np.save(golden_dir / "never_dumped.0.1763700000000000.npy", np.ones(3, dtype=np.float32))
    threads = run_compare(
        CompareRequest(npu, golden_dir, fusion_rule=rule_file, out_dir=tmp_path / "t", jobs=2)
    )
    monkeypatch.setattr(workers, "PROCESS_MIN_FILES", 0)
    processes = run_compare(
        CompareRequest(npu, golden_dir, fusion_rule=rule_file, out_dir=tmp_path / "p", jobs=2)
    )
    text = [s.result_file.read_text() for s in (*threads.shards, *processes.shards)]
    assert text[0] == text[1]
    golden_only = [r.ground_truth for r in processes.rows if r.index is None]
    assert golden_only == ["never_dumped.0"]  # what workers looked up is known to the parent


def test_caffe_golden_dumps_in_the_legacy_layout_are_read(tmp_path: Path) -> None:
    """Golden directories may hold ``{op}.{output}.{timestamp}.pb`` files (all-in-protobuf dumps)."""
    from dumpcmp.proto._gen import dump_data_pb2 as pb

    values = np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4)
    name = "conv1/Conv2D"
    device = DumpTensor.from_array(
        TensorKind.OUTPUT, 0, values.astype(np.float16), original_shape=values.shape
    )
    npu = tmp_path / "npu" / "20261122000000" / "0" / "net" / "1" / "0"
    dump = DumpFile("", Layout.V2, "2.0", STAMP0, name, outputs=(device,))
    write_dump(npu / dump_file_name("Conv2D", name, 1, 1, STAMP0), dump)
    legacy = pb.DumpData(version="1.0", op_name=name, dump_time=STAMP0)
    out = legacy.output.add(data_type=1, format=2, size=values.nbytes)
    out.shape.dim.extend(values.shape)
    out.original_shape.dim.extend(values.shape)
    out.data = values.tobytes()
    golden = tmp_path / "golden"
    golden.mkdir()
    (golden / f"conv1_Conv2D.0.{STAMP0}.pb").write_bytes(legacy.SerializeToString())
    rules = tmp_path / "rules.json"
    rules.write_text(
        '{"name": "net", "graph": [{"name": "net", "op": [{"name": "conv1/Conv2D", "type": "Conv2D", "id": 1,'
        ' "output_desc": [{"dtype": "DT_FLOAT16", "layout": "ND", "shape": {"dim": [2, 3, 4]}}]}]}]}'
    )
    outcome = run_compare(
        CompareRequest(tmp_path / "npu", golden, fusion_rule=rules, out_dir=tmp_path / "out")
    )
    (row,) = [r for r in outcome.rows if r.index is not None]
    assert row.ground_truth == "conv1/Conv2D"
    assert row.cosine == pytest.approx(1.0, abs=1e-6)
    assert row.golden_dtype == "DT_FLOAT"


def test_two_sessions_in_one_dump_path_get_a_result_file_each(shared_fixtures: Path, tmp_path: Path) -> None:
    src = shared_fixtures / "dumps" / "20261121093000"
    tree = tmp_path / "dump"
    for session in ("20261121093000", "20261121100000"):
        shutil.copytree(src, tree / session)
    outcome = run_compare(CompareRequest(tree, src, out_dir=tmp_path / "out"))
    names = sorted(s.result_file.name for s in outcome.shards)
    assert [n.split("_result_")[0] for n in names] == [
        "20261121093000_0_demo_net_0",
        "20261121100000_0_demo_net_0",
    ]
    assert all(len([r for r in s.rows if r.index is not None]) == 12 for s in outcome.shards)


def test_two_runs_in_one_dump_path_name_every_shard_by_its_run(shared_fixtures: Path, tmp_path: Path) -> None:
    """Only the clashing shards had their run's directory in front: the first run's step 1 read
    as another run's ("0_demo_net_1" beside "20261121093000_0_demo_net_0")."""
    src = shared_fixtures / "dumps" / "20261121093000"
    tree = tmp_path / "dump"
    shutil.copytree(src, tree / "20261121093000")
    step = Path("0", "demo_net", "1")
    shutil.copytree(src / step / "0", tree / "20261121093000" / step / "1")
    shutil.copytree(src, tree / "20261121100000")
    outcome = run_compare(CompareRequest(tree, src, out_dir=tmp_path / "out"))
    names = sorted(s.result_file.name for s in outcome.shards)
    assert [n.split("_result_")[0] for n in names] == [
        "20261121093000_0_demo_net_0",
        "20261121093000_0_demo_net_1",
        "20261121100000_0_demo_net_0",
    ]


def test_a_dump_file_against_a_dump_file_compares_every_input_and_output(tmp_path: Path) -> None:
    # Only output 0 was compared: a second output that disagreed gave "no divergence".
    def dump(path: Path, flags: np.ndarray) -> Path:
        tensors = {
            "inputs": (DumpTensor.from_array(TensorKind.INPUT, 0, np.arange(6, dtype=np.float32)),),
            "outputs": (
                DumpTensor.from_array(TensorKind.OUTPUT, 0, np.arange(6, dtype=np.float16)),
                DumpTensor.from_array(TensorKind.OUTPUT, 1, flags),
            ),
        }
        write_dump(path, DumpFile("", Layout.V2, "2.0", 1, "cast", **tensors))
        return path

    target = dump(tmp_path / "Cast.cast.3.2.1700000000000002", np.array([1.0, 0.0, 1.0], dtype=np.float32))
    golden = dump(tmp_path / "Cast.cast.3.2.1700000000000001", np.array([0.0, 1.0, 0.0], dtype=np.float32))
    outcome = run_compare(CompareRequest(target, golden, out_dir=tmp_path / "out"))
    (shard,) = outcome.shards
    assert shard.result_file is not None
    rows = list(csv.DictReader(shard.result_file.read_text().splitlines()))
    assert [r["TensorIndex"] for r in rows] == ["cast:input:0", "cast:output:0", "cast:output:1"]
    assert [r["CosineSimilarity"] for r in rows[:2]] == ["1.000000", "1.000000"]
    assert float(rows[2]["CosineSimilarity"]) < 0.5
    assert "first divergence" in "\n".join(summarize(outcome, Thresholds()))
