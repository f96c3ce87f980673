"""Every rule of formats.md §3.2 over a raw acl.json document, and the strict ``load``.

Rules 1–3 (JSON, types, enumerations) are found while reading the document (``reader.py``);
rules 4–9 run here on the typed model of whatever was well-typed. Rule 10 ("nothing to dump")
is not an issue: it is ``AclConfig.enables_dump``.
"""

from __future__ import annotations

import os
import re
import string
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from dumpcmp.errors import ConfigError

from .issues import ConfigIssue, format_issues
from .model import AclConfig, BlacklistEntry, DumpListItem, DumpSection, read_config
from .reader import item, parse_json_text
from .steps import STEP_PATH, STEP_RULE, step_problems

__all__ = ["MAX_BLACKLIST_ENTRIES", "MAX_DUMP_PATH_LENGTH", "is_remote_path", "load", "validate"]

MAX_DUMP_PATH_LENGTH = 512
MAX_BLACKLIST_ENTRIES = 100

_REMOTE = re.compile(r"([0-9.]+):(.*)", re.DOTALL)
_OCTET = re.compile(r"[0-9]{1,3}")
_REMOTE_PATH_CHARS = frozenset(string.ascii_letters + string.digits + "-=[];\\,./!@#$%^&*()_+{}:?")
_POSITION = re.compile(r"(input|output)[0-9]+")
_EXCEPTION_FORBIDDEN = (
    "dump_mode", "dump_level", "dump_data", "dump_debug", "dump_op_switch", "dump_kernel_data",
    "dump_step", "dump_stats", "dump_list",
)  # fmt: skip
_WATCHER_FORBIDDEN = ("dump_level", "dump_data", "dump_kernel_data", "dump_step", "dump_stats")

Issues = Iterator[ConfigIssue]


def validate(config: AclConfig | Mapping[str, Any] | Any, *, check_paths: bool = True) -> list[ConfigIssue]:
    """Every issue of a config (rules 1–3 first, then 4–9); empty when CANN would accept it.

    Pass the decoded JSON (not an AclConfig) where possible, so that type errors are seen.
    ``check_paths=False`` skips the local-directory checks of rule 5, for a config written
    on one machine and used on another.
    """
    raw = config.to_dict() if isinstance(config, AclConfig) else config
    model, issues = read_config(raw)
    if model is not None and model.dump is not None:
        # A refused value reads as absent; "dump_path is required" after "dump_path must be a
        # string" would report one mistake twice, so later rules skip paths already reported.
        refused = {issue.path for issue in issues}
        later = _section_issues(model.dump, check_paths)
        issues.extend(issue for issue in later if not _within(issue.path, refused))
    return issues


def _within(path: str, reported: set[str]) -> bool:
    return any(path == r or path.startswith((f"{r}.", f"{r}[")) for r in reported)


def load(path: str | os.PathLike[str], *, check_paths: bool = True) -> AclConfig:
    """Read and validate an acl.json; ConfigError naming the file if anything is wrong."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # -sig: editors on Windows add a BOM
    except FileNotFoundError as exc:
        raise ConfigError(f"{source}: no such file") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not UTF-8 text") from exc
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read: {exc.strerror or exc}") from exc
    raw = parse_json_text(text, source)
    issues = validate(raw, check_paths=check_paths)
    if issues:
        raise ConfigError(format_issues(source, issues), issues)
    return AclConfig.from_json(raw, source=source)


def is_remote_path(dump_path: str) -> bool:
    """Whether a dump_path is meant as ``ip:path`` (the host part is digits and dots)."""
    return _REMOTE.fullmatch(dump_path) is not None


def _section_issues(dump: DumpSection, check_paths: bool) -> Issues:
    yield from _scene_issues(dump)
    yield from _path_issues(dump, check_paths)
    # A scene forbids the keys rules 6, 7 and 9 are about (rule 4), so they only apply to
    # data and overflow dumps; checking them too would report one mistake twice.
    if dump.dump_scene is None:
        yield from _debug_issues(dump)
        yield from _step_issues(dump)
        yield from _stats_issues(dump)
    if not dump.is_exception_scene:
        for index, entry in enumerate(dump.dump_list or ()):
            yield from _item_issues(dump, entry, item("dump.dump_list", index))


def _scene_issues(dump: DumpSection) -> Issues:
    """Rule 4: what each dump_scene forbids."""
    scene = dump.dump_scene
    if dump.is_exception_scene:
        for key in _EXCEPTION_FORBIDDEN:
            if getattr(dump, key) is not None:
                yield ConfigIssue(f"dump.{key}", "4", f"is not allowed with dump_scene {scene!r}")
    elif scene == "watcher":
        yield from _watcher_issues(dump)
    else:
        for index, entry in enumerate(dump.dump_list or ()):
            if entry.watcher_nodes is not None:
                path = item("dump.dump_list", index) + ".watcher_nodes"
                yield ConfigIssue(path, "4", "is only allowed with dump_scene 'watcher'")


def _watcher_issues(dump: DumpSection) -> Issues:
    not_allowed = "is not allowed with dump_scene 'watcher'"
    if dump.debug_on:
        yield ConfigIssue("dump.dump_debug", "4", f"'on' {not_allowed}")
    if dump.op_switch_on:
        yield ConfigIssue("dump.dump_op_switch", "4", f"'on' {not_allowed}")
    if dump.dump_mode not in (None, "output"):
        yield ConfigIssue("dump.dump_mode", "4", f"{dump.dump_mode!r} {not_allowed} (only 'output')")
    for key in _WATCHER_FORBIDDEN:
        if getattr(dump, key) is not None:
            yield ConfigIssue(f"dump.{key}", "4", not_allowed)
    for index, entry in enumerate(dump.dump_list or ()):
        path = item("dump.dump_list", index)
        if not entry.watcher_nodes:
            yield ConfigIssue(
                f"{path}.watcher_nodes", "4", "a non-empty list is required with dump_scene 'watcher'"
            )
        if entry.model_name is not None:
            yield ConfigIssue(f"{path}.model_name", "4", not_allowed)


def _path_issues(dump: DumpSection, check_paths: bool) -> Issues:
    """Rule 5: dump_path is required outside exception scenes, and must be usable."""
    path = dump.dump_path
    if path is None:
        # A section that dumps nothing needs no destination (rule 10), and exception scenes
        # fall back to ASCEND_DUMP_PATH / ASCEND_WORK_PATH or the working directory.
        if dump.enables_dump and not dump.is_exception_scene:
            yield ConfigIssue("dump.dump_path", "5", "is required")
        return
    problem = _dump_path_problem(path, check_paths)
    if problem:
        yield ConfigIssue("dump.dump_path", "5", problem)


def _dump_path_problem(path: str, check_paths: bool) -> str:
    if path == "":
        return "must not be empty"
    if len(path) > MAX_DUMP_PATH_LENGTH:
        return f"is {len(path)} characters long, at most {MAX_DUMP_PATH_LENGTH} are allowed"
    remote = _REMOTE.fullmatch(path)
    if remote is not None:
        return _remote_problem(remote.group(1), remote.group(2))
    return _local_problem(path) if check_paths else ""


def _remote_problem(host: str, remote_path: str) -> str:
    octets = host.split(".")
    if len(octets) != 4 or not all(_OCTET.fullmatch(o) and int(o) <= 255 for o in octets):
        return f"{host!r} is not an IPv4 address (four numbers 0-255) in 'ip:path'"
    if remote_path == "":
        return "the path after 'ip:' is empty"
    bad = sorted(set(remote_path) - _REMOTE_PATH_CHARS)
    if bad:
        return f"the remote path contains characters that are not allowed: {''.join(bad)!r}"
    return ""


def _local_problem(path: str) -> str:
    local = Path(path)
    if not local.exists():
        hint = " (a remote dump_path is 'IPv4:path')" if ":" in path else ""
        return f"{path!r} does not exist{hint}"
    if not local.is_dir():
        return f"{path!r} is not a directory"
    if not os.access(local, os.R_OK | os.W_OK):
        return f"{path!r} is not readable and writable by this user"
    return ""


def _debug_issues(dump: DumpSection) -> Issues:
    """Rule 6: the overflow dump excludes single-op dumps and dump_list."""
    if not dump.debug_on:
        return
    if dump.op_switch_on:
        yield ConfigIssue("dump.dump_op_switch", "6", "must not be 'on' when dump_debug is 'on'")
    if dump.dump_list is not None:
        yield ConfigIssue("dump.dump_list", "6", "must be left out when dump_debug is 'on'")


def _step_issues(dump: DumpSection) -> Issues:
    """Rule 7: dump_step syntax."""
    if dump.dump_step is not None:
        for problem in step_problems(dump.dump_step):
            yield ConfigIssue(STEP_PATH, STEP_RULE, problem)


def _stats_issues(dump: DumpSection) -> Issues:
    """Rule 9: dump_stats is a non-empty choice of statistics, for dump_data 'stats' only."""
    if dump.dump_stats is None:
        return
    if not dump.dump_stats:
        yield ConfigIssue("dump.dump_stats", "9", "must not be empty; leave it out for the default set")
    repeated = sorted({name for index, name in enumerate(dump.dump_stats) if name in dump.dump_stats[:index]})
    if repeated:
        names = ", ".join(repeated)
        yield ConfigIssue("dump.dump_stats", "9", f"names {names} more than once; name each once")
    if dump.data != "stats":
        yield ConfigIssue(
            "dump.dump_stats", "9", f"is only allowed with dump_data 'stats', not {dump.data!r}"
        )


def _item_issues(dump: DumpSection, entry: DumpListItem, path: str) -> Issues:
    """Rule 8: one dump_list entry."""
    # With dump_op_switch on, CANN dumps single ops whatever the list says about models.
    if not dump.op_switch_on:
        if entry.model_name == "":
            yield ConfigIssue(f"{path}.model_name", "8", "must not be empty; leave it out to match any model")
        if entry.layer == ():
            yield ConfigIssue(f"{path}.layer", "8", "must not be empty; leave it out to dump every op")
    for index, name in enumerate(entry.layer or ()):
        if name == "":
            yield ConfigIssue(item(f"{path}.layer", index), "8", "an op name must not be empty")
    for key in ("optype_blacklist", "opname_blacklist"):
        entries: tuple[BlacklistEntry, ...] | None = getattr(entry, key)
        if entries is not None:
            yield from _op_level_only(dump, f"{path}.{key}")
            yield from _blacklist_issues(entries, f"{path}.{key}")
    if entry.opname_range is not None:
        yield from _op_level_only(dump, f"{path}.opname_range")
        if not entry.model_name:
            yield ConfigIssue(f"{path}.opname_range", "8", "needs the entry's model_name")
        for index, op_range in enumerate(entry.opname_range):
            if "" in (op_range.begin, op_range.end):
                yield ConfigIssue(item(f"{path}.opname_range", index), "8", "begin and end must not be empty")


def _op_level_only(dump: DumpSection, path: str) -> Issues:
    if dump.level != "op":
        yield ConfigIssue(path, "8", f"is only allowed with dump_level 'op', not {dump.level!r}")


def _blacklist_issues(entries: tuple[BlacklistEntry, ...], path: str) -> Issues:
    if len(entries) > MAX_BLACKLIST_ENTRIES:
        yield ConfigIssue(
            path, "8", f"has {len(entries)} entries, at most {MAX_BLACKLIST_ENTRIES} are allowed"
        )
    for index, entry in enumerate(entries):
        entry_path = item(path, index)
        if entry.name == "":
            yield ConfigIssue(f"{entry_path}.name", "8", "must not be empty")
        for pos_index, pos in enumerate(entry.pos or ()):
            if _POSITION.fullmatch(pos) is None:
                message = f"{pos!r} is not a position like 'input0' or 'output1'"
                yield ConfigIssue(item(f"{entry_path}.pos", pos_index), "8", message)
