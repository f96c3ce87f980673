"""The runtime interface shared by real AscendCL (ctypes) and the simulated NPU.

A backend makes raw calls with pyACL's conventions: every call returns the aclError code
last, calls that produce a value return ``(value, ret)``. ``dumpcmp.fakes`` implements the same
methods without importing this module (the protocol is structural), so the agent cannot tell
the two apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class AclBackend(Protocol):
    """Raw AscendCL calls, pyACL style."""

    def init(self, config_path: str | None = None) -> int: ...

    def finalize(self) -> int: ...

    def set_device(self, device_id: int) -> int: ...

    def reset_device(self, device_id: int) -> int: ...

    def synchronize_device(self) -> int: ...

    def init_dump(self) -> int: ...

    def set_dump(self, dump_cfg_path: str) -> int: ...

    def finalize_dump(self) -> int: ...

    def load_from_file(self, model_path: str) -> tuple[int, int]: ...

    def execute(self, model_id: int, inputs: Sequence[np.ndarray]) -> tuple[list[np.ndarray], int]: ...

    def unload(self, model_id: int) -> int: ...

    def get_recent_err_msg(self) -> str: ...
