"""Finding libascendcl.so: search order, explicit paths, and the error that lists every attempt."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from dumpcmp.agent.acl import CtypesAcl
from dumpcmp.agent.discovery import LIBRARY_NAME, candidate_paths, load_libascendcl
from dumpcmp.errors import AclError

if TYPE_CHECKING:
    from conftest import CompiledStub

TOOLKIT = "/opt/cann/toolkit"
HOME = "/opt/cann/home"
DEFAULTS = [
    "/usr/local/Ascend/cann/lib64/libascendcl.so",
    "/usr/local/Ascend/cann/runtime/lib64/libascendcl.so",
    "/usr/local/Ascend/cann/acllib/lib64/libascendcl.so",
    "/usr/local/Ascend/ascend-toolkit/latest/lib64/libascendcl.so",
    "/usr/local/Ascend/ascend-toolkit/latest/runtime/lib64/libascendcl.so",
    "/usr/local/Ascend/ascend-toolkit/latest/acllib/lib64/libascendcl.so",
    "/usr/local/Ascend/nnrt/latest/lib64/libascendcl.so",
]
NNRT = DEFAULTS[-1]


class FakeLoader:
    """dlopen stand-in: records every attempt, loads only the names in ``loadable``."""

    def __init__(self, loadable: dict[str, Any] | None = None, broken: dict[str, str] | None = None):
        self.loadable = loadable or {}
        self.broken = broken or {}
        self.attempts: list[str] = []

    def __call__(self, path: str) -> Any:
        self.attempts.append(path)
        if path in self.broken:
            raise OSError(self.broken[path])
        if path in self.loadable:
            return self.loadable[path]
        raise OSError(f"{path}: cannot open shared object file")


def files(*paths: str) -> Callable[[str], bool]:
    return set(paths).__contains__


def no_dirs(_: str) -> bool:
    return False


def test_search_order() -> None:
    env = {"ASCEND_TOOLKIT_HOME": TOOLKIT, "ASCEND_HOME_PATH": HOME}
    assert candidate_paths(environ=env, is_dir=no_dirs) == [
        f"{TOOLKIT}/lib64/libascendcl.so",
        f"{TOOLKIT}/runtime/lib64/libascendcl.so",
        f"{TOOLKIT}/acllib/lib64/libascendcl.so",
        f"{HOME}/lib64/libascendcl.so",
        f"{HOME}/runtime/lib64/libascendcl.so",
        f"{HOME}/acllib/lib64/libascendcl.so",
        *DEFAULTS,
    ]


def test_same_root_twice_is_tried_once() -> None:
    env = {"ASCEND_TOOLKIT_HOME": TOOLKIT + "/", "ASCEND_HOME_PATH": TOOLKIT}
    paths = candidate_paths(environ=env)
    assert len(paths) == len(set(paths)) == 3 + len(DEFAULTS)


def test_empty_environment_variables_are_ignored() -> None:
    assert candidate_paths(environ={"ASCEND_TOOLKIT_HOME": "", "ASCEND_HOME_PATH": ""}) == DEFAULTS


def test_process_environment_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASCEND_TOOLKIT_HOME", TOOLKIT)
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    assert candidate_paths()[0] == f"{TOOLKIT}/lib64/libascendcl.so"


def test_explicit_file_is_the_only_candidate() -> None:
    env = {"ASCEND_TOOLKIT_HOME": TOOLKIT}
    assert candidate_paths("/x/libascendcl.so", environ=env, is_dir=no_dirs) == ["/x/libascendcl.so"]


def test_explicit_directory_is_searched_as_a_root() -> None:
    assert candidate_paths("/x", is_dir=lambda p: p == "/x") == [
        "/x/libascendcl.so",
        "/x/lib64/libascendcl.so",
        "/x/runtime/lib64/libascendcl.so",
        "/x/acllib/lib64/libascendcl.so",
    ]


def test_first_existing_library_wins() -> None:
    env = {"ASCEND_TOOLKIT_HOME": TOOLKIT, "ASCEND_HOME_PATH": HOME}
    runtime_lib = f"{TOOLKIT}/runtime/lib64/libascendcl.so"
    handle = object()
    loader = FakeLoader({runtime_lib: handle, DEFAULTS[0]: object()})
    found = load_libascendcl(
        environ=env, is_file=files(runtime_lib, DEFAULTS[0]), is_dir=no_dirs, dlopen=loader
    )
    assert (found.path, found.handle) == (runtime_lib, handle)
    assert loader.attempts == [runtime_lib]  # missing files are not handed to dlopen


def test_a_library_that_fails_to_load_is_skipped() -> None:
    env = {"ASCEND_TOOLKIT_HOME": TOOLKIT}
    first = f"{TOOLKIT}/lib64/libascendcl.so"
    loader = FakeLoader({NNRT: "nnrt"}, broken={first: "libascend_hal.so: cannot open"})
    found = load_libascendcl(environ=env, is_file=files(first, NNRT), is_dir=no_dirs, dlopen=loader)
    assert found.path == NNRT
    assert loader.attempts == [first, NNRT]


def test_dynamic_loader_is_the_last_resort() -> None:
    loader = FakeLoader({LIBRARY_NAME: "from LD_LIBRARY_PATH"})
    found = load_libascendcl(environ={}, is_file=files(), is_dir=no_dirs, dlopen=loader)
    assert (found.path, found.handle) == (LIBRARY_NAME, "from LD_LIBRARY_PATH")
    assert loader.attempts == [LIBRARY_NAME]


def test_not_found_lists_every_attempt() -> None:
    env = {"ASCEND_TOOLKIT_HOME": TOOLKIT}
    broken = f"{TOOLKIT}/runtime/lib64/libascendcl.so"
    loader = FakeLoader(broken={broken: "wrong ELF class: ELFCLASS32"})
    with pytest.raises(AclError) as info:
        load_libascendcl(environ=env, is_file=files(broken), is_dir=no_dirs, dlopen=loader)
    err = info.value
    assert (err.code, err.name, err.api) == (-1, "LIBRARY_NOT_FOUND", "dlopen")
    message = err.recent_message
    assert f"{TOOLKIT}/lib64/libascendcl.so: no such file" in message
    assert f"{broken}: wrong ELF class: ELFCLASS32" in message
    for path in DEFAULTS:
        assert f"{path}: no such file" in message
    assert "via the dynamic loader" in message
    assert "set_env.sh" in message and "set ASCEND_TOOLKIT_HOME to the toolkit directory" in message
    assert "--acl-lib" not in message  # no command has that option
    # Reported in search order.
    assert message.index(TOOLKIT) < message.index(DEFAULTS[0]) < message.index("dynamic loader")


def test_explicit_path_does_not_fall_back() -> None:
    loader = FakeLoader({DEFAULTS[0]: object(), LIBRARY_NAME: object()})
    with pytest.raises(AclError) as info:
        load_libascendcl(
            "/typo/libascendcl.so",
            environ={"ASCEND_TOOLKIT_HOME": TOOLKIT},
            is_file=files(DEFAULTS[0]),
            is_dir=no_dirs,
            dlopen=loader,
        )
    assert loader.attempts == []
    assert "/typo/libascendcl.so: no such file" in info.value.recent_message
    assert "the path given must name libascendcl.so" in info.value.recent_message


def test_ctypes_backend_found_through_the_environment(compiled_stub: CompiledStub, tmp_path: Path) -> None:
    # A real dlopen of the compiled stub placed as an older toolkit would (runtime/lib64 only).
    root = tmp_path / "toolkit"
    lib_dir = root / "runtime" / "lib64"
    lib_dir.mkdir(parents=True)
    shutil.copy(compiled_stub.path, lib_dir / LIBRARY_NAME)
    acl = CtypesAcl(environ={"ASCEND_HOME_PATH": str(root)})
    assert acl.path == str(lib_dir / LIBRARY_NAME)
    assert acl.init() == 0  # a separate copy: its own state, not the shared stub's
    assert acl.finalize() == 0


def test_ctypes_backend_with_an_explicit_directory(compiled_stub: CompiledStub, tmp_path: Path) -> None:
    lib_dir = tmp_path / "lib64"
    lib_dir.mkdir()
    shutil.copy(compiled_stub.path, lib_dir / LIBRARY_NAME)
    assert CtypesAcl(tmp_path).path == str(lib_dir / LIBRARY_NAME)


def test_a_non_root_install_under_home_comes_after_the_system_install() -> None:
    home_install = "/home/me/Ascend"
    paths = candidate_paths(environ={"HOME": "/home/me"}, is_dir=no_dirs)
    assert paths[: len(DEFAULTS)] == DEFAULTS
    assert paths[len(DEFAULTS) :] == [p.replace("/usr/local/Ascend", home_install) for p in DEFAULTS]


# Real directory trees holding a copy of the compiled stub, loaded with the real dlopen.
@pytest.mark.parametrize(
    ("system", "home", "found"),
    [
        ("cann/lib64", None, "system/cann/lib64"),  # CANN 8.5 and later
        ("ascend-toolkit/latest/acllib/lib64", None, "system/ascend-toolkit/latest/acllib/lib64"),  # older
        (None, "ascend-toolkit/latest/lib64", "home/Ascend/ascend-toolkit/latest/lib64"),  # non-root
        (None, "cann/runtime/lib64", "home/Ascend/cann/runtime/lib64"),
        ("nnrt/latest/lib64", "cann/lib64", "system/nnrt/latest/lib64"),  # the system install first
    ],
)
def test_install_trees(
    compiled_stub: CompiledStub, tmp_path: Path, system: str | None, home: str | None, found: str
) -> None:
    for base, sub in ((tmp_path / "system", system), (tmp_path / "home" / "Ascend", home)):
        if sub is not None:
            (base / sub).mkdir(parents=True)
            shutil.copy(compiled_stub.path, base / sub / LIBRARY_NAME)
    loaded = load_libascendcl(environ={"HOME": str(tmp_path / "home")}, system_dir=str(tmp_path / "system"))
    assert loaded.path == str(tmp_path / found / LIBRARY_NAME)
    assert loaded.handle.aclInit(None) == 0  # a real library, really loaded
    assert loaded.handle.aclFinalize() == 0
