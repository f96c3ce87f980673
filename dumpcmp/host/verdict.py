"""The one verdict: whether a compared pair agrees, and why not, decided on typed values only.

Every judge of a result asks this module: the compare summary, the advisor, the HTML report,
the xlsx colours and TorchAir's PASS/FAIL. It reads numbers and typed fields (NaN/inf counts,
whether their positions agree, the metrics of the finite elements), never a reason's words:
reasons are prose for people. A result table read back from a file (``report.table``) carries the
same typed values, so its verdict is the one the comparison gave.

Offline rows diverge when any of five metrics is beyond its threshold (msit analyser's defaults).
Cosine alone misses uniform noise (5 % noise everywhere keeps CosineSimilarity at 0.998), which
RelativeEuclideanDistance and KullbackLeiblerDivergence catch. NaN/inf in the data make a pair
compared, not "not compared": where their positions differ it disagrees; where they agree it is
judged by the metrics of its other elements.

TorchAir rows get metrics.md §2's PASS/FAIL. A run of statistics also gets the place where its
statistics start to move away from the golden's (``statistics_drift``): a fault whose statistics
stay within the fixed 0.5 rule would otherwise be placed at the first op the rule catches, far
downstream. One detector, on typed rows (``StatisticsRow``), for the summary, the advisor,
TorchAir's statistics mode and the hunt's pass 1.

Over a whole run (metrics.md §3): where the divergence starts (``divergence_start``: input
inconsistency, the first op whose inputs agree and outputs do not, single-point or accumulating)
and which output overflows float16 or turns NaN (``special_appearance``). The advisor words them.

No numpy here: the CLI reads the defaults at import time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dumpcmp.host.metrics.offline_data import MetricValues
    from dumpcmp.host.metrics.torchair import RealValues
    from dumpcmp.host.torchair.rows import Md5Values, StatsValues, TorchairThresholds

__all__ = [
    "FAIL",
    "FP16_MAX",
    "NOT_COMPARED",
    "NOT_JUDGED",
    "PASS",
    "STATISTICS",
    "Agreement",
    "Appearance",
    "Drift",
    "DriftLimits",
    "NotCompared",
    "OpAgreement",
    "Side",
    "SpecialValues",
    "Spread",
    "Start",
    "StatisticError",
    "StatisticsRow",
    "Thresholds",
    "agreement",
    "divergence_start",
    "judged",
    "md5_verdict",
    "nothing_finite",
    "real_verdict",
    "special_appearance",
    "special_side",
    "statistic_distance",
    "statistics_drift",
    "statistics_drifts",
    "statistics_error",
    "stats_verdict",
]

PASS, FAIL, NOT_COMPARED = "PASS", "FAIL", "N/A"
STATISTICS = ("Max", "Min", "Mean", "L2norm")
_STATISTIC_EPS = 1e-10  # metrics.md §2: |diff| / (max(|target|, |golden|) + 1e-10)


class Agreement(str, Enum):
    AGREE = "agree"
    DISAGREE = "disagree"
    BETWEEN = "between"  # TorchAir's One Thousandth ratio in [0.6, 0.9]: neither
    UNKNOWN = "unknown"  # not compared: nothing to judge


class NotCompared(str, Enum):
    """Why a pair has no numbers, where a judge needs the kind and not only the prose."""

    STATISTICS_ONLY = "statistics only"  # a side holds statistics, no data (reduced, or a stats dump)
    NO_DATA = "no data"  # a side holds nothing to compare


@dataclass(frozen=True, slots=True)
class SpecialValues:
    """NaN and ±inf in a pair's data: how many on each side, and at how many positions the two
    sides differ (one is NaN or inf where the other is not the same). ``mismatched`` is None where
    the positions were not compared (TorchAir counts only)."""

    target_nan: int
    target_inf: int
    golden_nan: int
    golden_inf: int
    mismatched: int | None = None

    @property
    def target(self) -> int:
        return self.target_nan + self.target_inf

    @property
    def golden(self) -> int:
        return self.golden_nan + self.golden_inf

    @property
    def positions_agree(self) -> bool:
        """Every NaN/inf sits at the same place on both sides (counts alone: when they are equal)."""
        if self.mismatched is None:
            return self.target_nan == self.golden_nan and self.target_inf == self.golden_inf
        return self.mismatched == 0

    @property
    def target_only(self) -> bool:
        return self.target > 0 and self.golden == 0

    @property
    def appeared(self) -> bool:
        """The target holds NaN/inf where the golden does not: more of them, or, as many or fewer,
        at more differing positions than the golden's surplus explains."""
        if self.target > self.golden:
            return True
        if self.mismatched is None or self.target == 0:
            return False
        return self.mismatched > self.golden - self.target

    @property
    def golden_made(self) -> bool:
        """The golden holds NaN/inf the target does not, and none appeared on the target side: the
        pair differs because of the golden run, not the NPU's."""
        if self.appeared:
            return False
        return self.golden > self.target or (self.mismatched is not None and self.mismatched > 0)


class Side(str, Enum):
    """The side of a pair whose data alone holds NaN/inf (``special_side``)."""

    TARGET = "target"
    GOLDEN = "golden"


def special_side(
    special: SpecialValues | None, target_beyond: int = 0, golden_beyond: int = 0
) -> Side | None:
    """Which side alone holds NaN/inf, from what a row keeps: its NaN/inf counts (``special``:
    target when they appeared there, golden when ``golden_made``) or, for a statistics row, how
    many NaN/inf (or statistics showing them) each side has beyond the other's. The target
    first: NaN/inf that appeared there are the finding whatever the golden holds. None: neither."""
    if special is not None:
        return Side.TARGET if special.appeared else Side.GOLDEN if special.golden_made else None
    if target_beyond > 0:
        return Side.TARGET
    return Side.GOLDEN if golden_beyond > 0 else None


@dataclass(frozen=True, slots=True)
class Thresholds:
    """msit analyser's defaults; each is a ``compare`` option of the same meaning."""

    cosine: float = 0.99  # CosineSimilarity below this diverges
    relative_euclidean: float = 0.05  # RelativeEuclideanDistance above
    kl: float = 0.005  # KullbackLeiblerDivergence above
    rmse: float = 1.0  # RootMeanSquareError above
    mean_relative: float = 1.0  # MeanRelativeError above
    # Statistics dumps (metrics.md §2): |diff| / (max(|target|, |golden|) + 1e-10) above this
    statistics: float = 0.5

    def describe(self) -> str:
        return (
            f"CosineSimilarity < {self.cosine:g}, RelativeEuclideanDistance > {self.relative_euclidean:g}, "
            f"KullbackLeiblerDivergence > {self.kl:g}, RootMeanSquareError > {self.rmse:g}, "
            f"MeanRelativeError > {self.mean_relative:g}"
        )

    def breaches(self, m: MetricValues) -> tuple[str, ...]:
        """Each metric of ``m`` beyond its threshold, as ``"Name value op threshold"``.

        A pair that was not compared breaches nothing (its reason says why). A NaN
        CosineSimilarity of a compared pair (NaN/inf in the data, one side all zero) is a breach:
        the tensors were comparable and do not agree. Other NaN metrics (bool tensors) are not
        judged. NaN/inf at exactly the same positions on both sides say nothing of a difference,
        but make the metrics NaN: such a pair is judged by the metrics of its other elements
        (``MetricValues.finite``), named as theirs. NaN/inf at differing positions are a breach
        even where the metrics do not show it (a scalar's cosine is 1 by definition).
        """
        if m.finite is not None:
            return self._breaches(m.finite, " of the finite elements")
        found = self._breaches(m, "") if judged(m) else ()
        special = m.special
        if not found and special is not None and not special.positions_agree:
            found = (_positions_differ(special),)
        return found

    def _breaches(self, m: MetricValues, of: str) -> tuple[str, ...]:
        if not m.has_numbers and m.special is None:
            return ()
        found = []
        cosine = m.cosine_similarity
        if math.isnan(cosine):
            found.append(f"CosineSimilarity{of} NaN")
        elif _written_above(-cosine, -self.cosine):  # as written, below the limit
            found.append(f"CosineSimilarity{of} {_as_written(cosine):.6f} < {self.cosine:g}")
        above = (
            ("RelativeEuclideanDistance", m.relative_euclidean_distance, self.relative_euclidean),
            ("KullbackLeiblerDivergence", m.kullback_leibler_divergence, self.kl),
            ("RootMeanSquareError", m.root_mean_square_error, self.rmse),
            ("MeanRelativeError", m.mean_relative_error, self.mean_relative),
        )
        found += [
            f"{name}{of} {value:.6f} > {limit:g}"
            for name, value, limit in above
            if _written_above(value, limit)
        ]
        return tuple(found)

    def diverges(self, m: MetricValues) -> bool:
        return bool(self.breaches(m))


def _as_written(value: float) -> float:
    """``value`` to the six decimals a result file gives it (metrics.md §1): the verdict judges what
    the user reads, so a table read back from its file is judged the same, and no breach reads
    "RootMeanSquareError 1.000000 > 1"."""
    return round(value, 6) if math.isfinite(value) else value


def _written_above(value: float, limit: float) -> bool:
    """``_as_written(value) > limit``, rounded only where that can change the answer.

    Rounding to six decimals moves a value by at most 5e-7 (and half an ulp), so a value further
    than 1e-6 × (1 + |limit|) from the limit is on the same side either way: ``round`` was most
    of what judging a row cost, and a summary judges every row of a run. NaN compares false
    both ways and falls through to the exact rule. ``-value`` and ``-limit``: below the limit
    (rounding is symmetric).
    """
    near = 1e-6 * (1.0 + abs(limit))
    if value > limit + near:
        return True
    if value < limit - near:
        return False
    return _as_written(value) > limit


def _positions_differ(special: SpecialValues) -> str:
    if special.mismatched is None:
        return "NaN/inf counts differ"
    return f"NaN/inf positions differ at {special.mismatched}"


def judged(m: MetricValues) -> bool:
    """True when the pair was compared: it has a metric value, or NaN/inf in its data made every
    metric NaN (a finding, not a pair that could not be formed)."""
    return m.special is not None or m.has_numbers


def nothing_finite(m: MetricValues) -> bool:
    """True for a compared pair with NaN/inf at every position on both sides: the positions agree,
    but no value could be judged, so it neither agrees nor diverges (an all-NaN input makes every
    tensor of both runs so, and "all within the thresholds" would be an all-clear nothing earned)."""
    return m.finite is not None and not m.finite.has_numbers


def agreement(m: MetricValues, thresholds: Thresholds) -> Agreement:
    """An offline pair's agreement: unknown when not compared or nothing in it is finite, else by
    ``Thresholds.breaches``."""
    if not judged(m) or nothing_finite(m):
        return Agreement.UNKNOWN
    return Agreement.DISAGREE if thresholds.breaches(m) else Agreement.AGREE


# ---------------------------------------------------------------------------------------------
# TorchAir (metrics.md §2)


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


def statistic_distance(target: float, golden: float) -> float:
    """metrics.md §2's measure of one statistic: |diff| / (max(|target|, |golden|) + 1e-10).

    0 where both are NaN or equal (equal infinities too, whose difference is NaN); inf where
    exactly one side is NaN (NaN or inf in its data), or the two are not the same infinity (an
    infinity against a finite value, whose formula inf / inf is NaN and would pass): beyond any
    threshold.
    """
    if math.isnan(target) and math.isnan(golden):
        return 0.0
    if math.isnan(target) or math.isnan(golden):
        return math.inf
    if target == golden:
        return 0.0
    if math.isinf(target) or math.isinf(golden):
        return math.inf
    return abs(target - golden) / (max(abs(target), abs(golden)) + _STATISTIC_EPS)


def stats_verdict(values: StatsValues, limits: TorchairThresholds) -> tuple[str, tuple[str, ...]]:
    if not values.has_numbers:
        return NOT_COMPARED, ()
    failing = values.failing(limits.statistics)
    one_sided = values.nan_on_one_side()
    if one_sided:
        return FAIL, (f"{', '.join(one_sided)} NaN on one side only (NaN or inf in the data)",)
    infinite = values.infinite_on_one_side()
    if infinite:
        return FAIL, (f"{', '.join(infinite)} where the other side is finite",)
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


# Where a run's statistics start to move away from the golden's (``statistics_drift``): one
# detector for the summary, the advisor, TorchAir's statistics mode and the hunt's pass 1.
#
# Each row's error is its largest distance over the four statistics (``statistics_error``). A row
# jumps when its error is at least ``jump`` times the largest error before it, errors below ``floor``
# (rounding) counting as ``floor``. Measured by bench/statistics_drift.py (fp16 simulator, the four
# zoo models): fault-free, seeds 0-2, no row of a run is more than 3.0x the noise before it, read
# per op as the hunt's pass 1 does or per row as a summary does (with a floor of 1e-3: 4.6x); with
# faults (bias, scale, nan, overflow, noise at an early, middle and late op, normal and subtle
# amounts: 120 runs) the first drift is at the faulty op in 90, upstream of it in none, downstream
# in 28 (the fault's own statistics hardly move), nowhere in 2. The summary's former measure (the
# L2 norm alone; without L2 norms max, min and mean in units of the largest magnitude) placed 51 of
# the 108 runs without subtle overflows at the faulty op, this one 81. The noise is the run's, not
# the op type's (the hunt's former rule): by type it placed no more faults, and it judged an op's
# input rows under that op's type, naming a fault-free suspect (resnet seed 1, 6.6x).


@dataclass(frozen=True, slots=True)
class DriftLimits:
    """When a statistics row counts as moving away from the golden's (see above)."""

    jump: float = 5.0  # its error is at least this many times the largest before it …
    floor: float = 5e-3  # … errors below this (rounding) count as this much

    @property
    def noise(self) -> float:
        """Errors below this are the run's own noise whatever came before."""
        return self.jump * self.floor


@dataclass(frozen=True, slots=True)
class StatisticsRow:
    """One compared statistics row as the drift detector reads it, from any source: a statistics
    dump's row (``StatsResult``), a TorchAir statistics row, a statistics table read back."""

    pairs: Sequence[tuple[float | None, float | None]]  # (target, golden) of each of ``STATISTICS``
    count: int | None = None  # the tensor's elements, where known: the golden's root mean square
    special: bool = False  # the device counted NaN/inf in the target (its statistics leave them out)


@dataclass(frozen=True, slots=True)
class StatisticError:
    """How far one statistics row is from the golden along the run, and in what (``measure``: the
    words around the value, ``{:.2%}``). NaN: nothing to judge; inf: NaN/inf on one side only."""

    value: float
    measure: str = ""

    def words(self) -> str:
        return self.measure.format(self.value)


NOT_JUDGED = StatisticError(math.nan)
_L2 = "L2 norm {:.2%} apart"
_COUNTED = StatisticError(math.inf, "NaN/inf on the target side only")


def statistics_error(row: StatisticsRow) -> StatisticError:
    """The row's largest distance from the golden over its statistics: the L2 norms'
    ``statistic_distance``; a shift of max, min or mean in units of the golden tensor's scale, its
    root mean square (L2 norm over the square root of the count) where known, else its largest
    magnitude, so that a mean near zero is not blown up as its relative error is. NaN on one side
    only, or NaN/inf the device counted in the target, is infinitely far; NaN: no statistic is
    known on both sides."""
    if row.special:
        return _COUNTED
    scale, of = _scale([g for _, g in row.pairs], row.count)
    worst, known = StatisticError(0.0, _L2), False
    for name, (t, g) in zip(STATISTICS, row.pairs, strict=True):
        if t is None or g is None:
            continue
        known = True
        if math.isnan(t) != math.isnan(g):
            return StatisticError(math.inf, f"{name} NaN on one side only")
        if math.isnan(t) or t == g:
            continue
        if math.isinf(t) or math.isinf(g):  # not the same infinity: no scale measures it
            # The golden's value is not named: a TorchAir table read back writes only the diffs.
            side = f"target {_shown(t)}" if math.isinf(t) else f"golden {_shown(g)}"
            return StatisticError(math.inf, f"{name} {side} where the other side is finite")
        if name == "L2norm" or scale == 0:  # a golden of zeros: against the statistic itself
            error = StatisticError(
                statistic_distance(t, g), _L2 if name == "L2norm" else name + " {:.2%} apart"
            )
        else:
            error = StatisticError(abs(t - g) / scale, f"{name} off by {{:.2%}} of the golden's {of}")
        if error.value > worst.value:
            worst = error
    return worst if known else NOT_JUDGED


def _scale(golden: Sequence[float | None], count: int | None) -> tuple[float, str]:
    """The golden tensor's scale and its name: root mean square, else largest magnitude (0: none)."""
    l2 = golden[STATISTICS.index("L2norm")]
    if l2 is not None and count and math.isfinite(l2) and l2 > 0:
        return l2 / math.sqrt(count), "root mean square"
    ends = [abs(v) for v in golden[:2] if v is not None and math.isfinite(v)]  # max, min
    return max(ends, default=0.0), "largest magnitude"


@dataclass(frozen=True, slots=True)
class Drift:
    """Where a run's statistics move away from the golden's."""

    at: int  # the position, in the sequence given, of the row that jumps
    error: StatisticError  # its error
    before: float  # the largest error before it (the run's noise), at least the floor
    level: float  # errors at or above this (``jump`` × ``before``) have moved away

    @property
    def jump(self) -> float:
        return self.error.value / self.before

    def words(self) -> str:
        """How far, in words: ``L2 norm 13.86% apart, 28x the run's noise before it (0.50%)``."""
        if math.isinf(self.error.value):
            return self.error.words()
        return f"{self.error.words()}, {self.jump:.0f}x the run's noise before it ({self.before:.2%})"

    def moved(self, error: StatisticError) -> bool:
        return not math.isnan(error.value) and error.value >= self.level


def statistics_drifts(
    errors: Sequence[StatisticError], limits: DriftLimits = DriftLimits()
) -> tuple[Drift, ...]:
    """Each of ``errors`` (one per compared row or op, in execution order; NaN: none) that is at
    least ``limits.jump`` times the largest before it, the jumps before included: the first is
    where the statistics leave the noise the run shows up to there, whatever the absolute
    threshold says; a later one moves further still than what it inherits (a second fault).
    Nothing jumps above an infinite error (NaN/inf): the walk ends there. () when no row jumps: the
    difference, if any, grows gradually, and statistics cannot place where it starts."""
    found: list[Drift] = []
    noise = limits.floor
    for at, error in enumerate(errors):
        if math.isnan(error.value):
            continue
        if error.value >= limits.jump * noise:
            found.append(Drift(at, error, noise, limits.jump * noise))
            if math.isinf(error.value):
                break
        noise = max(noise, error.value)
    return tuple(found)


def statistics_drift(errors: Sequence[StatisticError], limits: DriftLimits = DriftLimits()) -> Drift | None:
    """The first of ``statistics_drifts``: where the run's statistics move away; None: nowhere."""
    drifts = statistics_drifts(errors, limits)
    return drifts[0] if drifts else None


# ---------------------------------------------------------------------------------------------
# Over a run (metrics.md §3): where the divergence starts, float16 overflow, NaN that appeared

FP16_MAX = 65504.0


class Appearance(str, Enum):
    """How an output shows float16 overflow or NaN/inf of its own (``special_appearance``)."""

    OVERFLOW_FLAG = "OverFlow YES"  # the comparator's overflow check says so
    OVERFLOW_INF = "inf on the target side"  # a float16 output holds more inf than the golden
    NAN = "NaN on the target side"  # more NaN than the golden
    ELSEWHERE = "NaN/inf where the golden has none"  # as many or fewer, at other positions
    OVERFLOW_ERROR = "an error of at least 65504"  # only an overflowing float16 value is that far off

    @property
    def overflow(self) -> bool:
        return self in (Appearance.OVERFLOW_FLAG, Appearance.OVERFLOW_INF, Appearance.OVERFLOW_ERROR)


def special_appearance(
    overflow: bool | None, special: SpecialValues | None, fp16: bool, max_abs_error: float
) -> Appearance | None:
    """Whether an output overflows float16 or turns NaN: the OverFlow flag when checked
    (``overflow`` not None); otherwise, for a float16 output, its inf and its error. NaN/inf the
    golden does not hold count whatever the dtype."""
    if overflow:
        return Appearance.OVERFLOW_FLAG
    fp16 = fp16 and overflow is None
    if special is not None and special.target_inf > special.golden_inf and fp16:
        return Appearance.OVERFLOW_INF
    if special is not None and special.target_nan > special.golden_nan:
        return Appearance.NAN
    if special is not None and special.appeared:
        return Appearance.ELSEWHERE
    # An infinite error with no inf on the target side comes from the golden's own inf.
    golden_made = math.isinf(max_abs_error) and special is not None and special.target_inf == 0
    if fp16 and max_abs_error >= FP16_MAX and not golden_made:
        return Appearance.OVERFLOW_ERROR
    return None


@dataclass(frozen=True, slots=True)
class OpAgreement:
    """One op of a run as the walk needs it: the agreement of each of its input and output rows
    (``UNKNOWN``: not compared) and which outputs were compared with the op's own input (a GE
    trans op without an FX counterpart: it says nothing of the network)."""

    inputs: tuple[Agreement, ...]
    outputs: tuple[Agreement, ...]
    self_check: tuple[bool, ...] = ()  # per output; () when none is
    # Per input, the place in the walk of the op that makes it (None: the network's input or a
    # constant); () where no fusion rule says. With it, a differing input is traced to its maker.
    producers: tuple[int | None, ...] = ()
    dumped: bool = True  # False: an op of the fusion rule with no rows (no dump file)

    @property
    def compared_outputs(self) -> bool:
        return any(a is not Agreement.UNKNOWN for a in self.outputs)

    @property
    def bad_outputs(self) -> tuple[int, ...]:
        return tuple(k for k, a in enumerate(self.outputs) if a is Agreement.DISAGREE)

    def network_outputs(self) -> bool:
        """An output compared with the golden network (not with the op's own input)."""
        checks = self.self_check or (False,) * len(self.outputs)
        return any(
            a is not Agreement.UNKNOWN and not own for a, own in zip(self.outputs, checks, strict=True)
        )


@dataclass(frozen=True, slots=True)
class Spread:
    """What happens after the first divergence: the later ops compared with the network."""

    later: int  # later ops with an output compared with the network
    later_bad: int  # of them, those with an output that disagrees
    last: int | None  # the last of them (its place in the run); None when there is none
    last_agrees: bool  # the last one agrees again: later ops absorbed the error (single-point)


@dataclass(frozen=True, slots=True)
class Start:
    """Where a run's divergence starts (places are positions in the ops given, rows are
    ``(io, k)`` within the op)."""

    inconsistent_input: tuple[int, int] | None = None  # (op, input k) differing before any op did
    op: int | None = None  # the first divergence: the earliest op whose inputs agree, outputs not
    row: tuple[str, int] | None = None  # its first disagreeing row ("output", k), or an input (unseen)
    inferred: bool = False  # the op has no input rows: its inputs are taken to agree
    unseen: tuple[int, ...] = ()  # ops without numbers right before ``op``: it may start there
    spread: Spread | None = None
    # The op without compared outputs that makes ``op``'s differing input ``row``: the error
    # starts at it or before it, not in the network's inputs.
    producer: int | None = None
    undumped: tuple[int, ...] = ()  # earlier ops without a dump, where ``op``'s inputs are inferred


def divergence_start(ops: Sequence[OpAgreement]) -> Start:
    """Input inconsistency and the first divergence, from one walk in execution order.

    Inputs "agree" when the op's compared input rows all agree, or, with none, when no earlier op
    disagrees. Only a differing input proves the error came from before the op; an op without
    input rows stays the problem node. When ops without numbers come right before the first op
    already wrong, the error may start in any of them (``unseen``), which is said rather than the
    first op seen being blamed. Where the fusion rule names the op that makes a differing input
    (``producers``) and that op's outputs were not compared, the error starts at or before it
    (``producer``): not input inconsistency. A first divergence whose inputs are inferred names
    the earlier ops that have no dump (``undumped``): its inputs were not seen to agree.
    """
    inconsistent: tuple[int, int] | None = None
    earlier_bad = False
    unseen: list[int] = []  # ops without compared outputs since the last op with some
    for at, op in enumerate(ops):
        judged_inputs = [k for k, a in enumerate(op.inputs) if a is not Agreement.UNKNOWN]
        bad_inputs = [k for k in judged_inputs if op.inputs[k] is Agreement.DISAGREE]
        bad = op.bad_outputs
        maker = _unjudged_producer(ops, op, bad_inputs) if not earlier_bad else None
        if maker is not None:
            k, producer = maker
            return Start(inconsistent, at, ("input", k), producer=producer)
        if not earlier_bad and unseen and (bad_inputs or (bad and len(judged_inputs) < len(op.inputs))):
            row = ("input", bad_inputs[0]) if bad_inputs else ("output", bad[0])
            return Start(inconsistent, at, row, unseen=tuple(unseen))
        if bad_inputs and not earlier_bad and inconsistent is None:
            inconsistent = (at, bad_inputs[0])
        inputs_agree = all(op.inputs[k] is Agreement.AGREE for k in judged_inputs)
        if bad and (inputs_agree if judged_inputs else not earlier_bad):
            undumped = () if judged_inputs else tuple(i for i in range(at) if not ops[i].dumped)
            return Start(
                inconsistent, at, ("output", bad[0]), not judged_inputs, spread=_spread(ops[at + 1 :], at),
                undumped=undumped,
            )  # fmt: skip
        earlier_bad = earlier_bad or bool(bad)
        unseen = [] if op.compared_outputs else [*unseen, at] if op.outputs else unseen
    return Start(inconsistent)


def _unjudged_producer(
    ops: Sequence[OpAgreement], op: OpAgreement, bad_inputs: list[int]
) -> tuple[int, int] | None:
    """(input, its producer's place) for the first differing input of ``op`` made by an op whose
    outputs were not compared (not dumped, or only its inputs were): no earlier op disagrees, so
    the difference was made there or before it. None where the fusion rule names no such maker."""
    for k in bad_inputs:
        producer = op.producers[k] if k < len(op.producers) else None
        if producer is not None and not ops[producer].compared_outputs:
            return k, producer
    return None


def _spread(later_ops: Sequence[OpAgreement], at: int) -> Spread:
    later = [(at + 1 + i, op) for i, op in enumerate(later_ops) if op.network_outputs()]
    bad = [place for place, op in later if op.bad_outputs]
    if not later:
        return Spread(0, 0, None, False)
    last = later[-1][0]
    return Spread(len(later), len(bad), last, last not in bad)
