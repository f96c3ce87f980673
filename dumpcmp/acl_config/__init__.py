"""acl.json: the AscendCL dump configuration (formats.md §3) — model, builder, validator.

``AclConfig.from_json`` / ``to_json`` read and write it, ``build_raw`` + ``validate`` turn
CLI-style values into a checked document, ``load`` reads a file strictly, and ``parse_steps``
tells the simulated NPU which iterations to dump.
"""

from .builder import DumpTarget, build_raw
from .issues import ConfigIssue, format_issues
from .model import (
    DUMP_DATA,
    DUMP_LEVELS,
    DUMP_MODES,
    DUMP_SCENES,
    DUMP_STATS,
    EXCEPTION_SCENES,
    KERNEL_DATA,
    SWITCHES,
    AclConfig,
    BlacklistEntry,
    DumpData,
    DumpLevel,
    DumpListItem,
    DumpMode,
    DumpScene,
    DumpSection,
    DumpStat,
    OpRange,
    Switch,
    read_config,
)
from .rules import MAX_BLACKLIST_ENTRIES, MAX_DUMP_PATH_LENGTH, is_remote_path, load, validate
from .steps import MAX_STEP_ITEMS, StepSet, parse_steps
from .summary import describe

__all__ = [
    "DUMP_DATA",
    "DUMP_LEVELS",
    "DUMP_MODES",
    "DUMP_SCENES",
    "DUMP_STATS",
    "EXCEPTION_SCENES",
    "KERNEL_DATA",
    "MAX_BLACKLIST_ENTRIES",
    "MAX_DUMP_PATH_LENGTH",
    "MAX_STEP_ITEMS",
    "SWITCHES",
    "AclConfig",
    "BlacklistEntry",
    "ConfigIssue",
    "DumpData",
    "DumpLevel",
    "DumpListItem",
    "DumpMode",
    "DumpScene",
    "DumpSection",
    "DumpStat",
    "DumpTarget",
    "OpRange",
    "StepSet",
    "Switch",
    "build_raw",
    "describe",
    "format_issues",
    "is_remote_path",
    "load",
    "parse_steps",
    "read_config",
    "validate",
]
