"""Writes the dump file of each executed op, as the runtime's dump thread does (formats.md §1, §9).

Each tensor is converted from its logical value to its device layout (``proto.layouts``) and
written through ``proto.codec``: 2.0 layout, raw op name in the header, ``dump_time`` equal to
the file name's 16-digit timestamp, ``original_op`` on outputs. By default a file is written
the way a real dump directory fills: created, then appended chunk by chunk with a flush after
each, so a watcher sees it before it is complete; ``atomic=True`` writes a temporary name and
renames it instead. ``dump_data: stats`` writes ``<dump file name>.csv`` rows instead, computed
on exactly the device tensors a tensor dump would hold (padding included).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dumpcmp.errors import InternalError
from dumpcmp.outputs import atomic_path, writing
from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, OriginalOp, TensorKind, dump_bytes
from dumpcmp.proto.dtypes import data_type_of
from dumpcmp.proto.names import dump_file_name, name_that_fits
from dumpcmp.proto.stats_csv import StatsRow, format_stats_csv

from .compiled import PLAIN_FORMATS, OpOutput, TensorDesc
from .dump_settings import OpSelection
from .executor import OpRun

__all__ = ["DumpWriter", "device_array", "op_dump"]

Progress = Callable[[Path, int, int], None]


def device_array(logical: np.ndarray, desc: TensorDesc) -> np.ndarray:
    """What the device holds for ``logical``: its device layout and shape, padding zeroed."""
    if desc.format in PLAIN_FORMATS:
        device = np.ascontiguousarray(logical).reshape(desc.shape)
    else:
        from dumpcmp.proto.layouts import to_device

        device = to_device(np.ascontiguousarray(logical), desc.format, groups=max(desc.sub_format, 1))
    if tuple(device.shape) != desc.shape:
        raise InternalError(
            f"device shape {device.shape} of a {desc.format.name} tensor, compiled as {desc.shape}"
        )
    return device


def _tensor(
    kind: TensorKind, index: int, logical: np.ndarray, desc: TensorDesc, origin: OpOutput | None = None
) -> DumpTensor:
    original_op = None
    if origin is not None:
        original_op = OriginalOp(
            origin.origin_name,
            origin.origin_index,
            int(data_type_of(desc.origin_dtype)),
            int(desc.origin_format),
        )
    return DumpTensor.from_array(
        kind,
        index,
        device_array(logical, desc),
        format=desc.format,
        original_shape=desc.origin_shape,
        sub_format=desc.sub_format,
        original_op=original_op,
    )


def op_dump(run: OpRun, selection: OpSelection, dump_time: int, path: str = "") -> DumpFile:
    """The dump of one executed op: the selected inputs, then the selected outputs."""
    op = run.op
    inputs = tuple(
        _tensor(TensorKind.INPUT, k, run.inputs[i], op.inputs[i].desc) for k, i in enumerate(selection.inputs)
    )
    outputs = tuple(
        _tensor(TensorKind.OUTPUT, k, run.outputs[i], op.outputs[i].desc, op.outputs[i])
        for k, i in enumerate(selection.outputs)
    )
    return DumpFile(path, Layout.V2, "2.0", dump_time, op.name, inputs=inputs, outputs=outputs)


@dataclass
class DumpWriter:
    """Writes one op run at a time into a step directory; remembers every file it wrote."""

    atomic: bool = False
    chunk_size: int = 64 * 1024
    progress: Progress | None = None  # called after every flushed chunk (tests watch files fill)
    stats: tuple[str, ...] | None = None  # the stats to write; None = tensor dumps
    written: list[Path] = field(default_factory=list)

    def write(
        self,
        run: OpRun,
        selection: OpSelection,
        directory: Path,
        *,
        task_id: int,
        stream_id: int,
        timestamp: int,
    ) -> Path:
        name = dump_file_name(run.op.type, run.op.name, task_id, stream_id, timestamp)
        dump = op_dump(run, selection, timestamp, str(directory / name))
        directory.mkdir(parents=True, exist_ok=True)
        filename = name if self.stats is None else f"{name}.csv"
        # A name the file system cannot hold is written under a numeric one, as CANN does:
        # the timestamp, unique in a step directory (formats.md §2.3).
        target = name_that_fits(directory, filename, str(timestamp))
        if self.stats is not None:
            self._write_bytes(target, format_stats_csv(_stats_rows(dump), self.stats).encode("utf-8"))
        else:
            self._write_bytes(target, dump_bytes(dump))
        self.written.append(target)
        return target

    def _write_bytes(self, target: Path, data: bytes) -> None:
        if self.atomic:
            with atomic_path(target) as temp:
                temp.write_bytes(data)
            return
        with writing(target), open(target, "wb") as handle:
            for start in range(0, len(data), self.chunk_size):
                handle.write(data[start : start + self.chunk_size])
                handle.flush()
                if self.progress is not None:
                    self.progress(target, min(start + self.chunk_size, len(data)), len(data))


def _stats_rows(dump: DumpFile) -> list[StatsRow]:
    rows = []
    for tensor in (*dump.inputs, *dump.outputs):
        values = tensor.array().astype(np.float64)
        finite = values[np.isfinite(values)]
        stats = {
            "Max Value": float(finite.max()) if finite.size else float("nan"),
            "Min Value": float(finite.min()) if finite.size else float("nan"),
            "Avg Value": float(finite.mean()) if finite.size else float("nan"),
            "Nan Count": float(np.isnan(values).sum()),
            "Negative Inf Count": float(np.isneginf(values).sum()),
            "Positive Inf Count": float(np.isposinf(values).sum()),
            "l2norm": float(np.sqrt(np.square(finite).sum())),
        }
        rows.append(
            StatsRow(
                kind=tensor.kind.value,
                index=tensor.index,
                data_size=tensor.size,
                data_type=tensor.dtype_name,
                format=tensor.format_name,
                shape=tensor.shape,
                count=tensor.element_count,
                stats=stats,
            )
        )
    return rows
