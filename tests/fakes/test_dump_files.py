"""Dump files: bit-exact payloads in device layouts, headers and names as the runtime writes them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dumpcmp.fakes.dump_writer import device_array
from dumpcmp.fakes.executor import OpRun
from dumpcmp.fakes.npu import SimulatedAcl
from dumpcmp.proto.codec import is_complete, read_dump
from dumpcmp.proto.dtypes import Format
from dumpcmp.proto.names import parse_dump_name, sanitize_dump_name


def _config(tmp_path: Path, **dump: Any) -> str:
    dump_dir = tmp_path / "dump"
    dump_dir.mkdir(parents=True, exist_ok=True)
    body = {"dump_path": str(dump_dir), "dump_list": [{}], "dump_mode": "all", **dump}
    path = tmp_path / "acl.json"
    path.write_text(json.dumps({"dump": body}))
    return str(path)


def _simulate(
    tmp_path: Path, model: str = "zoo:small_cnn", steps: int = 1, **kwargs: Any
) -> tuple[SimulatedAcl, list[OpRun]]:
    runs: list[OpRun] = []
    npu = SimulatedAcl(on_op=runs.append, **kwargs)
    assert npu.init() == 0 and npu.set_device(0) == 0 and npu.init_dump() == 0
    assert npu.set_dump(_config(tmp_path)) == 0
    model_id, ret = npu.load_from_file(model)
    assert ret == 0
    inputs = [
        np.random.default_rng(0).standard_normal(s.shape).astype(s.dtype)
        for s in npu.compiled(model_id).inputs
    ]
    for _ in range(steps):
        _, ret = npu.execute(model_id, inputs)
        assert ret == 0
    assert npu.finalize_dump() == 0
    return npu, runs


@pytest.mark.parametrize("model", ["zoo:small_cnn", "zoo:transformer_block"])
def test_payloads_are_bit_exact_and_convert_back_to_the_logical_tensors(tmp_path: Path, model: str) -> None:
    npu, runs = _simulate(tmp_path, model)
    files = npu.written
    assert len(files) == len(runs)  # Data, Const and NetOutput write nothing; every task writes one file
    layouts = set()
    for path, run in zip(files, runs, strict=True):
        dump = read_dump(path)
        pairs = [(dump.inputs, run.inputs, run.op.inputs), (dump.outputs, run.outputs, run.op.outputs)]
        for tensors, logical, descs in pairs:
            assert len(tensors) == len(logical)
            for tensor, value, spec in zip(tensors, logical, descs, strict=True):
                assert tensor.array().tobytes() == device_array(value, spec.desc).tobytes()
                back = tensor.logical()
                assert back.shape == value.shape and back.tobytes() == value.tobytes()
                layouts.add(Format(tensor.format))
    assert Format.NC1HWC0 in layouts or Format.FRACTAL_NZ in layouts


def test_headers_and_names_follow_the_runtime(tmp_path: Path) -> None:
    npu, runs = _simulate(tmp_path)
    stamps = []
    for path, run in zip(npu.written, runs, strict=True):
        name = parse_dump_name(path.name)
        dump = read_dump(path)
        assert dump.version == "2.0" and not dump.attrs
        assert dump.op_name == run.op.name  # raw, '/' and '.' included
        assert name.op_name == sanitize_dump_name(run.op.name) and name.op_type == run.op.type
        assert dump.dump_time == name.timestamp and len(str(name.timestamp)) == 16
        for tensor, out in zip(dump.outputs, run.op.outputs, strict=True):
            assert tensor.original_op is not None
            assert (tensor.original_op.name, tensor.original_op.output_index) == (
                out.origin_name,
                out.origin_index,
            )
        stamps.append(name.timestamp)
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    conv = read_dump(next(p for p in npu.written if "stem_conv" in p.name))
    assert conv.inputs[1].format == Format.FRACTAL_Z and conv.outputs[0].format == Format.NC1HWC0
    assert conv.outputs[0].shape == (1, 1, 16, 16, 16) and conv.outputs[0].original_shape == (1, 16, 16, 16)


def test_dump_tree_layout(tmp_path: Path) -> None:
    npu, _ = _simulate(tmp_path, steps=2)
    rel = {p.parent.relative_to(tmp_path / "dump") for p in npu.written}
    assert len(rel) == 2
    for path in rel:
        time_dir, device, model, model_id, _step = path.parts
        assert len(time_dir) == 14 and time_dir.isdigit()
        assert (device, model, model_id) == ("0", "small_cnn", "1")
    assert {p.parts[-1] for p in rel} == {"0", "1"}


def test_files_fill_progressively_unless_atomic(tmp_path: Path) -> None:
    seen: list[tuple[bool, bool]] = []

    def progress(path: Path, written: int, total: int) -> None:
        seen.append((written < total, path.exists() and is_complete(path)))

    npu, _ = _simulate(tmp_path / "a", progress=progress, chunk_size=256)
    partial = [complete for unfinished, complete in seen if unfinished]
    assert partial and not any(partial)  # visible, but incomplete, before the last chunk
    assert all(is_complete(p) for p in npu.written)
    seen.clear()
    atomic, _ = _simulate(tmp_path / "c", progress=progress, atomic_writes=True)
    assert not seen and all(is_complete(p) for p in atomic.written)
    assert not list((tmp_path / "c").rglob("*.part"))


def test_quantised_tensors_are_dumped_as_int8_and_int32(tmp_path: Path) -> None:
    npu, runs = _simulate(tmp_path, quantize=("/block3/conv/Conv",))
    by_type = {read_dump(p).op_name: read_dump(p) for p in npu.written}
    quant = by_type["/block3/conv/Conv_quant_layer"]
    assert quant.outputs[0].dtype_name == "DT_INT8" and quant.outputs[0].shape[-1] == 32
    conv = by_type["/block3/conv/Conv/block3/act/Relu"]
    assert conv.outputs[0].dtype_name == "DT_INT32" and conv.inputs[1].dtype_name == "DT_INT8"
    run = next(r for r in runs if r.op.name == "/block3/conv/Conv/block3/act/Relu")
    assert np.array_equal(conv.outputs[0].logical(), run.outputs[0])


def test_stats_mode_matches_the_tensor_dump(tmp_path: Path, zoo_case: Callable[..., Any]) -> None:
    from dumpcmp.proto.stats_csv import read_stats_csv

    tensors, _ = _simulate(tmp_path / "t")
    npu = SimulatedAcl()
    npu.init()
    npu.set_device(0)
    npu.init_dump()
    assert npu.set_dump(_config(tmp_path / "s", dump_data="stats", dump_stats=["Max", "Min", "Nan"])) == 0
    model_id, _ = npu.load_from_file("zoo:small_cnn")
    inputs = [np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)]
    npu.execute(model_id, inputs)
    assert npu.synchronize_device() == 0  # the dump thread's files are complete after it, as on a device
    assert all(p.name.endswith(".csv") for p in npu.written)
    assert len(npu.written) == len(tensors.written)
    for csv_path, dump_path in zip(npu.written, tensors.written, strict=True):
        assert csv_path.name[: -len(".csv")].rsplit(".", 1)[0] == dump_path.name.rsplit(".", 1)[0]
        rows = read_stats_csv(csv_path)
        dump = read_dump(dump_path)
        for row, tensor in zip(rows, (*dump.inputs, *dump.outputs), strict=True):
            values = tensor.array().astype(np.float64)
            assert row.count == values.size and row.shape == tensor.shape and row.data_size == tensor.size
            assert row.stats["Max Value"] == pytest.approx(values.max(), rel=1e-5)
            assert row.stats["Nan Count"] == 0
            assert set(row.stats) == {"Max Value", "Min Value", "Nan Count"}
