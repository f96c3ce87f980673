"""The offline-data result table: its columns and how each cell is written (metrics.md §1.1)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dumpcmp.host.metrics.offline_data import OFFLINE_DATA_COLUMNS as METRIC_COLUMNS
from dumpcmp.host.metrics.offline_data import MetricValues
from dumpcmp.host.rows import ResultRow


@dataclass(frozen=True, slots=True)
class TableShape:
    """Which optional columns a result table carries."""

    op_sequence: bool = False
    npu_address: bool = False
    golden_address: bool = False
    overflow: bool = False

    @classmethod
    def of(cls, rows: Sequence[ResultRow], *, op_sequence: bool, overflow: bool) -> TableShape:
        return cls(
            op_sequence=op_sequence,
            npu_address=any(r.npu_address for r in rows),
            golden_address=any(r.golden_address for r in rows),
            overflow=overflow,
        )

    @classmethod
    def every_column(cls) -> TableShape:
        """Every optional column: the shape of rows streamed before a table's shape is known."""
        return cls(op_sequence=True, npu_address=True, golden_address=True, overflow=True)

    def header(self) -> list[str]:
        cols = ["Index"]
        cols += ["OpSequence"] if self.op_sequence else []
        cols += ["OpType", "NPUDump", "DataType"]
        cols += ["Address"] if self.npu_address else []
        cols += ["GroundTruth", "DataType"]
        cols += ["Address"] if self.golden_address else []
        cols += ["TensorIndex", "Shape"]
        cols += ["OverFlow"] if self.overflow else []
        return [*cols, *METRIC_COLUMNS, "CompareFailReason"]

    def cells(self, row: ResultRow) -> list[str]:
        out = ["" if row.index is None else str(row.index)]
        out += [_optional_int(row.op_sequence)] if self.op_sequence else []
        out += [row.op_type, row.npu_name, row.npu_dtype]
        out += [_address(row.npu_address)] if self.npu_address else []
        out += [row.ground_truth, row.golden_dtype]
        out += [_address(row.golden_address)] if self.golden_address else []
        out += [row.tensor_index, _shape(row.shape)]
        out += [_overflow(row.overflow)] if self.overflow else []
        m = row.metrics
        # Several numbers in one format, as ``number`` writes each: one call, not one a cell.
        head = (m.cosine_similarity, m.max_absolute_error, m.accumulated_relative_error,
                m.relative_euclidean_distance, m.kullback_leibler_divergence)  # fmt: skip
        tail = (m.mean_absolute_error, m.root_mean_square_error, m.max_relative_error, m.mean_relative_error)
        out += _numbers(head)
        out.append(standard_deviation(m))
        out += _numbers(tail)
        out.append(" ".join(row.reasons))
        return out


def _numbers(values: tuple[float, ...]) -> list[str]:
    """``number`` of each value, in one format call (a formatted float holds no comma)."""
    return (_FORMATS[len(values)] % values).replace("nan", "NaN").split(",")


_FORMATS = {count: ",".join(["%.6f"] * count) for count in (4, 5)}


def number(value: float) -> str:
    """'{:.6f}', with NaN and infinities spelled as the CANN comparator spells them."""
    # Python's own spelling of the infinities is CANN's; only NaN ("nan", whatever its sign)
    # differs. One format and one compare, not two math calls.
    text = f"{value:.6f}"
    return "NaN" if text == "nan" else text


def standard_deviation(m: MetricValues) -> str:
    """``(mean_x;std_x),(mean_y;std_y)``, each part as the formula gave it (``nan``, ``inf`` too,
    as the CANN comparator prints them); a bare ``NaN`` only when they were never computed."""
    if not m.spread_computed:
        return "NaN"
    return f"({m.mean_x:.3f};{m.std_x:.3f}),({m.mean_y:.3f};{m.std_y:.3f})"


def _shape(shape: tuple[int, ...] | None) -> str:
    return "NaN" if shape is None else "[" + ",".join(str(d) for d in shape) + "]"


def _optional_int(value: int | None) -> str:
    return "NaN" if value is None else str(value)


def _address(value: int | None) -> str:
    return "NaN" if not value else hex(value)


def _overflow(value: bool | None) -> str:
    return "NaN" if value is None else ("YES" if value else "NO")
