"""``AclRuntime``: checked AscendCL calls over any ``AclBackend`` (ctypes or simulated NPU).

Backends make raw calls and return codes; this wrapper is where codes become ``AclError``
(``code``, C ``name``, ``api`` and AscendCL's recent message) and where call order is checked.
A call made in the wrong state raises the ``AclError`` AscendCL itself would return (e.g.
``ACL_ERROR_UNINITIALIZE``) without reaching the backend, so the simulated NPU need not
re-implement every state rule to behave like the real runtime.

AscendCL's context is per thread: once a device is set, every call must come from the thread that
set it. The runtime records that thread and refuses a call from any other one (the agent's
watcher and upload threads never call AscendCL).

``dump_session`` runs the file-dump sequence of formats.md §4.2 and always unwinds it.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeAlias

import numpy as np

from dumpcmp.agent.acl_codes import AclCode, check, error_name
from dumpcmp.agent.backend import AclBackend
from dumpcmp.errors import AclError, ConfigError, DumpcmpError, InternalError

__all__ = ["AclRuntime", "open_backend"]

log = logging.getLogger(__name__)

PathArg: TypeAlias = str | os.PathLike[str]


class AclRuntime:
    """The agent's view of AscendCL: each call checked, state tracked, errors raised."""

    def __init__(self, backend: AclBackend) -> None:
        self.backend = backend
        self._references = 0  # this runtime's aclInit calls not given back
        self._dump_initialized = False
        self._init_dump_config: str | None = None  # an aclInit config that configured the dump
        self._owner: threading.Thread | None = None  # the thread that set the device
        self._devices: list[int] = []  # one entry per successful set_device, like a ref count
        self._models: list[int] = []  # in load order, so unload_all can go in reverse

    # -- state -----------------------------------------------------------------------------

    @property
    def initialized(self) -> bool:
        """Has this runtime called aclInit and not given it back (AscendCL may have other users)?"""
        return self._references > 0

    @property
    def loaded_models(self) -> tuple[int, ...]:
        return tuple(self._models)

    def _check(self, ret: int, api: str) -> None:
        check(ret, api, self.backend.get_recent_err_msg)

    @staticmethod
    def _refuse(code: AclCode, api: str, why: str) -> AclError:
        # Same code AscendCL would give, marked as ours so nobody hunts for it in the CANN log.
        return AclError(int(code), error_name(code), api, f"{why} (checked by dumpcmp before the call)")

    def _require_thread(self, api: str) -> None:
        owner = self._owner
        current = threading.current_thread()
        if owner is not None and owner is not current:
            raise self._refuse(
                AclCode.RT_CONTEXT_NULL,
                api,
                f"called from thread {current.name!r}, but the device was set on thread {owner.name!r}; "
                "AscendCL's context belongs to that thread, so every call must come from it",
            )

    def _require_init(self, api: str) -> None:
        self._require_thread(api)
        if not self._references:
            raise self._refuse(AclCode.UNINITIALIZE, api, "aclInit has not been called")

    def _require_model(self, model_id: int, api: str) -> None:
        self._require_init(api)
        if model_id not in self._models:
            raise self._refuse(AclCode.INVALID_MODEL_ID, api, f"model {model_id} is not loaded")

    # -- lifecycle -------------------------------------------------------------------------

    def init(self, config_path: PathArg | None = None) -> bool:
        """aclInit. Returns False when AscendCL was already initialised in this process.

        A second aclInit answers ``ACL_ERROR_REPEAT_INITIALIZE`` and AscendCL stays usable, so
        that code is accepted; newer CANN also counts it as a reference, which
        ``finalize_reference`` gives back (``dump_session`` pairs them).
        """
        self._require_thread("aclInit")
        path = None if config_path is None else os.fspath(config_path)
        ret = self.backend.init(path)
        first = ret != AclCode.REPEAT_INITIALIZE
        if first:
            self._check(ret, "aclInit")
        self._references += 1
        if path is not None and init_config_has_dump(path):
            self._init_dump_config = path
        return first

    def finalize(self) -> None:
        """aclFinalize: releases everything AscendCL holds for the process, whatever the count."""
        if not self._references:
            raise self._refuse(AclCode.REPEAT_FINALIZE, "aclFinalize", "aclInit has not been called")
        self._require_thread("aclFinalize")
        self._check(self.backend.finalize(), "aclFinalize")
        self._forget()

    def finalize_reference(self) -> int | None:
        """aclFinalizeReference: give back one aclInit reference; AscendCL is released at zero.

        Returns the references AscendCL has left, or None when the library has no
        aclFinalizeReference (CANN before reference counting, whose repeated aclInit counted
        nothing, so there is nothing to give back). Either way this runtime's own reference is
        gone: once it has none, it must call aclInit again.
        """
        self._require_init("aclFinalizeReference")
        count: int | None
        count, ret = self.backend.finalize_reference()
        if ret == AclCode.API_NOT_SUPPORT:
            self.backend.get_recent_err_msg()  # consumed, so that it is not blamed on a later call
            count = None
        else:
            self._check(ret, "aclFinalizeReference")
        self._references -= 1
        if count == 0 or not self._references:
            self._forget()
        return count

    def _forget(self) -> None:
        # AscendCL released everything it held for this runtime.
        self._references = 0
        self._dump_initialized = False
        self._init_dump_config = None
        self._owner = None
        self._devices.clear()
        self._models.clear()

    def set_device(self, device_id: int) -> None:
        self._require_init("aclrtSetDevice")
        self._check(self.backend.set_device(device_id), "aclrtSetDevice")
        self._devices.append(device_id)
        self._owner = threading.current_thread()

    def reset_device(self, device_id: int) -> None:
        self._require_init("aclrtResetDevice")
        self._check(self.backend.reset_device(device_id), "aclrtResetDevice")
        if device_id in self._devices:
            self._devices.remove(device_id)
        if not self._devices:
            self._owner = None

    def synchronize_device(self) -> None:
        self._require_init("aclrtSynchronizeDevice")
        self._check(self.backend.synchronize_device(), "aclrtSynchronizeDevice")

    # -- dump ------------------------------------------------------------------------------

    def init_dump(self) -> None:
        self._require_init("aclmdlInitDump")
        if self._init_dump_config is not None:
            raise dump_conflict(self._init_dump_config)
        if self._dump_initialized:
            raise self._refuse(AclCode.REPEAT_INITIALIZE, "aclmdlInitDump", "aclmdlInitDump already called")
        self._check(self.backend.init_dump(), "aclmdlInitDump")
        self._dump_initialized = True

    def set_dump(self, path: PathArg) -> None:
        """aclmdlSetDump: applies to models loaded after this call."""
        self._require_init("aclmdlSetDump")
        if not self._dump_initialized:
            raise self._refuse(AclCode.DUMP_NOT_RUN, "aclmdlSetDump", "aclmdlInitDump has not been called")
        self._check(self.backend.set_dump(os.fspath(path)), "aclmdlSetDump")

    def finalize_dump(self) -> None:
        """aclmdlFinalizeDump: dump files are complete once this returns."""
        self._require_init("aclmdlFinalizeDump")
        if not self._dump_initialized:
            raise self._refuse(
                AclCode.DUMP_NOT_RUN, "aclmdlFinalizeDump", "aclmdlInitDump has not been called"
            )
        self._check(self.backend.finalize_dump(), "aclmdlFinalizeDump")
        self._dump_initialized = False

    # -- models ----------------------------------------------------------------------------

    def load(self, path: PathArg) -> int:
        self._require_init("aclmdlLoadFromFile")
        model_id, ret = self.backend.load_from_file(os.fspath(path))
        self._check(ret, "aclmdlLoadFromFile")
        self._models.append(model_id)
        return model_id

    def execute(self, model_id: int, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """aclmdlExecute on numpy inputs; see the backend for the outputs' representation."""
        self._require_model(model_id, "aclmdlExecute")
        outputs, ret = self.backend.execute(model_id, [np.asarray(a) for a in inputs])
        self._check(ret, "aclmdlExecute")
        return outputs

    def unload(self, model_id: int) -> None:
        self._require_model(model_id, "aclmdlUnload")
        self._check(self.backend.unload(model_id), "aclmdlUnload")
        self._models.remove(model_id)

    def unload_all(self) -> None:
        """Unload every model this runtime loaded, newest first; raise the first failure."""
        _run_all([(f"unload model {m}", partial(self.unload, m)) for m in reversed(self._models)])

    # -- the file-dump sequence ------------------------------------------------------------

    @contextmanager
    def dump_session(
        self,
        dump_config: PathArg,
        *,
        device_id: int = 0,
        init_config: PathArg | None = None,
    ) -> Iterator[AclRuntime]:
        """Run the documented file-dump sequence around the ``with`` body.

        Enter: aclInit → aclrtSetDevice → aclmdlInitDump → aclmdlSetDump(dump_config); the body
        loads and executes models (``load``/``execute`` on the yielded runtime). Exit:
        aclrtSynchronizeDevice → aclmdlFinalizeDump → aclmdlUnload (every model loaded) →
        aclrtResetDevice → aclFinalize. Only the steps that were entered are undone, in that
        order, even when a step or the body fails. When AscendCL was already initialised by
        someone else (``ACL_ERROR_REPEAT_INITIALIZE``), the reference that aclInit counted is
        given back with aclFinalizeReference instead: aclFinalize would release AscendCL under
        its other user. If the body failed, its exception propagates and cleanup errors are
        logged; otherwise the first cleanup error is raised after every step has been tried.

        An ``init_config`` holding a ``dump`` section is refused before aclInit: AscendCL would
        then refuse aclmdlInitDump, and the dump would follow that section, not ``dump_config``.
        """
        if init_config is not None and init_config_has_dump(init_config):
            raise dump_conflict(init_config)
        # Exit steps, pushed as the matching enter step succeeds and run last-pushed-first.
        # Unload is pushed before init_dump so that it runs after aclmdlFinalizeDump, as §4.2 says.
        undo: list[tuple[str, Callable[[], object]]] = []
        try:
            if self.init(init_config):
                undo.append(("aclFinalize", self.finalize))
            else:
                undo.append(("aclFinalizeReference", self.finalize_reference))
            self.set_device(device_id)
            undo.append(("aclrtResetDevice", lambda: self.reset_device(device_id)))
            undo.append(("aclmdlUnload", self.unload_all))
            self.init_dump()
            undo.append(("aclmdlFinalizeDump", self.finalize_dump))
            undo.append(("aclrtSynchronizeDevice", self.synchronize_device))
            self.set_dump(dump_config)
            yield self
        except BaseException:
            _run_all(list(reversed(undo)), raise_first=False)
            raise
        _run_all(list(reversed(undo)))


def init_config_has_dump(path: PathArg) -> bool:
    """Does the aclInit config at ``path`` hold a ``dump`` section? An unreadable or invalid file
    is left for aclInit to report, with AscendCL's own code."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(raw, dict) and "dump" in raw


def dump_conflict(init_config: PathArg) -> ConfigError:
    return ConfigError(
        f'{os.fspath(init_config)}: this aclInit config has a "dump" section, which conflicts with '
        "aclmdlInitDump/aclmdlSetDump (AscendCL refuses them with ACL_ERROR_DUMP_ALREADY_RUN); "
        "remove the section and give the dump config separately"
    )


def _run_all(steps: Sequence[tuple[str, Callable[[], object]]], *, raise_first: bool = True) -> None:
    """Run every step even if some fail; then raise the first failure, or only log them all."""
    first: Exception | None = None
    for what, step in steps:
        try:
            step()
        except Exception as exc:  # keep unwinding: a stuck device must still be reset
            log.warning("cleanup step %s failed: %s", what, exc)
            first = first or exc
    if raise_first and first is not None:
        raise first


def open_backend(kind: Literal["acl", "sim"], acl_lib: str | None = None, **sim_options: Any) -> AclBackend:
    """The backend for ``--backend``: real AscendCL through ctypes, or the simulated NPU.

    Both are imported lazily so that neither ctypes loading nor the simulator's dependencies
    (onnx) are paid for by a process that uses the other.
    """
    if kind == "acl":
        if sim_options:
            raise ValueError(f"simulator options given for the acl backend: {sorted(sim_options)}")
        from dumpcmp.agent.acl import CtypesAcl

        return CtypesAcl(acl_lib)
    if kind == "sim":
        if acl_lib is not None:
            raise ValueError("acl_lib is only meaningful for the acl backend")
        return _open_simulator(sim_options)
    raise ValueError(f"unknown backend kind {kind!r}; expected 'acl' or 'sim'")


def _open_simulator(options: dict[str, Any]) -> AclBackend:
    try:
        npu = importlib.import_module("dumpcmp.fakes.npu")
    except ImportError as exc:
        raise DumpcmpError(
            f"the simulated NPU is not available (cannot import dumpcmp.fakes.npu: {exc}); "
            "install dumpcmp with its simulator dependencies, or use the acl backend"
        ) from exc
    backend = npu.SimulatedAcl(**options)
    if not isinstance(backend, AclBackend):
        raise InternalError("dumpcmp.fakes.npu.SimulatedAcl does not implement AclBackend")
    return backend
