"""The rows of the TorchAir family (metrics.md §2); their verdicts are ``host.verdict``'s.

One ``TorchairRow`` per GE tensor pair. Its metric values depend on the summary mode (real
data, statistics, md5); numbers stay floats, the sink (``host.sinks.torchair_table``) formats.
``None`` is N/A (cannot be computed), NaN is NaN in the data, inf a division by zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from dumpcmp.host.metrics.torchair import ErrorBounds, RealValues
from dumpcmp.host.torchair.records import TensorStats
from dumpcmp.host.verdict import PASS, STATISTICS, statistic_distance


@dataclass(frozen=True, slots=True)
class TorchairThresholds:
    """metrics.md §2's verdict rules; each is a ``compare --mode torchair`` option."""

    cosine: float = 0.99  # real data PASS needs Cosine ≥ this …
    max_relative: float = 0.01  # … and MaxRelativeErr < this
    statistics: float = 0.5  # every statistic's |diff| / (max(|t|, |g|) + 1e-10) ≤ this
    bounds: ErrorBounds = field(default_factory=ErrorBounds)  # the ratio columns' relative-error bounds


@dataclass(frozen=True, slots=True)
class StatsValues:
    """Both sides' statistics; the diffs and relative errors are derived from them."""

    target: TensorStats | None
    golden: TensorStats | None

    def pairs(self) -> tuple[tuple[float | None, float | None], ...]:
        t, g = self.target, self.golden
        return tuple(
            (getattr(t, name) if t is not None else None, getattr(g, name) if g is not None else None)
            for name in ("max", "min", "mean", "l2norm")
        )

    def diffs(self) -> tuple[float | None, ...]:
        """Target minus golden of each statistic; None where a side lacks it."""
        return tuple(None if t is None or g is None else t - g for t, g in self.pairs())

    def relative(self) -> tuple[float | None, ...]:
        """|diff / golden| of each statistic; inf where the golden statistic is 0."""
        return tuple(
            None if d is None or g is None else _relative(d, g)
            for d, (_, g) in zip(self.diffs(), self.pairs(), strict=True)
        )

    @property
    def has_numbers(self) -> bool:
        """True when some statistic is known on both sides and is a number on at least one: NaN
        on the target side only (a NaN-producing op) is a comparison, and a failing one."""
        return any(
            t is not None and g is not None and not (math.isnan(t) and math.isnan(g)) for t, g in self.pairs()
        )

    def unknown(self) -> tuple[str, ...]:
        """The statistics a side lacks (not kept by ``dumpcmp reduce --keep``, say)."""
        return tuple(
            name for name, (t, g) in zip(STATISTICS, self.pairs(), strict=True) if t is None or g is None
        )

    def nan_on_one_side(self) -> tuple[str, ...]:
        """The statistics that are NaN on exactly one side (NaN, or inf and -inf, in its data)."""
        return tuple(
            f"{name} {'NPU' if t is not None and math.isnan(t) else 'bench'}"
            for name, (t, g) in zip(STATISTICS, self.pairs(), strict=True)
            if t is not None and g is not None and math.isnan(t) != math.isnan(g)
        )

    def infinite_on_one_side(self) -> tuple[str, ...]:
        """The statistics that are ±inf on one side and not the same on the other, in words
        (``Max NPU inf``): inf against a finite golden is a fault, whatever its relative error."""
        return tuple(
            f"{name} {side} {value:g}"
            for name, (t, g) in zip(STATISTICS, self.pairs(), strict=True)
            if t is not None and g is not None and t != g
            for side, value in (("NPU", t), ("bench", g))
            if math.isinf(value)
        )

    def failing(self, threshold: float) -> tuple[str, ...]:
        """The statistics beyond ``threshold``; NaN on one side only counts as beyond."""
        return tuple(
            name
            for name, (t, g) in zip(STATISTICS, self.pairs(), strict=True)
            if t is not None and g is not None and statistic_distance(t, g) > threshold
        )


def _relative(diff: float, golden: float) -> float:
    if math.isnan(diff):
        return math.nan
    return math.inf if golden == 0 else abs(diff / golden)


@dataclass(frozen=True, slots=True)
class Md5Values:
    """CRC-32 of each side's tensor bytes; None where it is not known."""

    npu: int | None
    bench: int | None

    @property
    def has_numbers(self) -> bool:
        return self.npu is not None and self.bench is not None


Values = RealValues | StatsValues | Md5Values


@dataclass(frozen=True, slots=True)
class TorchairRow:
    """One line of a TorchAir result file."""

    index: int | None  # the GE dump file's place in its (rank, token) shard
    api_name: str
    npu_label: str
    bench_label: str
    values: Values
    result: str  # PASS / FAIL / N/A (not compared)
    reasons: tuple[str, ...] = ()
    dump_readable: bool = True  # False: the GE side could not be read
    golden_key: str = ""  # torchair has no golden-only rows: nothing to report here

    @property
    def accuracy_reached(self) -> str:
        return "Yes" if self.result == PASS else "No"
