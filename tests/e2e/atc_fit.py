"""Dump trees and golden directories made to fit an ATC json (a test helper, not a test).

The world it fakes, decided from the json alone (never through ``dumpcmp.host.matcher``, which the
tests built on it check):

* Framework tensors are named ``{op}.{index}``. The framework ops are every original op name of an
  NPU op, every graph input (``Data``), and every op ATC folded away whose name survives only as
  the label of a GE-made op (``Unsqueeze_342`` on a TransData, ``Cast_311`` on a constant).
* Each framework tensor holds random values (seeded by its name, so two builds of one model agree).
* An NPU op computes the framework tensors its output descs name. A desc without a name belongs
  to the op's single original when the op alone computes it (a lone op, or the last op of a
  one-to-many split). A label naming no framework op (ATC's own names) has no framework tensor.
* A Cast/TransData GE inserted passes its input through, whatever its desc claims; a constant GE
  folded is only a framework tensor when its label is a folded framework op.
* Every executed op dumps all its data inputs (what its producers hold) and all its outputs, in the
  device dtype, layout and shape of the json, with the header's original shape set. A fault adds 3
  to one op's outputs, so that op's outputs (and what reads them) differ from the golden.

``truth`` says, for every dumped tensor, which framework tensor it is (or ``None``): what a correct
comparator must compare it with.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from dumpcmp.errors import DumpcmpError
from dumpcmp.host.fusion_rules import FusionRules, RuleOp, TensorDesc, load_rules
from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, TensorKind, write_dump
from dumpcmp.proto.dtypes import Format, dtype_by_name, format_by_name, numpy_dtype
from dumpcmp.proto.layouts import to_device
from dumpcmp.proto.names import dump_file_name, golden_file_name

NOT_EXECUTED = frozenset({"Data", "Const", "NetOutput", "AtomicAddrClean", "Send", "Recv", "StreamActive"})
PASS_THROUGH = frozenset({"Cast", "TransData"})
STAMP0 = 1763700000000000
FAULT_BIAS = 3.0
_PLAIN = frozenset({Format.ND, Format.NCHW, Format.NHWC})

TensorId = tuple[str, str, int]  # (NPU op name, "input" | "output", index)


@dataclass(frozen=True, slots=True)
class FitCase:
    """What :func:`make_fit` wrote and what a correct comparison of it must find."""

    rule_file: Path
    npu_dir: Path  # root of the dump tree: npu/{session}/{device}/{model}/{model id}/{step}/
    golden_dir: Path
    truth: Mapping[TensorId, str | None]  # the golden key each dumped tensor is, or None
    golden_keys: frozenset[str]  # every golden file written, as "{op}.{index}" (unsanitised op)
    fault: str | None


def make_fit(
    rule_file: Path,
    root: Path,
    *,
    fault: str | None = None,
    skip_ops: Collection[str] = (),
    missing_golden: Collection[str] = (),
) -> FitCase:
    """Write a dump tree under ``root/npu`` and golden npy files under ``root/golden``.

    ``skip_ops`` are executed ops left out of the dump (as a ``layer`` filter would);
    ``missing_golden`` are golden keys (``"{op}.{index}"``) whose file is not written.
    """
    rules = load_rules(rule_file)
    world = _World(rules, fault)
    session = root / "npu" / "20261122000000"
    dump_dir = session / "0" / (rules.name or "model") / "1" / "0"
    truth: dict[TensorId, str | None] = {}
    stamp = STAMP0
    for op in sorted(rules.ops, key=lambda o: o.id):
        if op.type in NOT_EXECUTED or not op.outputs or op.name in skip_ops:
            continue
        stamp += 1
        inputs = []
        for j, (ref_src, ref_index, desc) in enumerate(world.data_inputs(op)):
            value = world.npu_value(ref_src, ref_index)
            value = _fit(value, _logical_shape(desc)) if desc is not None else value
            inputs.append(_device_tensor(TensorKind.INPUT, j, desc, value))
            truth[(op.name, "input", j)] = world.identity(ref_src, ref_index)
        outputs = []
        for k, desc in enumerate(op.outputs):
            outputs.append(_device_tensor(TensorKind.OUTPUT, k, desc, world.npu_value(op.name, k)))
            truth[(op.name, "output", k)] = world.identity(op.name, k)
        dump = DumpFile("", Layout.V2, "2.0", stamp, op.name, inputs=tuple(inputs), outputs=tuple(outputs))
        write_dump(dump_dir / dump_file_name(op.type, op.name, op.id, 1, stamp), dump)
    golden_dir = root / "golden"
    golden_dir.mkdir(parents=True)
    written = set()
    for key, value in world.golden().items():
        if key in missing_golden:
            continue
        name, _, index = key.rpartition(".")
        np.save(golden_dir / golden_file_name(name, int(index), STAMP0), value)
        written.add(key)
    return FitCase(rule_file, root / "npu", golden_dir, truth, frozenset(written), fault)


class _World:
    def __init__(self, rules: FusionRules, fault: str | None) -> None:
        self.rules = rules
        self.fault = fault
        self.originals = {n for op in rules.ops if not op.is_ge_inserted for n in op.original_op_names if n}
        self.framework = self.originals | {op.name for op in rules.ops if op.type == "Data"}
        for op in rules.ops:
            if op.is_ge_inserted:
                self.framework.update(d.origin_name for d in op.outputs if d.origin_name)
        # The op computing each single original's unnamed outputs: the last of the ops it became.
        computes: dict[str, RuleOp] = {}
        for op in sorted(rules.ops, key=lambda o: o.id):
            names = set(op.original_op_names) - {""}
            if not op.is_ge_inserted and len(names) == 1:
                computes[names.pop()] = op
        # Labels on GE-made ops prove nothing: ATC copies its consumer's name onto a TransData.
        labelled = {d.origin_name for op in rules.ops if not op.is_ge_inserted for d in op.outputs}
        self.owner = {name: op.name for name, op in computes.items() if name not in labelled}
        self.npu_value = cache(self._npu_value)
        self.identity = cache(self._identity)

    def data_inputs(self, op: RuleOp) -> list[tuple[str, int, TensorDesc | None]]:
        """Each data input with its input desc (descs cover data and absent inputs, not control)."""
        descs = iter(op.input_descs)
        found = []
        for ref in op.inputs:
            if ref.kind == "control":
                continue
            desc = next(descs, None)
            if ref.is_data:
                found.append((ref.src_name, ref.src_index, desc))
        return found

    def _op(self, name: str) -> RuleOp | None:
        return self.rules.op(name)

    def _identity(self, op_name: str, k: int) -> str | None:
        """The framework tensor NPU tensor ``op_name:k`` holds, as a golden key."""
        op = self._op(op_name)
        if op is None or op.type == "Data":
            return f"{op_name}.{k}"
        if op.is_ge_inserted and op.type in PASS_THROUGH:
            data = self.data_inputs(op)
            return self.identity(data[k][0], data[k][1]) if k < len(data) else None
        if k >= len(op.outputs):
            return None
        desc = op.outputs[k]
        if op.is_ge_inserted:  # a folded constant: a framework op only if ATC kept its name
            named = desc.origin_name and desc.origin_name not in self.originals
            return f"{desc.origin_name}.{desc.origin_output_index}" if named else None
        if desc.origin_name:
            known = desc.origin_name in self.framework
            return f"{desc.origin_name}.{desc.origin_output_index}" if known else None
        names = set(op.original_op_names) - {""}
        if len(names) == 1 and self.owner.get(next(iter(names))) == op.name:
            return f"{next(iter(names))}.{k}"
        return None

    def _shape(self, op: RuleOp, k: int) -> tuple[int, ...]:
        return _logical_shape(op.outputs[k]) if k < len(op.outputs) else (4,)

    def _npu_value(self, op_name: str, k: int) -> np.ndarray:
        """What the NPU holds in ``op_name:k`` (logical layout, float32 or the int dtype)."""
        op = self._op(op_name)
        if op is not None and op.is_ge_inserted and op.type in PASS_THROUGH:
            data = self.data_inputs(op)
            if k < len(data):
                return _fit(self.npu_value(data[k][0], data[k][1]), self._shape(op, k))
        shape = self._shape(op, k) if op is not None else (4,)
        dtype = _golden_dtype(op.outputs[k]) if op is not None and k < len(op.outputs) else np.float32
        key = self.identity(op_name, k) or f"{op_name}:{k}"
        value = _random(key, shape, dtype)
        if op_name == self.fault:
            value = value + np.asarray(FAULT_BIAS, dtype=value.dtype)
        return value

    def golden(self) -> dict[str, np.ndarray]:
        """Every framework tensor: computed by an NPU op, or (fused away) a small stand-in."""
        found: dict[str, np.ndarray] = {}
        for op in sorted(self.rules.ops, key=lambda o: o.id):
            for k in range(len(op.outputs)):
                key = self.identity(op.name, k)
                if key is not None and key not in found:
                    found[key] = _random(key, self._shape(op, k), _golden_dtype(op.outputs[k]))
                label = op.outputs[k].origin_name
                if op.is_ge_inserted and label and label not in self.originals:
                    folded = f"{label}.{op.outputs[k].origin_output_index}"
                    # A folded framework op (Unsqueeze, Reshape) holds what its NPU tensor holds.
                    found.setdefault(folded, _fit(self._clean(op.name, k), self._shape(op, k)))
        for name in sorted(self.originals):
            if not any(key.rpartition(".")[0] == name for key in found):
                found[f"{name}.0"] = _random(f"{name}.0", (4,), np.dtype(np.float32))
        return found

    def _clean(self, op_name: str, k: int) -> np.ndarray:
        """The NPU tensor as it would be without the fault."""
        op = self._op(op_name)
        assert op is not None and k < len(op.outputs)
        key = self.identity(op_name, k) or f"{op_name}:{k}"
        return _random(key, self._shape(op, k), _golden_dtype(op.outputs[k]))


def _random(key: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(key.encode()))
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-5, 6, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(np.float32)


def _fit(value: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``value`` in ``shape`` when only the dims differ (a TransData adds unit dims)."""
    return value.reshape(shape) if value.size == math.prod(shape) else value


def _golden_dtype(desc: TensorDesc) -> np.dtype:
    try:
        dtype = np.dtype(numpy_dtype(dtype_by_name(desc.device_dtype)))
    except (KeyError, DumpcmpError):
        return np.dtype(np.float32)
    return dtype if np.issubdtype(dtype, np.integer) else np.dtype(np.float32)


def _logical_shape(desc: TensorDesc) -> tuple[int, ...]:
    """The tensor's logical shape: the origin shape, unless a plain layout says otherwise.

    ATC writes origin shape () for some constants whose device shape is (3,); in a plain layout
    the device shape is the logical one.
    """
    try:
        fmt = format_by_name(desc.device_format)
    except KeyError:
        fmt = None
    if fmt in _PLAIN and math.prod(desc.device_shape) != math.prod(desc.origin_shape):
        return desc.device_shape
    return desc.origin_shape


def _device_tensor(kind: TensorKind, index: int, desc: TensorDesc | None, value: np.ndarray) -> DumpTensor:
    """The tensor as the NPU dumps it: device dtype, layout and shape of ``desc`` where we can."""
    try:
        data_type = dtype_by_name(desc.device_dtype) if desc else None
        dtype = numpy_dtype(data_type) if data_type is not None else np.dtype(np.float32)
        fmt = format_by_name(desc.device_format) if desc else Format.ND
    except (KeyError, DumpcmpError):
        data_type, dtype, fmt = None, np.dtype(np.float32), Format.ND
    typed = value.astype(dtype)
    device = typed
    if desc is not None and fmt not in _PLAIN:
        try:
            device = to_device(typed, fmt)
        except DumpcmpError:
            device = None
        if device is None or tuple(device.shape) != desc.device_shape:
            device, fmt = typed, Format.ND  # a layout we cannot fake: dump it plain
    elif fmt not in _PLAIN:
        fmt = Format.ND
    return DumpTensor.from_array(
        kind, index, device, format=fmt, original_shape=typed.shape, data_type=data_type
    )
