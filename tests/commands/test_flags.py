"""``StrictCommand``: a repeated option or a glued value is refused by every command, in one line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import pytest
import typer
from typer.main import get_command
from typer.testing import CliRunner

from dumpcmp.cli import app
from dumpcmp.commands._flags import FlagError, checked_args

runner = CliRunner()
DUMPS = ("dumps", "20261121093000")


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Run from an empty directory, so that a run that should not happen shows up in it."""
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def one_usage_error(args: list[str], text: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == [f"Error: {text}"], result.output


@pytest.mark.parametrize(
    ("repeat", "message"),
    [
        (["-l", "B"], "-tp and -l both give the target path; give it once"),
        (["-tp", "B"], "-tp is given twice; give it once"),
        (["--target_path=B"], "-tp and --target_path both give the target path; give it once"),
        (["-output_path", "o2"], "-o and --output_path both give the output path; give it once"),
        (["--xlsx", "--xlsx"], "--xlsx is given twice; give it once"),
    ],
)
def test_a_repeated_compare_option_is_refused(
    shared_fixtures: Path, in_tmp: Path, repeat: list[str], message: str
) -> None:
    dumps = str(shared_fixtures.joinpath(*DUMPS))
    one_usage_error(["compare", "-tp", dumps, "-gp", dumps, "-o", "o1", *repeat], message)
    assert list(in_tmp.iterdir()) == []


def test_every_command_refuses_a_repeated_option(in_tmp: Path) -> None:
    one_usage_error(
        ["config", "acl", "-o", "a.json", "--output", "b.json", "--model", "m"],
        "-o and --output both give the output; give it once",
    )
    one_usage_error(
        ["sim", "run", "zoo:small_cnn", "--seed", "1", "--seed", "2"], "--seed is given twice; give it once"
    )
    one_usage_error(
        ["sim", "run", "zoo:small_cnn", "--atomic", "--progressive"],
        "--atomic and --progressive set the same switch; give one of them",
    )
    assert list(in_tmp.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["compare", "--outptu", "x"], "no such option: --outptu; did you mean --output-path?"),
        (["config", "acl", "--modle", "m"], "no such option: --modle; did you mean --mode or --model?"),
        (["config", "acl", "--outptu", "a.json"], "no such option: --outptu; did you mean --output?"),
        (["comapre", "-tp", "x"], "no such command 'comapre'"),
        (["--bogus"], "no such option: --bogus"),
        (["compare", "-tp"], "option '-tp' requires an argument"),
        (["host", "results"], "missing argument 'session'"),
        (["sim", "run", "zoo:small_cnn", "--out", "s", "--steps", "0"], "invalid value for '--steps'"),
    ],
)
def test_what_click_cannot_read_is_one_line_too(in_tmp: Path, args: list[str], message: str) -> None:
    # typer printed these as usage text plus a boxed error: four lines or more for one typo.
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "╭" not in result.output
    assert len(result.output.splitlines()) == 1, result.output
    assert result.output.startswith(f"Error: {message}"), result.output
    assert list(in_tmp.iterdir()) == []


def test_no_arguments_still_show_the_help() -> None:
    result = runner.invoke(app, ["config"])
    assert result.exit_code == 2 and "Usage" in result.output and "acl" in result.output


def test_options_that_take_a_list_may_repeat(in_tmp: Path) -> None:
    (in_tmp / "dumps").mkdir()
    result = runner.invoke(
        app,
        ["config", "acl", "-o", "acl.json", "--dump-path", "dumps", "--model", "a", "--model", "b"],
    )
    assert result.exit_code == 0, result.output
    assert '"model_name": "b"' in (in_tmp / "acl.json").read_text()


@pytest.mark.parametrize(
    ("word", "message"),
    [
        ("-tpsim/npu", "-tpsim/npu: write the value of -tp after a space: -tp sim/npu"),
        ("-frrule.json", "-frrule.json: write the value of -fr after a space: -fr rule.json"),
        ("-custom/x", "-custom/x: write the value of -custom after a space: -custom /x"),
        ("-ofoo", "-ofoo: write the value of -o after a space: -o foo"),
    ],
)
def test_a_glued_value_names_the_longest_option_it_starts_with(
    shared_fixtures: Path, in_tmp: Path, word: str, message: str
) -> None:
    dumps = str(shared_fixtures.joinpath(*DUMPS))
    target = [] if word.startswith("-tp") else ["-tp", dumps]
    one_usage_error(["compare", *target, "-gp", dumps, word], message)
    assert list(in_tmp.iterdir()) == []


def test_counters_and_lists_may_repeat_in_checked_args() -> None:
    # Built through typer's public API: typer vendors its own click, which a fresh venv has alone.
    def command(
        verbose: Annotated[int, typer.Option("-v", "--verbose", count=True)] = 0,
        input_: Annotated[list[str] | None, typer.Option("-i", "--input")] = None,
        out: Annotated[str, typer.Option("-o", "--out")] = "",
    ) -> None:
        """A command with a counter, a list and a single-valued option."""

    single = typer.Typer()
    single.command()(command)
    params = get_command(single).params
    args = ["-v", "--verbose", "-i", "a", "--input", "b", "-o", "x"]
    assert checked_args(params, args) == args
    with pytest.raises(FlagError, match=r"^-o and --out both give the out; give it once$"):
        checked_args(params, [*args, "--out", "y"])


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (["inspect", ""], "FILE"),
        (["reduce", ""], "PATH"),
        (["config", "check", ""], "PATH"),
        (["golden", "", "-o", "g"], "MODEL"),
        (["convert", "-type", "offline", "-i", "", "-o", "out"], "-i"),
        (["convert", "-type", "tf", "-target", "dump", "-i", "x", "-o", ""], "-o"),
    ],
)
def test_an_empty_path_argument_is_refused_by_every_command(in_tmp: Path, args: list[str], name: str) -> None:
    (in_tmp / "x").mkdir()  # a directory the run would find were "" read as "."
    one_usage_error(args, f"{name}: empty path (give a file or directory; '.' for this one)")
    assert [p.name for p in in_tmp.iterdir()] == ["x"]


def test_a_group_checks_only_its_own_options() -> None:
    def subcommand(out: Annotated[Path, typer.Option("-o")]) -> None:
        """A subcommand with an -o of its own."""

    def options(out: Annotated[Path | None, typer.Option("-o")] = None) -> None:
        """The group's options."""

    group = typer.Typer()
    group.callback()(options)
    group.command("sub")(subcommand)
    params = get_command(group).params
    args = ["-o", "a", "sub", "-o", "b", "-ofoo", ""]
    assert checked_args(params, args, group=True) == args  # "sub" on is the subcommand's to check
    with pytest.raises(FlagError, match=r"^-o: empty path"):
        checked_args(params, ["-o", "", "sub"], frozenset({"out"}), group=True)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
@pytest.mark.parametrize(
    ("args", "label"),
    [
        (["config", "check", "/dev/zero"], "PATH /dev/zero"),
        (["inspect", "/dev/zero"], "FILE /dev/zero"),
        (["compare", "-tp", "/dev/zero", "-gp", "."], "-tp /dev/zero"),
    ],
)
def test_a_device_given_as_a_path_is_refused_before_it_is_read(
    in_tmp: Path, args: list[str], label: str
) -> None:
    # config check read /dev/zero until the machine's 24 GB were gone.
    one_usage_error(args, f"{label}: not a regular file: a character device")


def test_a_fifo_given_as_a_rule_file_is_refused_not_waited_on(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    fifo = tmp_path / "rules.json"
    os.mkfifo(fifo)
    command = [sys.executable, "-m", "dumpcmp.cli", "compare", "-tp", ".", "-gp", ".", "-fr", str(fifo)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"Error: -fr {fifo}: not a regular file: a FIFO\n"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["compare", "-tp", ".", "-gp", ".", "--cluster-timeout", "nan"],
         "--cluster-timeout nan: not a number; give one >= 0.1"),
        (["agent", "run", "--host", "127.0.0.1:1", "--session", "s", "--watch", ".", "--until-idle", "NaN"],
         "--until-idle NaN: not a number; give one >= 0"),
    ],
)  # fmt: skip
def test_nan_for_a_bounded_number_is_refused(in_tmp: Path, args: list[str], line: str) -> None:
    # click's range check lets NaN through: a NaN timeout or idle time never ends a wait.
    one_usage_error(args, line)
