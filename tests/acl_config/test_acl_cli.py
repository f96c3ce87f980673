"""`dumpcmp config acl` and `dumpcmp config check`, mounted the way dumpcmp/cli.py mounts them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from dumpcmp.commands import config

root = typer.Typer()
root.add_typer(config.app, name="config")
runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(root, ["config", *args])
    # User errors exit through typer.Exit, never through an escaped exception.
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_acl_writes_a_valid_config(tmp_path: Path) -> None:
    out = tmp_path / "acl.json"
    code, output = run(
        "acl", "-o", str(out), "--dump-path", str(tmp_path), "--model", "ResNet-50", "--layer", "conv1",
        "--layer", "fc", "--mode", "all", "--step", "0|5|10-20",
    )  # fmt: skip
    assert code == 0, output
    assert json.loads(out.read_text()) == {
        "dump": {
            "dump_path": str(tmp_path),
            "dump_list": [{"model_name": "ResNet-50", "layer": ["conv1", "fc"]}],
            "dump_mode": "all",
            "dump_step": "0|5|10-20",
        }
    }
    assert f"Wrote {out}" in output
    assert "input and output tensors of model ResNet-50 (2 layers)" in output


@pytest.mark.parametrize(
    ("args", "dump_list"),
    [
        (
            ["--model", "a", "--model", "b", "--layer", "x"],
            [{"model_name": "a"}, {"model_name": "b", "layer": ["x"]}],
        ),
        # a layer belongs to the model before it: it went to the last model, whatever the order
        (
            ["--model", "m", "--layer", "a", "--model", "n"],
            [{"model_name": "m", "layer": ["a"]}, {"model_name": "n"}],
        ),
        (
            ["--model", "m", "--layer", "a", "--model", "n", "--layer=b", "--layer", "c"],
            [{"model_name": "m", "layer": ["a"]}, {"model_name": "n", "layer": ["b", "c"]}],
        ),
        (
            ["--layer", "a", "--model", "m", "--model", "n"],
            [{"model_name": "m", "layer": ["a"]}, {"model_name": "n"}],
        ),
        (
            ["--watcher-node", "r", "--layer", "a", "--scene", "watcher"],
            [{"layer": ["a"], "watcher_nodes": ["r"]}],
        ),
    ],
)
def test_acl_layers_belong_to_the_model_given_before_them(
    tmp_path: Path, args: list[str], dump_list: list[dict[str, object]]
) -> None:
    out = tmp_path / "acl.json"
    code, output = run("acl", "-o", str(out), "--dump-path", str(tmp_path), *args)
    assert code == 0, output
    assert json.loads(out.read_text())["dump"]["dump_list"] == dump_list


def test_acl_stats_and_every_option(tmp_path: Path) -> None:
    out = tmp_path / "acl.json"
    code, output = run(
        "acl", "-o", str(out), "--dump-path", str(tmp_path), "--model", "m", "--data", "stats",
        "--stats", "Max", "--stats", "Negative Inf", "--op-switch", "off", "--level", "op", "--debug", "off",
        "--kernel-data", "printf",
    )  # fmt: skip
    assert code == 0, output
    dump = json.loads(out.read_text())["dump"]
    assert dump["dump_stats"] == ["Max", "Negative Inf"]
    assert (dump["dump_data"], dump["dump_level"], dump["dump_kernel_data"]) == ("stats", "op", "printf")


def test_acl_stats_may_be_comma_separated(tmp_path: Path) -> None:
    # "--stats Max,Min" was refused as one unknown statistic 'Max,Min'.
    out = tmp_path / "acl.json"
    code, output = run("acl", "-o", str(out), "--dump-path", str(tmp_path), "--model", "m", "--data", "stats",
                       "--stats", "Max, Min", "--stats", "Negative Inf")  # fmt: skip
    assert code == 0, output
    assert json.loads(out.read_text())["dump"]["dump_stats"] == ["Max", "Min", "Negative Inf"]


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--model", "m", "--model", "m"], "Error: --model m is given twice; give each model once"),
        (["--model", "a", "--model", "b", "--model", "a"],
         "Error: --model a is given twice; give each model once"),
    ],
)  # fmt: skip
def test_acl_refuses_a_model_given_twice(tmp_path: Path, args: list[str], line: str) -> None:
    # It was written twice into dump_list without a word.
    out = tmp_path / "acl.json"
    code, output = run("acl", "-o", str(out), "--dump-path", str(tmp_path), *args)
    assert code == 1
    assert output.splitlines() == [line]
    assert not out.exists()


def test_acl_writes_relative_dump_paths_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "dumps").mkdir()
    monkeypatch.chdir(tmp_path)
    code, output = run("acl", "--dump-path", "dumps", "--model", "m")
    assert code == 0, output
    assert json.loads((tmp_path / "acl.json").read_text())["dump"]["dump_path"] == str(tmp_path / "dumps")


def test_acl_keeps_remote_paths(tmp_path: Path) -> None:
    out = tmp_path / "acl.json"
    code, _ = run("acl", "-o", str(out), "--dump-path", "10.0.0.7:/data/dump", "--model", "m")
    assert code == 0
    assert json.loads(out.read_text())["dump"]["dump_path"] == "10.0.0.7:/data/dump"


@pytest.mark.parametrize("extra", [[], ["--data", "stats", "--mode", "all"]])
def test_acl_with_nothing_to_dump_is_refused(tmp_path: Path, extra: list[str]) -> None:
    out = tmp_path / "stats.json"
    code, output = run("acl", "-o", str(out), "--dump-path", str(tmp_path), *extra)
    assert code == 1
    assert output.splitlines() == [
        f"Error: not writing {out}: it would dump nothing; give --model NAME (model dump), "
        "--layer OP (any model), --op-switch on, --debug on or --scene"
    ]
    assert list(tmp_path.iterdir()) == []


def test_acl_layers_without_a_model_dump_them_from_any_model(tmp_path: Path) -> None:
    out = tmp_path / "acl.json"
    code, output = run("acl", "-o", str(out), "--dump-path", str(tmp_path), "--layer", "conv1")
    assert code == 0, output
    assert json.loads(out.read_text())["dump"]["dump_list"] == [{"layer": ["conv1"]}]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--model", "m"], "dump.dump_path: is required (rule 5)"),
        (["--dump-path", "{tmp}/missing", "--model", "m"], "dump.dump_path: "),
        (
            ["--dump-path", "{tmp}", "--model", "m", "--mode", "bogus"],
            "dump.dump_mode: 'bogus' is not allowed",
        ),
        (["--dump-path", "{tmp}", "--model", "m", "--layer", ""], "dump.dump_list[0].layer[0]: "),
        (["--dump-path", "{tmp}", "--model", "", "--layer", "x"], "dump.dump_list[0].model_name: "),
        (["--dump-path", "{tmp}", "--model", "m", "--stats", "Max"], "dump.dump_stats: is only allowed"),
        (
            ["--dump-path", "{tmp}", "--model", "m", "--stats", "max", "--data", "stats"],
            "dump.dump_stats[0]: ",
        ),
        (["--dump-path", "{tmp}", "--debug", "on", "--op-switch", "on"], "dump.dump_op_switch: "),
        (["--dump-path", "{tmp}", "--model", "m", "--step", "5-1"], "dump.dump_step: item 1 '5-1'"),
        (["--scene", "lite_exception", "--mode", "all"], "dump.dump_mode: is not allowed"),
        (["--dump-path", "{tmp}", "--scene", "watcher", "--layer", "x"], "dump.dump_list[0].watcher_nodes: "),
        (
            ["--dump-path", "{tmp}", "--model", "m", "--kernel-data", "printf,[red]"],
            "dump.dump_kernel_data: ",
        ),
    ],
)
def test_acl_refuses_to_write_an_invalid_config(tmp_path: Path, args: list[str], expected: str) -> None:
    out = tmp_path / "acl.json"
    code, output = run("acl", "-o", str(out), *(a.replace("{tmp}", str(tmp_path)) for a in args))
    assert code == 1
    assert f"Error: not writing {out}" in output
    assert expected in output
    assert "Traceback" not in output
    assert not out.exists()


def test_acl_reports_every_issue_with_rule(tmp_path: Path) -> None:
    code, output = run("acl", "-o", str(tmp_path / "a.json"), "--model", "m", "--mode", "x", "--step", "a")
    assert code == 1
    assert "3 problems" in output
    for line in ["dump.dump_mode:", "(rule 3)", "dump.dump_path:", "(rule 5)", "dump.dump_step:", "(rule 7)"]:
        assert line in output


def test_acl_cannot_write(tmp_path: Path) -> None:
    code, output = run(
        "acl", "-o", str(tmp_path / "no" / "acl.json"), "--dump-path", str(tmp_path), "--model", "m"
    )
    assert code == 1
    assert "Error: " in output and "cannot write" in output


def test_acl_refuses_to_replace_a_file_unless_forced(tmp_path: Path) -> None:
    out = tmp_path / "acl.json"
    out.write_text("edited by hand\n")
    args = ("acl", "-o", str(out), "--dump-path", str(tmp_path), "--model", "m")
    code, output = run(*args)
    assert code == 1 and out.read_text() == "edited by hand\n"
    assert (
        output.strip()
        == f"Error: not writing {out}: it exists; give --force to replace it, or another --output"
    )
    code, output = run(*args, "--force")
    assert code == 0, output
    assert '"model_name": "m"' in out.read_text()


def test_acl_help_documents_where_layers_go() -> None:
    code, output = run("acl", "--help")
    assert code == 0
    words = " ".join(output.replace("│", " ").split())  # the help box wraps at the terminal width
    assert "Belongs to the --model given before it (before any --model: to the first)" in words


def write(tmp_path: Path, document: object) -> Path:
    path = tmp_path / "acl.json"
    path.write_text(json.dumps(document))
    return path


def test_check_ok_prints_a_summary(tmp_path: Path) -> None:
    path = write(tmp_path, {"dump": {"dump_path": str(tmp_path), "dump_list": [{"model_name": "m"}]}})
    code, output = run("check", str(path))
    assert code == 0
    assert output.startswith("OK: output tensors of model m (all ops), every step")


def test_check_nothing_to_dump_is_ok(tmp_path: Path) -> None:
    code, output = run("check", str(write(tmp_path, {"err_msg_mode": "1"})))
    assert (code, output.strip()) == (0, 'OK: nothing will be dumped: there is no "dump" section')


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            {"graph": [], "name": "small_cnn", "version": 2},
            "not an acl.json: no \"dump\" object, top-level keys 'graph', 'name', 'version' (rule 1)",
        ),
        (
            {"dump_path": "/d", "dump_list": []},
            "'dump_path', 'dump_list' must sit inside a \"dump\" object: {\"dump\": {...}} (rule 1)",
        ),
    ],
)
def test_check_refuses_a_json_that_is_not_an_acl_json(tmp_path: Path, document: object, message: str) -> None:
    path = write(tmp_path, document)
    code, output = run("check", str(path))
    assert code == 1
    assert output.splitlines() == [f"Error: {path}: $: {message}"]


def test_check_notes_unknown_keys(tmp_path: Path) -> None:
    path = write(tmp_path, {"dump": {"dump_path": str(tmp_path), "dump_list": [], "dump_mdoe": "all"}})
    code, output = run("check", str(path))
    assert code == 0
    assert "unknown key(s)" in output and "dump_mdoe" in output


def test_check_prints_each_issue_and_exits_1(tmp_path: Path) -> None:
    document = {
        "dump": {"dump_path": str(tmp_path), "dump_list": [{"model_name": "m", "layer": []}], "dump_mode": 3}
    }
    path = write(tmp_path, document)
    code, output = run("check", str(path))
    assert code == 1
    assert f"Error: {path}: 2 problems" in output
    assert "dump.dump_mode: must be a string, got number (rule 2)" in output
    assert "dump.dump_list[0].layer: must not be empty" in output
    assert "Traceback" not in output


def test_check_bad_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "acl.json"
    path.write_text('{"dump": {\n  "dump_mode": "all",\n}}')
    code, output = run("check", str(path))
    assert code == 1
    assert f"Error: {path}: line 3, column 1: not valid JSON" in output


def test_check_missing_file(tmp_path: Path) -> None:
    code, output = run("check", str(tmp_path / "nope.json"))
    assert code == 1
    assert "no such file" in output


def test_config_without_a_command_shows_help() -> None:
    result = runner.invoke(root, ["config"])
    assert "acl" in result.output and "check" in result.output


@pytest.mark.parametrize("depth", [40, 800, 100_000])
def test_deeply_nested_json_is_one_line(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"dump": ' + "[" * depth + "]" * depth + "}")
    code, output = run("check", str(path))
    assert code == 1
    assert output == f"Error: {path}: JSON nested more than 32 levels deep\n"


def test_a_key_given_twice_is_one_line_not_the_last_one_silently(tmp_path: Path) -> None:
    path = tmp_path / "acl.json"
    path.write_text('{"dump": {"dump_path": "/tmp", "dump_path": "/var", "dump_list": []}}')
    code, output = run("check", str(path))
    assert code == 1
    twice = "key 'dump_path' appears twice in one object (only one of them would count)"
    assert output == f"Error: {path}: {twice}\n"


def test_an_unknown_statistic_is_one_problem_not_two(tmp_path: Path) -> None:
    # "'Foo' is not allowed" came with "dump.dump_stats: must not be empty": the refused name was
    # dropped first, and the list looked empty although the user gave one.
    out = tmp_path / "acl.json"
    where = ["-o", str(out), "--dump-path", str(tmp_path), "--model", "m"]
    code, output = run("acl", *where, "--data", "stats", "--stats", "Foo")
    assert code == 1
    assert output.splitlines() == [
        f"Error: not writing {out}: dump.dump_stats[0]: 'Foo' is not allowed; expected one of 'Max', 'Min', "
        "'Avg', 'Nan', 'Negative Inf', 'Positive Inf', 'L2norm' (rule 3)"
    ]
    assert not out.exists()
    written = tmp_path / "check.json"
    dump = {"dump_path": str(tmp_path), "dump_list": [{"model_name": "m"}], "dump_data": "stats"}
    written.write_text(json.dumps({"dump": {**dump, "dump_stats": ["Foo", "Bar"]}}))
    code, output = run("check", str(written))
    assert code == 1 and "must not be empty" not in output and output.count("is not allowed") == 2, output


@pytest.mark.parametrize(
    ("stats", "said"),
    [
        (["Max", "Max"], "dump.dump_stats: names Max more than once; name each once (rule 9)"),
        (["Max,Min", "Min"], "dump.dump_stats: names Min more than once; name each once (rule 9)"),
        ([""], "Error: --stats names no statistic; leave it out for the default set"),
        ([" , "], "Error: --stats names no statistic; leave it out for the default set"),
    ],
)
def test_acl_refuses_stats_named_twice_or_none(tmp_path: Path, stats: list[str], said: str) -> None:
    # Both were written without a word: 'Max, Max' as given, and no name as CANN's default set.
    out = tmp_path / "acl.json"
    given = [arg for name in stats for arg in ("--stats", name)]
    code, output = run("acl", "-o", str(out), "--dump-path", str(tmp_path), "--model", "m", "--data", "stats",
                       *given)  # fmt: skip
    assert code == 1
    assert said in output
    assert not out.exists()
