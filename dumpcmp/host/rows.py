"""The records a comparison produces: one ``ResultRow`` per target tensor (metrics.md §1.1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dumpcmp.errors import DumpcmpError
from dumpcmp.host.metrics.offline_data import MetricValues
from dumpcmp.proto.dtypes import data_type_of
from dumpcmp.proto.records import set_through_slots

NO_GOLDEN = "*"


@set_through_slots
@dataclass(frozen=True, slots=True)
class ResultRow:
    """One line of a result file; numbers stay floats, only sinks format them."""

    index: int | None  # None for golden-only rows, listed after every target tensor
    op_sequence: int | None
    op_type: str
    npu_name: str
    npu_dtype: str
    npu_address: int | None
    ground_truth: str
    golden_dtype: str
    golden_address: int | None
    tensor_index: str
    shape: tuple[int, ...] | None
    overflow: bool | None
    metrics: MetricValues
    dump_readable: bool = True  # False: the dump file itself could not be read (named in the summary)
    golden_key: str = ""  # the golden tensor compared with (its source's key); "" when none

    @property
    def reasons(self) -> tuple[str, ...]:
        return self.metrics.reasons

    @property
    def cosine(self) -> float:
        return self.metrics.cosine_similarity


def dtype_label(dtype: np.dtype) -> str:
    """The DataType column of a numpy dtype: the CANN name where there is one."""
    try:
        return data_type_of(dtype).name
    except DumpcmpError:
        return str(dtype)
