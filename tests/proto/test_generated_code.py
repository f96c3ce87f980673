"""dumpcmp/proto/_gen must be what tools/gen_proto.py makes from the .proto files today.

Only the protobuf version stamps may differ (the ``# Protobuf Python Version:`` comment and the
arguments of ``ValidateProtobufRuntimeVersion``), so the test passes with any grpcio-tools
release but fails as soon as a .proto is edited without regenerating.
"""

from __future__ import annotations

import difflib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("grpc_tools", reason="the generator needs grpcio-tools (the test extra)")

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "gen_proto.py"
PROTO_DIR = ROOT / "dumpcmp" / "proto"
GEN_DIR = PROTO_DIR / "_gen"
_HANDWRITTEN = {"__init__.py"}
_VALIDATE_CALL = re.compile(r"_runtime_version\.ValidateProtobufRuntimeVersion\((.*?)\)\n", re.DOTALL)


def _normalised(text: str) -> str:
    """The generated text with the version stamps blanked, nothing else touched."""
    text = _VALIDATE_CALL.sub("_runtime_version.ValidateProtobufRuntimeVersion(<stamp>)\n", text)
    return "".join(
        "# Protobuf Python Version: <stamp>\n" if line.startswith("# Protobuf Python Version:") else line
        for line in text.splitlines(keepends=True)
    )


def _generated_files(directory: Path) -> dict[str, str]:
    return {
        p.name: _normalised(p.read_text())
        for p in sorted(directory.iterdir())
        if p.is_file() and p.name not in _HANDWRITTEN and p.suffix in (".py", ".pyi")
    }


def _differences(expected: Path, actual: Path) -> list[str]:
    """Human-readable differences between two generated trees ([] when they agree)."""
    want, have = _generated_files(expected), _generated_files(actual)
    problems = [f"missing from {actual}: {name}" for name in sorted(set(want) - set(have))]
    problems += [f"not generated any more: {name}" for name in sorted(set(have) - set(want))]
    for name in sorted(set(want) & set(have)):
        if want[name] != have[name]:
            diff = difflib.unified_diff(
                have[name].splitlines(),
                want[name].splitlines(),
                f"checked-in/{name}",
                f"fresh/{name}",
                lineterm="",
            )
            problems.append("\n".join(list(diff)[:40]))
    return problems


def _generate(tool: Path, out: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(tool), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_stamps_are_all_that_is_ignored() -> None:
    stamped = (
        "# Protobuf Python Version: 7.35.1\n"
        "_runtime_version.ValidateProtobufRuntimeVersion(\n    _runtime_version.Domain.PUBLIC,\n    7,\n"
        "    35,\n    1,\n    '',\n    'dump_data.proto'\n)\n"
        "x = 1\n"
    )
    other = (
        stamped.replace("7.35.1", "6.1.0").replace("    35,\n    1,", "    1,\n    0,").replace("7,", "6,")
    )
    assert _normalised(stamped) == _normalised(other)
    assert _normalised(stamped) != _normalised(stamped.replace("x = 1", "x = 2"))


def test_checked_in_code_matches_a_fresh_generation(tmp_path: Path) -> None:
    fresh = tmp_path / "gen"
    _generate(TOOL, fresh)
    assert _generated_files(fresh), "the generator wrote nothing"
    problems = _differences(fresh, GEN_DIR)
    assert not problems, "run `python tools/gen_proto.py`; stale generated code:\n" + "\n".join(problems)


def test_an_edited_proto_is_caught(tmp_path: Path) -> None:
    """The check above can fail: regenerate from an edited copy of the tree and compare."""
    copy = tmp_path / "repo"
    (copy / "tools").mkdir(parents=True)
    shutil.copy(TOOL, copy / "tools" / TOOL.name)
    (copy / "dumpcmp" / "proto").mkdir(parents=True)
    for proto in PROTO_DIR.glob("*.proto"):
        shutil.copy(proto, copy / "dumpcmp" / "proto" / proto.name)
    edited = copy / "dumpcmp" / "proto" / "dump_data.proto"
    text = edited.read_text()
    assert "message OpAttr" in text
    edited.write_text(text.replace("message OpAttr {", "message OpAttr {\n  string note = 3;", 1))

    fresh = tmp_path / "gen"
    _generate(copy / "tools" / TOOL.name, fresh)
    problems = _differences(fresh, GEN_DIR)
    assert any("dump_data_pb2.py" in p for p in problems)
    assert any("note" in p for p in problems)
