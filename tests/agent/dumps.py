"""Dump files for agent tests and benches: real 2.0 files through the codec, of a chosen size."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, TensorKind, dump_bytes

STEP_DIR = Path("20240101000000/0/net/1/0")  # {time}/{device}/{model}/{model_id}/{step}


def dump_name(index: int) -> str:
    return f"Conv2D.conv{index}.{index + 1}.0.{1700000000000000 + index}"


def dump_content(elements: int, seed: int = 0, op_name: str = "conv") -> bytes:
    """The bytes of a dump file with one float32 output of ``elements`` values."""
    rng = np.random.default_rng(seed)
    tensor = DumpTensor.from_array(TensorKind.OUTPUT, 0, rng.standard_normal(elements).astype(np.float32))
    dump = DumpFile(path="", layout=Layout.V2, version="2.0", dump_time=0, op_name=op_name, outputs=(tensor,))
    return dump_bytes(dump)


def write_dumps(root: Path, count: int, elements: int = 1000) -> list[Path]:
    """``count`` dump files under ``root/STEP_DIR``, each written whole."""
    paths = []
    for index in range(count):
        path = root / STEP_DIR / dump_name(index)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(dump_content(elements, seed=index, op_name=f"conv{index}"))
        paths.append(path)
    return paths
