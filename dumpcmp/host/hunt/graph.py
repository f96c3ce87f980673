"""The compiled model as the hunt plans over it: dumped ops in execution order, who feeds whom,
and how many bytes each op's tensors take in a dump.

Everything comes from the fusion rule file (the ATC json): an op's ``id`` is its place in
execution order, its ``input`` list names its producers, and its tensor descs give the device
shape and dtype a dump file stores. Data, Const and NetOutput ops are never dumped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from dumpcmp.errors import UnsupportedDtypeError
from dumpcmp.host.fusion_rules import FusionRules, RuleOp, TensorDesc
from dumpcmp.proto.dtypes import dtype_by_name, storage_bytes

__all__ = ["NOT_DUMPED", "HuntGraph", "tensor_bytes"]

# Op types the runtime dumps nothing for: graph inputs, constants and the output node.
NOT_DUMPED = frozenset({"Data", "RefData", "AippData", "Const", "Constant", "Variable", "NetOutput"})
NET_OUTPUT = "NetOutput"
# A dump file's header and per-tensor descriptions (measured on the simulated dumps): small next
# to the data, but a window of many tiny ops would otherwise be estimated at nothing.
_DUMP_OVERHEAD = 32
_PER_TENSOR = 48
# One statistics csv line per tensor, plus the header line of each file.
_STATS_HEADER = 160
_STATS_LINE = 100


def tensor_bytes(desc: TensorDesc) -> int:
    """The bytes one tensor of ``desc`` takes in a dump file (its device shape and dtype)."""
    count = math.prod(desc.device_shape) if desc.device_shape else 1
    try:
        return storage_bytes(dtype_by_name(desc.device_dtype), count)
    except UnsupportedDtypeError:
        return 4 * count  # an unknown type: as wide as a float, the common case


@dataclass(frozen=True)
class HuntGraph:
    """Dumped ops in execution order with their producers and consumers (dumped ops only:
    a Const or Data producer is a fixed input, the same on both sides)."""

    rules: FusionRules
    order: tuple[str, ...] = field(init=False)
    _place: dict[str, int] = field(init=False, repr=False, compare=False)
    _producers: dict[str, tuple[str, ...]] = field(init=False, repr=False, compare=False)
    _consumers: dict[str, tuple[str, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        seen: set[str] = set()
        ordered: list[RuleOp] = []
        for op in sorted(self.rules.ops, key=lambda o: o.id):  # stable: file order breaks ties
            if op.name not in seen:
                seen.add(op.name)
                ordered.append(op)
        dumped = [op for op in ordered if op.type not in NOT_DUMPED]
        names = {op.name for op in dumped}
        producers: dict[str, tuple[str, ...]] = {}
        consumers: dict[str, list[str]] = {op.name: [] for op in dumped}
        for op in dumped:
            found = tuple(dict.fromkeys(r.src_name for r in op.data_inputs if r.src_name in names))
            producers[op.name] = found
            for src in found:
                consumers[src].append(op.name)
        object.__setattr__(self, "order", tuple(op.name for op in dumped))
        object.__setattr__(self, "_place", {name: i for i, name in enumerate(self.order)})
        object.__setattr__(self, "_producers", producers)
        object.__setattr__(self, "_consumers", {k: tuple(v) for k, v in consumers.items()})

    def __contains__(self, name: object) -> bool:
        return name in self._place

    def op(self, name: str) -> RuleOp:
        found = self.rules.op(name)
        if found is None:
            raise KeyError(name)
        return found

    def place(self, name: str) -> int:
        """``name``'s position in execution order among the dumped ops."""
        return self._place[name]

    def producers(self, name: str) -> tuple[str, ...]:
        """The dumped ops whose outputs ``name`` reads."""
        return self._producers.get(name, ())

    def consumers(self, name: str) -> tuple[str, ...]:
        return self._consumers.get(name, ())

    def ancestors(self, names: Iterable[str]) -> frozenset[str]:
        """Every dumped op whose outputs reach any of ``names`` (``names`` not included)."""
        return _reached(names, self.producers)

    def descendants(self, names: Iterable[str]) -> frozenset[str]:
        """Every dumped op that reads, directly or not, an output of any of ``names``."""
        return _reached(names, self.consumers)

    def input_producer(self, name: str, k: int) -> str | None:
        """The dumped op that feeds data input ``k`` of ``name`` (None: a Data or Const op)."""
        inputs = self.op(name).data_inputs
        if not 0 <= k < len(inputs):
            return None
        src = inputs[k].src_name
        return src if src in self._place else None

    def sorted(self, names: Iterable[str]) -> tuple[str, ...]:
        """``names`` (dumped ops) in execution order, once each."""
        return tuple(sorted(set(names), key=self.place))

    def output_bytes(self, name: str) -> int:
        return sum(tensor_bytes(d) for d in self.op(name).outputs)

    def input_bytes(self, name: str) -> int:
        op = self.op(name)
        if op.input_descs:
            return sum(tensor_bytes(d) for d in op.input_descs if d.device_dtype)
        # No input descs: each data input is its producer's output of that index.
        total = 0
        for ref in op.data_inputs:
            src = self.rules.op(ref.src_name)
            if src is not None and 0 <= ref.src_index < len(src.outputs):
                total += tensor_bytes(src.outputs[ref.src_index])
        return total

    def tensor_dump_bytes(self, name: str, *, inputs: bool) -> int:
        """One op's tensor dump file: its outputs, and its inputs with ``inputs``."""
        op = self.op(name)
        count = len(op.outputs) + (len(op.data_inputs) if inputs else 0)
        data = self.output_bytes(name) + (self.input_bytes(name) if inputs else 0)
        return _DUMP_OVERHEAD + _PER_TENSOR * count + data

    def stats_dump_bytes(self, name: str, *, inputs: bool) -> int:
        op = self.op(name)
        count = len(op.outputs) + (len(op.data_inputs) if inputs else 0)
        return _STATS_HEADER + _STATS_LINE * count

    def window_bytes(self, names: Sequence[str], *, inputs: bool = True) -> int:
        return sum(self.tensor_dump_bytes(n, inputs=inputs) for n in names)

    def net_outputs(self) -> tuple[tuple[str, int], ...]:
        """What feeds NetOutput, in output order: (producer op, its output index)."""
        for op in self.rules.ops:
            if op.type == NET_OUTPUT:
                return tuple((r.src_name, r.src_index) for r in op.data_inputs)
        return ()


def _reached(names: Iterable[str], step: Callable[[str], tuple[str, ...]]) -> frozenset[str]:
    """Every op ``step`` leads to from ``names``, transitively (``names`` not included)."""
    found: set[str] = set()
    todo = [n for name in names for n in step(name)]
    while todo:
        name = todo.pop()
        if name not in found:
            found.add(name)
            todo.extend(step(name))
    return frozenset(found)
