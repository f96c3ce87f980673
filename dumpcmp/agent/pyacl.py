"""A pyACL-shaped face (``acl.init``, ``acl.rt.*``, ``acl.mdl.*``) over any ``AclBackend``.

For users' existing pyACL scripts: ``acl = make_acl(open_backend("sim"))`` lets a script written
for ``import acl`` run against the simulated NPU (or real AscendCL through ctypes) unchanged, as
long as it sticks to the calls below. Like pyACL, nothing raises on a failed call: each call
returns ``ret`` last, and value-producing calls return ``(value, ret)``.

One deliberate difference: pyACL's ``acl.mdl.execute(model_id, input_dataset, output_dataset)``
takes dataset handles built with ``acl.mdl.create_dataset``/``acl.create_data_buffer`` over
device memory and returns ``ret``. Here ``acl.mdl.execute(model_id, inputs)`` takes a list of
numpy arrays and returns ``(outputs, ret)`` (outputs as the backend gives them; raw ``uint8``
bytes for ctypes), since the dataset/buffer/memory calls are not part of this face.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dumpcmp.agent.backend import AclBackend

__all__ = ["AclFace", "MdlFace", "RtFace", "make_acl"]


class RtFace:
    """``acl.rt``: devices."""

    def __init__(self, backend: AclBackend) -> None:
        self._backend = backend

    def set_device(self, device_id: int) -> int:
        return self._backend.set_device(device_id)

    def reset_device(self, device_id: int) -> int:
        return self._backend.reset_device(device_id)

    def synchronize_device(self) -> int:
        return self._backend.synchronize_device()


class MdlFace:
    """``acl.mdl``: dump configuration and models."""

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

    def execute(self, model_id: int, inputs: Sequence[np.ndarray]) -> tuple[list[np.ndarray], int]:
        """numpy in, ``(outputs, ret)`` out; see the module docstring for the pyACL difference."""
        return self._backend.execute(model_id, inputs)

    def unload(self, model_id: int) -> int:
        return self._backend.unload(model_id)


class AclFace:
    """The ``acl`` module object: ``init``/``finalize``/``get_recent_err_msg`` plus ``rt``, ``mdl``."""

    def __init__(self, backend: AclBackend) -> None:
        self._backend = backend
        self.rt = RtFace(backend)
        self.mdl = MdlFace(backend)

    def init(self, path: str = "") -> int:
        # pyACL treats "" as "no config file"; backends take None for that.
        return self._backend.init(path or None)

    def finalize(self) -> int:
        return self._backend.finalize()

    def get_recent_err_msg(self) -> str:
        return self._backend.get_recent_err_msg()


def make_acl(backend: AclBackend) -> AclFace:
    """An ``acl``-module-like object whose calls go straight to ``backend`` (no checks, no raising)."""
    return AclFace(backend)
