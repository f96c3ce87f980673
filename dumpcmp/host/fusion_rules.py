"""The ATC network-wide info json ("fusion rule" file) as frozen records (formats.md §5.2).

``atc --mode=1 --om=model.om --json=model.json`` writes one object per compiled op under
``graph[].op[]``. This module turns that file into :class:`RuleOp` records and applies only the
per-op rules of §5.3 step 1, so that every record says what the file says:

* ``_datadump_original_op_names`` absent: the op is itself a framework op, its originals are
  ``(name,)``; present without ``s``: ``('',)``, an op GE inserted (``trans_Cast_0``), which has
  no framework counterpart;
* output ``k``'s origin output index defaults to ``k``; the origin format falls back from
  ``_datadump_origin_format`` to ``origin_format``;
* an empty output origin name becomes the op's own name when the op lists no originals.

Grouping into fusion ops, tracing inputs and the ``-cfr``/``-qfr`` merges live in
:mod:`dumpcmp.host.matcher`. Every structural problem becomes a :class:`RuleFileError` naming
the path and the json location; no ``KeyError`` or ``TypeError`` leaves this module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from dumpcmp.errors import MatchError, RuleFileError
from dumpcmp.proto.names import sanitize_dump_name
from dumpcmp.proto.records import pickled_as_values

__all__ = [
    "FusionRules",
    "InputRef",
    "OutputDesc",
    "RuleOp",
    "TensorDesc",
    "load_rules",
    "parse_rules",
]

ORIGINAL_OP_NAMES = "_datadump_original_op_names"
IS_MULTIOP = "_datadump_is_multiop"
L1_FUSION_SUB_GRAPH_NO = "_L1_fusion_sub_graph_no"
ORIGIN_NAME = "_datadump_origin_name"
ORIGIN_OUTPUT_INDEX = "_datadump_origin_output_index"
ORIGIN_FORMAT = "_datadump_origin_format"
GE_ORIGIN_FORMAT = "origin_format"
GE_ORIGIN_SHAPE = "origin_shape"
ORIGIN_DATA_TYPE = "_datadump_origin_data_type"
GE_ORIGIN_DATA_TYPE = "origin_data_type"

# FFTS+ manual slicing dumps one file per slice as "<op>_lxslice<N>"; the rule file knows only "<op>".
_LXSLICE = re.compile(r"_lxslice\d+$")

InputKind = Literal["data", "control", "empty"]


@pickled_as_values
@dataclass(frozen=True, slots=True)
class InputRef:
    """One entry of an op's ``input`` list: ``"src:idx"``, ``"src:-1"`` (control) or ``""``."""

    src_name: str
    src_index: int
    kind: InputKind = "data"

    @property
    def is_data(self) -> bool:
        return self.kind == "data"


@pickled_as_values
@dataclass(frozen=True, slots=True)
class TensorDesc:
    """One ``input_desc``/``output_desc`` entry: the framework (origin) side and the device side."""

    origin_name: str
    origin_output_index: int
    origin_format: str
    origin_shape: tuple[int, ...]
    device_dtype: str  # GE name, e.g. "DT_FLOAT16"; "" when the file has none (absent optional input)
    device_format: str  # e.g. "NC1HWC0"
    device_shape: tuple[int, ...]
    origin_dtype: str = ""


# The brief and §5.3 speak of output descs; inputs use the same record.
OutputDesc = TensorDesc


@pickled_as_values
@dataclass(frozen=True, slots=True)
class RuleOp:
    """One compiled op of the rule file, after the per-op rules of formats.md §5.3 step 1."""

    name: str
    type: str
    id: int  # "OpSequence"; the Data op usually has none in the file (protobuf drops 0)
    inputs: tuple[InputRef, ...]
    original_op_names: tuple[str, ...]
    is_multiop: bool
    l1_fusion_no: str | None
    outputs: tuple[TensorDesc, ...]
    input_descs: tuple[TensorDesc, ...] = ()

    @property
    def data_inputs(self) -> tuple[InputRef, ...]:
        """The inputs a dump file holds, in order: control edges and absent inputs carry no tensor."""
        return tuple(ref for ref in self.inputs if ref.is_data)

    @property
    def dump_name(self) -> str:
        """The op name as it appears in dump file names."""
        return sanitize_dump_name(self.name)

    @property
    def is_ge_inserted(self) -> bool:
        """GE added this op (empty original names): it has no framework counterpart."""
        return not any(self.original_op_names)  # in C: asked of every tensor a matcher looks up


@dataclass(frozen=True, slots=True)
class FusionRules:
    """A parsed rule file: model name, graph names and every op in file order."""

    path: str
    name: str
    graph_names: tuple[str, ...]
    ops: tuple[RuleOp, ...]
    _by_name: dict[str, RuleOp] = field(init=False, repr=False, compare=False)
    _by_dump: dict[str, tuple[RuleOp, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_name: dict[str, RuleOp] = {}
        by_dump: dict[str, list[RuleOp]] = {}
        for op in self.ops:
            # Sub-graphs may repeat an op name; like msaccucmp we let the first one answer.
            if op.name in by_name:
                continue
            by_name[op.name] = op
            by_dump.setdefault(op.dump_name, []).append(op)
        object.__setattr__(self, "_by_name", by_name)
        object.__setattr__(self, "_by_dump", {k: tuple(v) for k, v in by_dump.items()})

    def __iter__(self) -> Iterator[RuleOp]:
        return iter(self.ops)

    def __len__(self) -> int:
        return len(self.ops)

    def op(self, name: str) -> RuleOp | None:
        """The op with exactly this name."""
        return self._by_name.get(name)

    def by_dump_name(self, sanitised: str) -> RuleOp | None:
        """The op whose name, sanitised as GE does for dump files, is ``sanitised``.

        An FFTS+ slice suffix (``_lxsliceN``) is ignored. Raises :class:`MatchError` when two
        different ops sanitise to the same name, since guessing would pair the wrong tensors.
        """
        found = self._by_dump.get(sanitised)
        if found is None:
            stripped = _LXSLICE.sub("", sanitised)
            found = self._by_dump.get(stripped) if stripped != sanitised else None
        if not found:
            return None
        if len(found) > 1:
            exact = self._by_name.get(sanitised)
            if exact is not None:
                return exact
            names = ", ".join(repr(op.name) for op in found)
            raise MatchError(f"dump name {sanitised!r} matches several ops of {self.path}: {names}")
        return found[0]

    def find(self, name: str) -> RuleOp | None:
        """The op by exact name, else by sanitised dump name (what a dump file name carries)."""
        return self.op(name) or self.by_dump_name(name)

    def with_ops(self, ops: Sequence[RuleOp]) -> FusionRules:
        """The same file with its ops replaced (used by the -cfr/-qfr merges)."""
        return FusionRules(self.path, self.name, self.graph_names, tuple(ops))


def load_rules(path: str | Path) -> FusionRules:
    """Read and parse an ATC network-wide info json; any problem is a :class:`RuleFileError`."""
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise RuleFileError(path, f"cannot read the file: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise RuleFileError(path, f"not UTF-8 text (byte {exc.start})") from exc
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RuleFileError(
            path, f"not valid json: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    except RecursionError as exc:
        raise RuleFileError(path, "not valid json: nested too deeply") from exc
    return parse_rules(doc, path)


def parse_rules(doc: object, path: str | Path = "<memory>") -> FusionRules:
    """Build :class:`FusionRules` from an already decoded json document."""
    return _Parser(str(path)).parse(doc)


# ---------------------------------------------------------------------------------------------
# Parsing. Every check names the json location, so a user can open the file at the right op.


def _show(value: object) -> str:
    """A short rendering of an unexpected json value for an error message."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "a number"
    )


class _Parser:
    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, where: str, reason: str) -> RuleFileError:
        return RuleFileError(self.path, f"{where}: {reason}" if where else reason)

    # -- structure ------------------------------------------------------------------------

    def parse(self, doc: object) -> FusionRules:
        if not isinstance(doc, dict):
            raise self.fail("", f"the top level must be an object, got {_kind(doc)}")
        name = self.optional_str(doc, "name", "")
        if "graph" not in doc:
            raise self.fail("", "'graph' missing (is this an ATC --mode=1 json?)")
        graphs = doc["graph"]
        if not isinstance(graphs, list):
            raise self.fail("", f"'graph' must be an array, got {_kind(graphs)}")
        ops: list[RuleOp] = []
        graph_names: list[str] = []
        for g, graph in enumerate(graphs):
            where = f"graph[{g}]"
            if not isinstance(graph, dict):
                raise self.fail(where, f"must be an object, got {_kind(graph)}")
            graph_names.append(self.optional_str(graph, "name", "", where))
            if "op" not in graph:
                raise self.fail(where, "'op' missing")
            op_list = graph["op"]
            if not isinstance(op_list, list):
                raise self.fail(where, f"'op' must be an array, got {_kind(op_list)}")
            ops.extend(self.op(obj, f"{where}.op[{i}]") for i, obj in enumerate(op_list))
        return FusionRules(self.path, name, tuple(graph_names), tuple(ops))

    def op(self, obj: object, where: str) -> RuleOp:
        if not isinstance(obj, dict):
            raise self.fail(where, f"must be an object, got {_kind(obj)}")
        if "name" not in obj:
            raise self.fail(where, "'name' missing")
        name = obj["name"]
        if not isinstance(name, str) or not name:
            raise self.fail(where, f"'name' must be a non-empty string, got {_show(name)}")
        where = f"{where} ({name})"
        if "type" not in obj:
            raise self.fail(where, "'type' missing")
        op_type = obj["type"]
        if not isinstance(op_type, str):
            raise self.fail(where, f"'type' must be a string, got {_show(op_type)}")
        op_id = self.int_value(obj.get("id", 0), f"{where}.id")

        attrs = self.attrs(obj.get("attr"), f"{where}.attr")
        names = self.attr_str_list(attrs, ORIGINAL_OP_NAMES, where)
        # §5.2: no attribute => the op is a framework op; the attribute without names => GE's own.
        originals = (name,) if names is None else (names or ("",))
        own_name_fill = name if names is None else ""
        l1_no = self.attr_str(attrs, L1_FUSION_SUB_GRAPH_NO, where)

        return RuleOp(
            name=name,
            type=op_type,
            id=op_id,
            inputs=self.inputs(obj.get("input"), f"{where}.input"),
            original_op_names=originals,
            is_multiop=bool(self.attr_bool(attrs, IS_MULTIOP, where)),
            l1_fusion_no=l1_no or None,
            outputs=self.descs(obj.get("output_desc"), f"{where}.output_desc", own_name_fill),
            input_descs=self.descs(obj.get("input_desc"), f"{where}.input_desc", ""),
        )

    def inputs(self, raw: object, where: str) -> tuple[InputRef, ...]:
        if raw is None:
            return ()
        if not isinstance(raw, list):
            raise self.fail(where, f"must be an array, got {_kind(raw)}")
        refs = []
        for i, item in enumerate(raw):
            if not isinstance(item, str):
                raise self.fail(f"{where}[{i}]", f"must be a string 'op:index', got {_show(item)}")
            refs.append(self.input_ref(item, f"{where}[{i}]"))
        return tuple(refs)

    def input_ref(self, text: str, where: str) -> InputRef:
        if not text:
            return InputRef("", -1, "empty")
        # rpartition: op names may themselves hold ':' (ONNX "onnx::Gather_1764_0").
        src, sep, index = text.rpartition(":")
        try:
            value = int(index)
        except ValueError:
            value = None
        if not sep or not src or value is None or value < -1:
            raise self.fail(where, f"{text!r} is not 'op:index' (index an integer >= -1)")
        return InputRef(src, value, "control" if value == -1 else "data")

    def descs(self, raw: object, where: str, own_name: str) -> tuple[TensorDesc, ...]:
        if raw is None:
            return ()
        if not isinstance(raw, list):
            raise self.fail(where, f"must be an array, got {_kind(raw)}")
        return tuple(self.desc(obj, f"{where}[{k}]", k, own_name) for k, obj in enumerate(raw))

    def desc(self, obj: object, where: str, k: int, own_name: str) -> TensorDesc:
        if not isinstance(obj, dict):
            raise self.fail(where, f"must be an object, got {_kind(obj)}")
        attrs = self.attrs(obj.get("attr"), f"{where}.attr")
        origin_index = self.attr_int(attrs, ORIGIN_OUTPUT_INDEX, where)
        if origin_index is not None and origin_index < 0:
            raise self.fail(f"{where}.attr[{ORIGIN_OUTPUT_INDEX!r}]", f"must be >= 0, got {origin_index}")
        shape_obj = obj.get("shape")
        if shape_obj is None:
            device_shape: tuple[int, ...] = ()
        elif isinstance(shape_obj, dict):
            device_shape = self.int_list(shape_obj.get("dim"), f"{where}.shape.dim")
        else:
            raise self.fail(f"{where}.shape", f"must be an object {{'dim': [...]}}, got {_show(shape_obj)}")
        return TensorDesc(
            origin_name=self.attr_str(attrs, ORIGIN_NAME, where) or own_name,
            origin_output_index=k if origin_index is None else origin_index,
            origin_format=self.attr_str(attrs, ORIGIN_FORMAT, where)
            or self.attr_str(attrs, GE_ORIGIN_FORMAT, where)
            or "",
            origin_shape=self.attr_int_list(attrs, GE_ORIGIN_SHAPE, where) or (),
            device_dtype=self.optional_str(obj, "dtype", "", where),
            device_format=self.optional_str(obj, "layout", "", where),
            device_shape=device_shape,
            origin_dtype=self.attr_str(attrs, ORIGIN_DATA_TYPE, where)
            or self.attr_str(attrs, GE_ORIGIN_DATA_TYPE, where)
            or "",
        )

    # -- scalars --------------------------------------------------------------------------

    def optional_str(self, obj: Mapping[str, object], key: str, default: str, where: str = "") -> str:
        value = obj.get(key, default)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.fail(where, f"{key!r} must be a string, got {_show(value)}")
        return value

    def int_value(self, value: object, where: str) -> int:
        # Protobuf's json form writes int64 as a decimal string; ATC writes numbers. Take both.
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and re.fullmatch(r"-?\d+", value):
            return int(value)
        raise self.fail(where, f"must be an integer, got {_show(value)}")

    def int_list(self, value: object, where: str) -> tuple[int, ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.fail(where, f"must be an array of integers, got {_show(value)}")
        if all(type(v) is int for v in value):  # what ATC writes; bool is not int here
            return tuple(value)
        return tuple(self.int_value(v, f"{where}[{i}]") for i, v in enumerate(value))

    # -- attributes: [{"key": K, "value": {"s"|"i"|"f"|"b"|"list"|...: ...} | null}] ---------

    def attrs(self, raw: object, where: str) -> dict[str, object]:
        """Key -> raw value. Values are only checked when read, so unknown kinds ("t", "func") pass."""
        if raw is None:
            return {}
        if not isinstance(raw, list):
            raise self.fail(where, f"must be an array of {{'key', 'value'}} objects, got {_kind(raw)}")
        found: dict[str, object] = {}
        for i, item in enumerate(raw):
            if not isinstance(item, dict) or not isinstance(item.get("key"), str):
                raise self.fail(f"{where}[{i}]", f"must be an object with a string 'key', got {_show(item)}")
            found.setdefault(item["key"], item.get("value"))  # the first occurrence wins
        return found

    def typed(self, attrs: dict[str, object], key: str, where: str, tag: str, what: str) -> object:
        """The payload under ``tag`` of attribute ``key``, or None when absent or null."""
        if key not in attrs or attrs[key] is None:
            return None
        value = attrs[key]
        if not isinstance(value, dict) or tag not in value:
            raise self.fail(f"{where}.attr[{key!r}]", f"expected {what}, got {_show(value)}")
        return value[tag]

    def attr_str(self, attrs: dict[str, object], key: str, where: str) -> str | None:
        value = self.typed(attrs, key, where, "s", "a string value {'s': ...}")
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.fail(f"{where}.attr[{key!r}]", f"'s' must be a string, got {_show(value)}")
        return value

    def attr_int(self, attrs: dict[str, object], key: str, where: str) -> int | None:
        value = self.typed(attrs, key, where, "i", "an integer value {'i': ...}")
        return None if value is None else self.int_value(value, f"{where}.attr[{key!r}].i")

    def attr_bool(self, attrs: dict[str, object], key: str, where: str) -> bool | None:
        value = self.typed(attrs, key, where, "b", "a boolean value {'b': ...}")
        if value is not None and not isinstance(value, bool):
            raise self.fail(f"{where}.attr[{key!r}]", f"'b' must be true or false, got {_show(value)}")
        return value

    def attr_list(self, attrs: dict[str, object], key: str, where: str) -> dict[str, object] | None:
        if key in attrs and attrs[key] is None:
            return {}  # present but null: an empty list
        value = self.typed(attrs, key, where, "list", "a list value {'list': {...}}")
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.fail(f"{where}.attr[{key!r}]", f"'list' must be an object, got {_show(value)}")
        return value

    def attr_str_list(self, attrs: dict[str, object], key: str, where: str) -> tuple[str, ...] | None:
        listing = self.attr_list(attrs, key, where)
        if listing is None:
            return None
        items = listing.get("s", [])
        if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
            raise self.fail(
                f"{where}.attr[{key!r}]", f"'list.s' must be an array of strings, got {_show(items)}"
            )
        return tuple(items)

    def attr_int_list(self, attrs: dict[str, object], key: str, where: str) -> tuple[int, ...] | None:
        listing = self.attr_list(attrs, key, where)
        if listing is None:
            return None
        return self.int_list(listing.get("i"), f"{where}.attr[{key!r}].list.i")
