"""GE graph dumps of a TorchAir run: which FX tensor each GE op output computes (formats.md §7.3).

``dynamo_original_*.txt`` (the graph before GE's optimisations, holding the ops a fused op is made
of) and ``dynamo_optimized_*.txt`` (the executed graph, holding the fused ops) are GE ``ModelDef``
messages in protobuf text format. They are parsed with protobuf's own text parser against
``dumpcmp/proto/ge_graph.proto``, the few fields used here; a real dump holds many more, which the
parser skips as unknown fields (``allow_unknown_field``). A file holding a bare ``GraphDef`` (ops
at the top level) is read as one graph.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import text_format
from google.protobuf.message import DecodeError

from dumpcmp.errors import FormatError
from dumpcmp.proto._gen import ge_graph_pb2
from dumpcmp.proto.names import sanitize_dump_name

__all__ = ["FX_TENSOR_ATTR", "GeOp", "fx_op_key", "parse_ge_graph"]

FX_TENSOR_ATTR = "_fx_tensor_name"
_FX_OUTPUT_SUFFIX = re.compile(r"\.OUTPUT\.[0-9]+\Z")


@dataclass(frozen=True, slots=True)
class GeOp:
    """One op of a GE graph: its raw name, type, each output's ``_fx_tensor_name`` ("" if none),
    and its inputs as GE writes them (``"{producer}:{k}"``, ``k`` -1 for a control edge)."""

    name: str
    type: str
    fx_outputs: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()

    @property
    def dump_name(self) -> str:
        """The name as dump file names spell it (GE's sanitisation, formats.md §2.3)."""
        return sanitize_dump_name(self.name)

    @property
    def fx_key(self) -> str:
        """The FX op this GE op computes (``{fx_node}-{aten target}``), "" when no output names one.

        Outputs are zipped with the FX op's outputs by position, so one key serves the whole op:
        the first output that carries the attribute names it.
        """
        return next((fx_op_key(name) for name in self.fx_outputs if name), "")


def fx_op_key(fx_tensor_name: str) -> str:
    """``add_1-aten.add.Tensor.OUTPUT.0`` → ``add_1-aten.add.Tensor``: the FX op of a tensor name."""
    return _FX_OUTPUT_SUFFIX.sub("", fx_tensor_name)


def parse_ge_graph(path: Path) -> tuple[GeOp, ...]:
    """Every op of every graph (root graph and sub-graphs) in one GE graph dump file.

    Raises FormatError ``{path}:{line}:{column}: {what}`` for text that is not protobuf text
    format of a GE model or graph.
    """
    try:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        raise FormatError(f"{path}: cannot read the GE graph dump: {exc.strerror or exc}") from None
    model = ge_graph_pb2.ModelDef()
    _parse(path, text, model)
    graphs = list(model.graph)
    if not graphs:
        graph = ge_graph_pb2.GraphDef()
        _parse(path, text, graph)
        graphs = [graph]
    return tuple(_op(op) for graph in graphs for op in graph.op)


def _parse(path: Path, text: str, message: ge_graph_pb2.ModelDef | ge_graph_pb2.GraphDef) -> None:
    try:
        text_format.Parse(text, message, allow_unknown_field=True)
    except text_format.ParseError as exc:
        line, column = exc.GetLine(), exc.GetColumn()
        where = f"{line}:{column}" if line is not None else "?"
        # The parser's own message starts with "line:column : "; keep only what is wrong.
        reason = str(exc).split(" : ", 1)[-1]
        raise FormatError(f"{path}:{where}: malformed GE graph dump: {_printable(reason)}") from None
    except (DecodeError, UnicodeError, ValueError) as exc:
        raise FormatError(f"{path}: malformed GE graph dump: {_printable(str(exc))}") from None


def _printable(text: str) -> str:
    """``text`` with what a terminal cannot show (NUL, undecodable bytes) as Python escapes."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def _op(op: ge_graph_pb2.OpDef) -> GeOp:
    outputs = []
    for desc in op.output_desc:
        value = b""
        if FX_TENSOR_ATTR in desc.attr:  # reading a missing key of a message map would add it
            attr = desc.attr[FX_TENSOR_ATTR]
            value = attr.s if attr.WhichOneof("value") == "s" else b""
        outputs.append(value.decode("utf-8", errors="replace"))
    return GeOp(op.name, op.type, tuple(outputs), tuple(op.input))
