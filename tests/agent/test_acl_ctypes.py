"""``CtypesAcl`` through the compiled C stub: every bound call, its arguments and its codes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

import dumpcmp.fakes
from dumpcmp.agent.acl import CtypesAcl
from dumpcmp.agent.backend import AclBackend
from dumpcmp.errors import AclError

if TYPE_CHECKING:
    from conftest import BuildLibrary, CompiledStub, Stub

STUB_SOURCE = Path(dumpcmp.fakes.__file__).parent / "libascendcl_stub.c"


def _ready(acl: CtypesAcl, model_file: Path) -> int:
    assert acl.init() == 0
    assert acl.set_device(0) == 0
    model_id, ret = acl.load_from_file(str(model_file))
    assert ret == 0
    return model_id


def test_stub_compiles_without_warnings(compiled_stub: CompiledStub) -> None:
    assert compiled_stub.compiler_output == ""


def test_is_an_acl_backend(acl: CtypesAcl, compiled_stub: CompiledStub) -> None:
    assert isinstance(acl, AclBackend)
    assert acl.path == str(compiled_stub.path)


# -- init / finalize ---------------------------------------------------------------------------


def test_init_without_config_passes_null(acl: CtypesAcl, stub: Stub) -> None:
    assert acl.init() == 0
    assert stub.calls() == ["aclInit(NULL)"]


def test_init_passes_the_config_path(acl: CtypesAcl, stub: Stub, tmp_path: Path) -> None:
    path = tmp_path / "init é.json"  # non-ASCII survives the bytes conversion
    assert acl.init(str(path)) == 0
    assert stub.calls() == [f"aclInit({path})"]


def test_second_init_returns_repeat_initialize(acl: CtypesAcl) -> None:
    assert acl.init() == 0
    assert acl.init() == 100002
    assert "aclInit has already been called" in acl.get_recent_err_msg()


def test_finalize(acl: CtypesAcl, stub: Stub) -> None:
    assert acl.finalize() == 100037  # ACL_ERROR_REPEAT_FINALIZE without aclInit
    assert acl.init() == 0
    assert acl.finalize() == 0
    assert stub.names() == ["aclFinalize", "aclInit", "aclFinalize"]


# -- devices -------------------------------------------------------------------------------------


def test_set_and_reset_device_pass_the_id(acl: CtypesAcl, stub: Stub) -> None:
    acl.init()
    assert acl.set_device(3) == 0
    assert acl.reset_device(3) == 0
    assert stub.calls()[1:] == ["aclrtSetDevice(3)", "aclrtResetDevice(3)"]


@pytest.mark.parametrize("method", ["set_device", "reset_device"])
def test_device_calls_before_init(acl: CtypesAcl, method: str) -> None:
    assert getattr(acl, method)(0) == 100001


@pytest.mark.parametrize("method", ["set_device", "reset_device"])
def test_device_calls_with_a_bad_id(acl: CtypesAcl, method: str) -> None:
    acl.init()
    assert getattr(acl, method)(-1) == 107001  # the int32 sign survives the C call


def test_synchronize_device(acl: CtypesAcl, stub: Stub) -> None:
    assert acl.synchronize_device() == 100001
    acl.init()
    assert acl.synchronize_device() == 107002  # no device, no context
    acl.set_device(0)
    assert acl.synchronize_device() == 0
    assert stub.names().count("aclrtSynchronizeDevice") == 3


# -- dump --------------------------------------------------------------------------------------


def test_dump_calls(acl: CtypesAcl, stub: Stub, dump_config: Path) -> None:
    acl.init()
    assert acl.init_dump() == 0
    assert acl.set_dump(str(dump_config)) == 0
    assert acl.finalize_dump() == 0
    assert stub.calls()[1:] == ["aclmdlInitDump()", f"aclmdlSetDump({dump_config})", "aclmdlFinalizeDump()"]


def test_init_dump_before_init(acl: CtypesAcl) -> None:
    assert acl.init_dump() == 100001


def test_init_dump_twice(acl: CtypesAcl) -> None:
    acl.init()
    assert acl.init_dump() == 0
    assert acl.init_dump() == 100002


def test_set_dump_before_init_dump(acl: CtypesAcl, dump_config: Path) -> None:
    acl.init()
    assert acl.set_dump(str(dump_config)) == 100045
    assert "aclmdlInitDump has not been called" in acl.get_recent_err_msg()


def test_set_dump_with_a_missing_file(acl: CtypesAcl, tmp_path: Path) -> None:
    acl.init()
    acl.init_dump()
    assert acl.set_dump(str(tmp_path / "missing.json")) == 100003


def test_finalize_dump_without_init_dump(acl: CtypesAcl) -> None:
    acl.init()
    assert acl.finalize_dump() == 100045


# -- models --------------------------------------------------------------------------------------


def test_load_and_unload(acl: CtypesAcl, stub: Stub, model_file: Path) -> None:
    acl.init()
    assert acl.load_from_file(str(model_file)) == (1, 0)
    assert acl.load_from_file(str(model_file)) == (2, 0)  # the uint32_t out-parameter is read back
    assert acl.unload(1) == 0
    assert acl.unload(1) == 100011
    assert stub.calls()[1:] == [
        f"aclmdlLoadFromFile({model_file})",
        f"aclmdlLoadFromFile({model_file})",
        "aclmdlUnload(1)",
        "aclmdlUnload(1)",
    ]


def test_load_missing_file(acl: CtypesAcl, tmp_path: Path) -> None:
    acl.init()
    _, ret = acl.load_from_file(str(tmp_path / "missing.om"))
    assert ret == 100014
    assert "cannot read the model file" in acl.get_recent_err_msg()


def test_load_before_init(acl: CtypesAcl, model_file: Path) -> None:
    assert acl.load_from_file(str(model_file))[1] == 100001


# -- execute -------------------------------------------------------------------------------------


def test_execute_round_trips_bytes(acl: CtypesAcl, stub: Stub, model_file: Path) -> None:
    stub.set_model_io(16, 16)
    model_id = _ready(acl, model_file)
    data = np.arange(16, dtype=np.uint8)
    outputs, ret = acl.execute(model_id, [data])
    assert ret == 0
    assert len(outputs) == 1
    assert outputs[0].dtype == np.uint8
    np.testing.assert_array_equal(outputs[0], data + 1)
    assert stub.leaks() == {}


def test_execute_with_typed_and_strided_input(acl: CtypesAcl, stub: Stub, model_file: Path) -> None:
    stub.set_model_io(8, 12)  # output longer than input: the stub wraps around
    model_id = _ready(acl, model_file)
    source = np.array([1.5, 99.0, -2.0, 99.0], dtype=np.float32)[::2]  # not contiguous
    outputs, ret = acl.execute(model_id, [source])
    assert ret == 0
    raw = np.ascontiguousarray(source).view(np.uint8)
    np.testing.assert_array_equal(outputs[0], np.resize(raw, 12) + 1)


def test_execute_plumbing_calls(acl: CtypesAcl, stub: Stub, model_file: Path) -> None:
    stub.set_model_io(4, 6)
    model_id = _ready(acl, model_file)
    start = len(stub.calls())
    acl.execute(model_id, [np.zeros(4, np.uint8)])
    calls = stub.calls()[start:]
    # Sizes, copy kinds (1 = host to device, 2 = device to host) and the malloc policy reach C.
    for expected in [
        "aclmdlGetDesc(1)",
        "aclmdlGetInputSizeByIndex(0)",
        "aclrtMalloc(4,0)",
        "aclrtMemcpy(4,4,1)",
        "aclCreateDataBuffer(4)",
        "aclmdlGetOutputSizeByIndex(0)",
        "aclrtMalloc(6,0)",
        "aclCreateDataBuffer(6)",
        "aclmdlExecute(1)",
        "aclrtMemcpy(6,6,2)",
    ]:
        assert expected in calls
    assert calls.index("aclmdlExecute(1)") < calls.index("aclrtMemcpy(6,6,2)")
    names = [c.split("(")[0] for c in calls]
    assert names.count("aclDestroyDataBuffer") == 2
    assert names.count("aclrtFree") == 2
    assert names.count("aclmdlDestroyDataset") == 2
    assert names[-1] == "aclmdlDestroyDesc"


def test_execute_empty_tensors_skip_device_memory(acl: CtypesAcl, stub: Stub, model_file: Path) -> None:
    stub.set_model_io(0, 3)
    model_id = _ready(acl, model_file)
    outputs, ret = acl.execute(model_id, [np.zeros(0, np.float32)])
    assert ret == 0
    np.testing.assert_array_equal(outputs[0], np.zeros(3, np.uint8))
    assert stub.calls().count("aclrtMalloc(0,0)") == 0  # aclrtMalloc rejects size 0
    assert stub.leaks() == {}


def test_execute_unknown_model(acl: CtypesAcl, stub: Stub) -> None:
    acl.init()
    outputs, ret = acl.execute(7, [np.zeros(16, np.uint8)])
    assert (outputs, ret) == ([], 100011)
    message = acl.get_recent_err_msg()
    assert message.startswith("aclmdlGetDesc(model 7) failed; ")
    assert "no model with this id" in message
    assert stub.leaks() == {}


def test_execute_checks_the_input_count(acl: CtypesAcl, stub: Stub, model_file: Path) -> None:
    model_id = _ready(acl, model_file)
    outputs, ret = acl.execute(model_id, [np.zeros(16, np.uint8)] * 2)
    assert (outputs, ret) == ([], 100017)
    assert acl.get_recent_err_msg() == "model 1 takes 1 input(s), got 2"
    assert "aclrtMalloc" not in stub.names()
    assert stub.leaks() == {}


def test_execute_checks_the_input_size(acl: CtypesAcl, stub: Stub, model_file: Path) -> None:
    stub.set_model_io(16, 16)
    model_id = _ready(acl, model_file)
    _, ret = acl.execute(model_id, [np.zeros((2, 3), np.float16)])
    assert ret == 100017
    assert acl.get_recent_err_msg() == "input 0 has 12 bytes (float16[2, 3]), model 1 expects 16 bytes"


@pytest.mark.parametrize(
    ("fn", "code", "note"),
    [
        ("aclmdlCreateDesc", 200000, "aclmdlCreateDesc returned NULL"),
        ("aclmdlGetDesc", 100011, "aclmdlGetDesc(model 1) failed"),
        ("aclmdlCreateDataset", 200000, "aclmdlCreateDataset returned NULL"),
        ("aclrtMalloc", 207001, "aclrtMalloc(16 bytes) for input 0 failed"),
        ("aclrtMemcpy", 507013, "aclrtMemcpy(16 bytes, host to device) failed"),
        ("aclCreateDataBuffer", 200000, "aclCreateDataBuffer returned NULL"),
        ("aclmdlAddDatasetBuffer", 100000, "aclmdlAddDatasetBuffer failed"),
        ("aclmdlExecute", 507011, None),
    ],
)
def test_execute_failure_at_each_step_frees_everything(
    acl: CtypesAcl, stub: Stub, model_file: Path, fn: str, code: int, note: str | None
) -> None:
    model_id = _ready(acl, model_file)
    stub.set_return(fn, code)
    outputs, ret = acl.execute(model_id, [np.zeros(16, np.uint8)])
    assert (outputs, ret) == ([], code)
    message = acl.get_recent_err_msg()
    if note is not None:
        assert message.startswith(note)
    assert f"stub {fn} failed with {code}: forced by stub_set_return" in message
    assert stub.leaks() == {}


@pytest.mark.parametrize(
    ("fn", "after", "note"),
    [
        ("aclrtMalloc", 1, "aclrtMalloc(16 bytes) for output 0 failed"),
        ("aclrtMemcpy", 1, "aclrtMemcpy(16 bytes, device to host) failed"),
        ("aclmdlCreateDataset", 1, "aclmdlCreateDataset returned NULL"),
        ("aclCreateDataBuffer", 1, "aclCreateDataBuffer returned NULL"),
    ],
)
def test_execute_failure_on_the_output_side(
    acl: CtypesAcl, stub: Stub, model_file: Path, fn: str, after: int, note: str
) -> None:
    model_id = _ready(acl, model_file)
    stub.set_return(fn, 207001, after=after)  # the input side's call succeeds, the output's fails
    outputs, ret = acl.execute(model_id, [np.zeros(16, np.uint8)])
    assert outputs == []
    assert ret == (200000 if "NULL" in note else 207001)
    assert acl.get_recent_err_msg().startswith(note)
    assert stub.leaks() == {}


def test_release_failures_do_not_hide_the_result(acl: CtypesAcl, stub: Stub, model_file: Path) -> None:
    model_id = _ready(acl, model_file)
    stub.set_return("aclDestroyDataBuffer", 100000)
    outputs, ret = acl.execute(model_id, [np.full(16, 7, np.uint8)])
    assert ret == 0
    np.testing.assert_array_equal(outputs[0], np.full(16, 8, np.uint8))
    assert stub.live("device_memory") == 0  # the other releases still ran


def test_recent_message_is_empty_then_consumed(acl: CtypesAcl) -> None:
    assert acl.get_recent_err_msg() == ""  # NULL from C becomes ""
    acl.finalize()
    assert acl.get_recent_err_msg().startswith("stub aclFinalize failed with 100037")
    assert acl.get_recent_err_msg() == ""


def test_a_later_call_does_not_inherit_an_execute_note(acl: CtypesAcl, model_file: Path) -> None:
    model_id = _ready(acl, model_file)
    acl.execute(model_id, [])
    assert acl.init() == 100002
    assert acl.get_recent_err_msg() == "stub aclInit failed with 100002: aclInit has already been called"


# -- libraries that are not quite libascendcl ----------------------------------------------------


def test_library_without_recent_err_msg(build_library: BuildLibrary, tmp_path: Path) -> None:
    lib = build_library(STUB_SOURCE, tmp_path / "libascendcl.so", "-DSTUB_WITHOUT_RECENT_ERR_MSG")
    acl = CtypesAcl(lib.path)
    assert acl.finalize() == 100037
    assert acl.get_recent_err_msg() == ""


def test_library_missing_a_symbol(build_library: BuildLibrary, tmp_path: Path) -> None:
    source = tmp_path / "partial.c"
    source.write_text("int aclInit(const char *p) { (void)p; return 0; }\n")
    lib = build_library(source, tmp_path / "libascendcl.so")
    with pytest.raises(AclError) as info:
        CtypesAcl(lib.path)
    assert (info.value.code, info.value.name, info.value.api) == (-1, "SYMBOL_NOT_FOUND", "aclFinalize")
    assert str(lib.path) in info.value.recent_message


# -- outputs aclmdlExecute allocates (dynamic shapes) -------------------------------------------


def test_a_null_zero_byte_output_is_read_back_and_freed(acl: CtypesAcl, stub: Stub, model_file: Path) -> None:
    stub.set_model_io(4, 0)
    stub.set_dynamic_output(6)  # the description says 0 bytes; execution produces 6
    model_id = _ready(acl, model_file)
    for _ in range(3):
        outputs, ret = acl.execute(model_id, [np.array([1, 2, 3, 4], np.uint8)])
        assert ret == 0
        np.testing.assert_array_equal(outputs[0], [2, 3, 4, 5, 2, 3])
        assert stub.leaks() == {}  # the memory aclmdlExecute allocated was freed, every call
    calls = stub.calls()
    assert "aclCreateDataBuffer(0)" in calls and "aclrtMalloc(0,0)" not in calls


def test_a_failed_execute_with_a_dynamic_output_leaks_nothing(
    acl: CtypesAcl, stub: Stub, model_file: Path
) -> None:
    stub.set_model_io(4, 0)
    stub.set_dynamic_output(6)
    model_id = _ready(acl, model_file)
    stub.set_return("aclrtMemcpy", 507013, after=1)  # the copy back fails, after the allocation
    outputs, ret = acl.execute(model_id, [np.zeros(4, np.uint8)])
    assert (outputs, ret) == ([], 507013)
    assert stub.leaks() == {}


# -- aclFinalizeReference --------------------------------------------------------------------------


def test_finalize_reference_counts_down(acl: CtypesAcl, stub: Stub) -> None:
    assert acl.init() == 0
    assert acl.init() == 100002  # counted as a reference all the same
    assert stub.init_refs() == 2
    assert acl.finalize_reference() == (1, 0)
    assert acl.set_device(0) == 0  # still initialised
    assert acl.finalize_reference() == (0, 0)
    assert acl.set_device(0) == 100001


def test_finalize_clears_every_reference(acl: CtypesAcl, stub: Stub) -> None:
    acl.init()
    acl.init()
    assert acl.finalize() == 0
    assert stub.init_refs() == 0


def test_library_without_finalize_reference(build_library: BuildLibrary, tmp_path: Path) -> None:
    lib = build_library(STUB_SOURCE, tmp_path / "libascendcl.so", "-DSTUB_WITHOUT_FINALIZE_REFERENCE")
    acl = CtypesAcl(lib.path)
    assert acl.finalize_reference() == (0, 200001)  # ACL_ERROR_API_NOT_SUPPORT
    assert "has no aclFinalizeReference" in acl.get_recent_err_msg()
