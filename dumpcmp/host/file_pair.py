"""One .npy file as the target side: ``compare -tp a.npy -gp b.npy`` (or ``-gp`` one dump file).

This is how users compare two tensors with the CANN comparator, and the result is one row.
A dump file as the target goes through the dump pipeline instead (its header gives the layout
to undo); only the npy target, which has no op name or layout, is compared here. In a
file-against-file compare the shapes must be equal: (2, 3) against (3, 2) is a mismatch row,
not numbers.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from dumpcmp.errors import DumpcmpError
from dumpcmp.host.golden import GoldenSource, GoldenTensor, NpyGoldenDir, load_npy
from dumpcmp.host.metrics.offline_data import MetricValues, compare_arrays
from dumpcmp.host.pipeline import fit_golden_shape, fp16_overflows
from dumpcmp.host.rows import NO_GOLDEN, ResultRow, dtype_label
from dumpcmp.proto.codec import TensorKind

NPY_SUFFIX = ".npy"
ANY_OP = "*"  # a single-file golden source answers every name with its one tensor


def is_npy_target(target: Path) -> bool:
    return target.is_file() and target.suffix == NPY_SUFFIX


def compare_npy_target(target: Path, golden: GoldenSource, *, overflow_detection: bool = False) -> ResultRow:
    """The one row of an npy target against a single golden file (its output 0 for a dump file).

    With ``overflow_detection`` a float16 target gets its OverFlow cell, as a dump tensor does.
    """
    if isinstance(golden, NpyGoldenDir):
        found = golden.output(ANY_OP, 0)
    else:
        found = golden.tensor(ANY_OP, TensorKind.OUTPUT, 0)
    try:
        x = load_npy(target)
    except DumpcmpError as exc:
        return _row(target, None, None, NO_GOLDEN, str(exc), readable=False)
    row = _compared(target, x, golden, found)
    return replace(row, overflow=_overflow(x)) if overflow_detection else row


def _compared(target: Path, x: np.ndarray, golden: GoldenSource, found: GoldenTensor | None) -> ResultRow:
    if found is None:
        return _row(target, x, None, NO_GOLDEN, f"golden {golden.root} holds no output tensor")
    try:
        y = found.load()
    except DumpcmpError as exc:
        return _row(target, x, None, found.label, str(exc))
    try:
        fit_golden_shape(x, y.shape, exact=True)  # the user named both tensors: equal shapes only
        metrics = compare_arrays(x, y)
    except DumpcmpError as exc:  # a shape mismatch; a dtype without numbers (complex): the row says so
        return _row(target, x, y, found.label, str(exc))
    return _row(target, x, y, found.label, metrics)


def _overflow(x: np.ndarray) -> bool:
    return x.dtype == np.float16 and fp16_overflows(x)


def _row(
    target: Path,
    x: np.ndarray | None,
    y: np.ndarray | None,
    golden_label: str,
    result: MetricValues | str,
    *,
    readable: bool = True,
) -> ResultRow:
    metrics = MetricValues.unavailable(result) if isinstance(result, str) else result
    return ResultRow(
        index=0,
        op_sequence=None,
        op_type="",
        npu_name=target.name,
        npu_dtype=dtype_label(x.dtype) if x is not None else "NaN",
        npu_address=None,
        ground_truth=golden_label,
        golden_dtype=dtype_label(y.dtype) if y is not None else "NaN",
        golden_address=None,
        tensor_index=f"{target.name}:output:0",
        shape=tuple(x.shape) if x is not None else None,
        overflow=None,
        metrics=metrics,
        dump_readable=readable,
    )
