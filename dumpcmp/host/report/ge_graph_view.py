"""A TorchAir run's GE graph dumps as the report's :class:`OpGraph` (formats.md §7.1, §7.3).

The nodes are the ops of the optimized graph (``dynamo_optimized_*``): what ran and was dumped,
GE's inserted Cast / TransData included. Edges come from each op's data inputs
(``"{producer}:{k}"``; ``k`` = -1 is a control edge and is left out). A fused op
(``AutomaticBufferFusionOp``) is linked to its members: its name split over the ops of the
original graph (``dynamo_original_*``) the way the comparison's matcher splits it.

Ops that are never dumped and compute nothing are left out: graph inputs (``Data``: in TorchAir
every weight is one, hundreds in an LLM), constants, and the ``NetOutput`` sink. They would crowd
the first layer of the drawing with grey nodes that no row of the table can colour.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from dumpcmp.host.report.graph import OpGraph
from dumpcmp.host.torchair.ge_graph import GeOp, parse_ge_graph
from dumpcmp.host.torchair.layout import GraphFiles
from dumpcmp.host.torchair.matcher import FUSED_OP_TYPE, split_fused

__all__ = ["NOT_DRAWN_TYPES", "ge_graph_beside", "graph_from_ge", "load_ge_graph"]

NOT_DRAWN_TYPES = frozenset({"Data", "RefData", "Const", "Constant", "FileConstant", "Variable", "NetOutput"})
# dynamo_{original|optimized}_{graph}_rank_{r}_pid_{pid}_ts_{t}.txt: the two dumps of one graph of
# one process share everything but the kind and the time stamp.
_PAIR_NAME = re.compile(r"^dynamo_(?P<kind>original|optimized)_(?P<key>.*?)(?:_ts_[0-9]+)?\.txt\Z")


def graph_from_ge(optimized: Sequence[GeOp], original: Sequence[GeOp] = (), source: str = "") -> OpGraph:
    """The drawing of ``optimized``'s ops; fused ones linked to the ``original`` ops they are made of."""
    ops: dict[str, GeOp] = {}
    for op in optimized:
        if op.type not in NOT_DRAWN_TYPES:
            ops.setdefault(op.name, op)  # sub-graphs may repeat a name; the first one stands
    known = frozenset(op.name for op in original)
    edges = {
        (producer, op.name)
        for op in ops.values()
        for producer in _data_producers(op)
        if producer in ops and producer != op.name
    }
    originals = {
        name: members
        for name, op in ops.items()
        if op.type == FUSED_OP_TYPE and (members := split_fused(name, known))
    }
    return OpGraph(
        nodes=tuple(ops),
        types={name: op.type for name, op in ops.items()},
        edges=tuple(sorted(edges)),
        originals=originals,
        source=source,
    )


def _data_producers(op: GeOp) -> list[str]:
    """The ops ``op`` reads data from: ``"{producer}:{k}"`` (names may hold ':' themselves)."""
    producers = []
    for source in op.inputs:
        name, sep, index = source.rpartition(":")
        if not sep:
            name, index = source, "0"
        if name and index != "-1":
            producers.append(name)
    return producers


def load_ge_graph(files: GraphFiles) -> OpGraph:
    """One rank's graph: its optimized dumps drawn, its original dumps for the fused ops' members.

    With no optimized dump (GE fused nothing, or it was not kept) the original graph is drawn.
    """
    original = [op for path in files.original for op in parse_ge_graph(path)]
    drawn = [op for path in files.optimized for op in parse_ge_graph(path)] or original
    source = ", ".join(str(p) for p in files.optimized or files.original)
    return graph_from_ge(drawn, original, source)


def ge_graph_beside(path: Path) -> OpGraph:
    """The graph of a GE graph dump a user names: with the other dump of its pair beside it.

    ``dynamo_optimized_G_rank_R_pid_P_ts_T.txt`` is drawn with ``dynamo_original_G_rank_R_pid_P_*``
    from the same directory for its fused ops' members (and named the other way round, the
    optimized one is drawn). A file named otherwise is drawn alone.
    """
    named = _PAIR_NAME.match(path.name)
    if named is None:
        return load_ge_graph(GraphFiles(optimized=(path,)))
    pair: dict[str, list[Path]] = {"original": [], "optimized": []}
    for candidate in sorted(path.parent.glob("dynamo_*.txt")):
        other = _PAIR_NAME.match(candidate.name)
        if other is not None and other["key"] == named["key"] and candidate.is_file():
            pair[other["kind"]].append(candidate)
    return load_ge_graph(GraphFiles(tuple(pair["original"]), tuple(pair["optimized"])))
