"""The ATC network-wide info json ("fusion rule" file) of a compiled model (formats.md §5.2).

The document mirrors what ``atc --mode=1 --om=… --json=…`` writes (compare
``shared/fixtures/atc/*.json``): keys sorted, protobuf-style (an ``id`` of 0 is left out, as
protobuf drops default values), attributes as ``{"key", "value"}`` pairs with typed values, and
the same op key sets per kind of op — Data, Const, compute ops and NetOutput. The attributes
the comparator reads are exact: ``_datadump_original_op_names`` absent for framework ops,
present and empty for GE-inserted ones, listing the fused ops otherwise; ``_datadump_is_multiop``;
and per output the ``_datadump_origin_*`` attributes plus ``origin_format``/``origin_shape``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dumpcmp.outputs import atomic_path

from .compiled import CompiledModel, NpuOp, OpKind, TensorDesc

__all__ = ["atc_document", "write_atc_json"]

ATC_VERSION = "7.0.0.alpha001"  # what the file says of the ATC that wrote it; informative only
SOC_VERSION = "Ascend310P3"
_ALIGN = 512  # GE aligns every tensor's memory offset to 512 bytes


def _s(value: str) -> dict[str, Any]:
    return {"s": value}


def _i(value: int) -> dict[str, Any]:
    return {"i": int(value)}


def _b(value: bool) -> dict[str, Any]:
    return {"b": bool(value)}


def _list_s(values: Sequence[str]) -> dict[str, Any]:
    body: dict[str, Any] = {"val_type": "VT_LIST_STRING"}
    if values:
        body["s"] = list(values)  # protobuf leaves an empty repeated field out
    return {"list": body}


def _list_i(values: Sequence[int]) -> dict[str, Any]:
    body: dict[str, Any] = {"val_type": "VT_LIST_INT"}
    if values:
        body["i"] = [int(v) for v in values]
    return {"list": body}


def _attrs(pairs: Sequence[tuple[str, dict[str, Any] | None]]) -> list[dict[str, Any]]:
    return [{"key": key, "value": value} for key, value in pairs]


def _desc(desc: TensorDesc, origin: tuple[str, int] | None = None) -> dict[str, Any]:
    """An input_desc / output_desc entry; ``origin`` adds the ``_datadump_origin_*`` attributes."""
    pairs: list[tuple[str, dict[str, Any] | None]] = [
        ("origin_format", _s(desc.origin_format.name)),
        ("origin_shape", _list_i(desc.origin_shape)),
        ("origin_data_type", _s(desc.origin_data_type.name)),
        ("origin_shape_initialized", _b(True)),
        ("origin_shape_range", None),
        ("shape_range", None),
    ]
    if origin is not None and origin[0]:
        pairs += [
            ("_datadump_origin_name", _s(origin[0])),
            ("_datadump_origin_output_index", _i(origin[1])),
            ("_datadump_origin_format", _s(desc.origin_format.name)),
            ("_datadump_origin_data_type", _s(desc.origin_data_type.name)),
        ]
    entry: dict[str, Any] = {
        "attr": _attrs(pairs),
        "device_type": "NPU",
        "dtype": desc.data_type.name,
        "layout": desc.format.name,
    }
    if desc.shape:  # a scalar has neither shape nor real_dim_cnt in the real files
        entry["shape"] = {"dim": list(desc.shape)}
        entry["real_dim_cnt"] = len(desc.origin_shape)
    return entry


class _Memory:
    """Offsets of every tensor in one flat, 512-byte aligned plan (``input_i``/``output_i``)."""

    def __init__(self) -> None:
        self.offsets: dict[str, int] = {}
        self.end = 0

    def offset(self, key: str, desc: TensorDesc) -> int:
        if key not in self.offsets:
            size = desc.dtype.itemsize
            for dim in desc.shape:
                size *= dim
            self.offsets[key] = self.end
            self.end += -(-max(size, 1) // _ALIGN) * _ALIGN
        return self.offsets[key]


def _op_attrs(op: NpuOp, index_of_data: int) -> list[dict[str, Any]]:
    pairs: list[tuple[str, dict[str, Any] | None]] = []
    if op.kind is OpKind.DATA:
        pairs += [
            ("index", _i(index_of_data)),
            ("_ge_attr_op_kernel_lib_name", _s("DNN_VM_GE_LOCAL_OP_STORE")),
        ]
    elif op.kind is OpKind.CONST:
        pairs += [("_ge_attr_op_kernel_lib_name", _s("DNN_VM_GE_LOCAL_OP_STORE"))]
    elif op.kind is OpKind.NET_OUTPUT:
        pairs += [("_ge_attr_op_kernel_lib_name", _s("DNN_VM_RTS_OP_STORE"))]
    else:
        pairs += [("_ge_attr_op_kernel_lib_name", _s("AIcoreEngine")), ("_engine_type", _s("AIcoreEngine"))]
    if op.original_names is not None:
        pairs.append(("_datadump_original_op_names", _list_s(op.original_names)))
    if op.is_multiop:
        pairs.append(("_datadump_is_multiop", _b(True)))
    return _attrs(pairs)


def _op(op: NpuOp, ops: Sequence[NpuOp], memory: _Memory, data_index: int) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": op.name,
        "type": op.type,
        "has_out_attr": True,
        "attr": _op_attrs(op, data_index),
    }
    if op.id:
        entry["id"] = op.id  # protobuf drops a zero id, so the first op has none
    if op.kind is OpKind.DATA:
        entry["input"] = [""]
        entry["input_desc"] = [_desc(op.outputs[0].desc)]
    elif op.kind is not OpKind.CONST:
        entry["input"] = [f"{i.source}:{i.index}" for i in op.inputs]
        entry["src_name"] = [i.source for i in op.inputs]
        entry["src_index"] = [i.index for i in op.inputs]
        entry["input_name"] = [i.value for i in op.inputs]
        entry["input_desc"] = [_desc(i.desc) for i in op.inputs]
        entry["input_i"] = [memory.offset(i.value, i.desc) for i in op.inputs]
        kinds = {o.name: o.kind for o in ops}
        entry["is_input_const"] = [kinds.get(i.source) is OpKind.CONST for i in op.inputs]
    if op.outputs:
        entry["output_desc"] = [
            _desc(o.desc, (o.origin_name, o.origin_index) if op.is_task else None) for o in op.outputs
        ]
        entry["output_i"] = [memory.offset(o.value, o.desc) for o in op.outputs]
        consumers = [(c.name, k) for c in ops for k, i in enumerate(c.inputs) if i.source == op.name]
        entry["dst_name"] = [name for name, _ in consumers]
        entry["dst_index"] = [k for _, k in consumers]
    return entry


def atc_document(compiled: CompiledModel, ops: Sequence[NpuOp] | None = None) -> dict[str, Any]:
    """The json document for ``compiled`` (or for ``ops`` of it, as the quant fusion rule)."""
    chosen = list(ops) if ops is not None else list(compiled.ops)
    memory = _Memory()
    data_ops = [op for op in chosen if op.kind is OpKind.DATA]
    graph_name = f"{compiled.name}_NPU_0"
    entries = [_op(op, chosen, memory, data_ops.index(op) if op in data_ops else 0) for op in chosen]
    switch = "" if compiled.fusion else " --fusion_switch_file=fusion_switch.cfg"
    cmdline = (
        f"atc --model={compiled.name}.onnx --framework=5 --output={compiled.name} --soc_version={SOC_VERSION}"
    )
    outputs = [f"{i.source}:{i.index}:output{k}" for op in chosen if op.kind is OpKind.NET_OUTPUT
               for k, i in enumerate(op.inputs)]  # fmt: skip
    model_attrs = [
        ("atc_cmdline", _s(cmdline + switch)),
        ("soc_version", _s(SOC_VERSION)),
        ("framework_type", _s("Onnx")),
        ("atc_version", _s(ATC_VERSION)),
        ("stream_num", _i(1)),
        ("memory_size", _i(memory.end)),
        ("attr_model_out_nodes_name", _list_s(outputs)),
        ("task_index_op_name", _list_s([op.name for op in chosen if op.is_task])),
        ("_enable_l1_fusion", _b(False)),
    ]
    graph_attrs = [("_session_graph_id", _s("-1_0")), ("_is_graph_inferred", _b(True))]
    return {
        "name": compiled.name,
        "version": 2,
        "custom_version": "dumpcmp-simulated-npu",
        "attr": _attrs(model_attrs),
        "graph": [
            {
                "name": graph_name,
                "input": [f"{op.name}:0" for op in data_ops],
                "attr": _attrs(graph_attrs),
                "op": entries,
            }
        ],
    }


def write_atc_json(compiled: CompiledModel, path: str | Path, ops: Sequence[NpuOp] | None = None) -> Path:
    """Write the json (sorted keys, like ATC's protobuf-to-json output)."""
    target = Path(path)
    with atomic_path(target) as temp:
        text = json.dumps(atc_document(compiled, ops), indent=1, sort_keys=True)
        temp.write_text(text + "\n", encoding="utf-8")
    return target
