"""Which tensor each GE dump tensor is compared with: the TorchAir matcher (formats.md §7.3, metrics.md §2).

GE against FX: a GE op's output descs carry ``_fx_tensor_name`` (``add_1-aten.add.Tensor.OUTPUT.0``);
without the ``.OUTPUT.{k}`` it names the FX op, whose ``INPUT.k`` / ``OUTPUT.k`` npy files are the
bench side of the GE op's input k / output k. Ops are looked up in the optimized graph dump (what
ran), then in the original one (also when the optimized op lost its ``_fx_tensor_name``).

* A fused op (type ``AutomaticBufferFusionOp``) is named by the concatenation of its members'
  names; it is split by the longest known name first (the ops of the original graph dump),
  backing off to a shorter one when the rest does not split. Its inputs are compared with its
  first member's FX inputs, its outputs with its last member's FX outputs.
* A ``Cast`` / ``TransData`` without an FX tensor is compared with itself: output k against input
  k (one pair per output; its inputs are the bench side of those pairs, not pairs of their own).

GE fusion on against off: the op of the same name in the fusion-off dump, tensor for tensor; a
fused op through its members (split over the fusion-off dump's ops and the original graph).

Every GE tensor gets a ``TensorPair``: with loaders, with statistics (stats dumps), or with the
reason it has no counterpart. A GE file that cannot be read gets one pair with the reason. The
matcher is built once per run, holds only names and paths (it pickles into worker processes),
and reads nothing but the one dump file it is asked about.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import numpy as np

from dumpcmp.errors import DumpFormatError, FormatError, MatchError
from dumpcmp.host.torchair.fx_golden import FxTensorKey
from dumpcmp.host.torchair.ge_graph import FX_TENSOR_ATTR, GeOp, parse_ge_graph
from dumpcmp.host.torchair.layout import FUSED_OP_TYPE, FxDump, GraphFiles, TorchairInputs
from dumpcmp.host.torchair.records import TensorLoader, TensorPair, TensorStats, TorchairShardKey
from dumpcmp.host.torchair.reduced_stats import ReducedStats
from dumpcmp.proto.codec import DumpTensor, TensorKind, read_dump
from dumpcmp.proto.npy import load_npy
from dumpcmp.proto.stats_csv import StatsRow, read_stats_csv
from dumpcmp.proto.walker import DumpEntry

__all__ = ["FUSED_OP_TYPE", "SELF_COMPARED_TYPES", "RankGraph", "TorchairMatcher", "split_fused"]

SELF_COMPARED_TYPES = frozenset({"Cast", "TransData"})
_IO = ("input", "output")


def split_fused(name: str, known: frozenset[str]) -> tuple[str, ...] | None:
    """``name`` as a concatenation of names in ``known``, longest first at each step; None if none.

    A name that is a prefix of a longer one ("add" of "add_1") is tried only when the longer one
    leaves a rest that does not split.
    """
    lengths = sorted({len(k) for k in known if k}, reverse=True)
    dead_ends: set[int] = set()

    def split_from(start: int) -> tuple[str, ...] | None:
        if start == len(name):
            return ()
        if start in dead_ends:
            return None
        for length in lengths:
            piece = name[start : start + length]
            if len(piece) == length and piece in known:
                rest = split_from(start + length)
                if rest is not None:
                    return (piece, *rest)
        dead_ends.add(start)
        return None

    return split_from(0)


@dataclass(frozen=True, slots=True)
class RankGraph:
    """One rank's GE graph dumps, ops keyed by the name dump files give them."""

    optimized: Mapping[str, GeOp] = field(default_factory=dict)
    original: Mapping[str, GeOp] = field(default_factory=dict)
    members: frozenset[str] = frozenset()  # what fused names are made of: the ops before fusion

    @classmethod
    def parse(cls, files: GraphFiles) -> RankGraph:
        original = _ops(files.original)
        return cls(_ops(files.optimized), original, frozenset(original))

    def op(self, dump_name: str) -> GeOp | None:
        """The op as it ran; its FX link from the original graph when the optimized one lost it."""
        ran, before = self.optimized.get(dump_name), self.original.get(dump_name)
        if ran is None or (not ran.fx_key and before is not None and before.fx_key):
            return before
        return ran

    def is_fused(self, entry: DumpEntry) -> bool:
        op = self.optimized.get(entry.name.op_name)
        return entry.name.op_type == FUSED_OP_TYPE or (op is not None and op.type == FUSED_OP_TYPE)


_NO_GRAPH = RankGraph()


def _ops(paths: Sequence[Path]) -> dict[str, GeOp]:
    return {op.dump_name: op for path in paths for op in parse_ge_graph(path)}


@dataclass(frozen=True, slots=True)
class _Tensor:
    """One side of a pair: which tensor, its Data Name label, and a loader or its statistics."""

    label: str
    io: str
    index: int
    load: TensorLoader | None = None
    stats: TensorStats | None = None


@dataclass(frozen=True, slots=True)
class _GeFile:
    """A GE file read: its op's raw name and its tensors (data or statistics)."""

    op_name: str
    tensors: tuple[_Tensor, ...]

    def tensor(self, io: str, index: int) -> _Tensor | None:
        return next((t for t in self.tensors if t.io == io and t.index == index), None)


@dataclass(frozen=True)
class TorchairMatcher:
    """GE tensors → ``TensorPair``s for one run; see the module doc for the rules."""

    graphs: Mapping[int, RankGraph]
    fx: Mapping[TorchairShardKey, Mapping[FxTensorKey, Path]] | None = None  # GE vs FX
    fusion_off: Mapping[TorchairShardKey, Mapping[str, DumpEntry]] | None = None  # GE vs GE
    # Files ``dumpcmp reduce`` replaced by summaries (either side), by shard: statistics, no data.
    reduced: Mapping[TorchairShardKey, Mapping[Path, ReducedStats]] = field(default_factory=dict)
    # Ranks whose graph dump is malformed, with the parser's file:line:column: their rows say it.
    broken: Mapping[int, str] = field(default_factory=dict)

    @classmethod
    def build(cls, inputs: TorchairInputs) -> TorchairMatcher:
        """Parse the graph dumps once; a malformed one fails its rank's rows only, with its reason."""
        graphs: dict[int, RankGraph] = {}
        broken: dict[int, str] = {}
        for rank, files in inputs.target.graphs.items():
            try:
                graphs[rank] = RankGraph.parse(files)
            except FormatError as exc:
                broken[rank] = f"rank {rank}'s GE graph dump is unreadable: {exc}"
        bench = inputs.bench
        reduced = _reduced_by_shard(inputs)
        if isinstance(bench, FxDump):
            if not graphs and not broken:
                raise MatchError(
                    f"no GE graph dump in {inputs.target.root} (dynamo_original_*.txt, "
                    'dynamo_optimized_*.txt; dumped with debug.graph_dump.type="txt"): '
                    "GE ops cannot be linked to FX tensors without it"
                )
            return cls(graphs, fx=bench.shards, reduced=reduced, broken=broken)
        off = {key: _by_op_name(entries) for key, entries in bench.shards.items()}
        return cls(graphs, fusion_off=off, reduced=reduced, broken=broken)

    def for_shard(self, shard: TorchairShardKey) -> TorchairMatcher:
        """The part of this matcher one shard needs (smaller to send to a worker)."""
        graphs = {k: g for k, g in self.graphs.items() if k == shard.rank}
        fx = None if self.fx is None else {k: v for k, v in self.fx.items() if k == shard}
        off = None if self.fusion_off is None else {k: v for k, v in self.fusion_off.items() if k == shard}
        reduced = {k: v for k, v in self.reduced.items() if k == shard}
        broken = {k: v for k, v in self.broken.items() if k == shard.rank}
        return TorchairMatcher(graphs, fx, off, reduced, broken)

    # ------------------------------------------------------------------ pairs

    def pairs(self, entry: DumpEntry, shard: TorchairShardKey) -> list[TensorPair]:
        """One pair per tensor of the GE dump file ``entry`` of ``shard`` (one pair if unreadable)."""
        reduced = self.reduced.get(shard, {})
        summary = reduced.get(entry.path)
        try:
            target = _read(entry) if summary is None else _read_reduced(entry, summary)
        except (DumpFormatError, FormatError) as exc:
            return [_unreadable(entry, exc)]
        graph = self.graphs.get(shard.rank, _NO_GRAPH)
        broken = self.broken.get(shard.rank)
        ops = (self.fusion_off or {}).get(shard)
        if broken and (ops is None or entry.name.op_name not in ops):  # only the graph links it
            return [_pair(target, t, broken) for t in target.tensors]
        if self.fx is not None:
            if _self_compared(entry, graph):
                return [_self_pair(entry, target, t) for t in target.tensors if t.io == "output"]
            if graph is _NO_GRAPH:  # one reason for every op, fused or not
                return [_pair(target, t, f"no GE graph dump for rank {shard.rank}") for t in target.tensors]
            sources = _sources(
                entry, graph, lambda: graph.members, f"rank {shard.rank}'s original graph dump"
            )
            tensors = self.fx.get(shard)
            return [
                _pair(target, t, _fx_bench(entry, shard, graph, sources, tensors, reduced, t))
                for t in target.tensors
            ]
        if ops is None:
            reason = f"no fusion-off GE dump for rank {shard.rank} token {shard.token}"
            return [_pair(target, t, reason) for t in target.tensors]
        sources = (
            {io: entry.name.op_name for io in _IO}
            if entry.name.op_name in ops
            else _sources(entry, graph, lambda: frozenset(ops) | graph.members, "the fusion-off GE dump")
        )
        return [
            _pair(target, t, _fusion_off_bench(entry, shard, sources, ops, reduced, t))
            for t in target.tensors
        ]


def _sources(
    entry: DumpEntry, graph: RankGraph, known: Callable[[], frozenset[str]], where: str
) -> Mapping[str, str] | str:
    """Whose tensors ``entry``'s inputs and outputs are compared with: its own op's, or a fused op's
    first and last member's (its name split over ``known``, the op names ``where`` says); or why
    there are none."""
    name = entry.name.op_name
    if not graph.is_fused(entry):
        return {io: name for io in _IO}
    members = split_fused(name, known())  # made only for fused ops: it is the size of the graph
    if not members:
        return f"fused GE op {name} does not split into ops of {where}"
    return {"input": members[0], "output": members[-1]}


def _pair(target: _GeFile, tensor: _Tensor, bench: _Tensor | str) -> TensorPair:
    found = bench if isinstance(bench, _Tensor) else None
    return TensorPair(
        api_name=f"{target.op_name}.{tensor.io}.{tensor.index}",
        io=tensor.io,
        index=tensor.index,
        npu_label=tensor.label,
        bench_label=found.label if found is not None else "",
        load_target=tensor.load,
        load_bench=found.load if found is not None else None,
        target_stats=tensor.stats,
        bench_stats=found.stats if found is not None else None,
        reason=bench if isinstance(bench, str) else "",
    )


# --------------------------------------------------------------------------- GE vs FX


def _fx_bench(
    entry: DumpEntry,
    shard: TorchairShardKey,
    graph: RankGraph,
    sources: Mapping[str, str] | str,
    tensors: Mapping[FxTensorKey, Path] | None,
    reduced: Mapping[Path, ReducedStats],
    tensor: _Tensor,
) -> _Tensor | str:
    if isinstance(sources, str):
        return sources
    name, io, index = entry.name.op_name, tensor.io, tensor.index
    source = graph.op(sources[io])
    if source is None:
        return f"GE op {sources[io]} is not in the GE graph dump of rank {shard.rank}"
    if not source.fx_key:
        via = "" if sources[io] == name else f" (through its member {source.name})"
        return f"no FX tensor for GE op {name} {io} {index}{via} (no {FX_TENSOR_ATTR})"
    if tensors is None:
        return f"no FX dump for rank {shard.rank} token {shard.token}"
    wanted = FxTensorKey(source.fx_key, io, index)
    path = tensors.get(wanted)
    if path is None:
        return f"FX tensor {wanted.label} not in the FX dump of rank {shard.rank} token {shard.token}"
    summary = reduced.get(path)
    if summary is not None:
        return summary.damaged or _Tensor(str(path), io, index, stats=summary.tensor)
    return _Tensor(str(path), io, index, load=partial(_load_npy, path))


def _self_compared(entry: DumpEntry, graph: RankGraph) -> bool:
    """A Cast / TransData GE inserted: no FX tensor of its own."""
    op = graph.op(entry.name.op_name)
    op_type = op.type if op is not None else entry.name.op_type
    return op_type in SELF_COMPARED_TYPES and (op is None or not op.fx_key)


def _self_pair(entry: DumpEntry, target: _GeFile, output: _Tensor) -> TensorPair:
    source = target.tensor("input", output.index)
    bench: _Tensor | str = (
        replace(source, label=f"{entry.path} input {output.index}")
        if source is not None
        else f"{entry.name.op_type} op {target.op_name} has no input {output.index} to compare output "
        f"{output.index} with (it has no FX tensor)"
    )
    return _pair(target, output, bench)


# --------------------------------------------------------------------------- GE fusion on vs off


def _fusion_off_bench(
    entry: DumpEntry,
    shard: TorchairShardKey,
    sources: Mapping[str, str] | str,
    ops: Mapping[str, DumpEntry],
    reduced: Mapping[Path, ReducedStats],
    tensor: _Tensor,
) -> _Tensor | str:
    if isinstance(sources, str):
        return sources
    name, io = entry.name.op_name, tensor.io
    found = ops.get(sources[io])
    if found is not None:
        return _ge_bench(found, io, tensor.index, reduced.get(found.path))
    if sources[io] != name:
        return f"{sources[io]}, a member of fused GE op {name}, is not in the fusion-off GE dump"
    return f"GE op {name} is not in the fusion-off GE dump of rank {shard.rank} token {shard.token}"


def _by_op_name(entries: Sequence[DumpEntry]) -> dict[str, DumpEntry]:
    """A fusion-off token's files by op name; a tensor dump wins over a stats dump of the same op."""
    ops: dict[str, DumpEntry] = {}
    for entry in entries:
        known = ops.get(entry.name.op_name)
        if known is None or known.is_stats:
            ops[entry.name.op_name] = entry
    return ops


def _ge_bench(entry: DumpEntry, io: str, index: int, summary: ReducedStats | None) -> _Tensor | str:
    label = f"{entry.path} {io} {index}"
    if summary is not None:
        if summary.damaged:
            return summary.damaged
        stats = summary.get(io, index)
        if stats is None:
            return f"fusion-off GE dump {entry.path} (reduced) has no {io} {index}"
        return _Tensor(label, io, index, stats=stats)
    if not entry.is_stats:
        return _Tensor(label, io, index, load=partial(_load_dump_tensor, entry.path, io, index))
    try:
        rows = read_stats_csv(entry.path)
    except DumpFormatError as exc:
        return f"unreadable fusion-off stats dump: {exc}"
    row = next((r for r in rows if r.kind == io and r.index == index), None)
    if row is None:
        return f"fusion-off stats dump {entry.path} has no {io} {index}"
    return _Tensor(label, io, index, stats=_stats(row))


# --------------------------------------------------------------------------- reading


def _read(entry: DumpEntry) -> _GeFile:
    """The tensors of a GE file; raises DumpFormatError / FormatError for an unreadable one."""
    if entry.is_stats:
        rows = read_stats_csv(entry.path)
        label = str(entry.path)
        targets = tuple(_Tensor(label, r.kind, r.index, stats=_stats(r)) for r in rows if r.kind in _IO)
        return _GeFile(entry.name.op_name, targets)
    dump = read_dump(entry.path)
    tensors = [*dump.inputs, *dump.outputs]
    return _GeFile(
        dump.op_name or entry.name.op_name,
        tuple(_Tensor(str(entry.path), t.kind.value, t.index, load=partial(_logical, t)) for t in tensors),
    )


def _read_reduced(entry: DumpEntry, summary: ReducedStats) -> _GeFile:
    """A GE file ``dumpcmp reduce`` replaced: its tensors' statistics as the summary kept them."""
    if summary.damaged:
        raise FormatError(summary.damaged)
    label = str(entry.path)
    tensors = tuple(_Tensor(label, io, index, stats=stats) for io, index, stats in summary.tensors)
    return _GeFile(entry.name.op_name, tensors)


def _reduced_by_shard(inputs: TorchairInputs) -> dict[TorchairShardKey, dict[Path, ReducedStats]]:
    """Each shard's reduced files of both sides (a worker gets only its shard's)."""
    found: dict[TorchairShardKey, dict[Path, ReducedStats]] = {}
    target, bench = inputs.target, inputs.bench
    for key, entries in target.shards.items():
        for entry in entries:
            if entry.path in target.reduced:
                found.setdefault(key, {})[entry.path] = target.reduced[entry.path]
    bench_paths = (
        {key: tensors.values() for key, tensors in bench.shards.items()}
        if isinstance(bench, FxDump)
        else {key: [e.path for e in entries] for key, entries in bench.shards.items()}
    )
    for key, paths in bench_paths.items():
        for path in paths:
            if path in bench.reduced:
                found.setdefault(key, {})[path] = bench.reduced[path]
    return found


def _unreadable(entry: DumpEntry, error: Exception) -> TensorPair:
    what = "stats dump" if entry.is_stats else "dump file"
    return TensorPair(
        api_name=f"{entry.name.op_name}.*",
        io="output",
        index=0,
        npu_label=str(entry.path),
        bench_label="",
        reason=f"corrupt GE {what}: {error}",
    )


def _stats(row: StatsRow) -> TensorStats:
    return TensorStats(
        dtype=row.data_type,
        shape=row.shape or (),
        max=row.stats.get("Max Value"),
        min=row.stats.get("Min Value"),
        mean=row.stats.get("Avg Value"),
        l2norm=row.stats.get("l2norm"),
    )


def _widened(array: np.ndarray) -> np.ndarray:
    """bf16 / fp8 / other ml_dtypes types as float32, which holds each of their values exactly."""
    return array.astype(np.float32) if array.dtype.isbuiltin == 2 else array


def _logical(tensor: DumpTensor) -> np.ndarray:
    return _widened(tensor.logical())


def _load_npy(path: Path) -> np.ndarray:
    return _widened(load_npy(path))


def _load_dump_tensor(path: Path, io: str, index: int) -> np.ndarray:
    tensors = read_dump(path).tensors(TensorKind(io))
    if index >= len(tensors):
        raise FormatError(f"{path}: has no {io} {index} (it holds {len(tensors)})")
    return _logical(tensors[index])
