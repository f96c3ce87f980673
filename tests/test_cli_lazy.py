"""The CLI imports a command's module only when that command runs or shows its own help."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dumpcmp import cli

COMMANDS = sorted(cli._COMMANDS)

_OTHERS_LOADED = f"""
import sys
from pathlib import Path
from dumpcmp.cli import main
sys.argv = ["dumpcmp", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
commands = {COMMANDS!r}
print(sorted(name for name in commands if "dumpcmp.commands." + name in sys.modules))
"""


def _command_modules_after(*args: str) -> str:
    done = subprocess.run([sys.executable, "-c", _OTHERS_LOADED, *args], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_top_level_help_imports_no_command_module() -> None:
    # Formerly every command module was imported for every run: ~0.3 s before any work started.
    assert _command_modules_after("--help") == "[]"


def test_a_command_imports_its_own_module_only() -> None:
    assert _command_modules_after("compare", "--help") == "['compare']"


@pytest.mark.parametrize("name", list(cli._COMMANDS))
def test_listed_help_line_is_the_commands_own(name: str) -> None:
    command = cli.load_command(name)
    assert command.name == name
    assert command.get_short_help_str(limit=1000) == cli._COMMANDS[name]


# What every entry point (``dumpcmp``, ``python -m dumpcmp.cli``) does first, then a command's numpy.
_BLAS_THREADS = """
import os
from dumpcmp.launch import prepare_process
prepare_process()
import numpy
print(os.environ.get("OPENBLAS_NUM_THREADS"))
"""


@pytest.mark.parametrize(("given", "seen"), [(None, "1"), ("3", "3")])
def test_openblas_starts_no_thread_pool_unless_the_user_asks(given: str | None, seen: str) -> None:
    # Its threads spin on import: ~0.1 s of CPU a run, taken from the compare workers.
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    done = subprocess.run([sys.executable, "-c", _BLAS_THREADS], capture_output=True, text=True, env=env,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [seen]


_PYDANTIC_LOADED = """
import sys
from pathlib import Path
from dumpcmp.cli import main
sys.argv = ["dumpcmp", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print("pydantic" in sys.modules)
"""


def test_a_compare_run_does_not_load_pydantic(tmp_path: Path) -> None:
    # typer 0.29 validates every option through pydantic: ~0.1 s before a compare starts.
    args = ["compare", "-m", "offline_data", "-tp", str(tmp_path / "none"), "-gp", str(tmp_path / "none")]
    done = subprocess.run([sys.executable, "-c", _PYDANTIC_LOADED, *args], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)  # fmt: skip
    assert done.stdout.strip().splitlines()[-1] == "False", done.stderr


# The real entry point; whether it forked, and what it loaded, said by an exit handler (``launch``
# ends the process with ``os._exit`` after running them).
_HEAVY_LOADED = """
import atexit, os, sys
from dumpcmp.launch import main
os.register_at_fork(before=lambda: print("forked", flush=True))
atexit.register(lambda: print(sorted(m for m in ("numpy", "llvmlite", "numba") if m in sys.modules)))
sys.argv = ["dumpcmp", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["compare", "--help"], 0),
        (["compare", "-tp", "a", "-gp", "b", "--no-such-option"], 2),
        (["compare", "-m", "torchair", "-tp", "a", "-gp", "b", "-fr", "r.json"], 1),
        (["compare", "-tp", "a", "-gp", "b", "--cosine-threshold", "2"], 1),
        (["compare", "-tp", "a", "-gp", "b", "--print-request"], 0),
    ],
    ids=["help", "unknown-option", "refused-option", "bad-threshold", "print-request"],
)
def test_compare_loads_no_numpy_nor_kernels_until_it_compares(
    tmp_path: Path, args: list[str], code: int
) -> None:
    # A work process forked at launch loaded them for every compare command line, even these.
    done = subprocess.run([sys.executable, "-c", _HEAVY_LOADED, *args], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)  # fmt: skip
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    assert "forked" not in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "[]"
