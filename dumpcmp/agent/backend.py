"""The runtime interface shared by real AscendCL (ctypes) and the simulated NPU.

A backend makes raw calls with pyACL's conventions: every call returns the aclError code
last, calls that produce a value return ``(value, ret)``, and calls whose C function returns a
handle, count or size (``aclmdlCreateDataset``, ``aclmdlGetNumInputs`` …) return just that, 0
meaning NULL. ``dumpcmp.fakes`` implements the same methods without importing this module (the
protocol is structural), so the agent cannot tell the two apart.

Two levels: ``execute`` takes and returns numpy arrays and does the device-memory plumbing
itself (what the agent uses); the memory, data-buffer, dataset and description calls with
``execute_datasets`` are the C API one to one (what a pyACL script uses, see ``pyacl``).
Pointers and handles are plain ints.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["AclBackend", "DumpDirReporter", "DumpFileReporter"]


@runtime_checkable
class AclBackend(Protocol):
    """Raw AscendCL calls, pyACL style."""

    # -- lifecycle -------------------------------------------------------------------------

    def init(self, config_path: str | None = None) -> int: ...

    def finalize(self) -> int: ...

    def finalize_reference(self) -> tuple[int, int]:
        """aclFinalizeReference: ``(references left, ret)``; ``ACL_ERROR_API_NOT_SUPPORT`` when
        the library predates it."""
        ...

    def set_device(self, device_id: int) -> int: ...

    def reset_device(self, device_id: int) -> int: ...

    def synchronize_device(self) -> int: ...

    # -- dump ------------------------------------------------------------------------------

    def init_dump(self) -> int: ...

    def set_dump(self, dump_cfg_path: str) -> int: ...

    def finalize_dump(self) -> int: ...

    # -- models ----------------------------------------------------------------------------

    def load_from_file(self, model_path: str) -> tuple[int, int]: ...

    def execute(self, model_id: int, inputs: Sequence[np.ndarray]) -> tuple[list[np.ndarray], int]: ...

    def execute_datasets(self, model_id: int, input_dataset: int, output_dataset: int) -> int: ...

    def unload(self, model_id: int) -> int: ...

    # -- memory (acl_rt.h) -----------------------------------------------------------------

    def malloc(self, size: int, policy: int) -> tuple[int, int]: ...

    def free(self, dev_ptr: int) -> int: ...

    def malloc_host(self, size: int) -> tuple[int, int]: ...

    def free_host(self, host_ptr: int) -> int: ...

    def memcpy(self, dst: int, dest_max: int, src: int, count: int, kind: int) -> int: ...

    # -- data buffers, datasets, model descriptions (acl_base.h, acl_mdl.h) ------------------

    def create_data_buffer(self, data: int, size: int) -> int: ...

    def destroy_data_buffer(self, data_buffer: int) -> int: ...

    def get_data_buffer_addr(self, data_buffer: int) -> int: ...

    def get_data_buffer_size_v2(self, data_buffer: int) -> int: ...

    def create_dataset(self) -> int: ...

    def destroy_dataset(self, dataset: int) -> int: ...

    def add_dataset_buffer(self, dataset: int, data_buffer: int) -> int: ...

    def get_dataset_num_buffers(self, dataset: int) -> int: ...

    def get_dataset_buffer(self, dataset: int, index: int) -> int: ...

    def create_desc(self) -> int: ...

    def destroy_desc(self, model_desc: int) -> int: ...

    def get_desc(self, model_desc: int, model_id: int) -> int: ...

    def get_num_inputs(self, model_desc: int) -> int: ...

    def get_num_outputs(self, model_desc: int) -> int: ...

    def get_input_size_by_index(self, model_desc: int, index: int) -> int: ...

    def get_output_size_by_index(self, model_desc: int, index: int) -> int: ...

    # -- errors ----------------------------------------------------------------------------

    def get_recent_err_msg(self) -> str: ...


@runtime_checkable
class DumpFileReporter(Protocol):
    """A backend that knows which dump files it wrote (the simulated NPU; real AscendCL does not
    say, the agent's watcher finds them)."""

    @property
    def written(self) -> tuple[Path, ...]:
        """Every dump file written so far, in write order."""
        ...


@runtime_checkable
class DumpDirReporter(Protocol):
    """A backend that says where a loaded model dumps (the simulated NPU; real AscendCL names
    the time directory itself, and the agent finds it)."""

    def dump_dir(self, model_id: int) -> Path | None:
        """``{dump_path}/{time}/{device}/{model}/{model_id}`` of a dumped model; None if it is not."""
        ...
