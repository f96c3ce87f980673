"""A finished result table, read back from its cells: what the advisor and every report work from.

The advisor, the xlsx colours and the HTML report look only at the cells of a result table
(metrics.md §1.1 for offline_data, §2 for torchair), never at the comparison's own objects, so
they run the same on a table written just now, a CSV or xlsx produced elsewhere, or a host
session's result file. The family is told by the header.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath

from dumpcmp.errors import BadFileNameError, FormatError
from dumpcmp.host.metrics.offline_data import FINITE_VERDICT, NO_FINITE, MetricValues
from dumpcmp.host.sinks.csv_file import restored_rows
from dumpcmp.host.torchair.fx_golden import parse_fx_name
from dumpcmp.host.verdict import Side, SpecialValues, special_side
from dumpcmp.proto.names import parse_dump_name

OFFLINE_DATA = "offline_data"
TORCHAIR = "torchair"

NO_COUNTERPART = "*"
# Cells that mean "no number": the comparator's spellings for not computed / not computable.
_NO_NUMBER = {"NaN", "nan", "N/A", "n/a", "-"}
# An offline TensorIndex: "{npu_op}:{input|output}:{i}" (the op name may itself hold ':').
_OFFLINE_TENSOR = re.compile(r"^(?P<op>.*):(?P<io>input|output):(?P<index>\d+)$")
# A TorchAir API Name: "{ge_op}.{input|output}.{k}".
_TORCHAIR_TENSOR = re.compile(r"^(?P<op>.*)\.(?P<io>input|output)\.(?P<index>\d+)$")
# The API Name of the one row of a GE dump file that could not be read: "{ge_op}.*".
_WHOLE_FILE = ".*"
# A GE tensor named in a Data Name cell: "{dump file} {input|output} {k}".
_GE_LABEL = re.compile(r" (?:input|output) \d+$")
# What the comparator writes in CompareFailReason / Err_message for NaN/inf in the data
# (metrics.offline_data.special_reason, metrics.torchair.special_reason) and for the metrics of the
# finite elements (offline_data.finite_reason). A result file holds these typed values nowhere
# else, so reading the file's format reads them here, once, into the typed fields the verdict
# takes; nothing after this module looks at a reason's words.
_SPECIAL = re.compile(
    r"target has (\d+) NaN and (\d+) inf, golden has (\d+) NaN and (\d+) inf"
    r"(?:; NaN/inf positions (?:(agree)|differ at (\d+) elements?))?"
)
# What a statistics row says of the device's NaN/inf counts (stats_compare's "target holds …").
_COUNTED = re.compile(r"(\d+) (?:Nan|Negative Inf|Positive Inf)\b")
# … and of the golden tensor's own ("golden holds 1 NaN, 2 inf"), which the target may hold too.
_GOLDEN_HOLDS = re.compile(r"golden holds (\d+) (?:NaN|inf)(?:, (\d+) inf)?")
# What a TorchAir statistics row says of a statistic NaN or ±inf on one side only
# (``verdict.stats_verdict``: "Max NPU, Min NPU NaN on one side only", "Max bench inf where …").
_ONE_SIDED = re.compile(r"\b(?:Max|Min|Mean|L2norm) (NPU|bench)\b")
_FINITE = re.compile(r"\(where both are finite: ([^)]*)\)")
_SPREAD = re.compile(r"^\(([^;]*);([^)]*)\),\(([^;]*);([^)]*)\)$")


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
    result: str  # the Result column (PASS/FAIL) of TorchAir and statistics tables; "" otherwise
    cells: tuple[str, ...] = field(repr=False)
    # The golden side is the target's own dump (a GE TransData/Cast with no FX counterpart,
    # compared with its own input): the row says nothing about the network.
    self_check: bool = False
    unreadable: bool = False  # a metric cell holds text that is not a number: read as not compared
    # The typed values the verdict judges, as the comparison had them: the metrics of an offline
    # tensor row (None for TorchAir and statistics rows), NaN/inf counts of any row.
    values: MetricValues | None = field(default=None, repr=False)
    special: SpecialValues | None = None
    target_nan_inf: int = 0  # a statistics row: NaN and ±inf the device counted in the target
    # The side whose data alone holds NaN/inf (``verdict.special_side``), from the row's counts or
    # statistics, whatever its kind: a target-only one is red, and ``nan/inf appeared`` names it.
    side: Side | None = None

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
    # "real" | "statistics" | "md5" for TorchAir; "statistics" for an offline statistics
    # result (stats_result_*.csv); "" for an offline tensor result.
    mode: str = ""
    bad_cells: int = 0  # metric cells that hold text that is not a number (their rows: not compared)
    bad_cell_example: str = ""  # the first of them: "row R column C ('text')"
    # Why the file may be cut short, in words after its name (it ends without a line break, or
    # after its header); "" for a file that ends as the comparator ends its files.
    cut: str = ""

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


# The columns that tell a TorchAir table's mode (MaxRelativeErr is in two modes).
_MODE_COLUMNS: Mapping[str, tuple[str, ...]] = {
    mode: tuple(n for n in names if all(n not in other for m, other in TORCHAIR_MODES.items() if m != mode))
    for mode, names in TORCHAIR_MODES.items()
}
# Columns without which a family's rows cannot be judged (grading.RowJudge reads them): a table
# missing one is refused rather than advised wrongly. Offline: where each op sits and which
# tensor a row is, and the verdict's closeness and error measures.
OFFLINE_REQUIRED = ("Index", "NPUDump", "TensorIndex", "CosineSimilarity", "RelativeEuclideanDistance")
# An offline statistics result (host/stats_compare.py): judged by its own PASS/FAIL verdict.
OFFLINE_STATS_REQUIRED = ("Index", "NPUDump", "TensorIndex", "Result")
TORCHAIR_REQUIRED: Mapping[str, tuple[str, ...]] = {
    "real": ("API Name", "Result", "Cosine", "MaxAbsErr", "One Thousandth Err Ratio"),
    "statistics": ("API Name", "Result"),
    "md5": ("API Name", "Result", "NPU MD5", "BENCH MD5"),
}


def read_result(path: str | Path) -> ResultTable:
    """A result table from a ``.csv`` or ``.xlsx`` file (the first sheet)."""
    path = Path(path)
    if not path.is_file():
        from dumpcmp.proto.sniff import not_regular

        raise FormatError(f"{path}: {not_regular(path) if path.exists() else 'no such result file'}")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        rows, ended = _csv_rows(path)
        table = table_from_cells(rows, source=str(path))
        data = len(_filled(rows[1:]))
        if not ended and not _last_row_whole(rows):
            cut = f"does not end with a line break: it may be cut short in row {data}, its last"
            return replace(table, cut=f"{cut} (perhaps in its last cell)")
        if not data:  # the comparator writes a row for every target tensor, compared or not
            return replace(table, cut="holds its header only: it may be cut short after it")
        return table
    if suffix == ".xlsx":
        return table_from_cells(_xlsx_rows(path), source=str(path))
    raise FormatError(f"{path}: not a result table (expected a .csv or .xlsx file)")


# The columns ``host results --csv``/``--xlsx`` lead a table of several shards with: the directories
# of each row's dump file (dump time, device, model, model id, step). A table led by them holds
# several shards' rows, each shard numbered from its own first op.
SHARD_COLUMNS = ("DumpTime", "Device", "Model", "ModelId", "Step")
ShardKey = tuple[str, str, str, str, str]  # a row's values under SHARD_COLUMNS, "" where absent


def shard_file_labels(keys: Sequence[ShardKey]) -> dict[ShardKey, str]:
    """``{device}_{model}_{step}``, as each shard's result file is named; every directory of the
    shard (its dump time and model id too) when that does not tell two shards apart."""
    plain = {key: f"{key[1]}_{key[2]}_{key[4]}" for key in keys}
    if len(set(plain.values())) == len(set(keys)):
        return plain
    return {key: "_".join(part for part in key if part) for key in keys}


def split_shards(table: ResultTable) -> list[tuple[str, ResultTable]]:
    """``table`` as its shards' tables, each with the label its result file is named by
    (``shard_file_labels``), in the order the shards first appear; ``[("", table)]`` for a
    table not led by shard columns, or whose rows are all of one shard.

    One table of many steps read as one network would order their rows by op index across the
    steps, and the earliest step's fault could hide behind another step's: each shard is a
    network of its own, advised as a shard of one run (``shards.advise_run``)."""
    lead = 0
    while lead < len(table.header) and table.header[lead] in SHARD_COLUMNS:
        lead += 1
    at = {name: i for i, name in enumerate(table.header[:lead])}
    groups: dict[ShardKey, list[TensorResult]] = {}
    for row in table.rows:
        key = tuple(row.cells[at[name]].strip() if name in at else "" for name in SHARD_COLUMNS)
        groups.setdefault(key, []).append(row)  # type: ignore[arg-type]  # five names, five cells
    if len(groups) < 2:
        return [("", table)]
    labels = shard_file_labels(list(groups))
    last = table.rows[-1].cells if table.rows else ()
    split = []
    for key, rows in groups.items():
        shard = table_from_cells([table.header, *(row.cells for row in rows)], source=table.source)
        # A cut file is cut in its last row, which is the last shard's.
        cut = table.cut if rows[-1].cells is last else ""
        split.append((labels[key], replace(shard, source=f"{table.source} ({labels[key]})", cut=cut)))
    return split


def table_from_cells(rows: Iterable[Sequence[str]], source: str = "") -> ResultTable:
    """A result table from its header row followed by its data rows, all as strings."""
    it = iter(rows)
    header = tuple(c.strip() for c in next(it, ()))
    where = f"{source}: " if source else ""
    if "NPUDump" in header or "TensorIndex" in header:
        stats = "Result" in header or any(name in header for name in TORCHAIR_MODES["statistics"])
        _require(header, OFFLINE_STATS_REQUIRED if stats else OFFLINE_REQUIRED, where)
        return _offline_table(header, it, source, "statistics" if stats else "")
    if "API Name" in header:
        mode = next((m for m, names in _MODE_COLUMNS.items() if any(n in header for n in names)), "")
        if not mode:
            raise FormatError(f"{where}not a result table: its header has no metric column")
        _require(header, TORCHAIR_REQUIRED[mode], where)
        return _torchair_table(header, it, source, mode)
    raise FormatError(
        f"{where}not a dumpcmp result table (its header has neither NPUDump/TensorIndex nor API Name/Result)"
    )


def _require(header: Sequence[str], names: Sequence[str], where: str) -> None:
    missing = [name for name in names if name not in header]
    if missing:
        raise FormatError(f"{where}not a result table the advisor can read: no {', '.join(missing)} column")


def _csv_rows(path: Path) -> tuple[list[list[str]], bool]:
    """The rows of a CSV result, and whether the file ends with a line break as the comparator
    writes it (else its last row may be cut inside its last cell). A header without one is cut:
    refused, as a short last row is (``refuse_cut_table``)."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            text = handle.read()
        # names quoted against spreadsheet formulas read back as they are (csv_file.inert_rows)
        rows = refuse_cut_table(restored_rows(csv.reader(io.StringIO(text, newline=""))), str(path))
        ended = not text.strip() or text.endswith(("\n", "\r"))
        if not ended and len(_filled(rows)) == 1:
            raise FormatError(
                f"{path}: the result table was cut off inside its header (no line break after it) - "
                "not judged; use the complete file or regenerate it"
            )
        return rows, ended
    except UnicodeDecodeError:
        raise FormatError(
            f"{path}: not a result table: not UTF-8 text (an xlsx or other binary file?)"
        ) from None
    except (OSError, csv.Error) as exc:
        raise FormatError(f"{path}: cannot read result table: {exc}") from None


def _last_row_whole(rows: list[list[str]]) -> bool:
    """Whether a table without its final line break (an editor strips it) still ends whole: its
    last row as wide as its header, and its last cell empty or a number, which a cut cannot leave
    looking so from text (a reason cut short still reads as a reason: told as maybe cut)."""
    filled = _filled(rows)
    if len(filled) < 2 or len(filled[-1]) != len(filled[0]):
        return False
    last = filled[-1][-1].strip()
    if not last:
        return True
    try:
        float(last)
    except ValueError:
        return False
    return True


def _filled(rows: Sequence[Sequence[str]]) -> list[Sequence[str]]:
    """The rows with any text: blank lines are no rows of a result table."""
    return [row for row in rows if any(cell.strip() for cell in row)]


def refuse_cut_table(rows: list[list[str]], source: str) -> list[list[str]]:
    """``rows`` (header first), unless the last row is shorter than the header.

    Every row the comparator writes is as wide as its header, so a short last row means the file
    was cut (a copy stopped by a full disk, ``head -c``, a transfer that broke): judging the rows
    before it would give an all-clear for a table whose later ops were never seen.
    """
    filled = _filled(rows)
    if len(filled) > 1 and len(filled[-1]) < len(filled[0]):
        raise FormatError(
            f"{source}: the result table was cut off: its last row has {len(filled[-1])} of the "
            f"header's {len(filled[0])} cells - not judged; use the complete file or regenerate it"
        )
    return rows


def _xlsx_rows(path: Path) -> list[list[str]]:
    import zipfile

    from openpyxl import load_workbook

    try:
        book = load_workbook(path, read_only=True, data_only=True)
    except zipfile.BadZipFile:
        raise FormatError(f"{path}: not a result table: not an xlsx workbook (not a zip file)") from None
    except (OSError, KeyError, ValueError) as exc:
        raise FormatError(f"{path}: not a result table: {exc}") from None
    try:
        sheet = book.worksheets[0]
        return [["" if v is None else str(v) for v in row] for row in sheet.iter_rows(values_only=True)]
    finally:
        book.close()


def _number(text: str) -> float | None:
    """The cell's number; NaN for a spelling of "no number"; None for text that is not a number."""
    text = text.strip().rstrip("%")
    if text in _NO_NUMBER:
        return math.nan
    try:
        return float(text)
    except ValueError:
        return None


class _Metrics:
    """Reads a row's metric cells and counts those that are damaged (not numbers, or a cosine
    outside [-1, 1]).

    The comparator spells a missing number ``NaN`` or ``N/A``; an empty cell, or text such as
    ``abc`` or a decimal comma, was put there by hand (or by another tool). Such a row is read as not
    compared (every metric NaN) rather than judged on the cells left: a missing cosine would
    read as a breach, and the advisor would blame the op.
    """

    def __init__(self, columns: Sequence[tuple[str, int]]) -> None:
        self.columns = columns
        self.bad = 0
        self.example = ""

    def read(self, cells: Sequence[str], line: int) -> tuple[dict[str, float], bool]:
        """The row's metric values, and whether a cell was damaged (then every value is NaN)."""
        values: dict[str, float] = {}
        bad = []
        for name, i in self.columns:
            value = _number(cells[i]) if cells[i].strip() else None
            if value is None:
                bad.append((name, repr(cells[i])))
                value = math.nan
            elif name in _COSINES and abs(value) > 1 + _PRINTED:  # no cosine is: edited, or foreign
                bad.append((name, f"{cells[i]!r}, outside [-1, 1]"))
            values[name] = value
        if not bad:
            return values, False
        self.bad += len(bad)
        if not self.example:
            self.example = f"row {line} column {bad[0][0]} ({bad[0][1]})"
        return dict.fromkeys(values, math.nan), True


_COSINES = frozenset({"CosineSimilarity", "Cosine"})
_PRINTED = 1e-5  # a cosine of 1 computed in floating point may print a hair above it


def _cells(header: tuple[str, ...], data: Iterable[Sequence[str]]) -> Iterable[tuple[int, tuple[str, ...]]]:
    """(row number in the file, the header counting as row 1; the row's cells) of each data row."""
    width = len(header)
    for line, row in enumerate(data, start=2):
        if not any(c.strip() for c in row):
            continue  # blank lines an editor may have added
        cells = tuple(row[:width]) + ("",) * (width - len(row))
        yield line, cells


def _offline_table(
    header: tuple[str, ...], data: Iterable[Sequence[str]], source: str, mode: str
) -> ResultTable:
    col = {name: i for i, name in reversed(list(enumerate(header)))}  # first of duplicate names
    names = TORCHAIR_MODES["statistics"] if mode == "statistics" else OFFLINE_METRICS
    reader = _Metrics([(name, col[name]) for name in names if name in col])
    rows = []
    for position, (line, cells) in enumerate(_cells(header, data)):
        values, unreadable = reader.read(cells, line)
        tensor = _OFFLINE_TENSOR.match(cells[col["TensorIndex"]])
        index_text = cells[col["Index"]].strip()
        truth = cells[col["GroundTruth"]] if "GroundTruth" in col else ""
        golden_only = not index_text.isdigit()
        reason = cells[col["CompareFailReason"]] if "CompareFailReason" in col else ""
        special = read_special(reason)
        spread = cells[col["StandardDeviation"]] if "StandardDeviation" in col else ""
        beyond = _counted_beyond(reason) if mode == "statistics" else (0, 0)
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
                metrics=values,
                overflow=_overflow(cells[col["OverFlow"]]) if "OverFlow" in col else None,
                reason=reason,
                result=cells[col["Result"]].strip().upper() if "Result" in col else "",
                cells=cells,
                unreadable=unreadable,
                values=None if mode == "statistics" else metric_values(values, spread, reason, special),
                special=special,
                target_nan_inf=beyond[0],
                side=special_side(special, *beyond),
            )
        )
    return ResultTable(OFFLINE_DATA, header, tuple(rows), source, mode, reader.bad, reader.example)


def _counted_beyond(reason: str) -> tuple[int, int]:
    """The NaN/inf a statistics row's device counted beyond the golden's
    (``StatsResult.target_nan_inf``), and those the golden holds beyond the device's counts."""
    golden = _GOLDEN_HOLDS.search(reason)
    held = sum(int(n) for n in golden.groups() if n) if golden else 0
    counted = sum(int(n) for n in _COUNTED.findall(reason))
    return max(0, counted - held), max(0, held - counted)


def _torchair_table(
    header: tuple[str, ...], data: Iterable[Sequence[str]], source: str, mode: str
) -> ResultTable:
    col = {name: i for i, name in reversed(list(enumerate(header)))}
    metrics = [(name, col[name]) for name in TORCHAIR_MODES[mode] if name in col]
    reader = _Metrics(metrics)
    rows = []
    orders: dict[str, int] = {}
    for position, (line, cells) in enumerate(_cells(header, data)):
        api = cells[col["API Name"]]
        tensor = _TORCHAIR_TENSOR.match(api)
        op = tensor["op"] if tensor else api.removesuffix(_WHOLE_FILE)
        order = orders.setdefault(op, len(orders))
        if mode == "md5":  # hex CRC-32 values: "compared" means both are there
            there = {n: cells[i].strip() not in (*_NO_NUMBER, "") for n, i in metrics}
            values, unreadable = {n: 0.0 if ok else math.nan for n, ok in there.items()}, False
        else:
            values, unreadable = reader.read(cells, line)
        data_name = cells[col["Data Name"]] if "Data Name" in col else ""
        target_file, bench_file = _data_name(data_name)
        reason = cells[col["Err_message"]] if "Err_message" in col else ""
        special = read_special(reason)
        rows.append(
            TensorResult(
                position=position,
                order=order,
                op_name=op,
                op_type="",
                originals=_bench_ops(data_name),
                io=tensor["io"] if tensor else "",
                tensor_index=int(tensor["index"]) if tensor else None,
                dtype="",
                shape="",
                metrics=values,
                overflow=None,
                reason=reason,
                result=cells[col["Result"]].strip().upper(),
                cells=cells,
                self_check=bool(target_file) and _is_own_dump(bench_file, target_file),
                unreadable=unreadable,
                special=special,
                side=_one_sided(reason) if mode == "statistics" else special_side(special),
            )
        )
    return ResultTable(TORCHAIR, header, tuple(rows), source, mode, reader.bad, reader.example)


def _one_sided(reason: str) -> Side | None:
    """The side of a TorchAir statistics row whose statistics alone are NaN or ±inf (its data
    holds NaN/inf; the row keeps no counts): how many statistics show it on each side."""
    sides = _ONE_SIDED.findall(reason)
    return special_side(None, sides.count("NPU"), sides.count("bench"))


def read_special(reason: str) -> SpecialValues | None:
    """The NaN/inf counts a reason states (and where their positions differ); None when none."""
    found = _SPECIAL.search(reason)
    if found is None:
        return None
    nan_x, inf_x, nan_y, inf_y, agree, differ = found.groups()
    mismatched = 0 if agree else int(differ) if differ else None
    return SpecialValues(int(nan_x), int(inf_x), int(nan_y), int(inf_y), mismatched)


def read_finite(reason: str) -> MetricValues | None:
    """The metrics of the elements finite on both sides a reason states; None when none."""
    if f"({NO_FINITE})" in reason:
        return MetricValues.unavailable(NO_FINITE)
    found = _FINITE.search(reason)
    if found is None:
        return None
    named = dict(part.strip().rpartition(" ")[::2] for part in found[1].split(","))
    numbers = {name: _number(named.get(name, "")) for name in FINITE_VERDICT}
    read = {name: value for name, value in numbers.items() if value is not None}
    if len(read) < len(numbers):
        return None  # words another tool wrote: no finite metrics rather than wrong ones
    return replace(
        MetricValues.unavailable(""),
        cosine_similarity=read["CosineSimilarity"],
        relative_euclidean_distance=read["RelativeEuclideanDistance"],
        kullback_leibler_divergence=read["KullbackLeiblerDivergence"],
        root_mean_square_error=read["RootMeanSquareError"],
        mean_relative_error=read["MeanRelativeError"],
        reasons=(),
    )


def metric_values(
    metrics: Mapping[str, float], spread: str, reason: str, special: SpecialValues | None
) -> MetricValues:
    """An offline row's typed metrics from its cells: what the comparison had, to the cells'
    precision (six decimals; the finite elements' metrics to nine digits)."""
    m = {name: metrics.get(name, math.nan) for name in OFFLINE_METRICS}
    means = _SPREAD.match(spread.strip())
    parts = [_number(p) for p in means.groups()] if means else []
    mean_x, std_x, mean_y, std_y = (math.nan if p is None else p for p in parts) if means else (math.nan,) * 4
    return MetricValues(
        cosine_similarity=m["CosineSimilarity"],
        max_absolute_error=m["MaxAbsoluteError"],
        accumulated_relative_error=m["AccumulatedRelativeError"],
        relative_euclidean_distance=m["RelativeEuclideanDistance"],
        kullback_leibler_divergence=m["KullbackLeiblerDivergence"],
        mean_x=mean_x,
        std_x=std_x,
        mean_y=mean_y,
        std_y=std_y,
        mean_absolute_error=m["MeanAbsoluteError"],
        root_mean_square_error=m["RootMeanSquareError"],
        max_relative_error=m["MaxRelativeError"],
        mean_relative_error=m["MeanRelativeError"],
        reasons=(reason,) if reason else (),
        spread_computed=means is not None,
        finite=read_finite(reason) if special is not None and special.positions_agree else None,
        special=special,
    )


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
    return _data_name(data_name)[1]


def fx_node(bench: str) -> str:
    """The FX node whose npy file ``bench`` is (``add_1`` of ``add_1-aten.add.Tensor.OUTPUT.0.{ts}.npy``,
    formats.md §7.2); "" for any other file. FX node names are identifiers: the first '-' ends one."""
    try:
        return parse_fx_name(PurePath(bench).name).key.op.partition("-")[0]
    except BadFileNameError:
        return ""


def _data_name(data_name: str) -> tuple[str, str]:
    """(target file, bench file) of a Data Name cell ``[npu file, bench file]``; "" when absent."""
    inner = data_name.strip().strip("[]")
    parts = [p.strip().strip("'\"") for p in inner.split(",")]
    target = parts[0] if parts and parts[0] not in _NO_NUMBER else ""
    bench = parts[1] if len(parts) > 1 and parts[1] not in _NO_NUMBER else ""
    return target, bench


def _is_own_dump(bench: str, target: str) -> bool:
    """The bench side names the target's own GE dump (``{file}`` or ``{file} input k``)."""
    return bench == target or bench.startswith(target + " ")


def _overflow(text: str) -> bool | None:
    value = text.strip().upper()
    return True if value == "YES" else False if value == "NO" else None
