"""The verdict table of spec/metrics.md as parametrised cases over typed rows.

Each offline case is judged twice: in-process on the comparison's own ``MetricValues``, and on
what a result file holds (the row written as CSV cells, read back by ``report.table``); both must
give the same verdict. Then the TorchAir PASS/FAIL rules (§2), the colours (§2) and the advisor's
detections (§3) on rows built as the comparison builds them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest

from dumpcmp.host.metrics import MetricValues, compare_arrays
from dumpcmp.host.metrics.torchair import RealValues, real_metrics
from dumpcmp.host.report.advisor import advise
from dumpcmp.host.report.grading import Grade, grade_rows
from dumpcmp.host.report.table import ResultTable, table_from_cells
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.sinks.table import TableShape
from dumpcmp.host.torchair.records import TensorStats
from dumpcmp.host.torchair.rows import Md5Values, StatsValues, TorchairThresholds
from dumpcmp.host.verdict import (
    FAIL,
    NOT_COMPARED,
    PASS,
    Agreement,
    Appearance,
    DriftLimits,
    OpAgreement,
    SpecialValues,
    StatisticError,
    StatisticsRow,
    Thresholds,
    agreement,
    divergence_start,
    judged,
    md5_verdict,
    nothing_finite,
    real_verdict,
    special_appearance,
    statistic_distance,
    statistics_drift,
    statistics_drifts,
    statistics_error,
    stats_verdict,
)

BASE = np.linspace(1, 2, 64, dtype=np.float32)


def _with(values: np.ndarray, **at: float) -> np.ndarray:
    """``values`` with element ``int(key[1:])`` set, e.g. ``_with(x, e3=nan)``."""
    out = values.copy()
    for key, value in at.items():
        out[int(key[1:])] = value
    return out


def _noisy(fraction: float) -> np.ndarray:
    rng = np.random.default_rng(3)
    return (BASE * (1 + fraction * rng.standard_normal(BASE.shape))).astype(np.float32)


def _shifted(field: str, value: float) -> MetricValues:
    return replace(compare_arrays(BASE, BASE), **{field: value})


NAN, INF = math.nan, math.inf

# (case, metrics of target against golden, agreement, words of the first breach or "")
OFFLINE_CASES: list[tuple[str, MetricValues, Agreement, str]] = [
    ("identical", compare_arrays(BASE, BASE), Agreement.AGREE, ""),
    ("0.1 % noise", compare_arrays(_noisy(0.001), BASE), Agreement.AGREE, ""),
    (
        "6 % noise everywhere: RED beyond 0.05",
        compare_arrays(_noisy(0.06), BASE),
        Agreement.DISAGREE,
        "RelativeEuclideanDistance",
    ),
    ("cosine at 0.99 agrees", _shifted("cosine_similarity", 0.99), Agreement.AGREE, ""),
    (
        "cosine below 0.99",
        _shifted("cosine_similarity", 0.9899),
        Agreement.DISAGREE,
        "CosineSimilarity 0.989900 < 0.99",
    ),
    ("RED at 0.05 agrees", _shifted("relative_euclidean_distance", 0.05), Agreement.AGREE, ""),
    (
        "KL above 0.005",
        _shifted("kullback_leibler_divergence", 0.0051),
        Agreement.DISAGREE,
        "KullbackLeiblerDivergence",
    ),
    ("RMSE above 1", _shifted("root_mean_square_error", 1.01), Agreement.DISAGREE, "RootMeanSquareError"),
    (
        "MeanRelativeError above 1",
        _shifted("mean_relative_error", 1.01),
        Agreement.DISAGREE,
        "MeanRelativeError",
    ),
    ("shape mismatch: not compared", compare_arrays(BASE, BASE[:10]), Agreement.UNKNOWN, ""),
    ("empty tensors: not compared", compare_arrays(BASE[:0], BASE[:0]), Agreement.UNKNOWN, ""),
    ("bool tensors: cosine only", compare_arrays(BASE > 1.5, BASE > 1.5), Agreement.AGREE, ""),
    (
        "golden all zero: cosine NaN",
        compare_arrays(BASE, np.zeros_like(BASE)),
        Agreement.DISAGREE,
        "CosineSimilarity NaN",
    ),
    (
        "NaN at the same place, equal elsewhere",
        compare_arrays(_with(BASE, e3=NAN), _with(BASE, e3=NAN)),
        Agreement.AGREE,
        "",
    ),
    (
        "NaN at the same place, apart elsewhere",
        compare_arrays(_with(BASE + 1, e3=NAN), _with(BASE, e3=NAN)),
        Agreement.DISAGREE,
        "RelativeEuclideanDistance of the finite elements",
    ),
    (
        # compared (a finding), yet nothing finite to judge: no all-clear from it
        "NaN and inf at the same places only",
        compare_arrays(np.array([NAN, INF], np.float32), np.array([NAN, INF], np.float32)),
        Agreement.UNKNOWN,
        "",
    ),
    (
        "NaN on the target side only",
        compare_arrays(_with(BASE, e3=NAN), BASE),
        Agreement.DISAGREE,
        "CosineSimilarity NaN",
    ),
    (
        "NaN elsewhere on each side: every metric NaN, still compared",
        compare_arrays(_with(BASE, e3=NAN), _with(BASE, e4=NAN)),
        Agreement.DISAGREE,
        "CosineSimilarity NaN",
    ),
    (
        "a scalar NaN against a number: cosine 1 by rule, still apart",
        compare_arrays(np.array([NAN], np.float32), np.array([1.0], np.float32)),
        Agreement.DISAGREE,
        "NaN/inf positions differ at 1",
    ),
]


def _row(
    index: int | None, op: str, metrics: MetricValues, io: str = "output", **fields: object
) -> ResultRow:
    values: dict[str, object] = dict(
        index=index, op_sequence=None, op_type="Conv2D", npu_name=op, npu_dtype="DT_FLOAT", npu_address=None,
        ground_truth=op, golden_dtype="DT_FLOAT", golden_address=None, tensor_index=f"{op}:{io}:0",
        shape=(64,), overflow=None, metrics=metrics,
    )  # fmt: skip
    values.update(fields)
    return ResultRow(**values)  # type: ignore[arg-type]


def _read_back(rows: Sequence[ResultRow], *, overflow: bool = False) -> ResultTable:
    """``rows`` as a result file holds them (the CSV sink's cells), read by the advisor's reader."""
    shape = TableShape(overflow=overflow)
    return table_from_cells([shape.header(), *(shape.cells(r) for r in rows)], source="round trip")


@pytest.mark.parametrize(
    ("metrics", "expected", "breach"), [c[1:] for c in OFFLINE_CASES], ids=[c[0] for c in OFFLINE_CASES]
)
def test_offline_verdict(metrics: MetricValues, expected: Agreement, breach: str) -> None:
    t = Thresholds()
    assert agreement(metrics, t) is expected
    assert judged(metrics) is (expected is not Agreement.UNKNOWN or nothing_finite(metrics))
    breaches = t.breaches(metrics)
    assert bool(breaches) is (expected is Agreement.DISAGREE)
    if breach:
        assert breaches[0].startswith(breach), breaches
    # The same row, written to a result file and read back: the same verdict, the same words.
    (read,) = _read_back([_row(0, "op", metrics)]).rows
    assert read.values is not None
    assert agreement(read.values, t) is expected
    assert t.breaches(read.values) == breaches


# Around each limit: a step of 1e-7 either side, the half-way points of the sixth decimal, and
# values no float equals exactly (the rule rounds only near a limit: the same answer everywhere).
_NEAR_LIMIT = [k * 1e-7 for k in range(-30, 31)] + [5e-7, -5e-7, 1.5e-6, -1.5e-6, 4.9999999e-7, 1e-3, -1e-3]


@pytest.mark.parametrize(
    ("field", "threshold", "column", "above"),
    [
        ("cosine_similarity", "cosine", "CosineSimilarity", False),
        ("relative_euclidean_distance", "relative_euclidean", "RelativeEuclideanDistance", True),
        ("kullback_leibler_divergence", "kl", "KullbackLeiblerDivergence", True),
        ("root_mean_square_error", "rmse", "RootMeanSquareError", True),
        ("mean_relative_error", "mean_relative", "MeanRelativeError", True),
    ],
)
@pytest.mark.parametrize("scale", [1.0, 1e-3, 1e4])
def test_a_metric_is_judged_as_written_to_six_decimals_at_its_limit(
    field: str, threshold: str, column: str, above: bool, scale: float
) -> None:
    """A breach is what the result file shows: the value rounded to six decimals beyond the limit;
    a value that reads as the limit itself is no breach."""
    limit = getattr(Thresholds(), threshold) * scale
    thresholds = replace(Thresholds(), **{threshold: limit})
    for offset in _NEAR_LIMIT:
        value = limit + offset
        written = round(value, 6)
        breached = written > limit if above else written < limit
        found = [b for b in thresholds.breaches(_shifted(field, value)) if b.startswith(column)]
        assert bool(found) is breached, (value, written, found)


# ------------------------------------------------------------------------- TorchAir (§2)

LIMITS = TorchairThresholds()


def _real(cosine: float | None, rel: float | None) -> RealValues:
    return RealValues(cosine, 0.0, 0.0, rel, 1.0, 1.0)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (_real(0.99, 0.0099), PASS),
        (_real(0.98999, 0.0), FAIL),
        (_real(1.0, 0.01), FAIL),  # MaxRelativeErr must be strictly below
        (_real(None, 0.0), FAIL),  # cosine not computable (a side all zero)
        (_real(NAN, 0.0), FAIL),  # NaN in the data
        (RealValues.unavailable("empty tensor"), NOT_COMPARED),
        (real_metrics(_with(BASE, e3=NAN), BASE), FAIL),
        (real_metrics(BASE, BASE), PASS),
    ],
)
def test_torchair_real_data_verdict(values: RealValues, expected: str) -> None:
    assert real_verdict(values, LIMITS)[0] == expected


def _stats(t: tuple[float, float, float, float], g: tuple[float, float, float, float]) -> StatsValues:
    return StatsValues(TensorStats("float32", (4,), *t), TensorStats("float32", (4,), *g))


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (_stats((2, 0, 1, 3), (2, 0, 1, 3)), PASS),
        (_stats((2, 0, 1.5, 3), (2, 0, 1, 3)), PASS),  # |0.5| / (1.5 + 1e-10) = 0.33
        (_stats((2, 0, 2, 3), (2, 0, 1, 3)), PASS),  # exactly 0.5 of its size: within (≤)
        (_stats((2, 0, 2.1, 3), (2, 0, 1, 3)), FAIL),
        (_stats((NAN, 0, 1, 3), (2, 0, 1, 3)), FAIL),  # NaN on one side only
        (_stats((NAN, NAN, NAN, NAN), (NAN, NAN, NAN, NAN)), NOT_COMPARED),
        (_stats((INF, 0, 1, 3), (INF, 0, 1, 3)), PASS),  # equal infinities
        (_stats((INF, 0, 1, 3), (2, 0, 1, 3)), FAIL),  # inf against a finite golden
        (_stats((2, 0, 1, 3), (2, -INF, 1, 3)), FAIL),  # a finite target against -inf
        (_stats((INF, 0, 1, 3), (-INF, 0, 1, 3)), FAIL),  # opposite infinities
        (StatsValues(None, None), NOT_COMPARED),
    ],
)
def test_torchair_statistics_verdict(values: StatsValues, expected: str) -> None:
    assert stats_verdict(values, LIMITS)[0] == expected


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (Md5Values(0x1234, 0x1234), PASS),
        (Md5Values(0x1234, 0x4321), FAIL),
        (Md5Values(None, 1), NOT_COMPARED),
    ],
)
def test_torchair_md5_verdict(values: Md5Values, expected: str) -> None:
    assert md5_verdict(values)[0] == expected


# ------------------------------------------------------------------------- colours (§2)

CLEAN = compare_arrays(BASE, BASE)
ROUNDED = compare_arrays(_noisy(0.0001), BASE)


@pytest.mark.parametrize(
    ("inputs", "output", "grade", "why"),
    [
        ((CLEAN,), CLEAN, Grade.GREEN, ""),
        (
            (CLEAN,),
            compare_arrays(_with(BASE, e3=NAN, e5=INF), BASE),
            Grade.RED,
            "NaN/inf on the target side only",
        ),
        ((CLEAN,), _shifted("max_absolute_error", 2e10), Grade.RED, "MaxAbsoluteError 2e+10 > 1e+10"),
        (
            (CLEAN,),
            replace(compare_arrays(_noisy(0.06), BASE), max_relative_error=0.5),
            Grade.RED,
            "MaxRelativeError 0.5 >= 0.5",
        ),
        ((CLEAN,), _shifted("max_relative_error", 1.57), Grade.GREEN, ""),  # only beside a breach
        (
            (CLEAN,),
            compare_arrays(_noisy(0.06), BASE),
            Grade.RED,
            "the op's inputs agree, this output does not",
        ),
        (
            (ROUNDED,),
            _shifted("relative_euclidean_distance", 0.02),
            Grade.YELLOW,
            "RelativeEuclideanDistance grows 20.0x",
        ),  # within the thresholds, but grown from rounding
        (
            (_shifted("cosine_similarity", 0.98),),
            _shifted("cosine_similarity", 0.87),
            Grade.YELLOW,
            "CosineSimilarity drops 0.110",
        ),  # a breach, but so is its input: not red
        (
            (compare_arrays(_noisy(0.06), BASE),),
            compare_arrays(_noisy(0.07), BASE),
            Grade.YELLOW,
            "inherited",
        ),
        ((CLEAN,), compare_arrays(BASE, BASE[:3]), Grade.NONE, ""),
    ],
)
def test_offline_colours(
    inputs: tuple[MetricValues, ...], output: MetricValues, grade: Grade, why: str
) -> None:
    rows = [_row(0, "op", m, "input") for m in inputs] + [_row(0, "op", output)]
    got = grade_rows(_read_back(rows))[-1]
    assert got.grade is grade, got
    assert why in got.why


# ------------------------------------------------------------------------- advisor (§3)

BAD = compare_arrays(_noisy(0.2), BASE)


def _net(*ops: tuple[MetricValues, MetricValues], overflow_at: int | None = None) -> ResultTable:
    """One op per (input, output) pair of metrics, in execution order."""
    rows = []
    for i, (into, out) in enumerate(ops):
        rows.append(_row(i, f"op{i}", into, "input", overflow=False))
        rows.append(_row(i, f"op{i}", out, overflow=i == overflow_at))
    return _read_back(rows, overflow=True)


@pytest.mark.parametrize(
    ("table", "kind", "detail"),
    [
        (_net((CLEAN, CLEAN), (CLEAN, CLEAN)), "network consistent", "all 4 compared tensors agree"),
        (_net((CLEAN, CLEAN), (CLEAN, CLEAN), overflow_at=1), "fp16 overflow", "OverFlow YES"),
        (
            _net((BAD, BAD), (BAD, BAD)),
            "input inconsistency",
            "differs though every earlier op's outputs agree",
        ),
        (_net((CLEAN, CLEAN), (CLEAN, BAD), (BAD, BAD), (BAD, BAD)), "first divergence", "accumulating"),
        (
            _net((CLEAN, CLEAN), (CLEAN, BAD), (BAD, CLEAN), (CLEAN, CLEAN)),
            "first divergence",
            "single-point",
        ),
        (
            _net((CLEAN, compare_arrays(_with(BASE, e3=NAN), _with(BASE, e4=NAN)))),
            "nan/inf appeared",
            "NaN/inf where the golden does not",
        ),
    ],
)
def test_advisor_detections(table: ResultTable, kind: str, detail: str) -> None:
    first = advise(table).findings[0]
    assert first.kind == kind, advise(table).lines()
    assert detail in first.detail


def test_the_first_divergence_is_the_op_whose_inputs_agree() -> None:
    advice = advise(_net((CLEAN, CLEAN), (CLEAN, CLEAN), (CLEAN, BAD), (BAD, BAD)))
    found = advice.first("first divergence")
    assert found is not None and found.op_name == "op2"


# ------------------------------------------------------------------------- statistics drift


def _errors(*values: float) -> list[StatisticError]:
    return [StatisticError(v, "{:.2%}") for v in values]


@pytest.mark.parametrize(
    ("errors", "at"),
    [
        ([0.0, 0.0004, 0.0, 0.16, 0.18, 0.25], 3),  # the sim's injected bias: 0.16 over ≤ 0.005
        ([0.0, 0.0, 0.0, 0.0], None),  # a clean run
        ([0.0005, 0.002, 0.006, 0.015, 0.04, 0.1, 0.3], None),  # grows gradually: no place to name
        ([0.005, 0.006, 0.08], 2),  # a jump over a noisy run's own floor
        ([0.03, 0.04], 0),  # the first row already apart: the run's inputs differ
        ([NAN, 0.0, 0.05], 2),  # rows without a number are passed over
        ([0.009, 0.024], None),  # below five times the rounding floor
        ([0.001, math.inf], 1),  # NaN/inf on one side only: infinitely far
    ],
)
def test_statistics_drift_names_where_the_difference_jumps(errors: list[float], at: int | None) -> None:
    drift = statistics_drift(_errors(*errors), DriftLimits())
    assert (drift.at if drift is not None else None) == at
    if drift is not None:
        assert drift.jump >= DriftLimits().jump and drift.moved(_errors(errors[-1])[0])


def test_later_drifts_move_further_than_everything_before() -> None:
    # op1 jumps; op2 inherits its error (2x), op3 moves 3x further: neither is a new fault.
    errors = [0.001, 0.1, 0.2, 0.6]
    assert [d.at for d in statistics_drifts(_errors(*errors))] == [1]
    assert [(d.at, d.before) for d in statistics_drifts(_errors(0.001, 0.1, 0.2, 1.5))] == [
        (1, 0.005),
        (3, 0.2),
    ]
    assert [d.at for d in statistics_drifts(_errors(0.001, math.inf, 0.2, math.inf))] == [1]  # ends at NaN


def _stats_row(target: tuple[float | None, ...], golden: tuple[float | None, ...], count: int | None = 100,
               special: bool = False) -> StatisticsRow:  # fmt: skip
    return StatisticsRow(tuple(zip(target, golden, strict=True)), count, special)


def test_statistics_error_judges_each_statistic_against_the_tensors_scale() -> None:
    golden = (3.0, -3.0, 0.0, 10.0)  # root mean square 1 over 100 elements
    shifted = statistics_error(_stats_row((3.0, -3.0, 0.2, 10.0), golden))  # the mean moved a fifth
    assert shifted.value == pytest.approx(0.2)  # not inf, though the golden mean is 0
    assert shifted.words() == "Mean off by 20.00% of the golden's root mean square"
    grown = statistics_error(_stats_row((3.0, -3.0, 0.0, 11.0), golden))
    assert grown.value == pytest.approx(1 / 11) and grown.words() == "L2 norm 9.09% apart"
    assert statistics_error(_stats_row(golden, golden)).value == 0.0
    # Without a count (a TorchAir table) or an L2 norm (CANN's default dump_stats): the largest magnitude.
    without = statistics_error(_stats_row((4.2, -2.0, 0.5, None), (4.0, -2.0, 0.4, None)))
    assert without.value == pytest.approx(0.05)
    assert without.words() == "Max off by 5.00% of the golden's largest magnitude"
    zeros = statistics_error(_stats_row((0.0, 0.0, 0.5, None), (0.0, 0.0, 0.0, None)))
    assert zeros.value == pytest.approx(1.0)  # a golden of zeros that moved: against the statistic
    nothing = statistics_error(_stats_row((None, 1.0, None, None), (2.0, None, None, None)))
    assert math.isnan(nothing.value)  # no statistic known on both sides


def test_statistics_error_of_nan_is_infinite() -> None:
    golden = (3.0, -3.0, 0.0, 10.0)
    one_sided = statistics_error(_stats_row((NAN, NAN, NAN, NAN), golden))
    assert one_sided.value == math.inf and one_sided.words() == "Max NaN on one side only"
    counted = statistics_error(_stats_row(golden, golden, special=True))
    assert counted.value == math.inf and counted.words() == "NaN/inf on the target side only"
    assert statistics_error(_stats_row((NAN,) * 4, (NAN,) * 4)).value == 0.0  # NaN on both sides


def test_an_infinite_statistic_against_a_finite_golden_fails_and_is_named() -> None:
    assert statistic_distance(INF, 12.0) == INF and statistic_distance(-INF, INF) == INF
    assert statistic_distance(INF, INF) == 0.0
    verdict, why = stats_verdict(_stats((INF, 0, INF, INF), (12, 0, 1, 3)), LIMITS)
    assert verdict == FAIL and why == (
        "Max NPU inf, Mean NPU inf, L2norm NPU inf where the other side is finite",
    )
    error = statistics_error(_stats_row((INF, 0.0, 1.0, None), (12.0, 0.0, 1.0, None)))
    assert error.value == INF and error.words() == "Max target inf where the other side is finite"


A, D, U = Agreement.AGREE, Agreement.DISAGREE, Agreement.UNKNOWN


def _op(inputs: str, outputs: str) -> OpAgreement:
    letters = {"a": A, "d": D, "u": U}
    return OpAgreement(tuple(letters[c] for c in inputs), tuple(letters[c] for c in outputs))


@pytest.mark.parametrize(
    ("ops", "op", "inconsistent", "unseen", "last_agrees"),
    [
        ("a:a a:a", None, None, (), None),  # consistent
        ("a:a a:d d:d d:d", 1, None, (), False),  # accumulating
        ("a:a a:d d:a a:a", 1, None, (), True),  # single-point: the last op agrees again
        ("d:d d:d", None, (0, 0), (), None),  # the network input differs: no op is to blame
        (":a :d :d", 1, None, (), False),  # no input rows: inputs taken to agree before any fault
        ("a:a a:u u:d", 2, None, (1,), None),  # the op before had no numbers: it may start there
        ("a:d", 0, None, (), None),  # the last compared op
    ],
)
def test_divergence_start_walk(
    ops: str,
    op: int | None,
    inconsistent: tuple[int, int] | None,
    unseen: tuple[int, ...],
    last_agrees: bool | None,
) -> None:
    start = divergence_start([_op(*o.split(":")) for o in ops.split()])
    assert (start.op, start.inconsistent_input, start.unseen) == (op, inconsistent, unseen)
    if last_agrees is not None:
        assert start.spread is not None and start.spread.last_agrees is last_agrees


@pytest.mark.parametrize(
    ("overflow", "special", "fp16", "error", "found"),
    [
        (True, None, True, 0.0, Appearance.OVERFLOW_FLAG),
        (False, SpecialValues(0, 2, 0, 0, 2), True, 0.0, Appearance.ELSEWHERE),  # checked: no overflow
        (None, SpecialValues(0, 2, 0, 0, 2), True, 0.0, Appearance.OVERFLOW_INF),
        (None, SpecialValues(0, 2, 0, 0, 2), False, 0.0, Appearance.ELSEWHERE),  # float32: not an overflow
        (None, SpecialValues(3, 0, 1, 0, 2), False, 0.0, Appearance.NAN),
        (None, SpecialValues(1, 0, 1, 0, 2), False, 0.0, Appearance.ELSEWHERE),
        (None, SpecialValues(1, 0, 2, 0, 1), False, 0.0, None),  # the target's NaN are among the golden's
        (None, None, True, 70000.0, Appearance.OVERFLOW_ERROR),
        (None, None, False, 70000.0, None),
        (None, None, True, math.inf, Appearance.OVERFLOW_ERROR),  # counts unknown: may be the target's
        # the golden's inf, the target finite: the error is the golden's, the float16 output is fine
        (None, SpecialValues(0, 0, 0, 1, 1), True, math.inf, None),
        (None, SpecialValues(0, 0, 0, 1, 1), True, 70000.0, Appearance.OVERFLOW_ERROR),
    ],
)
def test_float16_overflow_and_nan_that_appeared(
    overflow: bool | None, special: SpecialValues | None, fp16: bool, error: float, found: Appearance | None
) -> None:
    assert special_appearance(overflow, special, fp16, error) is found


_UNDUMPED = OpAgreement((), (), dumped=False)  # an op of the fusion rule without a dump file


def test_an_input_made_by_an_op_without_a_dump_is_traced_to_it_not_to_the_network_inputs() -> None:
    ops = [_op("a", "a"), _UNDUMPED, OpAgreement((D,), (D,), producers=(1,))]
    start = divergence_start(ops)
    assert (start.op, start.row, start.producer, start.inconsistent_input) == (2, ("input", 0), 1, None)


def test_an_input_made_by_an_op_with_only_its_inputs_dumped_is_traced_to_it() -> None:
    ops = [OpAgreement((A,), (), producers=(None,)), OpAgreement((D,), (), producers=(0,))]
    assert (divergence_start(ops).producer, divergence_start(ops).inconsistent_input) == (0, None)


def test_an_input_the_rule_says_is_the_networks_own_stays_input_inconsistency() -> None:
    ops = [_UNDUMPED, OpAgreement((D,), (D,), producers=(None,))]
    start = divergence_start(ops)
    assert (start.inconsistent_input, start.producer) == ((1, 0), None)


def test_a_first_divergence_with_inferred_inputs_names_the_earlier_ops_without_a_dump() -> None:
    start = divergence_start([_UNDUMPED, _op("", "a"), _UNDUMPED, _op("", "d")])
    assert (start.op, start.inferred, start.undumped) == (3, True, (0, 2))
    # Its inputs compared and agreeing, the ops before it do not matter.
    assert divergence_start([_UNDUMPED, _op("a", "d")]).undumped == ()
