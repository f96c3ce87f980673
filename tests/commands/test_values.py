"""Option values converted without pydantic: the same values and the same refusals as typer's."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from dumpcmp import cli
from dumpcmp.commands._values import _PlainValues

_PARSE = """
import sys
from dumpcmp.cli import main
sys.argv = ["dumpcmp", "compare", "-tp", ".", "-gp", ".", "-o", "out", "-j", "1", "-m", "offline_data",
            "-t", "input", "-d", "op", "--cosine-threshold", "0.95", "--print-request"]
try:
    main()
except SystemExit:
    pass
print("pydantic" in sys.modules)
"""


def test_compare_reads_its_command_line_without_importing_pydantic(tmp_path: Any) -> None:
    # typer converts every value through a pydantic adapter: importing pydantic cost each run
    # ~0.15 s before any work.
    done = subprocess.run([sys.executable, "-c", _PARSE], capture_output=True, text=True, cwd=tmp_path,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"


_TEXTS = ["0", "1", "-1", "+2", "007", "1.5", "-2.5e-3", "1E3", ".5", "5.", "1_000", " 1", "1 ", "", "abc",
          "nan", "inf", "-inf", "0x10", "offline_data", "input", "output", "OUTPUT", "a/b", "."]  # fmt: skip


def _outcome(runtime: Any, value: Any, param: Any, ctx: Any) -> tuple[str, Any]:
    try:
        result = runtime.coerce(value, param=param, ctx=ctx)
    except Exception as exc:  # the refusal itself is compared
        return type(exc).__name__, str(exc)
    return type(result).__name__, repr(result)


@pytest.mark.parametrize("command", ["", "compare"])
def test_plain_values_are_typers_values(command: str) -> None:
    import typer
    from typer._coercion import build_runtime_param

    target = cli.load_command(command) if command else typer.main.get_group(cli.app)
    ctx = target.context_class(target, info_name=command or "dumpcmp")
    params = target.get_params(ctx)
    assert params
    for param in params:
        for value in [*_TEXTS, param.default, None, True, False]:
            typer_way = _outcome(build_runtime_param(param.type_descriptor), value, param, ctx)
            assert _outcome(_PlainValues(), value, param, ctx) == typer_way, (param.name, value)
