"""A finished result table, read back from its cells: what the advisor and every report work from.

The advisor, the xlsx colours and the HTML report look only at the cells of a result table
(metrics.md §1.1 for offline_data, §2 for torchair), never at the comparison's own objects, so
they run the same on a table written just now, a CSV or xlsx produced elsewhere, or a host
session's result file. The family is told by the header.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath

from dumpcmp.errors import BadFileNameError, FormatError
from dumpcmp.host.torchair.fx_golden import parse_fx_name
from dumpcmp.proto.names import parse_dump_name

OFFLINE_DATA = "offline_data"
TORCHAIR = "torchair"

NO_COUNTERPART = "*"
# Cells that mean "no number": the comparator's spellings for not computed / not computable.
_NO_NUMBER = {"", "NaN", "nan", "N/A", "n/a", "-"}
# An offline TensorIndex: "{npu_op}:{input|output}:{i}" (the op name may itself hold ':').
_OFFLINE_TENSOR = re.compile(r"^(?P<op>.*):(?P<io>input|output):(?P<index>\d+)$")
# A TorchAir API Name: "{ge_op}.{input|output}.{k}".
_TORCHAIR_TENSOR = re.compile(r"^(?P<op>.*)\.(?P<io>input|output)\.(?P<index>\d+)$")
# The API Name of the one row of a GE dump file that could not be read: "{ge_op}.*".
_WHOLE_FILE = ".*"
# A GE tensor named in a Data Name cell: "{dump file} {input|output} {k}".
_GE_LABEL = re.compile(r" (?:input|output) \d+$")


@dataclass(frozen=True, slots=True)
class TensorResult:
    """One row of a result table, as the reports need it.

    ``order`` is the op's place in execution order (the Index column offline; the order of first
    appearance for TorchAir, whose rows are written in execution order); ``None`` for golden-only
    rows. ``metrics`` holds every numeric metric column by its header name, NaN where the cell
    holds no number; ``cells`` is the row as written, for display.
    """

    position: int
    order: int | None
    op_name: str
    op_type: str
    originals: tuple[str, ...]  # the golden-side ops compared with; () when none
    io: str  # "input" | "output" | "" (golden-only or unknown)
    tensor_index: int | None
    dtype: str
    shape: str
    metrics: Mapping[str, float]
    overflow: bool | None
    reason: str
    result: str  # TorchAir's Result column (PASS/FAIL); "" for offline_data
    cells: tuple[str, ...] = field(repr=False)

    def metric(self, name: str) -> float:
        return self.metrics.get(name, math.nan)

    @property
    def compared(self) -> bool:
        """True when the row has at least one metric value (it was compared with numbers)."""
        return any(not math.isnan(v) for v in self.metrics.values())

    @property
    def is_golden_only(self) -> bool:
        return self.order is None


@dataclass(frozen=True, slots=True)
class ResultTable:
    family: str  # OFFLINE_DATA | TORCHAIR
    header: tuple[str, ...]
    rows: tuple[TensorResult, ...]
    source: str = ""  # where it was read from, for messages
    mode: str = ""  # TorchAir summary mode: "real" | "statistics" | "md5"; "" for offline_data

    def targets(self) -> tuple[TensorResult, ...]:
        """Rows of target tensors, in execution order (golden-only rows left out)."""
        return tuple(r for r in self.rows if r.order is not None)


OFFLINE_METRICS = (
    "CosineSimilarity",
    "MaxAbsoluteError",
    "AccumulatedRelativeError",
    "RelativeEuclideanDistance",
    "KullbackLeiblerDivergence",
    "MeanAbsoluteError",
    "RootMeanSquareError",
    "MaxRelativeError",
    "MeanRelativeError",
)
TORCHAIR_MODES: Mapping[str, tuple[str, ...]] = {
    "real": (
        "Cosine",
        "EucDist",
        "MaxAbsErr",
        "MaxRelativeErr",
        "One Thousandth Err Ratio",
        "Five Thousandth Err Ratio",
    ),
    "statistics": (
        "Max diff",
        "Min diff",
        "Mean diff",
        "L2norm diff",
        "MaxRelativeErr",
        "MinRelativeErr",
        "MeanRelativeErr",
        "NormRelativeErr",
    ),
    "md5": ("NPU MD5", "BENCH MD5"),
}


def read_result(path: str | Path) -> ResultTable:
    """A result table from a ``.csv`` or ``.xlsx`` file (the first sheet)."""
    path = Path(path)
    if not path.is_file():
        raise FormatError(f"{path}: no such result file")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return table_from_cells(_csv_rows(path), source=str(path))
    if suffix == ".xlsx":
        return table_from_cells(_xlsx_rows(path), source=str(path))
    raise FormatError(f"{path}: not a result table (expected a .csv or .xlsx file)")


def table_from_cells(rows: Iterable[Sequence[str]], source: str = "") -> ResultTable:
    """A result table from its header row followed by its data rows, all as strings."""
    it = iter(rows)
    header = tuple(next(it, ()))
    if "NPUDump" in header and "TensorIndex" in header:
        return _offline_table(header, it, source)
    if "API Name" in header and "Result" in header:
        return _torchair_table(header, it, source)
    where = f"{source}: " if source else ""
    raise FormatError(
        f"{where}not a dumpcmp result table (its header has neither NPUDump/TensorIndex nor API Name/Result)"
    )


def _csv_rows(path: Path) -> list[list[str]]:
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            return list(csv.reader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise FormatError(f"{path}: cannot read result table: {exc}") from None


def _xlsx_rows(path: Path) -> list[list[str]]:
    import zipfile

    from openpyxl import load_workbook

    try:
        book = load_workbook(path, read_only=True, data_only=True)
    except (OSError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise FormatError(f"{path}: cannot read result table: {exc}") from None
    try:
        sheet = book.worksheets[0]
        return [["" if v is None else str(v) for v in row] for row in sheet.iter_rows(values_only=True)]
    finally:
        book.close()


def _number(text: str) -> float:
    text = text.strip().rstrip("%")
    if text in _NO_NUMBER:
        return math.nan
    try:
        return float(text)
    except ValueError:
        return math.nan


def _cells(header: tuple[str, ...], data: Iterable[Sequence[str]]) -> Iterable[tuple[str, ...]]:
    width = len(header)
    for row in data:
        if not any(c.strip() for c in row):
            continue  # blank lines an editor may have added
        cells = tuple(row[:width]) + ("",) * (width - len(row))
        yield cells


def _offline_table(header: tuple[str, ...], data: Iterable[Sequence[str]], source: str) -> ResultTable:
    col = {name: i for i, name in reversed(list(enumerate(header)))}  # first of duplicate names
    metrics = [(name, col[name]) for name in OFFLINE_METRICS if name in col]
    rows = []
    for position, cells in enumerate(_cells(header, data)):
        tensor = _OFFLINE_TENSOR.match(cells[col["TensorIndex"]])
        index_text = cells[col["Index"]].strip() if "Index" in col else ""
        truth = cells[col["GroundTruth"]] if "GroundTruth" in col else ""
        golden_only = not index_text.isdigit()
        rows.append(
            TensorResult(
                position=position,
                order=None if golden_only else int(index_text),
                op_name=cells[col["NPUDump"]],
                op_type=cells[col["OpType"]] if "OpType" in col else "",
                originals=_names(truth),
                io=tensor["io"] if tensor else "",
                tensor_index=int(tensor["index"]) if tensor else None,
                dtype=cells[col["DataType"]] if "DataType" in col else "",
                shape=cells[col["Shape"]] if "Shape" in col else "",
                metrics={name: _number(cells[i]) for name, i in metrics},
                overflow=_overflow(cells[col["OverFlow"]]) if "OverFlow" in col else None,
                reason=cells[col["CompareFailReason"]] if "CompareFailReason" in col else "",
                result="",
                cells=cells,
            )
        )
    return ResultTable(OFFLINE_DATA, header, tuple(rows), source)


def _torchair_table(header: tuple[str, ...], data: Iterable[Sequence[str]], source: str) -> ResultTable:
    col = {name: i for i, name in reversed(list(enumerate(header)))}
    mode = next((m for m, names in TORCHAIR_MODES.items() if names[0] in col), "")
    metrics = [(name, col[name]) for name in TORCHAIR_MODES.get(mode, ()) if name in col]
    rows = []
    orders: dict[str, int] = {}
    for position, cells in enumerate(_cells(header, data)):
        api = cells[col["API Name"]]
        tensor = _TORCHAIR_TENSOR.match(api)
        op = tensor["op"] if tensor else api.removesuffix(_WHOLE_FILE)
        order = orders.setdefault(op, len(orders))
        values = {name: _number(cells[i]) for name, i in metrics}
        if mode == "md5":  # hex CRC-32 values: "compared" means both are there
            values = {name: (math.nan if cells[i] in _NO_NUMBER else 0.0) for name, i in metrics}
        rows.append(
            TensorResult(
                position=position,
                order=order,
                op_name=op,
                op_type="",
                originals=_bench_ops(cells[col["Data Name"]]) if "Data Name" in col else (),
                io=tensor["io"] if tensor else "",
                tensor_index=int(tensor["index"]) if tensor else None,
                dtype="",
                shape="",
                metrics=values,
                overflow=None,
                reason=cells[col["Err_message"]] if "Err_message" in col else "",
                result=cells[col["Result"]].strip().upper(),
                cells=cells,
            )
        )
    return ResultTable(TORCHAIR, header, tuple(rows), source, mode)


def _names(ground_truth: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in ground_truth.split(",") if n.strip())
    return () if names in ((), (NO_COUNTERPART,)) else names


def _bench_ops(data_name: str) -> tuple[str, ...]:
    """The bench-side op of a Data Name cell ``[npu file, bench]``, as a one-name tuple: the FX
    node of an FX npy file, the GE op of a GE dump file (fusion off, or the op's own input)."""
    bench = bench_side(data_name)
    node = fx_node(bench)
    if node:
        return (node,)
    if not bench:
        return ()
    try:  # a GE tensor's label: "{dump file} {input|output} {k}"
        return (parse_dump_name(PurePath(_GE_LABEL.sub("", bench)).name).op_name,)
    except BadFileNameError:
        return ()


def bench_side(data_name: str) -> str:
    """The bench half of a TorchAir Data Name cell (``[npu file, bench]``); "" when there is none."""
    inner = data_name.strip().strip("[]")
    parts = [p.strip().strip("'\"") for p in inner.split(",")]
    bench = parts[1] if len(parts) > 1 else ""
    return bench if bench not in _NO_NUMBER else ""


def fx_node(bench: str) -> str:
    """The FX node whose npy file ``bench`` is (``add_1`` of ``add_1-aten.add.Tensor.OUTPUT.0.{ts}.npy``,
    formats.md §7.2); "" for any other file. FX node names are identifiers: the first '-' ends one."""
    try:
        return parse_fx_name(PurePath(bench).name).key.op.partition("-")[0]
    except BadFileNameError:
        return ""


def _overflow(text: str) -> bool | None:
    value = text.strip().upper()
    return True if value == "YES" else False if value == "NO" else None
