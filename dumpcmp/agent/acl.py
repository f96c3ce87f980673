"""``CtypesAcl``: the ``AclBackend`` over the real ``libascendcl.so`` (or its C stub), via ctypes.

Raw calls only: every method returns the aclError code as pyACL does and never raises for a
non-zero code; ``dumpcmp.agent.runtime.AclRuntime`` turns codes into exceptions. Every symbol's
``argtypes``/``restype`` is declared once, at load time, from the acl.h signatures: without them
ctypes would pass Python ints as C ``int`` and truncate pointers and ``size_t`` on 64-bit hosts.

``execute`` hides AscendCL's dataset plumbing behind numpy arrays (see its docstring). Failures of
the helper calls inside it are reported as the code of the helper, and ``get_recent_err_msg``
names the helper, because the caller only sees one call (``aclmdlExecute``). The memory,
data-buffer, dataset and description calls are also offered one to one, for the pyACL face.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable, Mapping, Sequence
from ctypes import POINTER, c_char_p, c_int, c_int32, c_size_t, c_uint32, c_uint64, c_void_p

import numpy as np

from dumpcmp.agent.acl_codes import AclCode
from dumpcmp.agent.discovery import LoadedLibrary, load_libascendcl
from dumpcmp.errors import AclError

__all__ = [
    "ACL_MEMCPY_DEVICE_TO_DEVICE",
    "ACL_MEMCPY_DEVICE_TO_HOST",
    "ACL_MEMCPY_HOST_TO_DEVICE",
    "ACL_MEMCPY_HOST_TO_HOST",
    "ACL_MEM_MALLOC_HUGE_FIRST",
    "ACL_MEM_MALLOC_HUGE_ONLY",
    "ACL_MEM_MALLOC_NORMAL_ONLY",
    "CtypesAcl",
]

# aclrtMemcpyKind and aclrtMemMallocPolicy (acl_rt.h); C enums are passed as int.
ACL_MEMCPY_HOST_TO_HOST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_MEMCPY_DEVICE_TO_DEVICE = 3
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEM_MALLOC_HUGE_ONLY = 1
ACL_MEM_MALLOC_NORMAL_ONLY = 2

_CType = type  # any ctypes type; ctypes' own classes are not usefully expressible to mypy

# name -> (restype, argtypes), from acl.h / acl_rt.h / acl_mdl.h / acl_base.h.
_SIGNATURES: dict[str, tuple[_CType | None, tuple[_CType, ...]]] = {
    "aclInit": (c_int, (c_char_p,)),
    "aclFinalize": (c_int, ()),
    "aclrtSetDevice": (c_int, (c_int32,)),
    "aclrtResetDevice": (c_int, (c_int32,)),
    "aclrtSynchronizeDevice": (c_int, ()),
    "aclmdlInitDump": (c_int, ()),
    "aclmdlSetDump": (c_int, (c_char_p,)),
    "aclmdlFinalizeDump": (c_int, ()),
    "aclmdlLoadFromFile": (c_int, (c_char_p, POINTER(c_uint32))),
    "aclmdlUnload": (c_int, (c_uint32,)),
    "aclmdlExecute": (c_int, (c_uint32, c_void_p, c_void_p)),
    "aclmdlCreateDesc": (c_void_p, ()),
    "aclmdlDestroyDesc": (c_int, (c_void_p,)),
    "aclmdlGetDesc": (c_int, (c_void_p, c_uint32)),
    "aclmdlGetNumInputs": (c_size_t, (c_void_p,)),
    "aclmdlGetNumOutputs": (c_size_t, (c_void_p,)),
    "aclmdlGetInputSizeByIndex": (c_size_t, (c_void_p, c_size_t)),
    "aclmdlGetOutputSizeByIndex": (c_size_t, (c_void_p, c_size_t)),
    "aclmdlCreateDataset": (c_void_p, ()),
    "aclmdlDestroyDataset": (c_int, (c_void_p,)),
    "aclmdlAddDatasetBuffer": (c_int, (c_void_p, c_void_p)),
    "aclmdlGetDatasetNumBuffers": (c_size_t, (c_void_p,)),
    "aclmdlGetDatasetBuffer": (c_void_p, (c_void_p, c_size_t)),
    "aclCreateDataBuffer": (c_void_p, (c_void_p, c_size_t)),
    "aclDestroyDataBuffer": (c_int, (c_void_p,)),
    "aclGetDataBufferAddr": (c_void_p, (c_void_p,)),
    "aclGetDataBufferSizeV2": (c_size_t, (c_void_p,)),
    "aclrtMalloc": (c_int, (POINTER(c_void_p), c_size_t, c_int)),
    "aclrtFree": (c_int, (c_void_p,)),
    "aclrtMallocHost": (c_int, (POINTER(c_void_p), c_size_t)),
    "aclrtFreeHost": (c_int, (c_void_p,)),
    "aclrtMemcpy": (c_int, (c_void_p, c_size_t, c_void_p, c_size_t, c_int)),
}
# Missing from some CANN releases: aclGetRecentErrMsg from very old ones (messages are then
# empty), aclFinalizeReference from those before reference counting (8.x added both).
_OPTIONAL_SIGNATURES: dict[str, tuple[_CType | None, tuple[_CType, ...]]] = {
    "aclGetRecentErrMsg": (c_char_p, ()),
    "aclFinalizeReference": (c_int, (POINTER(c_uint64),)),
}


class _StepFailed(Exception):
    """A helper call inside ``execute`` failed; unwinds to ``execute``, never escapes it."""

    def __init__(self, code: int, note: str) -> None:
        self.code = code
        self.note = note
        super().__init__(note)


def _path_arg(path: str | os.PathLike[str] | None) -> bytes | None:
    # os.fsencode keeps non-UTF-8 file names intact, as the C library will see them.
    return None if path is None else os.fsencode(path)


class CtypesAcl:
    """Raw AscendCL calls through ctypes; structurally an ``AclBackend``."""

    def __init__(
        self,
        lib_path: str | os.PathLike[str] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        loaded: LoadedLibrary = load_libascendcl(lib_path, environ=environ)
        self.path = loaded.path
        self._lib = loaded.handle
        self._declare()
        # Set by execute when a helper call, or the binding's own input check, fails.
        self._note: str | None = None

    def _declare(self) -> None:
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                fn = getattr(self._lib, name)
            except AttributeError as exc:
                raise AclError(
                    code=-1,
                    name="SYMBOL_NOT_FOUND",
                    api=name,
                    recent_message=f"{self.path} does not export {name}; is it CANN's libascendcl.so?",
                ) from exc
            fn.restype = restype
            fn.argtypes = argtypes
        self._optional: set[str] = set()
        for name, (restype, argtypes) in _OPTIONAL_SIGNATURES.items():
            fn = getattr(self._lib, name, None)
            if fn is not None:
                fn.restype = restype
                fn.argtypes = argtypes
                self._optional.add(name)
        self._has_err_msg = "aclGetRecentErrMsg" in self._optional

    def _call(self, name: str, *args: object) -> int:
        # A note from an earlier failed execute must not be reported as this call's reason.
        self._note = None
        return int(getattr(self._lib, name)(*args))

    # -- lifecycle -------------------------------------------------------------------------

    def init(self, config_path: str | None = None) -> int:
        return self._call("aclInit", _path_arg(config_path))

    def finalize(self) -> int:
        return self._call("aclFinalize")

    def finalize_reference(self) -> tuple[int, int]:
        if "aclFinalizeReference" not in self._optional:
            self._note = f"{self.path} has no aclFinalizeReference (CANN before reference counting)"
            return 0, AclCode.API_NOT_SUPPORT
        count = c_uint64(0)
        ret = self._call("aclFinalizeReference", ctypes.byref(count))
        return count.value, ret

    def set_device(self, device_id: int) -> int:
        return self._call("aclrtSetDevice", device_id)

    def reset_device(self, device_id: int) -> int:
        return self._call("aclrtResetDevice", device_id)

    def synchronize_device(self) -> int:
        return self._call("aclrtSynchronizeDevice")

    # -- dump ------------------------------------------------------------------------------

    def init_dump(self) -> int:
        return self._call("aclmdlInitDump")

    def set_dump(self, dump_cfg_path: str) -> int:
        return self._call("aclmdlSetDump", _path_arg(dump_cfg_path))

    def finalize_dump(self) -> int:
        return self._call("aclmdlFinalizeDump")

    # -- models ----------------------------------------------------------------------------

    def load_from_file(self, model_path: str) -> tuple[int, int]:
        model_id = c_uint32(0)
        ret = self._call("aclmdlLoadFromFile", _path_arg(model_path), ctypes.byref(model_id))
        return model_id.value, ret

    def unload(self, model_id: int) -> int:
        return self._call("aclmdlUnload", model_id)

    def execute(self, model_id: int, inputs: Sequence[np.ndarray]) -> tuple[list[np.ndarray], int]:
        """Run a loaded model synchronously on numpy inputs; return ``(outputs, ret)``.

        Each input's bytes (C order) are copied to device memory; the caller must pass arrays of
        the model's input dtype and shape, and count and byte sizes are checked against the model
        description first (``ACL_ERROR_MODEL_INPUT_NOT_MATCH`` otherwise, with the sizes in the
        recent message). Outputs come back as flat ``uint8`` arrays of raw bytes, one per model
        output: the dtype/shape calls are not bound, so use ``out.view(dtype).reshape(shape)``.
        An output whose size the description gives as 0 (shape unknown before execution) is
        passed as a NULL, 0-byte buffer: aclmdlExecute allocates it and points the buffer at it;
        its bytes are copied back and that device memory is freed here like the rest. Dynamic
        batch/HW setup calls are not bound.

        All device memory, buffers, datasets and the description are released before returning,
        also on failure. On failure ``outputs`` is empty.
        """
        self._note = None
        arrays = [np.ascontiguousarray(a) for a in inputs]
        with _Resources(self._lib) as res:
            try:
                desc = res.desc(model_id)
                self._check_inputs(desc, model_id, arrays)
                in_ds = res.dataset()
                for i, arr in enumerate(arrays):
                    dev = res.device_memory(arr.nbytes, f"input {i}")
                    if arr.nbytes:
                        res.memcpy(dev, arr.nbytes, arr.ctypes.data, ACL_MEMCPY_HOST_TO_DEVICE)
                    res.add_buffer(in_ds, dev, arr.nbytes)
                out_ds = res.dataset()
                out_bufs: list[tuple[int, bool]] = []  # (data buffer, allocated by aclmdlExecute)
                for i in range(self._lib.aclmdlGetNumOutputs(desc)):
                    size = int(self._lib.aclmdlGetOutputSizeByIndex(desc, i))
                    dev = res.device_memory(size, f"output {i}")
                    out_bufs.append((res.add_buffer(out_ds, dev, size), size == 0))
                ret = int(self._lib.aclmdlExecute(model_id, in_ds, out_ds))
                res.adopt_outputs(b for b, by_execute in out_bufs if by_execute)
                if ret != AclCode.SUCCESS:
                    return [], ret
                outputs = []
                for buf, _ in out_bufs:
                    dev = self._lib.aclGetDataBufferAddr(buf)
                    size = int(self._lib.aclGetDataBufferSizeV2(buf))
                    host = np.empty(size, dtype=np.uint8)
                    if size:
                        res.memcpy(host.ctypes.data, size, dev, ACL_MEMCPY_DEVICE_TO_HOST)
                    outputs.append(host)
                return outputs, AclCode.SUCCESS
            except _StepFailed as failed:
                self._note = failed.note
                return [], failed.code

    def _check_inputs(self, desc: int, model_id: int, arrays: list[np.ndarray]) -> None:
        # AscendCL would reject a mismatch too, but only as a bare code; sizes help the user.
        expected = int(self._lib.aclmdlGetNumInputs(desc))
        if len(arrays) != expected:
            raise _StepFailed(
                AclCode.MODEL_INPUT_NOT_MATCH,
                f"model {model_id} takes {expected} input(s), got {len(arrays)}",
            )
        for i, arr in enumerate(arrays):
            size = int(self._lib.aclmdlGetInputSizeByIndex(desc, i))
            if arr.nbytes != size:
                raise _StepFailed(
                    AclCode.MODEL_INPUT_NOT_MATCH,
                    f"input {i} has {arr.nbytes} bytes ({arr.dtype}{list(arr.shape)}), "
                    f"model {model_id} expects {size} bytes",
                )

    def execute_datasets(self, model_id: int, input_dataset: int, output_dataset: int) -> int:
        return self._call("aclmdlExecute", model_id, input_dataset, output_dataset)

    # -- memory, data buffers, datasets, descriptions: the C calls one to one ------------------

    def malloc(self, size: int, policy: int) -> tuple[int, int]:
        ptr = c_void_p()
        ret = self._call("aclrtMalloc", ctypes.byref(ptr), size, policy)
        return ptr.value or 0, ret

    def free(self, dev_ptr: int) -> int:
        return self._call("aclrtFree", dev_ptr)

    def malloc_host(self, size: int) -> tuple[int, int]:
        ptr = c_void_p()
        ret = self._call("aclrtMallocHost", ctypes.byref(ptr), size)
        return ptr.value or 0, ret

    def free_host(self, host_ptr: int) -> int:
        return self._call("aclrtFreeHost", host_ptr)

    def memcpy(self, dst: int, dest_max: int, src: int, count: int, kind: int) -> int:
        return self._call("aclrtMemcpy", dst, dest_max, src, count, kind)

    def _handle(self, name: str, *args: object) -> int:
        # Pointer results: ctypes gives None for NULL; pyACL gives 0.
        self._note = None
        return int(getattr(self._lib, name)(*args) or 0)

    def create_data_buffer(self, data: int, size: int) -> int:
        return self._handle("aclCreateDataBuffer", data or None, size)

    def destroy_data_buffer(self, data_buffer: int) -> int:
        return self._call("aclDestroyDataBuffer", data_buffer)

    def get_data_buffer_addr(self, data_buffer: int) -> int:
        return self._handle("aclGetDataBufferAddr", data_buffer)

    def get_data_buffer_size_v2(self, data_buffer: int) -> int:
        return self._handle("aclGetDataBufferSizeV2", data_buffer)

    def create_dataset(self) -> int:
        return self._handle("aclmdlCreateDataset")

    def destroy_dataset(self, dataset: int) -> int:
        return self._call("aclmdlDestroyDataset", dataset)

    def add_dataset_buffer(self, dataset: int, data_buffer: int) -> int:
        return self._call("aclmdlAddDatasetBuffer", dataset, data_buffer)

    def get_dataset_num_buffers(self, dataset: int) -> int:
        return self._handle("aclmdlGetDatasetNumBuffers", dataset)

    def get_dataset_buffer(self, dataset: int, index: int) -> int:
        return self._handle("aclmdlGetDatasetBuffer", dataset, index)

    def create_desc(self) -> int:
        return self._handle("aclmdlCreateDesc")

    def destroy_desc(self, model_desc: int) -> int:
        return self._call("aclmdlDestroyDesc", model_desc)

    def get_desc(self, model_desc: int, model_id: int) -> int:
        return self._call("aclmdlGetDesc", model_desc, model_id)

    def get_num_inputs(self, model_desc: int) -> int:
        return self._handle("aclmdlGetNumInputs", model_desc)

    def get_num_outputs(self, model_desc: int) -> int:
        return self._handle("aclmdlGetNumOutputs", model_desc)

    def get_input_size_by_index(self, model_desc: int, index: int) -> int:
        return self._handle("aclmdlGetInputSizeByIndex", model_desc, index)

    def get_output_size_by_index(self, model_desc: int, index: int) -> int:
        return self._handle("aclmdlGetOutputSizeByIndex", model_desc, index)

    # -- errors ----------------------------------------------------------------------------

    def get_recent_err_msg(self) -> str:
        """The binding's own note about the last failed ``execute`` step, then AscendCL's message."""
        parts: list[str] = []
        if self._note:
            parts.append(self._note)
            self._note = None
        if self._has_err_msg:
            raw = self._lib.aclGetRecentErrMsg()
            if raw:  # NULL when there is no message
                parts.append(os.fsdecode(raw))
        return "; ".join(parts)


class _Resources:
    """Owns what one ``execute`` allocates, and releases it in reverse order on exit.

    Release errors are ignored on purpose: the execution's own result is what the caller needs,
    and a release can only fail if AscendCL is already broken (it will show on the next call).
    """

    def __init__(self, lib: ctypes.CDLL) -> None:
        self._lib = lib
        self._release: list[tuple[str, int]] = []  # (destroy function, handle), in creation order

    def __enter__(self) -> _Resources:
        return self

    def __exit__(self, *exc: object) -> None:
        for fn, handle in reversed(self._release):
            getattr(self._lib, fn)(handle)
        self._release.clear()

    def desc(self, model_id: int) -> int:
        desc = self._lib.aclmdlCreateDesc()
        if not desc:
            raise _StepFailed(AclCode.BAD_ALLOC, "aclmdlCreateDesc returned NULL")
        self._release.append(("aclmdlDestroyDesc", desc))
        ret = int(self._lib.aclmdlGetDesc(desc, model_id))
        if ret:
            raise _StepFailed(ret, f"aclmdlGetDesc(model {model_id}) failed")
        return int(desc)

    def dataset(self) -> int:
        ds = self._lib.aclmdlCreateDataset()
        if not ds:
            raise _StepFailed(AclCode.BAD_ALLOC, "aclmdlCreateDataset returned NULL")
        self._release.append(("aclmdlDestroyDataset", ds))
        return int(ds)

    def device_memory(self, size: int, what: str) -> int | None:
        # aclrtMalloc rejects size 0; an empty tensor travels as a NULL, 0-byte buffer instead.
        if size == 0:
            return None
        ptr = c_void_p()
        ret = int(self._lib.aclrtMalloc(ctypes.byref(ptr), size, ACL_MEM_MALLOC_HUGE_FIRST))
        if ret:
            raise _StepFailed(ret, f"aclrtMalloc({size} bytes) for {what} failed")
        if ptr.value is None:  # success without a pointer: treat as an allocation failure
            raise _StepFailed(AclCode.BAD_ALLOC, f"aclrtMalloc({size} bytes) for {what} returned NULL")
        self._release.append(("aclrtFree", ptr.value))
        return ptr.value

    def add_buffer(self, dataset: int, dev: int | None, size: int) -> int:
        buf = self._lib.aclCreateDataBuffer(dev, size)
        if not buf:
            raise _StepFailed(AclCode.BAD_ALLOC, "aclCreateDataBuffer returned NULL")
        # Released before the dataset and the memory it points to (reverse order).
        self._release.append(("aclDestroyDataBuffer", buf))
        ret = int(self._lib.aclmdlAddDatasetBuffer(dataset, buf))
        if ret:
            raise _StepFailed(ret, "aclmdlAddDatasetBuffer failed")
        return int(buf)

    def adopt_outputs(self, buffers: Iterable[int]) -> None:
        """Free the device memory aclmdlExecute allocated for NULL, 0-byte output buffers.

        The caller owns it (acl_mdl.h: aclrtFree it); left alone it would leak on every call.
        """
        for buf in buffers:
            dev = self._lib.aclGetDataBufferAddr(buf)
            if dev:
                self._release.append(("aclrtFree", dev))

    def memcpy(self, dst: int | None, count: int, src: int | None, kind: int) -> None:
        ret = int(self._lib.aclrtMemcpy(dst, count, src, count, kind))
        if ret:
            direction = "host to device" if kind == ACL_MEMCPY_HOST_TO_DEVICE else "device to host"
            raise _StepFailed(ret, f"aclrtMemcpy({count} bytes, {direction}) failed")
