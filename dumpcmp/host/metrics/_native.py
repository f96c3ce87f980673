"""The metric kernels as the pipeline calls them: native code loaded without importing numba.

Importing numba and loading its cached kernels cost every run ~0.9 s before the first pair
(numba's import, its target set-up importing every lowering module it has, and on machines with
scipy, scipy.linalg): more than the comparing itself on a quarter-gigabyte tree. So the kernels of
``_kernels`` are kept here as object code for this CPU, one file per pair of chunk dtypes, and
loaded with llvmlite's MCJIT (~3 ms); numba is imported only to compile a pair for the first time,
in the first run that meets it. The functions are called through ctypes, which releases the GIL.

A file is named by a digest of everything its code depends on: ``_kernels.py``, the numba and
llvmlite versions, the CPU and its features, the dtypes. A changed kernel or an upgrade is a new
file, never stale code. Each file carries the SHA-256 of its object code, checked before loading:
a truncated or damaged file is compiled again, never executed.

Symbols the object refers to only on numba's error path (raising an exception from a kernel;
these kernels raise nothing: no bounds checks, numpy's division semantics, no allocation) are
bound to ``abort`` when numba is not loaded to provide them.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import inspect
import json
import os
import platform
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llvmlite
import llvmlite.binding as ll
import numpy as np
import numpy.typing as npt

__all__ = [
    "FLOAT16_BITS",
    "LANES",
    "Chunks",
    "Rows",
    "cache_dir",
    "first_pass",
    "kl_terms",
    "special_counts",
    "torchair_pass",
]

# Accumulators per quantity in the kernels. 128 float64 lanes x 12 quantities is 12 KB, well
# inside L1; the inner loop's trip count must be this constant (a variable one measured ~3x slower).
LANES = 128
_MAGIC = b"dumpcmp-kernels 1\n"


def _widens_float16_in_hardware() -> bool:
    """Whether LLVM widens float16 with an instruction here (x86 with F16C, any ARMv8).

    Elsewhere it would call a runtime helper that a JIT may not provide.
    """
    machine = platform.machine().lower()
    if machine in ("aarch64", "arm64"):
        return True
    if machine not in ("x86_64", "amd64"):
        return False
    try:
        return bool(ll.get_host_cpu_features().get("f16c", False))
    except RuntimeError:
        return False


# True: float16 chunks may be passed as their uint16 bits. False: convert them to float32 first.
FLOAT16_BITS = _widens_float16_in_hardware()


def cache_dir() -> Path | None:
    """Where compiled kernels are cached: ``NUMBA_CACHE_DIR`` when the user set it, else
    ``$XDG_CACHE_HOME/dumpcmp/numba`` (``~/.cache/dumpcmp/numba``); None when it is not writable.

    Never next to the package: a cache written into an installed package's directory outlives
    the package and shadows the next install of it.
    """
    configured = os.environ.get("NUMBA_CACHE_DIR")
    try:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        path = Path(configured) if configured else base / "dumpcmp" / "numba"
        path.mkdir(parents=True, exist_ok=True)
    except (OSError, RuntimeError):  # RuntimeError: no home directory to be found
        return None
    return path if os.access(path, os.W_OK | os.X_OK) else None


# ---------------------------------------------------------------------------------------------
# Loading


def _target_machine() -> Any:
    """A target machine for this CPU, set up as numba's JIT sets up its own."""
    ll.initialize_native_target()
    ll.initialize_native_asmprinter()
    target = ll.Target.from_triple(ll.get_process_triple())
    arch = target.name
    reloc = "static" if arch.startswith("x86") else ("pic" if arch.startswith("ppc") else "default")
    features = ll.get_host_cpu_features().flatten()
    options: dict[str, Any] = {"cpu": ll.get_host_cpu_name(), "features": features, "opt": 3, "reloc": reloc,
                               "codemodel": "jitdefault"}  # fmt: skip
    if "jit" in inspect.signature(target.create_target_machine).parameters:  # llvmlite >= 0.44
        options["jit"] = True
    return target.create_target_machine(**options)


def _file_digest(path: Path) -> bytes:
    return hashlib.sha256(path.read_bytes()).digest()


def _key(x_code: str, y_code: str) -> str:
    """The digest naming a pair's file: everything its object code depends on."""
    numba_spec = importlib.util.find_spec("numba")  # finds it without importing it
    numba_version = (
        Path(numba_spec.origin).with_name("_version.py") if numba_spec and numba_spec.origin else None
    )
    parts = [
        _file_digest(Path(__file__).with_name("_kernels.py")),
        _file_digest(Path(__file__)),
        _file_digest(numba_version) if numba_version and numba_version.is_file() else b"",
        llvmlite.__version__.encode(),
        ll.get_process_triple().encode(),
        ll.get_host_cpu_name().encode(),
        ll.get_host_cpu_features().flatten().encode(),
        f"{sys.version_info[:2]} {x_code} {y_code}".encode(),
    ]
    return hashlib.sha256(b"\0".join(parts)).hexdigest()[:32]


@dataclass(frozen=True)
class _Compiled:
    """A pair's object code and what linking it needs."""

    symbols: dict[str, str]  # pass name → symbol
    externals: tuple[str, ...]  # symbols it refers to and does not define
    code: bytes

    def to_bytes(self) -> bytes:
        header = {"symbols": self.symbols, "externals": self.externals,
                  "sha256": hashlib.sha256(self.code).hexdigest()}  # fmt: skip
        return _MAGIC + json.dumps(header).encode() + b"\n" + self.code

    @classmethod
    def from_bytes(cls, data: bytes) -> _Compiled | None:
        """None for anything but a whole file this module wrote."""
        if not data.startswith(_MAGIC):
            return None
        head, sep, code = data[len(_MAGIC) :].partition(b"\n")
        try:
            header = json.loads(head)
            if not sep or hashlib.sha256(code).hexdigest() != header["sha256"]:
                return None
            return cls(dict(header["symbols"]), tuple(header["externals"]), code)
        except (ValueError, KeyError, TypeError):
            return None


def _compile(x_code: str, y_code: str, machine: Any) -> _Compiled:
    """Compile a pair with numba (imported now) and turn it into object code for ``machine``."""
    from dumpcmp.host.metrics import _kernels

    module: Any = None
    symbols = {}
    for name, (symbol, ir) in _kernels.native_ir(x_code, y_code).items():
        part = ll.parse_assembly(ir)
        if module is None:
            module = part
        else:
            module.link_in(part)
        symbols[name] = symbol
    module.verify()
    functions = {f.name for f in module.functions if f.is_declaration and not f.name.startswith("llvm.")}
    data = {g.name for g in module.global_variables if g.is_declaration}
    externals = tuple(sorted(functions | data))
    return _Compiled(symbols, externals, machine.emit_object(module))


def _store(path: Path, compiled: _Compiled) -> None:
    """Write ``path`` whole or not at all; several processes may write the same file at once."""
    try:
        handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError:
        return  # no cache this time; the code is in memory already
    try:
        with os.fdopen(handle, "wb") as f:
            f.write(compiled.to_bytes())
        os.replace(temp, path)
    except OSError:
        Path(temp).unlink(missing_ok=True)


_Pass = Callable[..., None]
_P = ctypes.c_void_p
_I64 = ctypes.c_int64
_F64 = ctypes.c_double
_C_SIGNATURES = {
    "first_pass": ctypes.CFUNCTYPE(None, _P, _P, _I64, _P, _P),
    "special_counts": ctypes.CFUNCTYPE(None, _P, _P, _I64, _P),
    "kl_terms": ctypes.CFUNCTYPE(None, _P, _P, _I64, _F64, _F64, _F64, _F64, _F64, _F64, _P, _P, _P),
    "torchair_pass": ctypes.CFUNCTYPE(None, _P, _P, _I64, _F64, _F64, _F64, _P, _P),
    "first_pass_rows": ctypes.CFUNCTYPE(None, _P, _P, _I64, _I64, _P, _P),
    "kl_terms_rows": ctypes.CFUNCTYPE(None, _P, _P, _I64, _I64, _P, _P, _P, _P),
}


class _Engine:
    """One MCJIT engine per process holding every pair loaded so far."""

    def __init__(self) -> None:
        self.machine = _target_machine()
        self.engine = ll.create_mcjit_compiler(ll.parse_assembly(""), self.machine)
        self.lock = threading.Lock()
        self.pairs: dict[tuple[str, str], dict[str, _Pass]] = {}

    def pair(self, x_code: str, y_code: str) -> dict[str, _Pass]:
        found = self.pairs.get((x_code, y_code))
        if found is not None:
            return found
        with self.lock:
            if (x_code, y_code) not in self.pairs:
                self.pairs[(x_code, y_code)] = self._load(x_code, y_code)
            return self.pairs[(x_code, y_code)]

    def _load(self, x_code: str, y_code: str) -> dict[str, _Pass]:
        directory = cache_dir()
        path = directory / f"kernels-{_key(x_code, y_code)}.o" if directory is not None else None
        compiled = None
        if path is not None and path.is_file():
            compiled = _Compiled.from_bytes(path.read_bytes())
        if compiled is None:
            compiled = _compile(x_code, y_code, self.machine)
            if path is not None:
                _store(path, compiled)
        self._bind_error_path(compiled.externals)
        self.engine.add_object_file(ll.ObjectFileRef.from_data(compiled.code))
        self.engine.finalize_object()
        return {name: _C_SIGNATURES[name](self.engine.get_function_address(symbol))
                for name, symbol in compiled.symbols.items()}  # fmt: skip

    @staticmethod
    def _bind_error_path(externals: tuple[str, ...]) -> None:
        abort = ctypes.cast(ctypes.CDLL(None).abort, ctypes.c_void_p).value
        for name in externals:
            if ll.address_of_symbol(name) is None:
                ll.add_symbol(name, abort)


_ENGINE: _Engine | None = None
_ENGINE_LOCK = threading.Lock()


def load_engine() -> _Engine:
    """The process's JIT engine, made on first use (~15 ms, most of it LLVM's target set-up):
    called early, that is off the first tensor's path."""
    global _ENGINE
    if _ENGINE is None:
        with _ENGINE_LOCK:
            if _ENGINE is None:
                _ENGINE = _Engine()
    return _ENGINE


def _pair(x: npt.NDArray[Any], y: npt.NDArray[Any]) -> dict[str, _Pass]:
    return load_engine().pair(x.dtype.char, y.dtype.char)


# ---------------------------------------------------------------------------------------------
# The passes, as ``_kernels``' njit functions take and return them

_local = threading.local()


def _aligned(size: int, dtype: type = np.float64) -> npt.NDArray[Any]:
    """An array of ``size`` elements starting on a 64-byte boundary (a cache line).

    The kernels load and store their accumulators every iteration in whole vectors: on a
    misaligned buffer pass 1 measured up to 4.5 times slower than on an aligned one.
    """
    itemsize = np.dtype(dtype).itemsize
    raw = np.empty(size * itemsize + 64, dtype=np.uint8)
    start = -raw.ctypes.data % 64
    return raw[start : start + size * itemsize].view(dtype)


def _scratch() -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.int64], list[int]]:
    """This thread's accumulators, results, and their addresses."""
    found = getattr(_local, "scratch", None)
    if found is None:
        acc, out, counts = _aligned(12 * LANES), _aligned(12), _aligned(5, np.int64)
        found = _local.scratch = (acc, out, counts, [a.ctypes.data for a in (acc, out, counts)])
    return found


def _address(a: npt.NDArray[Any]) -> int:
    address: int = a.__array_interface__["data"][0]
    return address


class Chunks:
    """Two equal-length 1-D C-contiguous chunks (float32, float64 or float16 bits) as the passes
    take them: their addresses and their dtypes' compiled passes, looked up once for every pass
    over them (each lookup cost ~4 us a pass: ``__array_interface__`` builds a dict)."""

    __slots__ = ("_arrays", "_passes", "_x", "_y", "n")

    def __init__(self, x: npt.NDArray[Any], y: npt.NDArray[Any]) -> None:
        self._arrays = (x, y)  # the addresses stay valid while these live
        self._passes = _pair(x, y)
        self._x, self._y, self.n = _address(x), _address(y), x.shape[0]

    def first_pass(self) -> tuple[float, ...]:
        """``_kernels.first_pass``."""
        _, out, _, (acc_at, out_at, _) = _scratch()
        self._passes["first_pass"](self._x, self._y, self.n, acc_at, out_at)
        return tuple(out.tolist())

    def special_counts(self) -> tuple[int, int, int, int, int]:
        """``_kernels.special_counts``."""
        _, _, counts, (_, _, counts_at) = _scratch()
        self._passes["special_counts"](self._x, self._y, self.n, counts_at)
        a, b, c, d, e = counts.tolist()
        return a, b, c, d, e

    def kl_terms(
        self, mx: float, my: float, sx: float, sy: float, kx: float, ky: float
    ) -> tuple[float, float, float, float, float]:
        """``_kernels.kl_terms``; pass 1's accumulators serve as its scratch."""
        acc, out, _, (acc_at, out_at, _) = _scratch()
        scratch_at = acc_at + 5 * LANES * acc.itemsize  # acc holds 12 LANES: 5 for the sums, 2 here
        self._passes["kl_terms"](self._x, self._y, self.n, mx, my, sx, sy, kx, ky, acc_at, scratch_at, out_at)
        a, b, c, d, e = out[:5].tolist()
        return a, b, c, d, e

    def torchair_pass(self, eps: float, bound1: float, bound5: float) -> tuple[float, ...]:
        """``_kernels.torchair_pass``; pass 1's scratch serves (it needs 10 of its 12 quantities)."""
        _, out, _, (acc_at, out_at, _) = _scratch()
        self._passes["torchair_pass"](self._x, self._y, self.n, eps, bound1, bound5, acc_at, out_at)
        return tuple(out[:10].tolist())


class Rows:
    """Many pairs of equal length laid end to end in two 1-D C-contiguous arrays (the kernels'
    dtypes, as ``Chunks``), every pass over all of them in one call: pair ``r`` is elements
    ``r * n`` to ``(r + 1) * n``. The results are those of ``Chunks`` over each pair, bit for bit:
    the same loops."""

    __slots__ = ("_arrays", "_passes", "_x", "_y", "n", "rows")

    def __init__(self, x: npt.NDArray[Any], y: npt.NDArray[Any], rows: int) -> None:
        if x.shape != y.shape or x.ndim != 1 or rows < 1 or x.shape[0] % rows:
            raise ValueError(f"{rows} pairs cannot be laid in arrays of shapes {x.shape} and {y.shape}")
        self._arrays = (x, y)
        self._passes = _pair(x, y)
        self._x, self._y, self.rows, self.n = _address(x), _address(y), rows, x.shape[0] // rows

    def special_counts(self, r: int) -> tuple[int, int, int, int, int]:
        """``Chunks.special_counts`` of pair ``r`` alone (only pairs holding NaN/inf need it)."""
        x, y = self._arrays
        n = self.n
        return Chunks(x[r * n : (r + 1) * n], y[r * n : (r + 1) * n]).special_counts()

    def first_pass(self) -> npt.NDArray[np.float64]:
        """``Chunks.first_pass`` of each pair, a row of 12 sums a pair."""
        _, _, _, (acc_at, _, _) = _scratch()
        out = np.empty((self.rows, 12))
        self._passes["first_pass_rows"](self._x, self._y, self.rows, self.n, acc_at, _address(out))
        return out

    def kl_terms(self, centres: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """``Chunks.kl_terms`` of each pair, pair ``r`` with the six constants ``centres[r]``,
        a row of 5 sums a pair."""
        if centres.shape != (self.rows, 6) or centres.dtype != np.float64 or not centres.flags.c_contiguous:
            raise ValueError(f"centres of {self.rows} pairs: a C-contiguous ({self.rows}, 6) float64 array")
        acc, _, _, (acc_at, _, _) = _scratch()
        scratch_at = acc_at + 5 * LANES * acc.itemsize  # as ``Chunks.kl_terms``
        out = np.empty((self.rows, 5))
        self._passes["kl_terms_rows"](self._x, self._y, self.rows, self.n, _address(centres), acc_at,
                                      scratch_at, _address(out))  # fmt: skip
        return out


def first_pass(x: npt.NDArray[Any], y: npt.NDArray[Any]) -> tuple[float, ...]:
    """``Chunks(x, y).first_pass()``."""
    return Chunks(x, y).first_pass()


def special_counts(x: npt.NDArray[Any], y: npt.NDArray[Any]) -> tuple[int, int, int, int, int]:
    """``Chunks(x, y).special_counts()``."""
    return Chunks(x, y).special_counts()


def kl_terms(
    x: npt.NDArray[Any], y: npt.NDArray[Any], mx: float, my: float, sx: float, sy: float, kx: float, ky: float
) -> tuple[float, float, float, float, float]:
    """``Chunks(x, y).kl_terms(...)``."""
    return Chunks(x, y).kl_terms(mx, my, sx, sy, kx, ky)


def torchair_pass(
    x: npt.NDArray[Any], y: npt.NDArray[Any], eps: float, bound1: float, bound5: float
) -> tuple[float, ...]:
    """``Chunks(x, y).torchair_pass(...)``."""
    return Chunks(x, y).torchair_pass(eps, bound1, bound5)
