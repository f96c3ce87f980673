"""Shapes must agree before metrics: exactly file against file, up to unit dims in a tree (metrics.md §1)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from dumpcmp.errors import MatchError
from dumpcmp.host.offline import run_compare
from dumpcmp.host.pipeline import fit_golden_shape
from dumpcmp.host.request import CompareRequest
from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, TensorKind, write_dump
from dumpcmp.proto.names import dump_file_name

STAMP = 1763700000000001


def _file_pair(tmp_path: Path, target: np.ndarray, golden: np.ndarray) -> tuple[Path, Path]:
    tensor = DumpTensor.from_array(TensorKind.OUTPUT, 0, target.astype(np.float16))
    dump = tmp_path / dump_file_name("Add", "net/add", 1, 1, STAMP)
    write_dump(dump, DumpFile("", Layout.V2, "2.0", STAMP, "net/add", outputs=(tensor,)))
    npy = tmp_path / "golden.npy"
    np.save(npy, golden)
    return dump, npy


@pytest.mark.parametrize(
    ("target", "golden", "reason"),
    [((2, 3), (3, 2), "shape mismatch [2, 3] vs [3, 2]"), ((4,), (1, 4), "shape mismatch [4] vs [1, 4]")],
)
def test_file_against_file_needs_equal_shapes(
    tmp_path: Path, target: tuple[int, ...], golden: tuple[int, ...], reason: str
) -> None:
    values = np.arange(1, 7 if len(target) == 2 else 5, dtype=np.float32)
    dump, npy = _file_pair(tmp_path, values.reshape(target), values.reshape(golden))
    outcome = run_compare(CompareRequest(dump, npy, out_dir=tmp_path / "out"))
    (row,) = [r for r in outcome.rows if r.index is not None]
    assert math.isnan(row.cosine) and row.reasons == (reason,)
    assert all(math.isnan(v) for v in row.metrics.numbers())


def test_file_against_file_with_equal_shapes_is_compared(tmp_path: Path) -> None:
    values = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    dump, npy = _file_pair(tmp_path, values, values)
    outcome = run_compare(CompareRequest(dump, npy, out_dir=tmp_path / "out"))
    (row,) = [r for r in outcome.rows if r.index is not None]
    assert row.cosine == pytest.approx(1.0, abs=1e-6) and row.shape == (2, 3)


def test_fit_golden_shape() -> None:
    x = np.zeros((1, 512, 1, 1806), dtype=np.float16)
    assert fit_golden_shape(x, (1, 512, 1806), exact=False).shape == (1, 512, 1806)
    with pytest.raises(MatchError, match=r"shape mismatch \[1, 512, 1, 1806\] vs \[1, 512, 1, 1800\]"):
        fit_golden_shape(x, (1, 512, 1, 1800), exact=False)  # never cut down to the golden
    with pytest.raises(MatchError, match=r"shape mismatch \[1, 512, 1, 1806\] vs \[1, 512, 1806\]"):
        fit_golden_shape(x, (1, 512, 1806), exact=True)
    with pytest.raises(MatchError, match="shape mismatch"):
        fit_golden_shape(np.zeros((2, 3)), (3, 2), exact=False)  # same count, other shape
    assert fit_golden_shape(np.zeros(()), (1,), exact=False).shape == (1,)
