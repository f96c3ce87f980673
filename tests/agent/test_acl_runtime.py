"""``AclRuntime`` over ``CtypesAcl`` on the C stub: raised errors, state checks, the dump sequence."""

from __future__ import annotations

import json
import logging
import sys
import threading
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

import dumpcmp.fakes
from dumpcmp.agent.acl import CtypesAcl
from dumpcmp.agent.runtime import AclRuntime, open_backend
from dumpcmp.errors import AclError, ConfigError, DumpcmpError, InternalError

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import BuildLibrary, Stub

STUB_SOURCE = Path(dumpcmp.fakes.__file__).parent / "libascendcl_stub.c"


@pytest.fixture
def rt(acl: CtypesAcl) -> AclRuntime:
    return AclRuntime(acl)


def _forced(fn: str, code: int) -> str:
    return f"stub {fn} failed with {code}: forced by stub_set_return"


# -- each call: success and AclError -------------------------------------------------------------

# (runtime method, arguments, C function, a code to force)
CALLS: list[tuple[str, tuple[Any, ...], str, int]] = [
    ("finalize", (), "aclFinalize", 500001),
    ("set_device", (0,), "aclrtSetDevice", 107001),
    ("reset_device", (0,), "aclrtResetDevice", 507033),
    ("synchronize_device", (), "aclrtSynchronizeDevice", 507046),
    ("init_dump", (), "aclmdlInitDump", 500000),
    ("load", ("MODEL",), "aclmdlLoadFromFile", 100013),
]


@pytest.mark.parametrize(("method", "args", "fn", "code"), CALLS)
def test_non_zero_ret_becomes_acl_error(
    rt: AclRuntime, stub: Stub, model_file: Path, method: str, args: tuple[Any, ...], fn: str, code: int
) -> None:
    rt.init()
    rt.set_device(0)
    args = tuple(model_file if a == "MODEL" else a for a in args)
    stub.set_return(fn, code)
    with pytest.raises(AclError) as info:
        getattr(rt, method)(*args)
    err = info.value
    assert (err.code, err.api) == (code, fn)
    assert err.name.startswith("ACL_ERROR_")
    assert err.recent_message == _forced(fn, code)


def test_init_error(rt: AclRuntime, stub: Stub) -> None:
    stub.set_return("aclInit", 100003)
    with pytest.raises(AclError) as info:
        rt.init("/no/such.json")
    assert (info.value.code, info.value.name, info.value.api) == (100003, "ACL_ERROR_INVALID_FILE", "aclInit")
    assert not rt.initialized


def test_init_passes_path_objects(rt: AclRuntime, stub: Stub, tmp_path: Path) -> None:
    assert rt.init(tmp_path / "cfg.json") is True
    assert stub.calls() == [f"aclInit({tmp_path / 'cfg.json'})"]


def test_repeat_initialize_is_tolerated(rt: AclRuntime, acl: CtypesAcl, stub: Stub) -> None:
    assert acl.init() == 0  # someone else in the process initialised AscendCL
    assert rt.init() is False
    assert rt.initialized
    rt.set_device(0)  # usable
    assert stub.names() == ["aclInit", "aclInit", "aclrtSetDevice"]


def test_dump_calls(rt: AclRuntime, stub: Stub, dump_config: Path) -> None:
    rt.init()
    rt.init_dump()
    rt.set_dump(dump_config)
    rt.finalize_dump()
    assert stub.sequence()[1:] == [
        "aclmdlInitDump()",
        f"aclmdlSetDump({dump_config})",
        "aclmdlFinalizeDump()",
    ]


def test_set_dump_error_carries_the_recent_message(rt: AclRuntime, tmp_path: Path) -> None:
    rt.init()
    rt.init_dump()
    with pytest.raises(AclError) as info:
        rt.set_dump(tmp_path / "missing.json")
    assert (info.value.code, info.value.name) == (100003, "ACL_ERROR_INVALID_FILE")
    assert info.value.recent_message == "stub aclmdlSetDump failed with 100003: cannot open the dump config"


def test_finalize_dump_error(rt: AclRuntime, stub: Stub) -> None:
    rt.init()
    rt.init_dump()
    stub.set_return("aclmdlFinalizeDump", 500000)
    with pytest.raises(AclError, match="aclmdlFinalizeDump failed with ACL_ERROR_INTERNAL_ERROR"):
        rt.finalize_dump()


def test_load_execute_unload(rt: AclRuntime, stub: Stub, model_file: Path) -> None:
    stub.set_model_io(4, 4)
    rt.init()
    rt.set_device(0)
    model_id = rt.load(model_file)
    assert rt.loaded_models == (model_id,)
    (out,) = rt.execute(model_id, [np.array([0, 1, 2, 255], np.uint8)])
    np.testing.assert_array_equal(out, [1, 2, 3, 0])
    rt.unload(model_id)
    assert rt.loaded_models == ()


def test_execute_error_names_the_failing_step(rt: AclRuntime, stub: Stub, model_file: Path) -> None:
    rt.init()
    rt.set_device(0)
    model_id = rt.load(model_file)
    stub.set_return("aclrtMalloc", 207001)
    with pytest.raises(AclError) as info:
        rt.execute(model_id, [np.zeros(16, np.uint8)])
    err = info.value
    assert (err.code, err.name, err.api) == (207001, "ACL_ERROR_RT_MEMORY_ALLOCATION", "aclmdlExecute")
    assert err.recent_message == f"aclrtMalloc(16 bytes) for input 0 failed; {_forced('aclrtMalloc', 207001)}"


def test_unload_error_keeps_the_model_listed(rt: AclRuntime, stub: Stub, model_file: Path) -> None:
    rt.init()
    model_id = rt.load(model_file)
    stub.set_return("aclmdlUnload", 500002)
    with pytest.raises(AclError, match="ACL_ERROR_GE_FAILURE"):
        rt.unload(model_id)
    assert rt.loaded_models == (model_id,)


# -- state checks: refused before reaching AscendCL ---------------------------------------------


@pytest.mark.parametrize(
    ("method", "args", "api", "name"),
    [
        ("finalize", (), "aclFinalize", "ACL_ERROR_REPEAT_FINALIZE"),
        ("set_device", (0,), "aclrtSetDevice", "ACL_ERROR_UNINITIALIZE"),
        ("reset_device", (0,), "aclrtResetDevice", "ACL_ERROR_UNINITIALIZE"),
        ("synchronize_device", (), "aclrtSynchronizeDevice", "ACL_ERROR_UNINITIALIZE"),
        ("init_dump", (), "aclmdlInitDump", "ACL_ERROR_UNINITIALIZE"),
        ("set_dump", ("acl.json",), "aclmdlSetDump", "ACL_ERROR_UNINITIALIZE"),
        ("finalize_dump", (), "aclmdlFinalizeDump", "ACL_ERROR_UNINITIALIZE"),
        ("load", ("m.om",), "aclmdlLoadFromFile", "ACL_ERROR_UNINITIALIZE"),
        ("execute", (1, []), "aclmdlExecute", "ACL_ERROR_UNINITIALIZE"),
        ("unload", (1,), "aclmdlUnload", "ACL_ERROR_UNINITIALIZE"),
    ],
)
def test_calls_before_init_are_refused(
    rt: AclRuntime, stub: Stub, method: str, args: tuple[Any, ...], api: str, name: str
) -> None:
    with pytest.raises(AclError) as info:
        getattr(rt, method)(*args)
    assert (info.value.api, info.value.name) == (api, name)
    assert "checked by dumpcmp" in info.value.recent_message
    assert stub.calls() == []


def test_dump_order_is_checked(rt: AclRuntime, stub: Stub, dump_config: Path) -> None:
    rt.init()
    with pytest.raises(AclError) as info:
        rt.set_dump(dump_config)
    assert (info.value.code, info.value.name) == (100045, "ACL_ERROR_DUMP_NOT_RUN")
    with pytest.raises(AclError, match="ACL_ERROR_DUMP_NOT_RUN"):
        rt.finalize_dump()
    rt.init_dump()
    with pytest.raises(AclError, match="ACL_ERROR_REPEAT_INITIALIZE"):
        rt.init_dump()
    assert stub.names() == ["aclInit", "aclmdlInitDump"]


@pytest.mark.parametrize("method", ["execute", "unload"])
def test_unknown_model_is_refused(rt: AclRuntime, stub: Stub, method: str) -> None:
    rt.init()
    args: tuple[Any, ...] = (5, []) if method == "execute" else (5,)
    with pytest.raises(AclError) as info:
        getattr(rt, method)(*args)
    assert (info.value.code, info.value.name) == (100011, "ACL_ERROR_INVALID_MODEL_ID")
    assert stub.names() == ["aclInit"]


def test_finalize_forgets_everything(rt: AclRuntime, model_file: Path) -> None:
    rt.init()
    rt.set_device(0)
    rt.init_dump()
    rt.load(model_file)
    rt.finalize()
    assert not rt.initialized and rt.loaded_models == ()
    rt.init()
    rt.init_dump()  # dump state was reset along with everything else


# -- the dump session --------------------------------------------------------------------------


def _full_sequence(dump_config: Path, model_file: Path, device: int = 0, init: str = "NULL") -> list[str]:
    return [
        f"aclInit({init})",
        f"aclrtSetDevice({device})",
        "aclmdlInitDump()",
        f"aclmdlSetDump({dump_config})",
        f"aclmdlLoadFromFile({model_file})",
        "aclmdlExecute(1)",
        "aclrtSynchronizeDevice()",
        "aclmdlFinalizeDump()",
        "aclmdlUnload(1)",
        f"aclrtResetDevice({device})",
        "aclFinalize()",
    ]


def test_dump_session_runs_the_documented_sequence(
    rt: AclRuntime, stub: Stub, dump_config: Path, model_file: Path
) -> None:
    with rt.dump_session(dump_config) as session:
        assert session is rt
        model_id = session.load(model_file)
        (out,) = session.execute(model_id, [np.zeros(16, np.uint8)])
    np.testing.assert_array_equal(out, np.ones(16, np.uint8))
    assert stub.sequence() == _full_sequence(dump_config, model_file)
    assert not rt.initialized
    assert stub.leaks() == {}


def test_dump_session_options(rt: AclRuntime, stub: Stub, dump_config: Path, model_file: Path) -> None:
    init_config = dump_config.with_name("init.json")
    with rt.dump_session(str(dump_config), device_id=2, init_config=init_config):
        rt.execute(rt.load(model_file), [np.zeros(16, np.uint8)])
    assert stub.sequence() == _full_sequence(dump_config, model_file, device=2, init=str(init_config))


@pytest.mark.parametrize(
    ("failing", "expected"),
    [
        ("aclInit", ["aclInit"]),
        ("aclrtSetDevice", ["aclInit", "aclrtSetDevice", "aclFinalize"]),
        (
            "aclmdlInitDump",
            ["aclInit", "aclrtSetDevice", "aclmdlInitDump", "aclrtResetDevice", "aclFinalize"],
        ),
        (
            "aclmdlSetDump",
            [
                "aclInit",
                "aclrtSetDevice",
                "aclmdlInitDump",
                "aclmdlSetDump",
                "aclrtSynchronizeDevice",
                "aclmdlFinalizeDump",
                "aclrtResetDevice",
                "aclFinalize",
            ],
        ),
    ],
)
def test_dump_session_undoes_only_what_was_entered(
    rt: AclRuntime, stub: Stub, dump_config: Path, failing: str, expected: list[str]
) -> None:
    stub.set_return(failing, 500001)
    with pytest.raises(AclError) as info, rt.dump_session(dump_config):
        pytest.fail("the body must not run when entering failed")
    assert info.value.api == failing
    assert [c.split("(")[0] for c in stub.sequence()] == expected


def test_dump_session_cleans_up_when_the_body_fails(
    rt: AclRuntime, stub: Stub, dump_config: Path, model_file: Path
) -> None:
    with pytest.raises(ValueError, match="boom"), rt.dump_session(dump_config):
        rt.execute(rt.load(model_file), [np.zeros(16, np.uint8)])
        raise ValueError("boom")
    assert stub.sequence() == _full_sequence(dump_config, model_file)


def test_dump_session_body_error_wins_over_cleanup_errors(
    rt: AclRuntime, stub: Stub, dump_config: Path, model_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING), pytest.raises(AclError) as info, rt.dump_session(dump_config):
        rt.load(model_file)
        stub.set_return("aclmdlFinalizeDump", 500000)
        stub.set_return("aclmdlExecute", 507011)
        rt.execute(1, [np.zeros(16, np.uint8)])
    assert info.value.api == "aclmdlExecute"
    assert "aclmdlFinalizeDump failed with ACL_ERROR_INTERNAL_ERROR" in caplog.text
    # Every later step still ran.
    assert [c.split("(")[0] for c in stub.sequence()][-4:] == [
        "aclmdlFinalizeDump",
        "aclmdlUnload",
        "aclrtResetDevice",
        "aclFinalize",
    ]


def test_dump_session_cleanup_error_is_raised_after_all_steps(
    rt: AclRuntime, stub: Stub, dump_config: Path, model_file: Path
) -> None:
    with pytest.raises(AclError) as info, rt.dump_session(dump_config):
        rt.load(model_file)
        stub.set_return("aclrtSynchronizeDevice", 507046)
        stub.set_return("aclmdlUnload", 500002)
    assert info.value.api == "aclrtSynchronizeDevice"  # the first cleanup failure
    assert [c.split("(")[0] for c in stub.sequence()][-5:] == [
        "aclrtSynchronizeDevice",
        "aclmdlFinalizeDump",
        "aclmdlUnload",
        "aclrtResetDevice",
        "aclFinalize",
    ]


def test_dump_session_gives_back_the_reference_of_a_repeated_init(
    rt: AclRuntime, acl: CtypesAcl, stub: Stub, dump_config: Path
) -> None:
    acl.init()  # initialised by someone else: 100002 for the session, and one more reference
    with rt.dump_session(dump_config):
        assert stub.init_refs() == 2
    assert stub.names()[-2:] == ["aclrtResetDevice", "aclFinalizeReference"]
    assert "aclFinalize" not in stub.names()  # it would release AscendCL under its other user
    assert stub.init_refs() == 1
    assert acl.set_device(0) == 0  # the other user's AscendCL still works
    assert not rt.initialized


def test_repeated_init_on_a_library_without_finalize_reference(
    build_library: BuildLibrary, stub_at: Callable[[Path], Stub], tmp_path: Path, dump_config: Path
) -> None:
    # CANN before reference counting: a repeated aclInit counted nothing, so nothing is given back.
    lib = build_library(STUB_SOURCE, tmp_path / "libascendcl.so", "-DSTUB_WITHOUT_FINALIZE_REFERENCE")
    acl = CtypesAcl(lib.path)
    rt = AclRuntime(acl)
    acl.init()
    with rt.dump_session(dump_config):
        pass
    assert "aclFinalize" not in stub_at(lib.path).names()
    assert not rt.initialized
    assert acl.set_device(0) == 0  # the other user's AscendCL is untouched
    rt.init()
    assert rt.finalize_reference() is None


def test_dump_session_unloads_every_model_newest_first(
    rt: AclRuntime, stub: Stub, dump_config: Path, model_file: Path
) -> None:
    with rt.dump_session(dump_config):
        rt.load(model_file)
        rt.load(model_file)
    assert [c for c in stub.sequence() if c.startswith("aclmdlUnload")] == [
        "aclmdlUnload(2)",
        "aclmdlUnload(1)",
    ]


# -- open_backend --------------------------------------------------------------------------------


def test_open_acl_backend(compiled_stub: Any, stub: Stub) -> None:
    backend = open_backend("acl", acl_lib=str(compiled_stub.path))
    assert isinstance(backend, CtypesAcl)
    assert backend.init() == 0


def test_open_sim_backend_without_the_simulator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "dumpcmp.fakes.npu", None)  # makes the import fail
    with pytest.raises(DumpcmpError, match=r"simulated NPU is not available.*dumpcmp\.fakes\.npu"):
        open_backend("sim")


def test_open_sim_backend_passes_options(monkeypatch: pytest.MonkeyPatch, acl: CtypesAcl) -> None:
    received: dict[str, Any] = {}

    def simulated(**options: Any) -> CtypesAcl:
        received.update(options)
        return acl  # any AclBackend will do

    fake = types.ModuleType("dumpcmp.fakes.npu")
    fake.SimulatedAcl = simulated  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "dumpcmp.fakes.npu", fake)
    assert open_backend("sim", faults="plan.json", seed=3) is acl
    assert received == {"faults": "plan.json", "seed": 3}


def test_open_sim_backend_rejects_a_non_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("dumpcmp.fakes.npu")
    fake.SimulatedAcl = lambda: object()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "dumpcmp.fakes.npu", fake)
    with pytest.raises(InternalError):
        open_backend("sim")


@pytest.mark.parametrize(
    ("kind", "kwargs"),
    [("gpu", {}), ("acl", {"seed": 1}), ("sim", {"acl_lib": "/x/libascendcl.so"})],
)
def test_open_backend_rejects_bad_arguments(kind: str, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        open_backend(kind, **kwargs)  # type: ignore[arg-type]


# -- an aclInit config with a dump section ------------------------------------------------------


@pytest.fixture
def init_config_with_dump(tmp_path: Path) -> Path:
    path = tmp_path / "init.json"
    path.write_text(json.dumps({"err_msg_mode": "1", "dump": {"dump_path": str(tmp_path), "dump_list": []}}))
    return path


def test_dump_session_refuses_an_init_config_with_a_dump_section_up_front(
    rt: AclRuntime, stub: Stub, dump_config: Path, init_config_with_dump: Path
) -> None:
    with pytest.raises(ConfigError) as info, rt.dump_session(dump_config, init_config=init_config_with_dump):
        pytest.fail("the body must not run")
    message = str(info.value)
    assert message.startswith(f'{init_config_with_dump}: this aclInit config has a "dump" section')
    assert "aclmdlInitDump" in message and "\n" not in message
    assert stub.calls() == []  # refused before aclInit


def test_init_dump_after_an_init_config_with_a_dump_section(
    rt: AclRuntime, stub: Stub, init_config_with_dump: Path
) -> None:
    rt.init(init_config_with_dump)
    with pytest.raises(ConfigError, match='this aclInit config has a "dump" section'):
        rt.init_dump()
    assert stub.names() == ["aclInit"]


@pytest.mark.parametrize("text", ['{"err_msg_mode": "1"}', "not json", None])
def test_init_configs_without_a_dump_section_are_passed_on(
    rt: AclRuntime, stub: Stub, tmp_path: Path, dump_config: Path, text: str | None
) -> None:
    init = tmp_path / "init.json"
    if text is not None:
        init.write_text(text)  # an unreadable or invalid file is aclInit's to judge
    with rt.dump_session(dump_config, init_config=init):
        pass
    assert stub.sequence()[0] == f"aclInit({init})"


# -- one thread ----------------------------------------------------------------------------------


def _in_thread(fn: Any) -> BaseException | None:
    caught: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as exc:  # handed back to the test thread
            caught.append(exc)

    worker = threading.Thread(target=run, name="uploader")
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive()
    return caught[0] if caught else None


def test_calls_from_another_thread_are_refused(rt: AclRuntime, stub: Stub, model_file: Path) -> None:
    rt.init()
    rt.set_device(0)
    model_id = rt.load(model_file)
    before = stub.calls()
    for call in (
        lambda: rt.execute(model_id, [np.zeros(16, np.uint8)]),
        lambda: rt.unload(model_id),
        rt.synchronize_device,
        rt.finalize,
        lambda: rt.init(),
    ):
        error = _in_thread(call)
        assert isinstance(error, AclError), error
        assert (error.code, error.name) == (107002, "ACL_ERROR_RT_CONTEXT_NULL")
        assert "thread 'uploader'" in error.recent_message and "MainThread" in error.recent_message
    assert stub.calls() == before  # nothing reached AscendCL
    rt.execute(model_id, [np.zeros(16, np.uint8)])  # the owning thread still can


def test_the_thread_is_free_again_once_every_device_is_reset(rt: AclRuntime, stub: Stub) -> None:
    rt.init()
    rt.set_device(0)
    rt.reset_device(0)
    assert _in_thread(lambda: (rt.set_device(1), rt.reset_device(1), rt.finalize())) is None
    assert stub.names()[-3:] == ["aclrtSetDevice", "aclrtResetDevice", "aclFinalize"]
