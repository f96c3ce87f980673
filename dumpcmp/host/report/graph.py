"""The network a result table came from, as the HTML report draws it: ops, data edges, originals.

:class:`OpGraph` is deliberately small (names, types, edges, the golden-side ops each node
stands for) so any graph source can be adapted to it: the ATC fusion rule json here
(:func:`graph_from_rules`), a TorchAir run's GE graph dumps (:mod:`.ge_graph_view`). A graph file
a user names is told apart by its content (:func:`load_graph`). Placement is networkx's, layered
by topological generation, so the drawing reads in execution direction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from dumpcmp.errors import FormatError, RuleFileError
from dumpcmp.host.fusion_rules import FusionRules, load_rules
from dumpcmp.proto.names import sanitize_dump_name

# Weights and constants: dozens per model, they feed one op each and say nothing about accuracy,
# but would crowd the first layer of the drawing.
_CONSTANT_TYPES = frozenset({"Const", "Constant"})
# The network's input and output: no op computes there, so no error starts there.
_NETWORK_ENDS = frozenset({"Data", "NetOutput"})
_SNIFF = 64  # bytes read to tell a json rule file from protobuf text
_NEITHER = "neither an ATC fusion rule json (atc --mode=1) nor a GE graph dump (dynamo_*.txt)"


@dataclass(frozen=True, slots=True)
class OpGraph:
    """Target-side ops (``nodes``, in source order), data edges ``(src, dst)`` between them, and
    for each node the golden-side ops it was compiled from (several for a fused op)."""

    nodes: tuple[str, ...]
    types: Mapping[str, str]
    edges: tuple[tuple[str, str], ...]
    originals: Mapping[str, tuple[str, ...]]
    source: str = ""
    # Per node, the node that makes each of its data inputs, in input order ("" for the network's
    # input or a constant); empty where the source does not say (the advisor then walks the
    # table's ops alone).
    makers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Nodes that compute nothing a dump could hold: the network's ends (Data, NetOutput) and ops
    # that write no tensor (ATC's AtomicAddrClean, Send, Recv: no output desc). A walk that
    # places the ops without a dump leaves them out: they were never going to be dumped.
    silent: frozenset[str] = frozenset()

    def is_fused(self, node: str) -> bool:
        """True when the node stands for golden ops other than itself."""
        names = self.originals.get(node, ())
        return bool(names) and names != (node,)

    def lookup(self) -> dict[str, str]:
        """Node by any name a result table may use for it: its own, or as sanitised in dump files."""
        found = {sanitize_dump_name(n): n for n in self.nodes}
        found.update({n: n for n in self.nodes})
        return found


def strangers(graph: OpGraph, op_names: Iterable[str]) -> tuple[int, int]:
    """How many of the distinct ``op_names`` (a result table's) are no node of ``graph``, of how
    many: all of them when the graph is another model's."""
    lookup = graph.lookup()
    names = set(op_names) - {""}
    return sum(1 for name in names if name not in lookup), len(names)


def graph_from_rules(rules: FusionRules) -> OpGraph:
    """The compiled graph of an ATC rule file: every non-constant op, edges from data inputs."""
    ops = [op for op in rules if op.type not in _CONSTANT_TYPES]
    kept = {op.name for op in ops}
    nodes: list[str] = []
    seen: set[str] = set()
    for op in ops:
        if op.name not in seen:  # sub-graphs may repeat a name; the first one stands
            seen.add(op.name)
            nodes.append(op.name)
    edges = {
        (ref.src_name, op.name)
        for op in ops
        for ref in op.data_inputs
        if ref.src_name in kept and ref.src_name != op.name
    }
    types = {op.name: op.type for op in reversed(ops)}
    ran = {name for name in kept if types[name] not in _NETWORK_ENDS}
    writes = {op.name for op in ops if op.outputs}
    return OpGraph(
        nodes=tuple(nodes),
        types=types,
        edges=tuple(sorted(edges)),
        originals={op.name: tuple(n for n in op.original_op_names if n) for op in reversed(ops)},
        source=rules.path,
        makers={
            op.name: tuple(ref.src_name if ref.src_name in ran else "" for ref in op.data_inputs)
            for op in reversed(ops)
        },
        silent=frozenset(name for name in kept if name not in ran or name not in writes),
    )


def load_graph(path: str | Path) -> OpGraph:
    """The graph of an ATC rule file (json) or of a GE graph dump (protobuf text, with the other
    dump of its pair beside it); ``RuleFileError`` when it is neither or cannot be read."""
    from dumpcmp.host.report.ge_graph_view import ge_graph_beside

    path = Path(path)
    try:
        with path.open("rb") as handle:
            start = handle.read(_SNIFF).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError as exc:
        raise RuleFileError(path, f"cannot read the graph file: {exc.strerror or exc}") from None
    if start[:1] in (b"{", b"["):
        return graph_from_rules(load_rules(path))
    try:
        graph = ge_graph_beside(path)
    except FormatError as exc:
        detail = str(exc)
        if detail.startswith(f"{path}:"):  # said once, at the front
            detail = "at " + detail[len(str(path)) + 1 :]
        raise RuleFileError(path, f"{_NEITHER}: {detail}") from None
    if not graph.nodes:
        raise RuleFileError(path, f"{_NEITHER} (no ops in it)")
    return graph


def layered_positions(graph: OpGraph) -> dict[str, tuple[float, float]]:
    """x = topological generation (execution depth), y = place within the generation.

    A cycle (a loop body flattened into one graph) is collapsed first, its ops sharing a layer.
    """
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(graph.nodes)
    g.add_edges_from(graph.edges)
    dag = nx.condensation(g)
    layer_of_component = {
        c: depth for depth, layer in enumerate(nx.topological_generations(dag)) for c in layer
    }
    order = {name: i for i, name in enumerate(graph.nodes)}
    members = dag.graph["mapping"]
    for name in graph.nodes:
        g.nodes[name]["layer"] = layer_of_component[members[name]]
    # multipartite_layout places each layer's nodes in insertion order; insert in source order.
    ordered = nx.DiGraph()
    for name in sorted(g.nodes, key=lambda n: (g.nodes[n]["layer"], order[n])):
        ordered.add_node(name, layer=g.nodes[name]["layer"])
    if not ordered:
        return {}
    placed = nx.multipartite_layout(ordered, subset_key="layer", align="vertical", scale=1.0)
    return {name: (float(x), float(y)) for name, (x, y) in placed.items()}


def graph_for(path: Path, model: str = "") -> OpGraph:
    """The graph of ``path``: a rule file, or the file of a rule directory that is ``model``'s
    (by the rule file's model or graph name, or its file name, as ``compare -fr DIR`` picks)."""
    if not path.is_dir():
        return load_graph(path)
    wanted = sanitize_dump_name(model)
    files = sorted(path.glob("*.json"))
    for candidate in files:
        rules = load_rules(candidate)
        if wanted in {sanitize_dump_name(n) for n in (rules.name, candidate.stem, *rules.graph_names) if n}:
            return graph_from_rules(rules)
    if len(files) == 1:
        return load_graph(files[0])
    raise RuleFileError(path, f"no rule file here is for model {model!r}")
