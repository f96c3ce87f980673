"""ATC json ops written by hand for tests: only the keys the rule parser and matcher read."""

from __future__ import annotations

from typing import Any

Out = tuple[str, int] | str | None  # (origin name, index) | origin name | no origin attrs


def op(
    name: str,
    op_id: int,
    op_type: str = "T",
    inputs: tuple[str, ...] = (),
    originals: tuple[str, ...] | None = None,
    outputs: tuple[Out, ...] = (None,),
    dtype: str = "DT_FLOAT16",
    multiop: bool = False,
    l1: str | None = None,
    *,
    layout: str = "NC1HWC0",
    shape: tuple[int, ...] = (1, 1, 2, 2, 16),
    origin_format: str = "NCHW",
    origin_shape: tuple[int, ...] | None = None,
) -> dict[str, Any]:
    """One ``graph[].op[]`` object as ATC writes it.

    With ``origin_shape`` every desc carries it and every input gets an ``input_desc`` (what the
    dump generator needs); without, only output descs with their origin names are written.
    """
    attrs: list[dict[str, Any]] = []
    if originals is not None:
        listing: dict[str, Any] = {"val_type": "VT_LIST_STRING"}
        if originals:
            listing["s"] = list(originals)
        attrs.append({"key": "_datadump_original_op_names", "value": {"list": listing}})
    if multiop:
        attrs.append({"key": "_datadump_is_multiop", "value": {"b": True}})
    if l1 is not None:
        attrs.append({"key": "_L1_fusion_sub_graph_no", "value": {"s": l1}})

    def desc(out: Out) -> dict[str, Any]:
        desc_attrs: list[dict[str, Any]] = [{"key": "origin_format", "value": {"s": origin_format}}]
        if origin_shape is not None:
            dims = {"i": list(origin_shape), "val_type": "VT_LIST_INT"}
            desc_attrs.append({"key": "origin_shape", "value": {"list": dims}})
        if isinstance(out, str):
            desc_attrs.append({"key": "_datadump_origin_name", "value": {"s": out}})
        elif isinstance(out, tuple):
            desc_attrs.append({"key": "_datadump_origin_name", "value": {"s": out[0]}})
            desc_attrs.append({"key": "_datadump_origin_output_index", "value": {"i": out[1]}})
        return {"dtype": dtype, "layout": layout, "shape": {"dim": list(shape)}, "attr": desc_attrs}

    found: dict[str, Any] = {
        "name": name,
        "type": op_type,
        "id": op_id,
        "input": list(inputs),
        "attr": attrs,
        "output_desc": [desc(out) for out in outputs],
    }
    if origin_shape is not None:
        found["input_desc"] = [desc(None) for ref in inputs if not ref.endswith(":-1")]
    return found


def document(*ops: dict[str, Any], name: str = "net") -> dict[str, Any]:
    """A whole rule file holding ``ops`` in one graph."""
    return {"name": name, "graph": [{"name": f"{name}_0", "op": list(ops)}]}
