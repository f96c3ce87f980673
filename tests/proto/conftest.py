"""Fixtures of the proto suites: the shared reference dumps, and a factory for dump files.

The factory builds files through the real writer (``write_dump``), so tests exercise the same
bytes the simulator and the agent produce; crafted corrupt files start from its output.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, TensorKind, dump_bytes, write_dump
from dumpcmp.proto.dtypes import Format


@pytest.fixture(scope="session")
def dump_fixtures(shared_fixtures: Path) -> Path:
    """``shared/fixtures/dumps``: real-layout dump files with a manifest and expected tensors."""
    root = shared_fixtures / "dumps"
    if not (root / "manifest.json").is_file():
        pytest.skip(f"no dump fixtures at {root}")
    return root


@pytest.fixture(scope="session")
def dump_manifest(dump_fixtures: Path) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((dump_fixtures / "manifest.json").read_text())
    return manifest


@dataclass(frozen=True)
class DumpFactory:
    """Builds DumpFile records and writes them (2.0 layout) under ``root``."""

    root: Path

    def dump(
        self,
        inputs: Sequence[np.ndarray | DumpTensor] = (),
        outputs: Sequence[np.ndarray | DumpTensor] = (),
        *,
        op_name: str = "net/op",
        dump_time: int = 1_700_000_000_000_000,
        attrs: Sequence[tuple[str, str]] = (),
    ) -> DumpFile:
        def tensors(kind: TensorKind, items: Sequence[np.ndarray | DumpTensor]) -> tuple[DumpTensor, ...]:
            return tuple(
                item if isinstance(item, DumpTensor) else DumpTensor.from_array(kind, i, item)
                for i, item in enumerate(items)
            )

        return DumpFile(
            path="",
            layout=Layout.V2,
            version="2.0",
            dump_time=dump_time,
            op_name=op_name,
            inputs=tensors(TensorKind.INPUT, inputs),
            outputs=tensors(TensorKind.OUTPUT, outputs),
            attrs=tuple(attrs),
        )

    def write(
        self,
        name: str = "Add.net_op.1.2.1700000000000000",
        inputs: Sequence[np.ndarray | DumpTensor] = (),
        outputs: Sequence[np.ndarray | DumpTensor] = (),
        **kwargs: Any,
    ) -> Path:
        return write_dump(self.root / name, self.dump(inputs, outputs, **kwargs))

    def write_bytes(self, name: str, data: bytes) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    @staticmethod
    def raw_tensor(
        kind: TensorKind,
        index: int,
        data_type: int,
        shape: tuple[int, ...],
        payload: bytes,
        *,
        fmt: int = int(Format.ND),
    ) -> DumpTensor:
        """A tensor with any header values, for types ``from_array`` cannot make (DT_STRING …)."""
        return DumpTensor(
            kind=kind,
            index=index,
            data_type=data_type,
            format=fmt,
            shape=shape,
            original_shape=shape,
            size=len(payload),
            payload=np.frombuffer(payload, dtype=np.uint8),
        )


@pytest.fixture
def dumpfactory(tmp_path: Path) -> DumpFactory:
    return DumpFactory(tmp_path)


@pytest.fixture
def sample_bytes() -> bytes:
    """A small valid 2.0 file: one fp16 input (2×3) and two outputs (fp32 [4], int8 [3])."""
    dump = DumpFactory(Path()).dump(
        inputs=[np.arange(6, dtype=np.float16).reshape(2, 3)],
        outputs=[np.linspace(-1, 1, 4, dtype=np.float32), np.array([1, -2, 3], dtype=np.int8)],
    )
    return dump_bytes(dump)
