"""The rows of the TorchAir family (metrics.md §2) and the rules that give their verdicts.

One ``TorchairRow`` per GE tensor pair. Its metric values depend on the summary mode (real
data, statistics, md5); numbers stay floats, the sink (``host.sinks.torchair_table``) formats.
``None`` is N/A (cannot be computed), NaN is NaN in the data, inf a division by zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from dumpcmp.host.metrics.torchair import ErrorBounds, RealValues
from dumpcmp.host.torchair.records import TensorStats

PASS, FAIL, NOT_COMPARED = "PASS", "FAIL", "N/A"
STATISTICS = ("Max", "Min", "Mean", "L2norm")
_VERDICT_EPS = 1e-10


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

    def failing(self, threshold: float) -> tuple[str, ...]:
        """The statistics beyond ``threshold``; NaN on one side only counts as beyond."""
        return tuple(
            name
            for name, (t, g) in zip(STATISTICS, self.pairs(), strict=True)
            if t is not None and g is not None and not _within(t, g, threshold)
        )


def _relative(diff: float, golden: float) -> float:
    if math.isnan(diff):
        return math.nan
    return math.inf if golden == 0 else abs(diff / golden)


def _within(target: float, golden: float, threshold: float) -> bool:
    if math.isnan(target) and math.isnan(golden):
        return True  # NaN on both sides agrees
    if target == golden:
        return True  # also equal infinities, whose difference is NaN
    return abs(target - golden) / (max(abs(target), abs(golden)) + _VERDICT_EPS) <= threshold


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


def real_verdict(values: RealValues, limits: TorchairThresholds) -> tuple[str, tuple[str, ...]]:
    """PASS when Cosine ≥ limit and MaxRelativeErr < limit; else FAIL with what broke."""
    if not values.has_numbers:
        return NOT_COMPARED, ()
    broke = []
    cosine, rel = values.cosine, values.max_relative_err
    if cosine is None or not cosine >= limits.cosine:
        broke.append(f"Cosine {_shown(cosine)} < {limits.cosine:g}")
    if rel is None or not rel < limits.max_relative:
        broke.append(f"MaxRelativeErr {_shown(rel)} >= {limits.max_relative:g}")
    return (FAIL, tuple(broke)) if broke else (PASS, ())


def _shown(value: float | None) -> str:
    """A metric as the columns spell it: N/A, NaN, inf, or six decimals."""
    if value is None:
        return "N/A"
    if math.isnan(value):
        return "NaN"
    return f"{value:.6f}" if math.isfinite(value) else ("inf" if value > 0 else "-inf")


def stats_verdict(values: StatsValues, limits: TorchairThresholds) -> tuple[str, tuple[str, ...]]:
    if not values.has_numbers:
        return NOT_COMPARED, ()
    failing = values.failing(limits.statistics)
    one_sided = values.nan_on_one_side()
    if one_sided:
        return FAIL, (f"{', '.join(one_sided)} NaN on one side only (NaN or inf in the data)",)
    if failing:
        verb = "differs" if len(failing) == 1 else "differ"
        return FAIL, (f"{', '.join(failing)} {verb} by more than {limits.statistics:g} of their size",)
    unknown = values.unknown()
    if unknown:  # a PASS on some statistics only says which were not compared
        return PASS, (f"{', '.join(unknown)} not compared (not known on both sides)",)
    return PASS, ()


def md5_verdict(values: Md5Values) -> tuple[str, tuple[str, ...]]:
    if values.npu is None or values.bench is None:
        return NOT_COMPARED, ()
    if values.npu != values.bench:
        return FAIL, (f"CRC-32 differs: NPU {values.npu:08x}, bench {values.bench:08x}",)
    return PASS, ()
