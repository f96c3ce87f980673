"""SimulatedAcl: AscendCL's error codes and state rules, and every acl.json option it honours."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from dumpcmp.fakes.npu import Ret, SimulatedAcl
from dumpcmp.proto.codec import read_dump
from dumpcmp.proto.names import parse_dump_name

X = [np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)]


def _write_config(tmp_path: Path, dump: dict[str, Any] | None = None, **extra: Any) -> str:
    dump_dir = tmp_path / "dump"
    dump_dir.mkdir(parents=True, exist_ok=True)
    body = {"dump_path": str(dump_dir), "dump_list": [{"model_name": "small_cnn"}], **(dump or {})}
    path = tmp_path / "acl.json"
    path.write_text(json.dumps({"dump": body, **extra}))
    return str(path)


def _ready(tmp_path: Path | None = None, **dump: Any) -> SimulatedAcl:
    """init → set_device → init_dump (→ set_dump when tmp_path is given)."""
    npu = SimulatedAcl()
    assert (npu.init(), npu.set_device(0), npu.init_dump()) == (0, 0, 0)
    if tmp_path is not None:
        assert npu.set_dump(_write_config(tmp_path, dump)) == 0, npu.get_recent_err_msg()
    return npu


def _run(npu: SimulatedAcl, steps: int = 1, model: str = "zoo:small_cnn") -> int:
    model_id, ret = npu.load_from_file(model)
    assert ret == 0, npu.get_recent_err_msg()
    for _ in range(steps):
        outputs, ret = npu.execute(model_id, X)
        assert ret == 0 and outputs[0].shape == (1, 10) and outputs[0].dtype == np.float32
    # The dump thread's files are complete once the device is synchronized, as on a device.
    assert npu.synchronize_device() == 0
    return model_id


def test_it_is_an_acl_backend() -> None:
    backend = pytest.importorskip("dumpcmp.agent.backend")
    assert isinstance(SimulatedAcl(), backend.AclBackend)


def test_calls_before_init_are_uninitialize() -> None:
    npu = SimulatedAcl()
    assert npu.set_device(0) == Ret.UNINITIALIZE
    assert npu.init_dump() == Ret.UNINITIALIZE
    assert npu.set_dump("x") == Ret.UNINITIALIZE
    assert npu.load_from_file("zoo:small_cnn") == (0, Ret.UNINITIALIZE)
    assert npu.execute(1, X) == ([], Ret.UNINITIALIZE)
    assert npu.finalize() == Ret.REPEAT_FINALIZE
    assert "not initialised" in npu.get_recent_err_msg()
    assert npu.get_recent_err_msg() == ""  # read once, then cleared


def test_lifecycle_rules() -> None:
    npu = SimulatedAcl()
    assert npu.init() == 0
    assert npu.init() == Ret.REPEAT_INITIALIZE
    assert npu.set_device(3) == Ret.RT_INVALID_DEVICEID
    assert npu.load_from_file("zoo:small_cnn") == (0, Ret.RT_CONTEXT_NULL)
    assert npu.synchronize_device() == Ret.RT_CONTEXT_NULL
    assert npu.set_device(0) == 0
    assert npu.reset_device(1) == Ret.RT_INVALID_DEVICEID
    assert npu.synchronize_device() == 0
    assert npu.finalize_dump() == Ret.DUMP_NOT_RUN
    assert npu.set_dump("acl.json") == Ret.DUMP_NOT_RUN  # aclmdlSetDump before aclmdlInitDump
    assert npu.init_dump() == 0
    assert npu.init_dump() == Ret.REPEAT_INITIALIZE
    assert npu.set_dump("") == Ret.INVALID_PARAM
    assert npu.reset_device(0) == 0 and npu.finalize() == 0


def test_model_loading_and_execution_errors(tmp_path: Path) -> None:
    npu = _ready()
    assert npu.load_from_file(str(tmp_path / "net.om")) == (0, Ret.DESERIALIZE_MODEL)
    assert ".om" in npu.get_recent_err_msg()
    assert npu.load_from_file(str(tmp_path / "missing.onnx")) == (0, Ret.READ_MODEL_FAILURE)
    node = helper.make_node("Hardmax", ["x"], ["y"], name="hm")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    onnx.save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(tmp_path / "bad.onnx")
    )
    assert npu.load_from_file(str(tmp_path / "bad.onnx")) == (0, Ret.PARSE_MODEL)
    assert "Hardmax (node 'hm')" in npu.get_recent_err_msg()
    model_id = _run(npu)
    assert npu.execute(model_id + 5, X) == ([], Ret.INVALID_MODEL_ID)
    assert npu.execute(model_id, [X[0][:, :2]])[1] == Ret.MODEL_INPUT_NOT_MATCH
    assert npu.execute(model_id, [X[0].astype(np.float64)])[1] == Ret.MODEL_INPUT_NOT_MATCH
    assert npu.execute(model_id, [])[1] == Ret.MODEL_INPUT_NOT_MATCH
    assert npu.unload(model_id) == 0 and npu.unload(model_id) == Ret.INVALID_MODEL_ID


def test_dump_config_errors(tmp_path: Path) -> None:
    npu = _ready()
    assert npu.set_dump(str(tmp_path / "none.json")) == Ret.INVALID_FILE
    (tmp_path / "broken.json").write_text("{ not json")
    assert npu.set_dump(str(tmp_path / "broken.json")) == Ret.PARSE_FILE
    bad_mode = _write_config(tmp_path / "m", {"dump_mode": "everything"})
    assert npu.set_dump(bad_mode) == Ret.INVALID_DUMP_CONFIG
    message = npu.get_recent_err_msg()
    assert "dump.dump_mode" in message and "rule 3" in message
    assert npu.set_dump(_write_config(tmp_path / "s", {"dump_step": "5-1"})) == Ret.INVALID_DUMP_CONFIG
    assert "rule 7" in npu.get_recent_err_msg()
    missing_dir = tmp_path / "m" / "acl.json"
    missing_dir.write_text(json.dumps({"dump": {"dump_path": str(tmp_path / "nowhere"), "dump_list": [{}]}}))
    assert npu.set_dump(str(missing_dir)) == Ret.INVALID_DUMP_CONFIG
    assert "rule 5" in npu.get_recent_err_msg()


def test_dump_in_the_init_config_locks_the_model_dump_calls(tmp_path: Path) -> None:
    config = _write_config(tmp_path, {"dump_mode": "output"}, err_msg_mode="1")
    npu = SimulatedAcl()
    assert npu.init(config) == 0 and npu.set_device(0) == 0
    assert npu.init_dump() == Ret.DUMP_ALREADY_RUN
    assert npu.set_dump(config) == Ret.DUMP_ALREADY_RUN
    assert npu.finalize_dump() == Ret.DUMP_ALREADY_RUN
    _run(npu)
    assert npu.written  # the aclInit config is in force
    bad = _write_config(tmp_path / "bad", {"dump_mode": "x"})
    assert SimulatedAcl().init(bad) == Ret.INVALID_DUMP_CONFIG


def test_only_models_loaded_after_set_dump_are_dumped_and_finalize_stops_it(tmp_path: Path) -> None:
    npu = _ready()
    early = _run(npu)
    assert npu.set_dump(_write_config(tmp_path)) == 0
    npu.execute(early, X)
    assert not npu.written
    late = _run(npu)
    count = len(npu.written)
    assert count and all(f"/{late}/0/" in str(p) for p in npu.written)
    assert npu.synchronize_device() == 0 and npu.finalize_dump() == 0
    npu.execute(late, X)
    assert len(npu.written) == count
    assert npu.dump_dir(late) is not None


def _dumped(npu: SimulatedAcl) -> list[Any]:
    return [read_dump(p) for p in npu.written]


@pytest.mark.parametrize(
    ("mode", "inputs", "outputs"), [("input", True, False), ("output", False, True), ("all", True, True)]
)
def test_dump_mode(tmp_path: Path, mode: str, inputs: bool, outputs: bool) -> None:
    npu = _ready(tmp_path, dump_mode=mode)
    _run(npu)
    dumps = _dumped(npu)
    assert dumps and all(bool(d.inputs) == inputs and bool(d.outputs) == outputs for d in dumps)


def test_default_mode_is_output(tmp_path: Path) -> None:
    npu = _ready(tmp_path)
    _run(npu)
    assert all(d.outputs and not d.inputs for d in _dumped(npu))


def test_layer_matches_fused_or_original_names(tmp_path: Path) -> None:
    layers = ["/stem/bn/BatchNormalization", "/head/Softmax", "/block2.pw/conv/Conv"]
    npu = _ready(tmp_path, dump_list=[{"model_name": "small_cnn", "layer": layers}])
    _run(npu)
    assert sorted(d.op_name for d in _dumped(npu)) == [
        "/block2.pw/conv/Conv",
        "/head/Softmax",
        "/stem/conv/Conv/stem/act/Relu",  # named through an original op it fused
    ]


def test_dump_step_sets_the_data_index(tmp_path: Path) -> None:
    npu = _ready(tmp_path, dump_step="1|3-4")
    _run(npu, steps=5)
    assert sorted({p.parent.name for p in npu.written}) == ["1", "3", "4"]


def test_model_name_and_op_switch(tmp_path: Path) -> None:
    npu = _ready(tmp_path / "a", dump_list=[{"model_name": "other_model"}])
    _run(npu)
    assert not npu.written
    # dump_op_switch is for single-operator execution: a loaded model is dumped only via dump_list.
    npu = _ready(tmp_path / "b", dump_list=[], dump_op_switch="on")
    _run(npu)
    assert not npu.written
    npu = _ready(tmp_path / "c", dump_list=[{}], dump_op_switch="on")
    _run(npu)
    assert npu.written


def test_op_level_blacklists_and_range(tmp_path: Path) -> None:
    item = {
        "model_name": "small_cnn",
        "optype_blacklist": [{"name": "TransData"}, {"name": "Conv2D", "pos": ["input1", "input2"]}],
        "opname_blacklist": [{"name": "/head/Softmax", "pos": ["output0"]}],
    }
    npu = _ready(tmp_path, dump_list=[item], dump_level="op", dump_mode="all")
    _run(npu)
    types = {parse_dump_name(p.name).op_type for p in npu.written}
    assert "TransData" not in types
    conv = next(d for d in _dumped(npu) if d.op_name == "/stem/conv/Conv/stem/act/Relu")
    assert len(conv.inputs) == 1 and len(conv.outputs) == 1
    softmax = next(d for d in _dumped(npu) if d.op_name == "/head/Softmax")
    assert softmax.inputs and not softmax.outputs
    ranged = {
        "model_name": "small_cnn",
        "opname_range": [{"begin": "/block2/Add", "end": "/block3/pool/AveragePool"}],
    }
    npu = _ready(tmp_path / "r", dump_list=[ranged], dump_level="op")
    _run(npu)
    assert [d.op_name for d in _dumped(npu)] == [
        "/block2/Add",
        "/block2/act/Relu",
        "/block3/pool/AveragePool",
    ]


def test_the_agent_runtime_drives_it_through_the_dump_sequence(tmp_path: Path) -> None:
    runtime = pytest.importorskip("dumpcmp.agent.runtime")
    npu = SimulatedAcl()
    rt = runtime.AclRuntime(npu)
    with rt.dump_session(_write_config(tmp_path, {"dump_mode": "all"})) as session:
        model_id = session.load("zoo:small_cnn")
        (probs,) = session.execute(model_id, X)
    assert probs.shape == (1, 10) and abs(float(probs.sum()) - 1.0) < 1e-2
    assert npu.written and not rt.initialized


def test_init_references() -> None:
    npu = SimulatedAcl()
    assert npu.finalize_reference() == (0, Ret.REPEAT_FINALIZE)
    assert npu.init() == 0 and npu.init() == Ret.REPEAT_INITIALIZE  # counted all the same
    assert npu.finalize_reference() == (1, 0)
    assert npu.set_device(0) == 0  # still initialised
    assert npu.finalize_reference() == (0, 0)
    assert npu.set_device(0) == Ret.UNINITIALIZE
    assert npu.init() == 0 and npu.init() == Ret.REPEAT_INITIALIZE
    assert npu.finalize() == 0  # whatever the count
    assert npu.set_device(0) == Ret.UNINITIALIZE


def test_loaded_models_are_remembered_after_unload(tmp_path: Path) -> None:
    npu = _ready(tmp_path, dump_mode="all")
    faulty = SimulatedAcl(faults=["/block2/Add=nan"])
    assert faulty.init() == 0 and faulty.set_device(0) == 0
    model_id = _run(npu)
    assert npu.unload(model_id) == 0 and npu.finalize() == 0
    (record,) = npu.loaded
    assert (record.id, record.compiled.name, record.fault_ops) == (model_id, "small_cnn", {})
    assert record.dump_dir is not None and record.dump_dir.is_dir()
    faulty_id, _ = faulty.load_from_file("zoo:small_cnn")
    assert faulty.loaded[0].fault_ops == {"/block2/Add": "/block2/Add"} and faulty.loaded[0].dump_dir is None
    assert faulty.unload(faulty_id) == 0


def test_device_memory_rules() -> None:
    npu = SimulatedAcl()
    assert npu.malloc(16, 0) == (0, Ret.UNINITIALIZE)
    assert npu.init() == 0
    assert npu.malloc(0, 0)[1] == Ret.INVALID_PARAM
    dev, ret = npu.malloc(16, 0)
    host, _ = npu.malloc_host(16)
    data = np.arange(16, dtype=np.uint8)
    out = np.zeros(16, np.uint8)
    assert ret == 0 and npu.is_device(dev, 16) and not npu.is_device(host, 16)
    assert npu.memcpy(dev, 16, data.ctypes.data, 16, 2) == Ret.RT_PARAM_INVALID  # kind says device to host
    assert npu.memcpy(dev, 8, data.ctypes.data, 16, 1) == Ret.INVALID_PARAM  # count > destMax
    assert npu.memcpy(dev, 16, data.ctypes.data, 16, 1) == 0
    assert npu.memcpy(host, 16, dev, 16, 2) == 0
    assert npu.memcpy(out.ctypes.data, 16, host, 16, 0) == 0
    np.testing.assert_array_equal(out, data)
    assert npu.free(host) == Ret.RT_PARAM_INVALID and npu.free_host(dev) == Ret.RT_PARAM_INVALID
    assert npu.free(dev) == 0 and npu.free_host(host) == 0 and npu.free(dev) == Ret.RT_PARAM_INVALID


def test_execute_datasets_refuses_what_does_not_fit(tmp_path: Path) -> None:
    npu = _ready(tmp_path)
    model_id, _ = npu.load_from_file("zoo:small_cnn")
    desc = npu.create_desc()
    assert npu.get_desc(desc, model_id + 7) == Ret.INVALID_MODEL_ID
    assert npu.get_desc(desc, model_id) == 0
    assert (npu.get_num_inputs(desc), npu.get_num_outputs(desc)) == (1, 1)
    size = npu.get_input_size_by_index(desc, 0)
    assert size == X[0].nbytes and npu.get_output_size_by_index(desc, 0) == 10 * 4
    dev, _ = npu.malloc(size, 0)
    npu.memcpy(dev, size, X[0].ctypes.data, size, 1)
    inputs = npu.create_dataset()
    assert npu.add_dataset_buffer(inputs, npu.create_data_buffer(dev, size)) == 0
    small, _ = npu.malloc(8, 0)
    outputs = npu.create_dataset()
    npu.add_dataset_buffer(outputs, npu.create_data_buffer(small, 8))
    assert npu.execute_datasets(model_id, inputs, outputs) == Ret.MODEL_OUTPUT_NOT_MATCH
    assert "output 0 needs 40 bytes" in npu.get_recent_err_msg()
    assert npu.execute_datasets(model_id, outputs, outputs) == Ret.MODEL_INPUT_NOT_MATCH
    assert npu.create_data_buffer(0, 8) == 0  # a NULL buffer must have size 0
    assert npu.destroy_dataset(inputs) == 0 and npu.destroy_dataset(inputs) == Ret.INVALID_PARAM
    assert npu.destroy_desc(desc) == 0


def test_the_dump_is_written_by_a_dump_thread_in_execution_order_while_the_model_runs(tmp_path: Path) -> None:
    # The simulator wrote every file on the executing thread: a model's dump was complete when
    # aclmdlExecute returned, which no real runtime promises and the agent's live path never met.
    before = set(threading.enumerate())
    writers: set[str] = set()
    executing: list[bool] = []  # files written when each op ran: later ops run while earlier ones are written
    npu = SimulatedAcl(
        progress=lambda *_: writers.add(threading.current_thread().name),
        on_op=lambda run: executing.append(threading.current_thread() is threading.main_thread()),
    )
    assert (npu.init(), npu.set_device(0), npu.init_dump()) == (0, 0, 0)
    assert npu.set_dump(_write_config(tmp_path)) == 0
    _run(npu)
    assert writers == {"dumpcmp-sim-dump"} and all(executing)
    stamps = [parse_dump_name(p.name).timestamp for p in npu.written]
    assert stamps == sorted(stamps) and len(stamps) == len(executing)
    assert npu.finalize_dump() == 0
    assert set(threading.enumerate()) <= before  # its thread ended once drained


def test_a_dump_the_thread_could_not_write_is_the_synchronizes_write_file_error(tmp_path: Path) -> None:
    npu = _ready(tmp_path)
    model_id, _ = npu.load_from_file("zoo:small_cnn")
    blocker = npu.dump_dir(model_id)
    assert blocker is not None
    blocker.mkdir(parents=True)
    (blocker / "0").write_text("a file where the step directory goes")
    _, ret = npu.execute(model_id, X)
    assert ret == 0  # execution does not wait for the dump
    assert npu.synchronize_device() == Ret.WRITE_FILE
    assert npu.get_recent_err_msg().startswith(f"aclrtSynchronizeDevice: dump not written: {blocker / '0'}")
    assert npu.synchronize_device() == 0 and npu.finalize_dump() == 0
