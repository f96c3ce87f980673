"""The ``dump`` section of acl.json as frozen records (formats.md §3.1).

A field that is ``None`` was absent from the file; CANN then applies its default, which the
``mode``/``data``/``level``/... properties report. Keys this model does not know are kept in
``extra`` at every level and written back, so rewriting a file never loses a newer CANN option
or the other ``aclInit`` keys (``"err_msg_mode"``).
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, cast, get_args

from dumpcmp.errors import ConfigError

from .builder import build_raw
from .issues import ConfigIssue, format_issues
from .reader import ROOT, RawReader, child, json_type, parse_json_text
from .steps import StepSet, parse_steps

__all__ = [
    "DUMP_DATA",
    "DUMP_LEVELS",
    "DUMP_MODES",
    "DUMP_SCENES",
    "DUMP_STATS",
    "EXCEPTION_SCENES",
    "KERNEL_DATA",
    "SWITCHES",
    "AclConfig",
    "BlacklistEntry",
    "DumpData",
    "DumpLevel",
    "DumpListItem",
    "DumpMode",
    "DumpScene",
    "DumpSection",
    "DumpStat",
    "OpRange",
    "Switch",
    "read_config",
]

DumpMode = Literal["input", "output", "all"]
Switch = Literal["on", "off"]
DumpData = Literal["tensor", "stats"]
DumpLevel = Literal["op", "kernel", "all"]
DumpScene = Literal[
    "lite_exception", "aic_err_brief_dump", "aic_err_norm_dump", "aic_err_detail_dump", "watcher"
]
DumpStat = Literal["Max", "Min", "Avg", "Nan", "Negative Inf", "Positive Inf", "L2norm"]

DUMP_MODES: tuple[str, ...] = get_args(DumpMode)
SWITCHES: tuple[str, ...] = get_args(Switch)
DUMP_DATA: tuple[str, ...] = get_args(DumpData)
DUMP_LEVELS: tuple[str, ...] = get_args(DumpLevel)
DUMP_SCENES: tuple[str, ...] = get_args(DumpScene)
DUMP_STATS: tuple[str, ...] = get_args(DumpStat)
EXCEPTION_SCENES: tuple[str, ...] = tuple(s for s in DUMP_SCENES if s != "watcher")
# dump_kernel_data is a comma-separated list of these (Ascend C kernel debug output).
KERNEL_DATA: tuple[str, ...] = ("all", "printf", "tensor", "assert", "timestamp")


def _frozen(extra: Mapping[str, Any]) -> Mapping[str, Any]:
    """A private read-only copy of ``extra``, so that a record stays immutable all the way down."""
    return MappingProxyType(copy.deepcopy(dict(extra)))


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = list(value) if isinstance(value, tuple) else value


@dataclass(frozen=True, slots=True)
class BlacklistEntry:
    """An ``optype_blacklist`` / ``opname_blacklist`` entry: skip these positions of ``name``.

    ``pos`` holds ``input<N>`` / ``output<N>`` positions; None when the key is absent.
    """

    name: str
    pos: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        _put(out, "pos", self.pos)
        return out

    @classmethod
    def read(cls, raw: Mapping[str, Any], path: str, reader: RawReader) -> BlacklistEntry | None:
        name = reader.required_string(raw, "name", path)
        pos = reader.strings(raw, "pos", path)
        return None if name is None else cls(name, pos)


@dataclass(frozen=True, slots=True)
class OpRange:
    """An ``opname_range`` entry: dump the ops from ``begin`` to ``end`` in execution order."""

    begin: str
    end: str

    def to_dict(self) -> dict[str, Any]:
        return {"begin": self.begin, "end": self.end}

    @classmethod
    def read(cls, raw: Mapping[str, Any], path: str, reader: RawReader) -> OpRange | None:
        begin = reader.required_string(raw, "begin", path)
        end = reader.required_string(raw, "end", path)
        return None if begin is None or end is None else cls(begin, end)


_ITEM_KEYS = ("model_name", "layer", "watcher_nodes", "optype_blacklist", "opname_blacklist", "opname_range")


@dataclass(frozen=True, slots=True)
class DumpListItem:
    """One ``dump_list`` entry: a model (or any model) and optionally which of its ops."""

    model_name: str | None = None
    layer: tuple[str, ...] | None = None
    watcher_nodes: tuple[str, ...] | None = None
    optype_blacklist: tuple[BlacklistEntry, ...] | None = None
    opname_blacklist: tuple[BlacklistEntry, ...] | None = None
    opname_range: tuple[OpRange, ...] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "extra", _frozen(self.extra))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        _put(out, "model_name", self.model_name)
        _put(out, "layer", self.layer)
        _put(out, "watcher_nodes", self.watcher_nodes)
        for key in ("optype_blacklist", "opname_blacklist", "opname_range"):
            entries: tuple[BlacklistEntry | OpRange, ...] | None = getattr(self, key)
            if entries is not None:
                out[key] = [entry.to_dict() for entry in entries]
        out.update(copy.deepcopy(dict(self.extra)))
        return out

    @classmethod
    def read(cls, raw: Mapping[str, Any], path: str, reader: RawReader) -> DumpListItem:
        def entries(key: str, kind: type[BlacklistEntry] | type[OpRange]) -> tuple[Any, ...] | None:
            pairs = reader.objects(raw, key, path)
            if pairs is None:
                return None
            read = (kind.read(obj, obj_path, reader) for obj_path, obj in pairs)
            return tuple(entry for entry in read if entry is not None)

        return cls(
            model_name=reader.string(raw, "model_name", path),
            layer=reader.strings(raw, "layer", path),
            watcher_nodes=reader.strings(raw, "watcher_nodes", path),
            optype_blacklist=entries("optype_blacklist", BlacklistEntry),
            opname_blacklist=entries("opname_blacklist", BlacklistEntry),
            opname_range=entries("opname_range", OpRange),
            extra={k: v for k, v in raw.items() if k not in _ITEM_KEYS},
        )


_SECTION_KEYS = (
    "dump_path", "dump_list", "dump_mode", "dump_op_switch", "dump_step", "dump_data", "dump_stats",
    "dump_level", "dump_debug", "dump_scene", "dump_kernel_data",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class DumpSection:
    """The ``"dump"`` object. Every field is None when the key was absent."""

    dump_path: str | None = None
    dump_list: tuple[DumpListItem, ...] | None = None
    dump_mode: DumpMode | None = None
    dump_op_switch: Switch | None = None
    dump_step: str | None = None
    dump_data: DumpData | None = None
    dump_stats: tuple[DumpStat, ...] | None = None
    dump_level: DumpLevel | None = None
    dump_debug: Switch | None = None
    dump_scene: DumpScene | None = None
    dump_kernel_data: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "extra", _frozen(self.extra))

    # CANN's defaults for absent keys (formats.md §3.1).
    @property
    def mode(self) -> DumpMode:
        return self.dump_mode or "output"

    @property
    def data(self) -> DumpData:
        return self.dump_data or "tensor"

    @property
    def level(self) -> DumpLevel:
        return self.dump_level or "all"

    @property
    def op_switch_on(self) -> bool:
        return self.dump_op_switch == "on"

    @property
    def debug_on(self) -> bool:
        return self.dump_debug == "on"

    @property
    def is_exception_scene(self) -> bool:
        return self.dump_scene in EXCEPTION_SCENES

    @property
    def steps(self) -> StepSet:
        """The steps to dump; every step when dump_step is absent. ConfigError if malformed."""
        return StepSet.all_steps() if self.dump_step is None else parse_steps(self.dump_step)

    @property
    def enables_dump(self) -> bool:
        """Rule 10: without one of these CANN accepts the section and dumps nothing."""
        has_items = bool(self.dump_list)
        return has_items or self.op_switch_on or self.debug_on or self.dump_scene is not None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in _SECTION_KEYS:
            value = getattr(self, key)
            if key == "dump_list" and value is not None:
                value = [entry.to_dict() for entry in value]
            _put(out, key, value)
        out.update(copy.deepcopy(dict(self.extra)))
        return out

    @classmethod
    def read(cls, raw: Mapping[str, Any], path: str, reader: RawReader) -> DumpSection:
        return cls(
            dump_path=reader.string(raw, "dump_path", path),
            dump_list=_read_items(raw, path, reader),
            dump_mode=cast(DumpMode | None, reader.string(raw, "dump_mode", path, DUMP_MODES)),
            dump_op_switch=cast(Switch | None, reader.string(raw, "dump_op_switch", path, SWITCHES)),
            dump_step=reader.string(raw, "dump_step", path),
            dump_data=cast(DumpData | None, reader.string(raw, "dump_data", path, DUMP_DATA)),
            dump_stats=cast(
                "tuple[DumpStat, ...] | None", reader.strings(raw, "dump_stats", path, DUMP_STATS)
            ),
            dump_level=cast(DumpLevel | None, reader.string(raw, "dump_level", path, DUMP_LEVELS)),
            dump_debug=cast(Switch | None, reader.string(raw, "dump_debug", path, SWITCHES)),
            dump_scene=cast(DumpScene | None, reader.string(raw, "dump_scene", path, DUMP_SCENES)),
            dump_kernel_data=_read_kernel_data(raw, path, reader),
            extra={k: v for k, v in raw.items() if k not in _SECTION_KEYS},
        )


def _read_items(raw: Mapping[str, Any], path: str, reader: RawReader) -> tuple[DumpListItem, ...] | None:
    pairs = reader.objects(raw, "dump_list", path)
    return (
        None if pairs is None else tuple(DumpListItem.read(obj, obj_path, reader) for obj_path, obj in pairs)
    )


def _read_kernel_data(raw: Mapping[str, Any], path: str, reader: RawReader) -> str | None:
    value = reader.string(raw, "dump_kernel_data", path)
    if value is None:
        return None
    unknown = [part for part in value.split(",") if part.strip() not in KERNEL_DATA]
    if unknown:
        allowed = ", ".join(KERNEL_DATA)
        bad = ", ".join(repr(part) for part in unknown)
        reader.report(child(path, "dump_kernel_data"), "3", f"{bad} not allowed; a comma list of {allowed}")
        return None
    return value


@dataclass(frozen=True, slots=True)
class AclConfig:
    """A whole acl.json / aclInit config: the dump section plus every other top-level key."""

    dump: DumpSection | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "extra", _frozen(self.extra))

    @property
    def enables_dump(self) -> bool:
        """False for a config CANN accepts but that dumps nothing (rules 1 and 10)."""
        return self.dump is not None and self.dump.enables_dump

    def to_dict(self) -> dict[str, Any]:
        out = copy.deepcopy(dict(self.extra))
        if self.dump is not None:
            out["dump"] = self.dump.to_dict()
        return out

    def to_json(self, indent: int | None = 4) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    @classmethod
    def from_json(cls, data: str | bytes | Mapping[str, Any], *, source: str = "<json>") -> AclConfig:
        """Build from JSON text or a decoded object; ConfigError on syntax, type or enum errors.

        Only rules 1–3 are checked here (what the typed model cannot hold); ``validate`` checks
        the rest, and ``load`` does both.
        """
        raw = parse_json_text(data, source) if isinstance(data, (str, bytes)) else data
        config, issues = read_config(raw)
        if config is None or issues:
            raise ConfigError(format_issues(source, issues), issues)
        return config

    @classmethod
    def build(cls, dump_path: str | None = None, **options: Any) -> AclConfig:
        """``from_json(build_raw(...))``: the builder for library callers."""
        return cls.from_json(build_raw(dump_path, **options), source="<built config>")

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the JSON atomically (temp file + rename): a reader never sees half a file."""
        target = Path(path)
        try:
            _write_atomically(target, self.to_json() + "\n")
        except OSError as exc:
            raise ConfigError(f"{target}: cannot write: {exc.strerror or exc}") from exc
        return target


def _write_atomically(target: Path, text: str) -> None:
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        # mkstemp creates 0600; the config is read by whichever user runs the model.
        os.chmod(temp, 0o644)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


# Top-level keys of an aclInit config besides "dump"; a document with none of them (an ATC json,
# a fusion rule) is some other file, and calling it "nothing to dump" would hide the mistake.
_INIT_KEYS = frozenset({"dump", "profiler", "err_msg_mode"})


def _not_an_acl_json(raw: Mapping[str, Any], reader: RawReader) -> None:
    keys = list(raw)
    if not keys or _INIT_KEYS.intersection(keys):
        return  # {} is rule 1's "nothing to do"
    misplaced = [key for key in keys if key in _SECTION_KEYS]
    shown = ", ".join(repr(key) for key in keys[:5]) + (", ..." if len(keys) > 5 else "")
    if misplaced:
        reader.report(ROOT, "1", f'{shown} must sit inside a "dump" object: {{"dump": {{...}}}}')
    else:
        reader.report(ROOT, "1", f'not an acl.json: no "dump" object, top-level keys {shown}')


def read_config(raw: Any) -> tuple[AclConfig | None, list[ConfigIssue]]:
    """Leniently read decoded JSON: the model of every well-typed value, plus rule 1–3 issues.

    The config is None only when the document is not a JSON object.
    """
    reader = RawReader()
    if not isinstance(raw, Mapping):
        reader.report(ROOT, "1", f"the document must be a JSON object, got {json_type(raw)}")
        return None, reader.issues
    extra = {k: v for k, v in raw.items() if k != "dump"}
    section = raw.get("dump")
    if "dump" not in raw:
        _not_an_acl_json(raw, reader)
        return AclConfig(extra=extra), reader.issues
    if not isinstance(section, Mapping):
        reader.report("dump", "1", f"must be an object, got {json_type(section)}")
        return AclConfig(extra=extra), reader.issues
    return AclConfig(DumpSection.read(section, "dump", reader), extra), reader.issues
