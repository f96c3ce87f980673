"""Names on the terminal: a control character in a path or op name is shown as its escape, so one
error stays one line and no escape sequence reaches the user's terminal; other names as they are."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dumpcmp.cli import app
from dumpcmp.commands._output import console, say
from dumpcmp.printable import printable

runner = CliRunner()
HOSTILE = "no\npe\x1b[31mred\x07"
SHOWN = "no\\npe\\x1b[31mred\\x07"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a\nb", "a\\nb"),
        ("tab\there\r", "tab\\there\\r"),
        ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),
        ("\x00\x7f\x9b", "\\x00\\x7f\\x9b"),  # NUL, DEL and the 8-bit CSI
        ("卷积/Conv_1 éß", "卷积/Conv_1 éß"),
        ("", ""),
    ],
)
def test_printable_escapes_control_characters_only(text: str, shown: str) -> None:
    assert printable(text) == shown
    assert (
        printable(printable(text)) == shown
    )  # escaping twice changes nothing (the host escapes, then the CLI)


def test_every_console_line_escapes_what_it_prints(capsys: pytest.CaptureFixture[str]) -> None:
    console().print(f"[bold]skipped[/bold] {HOSTILE}: 卷积")
    console().print(HOSTILE, markup=False)
    assert capsys.readouterr().out == f"skipped {SHOWN}: 卷积\n{SHOWN}\n"


@pytest.mark.parametrize("text", [HOSTILE, "  result: /tmp/a b/卷积.csv  ", "", "tab\there"])
def test_a_plain_line_said_is_what_a_console_prints(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    console().print(text, markup=False)
    printed = capsys.readouterr().out
    say(text)
    assert capsys.readouterr().out == printed


def test_a_missing_path_with_a_newline_and_an_escape_is_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["compare", "-tp", str(tmp_path / HOSTILE), "-gp", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and "\x1b" not in result.output
    assert result.output.splitlines() == [f"Error: target path {tmp_path}/{SHOWN} does not exist"]
    assert sorted(tmp_path.iterdir()) == []


def test_skipped_files_with_hostile_names_are_one_line_each(tmp_path: Path, shared_fixtures: Path) -> None:
    tree = tmp_path / "dump"
    shutil.copytree(shared_fixtures / "dumps" / "20261121093000", tree)
    step = next(p.parent for p in tree.rglob("*") if p.is_file())
    (step / "weird\nname").write_bytes(b"x")
    (step / "Add.bad\x1b[31mRED.7.2.1700000000000123").write_bytes(b"junk")
    result = runner.invoke(app, ["compare", "-tp", str(tree), "-gp", str(tree), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output
    skipped = [line for line in result.output.splitlines() if line.startswith("skipped ")]
    assert f"skipped {step}/weird\\nname: not a dump file name: " in "\n".join(skipped)
    assert any(line.startswith(f"skipped {step}/Add.bad\\x1b[31mRED.7.2.") for line in skipped)
    # Every line of the run is a line of its own: none starts with the rest of a name.
    assert not [line for line in result.output.splitlines() if line.startswith(("name:", ".7.2."))]
    # The result file is data, not terminal text: its names are not touched (no row for a skipped file).
    (csv_file,) = (tmp_path / "out").glob("result_*.csv")
    assert "\\x1b" not in csv_file.read_text()


def test_inspect_shows_hostile_names_escaped_like_every_other_command(tmp_path: Path) -> None:
    import numpy as np

    from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, TensorKind, write_dump

    npy = tmp_path / f"{HOSTILE}.npy"
    np.save(npy, np.ones(3, np.float32))
    tensor = DumpTensor.from_array(TensorKind.OUTPUT, 0, np.ones(2, np.float32))
    dump = write_dump(
        tmp_path / "Add.a_b.1.2.1700000000000000",
        DumpFile("", Layout.V2, "2.0", 1_700_000_000_000_000, f"op{HOSTILE}", outputs=(tensor,)),
    )
    for path in (npy, dump):
        result = runner.invoke(app, ["inspect", str(path)])
        assert result.exit_code == 0, result.output
        assert "\x1b" not in result.output and "\x07" not in result.output
        assert result.output.splitlines()[0] == str(path).replace(HOSTILE, SHOWN)
    assert f"op name   op{SHOWN}" in result.output.splitlines()
