"""formats.md §3.2: every rule has passing and failing documents, and ``load`` is strict.

Documents are written with the placeholder ``DIR`` for dump_path; each test swaps in a real
directory under tmp_path, because rule 5 wants an existing, writable local directory.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from dumpcmp.acl_config import AclConfig, ConfigIssue, DumpSection, load, validate
from dumpcmp.errors import ConfigError

DIR = "<DIR>"
MODEL = [{"model_name": "ResNet-50"}]


def issue_pairs(error: ConfigError) -> list[tuple[str, str]]:
    """(path, rule) of a ConfigError's issues; ConfigError types them loosely, as objects."""
    assert all(isinstance(i, ConfigIssue) for i in error.issues)
    return [(i.path, i.rule) for i in error.issues if isinstance(i, ConfigIssue)]


def doc(**dump: Any) -> dict[str, Any]:
    """A data-dump document: dump_path and one model unless overridden (None drops a key)."""
    section = {"dump_path": DIR, "dump_list": MODEL, **dump}
    return {"dump": {k: v for k, v in section.items() if v is not None}}


def scene(name: str, **dump: Any) -> dict[str, Any]:
    return {"dump": {"dump_scene": name, **dump}}


WATCHER_ITEM = {"layer": ["conv1"], "watcher_nodes": ["relu1"]}


def watcher(**dump: Any) -> dict[str, Any]:
    return {"dump": {"dump_path": DIR, "dump_scene": "watcher", "dump_list": [WATCHER_ITEM], **dump}}


def bl(*pos: str, name: str = "Cast") -> dict[str, Any]:
    return {"name": name, "pos": list(pos)}


def item(**fields: Any) -> dict[str, Any]:
    return {"dump": {"dump_path": DIR, "dump_level": "op", "dump_list": [fields]}}


def _fill(value: Any, directory: str) -> Any:
    """Replace the DIR placeholder anywhere in a document."""
    if isinstance(value, str):
        return value.replace(DIR, directory)
    if isinstance(value, list):
        return [_fill(v, directory) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, directory) for k, v in value.items()}
    return value


def issues_of(document: Any, tmp_path: Path) -> set[tuple[str, str]]:
    return {(i.path, i.rule) for i in validate(_fill(document, str(tmp_path)))}


# (id, document, expected (path, rule) pairs) — the failing side of every rule.
FAILING: list[tuple[str, Any, set[tuple[str, str]]]] = [
    # Rule 1: the document and "dump" must be objects.
    ("1-array-document", [], {("$", "1")}),
    ("1-string-document", "dump", {("$", "1")}),
    ("1-dump-array", {"dump": []}, {("dump", "1")}),
    ("1-dump-string", {"dump": "on"}, {("dump", "1")}),
    # Rule 2: types.
    ("2-path-number", doc(dump_path=5), {("dump.dump_path", "2")}),
    ("2-mode-bool", doc(dump_mode=True), {("dump.dump_mode", "2")}),
    ("2-step-number", doc(dump_step=5), {("dump.dump_step", "2")}),
    ("2-op-switch-null", doc(dump_op_switch=[]), {("dump.dump_op_switch", "2")}),
    ("2-level-object", doc(dump_level={}), {("dump.dump_level", "2")}),
    ("2-scene-number", {"dump": {"dump_scene": 1}}, {("dump.dump_scene", "2")}),
    ("2-data-number", doc(dump_data=0), {("dump.dump_data", "2")}),
    ("2-debug-bool", doc(dump_debug=False), {("dump.dump_debug", "2")}),
    ("2-kernel-data-array", doc(dump_kernel_data=["printf"]), {("dump.dump_kernel_data", "2")}),
    ("2-stats-string", doc(dump_data="stats", dump_stats="Max"), {("dump.dump_stats", "2")}),
    ("2-stats-item", doc(dump_data="stats", dump_stats=["Max", 1]), {("dump.dump_stats[1]", "2")}),
    ("2-list-object", doc(dump_list={"model_name": "m"}), {("dump.dump_list", "2")}),
    ("2-list-item-string", doc(dump_list=["m"]), {("dump.dump_list[0]", "2")}),
    ("2-model-name-number", doc(dump_list=[{"model_name": 1}]), {("dump.dump_list[0].model_name", "2")}),
    ("2-layer-string", doc(dump_list=[{"layer": "conv1"}]), {("dump.dump_list[0].layer", "2")}),
    ("2-layer-item", doc(dump_list=[{"layer": ["a", 2]}]), {("dump.dump_list[0].layer[1]", "2")}),
    (
        "2-watcher-nodes-item",
        watcher(dump_list=[{"watcher_nodes": ["a", None]}]),
        {("dump.dump_list[0].watcher_nodes[1]", "2")},
    ),
    (
        "2-pos-string",
        item(optype_blacklist=[{"name": "Cast", "pos": "input0"}]),
        {("dump.dump_list[0].optype_blacklist[0].pos", "2")},
    ),
    (
        "2-blacklist-name-missing",
        item(opname_blacklist=[{"pos": ["input0"]}]),
        {("dump.dump_list[0].opname_blacklist[0].name", "2")},
    ),
    (
        "2-range-end-missing",
        item(model_name="m", opname_range=[{"begin": "a"}]),
        {("dump.dump_list[0].opname_range[0].end", "2")},
    ),
    # Rule 3: enumerations, and empty strings where a choice is expected.
    ("3-mode", doc(dump_mode="Output"), {("dump.dump_mode", "3")}),
    ("3-mode-empty", doc(dump_mode=""), {("dump.dump_mode", "3")}),
    ("3-data", doc(dump_data="tensors"), {("dump.dump_data", "3")}),
    ("3-op-switch", doc(dump_op_switch="ON"), {("dump.dump_op_switch", "3")}),
    ("3-debug", doc(dump_debug="yes"), {("dump.dump_debug", "3")}),
    ("3-level", doc(dump_level="graph"), {("dump.dump_level", "3")}),
    ("3-level-empty", doc(dump_level=""), {("dump.dump_level", "3")}),
    ("3-scene", {"dump": {"dump_scene": "exception"}}, {("dump.dump_scene", "3")}),
    ("3-stats-item", doc(dump_data="stats", dump_stats=["Max", "max"]), {("dump.dump_stats[1]", "3")}),
    ("3-kernel-data", doc(dump_kernel_data="printf,bogus"), {("dump.dump_kernel_data", "3")}),
    # Rule 4: exception scenes forbid every data-dump key ...
    *(
        (f"4-exception-{key}", scene("aic_err_norm_dump", **{key: value}), {(f"dump.{key}", "4")})
        for key, value in [
            ("dump_mode", "output"),
            ("dump_level", "all"),
            ("dump_data", "tensor"),
            ("dump_debug", "off"),
            ("dump_op_switch", "off"),
            ("dump_kernel_data", "all"),
            ("dump_step", "1"),
            ("dump_stats", ["Max"]),
            ("dump_list", []),
        ]
    ),
    # ... and the watcher scene most of them.
    ("4-watcher-debug", watcher(dump_debug="on"), {("dump.dump_debug", "4")}),
    ("4-watcher-op-switch", watcher(dump_op_switch="on"), {("dump.dump_op_switch", "4")}),
    ("4-watcher-mode", watcher(dump_mode="all"), {("dump.dump_mode", "4")}),
    ("4-watcher-level", watcher(dump_level="op"), {("dump.dump_level", "4")}),
    ("4-watcher-data", watcher(dump_data="tensor"), {("dump.dump_data", "4")}),
    ("4-watcher-kernel-data", watcher(dump_kernel_data="printf"), {("dump.dump_kernel_data", "4")}),
    ("4-watcher-step", watcher(dump_step="0"), {("dump.dump_step", "4")}),
    ("4-watcher-stats", watcher(dump_stats=["Max"]), {("dump.dump_stats", "4")}),
    (
        "4-watcher-no-nodes",
        watcher(dump_list=[{"layer": ["conv1"]}]),
        {("dump.dump_list[0].watcher_nodes", "4")},
    ),
    (
        "4-watcher-empty-nodes",
        watcher(dump_list=[WATCHER_ITEM, {"watcher_nodes": []}]),
        {("dump.dump_list[1].watcher_nodes", "4")},
    ),
    (
        "4-watcher-model-name",
        watcher(dump_list=[{"model_name": "m", "watcher_nodes": ["a"]}]),
        {("dump.dump_list[0].model_name", "4")},
    ),
    (
        "4-watcher-nodes-without-scene",
        doc(dump_list=[{"model_name": "m", "watcher_nodes": ["a"]}]),
        {("dump.dump_list[0].watcher_nodes", "4")},
    ),
    # Rule 5: dump_path.
    ("5-missing", doc(dump_path=None), {("dump.dump_path", "5")}),
    ("5-missing-single-op", {"dump": {"dump_list": [], "dump_op_switch": "on"}}, {("dump.dump_path", "5")}),
    ("5-missing-watcher", {"dump": {"dump_scene": "watcher"}}, {("dump.dump_path", "5")}),
    ("5-empty", doc(dump_path=""), {("dump.dump_path", "5")}),
    ("5-too-long", doc(dump_path="9.9.9.9:/" + "a" * 504), {("dump.dump_path", "5")}),
    ("5-not-existing", doc(dump_path=DIR + "/missing"), {("dump.dump_path", "5")}),
    ("5-octet-too-big", doc(dump_path="192.168.1.256:/dump"), {("dump.dump_path", "5")}),
    ("5-three-octets", doc(dump_path="10.0.1:/dump"), {("dump.dump_path", "5")}),
    ("5-five-octets", doc(dump_path="10.0.0.1.2:/dump"), {("dump.dump_path", "5")}),
    ("5-long-octet", doc(dump_path="10.0.0.0001:/dump"), {("dump.dump_path", "5")}),
    ("5-remote-empty-path", doc(dump_path="10.0.0.1:"), {("dump.dump_path", "5")}),
    ("5-remote-space", doc(dump_path="10.0.0.1:/my dump"), {("dump.dump_path", "5")}),
    ("5-remote-tilde", doc(dump_path="10.0.0.1:~/dump"), {("dump.dump_path", "5")}),
    # Rule 6: overflow dump.
    (
        "6-debug-op-switch",
        doc(dump_list=None, dump_debug="on", dump_op_switch="on"),
        {("dump.dump_op_switch", "6")},
    ),
    ("6-debug-empty-list", doc(dump_list=[], dump_debug="on"), {("dump.dump_list", "6")}),
    ("6-debug-list", doc(dump_debug="on"), {("dump.dump_list", "6")}),
    # Rule 7: dump_step syntax.
    *(
        (f"7-step-{text!r}", doc(dump_step=text), {("dump.dump_step", "7")})
        for text in ["", "a", "1-", "-1", "5-1", "1||2", " 1", "1.5", "1,2", "\u0661", "|".join(["1"] * 101)]
    ),
    # Rule 8: dump_list entries.
    ("8-empty-model-name", doc(dump_list=[{"model_name": ""}]), {("dump.dump_list[0].model_name", "8")}),
    ("8-empty-layer", doc(dump_list=[{"model_name": "m", "layer": []}]), {("dump.dump_list[0].layer", "8")}),
    (
        "8-empty-layer-name",
        doc(dump_list=[MODEL[0], {"layer": ["conv1", ""]}]),
        {("dump.dump_list[1].layer[1]", "8")},
    ),
    (
        "8-blacklist-level-all",
        doc(dump_list=[{"optype_blacklist": [bl("input0")]}]),
        {("dump.dump_list[0].optype_blacklist", "8")},
    ),
    (
        "8-blacklist-level-kernel",
        doc(dump_level="kernel", dump_list=[{"opname_blacklist": [bl("input0")]}]),
        {("dump.dump_list[0].opname_blacklist", "8")},
    ),
    (
        "8-range-level-all",
        doc(dump_list=[{"model_name": "m", "opname_range": [{"begin": "a", "end": "b"}]}]),
        {("dump.dump_list[0].opname_range", "8")},
    ),
    (
        "8-range-without-model",
        item(opname_range=[{"begin": "a", "end": "b"}]),
        {("dump.dump_list[0].opname_range", "8")},
    ),
    (
        "8-range-empty-end",
        item(model_name="m", opname_range=[{"begin": "a", "end": ""}]),
        {("dump.dump_list[0].opname_range[0]", "8")},
    ),
    (
        "8-too-many-blacklist-entries",
        item(optype_blacklist=[bl("input0", name=f"T{i}") for i in range(101)]),
        {("dump.dump_list[0].optype_blacklist", "8")},
    ),
    (
        "8-bad-pos",
        item(optype_blacklist=[bl("input0", "in1")]),
        {("dump.dump_list[0].optype_blacklist[0].pos[1]", "8")},
    ),
    (
        "8-pos-capital",
        item(opname_blacklist=[bl("Output0")]),
        {("dump.dump_list[0].opname_blacklist[0].pos[0]", "8")},
    ),
    (
        "8-pos-no-index",
        item(opname_blacklist=[bl("output")]),
        {("dump.dump_list[0].opname_blacklist[0].pos[0]", "8")},
    ),
    (
        "8-empty-blacklist-name",
        item(opname_blacklist=[bl("input0", name="")]),
        {("dump.dump_list[0].opname_blacklist[0].name", "8")},
    ),
    # Rule 9: dump_stats.
    ("9-stats-empty", doc(dump_data="stats", dump_stats=[]), {("dump.dump_stats", "9")}),
    ("9-stats-without-data", doc(dump_stats=["Max"]), {("dump.dump_stats", "9")}),
    ("9-stats-with-tensor", doc(dump_data="tensor", dump_stats=["Max"]), {("dump.dump_stats", "9")}),
    ("9-stats-repeated", doc(dump_data="stats", dump_stats=["Max", "Max"]), {("dump.dump_stats", "9")}),
]

# (id, document) — the passing side of every rule.
PASSING: list[tuple[str, Any]] = [
    # Rule 1: no "dump", or an empty one, is nothing to do.
    ("1-empty-document", {}),
    ("1-other-keys-only", {"err_msg_mode": "1"}),
    ("1-empty-dump", {"dump": {}}),
    # Rules 2 and 3: every key with a well-typed, allowed value.
    ("2-typical", doc(dump_mode="all", dump_op_switch="off", dump_step="0|5", dump_level="all")),
    *((f"3-mode-{v}", doc(dump_mode=v)) for v in ["input", "output", "all"]),
    *((f"3-op-switch-{v}", doc(dump_op_switch=v)) for v in ["on", "off"]),
    *((f"3-level-{v}", doc(dump_level=v)) for v in ["op", "kernel", "all"]),
    ("3-data-tensor", doc(dump_data="tensor")),
    ("3-debug-off", doc(dump_debug="off")),
    ("3-debug-on", doc(dump_list=None, dump_debug="on")),
    (
        "3-all-stats",
        doc(
            dump_data="stats",
            dump_stats=["Max", "Min", "Avg", "Nan", "Negative Inf", "Positive Inf", "L2norm"],
        ),
    ),
    *((f"3-kernel-data-{v}", doc(dump_kernel_data=v)) for v in ["all", "printf,assert", "tensor,timestamp"]),
    # Rule 4: each scene with what it allows.
    *(
        (f"4-{s}", scene(s))
        for s in ["lite_exception", "aic_err_brief_dump", "aic_err_norm_dump", "aic_err_detail_dump"]
    ),
    ("4-exception-with-path", scene("lite_exception", dump_path=DIR)),
    ("4-watcher", watcher()),
    ("4-watcher-output", watcher(dump_mode="output", dump_debug="off", dump_op_switch="off")),
    # Rule 5: a writable local directory, or ip:path.
    ("5-local-dir", doc()),
    ("5-remote", doc(dump_path="192.168.1.10:/home/dump")),
    ("5-remote-odd-chars", doc(dump_path="0.0.0.255:/a-b_c/[x];{y}+=!@#$%^&*(),.?:z\\w")),
    ("5-exception-scene-needs-no-path", scene("aic_err_brief_dump")),
    ("5-nothing-to-dump-needs-no-path", {"dump": {"dump_list": [], "dump_mode": "all"}}),
    # Rule 6: an overflow dump alone, and single-op dumps without it.
    ("6-debug-alone", doc(dump_list=None, dump_debug="on", dump_op_switch="off")),
    ("6-op-switch-without-debug", doc(dump_list=[], dump_op_switch="on", dump_debug="off")),
    # Rule 7: steps and ranges.
    *(
        (f"7-step-{text[:20]!r}", doc(dump_step=text))
        for text in ["0", "0|5|10-20", "3-3", "2147483647", "007", "|".join(["1"] * 100)]
    ),
    # Rule 8: dump_list entries.
    (
        "8-model-and-layers",
        doc(dump_list=[{"model_name": "m", "layer": ["conv1", "fc"]}, {"model_name": "n"}]),
    ),
    ("8-layers-any-model", doc(dump_list=[{"layer": ["conv1"]}])),
    ("8-op-switch-ignores-empties", doc(dump_op_switch="on", dump_list=[{"model_name": "", "layer": []}])),
    (
        "8-blacklists-level-op",
        item(optype_blacklist=[bl("input0", "output12")], opname_blacklist=[bl(name="x/y")]),
    ),
    ("8-blacklist-without-pos", item(optype_blacklist=[{"name": "Cast"}])),
    ("8-range-with-model", item(model_name="m", opname_range=[{"begin": "a", "end": "b"}])),
    ("8-hundred-entries", item(optype_blacklist=[bl("input0", name=f"T{i}") for i in range(100)])),
    # Rule 9: statistics for dump_data=stats.
    ("9-stats-subset", doc(dump_data="stats", dump_stats=["Max", "Min"])),
    ("9-stats-default-set", doc(dump_data="stats")),
]


@pytest.mark.parametrize(("document", "expected"), [c[1:] for c in FAILING], ids=[c[0] for c in FAILING])
def test_rule_violation_is_reported_with_its_path(document: Any, expected: set[Any], tmp_path: Path) -> None:
    assert issues_of(document, tmp_path) == expected


@pytest.mark.parametrize("document", [c[1] for c in PASSING], ids=[c[0] for c in PASSING])
def test_valid_document_has_no_issue(document: Any, tmp_path: Path) -> None:
    assert issues_of(document, tmp_path) == set()


def test_every_rule_has_passing_and_failing_cases() -> None:
    def rule(case_id: str) -> str:
        return case_id.split("-")[0]

    rules = {str(n) for n in range(1, 10)}  # rule 10 is not an issue: see the enables_dump tests
    assert {rule(c[0]) for c in FAILING} == rules
    assert {rule(c[0]) for c in PASSING} == rules
    assert all(rule(c[0]) == r for c in FAILING for (_, r) in c[2])


def test_all_issues_are_reported_at_once(tmp_path: Path) -> None:
    document = doc(dump_path=DIR + "/missing", dump_mode="every", dump_step="x", dump_stats=["Max"])
    assert issues_of(document, tmp_path) == {
        ("dump.dump_mode", "3"),
        ("dump.dump_path", "5"),
        ("dump.dump_step", "7"),
        ("dump.dump_stats", "9"),
    }


def test_issue_messages_say_what_is_wrong(tmp_path: Path) -> None:
    [issue] = validate(_fill(doc(dump_mode="Output"), str(tmp_path)))
    assert issue == ConfigIssue("dump.dump_mode", "3", issue.message)
    assert "'Output'" in issue.message and "'output'" in issue.message
    assert str(issue) == f"dump.dump_mode: {issue.message} (rule 3)"


def test_dump_path_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    assert issues_of(doc(dump_path=DIR + "/f"), tmp_path) == {("dump.dump_path", "5")}


def test_dump_path_that_is_not_writable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The tests may run as root, for whom every directory is writable; ask os.access instead.
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == tmp_path else real_access(p, mode))
    [issue] = validate(_fill(doc(), str(tmp_path)))
    assert (issue.path, issue.rule) == ("dump.dump_path", "5")
    assert "readable and writable" in issue.message


def test_relative_dump_path_is_resolved_against_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "dumps").mkdir()
    monkeypatch.chdir(tmp_path)
    assert validate(doc(dump_path="dumps")) == []


def test_check_paths_false_skips_local_directory_checks() -> None:
    document = doc(dump_path="/no/such/dir")
    assert validate(document, check_paths=False) == []
    assert validate(doc(dump_path="300.0.0.1:/x"), check_paths=False) != []


def test_a_model_with_bad_values_is_validated_too() -> None:
    config = AclConfig(DumpSection(dump_mode="sideways", dump_list=()))  # type: ignore[arg-type]
    assert {(i.path, i.rule) for i in validate(config)} == {("dump.dump_mode", "3")}


# Rule 10: nothing to dump is success without enabling anything.
NOTHING_TO_DUMP = [
    {},
    {"dump": {}},
    {"dump": {"dump_path": DIR}},
    {"dump": {"dump_path": DIR, "dump_list": []}},
    {"dump": {"dump_list": [], "dump_op_switch": "off", "dump_debug": "off"}},
]
SOMETHING_TO_DUMP = [
    doc(),
    doc(dump_list=[], dump_op_switch="on"),
    doc(dump_list=None, dump_debug="on"),
    scene("lite_exception"),
    watcher(),
]


@pytest.mark.parametrize("document", NOTHING_TO_DUMP)
def test_nothing_to_dump_is_valid_but_enables_nothing(document: Any, tmp_path: Path) -> None:
    document = _fill(document, str(tmp_path))
    assert validate(document) == []
    assert not AclConfig.from_json(document).enables_dump


@pytest.mark.parametrize("document", SOMETHING_TO_DUMP)
def test_any_dump_target_enables_dumping(document: Any, tmp_path: Path) -> None:
    document = _fill(document, str(tmp_path))
    assert validate(document) == []
    assert AclConfig.from_json(document).enables_dump


# load(): the strict reader of files.


def write(tmp_path: Path, content: str | dict[str, Any] | list[Any]) -> Path:
    path = tmp_path / "acl.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def test_load_returns_the_model(tmp_path: Path) -> None:
    document = _fill(doc(dump_mode="all"), str(tmp_path))
    config = load(write(tmp_path, document))
    assert config == AclConfig.from_json(document)
    assert config.dump is not None and config.dump.mode == "all"


def test_load_accepts_a_byte_order_mark(tmp_path: Path) -> None:
    path = write(tmp_path, "\ufeff" + json.dumps(_fill(doc(), str(tmp_path))))
    assert load(path).enables_dump


def test_load_lists_every_issue_in_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, _fill(doc(dump_mode="x", dump_step="9-1"), str(tmp_path)))
    with pytest.raises(ConfigError) as caught:
        load(path)
    (line,) = str(caught.value).splitlines()  # an error is one line on the terminal
    head, first, second = re.split(r" ?\(\d\) ", line)
    assert head == f"{path}: 2 problems:"
    assert first.startswith("dump.dump_mode:") and first.endswith("(rule 3)")
    assert second.startswith("dump.dump_step:") and second.endswith("(rule 7)")
    assert issue_pairs(caught.value) == [
        ("dump.dump_mode", "3"),
        ("dump.dump_step", "7"),
    ]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{\n  "dump": {\n    "dump_mode": "all",\n  }\n}', "line 4, column 3"),
        ("", "line 1, column 1"),
        ('{"dump": ', "line 1, column 10"),
    ],
)
def test_load_names_file_line_and_column_of_bad_json(tmp_path: Path, content: str, expected: str) -> None:
    path = write(tmp_path, content)
    with pytest.raises(ConfigError, match="not valid JSON") as caught:
        load(path)
    assert str(caught.value).startswith(f"{path}: {expected}: ")


@pytest.mark.parametrize("content", [[], "x", 3, None])
def test_load_rejects_a_document_that_is_not_an_object(tmp_path: Path, content: Any) -> None:
    path = write(tmp_path, json.dumps(content))
    with pytest.raises(ConfigError, match="must be a JSON object") as caught:
        load(path)
    assert str(path) in str(caught.value)
    assert issue_pairs(caught.value) == [("$", "1")]


def test_load_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.json: no such file"):
        load(tmp_path / "nope.json")


def test_load_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load(tmp_path)


def test_load_binary_garbage(tmp_path: Path) -> None:
    path = tmp_path / "acl.json"
    path.write_bytes(b"\xff\xfe\x00{")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load(path)
