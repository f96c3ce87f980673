"""A pyACL-shaped face (``acl.init``, ``acl.rt.*``, ``acl.mdl.*``, ``acl.util.*``) over any ``AclBackend``.

For users' existing pyACL dump scripts: ``acl = make_acl(open_backend("sim"))`` (or over real
AscendCL through ctypes) lets a script written for ``import acl`` run unchanged, as long as it
sticks to the calls below. Like pyACL, nothing raises on a failed call: each call returns
``ret`` last, value-producing calls return ``(value, ret)``, and the calls whose C function
returns a handle, count or size return just that (0 for NULL). Pointers and handles are ints.

This face is a **subset** of pyACL: what a model dump script calls. Present:

* ``acl``: ``init``, ``finalize``, ``finalize_reference``, ``get_recent_err_msg``,
  ``create_data_buffer``, ``destroy_data_buffer``, ``get_data_buffer_addr``,
  ``get_data_buffer_size`` (served by aclGetDataBufferSizeV2, so not truncated to 32 bits),
  ``get_data_buffer_size_v2``;
* ``acl.rt``: ``set_device``, ``reset_device``, ``synchronize_device``, ``malloc``, ``free``,
  ``malloc_host``, ``free_host``, ``memcpy`` (``ACL_MEMCPY_*`` kinds and ``ACL_MEM_MALLOC_*``
  policies are constants of this module, with acl_rt.h's values);
* ``acl.mdl``: ``init_dump``, ``set_dump``, ``finalize_dump``, ``load_from_file``, ``execute``
  (``ret = acl.mdl.execute(model_id, input_dataset, output_dataset)``), ``unload``,
  ``create_desc``, ``get_desc``, ``destroy_desc``, ``get_num_inputs``, ``get_num_outputs``,
  ``get_input_size_by_index``, ``get_output_size_by_index``, ``create_dataset``,
  ``add_dataset_buffer`` (``(dataset, ret)``), ``get_dataset_num_buffers``,
  ``get_dataset_buffer``, ``destroy_dataset``;
* ``acl.util``: ``numpy_to_ptr``, ``ptr_to_numpy`` (a view, no copy, as in pyACL),
  ``bytes_to_ptr``, ``ptr_to_bytes``.

Missing: contexts and streams (``acl.rt.create_context``/``set_context``/``create_stream``/
``synchronize_stream`` …; the calls here use the device's default context), ``acl.rt.memset``,
the async calls (``execute_async``, ``memcpy_async``), ``get_run_mode``, loading from memory,
dynamic batch/image size/dims setup, tensor descriptions and the dims/data-type/format queries of
``acl.mdl`` (``get_input_dims``, ``get_output_data_type`` …), ``acl.update_data_buffer``,
``acl.util.numpy_contiguous_to_ptr``, and everything outside model execution (DVPP, op
execution, profiling). ``acl.util.numpy_to_ptr`` refuses a non-contiguous array (pyACL warns
and returns a pointer to memory that does not hold the array's elements in order).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import numpy as np

from dumpcmp.agent.acl import (
    ACL_MEM_MALLOC_HUGE_FIRST,
    ACL_MEM_MALLOC_HUGE_ONLY,
    ACL_MEM_MALLOC_NORMAL_ONLY,
    ACL_MEMCPY_DEVICE_TO_DEVICE,
    ACL_MEMCPY_DEVICE_TO_HOST,
    ACL_MEMCPY_HOST_TO_DEVICE,
    ACL_MEMCPY_HOST_TO_HOST,
)
from dumpcmp.agent.backend import AclBackend

__all__ = [
    "ACL_MEMCPY_DEVICE_TO_DEVICE",
    "ACL_MEMCPY_DEVICE_TO_HOST",
    "ACL_MEMCPY_HOST_TO_DEVICE",
    "ACL_MEMCPY_HOST_TO_HOST",
    "ACL_MEM_MALLOC_HUGE_FIRST",
    "ACL_MEM_MALLOC_HUGE_ONLY",
    "ACL_MEM_MALLOC_NORMAL_ONLY",
    "AclFace",
    "MdlFace",
    "RtFace",
    "UtilFace",
    "make_acl",
]

# NumPy C type numbers (the ``type`` argument of ptr_to_numpy) of the types pyACL lists.
_NUMPY_TYPES: dict[int, np.dtype[Any]] = {
    np.dtype(t).num: np.dtype(t)
    for t in (
        np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.intc, np.uintc,
        np.int_, np.uint, np.longlong, np.ulonglong, np.float32, np.float64, np.float16,
    )
}  # fmt: skip


class RtFace:
    """``acl.rt``: devices and memory."""

    def __init__(self, backend: AclBackend) -> None:
        self._backend = backend

    def set_device(self, device_id: int) -> int:
        return self._backend.set_device(device_id)

    def reset_device(self, device_id: int) -> int:
        return self._backend.reset_device(device_id)

    def synchronize_device(self) -> int:
        return self._backend.synchronize_device()

    def malloc(self, size: int, policy: int) -> tuple[int, int]:
        return self._backend.malloc(size, policy)

    def free(self, dev_ptr: int) -> int:
        return self._backend.free(dev_ptr)

    def malloc_host(self, size: int) -> tuple[int, int]:
        return self._backend.malloc_host(size)

    def free_host(self, host_ptr: int) -> int:
        return self._backend.free_host(host_ptr)

    def memcpy(self, dst: int, dest_max: int, src: int, count: int, kind: int) -> int:
        return self._backend.memcpy(dst, dest_max, src, count, kind)


class MdlFace:
    """``acl.mdl``: dump configuration, models, descriptions and datasets."""

    def __init__(self, backend: AclBackend) -> None:
        self._backend = backend

    def init_dump(self) -> int:
        return self._backend.init_dump()

    def set_dump(self, dump_cfg_path: str) -> int:
        return self._backend.set_dump(dump_cfg_path)

    def finalize_dump(self) -> int:
        return self._backend.finalize_dump()

    def load_from_file(self, model_path: str) -> tuple[int, int]:
        return self._backend.load_from_file(model_path)

    def execute(self, model_id: int, input_dataset: int, output_dataset: int) -> int:
        return self._backend.execute_datasets(model_id, input_dataset, output_dataset)

    def unload(self, model_id: int) -> int:
        return self._backend.unload(model_id)

    def create_desc(self) -> int:
        return self._backend.create_desc()

    def get_desc(self, model_desc: int, model_id: int) -> int:
        return self._backend.get_desc(model_desc, model_id)

    def destroy_desc(self, model_desc: int) -> int:
        return self._backend.destroy_desc(model_desc)

    def get_num_inputs(self, model_desc: int) -> int:
        return self._backend.get_num_inputs(model_desc)

    def get_num_outputs(self, model_desc: int) -> int:
        return self._backend.get_num_outputs(model_desc)

    def get_input_size_by_index(self, model_desc: int, index: int) -> int:
        return self._backend.get_input_size_by_index(model_desc, index)

    def get_output_size_by_index(self, model_desc: int, index: int) -> int:
        return self._backend.get_output_size_by_index(model_desc, index)

    def create_dataset(self) -> int:
        return self._backend.create_dataset()

    def add_dataset_buffer(self, dataset: int, data_buffer: int) -> tuple[int, int]:
        # pyACL hands the dataset back along with ret.
        return dataset, self._backend.add_dataset_buffer(dataset, data_buffer)

    def get_dataset_num_buffers(self, dataset: int) -> int:
        return self._backend.get_dataset_num_buffers(dataset)

    def get_dataset_buffer(self, dataset: int, index: int) -> int:
        return self._backend.get_dataset_buffer(dataset, index)

    def destroy_dataset(self, dataset: int) -> int:
        return self._backend.destroy_dataset(dataset)


class UtilFace:
    """``acl.util``: host pointers to and from numpy arrays and bytes (no AscendCL call)."""

    @staticmethod
    def numpy_to_ptr(array: np.ndarray) -> int:
        """The address of ``array``'s data; valid while the array lives."""
        if not array.flags.c_contiguous:
            raise ValueError("numpy_to_ptr needs a C-contiguous array; pass np.ascontiguousarray(a)")
        return int(array.ctypes.data)

    @staticmethod
    def ptr_to_numpy(ptr: int, shape: Sequence[int], np_type: int) -> np.ndarray:
        """A numpy view (no copy) of host memory at ``ptr``; ``np_type`` is a NumPy C type number."""
        dtype = _NUMPY_TYPES.get(np_type)
        if dtype is None:
            raise ValueError(f"unknown NumPy type number {np_type}; known: {sorted(_NUMPY_TYPES)}")
        count = int(np.prod(shape, dtype=np.int64))
        raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(ptr)
        return np.frombuffer(memoryview(raw).cast("B"), dtype=dtype, count=count).reshape(tuple(shape))

    @staticmethod
    def bytes_to_ptr(data: bytes) -> int:
        """The address of ``data``'s bytes; valid while ``data`` lives."""
        return int(ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0)

    @staticmethod
    def ptr_to_bytes(ptr: int, size: int) -> bytes:
        return ctypes.string_at(ptr, size)


class AclFace:
    """The ``acl`` module object: lifecycle and data buffers, plus ``rt``, ``mdl``, ``util``."""

    def __init__(self, backend: AclBackend) -> None:
        self._backend = backend
        self.rt = RtFace(backend)
        self.mdl = MdlFace(backend)
        self.util = UtilFace()

    def init(self, path: str = "") -> int:
        # pyACL treats "" as "no config file"; backends take None for that.
        return self._backend.init(path or None)

    def finalize(self) -> int:
        return self._backend.finalize()

    def finalize_reference(self) -> tuple[int, int]:
        return self._backend.finalize_reference()

    def get_recent_err_msg(self) -> str:
        return self._backend.get_recent_err_msg()

    def create_data_buffer(self, data: int, size: int) -> int:
        return self._backend.create_data_buffer(data, size)

    def destroy_data_buffer(self, data_buffer: int) -> int:
        return self._backend.destroy_data_buffer(data_buffer)

    def get_data_buffer_addr(self, data_buffer: int) -> int:
        return self._backend.get_data_buffer_addr(data_buffer)

    def get_data_buffer_size(self, data_buffer: int) -> int:
        return self._backend.get_data_buffer_size_v2(data_buffer)

    def get_data_buffer_size_v2(self, data_buffer: int) -> int:
        return self._backend.get_data_buffer_size_v2(data_buffer)


def make_acl(backend: AclBackend) -> AclFace:
    """An ``acl``-module-like object whose calls go straight to ``backend`` (no checks, no raising)."""
    return AclFace(backend)
