"""Which golden tensor each NPU tensor is compared with (formats.md §5.3, §5.4).

Pure functions of parsed rule files: nothing here touches the disk. The pipeline asks
``Matcher(rules).refs_for(op, "input" | "output", index)`` and gets either a :class:`GoldenRef`
(golden op name + output index, the npy key and the dump-tree key) or a :class:`NoGolden` whose
reason goes into the result row: every NPU tensor gets an answer, none is dropped silently.

Rules, in the order they apply:

1. Fusion groups (§5.3 step 2): ops sharing an L1 fusion sub-graph number, else sharing their
   original op names, form one group; the group decides the relation (OneToOne, MultiToOne,
   OneToMulti, MultiToMulti, L1Fusion) and the NPUDump / GroundTruth strings.
2. An op alone in its group with a single original name X is a "rename" of X: its outputs
   without an origin name are X's outputs (msaccucmp does the same). Without this, a Conv2D
   whose output desc carries no ``_datadump_origin_name`` would never be compared. Likewise
   the last op of a one-to-many split of X computes X's output, unless ATC named it elsewhere.
3. Output k maps to output_desc[k]'s origin (k clamped to 0 past the end); an empty origin
   name means GE made the tensor (no counterpart). Two kinds of GE-made ops carry a label that
   is not their tensor's: a ``Cast``/``TransData`` GE inserted is labelled with its consumer's
   origin, so its output is traced back to its producer like an input (msaccucmp does this);
   a constant GE folded and labelled with an original op of its consumer has no golden.
4. Input j follows the j-th data input to its producer, steps over ``Cast``/``TransData``
   producers (index assumed 1:1), and uses the producer's output mapping; a ``Data`` producer
   or one missing from the file is a graph input, named by itself. With ``-cfr`` nothing dumps
   a graph input, so it is the same input of the fusion-off op that reads it at that position.
5. Skipped with a reason: the inner nodes of multi-op fusions, the quantised stretch of a
   quantised model (from a quant op's int8 output down to its dequant, §5.3 step 5), and the
   ops of an L1 fusion group other than its first and last dumped op (their data stays partial
   in L1 memory).
"""

from __future__ import annotations

import copy
import functools
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import Literal, TypeAlias

from dumpcmp.errors import MatchError
from dumpcmp.host.fusion_rules import FusionRules, InputRef, RuleOp, TensorDesc
from dumpcmp.printable import joined
from dumpcmp.proto.names import sanitize_dump_name, sanitize_golden_name
from dumpcmp.proto.records import pickled_as_values, set_through_slots

__all__ = [
    "SKIPPED_PRODUCER_TYPES",
    "FusionGroup",
    "GoldenRef",
    "Matcher",
    "NoGolden",
    "OpEntry",
    "QuantFilter",
    "Relation",
    "TensorIO",
    "TensorRef",
    "fusion_groups",
    "identity_ref",
    "l1_ops_to_compare",
    "merge_close_fusion",
    "merge_quant_fusion",
    "quant_filter",
]

TensorIO = Literal["input", "output"]

# GE inserts these to change dtype or layout; their output is numerically their input (§5.3 step 4).
SKIPPED_PRODUCER_TYPES = frozenset({"Cast", "TransData"})

# Name keywords of quant / dequant layers: Caffe, TensorFlow, ONNX (AMCT) spellings (§5.3 step 5).
_QUANT_NAMES = re.compile(r"_quant_layer|/AscendQuant|/AscendWeightQuant|\.quant|\.weight_quant")
_DEQUANT_NAMES = re.compile(
    r"_dequant_layer|_anti_quant_layer|/AscendDequant|/AntiQuant|\.dequant|\.anti_quant"
)


class Relation(str, Enum):
    """How the NPU ops of one fusion group relate to the framework ops (msaccucmp's names)."""

    ONE_TO_ONE = "OneToOne"
    MULTI_TO_ONE = "MultiToOne"  # one NPU op fused from several framework ops (Conv+BN+ReLU)
    ONE_TO_MULTI = "OneToMulti"  # one framework op split into several NPU ops
    MULTI_TO_MULTI = "MultiToMulti"
    L1_FUSION = "L1Fusion"


@pickled_as_values
@dataclass(frozen=True, slots=True)
class FusionGroup:
    """NPU ops compared together: their shared key, relation, and the ops sorted by id."""

    key: str
    relation: Relation
    ops: tuple[RuleOp, ...]
    index: int  # position among the groups, in op-id order

    @property
    def original_names(self) -> tuple[str, ...]:
        """Every framework op behind the group, each once, in order."""
        return _unique(n for op in self.ops for n in op.original_op_names)


@pickled_as_values
@set_through_slots
@dataclass(frozen=True, slots=True)
class GoldenRef:
    """The golden tensor for one NPU tensor: output ``index`` of golden op ``op_name``.

    With rule files the golden side is always an output (an input is its producer's output);
    ``io`` is "input" only for :func:`identity_ref` (NPU vs NPU by name).
    """

    op_name: str
    index: int
    io: TensorIO = "output"
    origin_format: str = ""  # layout the NPU tensor must be converted to before comparing
    origin_shape: tuple[int, ...] = ()
    producer: str = ""  # the NPU op whose output desc named this tensor
    skipped: tuple[str, ...] = ()  # Cast/TransData producers stepped over while tracing an input

    @property
    def key(self) -> str:
        """How a golden npy file of this tensor is keyed: ``{op_name with / and . as _}.{index}``."""
        return f"{sanitize_golden_name(self.op_name)}.{self.index}"

    @property
    def dump_key(self) -> tuple[str, TensorIO, int]:
        """How the tensor is found in an NPU dump tree (the -cfr / NPU-vs-NPU golden side)."""
        return (sanitize_dump_name(self.op_name), self.io, self.index)


@pickled_as_values
@dataclass(frozen=True, slots=True)
class NoGolden:
    """This NPU tensor has nothing to be compared with; ``reason`` says why, for the result row."""

    reason: str


TensorRef: TypeAlias = "GoldenRef | NoGolden"


@pickled_as_values
@dataclass(frozen=True, slots=True)
class OpEntry:
    """One NPU op as the result rows show it."""

    op: RuleOp
    group: FusionGroup
    npu_dump: str  # NPUDump column: the op, or every op of a one/multi-to-multi group
    ground_truth: str  # GroundTruth column: original op names, comma-separated; "" = none ("*")
    skip_reason: str | None = None  # set when none of the op's tensors is compared

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def op_sequence(self) -> int:
        """The OpSequence column: the op's id in the rule file."""
        return self.op.id

    @property
    def relation(self) -> Relation:
        return self.group.relation


def identity_ref(op_name: str, io: TensorIO, index: int) -> GoldenRef:
    """NPU vs NPU without rule files: the tensor of the same name, direction and index."""
    _check_io(io, index)
    return GoldenRef(op_name, index, io=io)


# ---------------------------------------------------------------------------------------------
# Groups


def _unique(names: Iterable[str]) -> tuple[str, ...]:
    """Non-empty names, each once, in first-seen order. ATC repeats names (Transpose_0 twice)."""
    return tuple(dict.fromkeys(n for n in names if n))


@functools.lru_cache(maxsize=8192)
def _unique_names(names: tuple[str, ...]) -> tuple[str, ...]:
    return _unique(names)


def _originals(op: RuleOp) -> tuple[str, ...]:
    # Asked several times per op while grouping and indexing: 6 times for a 1092-op file
    return _unique_names(op.original_op_names)


def _group_key(op: RuleOp) -> tuple[str, str]:
    """(namespace, key): L1 numbers and GE-inserted op names never collide with framework names."""
    if op.l1_fusion_no:
        return ("l1", op.l1_fusion_no)
    names = _originals(op)
    if not names:
        return ("op", op.name)
    if len(names) == 1:
        return ("original", names[0])
    return ("original", str(uuid.uuid3(uuid.NAMESPACE_DNS, "".join(names))))


def _relation(ops: tuple[RuleOp, ...]) -> Relation:
    if len(ops) == 1:
        return Relation.MULTI_TO_ONE if len(_originals(ops[0])) > 1 else Relation.ONE_TO_ONE
    if ops[0].l1_fusion_no:
        return Relation.L1_FUSION
    return Relation.ONE_TO_MULTI if len(_originals(ops[0])) == 1 else Relation.MULTI_TO_MULTI


def _ordered(rules: FusionRules) -> list[RuleOp]:
    """Ops by id (stable: file order breaks ties), a repeated name kept once like the lookups."""
    seen: set[str] = set()
    ops = []
    for op in sorted(rules.ops, key=lambda o: o.id):
        if op.name not in seen:
            seen.add(op.name)
            ops.append(op)
    return ops


def fusion_groups(rules: FusionRules) -> tuple[FusionGroup, ...]:
    """The fusion groups of §5.3 steps 2-3, in op-id order."""
    members: dict[tuple[str, str], list[RuleOp]] = {}
    for op in _ordered(rules):
        members.setdefault(_group_key(op), []).append(op)
    return tuple(
        FusionGroup(key, _relation(tuple(ops)), tuple(ops), i)
        for i, ((_, key), ops) in enumerate(members.items())
    )


def l1_ops_to_compare(group: FusionGroup, timestamps: Mapping[str, int]) -> tuple[RuleOp, ...]:
    """Which ops of an L1 fusion group to compare, given each dumped op's timestamp.

    Only the last op dumped holds the group's complete output, and the first its complete input,
    so those two are compared (the first only when it stands for other original ops).
    """
    dumped = sorted((op for op in group.ops if op.name in timestamps), key=lambda op: timestamps[op.name])
    if not dumped:
        return ()
    first, last = dumped[0], dumped[-1]
    if first is last or _originals(first) == _originals(last):
        return (last,)
    return (first, last)


def _rename_owner(group: FusionGroup) -> RuleOp | None:
    """The op of ``group`` whose unnamed outputs are the original op's (rule 2), if any."""
    if group.relation is Relation.ONE_TO_ONE and not group.ops[0].l1_fusion_no:
        return group.ops[0] if len(_originals(group.ops[0])) == 1 else None
    if group.relation is Relation.ONE_TO_MULTI:
        # A framework op split into several NPU ops (a constant and a gather, a random op and
        # its scaling): the last one computes the original's output, unless ATC says where it is.
        named = any(d.origin_name == group.key for op in group.ops for d in op.outputs)
        return None if named else group.ops[-1]
    return None


def _fill_rename_nodes(rules: FusionRules, groups: Sequence[FusionGroup] | None = None) -> FusionRules:
    """Rule 2 of the module docstring: the owner of a group's original X owns X's outputs.

    ``groups`` are ``fusion_groups(rules)`` when the caller has them already.
    """
    renamed: dict[str, RuleOp] = {}
    for group in fusion_groups(rules) if groups is None else groups:
        op = _rename_owner(group)
        if op is None or all(d.origin_name for d in op.outputs):
            continue
        (name,) = _originals(op)
        outputs = tuple(d if d.origin_name else replace(d, origin_name=name) for d in op.outputs)
        renamed[op.name] = replace(op, outputs=outputs)
    if not renamed:
        return rules
    return rules.with_ops([renamed.get(op.name, op) for op in rules.ops])


# ---------------------------------------------------------------------------------------------
# Quantised models (§5.3 step 5)


class _Q(Enum):
    NORMAL = "normal"
    MIDDLE = "middle"  # computed between a quant op and its dequant: quantised, no float golden
    QUANT = "quant"  # int8 output of a quant op
    DEQUANT = "dequant"  # float16 output of a dequant op: back in the float world


@dataclass(frozen=True, slots=True)
class QuantFilter:
    """The quantised stretch of a model: which ops and tensors have no float golden, and why."""

    skipped: Mapping[str, str]  # op name -> reason; none of the op's tensors is compared
    _outputs: Mapping[str, tuple[_Q, ...]]
    _roots: Mapping[str, str]  # op name -> the quant op whose int8 tensor reached it

    @classmethod
    def none(cls) -> QuantFilter:
        return cls({}, {}, {})

    def output_reason(self, op_name: str, index: int) -> str | None:
        kinds = self._outputs.get(op_name, ())
        if index < len(kinds) and kinds[index] in (_Q.QUANT, _Q.MIDDLE):
            root = self._roots.get(op_name) or op_name
            return f"quantised output (quant op {root!r}): the golden model has no such tensor"
        return None

    def input_reason(self, ref: InputRef) -> str | None:
        kinds = self._outputs.get(ref.src_name, ())
        if ref.src_index < len(kinds) and kinds[ref.src_index] in (_Q.QUANT, _Q.MIDDLE):
            root = self._roots.get(ref.src_name) or ref.src_name
            source = f"{ref.src_name}:{ref.src_index}"
            return f"quantised input from {source} (after quant op {root!r}): no float golden"
        return None


def _output_kind(is_quant: bool, is_dequant: bool, in_pair: bool, dtype: str) -> _Q:
    # The name only suggests a quant/dequant layer; the output dtype confirms it.
    if is_quant and dtype == "DT_INT8":
        return _Q.QUANT
    if is_dequant and dtype == "DT_FLOAT16":
        return _Q.DEQUANT
    return _Q.MIDDLE if in_pair else _Q.NORMAL


def quant_filter(rules: FusionRules) -> QuantFilter:
    """Mark the ops between a quant layer (int8 output) and its dequant (float16 output).

    A quant op itself is not skipped: its float input has a golden, only its int8 outputs do
    not. A dequant op's quantised inputs are skipped, its float outputs are compared.
    """
    outputs: dict[str, tuple[_Q, ...]] = {}
    roots: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for op in _ordered(rules):
        originals = "".join(op.original_op_names)
        is_quant = bool(_QUANT_NAMES.search(op.name) or _QUANT_NAMES.search(originals))
        is_dequant = bool(_DEQUANT_NAMES.search(op.name) or _DEQUANT_NAMES.search(originals))
        root = ""
        for ref in op.data_inputs:
            kinds = outputs.get(ref.src_name, ())
            if ref.src_index < len(kinds) and kinds[ref.src_index] in (_Q.QUANT, _Q.MIDDLE):
                root = roots[ref.src_name]
                break
        kinds = tuple(_output_kind(is_quant, is_dequant, bool(root), d.device_dtype) for d in op.outputs)
        outputs[op.name] = kinds
        roots[op.name] = root or (op.name if _Q.QUANT in kinds else "")
        if root and not all(k is _Q.DEQUANT for k in kinds):
            skipped[op.name] = (
                f"inside the quantised stretch after quant op {root!r}: "
                "its tensors are quantised and the golden model has none"
            )
    return QuantFilter(skipped, outputs, roots)


# ---------------------------------------------------------------------------------------------
# The matcher


def _check_io(io: str, index: int) -> None:
    if io not in ("input", "output"):
        raise ValueError(f"io must be 'input' or 'output', not {io!r}")
    if index < 0:
        raise ValueError(f"tensor index must be >= 0, not {index}")


def _is_inserted_copy(op: RuleOp) -> bool:
    """A Cast/TransData GE added: its output is its input in another dtype or layout."""
    return op.is_ge_inserted and op.type in SKIPPED_PRODUCER_TYPES


def _consumer_labels(rules: FusionRules) -> frozenset[tuple[str, int]]:
    """Outputs of GE-made ops whose origin name is an original op of one of their consumers.

    ATC labels a constant it folded (BN scale, a reshaped weight) with the op that reads it, so
    ``dynamic_const_258:0`` claims to be ``BatchNormalization_60:0``; that golden is another tensor.
    """
    labels: set[tuple[str, int]] = set()
    for consumer in rules.ops:
        originals = set(consumer.original_op_names)
        for ref in consumer.data_inputs:
            producer = rules.op(ref.src_name)
            if producer is None or not producer.is_ge_inserted or ref.src_index >= len(producer.outputs):
                continue
            if producer.outputs[ref.src_index].origin_name in originals:
                labels.add((producer.name, ref.src_index))
    return frozenset(labels)


def _l1_reasons(groups: Iterable[FusionGroup], times: Mapping[str, int] | None) -> dict[str, str]:
    """Why each op of an L1 fusion group other than the compared ones gets no golden.

    ``times`` are dump timestamps by op name; without them every op counts as dumped, in op-id
    order (the order ATC schedules them).
    """
    reasons: dict[str, str] = {}
    for group in groups:
        if group.relation is not Relation.L1_FUSION:
            continue
        stamps = {op.name: op.id for op in group.ops} if times is None else times
        picked = l1_ops_to_compare(group, {op.name: stamps[op.name] for op in group.ops if op.name in stamps})
        where = ", ".join(op.name for op in picked) or "none of its ops was dumped"
        for op in group.ops:
            if op not in picked:
                reasons[op.name] = (
                    f"inside L1 fusion group {group.key}: its tensors stay partial in L1 memory; "
                    f"the group is compared at {where}"
                )
    return reasons


class Matcher:
    """Maps the tensors of NPU ops to golden tensors through one (possibly merged) rule file."""

    def __init__(
        self,
        rules: FusionRules,
        *,
        quant: QuantFilter | None = None,
        rename_lone_ops: bool = True,
        paired_ops: Iterable[str] = (),
        close_rules: FusionRules | None = None,
    ) -> None:
        """Index ``rules`` for lookups.

        ``quant`` defaults to :func:`quant_filter` of ``rules``; ``QuantFilter.none()`` disables it.
        ``rename_lone_ops=False`` is for merged rules: the merges apply the rename rule to their
        inputs, and applying it again would re-name outputs a merge deliberately left without origin.
        ``paired_ops`` are compared with the op of the same name on the golden side (``-cfr``).
        ``close_rules`` (``-cfr``) is the fusion-off build's rule file, whose dump is the golden side.
        """
        groups = fusion_groups(rules)
        self.rules = _fill_rename_nodes(rules, groups) if rename_lone_ops else rules
        # Renamed ops are new records, which the groups must hold; without renames they stand.
        self.groups = groups if self.rules is rules else fusion_groups(self.rules)
        self.quant = quant_filter(self.rules) if quant is None else quant
        self._paired = frozenset(paired_ops)
        self._close = close_rules
        self._consumer_labelled = _consumer_labels(self.rules)
        # With -cfr the golden side is a dump tree keyed by fusion-off op names, not npy stems.
        self.shared_golden_names = {} if close_rules is not None else shared_golden_names(self.rules)
        self._index(_l1_reasons(self.groups, None))

    def _index(self, l1_reasons: Mapping[str, str]) -> None:
        entries: dict[str, OpEntry] = {}
        for group in self.groups:
            several = len(group.ops) > 1
            npu_names = ",".join(op.name for op in group.ops)
            for op in group.ops:
                entries[op.name] = OpEntry(
                    op=op,
                    group=group,
                    npu_dump=npu_names if several else op.name,
                    ground_truth=",".join(group.original_names if several else _originals(op)),
                    skip_reason=self.quant.skipped.get(op.name)
                    or self._inner_node_reason(op, group)
                    or l1_reasons.get(op.name),
                )
        self._entries = entries
        self._order = tuple(entries[op.name] for op in _ordered(self.rules))

    @classmethod
    def with_quant_rules(cls, rules: FusionRules, quant_rules: FusionRules) -> Matcher:
        """``-fr`` + ``-qfr``: map through the quant json; filter on the quantised names before the merge."""
        return cls(merge_quant_fusion(rules, quant_rules), quant=quant_filter(rules), rename_lone_ops=False)

    @classmethod
    def with_close_rules(cls, open_rules: FusionRules, close_rules: FusionRules) -> Matcher:
        """``-fr`` + ``-cfr``: NPU (fusion on) against an NPU dump of the fusion-off build.

        A Cast/TransData GE inserted in both builds, converting the same framework tensor under
        the same name, is compared with its twin rather than with the producer's tensor.
        """
        merged = merge_close_fusion(open_rules, close_rules)
        return cls(
            merged,
            quant=quant_filter(open_rules),
            rename_lone_ops=False,
            paired_ops=_twin_conversions(open_rules, close_rules),
            close_rules=close_rules,
        )

    def with_dump_times(self, times: Mapping[str, int]) -> Matcher:
        """This matcher for one dump: L1 fusion groups compared at the ops really dumped first/last.

        ``times`` maps op names (as dump files spell them) to their dump timestamps.
        """
        if not self.has_l1_fusion:
            return self
        by_op: dict[str, int] = {}
        for name, stamp in times.items():
            try:
                entry = self.entry(name)
            except MatchError:
                continue  # an ambiguous name gets its reason row from refs_for
            if entry is not None:
                by_op[entry.name] = min(stamp, by_op.get(entry.name, stamp))
        bound = copy.copy(self)
        bound._index(_l1_reasons(self.groups, by_op))
        return bound

    @functools.cached_property
    def has_l1_fusion(self) -> bool:
        """Whether any fusion group is an L1 fusion group (``with_dump_times`` changes nothing else)."""
        return any(g.relation is Relation.L1_FUSION for g in self.groups)

    def depends_on_dump_times(self, op_name: str) -> bool:
        """Whether ``op_name``'s rows change with other files' dump times (an L1 fusion member)."""
        try:
            entry = self.entry(op_name)
        except MatchError:
            return False
        if entry is None:
            return False
        return any(
            g.relation is Relation.L1_FUSION and any(op.name == entry.name for op in g.ops)
            for g in self.groups
        )

    @staticmethod
    def _inner_node_reason(op: RuleOp, group: FusionGroup) -> str | None:
        # Inside a fused kernel split over several ops, the middle ops' outputs exist nowhere in
        # the framework model (no origin name on any output).
        if len(group.ops) < 2 or group.relation is Relation.L1_FUSION or not op.is_multiop:
            return None
        if any(d.origin_name for d in op.outputs):
            return None
        return f"inner node of the multi-op fusion {','.join(o.name for o in group.ops)}: no golden tensor"

    def ops_in_order(self) -> tuple[OpEntry, ...]:
        """Every NPU op of the rule file, by op id (execution order)."""
        return self._order

    def entry(self, op_name: str) -> OpEntry | None:
        """The op by real name or by the sanitised name a dump file carries."""
        found = self._entries.get(op_name)
        if found is None:
            op = self.rules.by_dump_name(op_name)
            found = self._entries.get(op.name) if op is not None else None
        return found

    def ground_truth(self, op_name: str) -> str:
        entry = self.entry(op_name)
        return entry.ground_truth if entry is not None else ""

    def refs_for(self, op_name: str, io: TensorIO, index: int) -> GoldenRef | NoGolden:
        """The golden tensor for ``op_name``'s ``io`` tensor ``index``, or why there is none."""
        found = self._ref(op_name, io, index)
        if self.shared_golden_names and isinstance(found, GoldenRef) and found.io == "output":
            stem = sanitize_golden_name(found.op_name)
            names = self.shared_golden_names.get(stem)
            if names is not None:  # either op's golden file may be the one found: none is used
                return NoGolden(shared_golden_name_reason(stem, names))
        return found

    def _ref(self, op_name: str, io: TensorIO, index: int) -> GoldenRef | NoGolden:
        _check_io(io, index)
        try:
            entry = self.entry(op_name)
        except MatchError as exc:
            return NoGolden(str(exc))
        if entry is None:
            return NoGolden(f"op {op_name!r} is not in the fusion rule file {self.rules.path}")
        if entry.name in self._paired:
            return identity_ref(entry.name, io, index)
        if entry.skip_reason:
            return NoGolden(entry.skip_reason)
        if io == "input":
            return self._input_ref(entry.op, index)
        reason = self.quant.output_reason(entry.op.name, index)
        if reason:
            return NoGolden(reason)
        if _is_inserted_copy(entry.op):
            return self._copied_output_ref(entry.op, index)
        return self._output_ref(entry.op, index)

    def _input_ref(self, op: RuleOp, j: int) -> GoldenRef | NoGolden:
        data = op.data_inputs
        if j >= len(data):
            return NoGolden(
                f"input {j} is not in the fusion rule file: {op.name} has {len(data)} data inputs there"
            )
        found = self._trace(data[j], f"input {j}")
        if isinstance(found, GoldenRef):
            return self._close_input(op, j, found) or found
        return found

    def _close_input(self, op: RuleOp, j: int, traced: GoldenRef) -> GoldenRef | None:
        """``-cfr``: input ``j`` of ``op``'s counterpart when both come from one graph input.

        A Data op has no task, so neither build dumps the graph input itself; the fusion-off op
        that reads the same graph input at the same position holds the tensor in its input dump.
        """
        if self._close is None:
            return None
        source = _graph_input(self.rules, op.data_inputs[j])
        if source is None:
            return None
        # After the merge, an op's original names are the fusion-off ops it stands for.
        for name in _unique((*op.original_op_names, op.name)):
            twin = self._close.op(name)
            if twin is None or j >= len(twin.data_inputs):
                continue
            if _graph_input(self._close, twin.data_inputs[j]) == source:
                return replace(traced, op_name=twin.name, index=j, io="input")
        return None

    def _copied_output_ref(self, op: RuleOp, k: int) -> GoldenRef | NoGolden:
        # Its output desc names the consumer's origin; the tensor is its producer's (index 1:1).
        data = op.data_inputs
        if k >= len(data):
            return NoGolden(
                f"output {k} of {op.type} {op.name!r} (made by GE) has no matching input "
                "in the fusion rule file to trace it to its producer"
            )
        return self._trace(data[k], f"output {k} (input {k} of {op.type} {op.name!r}, made by GE)")

    def _trace(self, ref: InputRef, what: str) -> GoldenRef | NoGolden:
        """The golden tensor of data input ``ref``, stepping over Cast/TransData producers."""
        skipped: list[str] = []
        while True:
            reason = self.quant.input_reason(ref)
            if reason:
                return NoGolden(f"{what}: {reason}")
            producer = self.rules.op(ref.src_name)
            if producer is None or producer.type == "Data":
                # A graph input: the golden run names it like the NPU does.
                desc = (
                    producer.outputs[ref.src_index]
                    if producer and ref.src_index < len(producer.outputs)
                    else None
                )
                return GoldenRef(
                    ref.src_name,
                    ref.src_index,
                    origin_format=desc.origin_format if desc else "",
                    origin_shape=desc.origin_shape if desc else (),
                    producer=ref.src_name,
                    skipped=tuple(skipped),
                )
            if producer.type not in SKIPPED_PRODUCER_TYPES:
                break
            upstream = producer.data_inputs
            if producer.name in skipped or ref.src_index >= len(upstream):
                return NoGolden(
                    f"{what}: cannot trace through {producer.type} {producer.name!r} "
                    f"(output {ref.src_index} has no matching input in the fusion rule file)"
                )
            skipped.append(producer.name)
            ref = upstream[ref.src_index]
        found = self._output_ref(producer, ref.src_index)
        if isinstance(found, NoGolden):
            return NoGolden(f"{what}: {found.reason}")  # the reason names the producer's output
        return replace(found, skipped=tuple(skipped))

    def _output_ref(self, op: RuleOp, k: int) -> GoldenRef | NoGolden:
        if not op.outputs:
            return NoGolden(f"{op.name}:output:{k}: {op.name} has no output_desc in the fusion rule file")
        k = k if k < len(op.outputs) else 0  # msaccucmp clamps, so do we
        desc = op.outputs[k]
        if not desc.origin_name:
            return NoGolden(f"{op.name}:output:{k} has no framework counterpart (made by GE or fused away)")
        if (op.name, k) in self._consumer_labelled:
            return NoGolden(
                f"{op.name}:output:{k} is a constant GE folded; its label {desc.origin_name!r} "
                "names the op reading it, not this tensor, so there is no golden tensor"
            )
        return GoldenRef(
            desc.origin_name,
            desc.origin_output_index,
            origin_format=desc.origin_format,
            origin_shape=desc.origin_shape,
            producer=op.name,
        )


def shared_golden_names(rules: FusionRules) -> dict[str, tuple[str, ...]]:
    """Golden file stems that several framework ops of ``rules`` sanitise to, with those ops.

    Golden npy files are named by the op name with '/' and '.' made '_' (formats.md §2.4), so
    ``/x/sig`` and ``_x_sig`` write ``_x_sig.0.{ts}.npy`` both: nothing tells which file is whose.
    """
    names: dict[str, None] = {}
    for op in rules.ops:
        if op.type == "Data":  # a graph input's golden is named after it
            names.setdefault(op.name)
        names.update(dict.fromkeys(r.src_name for r in op.data_inputs if rules.op(r.src_name) is None))
        names.update(dict.fromkeys(n for n in op.original_op_names if n))
        names.update(dict.fromkeys(d.origin_name for d in op.outputs if d.origin_name))
    by_stem: dict[str, list[str]] = {}
    for name in names:
        by_stem.setdefault(sanitize_golden_name(name), []).append(name)
    return {stem: tuple(found) for stem, found in by_stem.items() if len(found) > 1}


def shared_golden_name_reason(stem: str, names: Sequence[str]) -> str:
    """Why a tensor whose golden file stem several ops share is not compared."""
    return (
        f"ops {joined(names)} share the golden file name {stem}.*.npy: which file is whose cannot be "
        "told, so neither is compared"
    )


def _graph_input(rules: FusionRules, ref: InputRef) -> tuple[str, int] | None:
    """The graph input (a Data op, or an op the file lacks) data input ``ref`` is, through any
    Cast/TransData producers, as (op name, output index); None when a computing op made it."""
    seen: set[str] = set()
    while True:
        producer = rules.op(ref.src_name)
        if producer is None or producer.type == "Data":
            return ref.src_name, ref.src_index
        if producer.type not in SKIPPED_PRODUCER_TYPES or producer.name in seen:
            return None
        upstream = producer.data_inputs
        if ref.src_index >= len(upstream):
            return None
        seen.add(producer.name)
        ref = upstream[ref.src_index]


def _twin_conversions(open_rules: FusionRules, close_rules: FusionRules) -> frozenset[str]:
    """GE-inserted Cast/TransData ops of both builds with one name, type and framework source."""
    opened = Matcher(open_rules, quant=QuantFilter.none())
    closed = Matcher(close_rules, quant=QuantFilter.none())

    def source(matcher: Matcher, name: str) -> tuple[str, int] | None:
        ref = matcher.refs_for(name, "output", 0)
        return (ref.op_name, ref.index) if isinstance(ref, GoldenRef) else None

    twins = set()
    for op in opened.rules.ops:
        twin = closed.rules.op(op.name)
        if not _is_inserted_copy(op) or twin is None or twin.type != op.type:
            continue
        found = source(opened, op.name)
        if found is not None and found == source(closed, op.name):
            twins.add(op.name)
    return frozenset(twins)


# ---------------------------------------------------------------------------------------------
# -cfr and -qfr merges (§5.4). Both return a rule file for the NPU model being checked.


def merge_close_fusion(open_rules: FusionRules, close_rules: FusionRules) -> FusionRules:
    """Re-point the fusion-on model's origins to the fusion-off model's ops (NPU vs NPU, ``-cfr``).

    Each original name becomes the close-fusion op that owns it (the last by id, which holds its
    final output); each output origin ``(name, i)`` becomes ``(close op, k)`` where that close
    op's output k has the same origin. The golden side is then a dump tree keyed by
    :attr:`GoldenRef.dump_key`. Match with :meth:`Matcher.with_close_rules`.
    """
    opened, closed = _fill_rename_nodes(open_rules), _fill_rename_nodes(close_rules)
    owner: dict[str, RuleOp] = {}
    for op in _ordered(closed):
        for name in _originals(op):
            owner[name] = op
    group_of = {op.name: group for group in fusion_groups(closed) for op in group.ops}

    def repoint(desc: TensorDesc) -> TensorDesc:
        close_op = owner.get(desc.origin_name) if desc.origin_name else None
        if close_op is None:
            return desc
        # The owner first, then the rest of its group: a split op may emit the output elsewhere.
        candidates = (close_op, *(o for o in group_of[close_op.name].ops if o is not close_op))
        for candidate in candidates:
            for k, cd in enumerate(candidate.outputs):
                if (cd.origin_name, cd.origin_output_index) == (desc.origin_name, desc.origin_output_index):
                    return replace(desc, origin_name=candidate.name, origin_output_index=k)
        return replace(desc, origin_name=close_op.name)

    merged = []
    for op in opened.ops:
        if op.is_ge_inserted:
            names = op.original_op_names
        else:
            names = _unique(owner[n].name for n in op.original_op_names if n in owner) or ("",)
        merged.append(replace(op, original_op_names=names, outputs=tuple(repoint(d) for d in op.outputs)))
    return opened.with_ops(merged)


def merge_quant_fusion(rules: FusionRules, quant_rules: FusionRules) -> FusionRules:
    """Map a quantised offline model back to the float model through the AMCT quant json (``-qfr``).

    Original names that are ops of the quant json are replaced by those ops' own originals (the
    float layers, e.g. conv+bn+scale); an output whose origin is a quant-json op takes that op's
    output origin. Device dtype/format/shape stay the offline model's: they describe the NPU
    tensor. Outputs whose origin the quant json does not know keep it, so positions never shift.
    Match with :meth:`Matcher.with_quant_rules`.
    """
    offline, quant = _fill_rename_nodes(rules), _fill_rename_nodes(quant_rules)
    group_of = {op.name: group for group in fusion_groups(quant) for op in group.ops}

    def through_quant(desc: TensorDesc) -> TensorDesc:
        q_op = quant.op(desc.origin_name) if desc.origin_name else None
        if q_op is None:
            return desc
        if desc.origin_output_index >= len(q_op.outputs):
            return replace(desc, origin_name="")
        qd = q_op.outputs[desc.origin_output_index]
        # The offline file's origin layout wins when it has one: it is what the NPU tensor holds.
        keep = bool(desc.origin_format)
        return replace(
            desc,
            origin_name=qd.origin_name,
            origin_output_index=qd.origin_output_index,
            origin_format=desc.origin_format if keep else qd.origin_format,
            origin_shape=desc.origin_shape if keep else qd.origin_shape,
            origin_dtype=qd.origin_dtype or desc.origin_dtype,
        )

    merged = []
    for op in offline.ops:
        floats = _unique(
            n
            for name in op.original_op_names
            if name in group_of
            for q in group_of[name].ops
            for n in _originals(q)
        )
        merged.append(
            replace(
                op,
                original_op_names=floats or op.original_op_names,
                outputs=tuple(through_quant(d) for d in op.outputs),
            )
        )
    return offline.with_ops(merged)
