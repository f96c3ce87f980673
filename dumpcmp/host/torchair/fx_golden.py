"""FX dump file names (formats.md §7.2): ``{fx_node}-{aten target}.{INPUT|OUTPUT}.{index}.{timestamp}.npy``.

The FX op key (``mm-aten.mm.default``) holds dots itself, so a name is read from its end: the
timestamp, the index and the direction are the last three fields before ``.npy``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dumpcmp.errors import BadFileNameError

__all__ = ["FX_SUFFIX", "FxName", "FxTensorKey", "parse_fx_name"]

FX_SUFFIX = ".npy"
_FX_NAME = re.compile(r"^(?P<op>.+)\.(?P<io>INPUT|OUTPUT)\.(?P<index>[0-9]+)\.(?P<ts>[0-9]+)\.npy\Z")


@dataclass(frozen=True, slots=True, order=True)
class FxTensorKey:
    """One FX tensor of one token: op key, ``input`` | ``output``, index."""

    op: str
    io: str
    index: int

    @property
    def label(self) -> str:
        return f"{self.op}.{self.io.upper()}.{self.index}"


@dataclass(frozen=True, slots=True)
class FxName:
    key: FxTensorKey
    timestamp: int


def parse_fx_name(name: str) -> FxName:
    """Parse an FX npy file name; BadFileNameError when it does not follow the grammar."""
    found = _FX_NAME.match(name)
    if found is None:
        raise BadFileNameError(
            name, "expected {fx_node}-{aten target}.{INPUT|OUTPUT}.{index}.{timestamp}.npy"
        )
    key = FxTensorKey(found["op"], found["io"].lower(), int(found["index"]))
    return FxName(key, int(found["ts"]))
