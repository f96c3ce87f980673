"""The compare summary and verdict: never an all-clear that nothing earned (issue 7)."""

from __future__ import annotations

import math
import shutil
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from dumpcmp.cli import app
from dumpcmp.host.metrics import MetricValues, compare_arrays
from dumpcmp.host.offline import run_compare
from dumpcmp.host.report.table import read_finite
from dumpcmp.host.request import CompareRequest
from dumpcmp.host.summary import Tally, grouped_reasons, nothing_compared, summarize
from dumpcmp.host.verdict import Thresholds
from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, TensorKind, read_dump, write_dump
from dumpcmp.proto.names import dump_file_name

runner = CliRunner()
STAMP0 = 1763700000000000
SESSION = "20261122000000"
OPS = ("stem/conv", "block1/conv", "block2/conv", "head/fc")

Mutate = Callable[[int, np.ndarray], np.ndarray]


def _golden_values(i: int) -> np.ndarray:
    return np.random.default_rng(i).standard_normal((4, 64)).astype(np.float32)


def write_tree(root: Path, mutate: Mutate | None = None, ops: tuple[str, ...] = OPS) -> Path:
    """A dump tree of one step: op ``i`` outputs ``mutate(i, golden values of i)``."""
    step = root / SESSION / "0" / "model" / "1" / "0"
    for i, name in enumerate(ops):
        values = _golden_values(i)
        values = mutate(i, values) if mutate is not None else values
        tensor = DumpTensor.from_array(TensorKind.OUTPUT, 0, values)
        dump = DumpFile("", Layout.V2, "2.0", STAMP0 + i, name, outputs=(tensor,))
        write_dump(step / dump_file_name("Conv2D", name, i + 1, 1, STAMP0 + i), dump)
    return root


def dump_file_of(root: Path, op: str) -> Path:
    stem = op.replace("/", "_")
    (path,) = (p for p in root.rglob("*") if p.is_file() and f".{stem}." in p.name)
    return path


def noisy(fraction: float, seed: int = 7) -> Mutate:
    """Gaussian noise of ``fraction`` × each element's magnitude."""

    def mutate(i: int, values: np.ndarray) -> np.ndarray:
        rng = np.random.default_rng(seed + i)
        return (values * (1 + fraction * rng.standard_normal(values.shape))).astype(np.float32)

    return mutate


@pytest.fixture(scope="module")
def golden_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tree(tmp_path_factory.mktemp("golden"))


# ---------------------------------------------------------------------------------------------
# Thresholds


def _metrics(**changes: float) -> MetricValues:
    x = np.linspace(1, 2, 50, dtype=np.float32)
    return replace(compare_arrays(x, x), **changes)


@pytest.mark.parametrize(
    ("field", "value", "name"),
    [
        ("cosine_similarity", 0.98, "CosineSimilarity"),
        ("cosine_similarity", math.nan, "CosineSimilarity"),
        ("relative_euclidean_distance", 0.051, "RelativeEuclideanDistance"),
        ("kullback_leibler_divergence", 0.0051, "KullbackLeiblerDivergence"),
        ("root_mean_square_error", 1.01, "RootMeanSquareError"),
        ("mean_relative_error", 1.01, "MeanRelativeError"),
    ],
)
def test_each_msit_threshold_judges_its_metric(field: str, value: float, name: str) -> None:
    limits = Thresholds()
    assert limits.breaches(_metrics()) == ()
    (breach,) = limits.breaches(_metrics(**{field: value}))
    assert breach.startswith(name)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("cosine_similarity", 0.99),
        ("relative_euclidean_distance", 0.05),
        ("kullback_leibler_divergence", 0.005),
        ("root_mean_square_error", 1.0),
        ("mean_relative_error", 1.0),
    ],
)
def test_a_metric_at_its_threshold_does_not_diverge(field: str, value: float) -> None:
    assert not Thresholds().diverges(_metrics(**{field: value}))


def test_rows_without_numbers_and_bool_rows_are_not_judged() -> None:
    assert not Thresholds().diverges(MetricValues.unavailable("golden file missing"))
    flags = np.array([True, False, True])
    assert not Thresholds().diverges(compare_arrays(flags, flags))


# ---------------------------------------------------------------------------------------------
# Verdict and summary on real runs


def _run(target: Path, golden: Path, out: Path, thresholds: Thresholds | None = None) -> list[str]:
    limits = thresholds or Thresholds()
    outcome = run_compare(CompareRequest(target, golden, out_dir=out, thresholds=limits))
    return summarize(outcome, limits)


def test_six_percent_noise_everywhere_is_not_all_clear(golden_tree: Path, tmp_path: Path) -> None:
    target = write_tree(tmp_path / "npu", noisy(0.06))
    outcome = run_compare(CompareRequest(target, golden_tree, out_dir=tmp_path / "out"))
    rows = [r for r in outcome.rows if r.index is not None]
    # Cosine alone calls this run clean: that was the old verdict.
    assert all(r.cosine > 0.99 for r in rows)
    lines = summarize(outcome, Thresholds())
    assert "beyond thresholds (CosineSimilarity < 0.99, RelativeEuclideanDistance > 0.05, " in "\n".join(
        lines
    )
    assert lines[-2].endswith(f"): {len(OPS)}")
    assert lines[-1].startswith("first divergence: step 0, index 0 Conv2D stem/conv (stem/conv:output:0): ")
    assert "): RelativeEuclideanDistance 0.05" in lines[-1] and "> 0.05; ground truth stem/conv" in lines[-1]


def test_threshold_options_move_the_verdict(golden_tree: Path, tmp_path: Path) -> None:
    target = write_tree(tmp_path / "npu", noisy(0.06))
    lenient = _run(target, golden_tree, tmp_path / "a", Thresholds(relative_euclidean=0.1))
    assert lenient[-2].endswith("): 0")
    assert lenient[-1] == f"no divergence: all {len(OPS)} compared tensors are within the thresholds"
    strict = _run(write_tree(tmp_path / "clean"), golden_tree, tmp_path / "b", Thresholds(cosine=1.5))
    assert strict[-2].endswith(f"): {len(OPS)}")


def _fault_from_block1(i: int, values: np.ndarray) -> np.ndarray:
    return values + 1.0 if i >= 1 else values


def _corrupt(path: Path) -> str:
    path.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00" + b"\xff" * 40)
    return "corrupt dump file: "


def _unknown_format(path: Path) -> str:
    dump = read_dump(path)
    bad = replace(dump.outputs[0], format=67)  # a format value no CANN version has
    write_dump(path, replace(dump, path="", outputs=(bad,)))
    return "unreadable tensor: output:0: unknown format 67 in the dump header"


def _truncated(path: Path) -> str:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # what ``truncate -s`` does to a dump file
    return "corrupt dump file: "


@pytest.mark.parametrize("spoil", [_corrupt, _unknown_format, _truncated])
def test_an_unreadable_culprit_is_named_before_the_first_divergence(
    golden_tree: Path, tmp_path: Path, spoil: Callable[[Path], str]
) -> None:
    target = write_tree(tmp_path / "npu", _fault_from_block1)
    culprit = dump_file_of(target, "block1/conv")
    reason = spoil(culprit)
    lines = _run(target, golden_tree, tmp_path / "out")
    text = "\n".join(lines)
    unreadable = next(i for i, line in enumerate(lines) if line.startswith("unreadable dump file "))
    first = next(i for i, line in enumerate(lines) if line.startswith("first divergence: "))
    assert unreadable < first
    assert lines[unreadable].startswith(f"unreadable dump file {culprit}: {reason}")
    assert "unreadable dump files: 1," in text
    assert lines[first].startswith("first divergence: step 0, index 2 Conv2D block2/conv")
    assert lines[first].endswith(f"dump file {dump_file_of(target, 'block2/conv')}")
    # The next op's tensors are the first with numbers beyond the thresholds; blaming them with no
    # caveat sent users to the wrong op (a damaged golden of the culprit always had the warning).
    warning = "warning: it may start earlier: 1 unreadable dump file right before it could not be compared:"
    assert lines[first + 1 :] == [warning, lines[first + 2]]
    assert lines[first + 2].startswith("  index 1 Conv2D block1")
    assert reason in lines[first + 2]


def test_a_culprit_whose_golden_is_unreadable_is_named_after_the_first_divergence(
    golden_tree: Path, tmp_path: Path
) -> None:
    # Its output has no numbers, so the first tensor beyond the thresholds is the next op's:
    # the summary must say the divergence may start at the op it could not compare.
    golden = tmp_path / "golden"
    shutil.copytree(golden_tree, golden)
    dump_file_of(golden, "block1/conv").write_bytes(b"\x10" + b"\x00" * 7 + b"\xff" * 40)
    target = write_tree(tmp_path / "npu", _fault_from_block1)
    lines = _run(target, golden, tmp_path / "out")
    first = next(i for i, line in enumerate(lines) if line.startswith("first divergence: "))
    assert lines[first].startswith("first divergence: step 0, index 2 Conv2D block2/conv")
    warning = "warning: it may start earlier: 1 output right before it could not be compared:"
    assert lines[first + 1] == warning
    assert lines[first + 2].startswith("  index 1 Conv2D block1/conv (block1/conv:output:0): ")


def test_a_clean_run_before_the_first_divergence_gets_no_warning(golden_tree: Path, tmp_path: Path) -> None:
    lines = _run(write_tree(tmp_path / "npu", _fault_from_block1), golden_tree, tmp_path / "out")
    assert not [line for line in lines if line.startswith("warning")]


def test_a_nan_in_the_golden_is_said_to_be_on_the_golden_side(golden_tree: Path, tmp_path: Path) -> None:
    def nan_in_block1(i: int, values: np.ndarray) -> np.ndarray:
        if i == 1:
            values = values.copy()
            values.flat[3] = np.nan
        return values

    golden = write_tree(tmp_path / "golden", nan_in_block1)
    lines = _run(write_tree(tmp_path / "npu"), golden, tmp_path / "out")
    (first,) = (line for line in lines if line.startswith("first divergence: "))
    assert first.startswith("first divergence: step 0, index 1 Conv2D block1/conv (block1/conv:output:0): ")
    assert "CosineSimilarity NaN (target has 0 NaN and 0 inf, golden has 1 NaN and 0 inf;" in first


def test_each_model_of_a_run_gets_its_own_first_divergence(golden_tree: Path, tmp_path: Path) -> None:
    # One line for the whole run named no model, and the second model's fault went unsaid.
    target = tmp_path / "npu"
    for model, faulty in (("net_a", 1), ("net_b", 2)):
        tree = write_tree(tmp_path / model, lambda i, v, at=faulty: v + 1.0 if i == at else v)
        shutil.copytree(tree / SESSION / "0" / "model", target / SESSION / "0" / model)
    lines = _run(target, golden_tree, tmp_path / "out")
    firsts = [line for line in lines if line.startswith("first divergence")]
    assert [line.split(" (")[0] for line in firsts] == [
        "first divergence in model net_a: step 0, index 1 Conv2D block1/conv",
        "first divergence in model net_b: step 0, index 2 Conv2D block2/conv",
    ]


def test_the_lines_of_a_run_of_several_devices_name_the_device(golden_tree: Path, tmp_path: Path) -> None:
    # Device 0 diverges at block2, device 1 turns NaN at block1: neither line said which device.
    def nan_at_block1(i: int, values: np.ndarray) -> np.ndarray:
        return np.full_like(values, np.nan) if i == 1 else values

    target = tmp_path / "npu"
    for device, change in (("0", lambda i, v: v + 1.0 if i == 2 else v), ("1", nan_at_block1)):
        tree = write_tree(tmp_path / f"d{device}", change)
        shutil.copytree(tree / SESSION / "0", target / SESSION / device)
    lines = _run(target, golden_tree, tmp_path / "out")
    (appeared,) = (line for line in lines if line.startswith("nan/inf appeared"))
    assert "the first: device 1, step 0, index 1 Conv2D block1/conv" in appeared
    firsts = [line.split(" (")[0] for line in lines if line.startswith("first divergence")]
    assert firsts == ["first divergence: device 0, step 0, index 2 Conv2D block2/conv"]  # shard order


def test_a_skipped_file_of_the_target_tree_warns_that_the_divergence_may_start_earlier(
    golden_tree: Path, tmp_path: Path
) -> None:
    # The culprit's dump file renamed past recognition: it was skipped, and the first divergence
    # moved to the next op without the warning an unreadable file gets.
    target = write_tree(tmp_path / "npu", lambda i, v: v + 1.0 if i >= 1 else v)
    culprit = dump_file_of(target, "block1/conv")
    culprit.rename(culprit.with_name("12345678901234567890123456789012"))
    lines = _run(target, golden_tree, tmp_path / "out")
    first = next(i for i, line in enumerate(lines) if line.startswith("first divergence"))
    assert "block2/conv" in lines[first]
    # The culprit's missing dump is a gap in the dump's task ids too (said since the summary says gaps).
    assert lines[first + 1].startswith(
        "warning: it may start earlier: an op before it may not have been dumped"
    )
    assert lines[first + 2] == (
        "warning: it may start earlier: 1 file of the target tree was skipped (above), and a dump file "
        "among them is not compared"
    )


def test_a_mapping_entry_naming_a_path_is_no_hidden_file(tmp_path: Path) -> None:
    from dumpcmp.proto.walker import walk_dump_tree

    target = write_tree(tmp_path / "npu")
    culprit = dump_file_of(target, "block1/conv")
    numeric = culprit.with_name("12345678901234567890123456789012")
    culprit.rename(numeric)
    (numeric.parent / "mapping.csv").write_text(f"{numeric.name},../../{culprit.name}\n")
    (skipped,) = walk_dump_tree(target).skipped
    assert skipped.reason.startswith(f"mapping.csv names it '../../{culprit.name}', not a dump file name: ")


def test_a_corrupt_file_is_named_once_in_its_line(golden_tree: Path, tmp_path: Path) -> None:
    target = write_tree(tmp_path / "npu")
    culprit = dump_file_of(target, "block1/conv")
    culprit.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00" + b"\xff" * 40)
    (line,) = (x for x in _run(target, golden_tree, tmp_path / "out") if x.startswith("unreadable dump file"))
    assert line.count(str(culprit)) == 1


def _nan_at_3_of(op: int, bias: float = 0.0) -> Mutate:
    def mutate(i: int, values: np.ndarray) -> np.ndarray:
        if i != op:
            return values
        values = values + bias
        values.flat[3] = np.nan
        return values

    return mutate


def test_nan_at_the_same_positions_on_both_sides_is_no_divergence(tmp_path: Path) -> None:
    # NPU vs NPU (a tree against itself): the NaN is in both runs, so it is not where the NPU
    # stops agreeing; it was reported as the first divergence.
    tree = write_tree(tmp_path / "npu", _nan_at_3_of(1))
    outcome = run_compare(CompareRequest(tree, tree, out_dir=tmp_path / "out"))
    (row,) = (r for r in outcome.rows if r.index == 1)
    assert math.isnan(row.cosine)  # the metric itself stays as the spec gives it
    lines = summarize(outcome, Thresholds())
    assert not any(line.startswith("first divergence") for line in lines)
    assert (
        "1 tensor holds NaN/inf at the same positions on both sides and agrees elsewhere (not counted as "
        "divergence); the first: step 0, index 1 Conv2D block1/conv (block1/conv:output:0)" in lines
    )
    assert lines[-1] == (
        f"no divergence: all {len(OPS)} compared tensors are within the thresholds "
        "(1 of them only where both sides are finite)"
    )


def _advice_of(outcome: object) -> list[str]:
    from dumpcmp.host.report.advisor import advise
    from dumpcmp.host.report.table import read_result

    (shard,) = outcome.shards  # type: ignore[attr-defined]
    return advise(read_result(shard.result_file)).lines()


def test_the_advisor_judges_same_position_nan_as_the_summary_does(tmp_path: Path) -> None:
    # From the result table alone: the reason gives the finite elements' numbers. Before, the
    # advisor named the NaN tensor as the first divergence while the summary said there was none.
    tree = write_tree(tmp_path / "npu", _nan_at_3_of(1))
    outcome = run_compare(CompareRequest(tree, tree, out_dir=tmp_path / "out"))
    (row,) = (r for r in outcome.rows if r.index == 1)
    assert "(where both are finite: CosineSimilarity 1, RelativeEuclideanDistance 0," in " ".join(row.reasons)
    (line,) = _advice_of(outcome)
    assert line.startswith(f"network consistent: all {len(OPS)} compared tensors agree")

    golden = write_tree(tmp_path / "golden", _nan_at_3_of(1))
    apart = run_compare(CompareRequest(write_tree(tmp_path / "biased", _nan_at_3_of(1, bias=1.0)), golden,
                                       out_dir=tmp_path / "out2"))  # fmt: skip
    assert any("block1/conv" in line and "first divergence" in line for line in _advice_of(apart))


def _all_nan(op: int | None = None) -> Mutate:
    def mutate(i: int, values: np.ndarray) -> np.ndarray:
        return np.full_like(values, np.nan) if op is None or i == op else values

    return mutate


def test_tensors_with_nan_everywhere_on_both_sides_give_no_all_clear(tmp_path: Path) -> None:
    # An all-NaN network input makes every tensor of both runs all NaN: the positions agree, and
    # the summary and the advisor said "no divergence" and "network consistent", comparing nothing.
    tree = write_tree(tmp_path / "npu", _all_nan())
    outcome = run_compare(CompareRequest(tree, tree, out_dir=tmp_path / "out"))
    lines = summarize(outcome, Thresholds())
    assert not any(line.startswith("no divergence") for line in lines)
    assert lines[-1] == (
        f"no verdict: every compared tensor ({len(OPS)}) holds NaN/inf at every position, on both sides; "
        "no value could be judged"
    )
    blank = f"{len(OPS)} tensors hold NaN/inf at every position on both sides"
    assert any(line.startswith(blank) for line in lines)
    (advice,) = _advice_of(outcome)
    assert advice.startswith(f"no finite data: all {len(OPS)} compared tensors hold NaN/inf at every")


def test_one_tensor_with_nan_everywhere_is_set_apart_from_the_agreeing_ones(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "npu", _all_nan(op=len(OPS) - 1))
    outcome = run_compare(CompareRequest(tree, tree, out_dir=tmp_path / "out"))
    lines = summarize(outcome, Thresholds())
    assert lines[-1] == (
        f"no divergence: all {len(OPS) - 1} compared tensors with finite values are within the thresholds "
        "(1 more holds none)"
    )
    (advice,) = _advice_of(outcome)
    assert advice.startswith(f"network consistent: all {len(OPS) - 1} compared tensors with finite values")


def test_the_finite_elements_read_back_from_the_reason() -> None:
    x = np.array([np.nan, 1.0, 2.0, 3.0, np.inf], dtype=np.float32)
    m = compare_arrays(x, x * np.float32(1.001))
    assert m.finite is not None
    reason = " ".join(m.reasons)
    read = read_finite(reason)
    assert read is not None
    assert read.cosine_similarity == pytest.approx(m.finite.cosine_similarity, rel=1e-9)
    assert read.root_mean_square_error == pytest.approx(m.finite.root_mean_square_error, rel=1e-8)
    assert Thresholds().breaches(replace(m, finite=read)) == Thresholds().breaches(m)


def test_nan_at_the_same_positions_with_other_elements_apart_diverges(tmp_path: Path) -> None:
    golden = write_tree(tmp_path / "golden", _nan_at_3_of(1))
    lines = _run(write_tree(tmp_path / "npu", _nan_at_3_of(1, bias=1.0)), golden, tmp_path / "out")
    (first,) = (line for line in lines if line.startswith("first divergence"))
    assert first.startswith(
        "first divergence: step 0, index 1 Conv2D block1/conv (block1/conv:output:0): "
        "CosineSimilarity of the finite elements 0."
    )
    assert "NaN/inf positions agree" in first
    assert not any("at the same positions on both sides" in line for line in lines)


def test_nan_at_different_positions_is_a_divergence(tmp_path: Path) -> None:
    golden = write_tree(tmp_path / "golden", _nan_at_3_of(1))
    lines = _run(write_tree(tmp_path / "npu", _nan_at_3_of(2)), golden, tmp_path / "out")
    (first,) = (line for line in lines if line.startswith("first divergence"))
    assert first.startswith("first divergence: step 0, index 1 Conv2D block1/conv (block1/conv:output:0): "
                            "CosineSimilarity NaN")  # fmt: skip


def test_the_verdict_judges_same_position_nan_by_the_other_elements() -> None:
    x = np.linspace(1, 2, 50, dtype=np.float32)
    x[3] = np.nan
    assert Thresholds().breaches(compare_arrays(x, x)) == ()
    apart = x.copy()
    apart[10:20] += 1
    breaches = Thresholds().breaches(compare_arrays(x, apart))
    assert breaches and all(" of the finite elements " in b for b in breaches)
    moved = x.copy()
    moved[4] = np.nan
    assert Thresholds().breaches(compare_arrays(x, moved)) == ("CosineSimilarity NaN",)


def _overflow_at_block1(i: int, values: np.ndarray) -> np.ndarray:
    if i != 1:
        return values
    values = values.astype(np.float16)
    values.flat[5] = 65504
    return values


def test_an_overflow_is_said_and_no_divergence_does_not_hide_it(tmp_path: Path) -> None:
    # With -overflow_detection the summary never mentioned overflow and said "no divergence".
    target = write_tree(tmp_path / "npu", _overflow_at_block1)
    golden = write_tree(tmp_path / "golden", lambda i, v: _overflow_at_block1(i, v).astype(np.float32))
    outcome = run_compare(CompareRequest(target, golden, out_dir=tmp_path / "out", overflow_detection=True))
    assert [r.overflow for r in outcome.rows] == [False, True, False, False]
    lines = summarize(outcome, Thresholds())
    assert (
        "float16 overflow (±inf, NaN or |v| ≥ 65504) in 1 tensor; the first: step 0, index 1 Conv2D "
        "block1/conv (block1/conv:output:0)" in lines
    )
    assert lines[-1] == (
        f"no divergence: all {len(OPS)} compared tensors are within the thresholds, but 1 tensor "
        "overflowed float16 (above)"
    )
    quiet = summarize(run_compare(CompareRequest(target, golden, out_dir=tmp_path / "off")), Thresholds())
    assert not any(line.startswith("float16 overflow") or "overflowed" in line for line in quiet)


def test_a_nan_cosine_reads_as_nan() -> None:
    assert Thresholds().breaches(_metrics(cosine_similarity=math.nan)) == ("CosineSimilarity NaN",)


def test_many_steps_are_ordered_as_numbers_and_listed_briefly(golden_tree: Path, tmp_path: Path) -> None:
    source = write_tree(tmp_path / "one") / SESSION / "0" / "model" / "1" / "0"
    target = tmp_path / "npu"
    for step in (0, 1, 2, 10, 11, 12, 100, 3, 4, 5, 6, 7):
        shutil.copytree(source, target / SESSION / "0" / "model" / "1" / str(step))
    golden = tmp_path / "golden"
    shutil.copytree(source, golden / SESSION / "0" / "model" / "1" / "0")
    outcome = run_compare(CompareRequest(target, golden, out_dir=tmp_path / "out"))
    assert [s.key.step for s in outcome.shards] == [
        "0",
        "1",
        "2",
        "3",
        "4",
        "5",
        "6",
        "7",
        "10",
        "11",
        "12",
        "100",
    ]
    lines = summarize(outcome, Thresholds())
    results = [line for line in lines if line.startswith("result: ")]
    assert len(results) == 3
    assert lines[3] == f"… and 9 more result files in {tmp_path / 'out'}"


def test_reasons_are_grouped_most_common_first(golden_tree: Path, tmp_path: Path) -> None:
    extra = ("other/a", "other/b", "other/c")
    target = write_tree(tmp_path / "npu", ops=(*OPS[:2], *extra))
    outcome = run_compare(CompareRequest(target, golden_tree, out_dir=tmp_path / "out"))
    tally = Tally.of(outcome, Thresholds())
    assert (tally.targets, tally.compared, tally.golden_only) == (5, 2, 2)
    (group,) = tally.not_compared
    assert group.count == 3
    assert "other_a" in group.example and "not found" in group.example
    lines = summarize(outcome, Thresholds())
    assert (
        "target tensors: 5, compared: 2, not compared: 3, unreadable dump files: 0, golden-only tensors: 2"
        in lines
    )
    assert any(
        line.startswith("  3 × e.g. golden dump of other_a (output 0) not found in ") for line in lines
    )
    assert any(line.startswith("warning: only 2 of 5 target tensors were compared") for line in lines)


def test_reasons_of_one_kind_count_together_ties_in_the_order_first_met() -> None:
    only_outputs = "golden npy files hold op outputs only; compare NPU dumps for inputs"
    reasons = [
        "golden file conv1.0.{timestamp}.npy not found in /g",
        only_outputs,
        "shape mismatch [1, 2] vs [2, 1]",
        only_outputs,
        "golden file relu_2.1.{timestamp}.npy not found in /g",  # another name, the same kind
        "shape mismatch [3] vs [4]",
        only_outputs,
    ]
    groups = grouped_reasons(reasons)
    assert [(g.count, g.example) for g in groups] == [
        (3, only_outputs),
        (2, reasons[0]),  # ties: the kind met first comes first, with its first words
        (2, reasons[2]),
    ]
    assert grouped_reasons([]) == ()


def test_a_half_matched_run_gets_no_warning(golden_tree: Path, tmp_path: Path) -> None:
    target = write_tree(tmp_path / "npu", ops=(*OPS[:2], "other/a", "other/b"))
    lines = _run(target, golden_tree, tmp_path / "out")
    assert not any(line.startswith("warning") for line in lines)


# ---------------------------------------------------------------------------------------------
# Nothing compared


def test_golden_of_another_model_is_an_error_naming_what_to_check(golden_tree: Path, tmp_path: Path) -> None:
    target = write_tree(tmp_path / "npu", ops=("x/a", "x/b"))
    outcome = run_compare(CompareRequest(target, golden_tree, out_dir=tmp_path / "out"))
    message = nothing_compared(outcome, Thresholds())
    assert message is not None
    assert message.startswith("nothing compared: none of the 2 target tensors has numbers")
    assert "-gp" in message and "-fr" in message
    assert "4 golden tensors went unused" in message
    result = runner.invoke(
        app, ["compare", "-tp", str(target), "-gp", str(golden_tree), "-o", str(tmp_path / "cli")]
    )
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert errors == [f"Error: {message}"]
    assert "tensors beyond thresholds" not in result.output  # no verdict over nothing


def test_wrong_rule_file_is_an_error(shared_fixtures: Path, tmp_path: Path) -> None:
    dumps = shared_fixtures / "dumps" / "20261121093000"
    golden = tmp_path / "golden"
    golden.mkdir()
    np.save(golden / "conv1.0.1763700000000000.npy", np.zeros(4, np.float32))
    rules = shared_fixtures / "atc" / "tdnn.om.json"
    result = runner.invoke(app, ["compare", "-tp", str(dumps), "-gp", str(golden), "-fr", str(rules),
                                 "-o", str(tmp_path / "out")])  # fmt: skip
    assert result.exit_code == 1
    assert "Error: nothing compared: none of the" in result.output
    assert "Traceback" not in result.output


def test_every_dump_file_unreadable_says_so(golden_tree: Path, tmp_path: Path) -> None:
    target = write_tree(tmp_path / "npu", ops=OPS[:2])
    for op in OPS[:2]:
        dump_file_of(target, op).write_bytes(b"junk")
    outcome = run_compare(CompareRequest(target, golden_tree, out_dir=tmp_path / "out"))
    assert (
        nothing_compared(outcome, Thresholds())
        == "nothing compared: all 2 dump files are unreadable; check -tp"
    )


def test_a_compared_run_is_no_error(golden_tree: Path, tmp_path: Path) -> None:
    outcome = run_compare(CompareRequest(write_tree(tmp_path / "npu"), golden_tree, out_dir=tmp_path / "out"))
    assert nothing_compared(outcome, Thresholds()) is None


def test_xlsx_marks_the_rows_the_thresholds_judge(golden_tree: Path, tmp_path: Path) -> None:
    import openpyxl

    def noisy_block2(i: int, values: np.ndarray) -> np.ndarray:
        return noisy(0.06)(i, values) if i == 2 else values

    target = write_tree(tmp_path / "npu", noisy_block2)
    outcome = run_compare(CompareRequest(target, golden_tree, out_dir=tmp_path / "out", xlsx=True))
    (shard,) = outcome.shards
    assert shard.xlsx_file is not None
    sheet = openpyxl.load_workbook(shard.xlsx_file).active
    assert sheet is not None
    fills = [row[0].fill.fgColor.rgb[2:] for row in sheet.iter_rows(min_row=2)]
    # block2's cosine is 0.998, its RED 0.06: beyond the thresholds. Its inputs are not in the
    # table (outputs only), so it cannot be told to make the error itself: suspicious, yellow.
    green, yellow = "C6EFCE", "FFEB9C"
    assert fills == [green, green, yellow, green]


def test_nothing_compared_in_a_file_pair_names_the_two_files(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.ones((2, 3), np.float32))
    np.save(tmp_path / "b.npy", np.ones((3, 2), np.float32))
    args = ["compare", "-tp", tmp_path / "a.npy", "-gp", tmp_path / "b.npy", "-o", tmp_path / "out"]
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 1
    last = result.output.splitlines()[-1]
    assert last.endswith("check that -tp and -gp are the same tensor")
    assert "-fr" not in last


def test_a_tree_of_many_small_steps_forks_one_pool_for_all_of_them(
    golden_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dumpcmp.host.workers as workers

    source = write_tree(tmp_path / "one") / SESSION / "0" / "model" / "1" / "0"
    target = tmp_path / "npu"
    for step in range(3):
        shutil.copytree(source, target / SESSION / "0" / "model" / "1" / str(step))
    # 12 files in all, 4 a step: every step's files are one work, in flight at once; a pool
    # forked for each step cost more than it brought.
    monkeypatch.setattr(workers, "PROCESS_MIN_FILES", 2 * len(OPS))
    pools: list[object] = []
    forked = workers._Processes

    def counted(*args: Any) -> object:
        pools.append(args)
        return forked(*args)

    monkeypatch.setattr(workers, "_Processes", counted)
    outcome = run_compare(CompareRequest(target, golden_tree, out_dir=tmp_path / "out", jobs=2))
    assert len(outcome.shards) == 3
    assert len(pools) == (1 if sys.platform.startswith("linux") else 0)


def test_an_op_not_dumped_before_the_divergence_is_said_though_the_index_hides_it(
    golden_tree: Path, tmp_path: Path
) -> None:
    # block1/conv (task 2) not dumped: block2/conv became "index 1", and nothing said an op before it
    # was missing (the advisor hedges such a gap; the summary's renumbered Index hid it).
    target = write_tree(tmp_path / "npu", lambda i, v: v + 1.0 if i >= 2 else v)
    dump_file_of(target, "block1/conv").unlink()
    lines = _run(target, golden_tree, tmp_path / "out")
    first = next(i for i, line in enumerate(lines) if line.startswith("first divergence"))
    assert lines[first].startswith("first divergence: step 0, index 1 Conv2D block2/conv (")
    assert lines[first + 1] == (
        "warning: it may start earlier: an op before it may not have been dumped (the dump's task ids "
        "skip from 1 to 3 right before it; index 1 counts the dumped ops only)"
    )
    # every op dumped: no such line
    whole = write_tree(tmp_path / "whole", lambda i, v: v + 1.0 if i >= 2 else v)
    assert not [line for line in _run(whole, golden_tree, tmp_path / "o2") if "not have been dumped" in line]


def test_files_skipped_in_another_step_do_not_move_the_first_divergence(tmp_path: Path) -> None:
    """tryout7 #7: files skipped in step 1 made the verdict in step 0 warn "it may start earlier",
    and nothing said which step lost them."""
    import os

    from dumpcmp.commands.sim import simulate

    sim = simulate("zoo:small_cnn", tmp_path / "sim", steps=2, faults=("/block2/Add=bias:0.5",))
    step0, step1 = sorted({p.parent for p in sim.npu_dump_dir.rglob("*") if p.is_file()})

    def first_dumped(step: Path) -> Path:
        return min(step.iterdir(), key=lambda p: int(p.name.rsplit(".", 1)[1]))

    late = first_dumped(step1)  # the first op of the later step
    late.unlink()
    os.mkfifo(late)
    request = CompareRequest(sim.npu_dump_dir, sim.golden_dir, sim.fusion_rule, out_dir=tmp_path / "out")
    lines = summarize(run_compare(request), Thresholds())
    assert any(line.startswith("first divergence: step 0, index 8") for line in lines), lines
    assert not [line for line in lines if "may start earlier" in line]
    assert "dump files not compared, by shard: step 1: 1 skipped file" in lines
    early = first_dumped(step0)  # before step 0's divergence: it may hide where it starts
    early.unlink()
    os.mkfifo(early)
    lines = summarize(run_compare(replace(request, out_dir=tmp_path / "again")), Thresholds())
    warning = "warning: it may start earlier: 1 file of the target tree was skipped (above)"
    assert [line for line in lines if line.startswith(warning)], lines
    assert "dump files not compared, by shard: step 0: 1 skipped file; step 1: 1 skipped file" in lines
