"""The pyACL-shaped face: a typical pyACL dump script runs unchanged on the C stub and on the
simulated NPU, and failed calls come back as codes instead of errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from dumpcmp.agent.acl import CtypesAcl
from dumpcmp.agent.pyacl import (
    ACL_MEM_MALLOC_HUGE_FIRST,
    ACL_MEMCPY_DEVICE_TO_HOST,
    ACL_MEMCPY_HOST_TO_DEVICE,
    ACL_MEMCPY_HOST_TO_HOST,
    AclFace,
    make_acl,
)
from dumpcmp.agent.runtime import open_backend

if TYPE_CHECKING:
    from conftest import Stub

NPY_UINT8 = 2  # NumPy's C type number, as pyACL scripts spell it


def ok(ret: int) -> None:
    assert ret == 0, f"ret {ret}"


def pyacl_dump_script(
    acl: Any,
    model_path: str,
    dump_config: str,
    inputs: list[np.ndarray],
    *,
    let_execute_allocate: bool = False,
) -> list[np.ndarray]:
    """What a user's pyACL dump script does, written against ``import acl``; returns raw outputs.

    With ``let_execute_allocate`` the output buffers are NULL and 0 bytes, for aclmdlExecute to
    allocate (dynamic output shapes); the script frees that memory as acl_mdl.h asks.
    """
    device = 0
    ok(acl.init())
    ok(acl.rt.set_device(device))
    ok(acl.mdl.init_dump())
    ok(acl.mdl.set_dump(dump_config))
    model_id, ret = acl.mdl.load_from_file(model_path)
    ok(ret)
    desc = acl.mdl.create_desc()
    ok(acl.mdl.get_desc(desc, model_id))

    input_dataset = acl.mdl.create_dataset()
    host_inputs = []
    for i in range(acl.mdl.get_num_inputs(desc)):
        size = acl.mdl.get_input_size_by_index(desc, i)
        data = np.ascontiguousarray(inputs[i])
        assert data.nbytes == size
        host, ret = acl.rt.malloc_host(size)
        ok(ret)
        host_inputs.append(host)
        ok(acl.rt.memcpy(host, size, acl.util.numpy_to_ptr(data), size, ACL_MEMCPY_HOST_TO_HOST))
        dev, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
        ok(ret)
        ok(acl.rt.memcpy(dev, size, host, size, ACL_MEMCPY_HOST_TO_DEVICE))
        buffer = acl.create_data_buffer(dev, size)
        assert buffer
        input_dataset, ret = acl.mdl.add_dataset_buffer(input_dataset, buffer)
        ok(ret)

    output_dataset = acl.mdl.create_dataset()
    for i in range(acl.mdl.get_num_outputs(desc)):
        size = 0 if let_execute_allocate else acl.mdl.get_output_size_by_index(desc, i)
        dev = 0
        if size:
            dev, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
            ok(ret)
        _, ret = acl.mdl.add_dataset_buffer(output_dataset, acl.create_data_buffer(dev, size))
        ok(ret)

    ok(acl.mdl.execute(model_id, input_dataset, output_dataset))

    outputs = []
    for i in range(acl.mdl.get_dataset_num_buffers(output_dataset)):
        buffer = acl.mdl.get_dataset_buffer(output_dataset, i)
        dev = acl.get_data_buffer_addr(buffer)
        size = acl.get_data_buffer_size_v2(buffer)
        assert acl.get_data_buffer_size(buffer) == size
        host, ret = acl.rt.malloc_host(size)
        ok(ret)
        ok(acl.rt.memcpy(host, size, dev, size, ACL_MEMCPY_DEVICE_TO_HOST))
        outputs.append(acl.util.ptr_to_numpy(host, (size,), NPY_UINT8).copy())
        assert acl.util.ptr_to_bytes(host, size) == outputs[-1].tobytes()
        ok(acl.rt.free_host(host))

    for dataset in (input_dataset, output_dataset):
        for i in range(acl.mdl.get_dataset_num_buffers(dataset)):
            buffer = acl.mdl.get_dataset_buffer(dataset, i)
            ok(acl.rt.free(acl.get_data_buffer_addr(buffer)))
            ok(acl.destroy_data_buffer(buffer))
        ok(acl.mdl.destroy_dataset(dataset))
    for host in host_inputs:
        ok(acl.rt.free_host(host))
    ok(acl.mdl.destroy_desc(desc))

    ok(acl.rt.synchronize_device())
    ok(acl.mdl.finalize_dump())
    ok(acl.mdl.unload(model_id))
    ok(acl.rt.reset_device(device))
    ok(acl.finalize())
    return outputs


@pytest.fixture
def face(acl: CtypesAcl) -> AclFace:
    return make_acl(acl)


@pytest.mark.parametrize("let_execute_allocate", [False, True])
def test_a_pyacl_dump_script_on_the_c_stub(
    face: AclFace, stub: Stub, dump_config: Path, model_file: Path, let_execute_allocate: bool
) -> None:
    stub.set_model_io(3, 3)
    (out,) = pyacl_dump_script(
        face, str(model_file), str(dump_config), [np.array([9, 8, 7], np.uint8)],
        let_execute_allocate=let_execute_allocate,
    )  # fmt: skip
    np.testing.assert_array_equal(out, [10, 9, 8])
    assert stub.sequence() == [
        "aclInit(NULL)",
        "aclrtSetDevice(0)",
        "aclmdlInitDump()",
        f"aclmdlSetDump({dump_config})",
        f"aclmdlLoadFromFile({model_file})",
        "aclmdlExecute(1)",
        "aclrtSynchronizeDevice()",
        "aclmdlFinalizeDump()",
        "aclmdlUnload(1)",
        "aclrtResetDevice(0)",
        "aclFinalize()",
    ]
    calls = stub.calls()
    assert "aclrtMallocHost(3)" in calls and "aclrtMemcpy(3,3,0)" in calls  # host to host
    assert ("aclrtMalloc(3,0)" in calls[calls.index("aclrtMemcpy(3,3,1)") :]) is not let_execute_allocate
    assert stub.leaks() == {}


@pytest.fixture
def sim_dump_config(tmp_path: Path) -> Path:
    (tmp_path / "dump").mkdir()
    path = tmp_path / "acl.json"
    dump = {"dump_path": str(tmp_path / "dump"), "dump_list": [{"model_name": "small_cnn"}]}
    path.write_text(json.dumps({"dump": dump}))
    return path


@pytest.mark.parametrize("let_execute_allocate", [False, True])
def test_a_pyacl_dump_script_on_the_simulated_npu(sim_dump_config: Path, let_execute_allocate: bool) -> None:
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)
    reference = open_backend("sim")
    assert reference.init() == 0 and reference.set_device(0) == 0
    model_id, _ = reference.load_from_file("zoo:small_cnn")
    (expected,), ret = reference.execute(model_id, [x])
    assert ret == 0

    backend = open_backend("sim")
    (out,) = pyacl_dump_script(
        make_acl(backend),
        "zoo:small_cnn",
        str(sim_dump_config),
        [x],
        let_execute_allocate=let_execute_allocate,
    )
    np.testing.assert_array_equal(out.view(np.float32).reshape(expected.shape), expected)
    written = backend.written  # type: ignore[attr-defined]
    assert written and all(p.is_file() for p in written)


def test_an_input_in_host_memory_is_refused_by_the_simulator(sim_dump_config: Path) -> None:
    acl = make_acl(open_backend("sim"))
    ok(acl.init())
    ok(acl.rt.set_device(0))
    model_id, _ = acl.mdl.load_from_file("zoo:small_cnn")
    x = np.zeros((1, 3, 16, 16), np.float32)
    inputs = acl.mdl.create_dataset()
    acl.mdl.add_dataset_buffer(inputs, acl.create_data_buffer(acl.util.numpy_to_ptr(x), x.nbytes))
    assert acl.mdl.execute(model_id, inputs, acl.mdl.create_dataset()) == 100017
    assert "not device memory" in acl.get_recent_err_msg()


def test_init_with_a_config_path(face: AclFace, stub: Stub) -> None:
    assert face.init("/etc/acl_init.json") == 0
    assert stub.calls() == ["aclInit(/etc/acl_init.json)"]


def test_failures_are_returned_not_raised(face: AclFace, tmp_path: Path) -> None:
    assert face.finalize() == 100037
    assert face.finalize_reference() == (0, 100037)
    assert face.rt.set_device(0) == 100001
    assert face.rt.reset_device(0) == 100001
    assert face.rt.synchronize_device() == 100001
    assert face.rt.malloc(16, ACL_MEM_MALLOC_HUGE_FIRST) == (0, 100001)
    assert face.mdl.init_dump() == 100001
    assert face.init() == 0
    assert face.init() == 100002
    assert face.finalize_reference() == (1, 0)  # the repeated aclInit counted a reference
    assert face.rt.free(1234) == 107000
    assert face.rt.memcpy(0, 4, 0, 4, ACL_MEMCPY_HOST_TO_DEVICE) == 100000
    assert face.mdl.set_dump(str(tmp_path / "acl.json")) == 100045
    assert face.mdl.finalize_dump() == 100045
    _, ret = face.mdl.load_from_file(str(tmp_path / "missing.om"))
    assert ret == 100014
    dataset = face.mdl.create_dataset()
    assert face.mdl.execute(1, dataset, dataset) == 100011
    assert face.mdl.get_dataset_buffer(dataset, 0) == 0  # NULL, as an int
    assert face.mdl.destroy_dataset(dataset) == 0
    assert face.mdl.unload(1) == 100011


def test_get_recent_err_msg(face: AclFace) -> None:
    assert face.get_recent_err_msg() == ""
    face.rt.set_device(0)
    assert face.get_recent_err_msg() == "stub aclrtSetDevice failed with 100001: aclInit has not been called"


def test_return_shapes_match_pyacl(face: AclFace, model_file: Path) -> None:
    face.init()
    loaded = face.mdl.load_from_file(str(model_file))
    assert isinstance(loaded, tuple) and len(loaded) == 2
    assert all(isinstance(v, int) for v in loaded)
    ret = face.rt.set_device(0)
    assert type(ret) is int
    dev, ret = face.rt.malloc(8, ACL_MEM_MALLOC_HUGE_FIRST)
    assert type(dev) is int and dev and ret == 0
    assert type(face.create_data_buffer(dev, 8)) is int


def test_util_pointers_round_trip(face: AclFace) -> None:
    util = face.util
    a = np.arange(6, dtype=np.float16).reshape(2, 3)
    view = util.ptr_to_numpy(util.numpy_to_ptr(a), (2, 3), 23)  # NPY_HALF
    np.testing.assert_array_equal(view, a)
    a[0, 0] = 42  # a view, not a copy, as in pyACL
    assert view[0, 0] == 42
    data = b"\x01\x02\x03"
    assert util.ptr_to_bytes(util.bytes_to_ptr(data), 3) == data
    with pytest.raises(ValueError, match="C-contiguous"):
        util.numpy_to_ptr(np.zeros((4, 4))[:, ::2])
    with pytest.raises(ValueError, match="unknown NumPy type number 99"):
        util.ptr_to_numpy(util.numpy_to_ptr(a), (1,), 99)
