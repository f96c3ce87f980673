"""Building an acl.json document from CLI-style values (``dumpcmp config acl``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["DumpTarget", "build_raw"]


@dataclass(frozen=True, slots=True)
class DumpTarget:
    """One dump_list entry: a model (None: any model) and the ops of it to dump (none: all)."""

    model: str | None
    layers: tuple[str, ...] = ()
    watcher_nodes: tuple[str, ...] = ()


def _put(out: dict[str, Any], key: str, value: object) -> None:
    if value is not None:
        out[key] = value


def build_raw(
    dump_path: str | None = None,
    *,
    targets: Sequence[DumpTarget] = (),
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

    One dump_list entry per target, in order. Options left None are omitted, so CANN applies
    its defaults.
    """
    dump: dict[str, Any] = {}
    _put(dump, "dump_path", dump_path)
    items = [_dump_item(target) for target in targets]
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


def _dump_item(target: DumpTarget) -> dict[str, Any]:
    item: dict[str, Any] = {} if target.model is None else {"model_name": target.model}
    if target.layers:
        item["layer"] = list(target.layers)
    if target.watcher_nodes:
        item["watcher_nodes"] = list(target.watcher_nodes)
    return item
