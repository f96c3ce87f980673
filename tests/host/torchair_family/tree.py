"""A small GE/FX dump pair (formats.md §7, torch_npu ≥ 7.1.0 layout) for the family's tests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, TensorKind, write_dump
from dumpcmp.proto.names import dump_file_name

STAMP = 1735732800000000


@dataclass(frozen=True)
class GeOp:
    """A GE op dumped with its tensors, and the FX node its outputs come from ("" = none)."""

    name: str
    type: str
    inputs: Sequence[np.ndarray]
    outputs: Sequence[np.ndarray]
    fx: str = ""  # e.g. "add_1-aten.add.Tensor"


def _graph(ops: Sequence[GeOp]) -> str:
    lines = ['name: "graph_1_model"', "graph {", '  name: "graph_1"']
    for op in ops:
        lines += ["  op {", f'    name: "{op.name}"', f'    type: "{op.type}"']
        for k in range(len(op.outputs)):
            lines.append("    output_desc {")
            if op.fx:
                lines.append(f'      attr {{ key: "_fx_tensor_name" value {{ s: "{op.fx}.OUTPUT.{k}" }} }}')
            lines.append("    }")
        lines.append("  }")
    return "\n".join([*lines, "}"]) + "\n"


def write_pair(
    root: Path,
    ops: Sequence[GeOp],
    bench: Sequence[GeOp] | None = None,
    *,
    rank: int = 0,
    tokens: Sequence[int] = (0,),
) -> tuple[Path, Path]:
    """``root/ge`` (GE dump with graph dumps) and ``root/fx`` (the FX dump); FX tensors from
    ``bench`` (same op order), default the GE tensors themselves."""
    ge, fx = root / "ge" / "msprobe_ge_dump", root / "fx" / "msprobe_fx_dump"
    ge.mkdir(parents=True, exist_ok=True)
    stem = f"graph_1_rank_{rank}_pid_1_ts_1"
    for kind in ("original", "optimized"):
        (ge / f"dynamo_{kind}_{stem}.txt").write_text(_graph(ops))
    for token in tokens:
        ge_dir = (
            ge / f"worldsize1_global_rank{rank}" / "20250101120000" / "0" / "graph_1_0" / "1" / str(token)
        )
        fx_dir = fx / f"worldsize1_global_rank{rank}" / "graph_1_0" / str(token)
        ge_dir.mkdir(parents=True)
        fx_dir.mkdir(parents=True)
        for i, (op, golden) in enumerate(zip(ops, bench or ops, strict=True)):
            stamp = STAMP + i
            dump = DumpFile(
                "",
                Layout.V2,
                "2.0",
                stamp,
                op.name,
                inputs=tuple(DumpTensor.from_array(TensorKind.INPUT, k, a) for k, a in enumerate(op.inputs)),
                outputs=tuple(
                    DumpTensor.from_array(TensorKind.OUTPUT, k, a) for k, a in enumerate(op.outputs)
                ),
            )
            write_dump(ge_dir / dump_file_name(op.type, op.name, i, 0, stamp), dump)
            if op.fx:
                for io, arrays in (("INPUT", golden.inputs), ("OUTPUT", golden.outputs)):
                    for k, a in enumerate(arrays):
                        np.save(fx_dir / f"{op.fx}.{io}.{k}.2024012503111878{i}.npy", a)
    return root / "ge", root / "fx"
