"""``dumpcmp inspect FILE``: what one dump file holds, as a table or as JSON (``--json``).

Statistics are taken over the tensor in its logical layout (padding removed) when the layout
can be converted, else over the device layout, and say which. They are accumulated chunk by
chunk in float64 scalars, so a GB tensor never gets a float64 copy: the largest temporary is
one chunk (``CHUNK_ELEMENTS``) widened to float32/float64. Min, max and mean cover the finite
values; NaN and ±inf are counted apart. Complex tensors are summarised by their magnitude.

A numpy ``.npy`` file (a golden, or a converted tensor) is shown the same way, as one array and
said to be no dump file; any other file that is no dump is named for what it looks like
("x.json is a JSON file, not a CANN dump file") rather than by the header length it implies.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.console import Console
from rich.markup import escape

from dumpcmp.commands._flags import StrictCommand
from dumpcmp.commands._output import console, fail
from dumpcmp.errors import DumpcmpError, UnsupportedDtypeError
from dumpcmp.proto.codec import DumpFile, DumpTensor, iter_tensors, read_dump
from dumpcmp.proto.npy import load_npy
from dumpcmp.proto.sniff import NPY_MAGIC, named_if_not_a_dump

__all__ = ["CHUNK_ELEMENTS", "TensorStats", "describe", "describe_npy", "inspect", "register", "tensor_stats"]

CHUNK_ELEMENTS = 1 << 20  # 4 MB of float32 per temporary: small next to any tensor worth a chunk
_PIPE_WIDTH = 160


@dataclass(frozen=True, slots=True)
class TensorStats:
    """Summary numbers of one tensor; ``min``/``max``/``mean`` are None without finite values."""

    count: int
    finite: int
    nan: int
    pos_inf: int
    neg_inf: int
    min: float | int | None
    max: float | int | None
    mean: float | None
    of: str = "value"  # "value", or "magnitude" for complex tensors


def _chunks(array: np.ndarray, size: int) -> Any:
    """C-order chunks of ``array`` without copying more than one chunk at a time."""
    total = array.size
    if array.flags.c_contiguous:
        flat = array.reshape(-1)  # a view
        for start in range(0, total, size):
            yield flat[start : start + size]
    else:
        for start in range(0, total, size):
            yield array.flat[start : start + size]  # flatiter slices copy just this chunk


def tensor_stats(array: np.ndarray, chunk: int = CHUNK_ELEMENTS) -> TensorStats:
    """One pass over ``array`` in chunks; float64 accumulators, exact integer min/max."""
    kind = array.dtype.kind
    is_int = kind in "iub" and array.dtype.itemsize <= 8 and np.dtype(array.dtype.str) == array.dtype
    of = "magnitude" if kind == "c" else "value"
    count = finite = nan = pos_inf = neg_inf = 0
    low: float | int | None = None
    high: float | int | None = None
    total = 0.0
    for part in _chunks(array, chunk):
        count += part.size
        if is_int:
            values = part.view(np.uint8) if kind == "b" else part
            if values.size:
                lo, hi = int(values.min()), int(values.max())
                low = lo if low is None else min(low, lo)
                high = hi if high is None else max(high, hi)
                total += float(np.add.reduce(values, dtype=np.float64))
                finite += values.size
            continue
        if kind == "c":
            real = np.abs(part)  # NaN/inf propagate into the magnitude
        elif part.dtype in (np.float32, np.float64):
            real = part
        else:
            real = part.astype(np.float32)  # fp16, bf16, fp8: exact in float32, one chunk at a time
        nans = np.isnan(real)
        infs = np.isinf(real)
        nan += int(np.count_nonzero(nans))
        pos = int(np.count_nonzero(infs & (real > 0)))
        pos_inf += pos
        neg_inf += int(np.count_nonzero(infs)) - pos
        ok = ~(nans | infs)
        n_ok = int(np.count_nonzero(ok))
        if n_ok:
            lo_f = float(np.min(real, where=ok, initial=np.inf))
            hi_f = float(np.max(real, where=ok, initial=-np.inf))
            low = lo_f if low is None else min(low, lo_f)
            high = hi_f if high is None else max(high, hi_f)
            total += float(np.add.reduce(real, where=ok, dtype=np.float64))
            finite += n_ok
    mean = total / finite if finite else None
    return TensorStats(count, finite, nan, pos_inf, neg_inf, low, high, mean, of)


def _logical_or_device(tensor: DumpTensor) -> tuple[np.ndarray, str, str | None]:
    """The array to summarise, which layout it is in, and why not logical when it is not."""
    device = tensor.array()
    if not tensor.original_shape:
        return device, "device", None
    try:
        return tensor.logical(), "logical", None
    except DumpcmpError as exc:
        return device, "device", f"logical layout unavailable: {exc}"


def _describe_tensor(tensor: DumpTensor) -> dict[str, Any]:
    row: dict[str, Any] = {
        "kind": tensor.kind.value,
        "index": tensor.index,
        "dtype": tensor.dtype_name,
        "format": tensor.format_name,
        "sub_format": tensor.sub_format,
        "device_shape": list(tensor.shape),
        "logical_shape": list(tensor.original_shape) if tensor.original_shape else list(tensor.shape),
        "size": tensor.size,
        "stats_layout": None,
        "stats": None,
        "note": None,
    }
    try:
        array, layout, note = _logical_or_device(tensor)
    except UnsupportedDtypeError as exc:
        row["note"] = f"unsupported dtype {exc.dtype_name}"
        return row
    row["stats_layout"] = layout
    row["stats"] = asdict(tensor_stats(array))
    row["note"] = note
    return row


def _iso_time(microseconds: int) -> str | None:
    try:
        moment = datetime.fromtimestamp(microseconds / 1e6, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.isoformat(timespec="microseconds")


def describe(dump: DumpFile) -> dict[str, Any]:
    """The JSON-ready description ``inspect`` prints: file fields and one entry per tensor."""
    return {
        "path": dump.path,
        "layout": dump.layout.value,
        "version": dump.version,
        "op_name": dump.op_name,
        "dump_time": dump.dump_time,
        "dump_time_utc": _iso_time(dump.dump_time),
        "attrs": [{"name": n, "value": v} for n, v in dump.attrs],
        "tensors": [_describe_tensor(t) for t in iter_tensors(dump)],
    }


NPY_LAYOUT = "npy"


def describe_npy(path: Path) -> dict[str, Any]:
    """The same description for a numpy .npy file: one array, no dump header fields."""
    array = load_npy(path)
    shape = [int(d) for d in array.shape]
    row = {
        "kind": "array",
        "index": 0,
        "dtype": str(array.dtype),
        "format": "-",
        "sub_format": 0,
        "device_shape": shape,
        "logical_shape": shape,
        "size": int(array.nbytes),
        "stats_layout": "logical",
        "stats": asdict(tensor_stats(array)),
        "note": None,
    }
    return {
        "path": str(path),
        "layout": NPY_LAYOUT,
        "version": None,
        "op_name": None,
        "dump_time": None,
        "dump_time_utc": None,
        "attrs": [],
        "tensors": [row],
    }


def _describe_file(path: Path) -> dict[str, Any]:
    """describe() of a dump file, describe_npy() of an npy file; DumpcmpError for anything else."""
    try:
        with path.open("rb") as handle:
            is_npy = handle.read(len(NPY_MAGIC)) == NPY_MAGIC
    except OSError:
        is_npy = False  # read_dump reports the OSError in its own words
    if is_npy:
        return describe_npy(path)
    with named_if_not_a_dump(path):
        return describe(read_dump(path))


# --------------------------------------------------------------------------- rendering


def _number(value: float | int | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return str(value)
    return f"{value:.6g}" if math.isfinite(value) else str(value)


def _bytes(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    scaled = float(size)
    for unit in ("KiB", "MiB", "GiB"):
        scaled /= 1024
        if scaled < 1024 or unit == "GiB":
            break
    return f"{scaled:.1f} {unit}"


def _render(console: Console, doc: dict[str, Any]) -> None:
    from rich import box
    from rich.table import Table

    when = doc["dump_time_utc"] or "?"
    console.print(f"[bold]{escape(doc['path'])}[/bold]")
    if doc["layout"] == NPY_LAYOUT:
        console.print("a numpy .npy file, not a CANN dump file")
    else:
        console.print(f"layout {doc['layout']}, version {escape(doc['version'] or '-')}")
        console.print(f"op name   {escape(doc['op_name'] or '-')}")
        console.print(f"dump time {doc['dump_time']} ({when})")
    for attr in doc["attrs"]:
        console.print(f"attr      {escape(attr['name'])} = {escape(attr['value'])}")
    table = Table(show_header=True, header_style="bold", box=box.SIMPLE_HEAD)
    for column in ("tensor", "dtype", "format", "device shape", "logical shape", "size"):
        table.add_column(column)
    for column in ("min", "max", "mean", "NaN", "inf"):
        table.add_column(column, justify="right")
    notes = []
    for row in doc["tensors"]:
        stats = row["stats"]
        label = f"{row['kind']} {row['index']}"
        cells = [
            label,
            row["dtype"].removeprefix("DT_"),
            row["format"],
            "×".join(map(str, row["device_shape"])) or "scalar",
            "×".join(map(str, row["logical_shape"])) or "scalar",
            _bytes(row["size"]),
        ]
        if stats is None:
            cells += ["-", "-", "-", "-", "-"]
        else:
            infs = stats["pos_inf"] + stats["neg_inf"]
            cells += [_number(stats["min"]), _number(stats["max"]), _number(stats["mean"])]
            cells += [str(stats["nan"]), str(infs)]
            if row["stats_layout"] == "device" and row["device_shape"] != row["logical_shape"]:
                notes.append(f"{label}: statistics over the device layout (padding included)")
            if stats["of"] == "magnitude":
                notes.append(f"{label}: complex, statistics of |x|")
        if row["note"]:
            notes.append(f"{label}: {row['note']}")
        table.add_row(*(escape(c) for c in cells))
    console.print(table)
    for note in notes:
        console.print(f"[dim]{escape(note)}[/dim]")


def inspect(
    file: Annotated[Path, typer.Argument(help="The dump file (or numpy .npy file) to show.")],
    json_: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON instead.")] = False,
) -> None:
    """Show a dump file: header fields and, per tensor, dtype, format, shapes and statistics."""
    # Said before reading: the reader's "at byte 0: cannot read" points inside a file there is not.
    if file.is_dir():
        fail(f"{file}: is a directory, give one dump file")
    if not file.exists():
        fail(f"{file}: no such file")
    try:
        doc = _describe_file(file)
    except DumpcmpError as exc:
        fail(str(exc))  # one line, no traceback, exit 1
    if json_:
        typer.echo(json.dumps(doc, indent=2, allow_nan=False))
        return
    out = console()  # escapes control characters: a name's ESC or newline is shown, not obeyed
    if not out.is_terminal:
        # Piped or redirected: there is no screen to fit, so give the table room for every column.
        out = console(width=max(out.width, _PIPE_WIDTH))
    _render(out, doc)


def register(app: typer.Typer) -> None:
    """Add ``inspect`` to the top-level app (``dumpcmp inspect FILE``)."""
    app.command("inspect", cls=StrictCommand)(inspect)
