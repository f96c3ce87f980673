"""Option values converted without pydantic read exactly as typer's own conversion reads them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dumpcmp import cli

_COMPARE_IMPORTS = """
import sys
from dumpcmp.cli import main
sys.argv = ["dumpcmp", "compare", "-m", "offline_data", "-tp", sys.argv[1], "-gp", sys.argv[1],
            "-fr", sys.argv[1] + "/rules.json", "-o", sys.argv[1] + "/out", "-j", "2",
            "--cosine-threshold", "0.995", "--print-request"]
try:
    main()
except SystemExit:
    pass
print("pydantic" in sys.modules)
"""


def test_a_plain_compare_command_line_does_not_import_pydantic(tmp_path: Path) -> None:
    # typer's pydantic conversion cost every run ~0.1-0.15 s before any work started.
    done = subprocess.run([sys.executable, "-c", _COMPARE_IMPORTS, str(tmp_path)], capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"


def _typer_own(command: Any) -> Any:
    """``command`` converting every option through typer's own (pydantic) conversion."""
    for param in command.params:
        if hasattr(param, "_runtime_param"):
            param._runtime_param = None
    del command.get_help_option  # the class's again
    return command


def _parsed(command: Any, args: list[str]) -> tuple[str, object]:
    """What the command line becomes: the values, or the error typer raises for it."""
    try:
        ctx = command.make_context("compare", list(args))
    except Exception as exc:  # the error itself is what is compared
        return type(exc).__name__, str(exc)
    return "ok", repr(ctx.params)  # repr: nan == nan


@pytest.mark.parametrize(
    "args",
    [
        ["-tp", "/a/b", "-gp", "/c"],
        ["-tp", "./a/b/", "-gp", "c//d", "-o", "."],  # paths Path would respell: typer's own
        ["-tp", "a", "-gp", "b", "-m", "torchair", "-j", "3", "--cosine-threshold", "0.995"],
        ["-tp", "a", "-gp", "b", "-j", "0", "--kl-threshold", "1", "--rmse-threshold", "1e-3"],
        ["-tp", "a", "-gp", "b", "-j", "-1"],  # below the bound
        ["-tp", "a", "-gp", "b", "-j", "007"],
        ["-tp", "a", "-gp", "b", "-j", "x"],
        ["-tp", "a", "-gp", "b", "-m", "nosuchmode"],
        ["-tp", "a", "-gp", "b", "-m", "OFFLINE_DATA"],
        ["-tp", "a", "-gp", "b", "--cosine-threshold", "nan"],
        ["-tp", "a", "-gp", "b", "-d", "op/name", "-i", "2", "-t", "input", "--xlsx"],
    ],
)
def test_values_and_errors_are_typer_own(args: list[str]) -> None:
    lean = cli.load_command("compare")
    own = _typer_own(cli.load_command("compare"))
    assert _parsed(lean, args) == _parsed(own, args)
