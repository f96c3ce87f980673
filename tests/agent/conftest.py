"""Fixtures for the AscendCL binding: the C stub of libascendcl, compiled once per session.

ctypes (dlopen) hands back the same handle for the same path, so the stub's state is shared by
every CDLL of it; each test therefore starts from ``stub_reset()`` instead of a fresh copy.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import dumpcmp.fakes
from dumpcmp.agent.acl import CtypesAcl

STUB_SOURCE = Path(dumpcmp.fakes.__file__).parent / "libascendcl_stub.c"

# Calls that make up the documented dump sequence; the dataset/memory plumbing of execute
# is filtered out when a test asserts the order of these.
SEQUENCE_CALLS = frozenset(
    {
        "aclInit",
        "aclFinalize",
        "aclFinalizeReference",
        "aclrtSetDevice",
        "aclrtResetDevice",
        "aclrtSynchronizeDevice",
        "aclmdlInitDump",
        "aclmdlSetDump",
        "aclmdlFinalizeDump",
        "aclmdlLoadFromFile",
        "aclmdlExecute",
        "aclmdlUnload",
    }
)


@dataclass(frozen=True)
class CompiledStub:
    path: Path
    compiler_output: str


def _find_compiler() -> str | None:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and (found := shutil.which(name)):
            return found
    return None


def build_shared_library(cc: str, source: Path, out: Path, *flags: str) -> CompiledStub:
    """``cc -shared -fPIC`` one C file; fail the test (not skip) if it does not compile."""
    proc = subprocess.run(
        [cc, "-shared", "-fPIC", "-Wall", "-Wextra", *flags, "-o", str(out), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(f"compiling {source} failed:\n{proc.stderr}")
    return CompiledStub(out, proc.stdout + proc.stderr)


@pytest.fixture(scope="session")
def c_compiler() -> str:
    cc = _find_compiler()
    if cc is None:
        pytest.skip("no C compiler (cc, gcc or clang) on PATH: cannot build the libascendcl stub")
    return cc


BuildLibrary = Callable[..., CompiledStub]


@pytest.fixture(scope="session")
def build_library(c_compiler: str) -> BuildLibrary:
    """``build_library(source, out, *flags)``: compile a variant library for one test."""

    def build(source: Path, out: Path, *flags: str) -> CompiledStub:
        return build_shared_library(c_compiler, source, out, *flags)

    return build


@pytest.fixture(scope="session")
def compiled_stub(c_compiler: str, tmp_path_factory: pytest.TempPathFactory) -> CompiledStub:
    out = tmp_path_factory.mktemp("acl_stub") / "libascendcl.so"
    return build_shared_library(c_compiler, STUB_SOURCE, out)


class Stub:
    """The stub's test hooks (see libascendcl_stub.c)."""

    def __init__(self, path: Path) -> None:
        lib = ctypes.CDLL(str(path))
        lib.stub_reset.restype = None
        lib.stub_call_count.restype = ctypes.c_int
        lib.stub_call.restype = ctypes.c_char_p
        lib.stub_call.argtypes = [ctypes.c_int]
        lib.stub_set_return.restype = None
        lib.stub_set_return.argtypes = [ctypes.c_char_p, ctypes.c_int]
        lib.stub_set_return_after.restype = None
        lib.stub_set_return_after.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
        lib.stub_set_model_io.restype = None
        lib.stub_set_model_io.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
        lib.stub_set_dynamic_output.restype = None
        lib.stub_set_dynamic_output.argtypes = [ctypes.c_size_t]
        lib.stub_live.restype = ctypes.c_int
        lib.stub_live.argtypes = [ctypes.c_char_p]
        lib.stub_init_refs.restype = ctypes.c_int
        self._lib = lib
        self.path = path

    def reset(self) -> None:
        self._lib.stub_reset()

    def calls(self) -> list[str]:
        """Every recorded call, as ``name(arg,...)``."""
        return [self._lib.stub_call(i).decode() for i in range(self._lib.stub_call_count())]

    def sequence(self) -> list[str]:
        """Only the calls of the documented dump sequence, without execute's plumbing."""
        return [c for c in self.calls() if c.split("(", 1)[0] in SEQUENCE_CALLS]

    def names(self) -> list[str]:
        return [c.split("(", 1)[0] for c in self.calls()]

    def set_return(self, fn: str, code: int, *, after: int = 0) -> None:
        """Make ``fn`` return ``code`` (NULL for pointer results), once ``after`` calls succeeded."""
        if after:
            self._lib.stub_set_return_after(fn.encode(), after, code)
        else:
            self._lib.stub_set_return(fn.encode(), code)

    def set_model_io(self, in_size: int, out_size: int) -> None:
        self._lib.stub_set_model_io(in_size, out_size)

    def set_dynamic_output(self, produced: int) -> None:
        """Models loaded from now on report output size 0 and produce ``produced`` bytes."""
        self._lib.stub_set_dynamic_output(produced)

    def init_refs(self) -> int:
        return int(self._lib.stub_init_refs())

    def live(self, kind: str) -> int:
        value = self._lib.stub_live(kind.encode())
        assert value >= 0, f"unknown kind {kind}"
        return int(value)

    def leaks(self) -> dict[str, int]:
        kinds = ("device_memory", "host_memory", "data_buffer", "dataset", "desc")
        return {k: n for k in kinds if (n := self.live(k))}


@pytest.fixture
def stub(compiled_stub: CompiledStub) -> Iterator[Stub]:
    s = Stub(compiled_stub.path)
    s.reset()
    yield s
    s.reset()


@pytest.fixture
def stub_at() -> Callable[[Path], Stub]:
    """The test hooks of a variant library built with ``build_library``."""
    return Stub


@pytest.fixture
def acl(stub: Stub) -> CtypesAcl:
    return CtypesAcl(stub.path)


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    """The stub only checks that a model file can be opened."""
    path = tmp_path / "model.om"
    path.write_bytes(b"not a real om")
    return path


@pytest.fixture
def dump_config(tmp_path: Path) -> Path:
    path = tmp_path / "acl.json"
    path.write_text('{"dump": {"dump_path": "dump", "dump_list": []}}')
    return path
