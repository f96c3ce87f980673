"""Building an acl.json document from CLI-style values (``dumpcmp config acl``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["build_raw"]


def _put(out: dict[str, Any], key: str, value: object) -> None:
    if value is not None:
        out[key] = value


def build_raw(
    dump_path: str | None = None,
    *,
    models: Sequence[str] = (),
    layers: Sequence[str] = (),
    watcher_nodes: Sequence[str] = (),
    mode: str | None = None,
    step: str | None = None,
    data: str | None = None,
    stats: Sequence[str] = (),
    op_switch: str | None = None,
    level: str | None = None,
    debug: str | None = None,
    scene: str | None = None,
    kernel_data: str | None = None,
) -> dict[str, Any]:
    """An acl.json document from CLI-style values, unvalidated (pass it to ``validate``).

    One dump_list entry per model; ``layers`` and ``watcher_nodes`` go to the last model, or
    to a single entry without model_name (any model) when no model is given. Options left
    None are omitted, so CANN applies its defaults.
    """
    dump: dict[str, Any] = {}
    _put(dump, "dump_path", dump_path)
    items = _dump_list(models, layers, watcher_nodes)
    # An empty dump_list keeps older ACL (which requires the key) happy, but rule 6 and the
    # exception scenes (rule 4) forbid the key altogether.
    if items or (debug != "on" and scene is None):
        dump["dump_list"] = items
    for key, value in (
        ("dump_mode", mode), ("dump_op_switch", op_switch), ("dump_step", step), ("dump_data", data),
        ("dump_stats", list(stats) or None), ("dump_level", level), ("dump_debug", debug),
        ("dump_scene", scene), ("dump_kernel_data", kernel_data),
    ):  # fmt: skip
        _put(dump, key, value)
    return {"dump": dump}


def _dump_list(
    models: Sequence[str], layers: Sequence[str], watcher_nodes: Sequence[str]
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"model_name": name} for name in models]
    if (layers or watcher_nodes) and not items:
        items.append({})
    if layers:
        items[-1]["layer"] = list(layers)
    if watcher_nodes:
        items[-1]["watcher_nodes"] = list(watcher_nodes)
    return items
