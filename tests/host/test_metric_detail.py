"""Single-operator detail files (spec/metrics.md §1.2)."""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from pathlib import Path

import ml_dtypes
import numpy as np
import numpy.typing as npt
import pytest

from dumpcmp.errors import MatchError, OutputError
from dumpcmp.host.metrics import detail
from dumpcmp.host.metrics.detail import detail_columns, sanitize_op_name, write_detail


def readonly(a: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
    a.setflags(write=False)
    return a


def rows_of(paths: list[Path]) -> tuple[list[str], list[list[str]]]:
    """Header (checked identical in every file) and all data rows, in file order."""
    header: list[str] | None = None
    rows: list[list[str]] = []
    for path in paths:
        with path.open(newline="") as f:
            file_rows = list(csv.reader(f))
        assert header is None or file_rows[0] == header
        header = file_rows[0]
        rows += file_rows[1:]
    assert header is not None
    return header, rows


def summary_of(path: Path) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in path.read_text().splitlines())


def write(tmp_path: Path, x: npt.NDArray[np.generic], y: npt.NDArray[np.generic], **kw: int) -> list[Path]:
    return write_detail(x, y, tmp_path, "conv1/Conv2D", "output", 0, "conv1", "conv1_golden", "NCHW", **kw)


def test_4d_rows_coordinates_and_values(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    y = readonly(rng.standard_normal((2, 3, 4, 5)).astype(np.float32))
    x = readonly((y + np.float32(0.01)).astype(np.float16))
    paths = write(tmp_path, x, y)
    assert [p.name for p in paths] == ["conv1_Conv2D_output_0_summary.txt", "conv1_Conv2D_output_0_0.csv"]
    header, rows = rows_of(paths[1:])
    assert header == ["N", "C", "H", "W", "Left", "Right", "RelativeError", "AbsoluteError"]
    assert len(rows) == 120
    left = x.astype(np.float32).astype(np.float64)
    right = y.astype(np.float64)
    for i, row in enumerate(rows):
        coords = np.unravel_index(i, y.shape)
        assert [int(c) for c in row[:4]] == [int(c) for c in coords]
        lv, rv = left[coords], right[coords]
        assert float(row[4]) == pytest.approx(lv, abs=1e-6)
        assert float(row[5]) == pytest.approx(rv, abs=1e-6)
        assert float(row[6]) == pytest.approx((lv - rv) / abs(rv), abs=1e-6)
        assert float(row[7]) == pytest.approx(lv - rv, abs=1e-6)
        assert row[4] == f"{lv:.6f}"


@pytest.mark.parametrize(
    ("shape", "coords"),
    [
        ((7,), ["D0"]),
        ((2, 3, 2), ["D0", "D1", "D2"]),
        ((1, 2, 1, 2, 2), ["D0", "D1", "D2", "D3", "D4"]),
        ((), []),
    ],
)
def test_coordinate_columns_by_rank(tmp_path: Path, shape: tuple[int, ...], coords: list[str]) -> None:
    x = np.arange(math.prod(shape), dtype=np.float32).reshape(shape) + 1
    header, rows = rows_of(write(tmp_path, x, x + 1)[1:])
    assert header == [*coords, "Left", "Right", "RelativeError", "AbsoluteError"]
    assert len(rows) == x.size
    if shape:
        assert [int(c) for c in rows[-1][: len(shape)]] == [d - 1 for d in shape]


def test_files_split_at_max_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(detail, "_CHUNK_ROWS", 4)  # chunk boundaries inside and across files
    x = np.arange(25, dtype=np.float32)
    paths = write(tmp_path, x, x * 2 + 1, max_rows=10)
    assert [p.name for p in paths[1:]] == [f"conv1_Conv2D_output_0_{i}.csv" for i in range(3)]
    counts = [len(rows_of([p])[1]) for p in paths[1:]]
    assert counts == [10, 10, 5]
    _, rows = rows_of(paths[1:])
    assert [int(r[0]) for r in rows] == list(range(25))


def test_exact_multiple_of_max_rows_makes_no_empty_file(tmp_path: Path) -> None:
    x = np.ones(20, dtype=np.float32)
    paths = write(tmp_path, x, x, max_rows=10)
    assert len(paths) == 3


def test_dash_where_right_is_zero(tmp_path: Path) -> None:
    x = readonly(np.array([1.0, 2.0, 0.0, -3.0], dtype=np.float32))
    y = readonly(np.array([0.0, 4.0, 0.0, -0.0], dtype=np.float32))
    _, rows = rows_of(write(tmp_path, x, y)[1:])
    assert [r[3] for r in rows] == ["-", "-0.500000", "-", "-"]
    assert [r[4] for r in rows] == ["1.000000", "-2.000000", "0.000000", "-3.000000"]


def test_summary(tmp_path: Path) -> None:
    x = np.array([1.0, 2.0, 5.0, 7.0], dtype=np.float32)
    y = np.array([0.0, 4.0, 4.0, 8.0], dtype=np.float32)
    summary = summary_of(write(tmp_path, x, y)[0])
    assert summary == {
        "TotalCount": "4",
        "LeftOp": "conv1",
        "RightOp": "conv1_golden",
        "Format": "NCHW",
        "MinAbsoluteError": "-2.000000",
        "MaxAbsoluteError": "1.000000",
        "MinRelativeError": "-0.500000",
        "MaxRelativeError": "0.250000",
    }


def test_summary_without_relative_errors(tmp_path: Path) -> None:
    x = np.array([1.0, 2.0], dtype=np.float32)
    summary = summary_of(write(tmp_path, x, np.zeros(2, np.float32))[0])
    assert summary["MinRelativeError"] == summary["MaxRelativeError"] == "-"
    assert summary["MaxAbsoluteError"] == "2.000000"


def test_nan_propagates_to_summary(tmp_path: Path) -> None:
    x = np.array([1.0, np.nan], dtype=np.float32)
    y = np.array([1.0, 1.0], dtype=np.float32)
    paths = write(tmp_path, x, y)
    assert summary_of(paths[0])["MaxAbsoluteError"] == "nan"
    assert rows_of(paths[1:])[1][1][1:] == ["nan", "1.000000", "nan", "nan"]


def test_empty_tensor(tmp_path: Path) -> None:
    paths = write(tmp_path, np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32))
    header, rows = rows_of(paths[1:])
    assert len(paths) == 2 and rows == [] and header[:2] == ["D0", "D1"]
    summary = summary_of(paths[0])
    assert summary["TotalCount"] == "0"
    assert summary["MinAbsoluteError"] == summary["MaxRelativeError"] == "-"


def test_dtypes_and_layouts(tmp_path: Path) -> None:
    y = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    x = readonly(y.astype(ml_dtypes.bfloat16).T.copy().T)  # same values, Fortran order
    assert not x.flags.c_contiguous
    _, rows = rows_of(write(tmp_path, x, readonly(y.astype(np.int64)))[1:])
    assert [r[:3] for r in rows[:3]] == [
        ["0", "0", "1.000000"],
        ["0", "1", "2.000000"],
        ["0", "2", "3.000000"],
    ]
    assert all(r[5] == "0.000000" for r in rows)


def test_inputs_are_not_mutated(tmp_path: Path) -> None:
    x = np.array([1.0, np.nan, 3.0], dtype=np.float32)
    y = np.array([0.0, 1.0, 3.0], dtype=np.float32)
    xc, yc = x.copy(), y.copy()
    write(tmp_path, readonly(x), readonly(y))
    np.testing.assert_array_equal(x, xc)
    np.testing.assert_array_equal(y, yc)


def test_op_name_is_sanitised() -> None:
    assert sanitize_op_name("a/b\\c.d e:f") == "a_b_c_d_e_f"


def test_columns() -> None:
    assert detail_columns((1, 2, 3, 4))[:4] == ("N", "C", "H", "W")
    assert detail_columns((5,)) == ("D0", "Left", "Right", "RelativeError", "AbsoluteError")


def test_bad_arguments(tmp_path: Path) -> None:
    x = np.zeros(3, np.float32)
    with pytest.raises(MatchError, match="element counts differ"):
        write(tmp_path, x, np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="io"):
        write_detail(x, x, tmp_path, "op", "middle", 0, "l", "r", "ND")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_rows"):
        write(tmp_path, x, x, max_rows=0)


def test_a_second_detail_of_a_tensor_never_overwrites_the_first(tmp_path: Path) -> None:
    """Like result files: the second run's files all end in ``_1`` (they go together), the first
    run's are left byte for byte."""
    y = np.arange(5, dtype=np.float32)
    first = write(tmp_path, y + 1, y, max_rows=2)
    before = {p.name: p.read_bytes() for p in first}
    second = write(tmp_path, y + 2, y, max_rows=2)
    stem = "conv1_Conv2D_output_0"
    assert [p.name for p in second] == [f"{stem}_summary_1.txt", *(f"{stem}_{i}_1.csv" for i in range(3))]
    assert {p.name: p.read_bytes() for p in first} == before
    assert rows_of(second[1:])[1][0][:2] == ["0", "2.000000"]  # the second run's Left
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, *(p.name for p in second)])


def test_a_detail_that_fails_midway_leaves_only_the_earlier_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    y = np.arange(5, dtype=np.float32)
    first = {p: p.read_bytes() for p in write(tmp_path, y + 1, y, max_rows=2)}
    blocks = detail._blocks

    def failing(*args: object) -> Iterator[object]:
        if args[2] >= 2:  # the second file's rows: a full disk, say
            raise OSError(28, "No space left on device")
        yield from blocks(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(detail, "_blocks", failing)
    with pytest.raises(OutputError, match="No space left on device"):
        write(tmp_path, y, y, max_rows=2)
    assert {p: p.read_bytes() for p in tmp_path.iterdir()} == first


# A compare -d killed (kill -9) while it writes the second CSV file of a detail: no file of it
# under a final name (an empty summary claimed first stayed, and the next run's went to "_1").
_KILLED_WHILE_WRITING_DETAIL = """
import os, signal, sys
import numpy as np
from dumpcmp.host.metrics import detail

written = []
_render = detail._render

def render(block, shape):
    written.append(1)
    if len(written) == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return _render(block, shape)

detail._render = render
x = np.arange(6, dtype=np.float32)
detail.write_detail(x, x, sys.argv[1], "op", "output", 0, "l", "r", "ND", max_rows=2)
"""


def test_a_detail_killed_while_written_leaves_no_file_and_the_next_takes_the_names(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _KILLED_WHILE_WRITING_DETAIL, str(tmp_path)], timeout=60)
    assert done.returncode == -signal.SIGKILL
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == []
    x = np.arange(6, dtype=np.float32)
    paths = write_detail(x, x, tmp_path, "op", "output", 0, "l", "r", "ND", max_rows=2)
    assert [p.name for p in paths] == ["op_output_0_summary.txt", *(f"op_output_0_{i}.csv" for i in range(3))]
