"""Device memory, data buffers, datasets and model descriptions of the simulated NPU.

What a pyACL script drives between load and execute (``aclrtMalloc``, ``aclrtMemcpy``,
``aclCreateDataBuffer``, ``aclmdlCreateDataset`` …), with AscendCL's codes. "Device" memory is
host memory that this class owns, remembered by address, so that a copy whose kind does not
match its pointers, a free of a foreign pointer, or a dataset pointing at host memory is
refused as AscendCL would refuse it. Any other address is taken to be host memory (a numpy
array's, or from ``malloc_host``): like AscendCL, a bad host pointer is the caller's bug.

Handles (buffers, datasets, descriptions) are opaque non-zero ints; 0 is NULL.
"""

from __future__ import annotations

import ctypes
import itertools
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from .onnx_model import ValueSpec
from .ret import Ret

__all__ = ["MEMCPY_KINDS", "ModelIO", "SimulatedDataPlane"]

# aclrtMemcpyKind (acl_rt.h): host to host, host to device, device to host, device to device,
# as (destination on device, source on device).
MEMCPY_KINDS = {0: (False, False), 1: (True, False), 2: (False, True), 3: (True, True)}


@dataclass(frozen=True, slots=True)
class ModelIO:
    """A loaded model's inputs and outputs, as ``aclmdlGetDesc`` describes them."""

    inputs: tuple[ValueSpec, ...]
    outputs: tuple[ValueSpec, ...]


def nbytes(spec: ValueSpec) -> int:
    count = 1
    for dim in spec.shape:
        count *= dim
    return count * spec.dtype.itemsize


@dataclass
class _Buffer:
    addr: int
    size: int


class SimulatedDataPlane(ABC):
    """The data-plane calls of ``AclBackend``; the model side comes from the subclass."""

    def __init__(self) -> None:
        self._device: dict[int, ctypes.Array[ctypes.c_char]] = {}
        self._host: dict[int, ctypes.Array[ctypes.c_char]] = {}
        self._buffers: dict[int, _Buffer] = {}
        self._datasets: dict[int, list[int]] = {}
        self._descs: dict[int, ModelIO | None] = {}
        self._handles = itertools.count(0x1000)  # one sequence: no two objects share a handle

    # ------------------------------------------------------------------ what the subclass provides

    @abstractmethod
    def _fail(self, code: Ret, message: str) -> int:
        """Record ``message`` for get_recent_err_msg and return ``code``."""

    @abstractmethod
    def _not_ready(self, api: str) -> int:
        """The code for a call made before aclInit (0 when initialised)."""

    @abstractmethod
    def _model_io(self, model_id: int) -> ModelIO | None:
        """The loaded model's inputs and outputs; None when no such model is loaded."""

    # ------------------------------------------------------------------ memory

    def _allocate(self, size: int, table: dict[int, ctypes.Array[ctypes.c_char]]) -> int:
        block = ctypes.create_string_buffer(size)
        address = ctypes.addressof(block)
        table[address] = block
        return address

    def is_device(self, address: int, count: int) -> bool:
        """Is ``[address, address + count)`` inside one device allocation?"""
        return any(
            base <= address and address + count <= base + len(block) for base, block in self._device.items()
        )

    def malloc(self, size: int, policy: int) -> tuple[int, int]:
        if code := self._not_ready("aclrtMalloc"):
            return 0, code
        if size <= 0:
            return 0, self._fail(Ret.INVALID_PARAM, f"aclrtMalloc: size must be positive, got {size}")
        return self._allocate(size, self._device), int(Ret.SUCCESS)

    def free(self, dev_ptr: int) -> int:
        if self._device.pop(dev_ptr, None) is None:
            return self._fail(Ret.RT_PARAM_INVALID, f"aclrtFree: {dev_ptr:#x} is not from aclrtMalloc")
        return int(Ret.SUCCESS)

    def malloc_host(self, size: int) -> tuple[int, int]:
        if code := self._not_ready("aclrtMallocHost"):
            return 0, code
        if size <= 0:
            return 0, self._fail(Ret.INVALID_PARAM, f"aclrtMallocHost: size must be positive, got {size}")
        return self._allocate(size, self._host), int(Ret.SUCCESS)

    def free_host(self, host_ptr: int) -> int:
        if self._host.pop(host_ptr, None) is None:
            return self._fail(
                Ret.RT_PARAM_INVALID, f"aclrtFreeHost: {host_ptr:#x} is not from aclrtMallocHost"
            )
        return int(Ret.SUCCESS)

    def memcpy(self, dst: int, dest_max: int, src: int, count: int, kind: int) -> int:
        if not dst or not src or count > dest_max or kind not in MEMCPY_KINDS:
            return self._fail(
                Ret.INVALID_PARAM,
                f"aclrtMemcpy: NULL pointer, count {count} > destMax {dest_max}, or unknown kind {kind}",
            )
        if (self.is_device(dst, count), self.is_device(src, count)) != MEMCPY_KINDS[kind]:
            return self._fail(Ret.RT_PARAM_INVALID, f"aclrtMemcpy: the pointers do not fit copy kind {kind}")
        ctypes.memmove(dst, src, count)
        return int(Ret.SUCCESS)

    # ------------------------------------------------------------------ data buffers

    def create_data_buffer(self, data: int, size: int) -> int:
        if (data == 0) != (size == 0):
            self._fail(Ret.INVALID_PARAM, "aclCreateDataBuffer: a NULL buffer must have size 0")
            return 0
        handle = next(self._handles)
        self._buffers[handle] = _Buffer(data, size)
        return handle

    def destroy_data_buffer(self, data_buffer: int) -> int:
        if self._buffers.pop(data_buffer, None) is None:
            return self._fail(Ret.INVALID_PARAM, "aclDestroyDataBuffer: not a data buffer")
        return int(Ret.SUCCESS)

    def get_data_buffer_addr(self, data_buffer: int) -> int:
        buffer = self._buffers.get(data_buffer)
        return buffer.addr if buffer is not None else 0

    def get_data_buffer_size_v2(self, data_buffer: int) -> int:
        buffer = self._buffers.get(data_buffer)
        return buffer.size if buffer is not None else 0

    # ------------------------------------------------------------------ datasets

    def create_dataset(self) -> int:
        handle = next(self._handles)
        self._datasets[handle] = []
        return handle

    def destroy_dataset(self, dataset: int) -> int:
        # As in AscendCL, the buffers are not the dataset's to destroy.
        if self._datasets.pop(dataset, None) is None:
            return self._fail(Ret.INVALID_PARAM, "aclmdlDestroyDataset: not a dataset")
        return int(Ret.SUCCESS)

    def add_dataset_buffer(self, dataset: int, data_buffer: int) -> int:
        buffers = self._datasets.get(dataset)
        if buffers is None or data_buffer not in self._buffers:
            return self._fail(Ret.INVALID_PARAM, "aclmdlAddDatasetBuffer: not a dataset or not a data buffer")
        buffers.append(data_buffer)
        return int(Ret.SUCCESS)

    def get_dataset_num_buffers(self, dataset: int) -> int:
        return len(self._datasets.get(dataset, ()))

    def get_dataset_buffer(self, dataset: int, index: int) -> int:
        buffers = self._datasets.get(dataset, [])
        return buffers[index] if 0 <= index < len(buffers) else 0

    def _dataset_buffers(self, dataset: int) -> list[_Buffer] | None:
        handles = self._datasets.get(dataset)
        return None if handles is None else [self._buffers[h] for h in handles if h in self._buffers]

    # ------------------------------------------------------------------ model descriptions

    def create_desc(self) -> int:
        handle = next(self._handles)
        self._descs[handle] = None
        return handle

    def destroy_desc(self, model_desc: int) -> int:
        if model_desc not in self._descs:
            return self._fail(Ret.INVALID_PARAM, "aclmdlDestroyDesc: not a model description")
        del self._descs[model_desc]
        return int(Ret.SUCCESS)

    def get_desc(self, model_desc: int, model_id: int) -> int:
        if model_desc not in self._descs:
            return self._fail(Ret.INVALID_PARAM, "aclmdlGetDesc: not a model description")
        io = self._model_io(model_id)
        if io is None:
            return self._fail(Ret.INVALID_MODEL_ID, f"aclmdlGetDesc: model {model_id} is not loaded")
        self._descs[model_desc] = io
        return int(Ret.SUCCESS)

    def _desc_specs(self, model_desc: int, outputs: bool) -> tuple[ValueSpec, ...]:
        io = self._descs.get(model_desc)
        if io is None:
            return ()
        return io.outputs if outputs else io.inputs

    def get_num_inputs(self, model_desc: int) -> int:
        return len(self._desc_specs(model_desc, outputs=False))

    def get_num_outputs(self, model_desc: int) -> int:
        return len(self._desc_specs(model_desc, outputs=True))

    def get_input_size_by_index(self, model_desc: int, index: int) -> int:
        specs = self._desc_specs(model_desc, outputs=False)
        return nbytes(specs[index]) if 0 <= index < len(specs) else 0

    def get_output_size_by_index(self, model_desc: int, index: int) -> int:
        specs = self._desc_specs(model_desc, outputs=True)
        return nbytes(specs[index]) if 0 <= index < len(specs) else 0

    # ------------------------------------------------------------------ aclmdlExecute's side

    def read_inputs(self, dataset: int, specs: tuple[ValueSpec, ...]) -> tuple[list[np.ndarray], str]:
        """The input tensors a dataset points at, or why it does not fit ``specs``."""
        buffers = self._dataset_buffers(dataset)
        if buffers is None:
            return [], "the input dataset is not a dataset"
        if len(buffers) != len(specs):
            return [], f"the model takes {len(specs)} input(s), the input dataset holds {len(buffers)}"
        arrays = []
        for index, (spec, buffer) in enumerate(zip(specs, buffers, strict=True)):
            size = nbytes(spec)
            if buffer.size != size or (size and not self.is_device(buffer.addr, size)):
                return [], (
                    f"input {index} ({spec.name!r}) takes {size} bytes of device memory; its buffer holds "
                    f"{buffer.size} bytes at {buffer.addr:#x}"
                    + ("" if self.is_device(buffer.addr, buffer.size) else ", not device memory")
                )
            raw = ctypes.string_at(buffer.addr, size) if size else b""
            arrays.append(np.frombuffer(raw, dtype=spec.dtype).reshape(spec.shape))
        return arrays, ""

    def write_outputs(self, dataset: int, arrays: list[np.ndarray]) -> str:
        """Copy ``arrays`` into the output dataset's buffers, or say why they do not fit.

        A NULL, 0-byte buffer asks for the output to be allocated here (how AscendCL serves
        outputs of unknown size): the buffer then points at new device memory that the caller
        must free with aclrtFree.
        """
        buffers = self._dataset_buffers(dataset)
        if buffers is None:
            return "the output dataset is not a dataset"
        if len(buffers) != len(arrays):
            return f"the model has {len(arrays)} output(s), the output dataset holds {len(buffers)}"
        for index, (buffer, array) in enumerate(zip(buffers, arrays, strict=True)):
            raw = np.ascontiguousarray(array)
            if buffer.addr == 0 and buffer.size == 0:
                buffer.addr = self._allocate(max(raw.nbytes, 1), self._device)
                buffer.size = raw.nbytes
            elif buffer.size < raw.nbytes or not self.is_device(buffer.addr, raw.nbytes):
                return (
                    f"output {index} needs {raw.nbytes} bytes of device memory; its buffer holds "
                    f"{buffer.size} bytes at {buffer.addr:#x}"
                )
            if raw.nbytes:
                ctypes.memmove(buffer.addr, raw.ctypes.data, raw.nbytes)
        return ""
