"""The records a comparison produces: one ``ResultRow`` per target tensor (metrics.md §1.1)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from dumpcmp.host.metrics.offline_data import MetricValues

NO_GOLDEN = "*"


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

    @property
    def reasons(self) -> tuple[str, ...]:
        return self.metrics.reasons

    @property
    def cosine(self) -> float:
        return self.metrics.cosine_similarity

    def below(self, threshold: float) -> bool:
        """True when the cosine is a number under ``threshold``, or NaN where numbers were expected."""
        cos = self.metrics.cosine_similarity
        if math.isnan(cos):
            return self.ground_truth != NO_GOLDEN and any(not math.isnan(v) for v in self.metrics.numbers())
        return cos < threshold
