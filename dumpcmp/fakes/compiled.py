"""The result of the ATC-like compile: an ordered list of NPU ops as frozen records.

One ``CompiledModel`` feeds three consumers — the executor (``stages``: what to compute, in ONNX
op semantics), the dump writer (per-tensor device descriptions) and the ATC json writer (names,
types, ``src:idx`` inputs, original op names, origin attributes) — so the dump files and the
fusion rule file cannot disagree about a tensor.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np

from dumpcmp.proto.dtypes import DataType, Format, data_type_of

from .onnx_model import ValueSpec

__all__ = [
    "PLAIN_FORMATS",
    "CompiledModel",
    "NpuOp",
    "OpInput",
    "OpKind",
    "OpOutput",
    "Stage",
    "TensorDesc",
    "c0_for",
    "device_shape",
    "plain_format",
]

PLAIN_FORMATS = frozenset({Format.ND, Format.NCHW})
_CUBE = 16


def plain_format(rank: int) -> Format:
    """The origin (framework) format GE records: NCHW for 4-D tensors, ND otherwise."""
    return Format.NCHW if rank == 4 else Format.ND


def c0_for(dtype: np.dtype) -> int:
    """GE's C0 by element size (formats.md §6): 32 for 1-byte types, 16 otherwise."""
    return 32 if np.dtype(dtype).itemsize == 1 else 16


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def device_shape(shape: tuple[int, ...], fmt: Format, dtype: np.dtype, groups: int = 1) -> tuple[int, ...]:
    """The device shape of a logical ``shape`` stored as ``fmt`` (formats.md §6)."""
    c0 = c0_for(dtype)
    if fmt == Format.NC1HWC0:
        n, c, h, w = shape
        return (n, _ceil(c, c0), h, w, c0)
    if fmt == Format.FRACTAL_NZ:
        dims = (1, *shape) if len(shape) == 1 else shape
        *batch, rows, cols = dims
        return (*batch, _ceil(cols, c0), _ceil(rows, _CUBE), _CUBE, c0)
    if fmt == Format.FRACTAL_Z:
        n, c, h, w = shape if len(shape) == 4 else (*shape, 1, 1)
        if groups <= 1:
            return (_ceil(c, c0) * h * w, _ceil(n, _CUBE), _CUBE, c0)
        cout = n // groups
        e = min(_lcm(c, c0) // c, _lcm(cout, _CUBE) // cout, groups)
        cin_opt = _ceil(e * c, c0) * c0
        cout_opt = _ceil(e * cout, _CUBE) * _CUBE
        return (_ceil(groups, e) * (cin_opt // c0) * h * w, cout_opt // _CUBE, _CUBE, c0)
    return shape


def _lcm(a: int, b: int) -> int:
    return a * b // math.gcd(a, b)


@dataclass(frozen=True, slots=True)
class TensorDesc:
    """A tensor as the device holds it, and the framework tensor it stands for."""

    dtype: np.dtype  # device element type
    format: Format  # device format
    origin_shape: tuple[int, ...]
    origin_dtype: np.dtype  # the framework's type (float32 for an fp16 activation)
    sub_format: int = 0  # group count of a grouped FRACTAL_Z weight

    @property
    def shape(self) -> tuple[int, ...]:
        return device_shape(self.origin_shape, self.format, self.dtype, max(self.sub_format, 1))

    @property
    def origin_format(self) -> Format:
        return plain_format(len(self.origin_shape))

    @property
    def data_type(self) -> DataType:
        return data_type_of(self.dtype)

    @property
    def origin_data_type(self) -> DataType:
        return data_type_of(self.origin_dtype)

    @property
    def is_plain(self) -> bool:
        return self.format in PLAIN_FORMATS

    def with_format(self, fmt: Format) -> TensorDesc:
        fmt = plain_format(len(self.origin_shape)) if fmt in PLAIN_FORMATS else fmt
        return TensorDesc(self.dtype, fmt, self.origin_shape, self.origin_dtype, self.sub_format)

    def with_dtype(self, dtype: np.dtype) -> TensorDesc:
        return TensorDesc(np.dtype(dtype), self.format, self.origin_shape, self.origin_dtype, self.sub_format)


@dataclass(frozen=True, slots=True)
class OpInput:
    """An input of an NPU op: output ``index`` of op ``source``, found at ``value`` at run time."""

    source: str
    index: int
    value: str
    desc: TensorDesc


@dataclass(frozen=True, slots=True)
class OpOutput:
    """An output of an NPU op and the framework tensor it corresponds to ('' = none)."""

    value: str
    desc: TensorDesc
    origin_name: str = ""
    origin_index: int = 0


@dataclass(frozen=True, slots=True)
class Stage:
    """One step of an NPU op's computation, with ONNX op semantics (``kernels.KERNELS``).

    ``originals`` are the ONNX nodes whose result this stage produces: a fault injected at one of
    them is applied to this stage's output.
    """

    op_type: str
    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict, hash=False)
    originals: tuple[str, ...] = ()


class OpKind(str, Enum):
    DATA = "data"  # a graph input: no task, no dump file
    CONST = "const"  # a weight: no task, no dump file
    COMPUTE = "compute"  # a task on the device: dumped
    NET_OUTPUT = "net_output"  # collects the graph outputs: no dump file


@dataclass(frozen=True, slots=True)
class NpuOp:
    """One op of the compiled graph."""

    id: int
    name: str
    type: str
    kind: OpKind
    inputs: tuple[OpInput, ...] = ()
    outputs: tuple[OpOutput, ...] = ()
    # None: the op is a framework op itself (the attr is absent from the json);
    # (): GE inserted it (present and empty); otherwise the fused framework ops.
    original_names: tuple[str, ...] | None = None
    stages: tuple[Stage, ...] = ()
    is_multiop: bool = False

    @property
    def is_task(self) -> bool:
        return self.kind is OpKind.COMPUTE

    @property
    def covers(self) -> tuple[str, ...]:
        """The framework op names this op stands for (its own name for an original op)."""
        return (self.name,) if self.original_names is None else self.original_names


@dataclass(frozen=True)
class CompiledModel:
    """An ONNX model compiled for the simulated NPU."""

    name: str
    ops: tuple[NpuOp, ...]
    constants: Mapping[str, np.ndarray]  # device-typed constant values by value name
    inputs: tuple[ValueSpec, ...]
    outputs: tuple[ValueSpec, ...]
    output_values: tuple[str, ...]  # where each graph output is found at run time
    fusion: bool = True
    quantized: tuple[str, ...] = ()  # framework op names compiled to int8
    _by_name: dict[str, NpuOp] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {op.name: op for op in self.ops})

    def op(self, name: str) -> NpuOp:
        return self._by_name[name]

    @property
    def tasks(self) -> tuple[NpuOp, ...]:
        """The ops that execute (and are dumped), in execution order."""
        return tuple(op for op in self.ops if op.is_task)

    def containing(self, original: str) -> NpuOp | None:
        """The task whose stages compute framework op ``original`` (where a fault at it lands)."""
        for op in self.tasks:
            if any(original in s.originals for s in op.stages):
                return op
        return None

    def original_names(self) -> tuple[str, ...]:
        """Every framework op name some task computes, in execution order."""
        seen: dict[str, None] = {}
        for op in self.tasks:
            for stage in op.stages:
                seen.update(dict.fromkeys(stage.originals))
        return tuple(seen)
