"""Single-operator detail files (spec/metrics.md §1.2): every element of one tensor pair.

``write_detail`` writes ``{op}_{io}_{index}_summary.txt`` and as many
``{op}_{io}_{index}_{file_index}.csv`` files as ``max_rows`` requires; like result files they
never replace existing ones (a second detail of the tensor gets ``…_summary_1.txt``,
``…_0_1.csv``). The tensors are read in chunks and each chunk is formatted with a single C-level
``%`` call, so a tensor of any size costs one chunk of memory and no per-element Python formatting.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt

from dumpcmp.errors import MatchError
from dumpcmp.host.metrics.offline_data import flat_chunks, load_chunk
from dumpcmp.outputs import link_new, temp_beside, writing

__all__ = ["DetailSummary", "detail_columns", "sanitize_op_name", "write_detail"]

_CHUNK_ROWS = 1 << 16
_UNSAFE = str.maketrans({"/": "_", "\\": "_", ".": "_", " ": "_", ":": "_"})
_FLOAT = "%.6f"  # the spec's 6-decimal rendering
# "%.0s" consumes the RelativeError argument of a row whose Right is 0 and prints nothing, so
# every row takes the same arguments whichever template it uses.
_DASH = "-%.0s"


def sanitize_op_name(op_name: str) -> str:
    """Op names become file-name safe: '/', '\\', '.', ' ' and ':' turn into '_'."""
    return op_name.translate(_UNSAFE)


def detail_columns(shape: tuple[int, ...]) -> tuple[str, ...]:
    """Coordinate columns (``N C H W`` for 4-D, ``D0 D1 …`` otherwise) plus the value columns."""
    coords = ("N", "C", "H", "W") if len(shape) == 4 else tuple(f"D{i}" for i in range(len(shape)))
    return (*coords, "Left", "Right", "RelativeError", "AbsoluteError")


@dataclass(frozen=True, slots=True)
class DetailSummary:
    """What the summary file says.

    ``None`` means "no such value" and is written as ``-``: no elements at all, or (relative
    errors) every Right is 0. NaN stays NaN.
    """

    total_count: int
    left_op: str
    right_op: str
    format: str
    min_absolute_error: float | None
    max_absolute_error: float | None
    min_relative_error: float | None
    max_relative_error: float | None

    def render(self) -> str:
        def num(v: float | None) -> str:
            return "-" if v is None else _FLOAT % v

        rows = [
            ("TotalCount", str(self.total_count)),
            ("LeftOp", self.left_op),
            ("RightOp", self.right_op),
            ("Format", self.format),
            ("MinAbsoluteError", num(self.min_absolute_error)),
            ("MaxAbsoluteError", num(self.max_absolute_error)),
            ("MinRelativeError", num(self.min_relative_error)),
            ("MaxRelativeError", num(self.max_relative_error)),
        ]
        return "".join(f"{k}: {v}\n" for k, v in rows)


@dataclass(frozen=True, slots=True)
class _Block:
    """One chunk of rows, computed in float64 from float32-converted values."""

    start: int
    left: npt.NDArray[np.float64]
    right: npt.NDArray[np.float64]
    absolute: npt.NDArray[np.float64]  # Left − Right, signed as the spec defines it
    relative: npt.NDArray[np.float64]  # absolute / |Right|; meaningless where right_zero
    right_zero: npt.NDArray[np.bool_]


def _blocks(
    x: npt.NDArray[np.generic], y: npt.NDArray[np.generic], start: int, stop: int
) -> Iterator[_Block]:
    chunks = zip(
        flat_chunks(x, _CHUNK_ROWS, start, stop), flat_chunks(y, _CHUNK_ROWS, start, stop), strict=True
    )
    lo = start
    for xs, ys in chunks:
        m = xs.size
        f32 = np.empty(m, dtype=np.float32)
        # The metrics' conversion (float32 values, widened exactly for the arithmetic).
        left = load_chunk(xs, np.empty(m), f32)
        right = load_chunk(ys, np.empty(m), f32)
        with np.errstate(all="ignore"):
            absolute = left - right
            right_zero = right == 0
            relative = absolute / np.abs(right)
        yield _Block(lo, left, right, absolute, relative, right_zero)
        lo += m


def _render(block: _Block, shape: tuple[int, ...]) -> str:
    m = block.left.shape[0]
    coords = np.unravel_index(np.arange(block.start, block.start + m), shape) if shape else ()
    head = "%d," * len(shape)
    with_rel = f"{head}{_FLOAT},{_FLOAT},{_FLOAT},{_FLOAT}\n"
    if block.right_zero.any():
        with_dash = f"{head}{_FLOAT},{_FLOAT},{_DASH},{_FLOAT}\n"
        template = "".join([with_dash if z else with_rel for z in block.right_zero.tolist()])
    else:
        template = with_rel * m
    columns = [c.tolist() for c in coords]
    columns += [block.left.tolist(), block.right.tolist(), block.relative.tolist(), block.absolute.tolist()]
    return template % tuple(itertools.chain.from_iterable(zip(*columns, strict=True)))


def _bounds(pairs: list[tuple[float, float]]) -> tuple[float | None, float | None]:
    if not pairs:
        return None, None
    lows, highs = np.array(pairs).T
    return float(lows.min()), float(highs.max())


def write_detail(
    x_logical: npt.NDArray[np.generic],
    y_logical: npt.NDArray[np.generic],
    out_dir: str | Path,
    op_name: str,
    io: Literal["input", "output"],
    index: int,
    left_name: str,
    right_name: str,
    fmt_name: str,
    max_rows: int = 1_000_000,
) -> list[Path]:
    """Write the summary and the element-wise CSV files; return their paths, summary first.

    ``x_logical`` (Left, target) and ``y_logical`` (Right, golden) are already in their logical
    layout and must hold the same number of elements; coordinates follow ``x_logical.shape``.
    Summary minima/maxima are over the signed columns as written (NaN propagates); the relative
    ones skip rows whose Right is 0. An empty tensor gets one header-only CSV file.
    """
    if io not in ("input", "output"):
        raise ValueError(f"io must be 'input' or 'output', got {io!r}")
    if max_rows < 1:
        raise ValueError(f"max_rows must be positive, got {max_rows}")
    if x_logical.size != y_logical.size:
        raise MatchError(
            f"{op_name} {io} {index}: cannot write detail, element counts differ "
            f"({list(x_logical.shape)} vs {list(y_logical.shape)})"
        )
    out = Path(out_dir)
    stem = f"{sanitize_op_name(op_name)}_{io}_{index}"
    summary_name = out / f"{stem}_summary.txt"
    # Every file is written under a temporary name first and takes its own only when all are
    # whole (a killed run leaves no empty or half file under one). The summary's free name ("",
    # "_1", …) is this detail's: its CSV files carry the same ending, so one run's files go
    # together and an earlier run's are left as they were.
    temps: list[Path] = []
    paths: list[Path] = []
    try:
        with writing(summary_name):
            out.mkdir(parents=True, exist_ok=True)
            bounds = _write_rows(x_logical, y_logical, lambda: _temp(temps, summary_name), max_rows)
            summary = DetailSummary(x_logical.size, left_name, right_name, fmt_name, *bounds)
            summary_temp = _temp(temps, summary_name)
            summary_temp.write_text(summary.render(), encoding="utf-8")
            paths.append(link_new(summary_temp, summary_name))
            copy = paths[0].stem.removeprefix(f"{stem}_summary")
            for i, temp in enumerate(temps[:-1]):
                paths.append(link_new(temp, out / f"{stem}_{i}{copy}.csv"))
    except BaseException:
        for path in paths:  # only names this call took, with its own whole files
            path.unlink(missing_ok=True)
        raise
    finally:
        for temp in temps:
            temp.unlink(missing_ok=True)
    return paths


def _temp(temps: list[Path], beside: Path) -> Path:
    """A new temporary name beside ``beside``, kept in ``temps`` (to remove at the end)."""
    temps.append(temp_beside(beside))
    return temps[-1]


def _write_rows(
    x_logical: npt.NDArray[np.generic],
    y_logical: npt.NDArray[np.generic],
    file: Callable[[], Path],
    max_rows: int,
) -> tuple[float | None, float | None, float | None, float | None]:
    """The element-wise CSV files, in order, each at a path ``file()`` gives; the min/max
    absolute and relative errors."""
    shape = tuple(x_logical.shape)
    n = x_logical.size
    header = ",".join(detail_columns(shape)) + "\n"
    # Per-block extremes; numpy's min/max over them propagate NaN like the columns do.
    abs_bounds: list[tuple[float, float]] = []
    rel_bounds: list[tuple[float, float]] = []
    for lo in range(0, max(n, 1), max_rows):
        with file().open("w", encoding="utf-8", newline="") as f:
            f.write(header)
            for block in _blocks(x_logical, y_logical, lo, min(lo + max_rows, n)):
                f.write(_render(block, shape))
                abs_bounds.append((block.absolute.min(), block.absolute.max()))
                rel = block.relative[~block.right_zero]
                if rel.size:
                    rel_bounds.append((rel.min(), rel.max()))
    return (*_bounds(abs_bounds), *_bounds(rel_bounds))
