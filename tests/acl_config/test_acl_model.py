"""The acl.json model: JSON round trips, unknown keys, defaults, the builder and the writer."""

from __future__ import annotations

import dataclasses
import json
import re
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dumpcmp.acl_config import (
    DUMP_DATA,
    DUMP_LEVELS,
    DUMP_MODES,
    DUMP_SCENES,
    DUMP_STATS,
    SWITCHES,
    AclConfig,
    BlacklistEntry,
    ConfigIssue,
    DumpListItem,
    DumpSection,
    DumpTarget,
    OpRange,
    StepSet,
    build_raw,
    describe,
    validate,
)
from dumpcmp.errors import ConfigError

FULL: dict[str, Any] = {
    "err_msg_mode": "1",
    "dump": {
        "dump_path": "/home/output",
        "dump_list": [
            {"model_name": "ResNet-101"},
            {
                "model_name": "ResNet-50",
                "layer": ["conv1conv1_relu", "res2a_branch2a"],
                "optype_blacklist": [{"name": "Cast", "pos": ["input0", "output1"]}],
                "opname_blacklist": [{"name": "x/y"}],
                "opname_range": [{"begin": "opA", "end": "opB"}],
            },
        ],
        "dump_mode": "all",
        "dump_op_switch": "off",
        "dump_step": "0|5|10-20",
        "dump_data": "stats",
        "dump_stats": ["Max", "Min", "L2norm"],
        "dump_level": "op",
        "dump_debug": "off",
        "dump_kernel_data": "printf,assert",
    },
}


def issue_pairs(error: ConfigError) -> list[tuple[str, str]]:
    """(path, rule) of a ConfigError's issues; ConfigError types them loosely, as objects."""
    assert all(isinstance(i, ConfigIssue) for i in error.issues)
    return [(i.path, i.rule) for i in error.issues if isinstance(i, ConfigIssue)]


def test_from_json_reads_every_field() -> None:
    config = AclConfig.from_json(FULL)
    assert config.extra == {"err_msg_mode": "1"}
    dump = config.dump
    assert dump is not None
    assert dump.dump_path == "/home/output"
    assert dump.dump_list == (
        DumpListItem(model_name="ResNet-101"),
        DumpListItem(
            model_name="ResNet-50",
            layer=("conv1conv1_relu", "res2a_branch2a"),
            optype_blacklist=(BlacklistEntry("Cast", ("input0", "output1")),),
            opname_blacklist=(BlacklistEntry("x/y"),),
            opname_range=(OpRange("opA", "opB"),),
        ),
    )
    assert (dump.dump_mode, dump.dump_op_switch, dump.dump_step) == ("all", "off", "0|5|10-20")
    assert (dump.dump_data, dump.dump_stats) == ("stats", ("Max", "Min", "L2norm"))
    assert (dump.dump_level, dump.dump_debug, dump.dump_scene) == ("op", "off", None)
    assert dump.dump_kernel_data == "printf,assert"


@pytest.mark.parametrize(
    "document",
    [
        FULL,
        {},
        {"dump": {}},
        {"err_msg_mode": "0", "other": {"nested": [1, 2.5, None, True]}},
        {
            "dump": {
                "dump_scene": "watcher",
                "dump_path": "1.2.3.4:/d",
                "dump_list": [{"watcher_nodes": ["a"]}],
            }
        },
        {"dump": {"dump_list": [], "dump_op_switch": "on"}},
    ],
)
def test_documents_round_trip_unchanged(document: dict[str, Any]) -> None:
    config = AclConfig.from_json(document)
    assert config.to_dict() == document
    assert AclConfig.from_json(config.to_json()) == config
    assert json.loads(config.to_json()) == document


def test_from_json_accepts_text_bytes_and_objects() -> None:
    text = json.dumps(FULL)
    expected = AclConfig.from_json(FULL)
    assert AclConfig.from_json(text) == expected
    assert AclConfig.from_json(text.encode()) == expected


def test_unknown_keys_are_kept_at_every_level() -> None:
    document = {
        "err_msg_mode": "1",
        "dump": {
            "dump_path": "/d",
            "dump_future_option": {"x": 1},
            "dump_list": [{"model_name": "m", "hint": 2}],
        },
    }
    config = AclConfig.from_json(document)
    assert config.dump is not None and config.dump.dump_list is not None
    assert config.dump.extra == {"dump_future_option": {"x": 1}}
    assert config.dump.dump_list[0].extra == {"hint": 2}
    assert config.to_dict() == document


def test_records_are_frozen_slotted_and_hashable() -> None:
    config = AclConfig.from_json(FULL)
    assert config.dump is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.dump.dump_mode = "input"  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.extra["err_msg_mode"] = "0"  # type: ignore[index]
    assert not hasattr(config, "__dict__")
    assert hash(config) == hash(AclConfig.from_json(FULL))


def test_the_model_does_not_share_the_callers_objects() -> None:
    document = {"x": {"y": [1]}, "dump": {"dump_list": [{"model_name": "m", "extra": [1]}]}}
    config = AclConfig.from_json(document)
    document["x"]["y"].append(2)  # type: ignore[index]
    config.to_dict()["x"]["y"].append(3)
    assert config.to_dict()["x"] == {"y": [1]}


@pytest.mark.parametrize(
    ("document", "path", "rule"),
    [
        ({"dump": {"dump_mode": "everything"}}, "dump.dump_mode", "3"),
        ({"dump": {"dump_list": [{"layer": "conv1"}]}}, "dump.dump_list[0].layer", "2"),
        ({"dump": 1}, "dump", "1"),
        ([1], "$", "1"),
    ],
)
def test_from_json_refuses_what_the_model_cannot_hold(document: Any, path: str, rule: str) -> None:
    with pytest.raises(ConfigError, match=rf"^<json>: {re.escape(path)}: ") as caught:
        AclConfig.from_json(document)
    assert issue_pairs(caught.value) == [(path, rule)]


def test_from_json_reports_syntax_errors_with_position() -> None:
    with pytest.raises(ConfigError, match=r"^cfg: line 2, column 1: not valid JSON"):
        AclConfig.from_json('{"dump":\n}', source="cfg")


def test_defaults_follow_cann() -> None:
    dump = DumpSection()
    assert (dump.mode, dump.data, dump.level) == ("output", "tensor", "all")
    assert not dump.op_switch_on and not dump.debug_on and not dump.is_exception_scene
    assert dump.steps == StepSet.all_steps()
    assert DumpSection(dump_step="1|3").steps == StepSet(((1, 1), (3, 3)))


def test_malformed_dump_step_raises_when_asked_for_steps() -> None:
    with pytest.raises(ConfigError, match="dump_step"):
        _ = DumpSection(dump_step="1-").steps


# A strategy for every config the model can hold, to prove to_json/from_json are inverses.
_names = st.text(min_size=1, max_size=8)
_extra = st.dictionaries(
    st.sampled_from(["err_msg_mode", "x_future", "note"]), st.integers() | _names, max_size=2
)
_items = st.builds(
    DumpListItem,
    model_name=st.none() | _names,
    layer=st.none() | st.lists(_names, max_size=3).map(tuple),
    watcher_nodes=st.none() | st.lists(_names, max_size=2).map(tuple),
    optype_blacklist=st.none()
    | st.lists(st.builds(BlacklistEntry, _names, st.none() | st.just(("input0",))), max_size=2).map(tuple),
    opname_blacklist=st.none() | st.lists(st.builds(BlacklistEntry, _names), max_size=2).map(tuple),
    opname_range=st.none() | st.lists(st.builds(OpRange, _names, _names), max_size=2).map(tuple),
)


def _choice(values: tuple[str, ...]) -> st.SearchStrategy[Any]:
    return st.none() | st.sampled_from(values)


_sections = st.builds(
    DumpSection,
    dump_path=st.none() | _names,
    dump_list=st.none() | st.lists(_items, max_size=3).map(tuple),
    dump_mode=_choice(DUMP_MODES),
    dump_op_switch=_choice(SWITCHES),
    dump_step=st.none() | st.from_regex(r"[0-9]{1,3}(\|[0-9]{1,3}){0,3}", fullmatch=True),
    dump_data=_choice(DUMP_DATA),
    dump_stats=st.none() | st.lists(st.sampled_from(DUMP_STATS), max_size=3).map(tuple),
    dump_level=_choice(DUMP_LEVELS),
    dump_debug=_choice(SWITCHES),
    dump_scene=_choice(DUMP_SCENES),
    dump_kernel_data=st.none() | st.sampled_from(["all", "printf,assert"]),
    extra=st.dictionaries(st.just("dump_future"), _names, max_size=1),
)


# Without "dump", only keys of an aclInit config make a document an acl.json (read_config).
_configs = st.builds(AclConfig, dump=st.none() | _sections, extra=_extra).filter(
    lambda c: c.dump is not None or not c.extra or "err_msg_mode" in c.extra
)


@given(_configs)
def test_any_config_round_trips(config: AclConfig) -> None:
    assert AclConfig.from_json(config.to_json()) == config
    assert AclConfig.from_json(config.to_dict()).to_dict() == config.to_dict()


# The builder.


def test_build_raw_writes_one_entry_per_target_in_order() -> None:
    targets = [DumpTarget("a"), DumpTarget("b", ("conv1", "fc"))]
    raw = build_raw("/d", targets=targets, mode="all", step="0|3")
    assert raw == {
        "dump": {
            "dump_path": "/d",
            "dump_list": [{"model_name": "a"}, {"model_name": "b", "layer": ["conv1", "fc"]}],
            "dump_mode": "all",
            "dump_step": "0|3",
        }
    }


def test_build_raw_layers_without_model_match_any_model() -> None:
    assert build_raw("/d", targets=[DumpTarget(None, ("conv1",))])["dump"]["dump_list"] == [
        {"layer": ["conv1"]}
    ]


def test_build_raw_watcher_scene() -> None:
    raw = build_raw("/d", targets=[DumpTarget(None, ("conv1",), ("relu",))], scene="watcher")
    assert raw["dump"]["dump_list"] == [{"layer": ["conv1"], "watcher_nodes": ["relu"]}]
    assert raw["dump"]["dump_scene"] == "watcher"


def test_build_raw_without_models_writes_an_empty_list() -> None:
    assert build_raw("/d", op_switch="on") == {
        "dump": {"dump_path": "/d", "dump_list": [], "dump_op_switch": "on"}
    }


@pytest.mark.parametrize("options", [{"debug": "on"}, {"scene": "lite_exception"}])
def test_build_raw_leaves_out_dump_list_where_rules_4_and_6_forbid_it(options: dict[str, str]) -> None:
    assert "dump_list" not in build_raw("/d", **options)["dump"]


def test_build_raw_stats() -> None:
    raw = build_raw("/d", targets=[DumpTarget("m")], data="stats", stats=["Max", "Negative Inf"])
    assert raw["dump"]["dump_stats"] == ["Max", "Negative Inf"]
    assert "dump_stats" not in build_raw("/d", targets=[DumpTarget("m")])["dump"]


def test_build_makes_a_valid_model(tmp_path: Path) -> None:
    config = AclConfig.build(str(tmp_path), targets=[DumpTarget("m")], level="op", kernel_data="all")
    assert validate(config) == []
    assert config.dump is not None and config.dump.level == "op"
    with pytest.raises(ConfigError, match="dump_mode"):
        AclConfig.build(str(tmp_path), targets=[DumpTarget("m")], mode="both")


# The writer.


def test_write_then_read_back(tmp_path: Path) -> None:
    config = AclConfig.from_json(FULL)
    target = config.write(tmp_path / "acl.json")
    assert target == tmp_path / "acl.json"
    text = target.read_text(encoding="utf-8")
    assert text.endswith("}\n")
    assert AclConfig.from_json(text) == config
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["acl.json"]  # no temp file left


def test_write_replaces_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "acl.json"
    target.write_text("old")
    AclConfig().write(target)
    assert target.read_text() == "{}\n"


def test_write_keeps_non_ascii_names(tmp_path: Path) -> None:
    config = AclConfig(DumpSection(dump_list=(DumpListItem(model_name="模型"),)))
    assert "模型" in config.write(tmp_path / "a.json").read_text(encoding="utf-8")


def test_write_failure_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot write"):
        AclConfig().write(tmp_path / "missing" / "acl.json")


# describe(): the summary line of `dumpcmp config check`.


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({}, 'nothing will be dumped: there is no "dump" section'),
        ({"dump": {"dump_list": []}}, "nothing will be dumped: no dump_list entry"),
        (
            FULL,
            "input and output statistics (Max, Min, L2norm) of model ResNet-101 (all ops); "
            "model ResNet-50 (2 layers), steps 0|5|10-20, dump_level op, to /home/output",
        ),
        (
            {"dump": {"dump_path": "/d", "dump_list": [{"layer": ["a"]}], "dump_op_switch": "on"}},
            "output tensors of any model (1 layer); single ops, every step, dump_level all, to /d",
        ),
        (
            {"dump": {"dump_path": "/d", "dump_debug": "on"}},
            "overflow dump (dump_debug on), every step, to /d",
        ),
        ({"dump": {"dump_scene": "lite_exception"}}, "exception dump (lite_exception) to the default"),
        (
            {
                "dump": {
                    "dump_path": "/d",
                    "dump_scene": "watcher",
                    "dump_list": [{"watcher_nodes": ["a", "b"]}],
                }
            },
            "watcher dump of 2 nodes to /d",
        ),
    ],
)
def test_describe(document: dict[str, Any], expected: str) -> None:
    assert describe(AclConfig.from_json(document)).startswith(expected)
