"""What an acl.json asks the runtime to dump, resolved for the simulated NPU (formats.md §3.3).

``DumpSettings`` is fixed when the dump is configured (``aclmdlSetDump`` or ``aclInit``): that
is when GE names the ``{YYYYMMDDhhmmss}`` directory. ``for_model`` then answers, at model
load, whether and what to dump of that model: a ``dump_list`` entry applies when it names the
model (or names none); ``layer`` entries match post-fusion op names or the original op names
an op fused; with ``dump_level: op`` the op-name range and the type / name blacklists apply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from dumpcmp.acl_config import AclConfig, DumpListItem, StepSet
from dumpcmp.proto.names import sanitize_dump_name
from dumpcmp.proto.stats_csv import DEFAULT_STATS

from .compiled import CompiledModel, NpuOp

__all__ = ["DumpSettings", "ModelDump", "OpSelection"]


@dataclass(frozen=True, slots=True)
class OpSelection:
    """Which tensors of one op are dumped."""

    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class DumpSettings:
    """The dump section, with CANN's defaults applied and the time directory chosen."""

    dump_path: Path
    time_dir: str
    mode: str  # input | output | all
    data: str  # tensor | stats
    stats: tuple[str, ...]
    steps: StepSet
    level: str
    items: tuple[DumpListItem, ...]

    @classmethod
    def from_config(cls, config: AclConfig, now: datetime, cwd: Path | None = None) -> DumpSettings | None:
        """None when the config enables no dump (rule 10) or holds no model dump list."""
        dump = config.dump
        if dump is None or not config.enables_dump or dump.dump_path is None:
            return None
        path = Path(dump.dump_path)
        if not path.is_absolute():
            path = (cwd or Path.cwd()) / path
        return cls(
            dump_path=path,
            time_dir=now.strftime("%Y%m%d%H%M%S"),
            mode=dump.mode,
            data=dump.data,
            stats=tuple(dump.dump_stats) if dump.dump_stats else DEFAULT_STATS,
            steps=dump.steps,
            level=dump.level,
            items=tuple(dump.dump_list or ()),
        )

    def for_model(self, model_name: str, model_id: int, device_id: int) -> ModelDump | None:
        """The dump plan of a model loaded under these settings; None if it is not dumped.

        A model is dumped only through ``dump_list`` entries: ``dump_op_switch`` governs
        single-operator execution (aclopExecute), which the simulator does not offer.
        """
        names = {model_name, sanitize_dump_name(model_name)}
        items = tuple(item for item in self.items if item.model_name is None or item.model_name in names)
        if not items:
            return None
        directory = (
            self.dump_path / self.time_dir / str(device_id) / sanitize_dump_name(model_name) / str(model_id)
        )
        return ModelDump(self, items, directory)


@dataclass(frozen=True, slots=True)
class ModelDump:
    """The dump plan of one loaded model."""

    settings: DumpSettings
    items: tuple[DumpListItem, ...]
    directory: Path  # {dump_path}/{time}/{device}/{model}/{model_id}

    def step_dir(self, step: int) -> Path | None:
        """Where step ``step`` is dumped (data_index = step), or None if it is not dumped."""
        return self.directory / str(step) if step in self.settings.steps else None

    def selection(self, op: NpuOp, compiled: CompiledModel) -> OpSelection | None:
        """Which tensors of ``op`` to dump; None when the op is not dumped at all."""
        if not any(self._item_selects(item, op, compiled) for item in self.items):
            return None
        mode = self.settings.mode
        inputs = tuple(range(len(op.inputs))) if mode in ("input", "all") else ()
        outputs = tuple(range(len(op.outputs))) if mode in ("output", "all") else ()
        if self.settings.level == "op":
            inputs, outputs = self._blacklisted(op, inputs, outputs)
        if not inputs and not outputs:
            return None
        return OpSelection(inputs, outputs)

    def _item_selects(self, item: DumpListItem, op: NpuOp, compiled: CompiledModel) -> bool:
        if item.layer and not _matches_layer(op, item.layer):
            return False
        if self.settings.level == "op" and item.opname_range:
            return any(_in_range(op, r.begin, r.end, compiled) for r in item.opname_range)
        return True

    def _blacklisted(
        self, op: NpuOp, inputs: tuple[int, ...], outputs: tuple[int, ...]
    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        for item in self.items:
            for entries, key in ((item.optype_blacklist, op.type), (item.opname_blacklist, op.name)):
                for entry in entries or ():
                    if entry.name != key:
                        continue
                    if entry.pos is None:
                        return (), ()
                    inputs = tuple(i for i in inputs if f"input{i}" not in entry.pos)
                    outputs = tuple(o for o in outputs if f"output{o}" not in entry.pos)
        return inputs, outputs


def _matches_layer(op: NpuOp, layers: Sequence[str]) -> bool:
    """``layer`` names an op by its compiled name or by any original op it computes."""
    wanted = set(layers)
    originals = {name for stage in op.stages for name in stage.originals}
    return op.name in wanted or bool(wanted & originals) or bool(wanted & set(op.covers))


def _in_range(op: NpuOp, begin: str, end: str, compiled: CompiledModel) -> bool:
    names = [t.name for t in compiled.tasks]
    if begin not in names or end not in names:
        return False
    position = names.index(op.name)
    return names.index(begin) <= position <= names.index(end)
