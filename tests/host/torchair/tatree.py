"""Small TorchAir dump trees for the tests, written from formats.md §7 by hand.

GE dump files go through ``dumpcmp.proto.codec.write_dump`` (the byte-exact 2.0 writer), FX
files through ``np.save``, and graph dumps are protobuf text written here with some of the many
fields a real GE dump holds beside the ones dumpcmp reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, TensorKind, write_dump
from dumpcmp.proto.names import dump_file_name

TIME = "20250101120000"
MODEL = "graph_1_0"


def ge_token_dir(
    root: Path, token: int, rank: int | None = None, *, time: str = TIME, device: str = "0", world: int = 2
) -> Path:
    """``root/[worldsize{W}_global_rank{R}/]{time}/{device}/{model}/{model_id}/{token}``."""
    base = root / f"worldsize{world}_global_rank{rank}" if rank is not None else root
    directory = base / time / device / MODEL / "1" / str(token)
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def ge_file(
    directory: Path,
    op_type: str,
    op_name: str,
    inputs: Sequence[np.ndarray | DumpTensor] = (),
    outputs: Sequence[np.ndarray | DumpTensor] = (),
    *,
    timestamp: int = 1735732800000001,
    task: int = 1,
) -> Path:
    """One 2.0 dump file; arrays are stored as they are (ND), DumpTensors as they say."""

    def tensors(kind: TensorKind, items: Sequence[np.ndarray | DumpTensor]) -> tuple[DumpTensor, ...]:
        return tuple(
            item if isinstance(item, DumpTensor) else DumpTensor.from_array(kind, k, item)
            for k, item in enumerate(items)
        )

    dump = DumpFile(
        path="",
        layout=Layout.V2,
        version="2.0",
        dump_time=timestamp,
        op_name=op_name,
        inputs=tensors(TensorKind.INPUT, inputs),
        outputs=tensors(TensorKind.OUTPUT, outputs),
    )
    return write_dump(directory / dump_file_name(op_type, op_name, task, 0, timestamp), dump)


def stats_file(
    directory: Path, op_type: str, op_name: str, rows: Sequence[str], *, timestamp: int = 1
) -> Path:
    """A ``dump_data: stats`` CSV (formats.md §3.4, default columns plus l2norm)."""
    header = (
        "Input/Output,Index,Data Size,Data Type,Format,Shape,Max Value,Min Value,Avg Value,Count,"
        "Nan Count,Negative Inf Count,Positive Inf Count,l2norm"
    )
    path = directory / (dump_file_name(op_type, op_name, 1, 0, timestamp) + ".csv")
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


@dataclass(frozen=True)
class Op:
    """A graph op: name, type, each output's ``_fx_tensor_name`` ("" = no attribute), its inputs."""

    name: str
    type: str
    fx_outputs: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ("x:0",)


def graph_text(ops: Sequence[Op], *, model: bool = True) -> str:
    """GE ModelDef text (or a bare GraphDef) with fields dumpcmp skips: dtypes, shapes, attrs."""
    lines = []
    for op in ops:
        lines += ["  op {", f'    name: "{op.name}"', f'    type: "{op.type}"']
        lines += [f'    input: "{source}"' for source in op.inputs]
        lines += [
            '    attr { key: "_datadump_original_op_names" value { list { s: "a" val_type: VT_LIST_STRING } } }'  # noqa: E501
        ]
        lines += ['    input_desc { dtype: DT_FLOAT16 shape { dim: -1 dim: 8 } layout: "ND" }']
        for fx in op.fx_outputs:
            lines += ["    output_desc {", "      dtype: DT_FLOAT", "      shape { dim: 2 dim: 3 }"]
            lines += ['      attr { key: "_format" value { i: 2 } }']
            if fx:
                lines += [f'      attr {{ key: "_fx_tensor_name" value {{ s: "{fx}" }} }}']
            lines += ["    }"]
        lines += ["    id: 3", "    stream_id: 0", "  }"]
    body = ['  name: "graph_1"', *lines]
    if not model:
        return "\n".join(body) + "\n"
    return "\n".join(['name: "graph_1_model"', "version: 3", "graph {", *body, "}"]) + "\n"


def write_graphs(
    root: Path, rank: int, original: Sequence[Op], optimized: Sequence[Op] = (), graph: str = "graph_1"
) -> tuple[Path, Path]:
    """``dynamo_{original|optimized}_{graph}_rank_{r}_pid_{pid}_ts_{t}.txt`` in ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    stem = f"{graph}_rank_{rank}_pid_4242_ts_1735732800"
    first = root / f"dynamo_original_{stem}.txt"
    second = root / f"dynamo_optimized_{stem}.txt"
    first.write_text(graph_text(original))
    second.write_text(graph_text(optimized or original))
    return first, second


def fx_ranked_dir(root: Path, rank: int, token: int, world: int = 2) -> Path:
    directory = root / f"worldsize{world}_global_rank{rank}" / MODEL / str(token)
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def fx_data_dump_dir(root: Path, fx_token: int, time: str = "20250101120000123") -> Path:
    """``root/data_dump/{fx_token}/gm_{time}_dump`` (``fx_token`` = GE token + 1)."""
    directory = root / "data_dump" / str(fx_token) / f"gm_{time}_dump"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def fx_file(
    directory: Path, op_key: str, io: str, index: int, array: np.ndarray, ts: int = 20250101120000000001
) -> Path:
    path = directory / f"{op_key}.{io.upper()}.{index}.{ts}.npy"
    np.save(path, array)
    return path
