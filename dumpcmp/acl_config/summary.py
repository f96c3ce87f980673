"""A one-line account of what a valid config makes CANN dump (for ``dumpcmp config check``)."""

from __future__ import annotations

from dumpcmp.printable import counted

from .model import AclConfig, DumpListItem, DumpSection

__all__ = ["describe"]

_WHAT = {"input": "input", "output": "output", "all": "input and output"}


def describe(config: AclConfig) -> str:
    """Say what will be dumped, where, and when; assumes ``validate`` found no issue."""
    dump = config.dump
    if dump is None or not dump.enables_dump:
        return _nothing(dump)
    destination = f"to {dump.dump_path}" if dump.dump_path else "to the default exception dump path"
    if dump.is_exception_scene:
        return f"exception dump ({dump.dump_scene}) {destination}"
    if dump.dump_scene == "watcher":
        nodes = sum(len(entry.watcher_nodes or ()) for entry in dump.dump_list or ())
        return f"watcher dump of {counted(nodes, 'node')} {destination}"
    if dump.debug_on:
        return f"overflow dump (dump_debug on), {dump.steps.describe()}, {destination}"
    when = f"{dump.steps.describe()}, dump_level {dump.level}"
    return f"{_payload(dump)} of {_targets(dump)}, {when}, {destination}"


def _nothing(dump: DumpSection | None) -> str:
    if dump is None:
        return 'nothing will be dumped: there is no "dump" section'
    return "nothing will be dumped: no dump_list entry, dump_op_switch off, dump_debug off, no dump_scene"


def _payload(dump: DumpSection) -> str:
    what = _WHAT[dump.mode]
    if dump.data == "stats":
        chosen = ", ".join(dump.dump_stats) if dump.dump_stats else "default"
        return f"{what} statistics ({chosen})"
    return f"{what} tensors"


def _targets(dump: DumpSection) -> str:
    parts = [_target(entry) for entry in dump.dump_list or ()]
    if dump.op_switch_on:
        parts.append("single ops")
    return "; ".join(parts)


def _target(entry: DumpListItem) -> str:
    model = f"model {entry.model_name}" if entry.model_name else "any model"
    ops = counted(len(entry.layer), "layer") if entry.layer else "all ops"
    return f"{model} ({ops})"
