"""Reading raw acl.json values with their JSON paths (formats.md §3.2 rules 1–3).

``RawReader`` hands out only well-typed values and records a ``ConfigIssue`` for every value it
refuses, so one pass both builds the typed model and lists every type and enumeration error.
A refused value reads as absent, which lets the later rules still run on the rest of the file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from dumpcmp.errors import ConfigError

from .issues import ConfigIssue

__all__ = ["ROOT", "RawReader", "child", "item", "json_type", "parse_json_text"]

ROOT = "$"
# An acl.json nests four levels (dump, dump_list, entry, layer list); deeper JSON is not one, and
# the recursive code that copies and checks it would hit Python's recursion limit.
MAX_DEPTH = 32


def child(path: str, key: str) -> str:
    """The JSON path of ``key`` inside the object at ``path``."""
    return key if path == ROOT else f"{path}.{key}"


def item(path: str, index: int) -> str:
    """The JSON path of element ``index`` of the array at ``path``."""
    return f"{path}[{index}]"


def json_type(value: object) -> str:
    """The JSON name of a decoded value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):  # before int: bool is an int subclass
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    return "object" if isinstance(value, Mapping) else type(value).__name__


def parse_json_text(text: str | bytes, source: str) -> Any:
    """Decode JSON text; a syntax error becomes a ConfigError naming source, line and column."""
    too_deep = False
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys)
    except _RepeatedKey as exc:
        issue = ConfigIssue(ROOT, "1", f"key {exc.key!r} appears twice in one object")
        raise ConfigError(
            f"{source}: key {exc.key!r} appears twice in one object (only one of them would count)", [issue]
        ) from None
    except json.JSONDecodeError as exc:
        issue = ConfigIssue(ROOT, "1", f"not valid JSON: {exc.msg}")
        where = f"{source}: line {exc.lineno}, column {exc.colno}"
        raise ConfigError(f"{where}: not valid JSON: {exc.msg}", [issue]) from exc
    except UnicodeDecodeError as exc:
        issue = ConfigIssue(ROOT, "1", "not UTF-8 text")
        raise ConfigError(f"{source}: not UTF-8 text", [issue]) from exc
    except RecursionError:
        too_deep = True  # nested beyond what json's recursive decoder can read
    if too_deep or _too_deep(value):
        issue = ConfigIssue(ROOT, "1", f"nested more than {MAX_DEPTH} levels deep")
        raise ConfigError(f"{source}: JSON nested more than {MAX_DEPTH} levels deep", [issue]) from None
    return value


class _RepeatedKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice: json keeps the last silently, so a second
    "dump_path" would quietly replace the first."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _RepeatedKey(key)
        found[key] = value
    return found


def _too_deep(value: Any) -> bool:
    """Whether containers nest beyond MAX_DEPTH; iterative, so any depth is safe to ask about."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        for element in children:
            if isinstance(element, (dict, list)):
                if depth >= MAX_DEPTH:
                    return True
                stack.append((element, depth + 1))
    return False


class RawReader:
    """Takes typed values out of decoded JSON objects, collecting an issue for each refusal."""

    def __init__(self) -> None:
        self.issues: list[ConfigIssue] = []

    def report(self, path: str, rule: str, message: str) -> None:
        self.issues.append(ConfigIssue(path, rule, message))

    def string(
        self, obj: Mapping[str, Any], key: str, path: str, choices: tuple[str, ...] | None = None
    ) -> str | None:
        """``obj[key]`` if it is a string (and one of ``choices``); None if absent or refused."""
        if key not in obj:
            return None
        return self._checked_string(obj[key], child(path, key), choices)

    def strings(
        self, obj: Mapping[str, Any], key: str, path: str, choices: tuple[str, ...] | None = None
    ) -> tuple[str, ...] | None:
        """``obj[key]`` as a tuple of strings; elements that are refused are left out, and a list
        of refused elements only is None: as empty it would get a second, false "must not be
        empty" issue for what the user did give."""
        if key not in obj:
            return None
        value, key_path = obj[key], child(path, key)
        if not isinstance(value, list):
            self.report(key_path, "2", f"must be an array of strings, got {json_type(value)}")
            return None
        checked = (self._checked_string(v, item(key_path, i), choices) for i, v in enumerate(value))
        kept = tuple(s for s in checked if s is not None)
        return kept if kept or not value else None

    def objects(
        self, obj: Mapping[str, Any], key: str, path: str
    ) -> list[tuple[str, Mapping[str, Any]]] | None:
        """``obj[key]`` as (path, object) pairs; elements that are not objects are left out."""
        if key not in obj:
            return None
        value, key_path = obj[key], child(path, key)
        if not isinstance(value, list):
            self.report(key_path, "2", f"must be an array of objects, got {json_type(value)}")
            return None
        pairs = []
        for index, element in enumerate(value):
            if isinstance(element, Mapping):
                pairs.append((item(key_path, index), element))
            else:
                self.report(item(key_path, index), "2", f"must be an object, got {json_type(element)}")
        return pairs

    def required_string(self, obj: Mapping[str, Any], key: str, path: str) -> str | None:
        """Like ``string`` but a missing key is an issue too (blacklist names, range ends)."""
        if key not in obj:
            self.report(child(path, key), "2", "is required (a string)")
            return None
        return self.string(obj, key, path)

    def _checked_string(self, value: object, path: str, choices: tuple[str, ...] | None) -> str | None:
        if not isinstance(value, str):
            self.report(path, "2", f"must be a string, got {json_type(value)}")
            return None
        if choices is not None and value not in choices:
            allowed = ", ".join(repr(c) for c in choices)
            what = "must not be empty" if value == "" else f"{value!r} is not allowed"
            self.report(path, "3", f"{what}; expected one of {allowed}")
            return None
        return value
