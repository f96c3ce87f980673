"""Tiny tensors compared in stacks (``pipeline.evaluate_all``, ``offline_data.compare_rows``,
``core.compare_batch``) give exactly the rows of the pair-by-pair path: the same bits in every
metric, the same reasons, each failure on its own pair's row."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from dumpcmp.errors import DumpcmpError, FormatError, UnsupportedDtypeError
from dumpcmp.host import pipeline
from dumpcmp.host.core import ComparePlan, FileRows, compare_batch, compare_file
from dumpcmp.host.golden import GoldenTensor, NpyGoldenDir
from dumpcmp.host.metrics.offline_data import DEFAULT_CHUNK, MetricValues, compare_arrays, compare_rows
from dumpcmp.host.pipeline import CompareOptions, TensorJob, evaluate, evaluate_all, file_jobs
from dumpcmp.host.rows import ResultRow
from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, TensorKind, write_dump
from dumpcmp.proto.dtypes import DataType, Format
from dumpcmp.proto.layouts import to_device
from dumpcmp.proto.names import dump_file_name, golden_file_name
from dumpcmp.proto.walker import DumpEntry, walk_dump_tree

ROWS = 9


def _texts(items: list[MetricValues] | list[object]) -> list[str]:
    """Every float's repr is exact and shows NaN: equal texts are equal bits (and reasons)."""
    return [repr(item) for item in items]


def _odd_rows(x: np.ndarray, y: np.ndarray) -> None:
    """Rows that take every special path of the metrics, in place (float arrays)."""
    x[1, 3:6] = y[1, 3:6] = np.nan  # NaN at the same positions: metrics of the finite part
    x[2, 4] = np.nan  # NaN on one side only
    x[3, 0], y[3, 0] = np.inf, np.inf  # inf at the same position
    x[3, 1], y[3, 1] = -np.inf, np.inf  # and at one where the signs differ
    x[4] = 0.0  # target all zero
    y[5] = x[5]  # identical
    x[6], y[6] = 2.5, -1.0  # constant sides: KL without a range
    x[7], y[7] = np.nan, np.nan  # nothing finite at all


@pytest.mark.parametrize(
    ("x_dtype", "y_dtype"),
    [
        (np.float16, np.float32),
        (np.float32, np.float32),
        (np.float64, np.float64),
        (ml_dtypes.bfloat16, np.float32),
        (np.int8, np.float32),
        (np.bool_, np.bool_),
    ],
)
@pytest.mark.parametrize("n", [1, 37, 300])
def test_compare_rows_gives_compare_arrays_of_each_row(x_dtype: type, y_dtype: type, n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.standard_normal((ROWS, n)) * 3
    y = x + rng.standard_normal((ROWS, n)) * 0.01
    if n > 6 and np.dtype(x_dtype).kind == "f" and np.dtype(y_dtype).kind == "f":
        _odd_rows(x, y)
    x, y = x.astype(x_dtype), y.astype(y_dtype)
    want = [compare_arrays(a, b) for a, b in zip(x, y, strict=True)]
    assert _texts(compare_rows(x, y)) == _texts(want)


def test_compare_rows_of_pairs_longer_than_a_chunk_compares_them_one_by_one() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 2 * DEFAULT_CHUNK)).astype(np.float32)
    y = (x + 0.1).astype(np.float32)
    assert _texts(compare_rows(x, y)) == _texts([compare_arrays(a, b) for a, b in zip(x, y, strict=True)])


def test_compare_rows_refuses_what_compare_arrays_refuses() -> None:
    x = np.ones((3, 4), dtype=np.complex64)
    with pytest.raises(UnsupportedDtypeError):
        compare_arrays(x[0], x[0])
    with pytest.raises(UnsupportedDtypeError):
        compare_rows(x, x)
    with pytest.raises(ValueError, match="one shape"):
        compare_rows(np.ones((3, 4)), np.ones((3, 5)))


# ---------------------------------------------------------------------------------------------
# Jobs: every kind of pair, several of each, so that stacks form and fail


def _job(
    name: str,
    device: np.ndarray,
    golden: np.ndarray | Exception | None,
    *,
    fmt: Format = Format.ND,
    logical: tuple[int, ...] | None = None,
    origin_format: str = "",
    data_type: DataType | None = None,
    device_format: int | None = None,
) -> TensorJob:
    tensor = DumpTensor.from_array(TensorKind.OUTPUT, 0, device, format=fmt, original_shape=logical,
                                   data_type=data_type)  # fmt: skip
    if device_format is not None:  # a value outside the enum: the tensor's own error
        tensor = DumpTensor(tensor.kind, 0, tensor.data_type, device_format, tensor.shape,
                            tensor.original_shape, tensor.size, tensor.payload)  # fmt: skip

    def load() -> np.ndarray:
        if isinstance(golden, Exception):
            raise golden
        assert golden is not None
        return golden

    found = None if golden is None else GoldenTensor(f"{name}.npy", Path(f"{name}.npy"), load, name)
    return TensorJob(1, "Add", name, name, f"{name}:output:0", tensor, found, origin_format=origin_format,
                     reason="" if found is not None else f"golden file {name} not found")  # fmt: skip


def _kinds(rng: np.random.Generator) -> dict[str, Callable[[int], TensorJob]]:
    """Makers of one job of each kind, by the kind's name."""

    def normal(shape: tuple[int, ...]) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    def nc1hwc0(i: int) -> TensorJob:  # C = 3: the device pads C to 16, the conversion cuts it
        logical = normal((2, 3, 2, 2))
        if i == 1:
            logical[0, 1] = np.nan
        golden = logical + np.float32(0.01) * i
        golden[0, 1] = logical[0, 1]
        device = to_device(logical.astype(np.float16), Format.NC1HWC0, Format.NCHW)
        return _job(f"nc{i}", device, golden, fmt=Format.NC1HWC0, logical=(2, 3, 2, 2))

    def nhwc_golden(i: int) -> TensorJob:  # the golden in the framework's NHWC
        logical = normal((1, 5, 2, 3))
        device = to_device(logical.astype(np.float16), Format.NC1HWC0, Format.NCHW)
        golden = np.ascontiguousarray(logical.transpose(0, 2, 3, 1)) * np.float32(1 + i / 10)
        return _job(f"nhwc{i}", device, golden, fmt=Format.NC1HWC0, logical=(1, 5, 2, 3),
                    origin_format="NHWC")  # fmt: skip

    def fractal_nz(i: int) -> TensorJob:
        logical = normal((20, 33))
        device = to_device(logical.astype(np.float16), Format.FRACTAL_NZ, Format.ND)
        return _job(f"nz{i}", device, logical - np.float32(i), fmt=Format.FRACTAL_NZ, logical=(20, 33))

    def nd(i: int) -> TensorJob:
        x = normal((3, 4))
        y = {0: x.copy(), 1: np.zeros_like(x)}.get(i % 3, x * np.float32(0.5))
        if i == 2:
            x[1, 1] = np.inf
        return _job(f"nd{i}", x, y)

    def fortran_golden(i: int) -> TensorJob:
        x = normal((4, 5))
        return _job(f"fortran{i}", x, np.asfortranarray(x + np.float32(i)))

    def unit_dims(i: int) -> TensorJob:
        x = normal((1, 6, 1))
        return _job(f"units{i}", x, x.reshape(6) + np.float32(i))

    def scalar(i: int) -> TensorJob:
        return _job(f"scalar{i}", np.array([1.5 + i], dtype=np.float32), np.array(1.5, dtype=np.float32))

    def transposed(i: int) -> TensorJob:  # equal sizes, other shape: a mismatch, not numbers
        return _job(f"transposed{i}", normal((2, 3)), normal((3, 2)))

    def wrong_size(i: int) -> TensorJob:
        return _job(f"size{i}", normal((4,)), normal((5,)))

    def empty(i: int) -> TensorJob:
        return _job(f"empty{i}", normal((0, 3)), normal((0, 3)))

    def raw_bits(i: int) -> TensorJob:  # a float16 target against its bits saved as uint16
        x = normal((8,)).astype(np.float16)
        return _job(f"bits{i}", x, x.view(np.uint16))

    def complex_(i: int) -> TensorJob:
        x = (normal((4,)) + 1j).astype(np.complex64)
        return _job(f"complex{i}", x, x)

    def broken_golden(i: int) -> TensorJob:
        return _job(f"broken{i}", normal((4,)), FormatError(f"broken{i}.npy: damaged .npy header"))

    def no_golden(i: int) -> TensorJob:
        return _job(f"missing{i}", normal((4,)), None)

    def unreadable(i: int) -> TensorJob:
        return TensorJob(None, "Add", f"gone{i}", "*", f"gone{i}:*", None, None, reason="corrupt dump file")

    def unknown_format(i: int) -> TensorJob:
        return _job(f"format{i}", normal((4,)), normal((4,)), device_format=999)

    def booleans(i: int) -> TensorJob:
        x = normal((10,)) > 0
        return _job(f"bool{i}", x, x if i else ~x)

    def int8(i: int) -> TensorJob:
        x = rng.integers(-100, 100, 12).astype(np.int8)
        return _job(f"int8_{i}", x, x.astype(np.float32) + np.float32(i))

    def bf16(i: int) -> TensorJob:
        x = normal((16,))
        return _job(f"bf16_{i}", x.astype(ml_dtypes.bfloat16), x, data_type=DataType.DT_BF16)

    def overflowing(i: int) -> TensorJob:
        x = normal((6,)).astype(np.float16)
        x[0] = np.float16(65504) if i else x[0]
        return _job(f"overflow{i}", x, x.astype(np.float32))

    def large(i: int) -> TensorJob:  # beyond a stack's size: alone
        x = normal((pipeline.STACK_MAX_ELEMENTS + 1,))
        return _job(f"large{i}", x, x * np.float32(2))

    makers = (nc1hwc0, nhwc_golden, fractal_nz, nd, fortran_golden, unit_dims, scalar, transposed, wrong_size,
              empty, raw_bits, complex_, broken_golden, no_golden, unreadable, unknown_format, booleans, int8,
              bf16, overflowing, large)  # fmt: skip
    return {f.__name__: f for f in makers}


def _mixed_jobs(seed: int = 0) -> list[TensorJob]:
    """Three jobs of every kind, interleaved and shuffled: rows must come back in job order."""
    rng = np.random.default_rng(seed)
    jobs = [make(i) for i in range(3) for make in _kinds(rng).values()]
    return [jobs[i] for i in rng.permutation(len(jobs))]


@pytest.fixture
def stacked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of pairs of every stack ``evaluate_all`` compares, in order."""
    sizes: list[int] = []

    def counted(x: np.ndarray, y: np.ndarray) -> list[MetricValues]:
        sizes.append(x.shape[0])
        return compare_rows(x, y)

    monkeypatch.setattr(pipeline, "compare_rows", counted)
    return sizes


@pytest.mark.parametrize(
    "options",
    [CompareOptions(), CompareOptions(overflow_detection=True), CompareOptions(file_pair=True)],
    ids=["plain", "overflow", "exact-shapes"],
)
def test_evaluate_all_gives_the_rows_of_evaluate(options: CompareOptions, stacked: list[int]) -> None:
    jobs = _mixed_jobs()
    assert _texts(evaluate_all(jobs, options)) == _texts([evaluate(job, options) for job in jobs])
    # The kinds that stack did (NC1HWC0 alone is one stack of 3), and nothing was stacked twice.
    assert stacked and min(stacked) >= 2 and sum(stacked) <= len(jobs)
    assert 3 in stacked


def test_many_pairs_of_a_kind_make_stacks_of_a_bounded_size(
    stacked: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    make = _kinds(np.random.default_rng(4))["nd"]
    jobs = [make(i) for i in range(11)]
    monkeypatch.setattr(pipeline, "STACK_ELEMENTS", 4 * 12)  # 4 pairs of (3, 4)
    options = CompareOptions()
    assert _texts(evaluate_all(jobs, options)) == _texts([evaluate(job, options) for job in jobs])
    assert stacked == [4, 4, 3]


def test_the_stacks_are_read_in_the_golden_layout() -> None:
    """The NHWC golden's stack is gathered into NHWC, as each pair alone is: the golden is the
    target (but for float16's rounding), and an element out of place would show."""
    rng = np.random.default_rng(5)
    make = _kinds(rng)["nhwc_golden"]
    jobs = [make(0), make(0)]
    rows = evaluate_all(jobs, CompareOptions())
    assert rows[0].metrics.cosine_similarity > 0.99999 and rows[0].metrics.max_relative_error < 1e-3
    assert _texts(rows) == _texts([evaluate(job, CompareOptions()) for job in jobs])


# ---------------------------------------------------------------------------------------------
# Files: a worker's batch, a corrupt file among them


def _tree(root: Path, count: int, corrupt: set[int]) -> tuple[list[DumpEntry], ComparePlan]:
    rng = np.random.default_rng(7)
    dump_dir = root / "npu" / "20261122000000" / "0" / "net" / "1" / "0"
    golden_dir = root / "golden"
    golden_dir.mkdir(parents=True)
    for i in range(count):
        name, stamp = f"layer{i}/Add", 1763700000000000 + i
        logical = rng.standard_normal((1, 3, 2, 2)).astype(np.float32)
        outputs = tuple(
            DumpTensor.from_array(TensorKind.OUTPUT, k, to_device(logical.astype(np.float16), Format.NC1HWC0,
                                  Format.NCHW), format=Format.NC1HWC0, original_shape=logical.shape)
            for k in range(2)
        )  # fmt: skip
        path = dump_dir / dump_file_name("Add", name, i, 1, stamp)
        write_dump(path, DumpFile("", Layout.V2, "2.0", stamp, name, outputs=outputs))
        if i in corrupt:
            path.write_bytes(path.read_bytes()[:-7])  # truncated
        np.save(golden_dir / golden_file_name(name, 0, stamp), logical * np.float32(1 + i / 100))
        if i % 4 != 1:  # some ops without the golden of their output 1
            np.save(golden_dir / golden_file_name(name, 1, stamp), logical)
    tree = walk_dump_tree(root / "npu")
    ((_, entries),) = tree.groups.items()
    return entries, ComparePlan(NpyGoldenDir(golden_dir), None, CompareOptions())


def _one_by_one(entry: DumpEntry, plan: ComparePlan) -> FileRows[ResultRow]:
    """A file's rows as every file was compared before stacks: job by job."""
    assert plan.golden is not None
    jobs = file_jobs(entry, plan.golden, None, plan.options)
    return FileRows(entry, rows=tuple(evaluate(job, plan.options) for job in jobs))


def test_a_batch_of_files_gives_each_file_its_rows_and_a_corrupt_one_its_error(tmp_path: Path) -> None:
    entries, plan = _tree(tmp_path, 12, corrupt={5})
    got = compare_batch([(entry, plan) for entry in entries])
    want = [_one_by_one(entry, plan) for entry in entries]
    assert [r.entry for r in got] == entries
    assert _texts([r.rows for r in got]) == _texts([r.rows for r in want])
    bad = [r for r in got if any("corrupt dump file" in why for row in r.rows for why in row.metrics.reasons)]
    assert len(bad) == 1 and len(bad[0].rows) == 1 and bad[0].entry == entries[5]
    compared = [row for r in got for row in r.rows if row.metrics.has_numbers]
    assert len(compared) == 11 + 9  # output 0 of the 11 others, output 1 of the 9 with its golden
    assert _texts([compare_file(entries[2], plan).rows]) == _texts([want[2].rows])


def test_a_batch_of_plans_keeps_each_file_with_its_own(tmp_path: Path) -> None:
    entries, plan = _tree(tmp_path, 6, corrupt=set())
    other = ComparePlan(plan.golden, None, CompareOptions(overflow_detection=True))
    pairs = [(entry, plan if i % 3 else other) for i, entry in enumerate(entries)]
    got = compare_batch(pairs)
    assert _texts([r.rows for r in got]) == _texts([_one_by_one(e, p).rows for e, p in pairs])
    with_overflow = [row.overflow is not None for r in got for row in r.rows[:1]]
    assert with_overflow == [True, False, False, True, False, False]


def test_a_stack_that_fails_leaves_each_pair_its_own_reason() -> None:
    rng = np.random.default_rng(9)
    jobs = [_kinds(rng)["transposed"](i) for i in range(4)]
    rows = evaluate_all(jobs, CompareOptions())
    assert [row.metrics.reasons for row in rows] == [("shape mismatch [2, 3] vs [3, 2]",)] * 4
    with pytest.raises(DumpcmpError):
        pipeline.fit_golden_shape(np.zeros((2, 3)), (3, 2), exact=False)
