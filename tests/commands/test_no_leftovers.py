"""Bad inputs to ``sim run``, ``golden``, ``demo`` and ``inspect``: one line, exit 1, nothing left behind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from typer.testing import CliRunner

from dumpcmp.cli import app
from dumpcmp.fakes.zoo import build

runner = CliRunner()


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "wrong.npy", np.ones((2, 2), np.float32))
    np.save(tmp_path / "pickled.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    onnx.save(build("zoo:small_cnn"), str(tmp_path / "model.onnx"))
    (tmp_path / "fusion_rule.json").write_text('{"graph": [{"op": []}], "name": "m"}')
    yield tmp_path


BEFORE = ["fusion_rule.json", "model.onnx", "pickled.npy", "wrong.npy"]


def one_line(args: list[str], text: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert result.output.splitlines() == [f"Error: {text}"]


def names(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir())


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (
            ["sim", "run", "zoo:small_cnn", "--out", "s", "--inject", "bogus"],
            "fault 'bogus': expected OP=KIND",
        ),
        (
            ["sim", "run", "zoo:small_cnn", "--out", "s/deeper", "--inject", "/nope=bias"],
            "cannot inject a fault at '/nope': no op of the model has that name",
        ),
        (
            ["sim", "run", "zoo:small_cnn", "--out", "s", "-i", "wrong.npy"],
            "input 'input': the model expects shape [1, 3, 16, 16], given [2, 2]",
        ),
        (["golden", "model.onnx", "-i", "wrong.npy", "--out", "g"], "the model expects shape [1, 3, 16, 16]"),
        (["golden", "nosuch.onnx", "--out", "g"], "nosuch.onnx: no such model file"),
        (
            ["sim", "run", "zoo:small_cnn", "--out", "s", "--quantize", "/stem/relu/Relu"],
            # said before the simulated NPU loads the model (its aclmdlLoadFromFile error wrapped it)
            "Error: cannot quantise '/stem/relu/Relu': the model has no op of that name; quantisable layers: "
            "/stem/conv/Conv, /block1.dw/conv/Conv,",
        ),
        (["demo", "--fault", "/nope=bias"], "cannot inject a fault at '/nope'"),
        (["demo", "--model", "fusion_rule.json"], "fusion_rule.json: a JSON file, not an ONNX model (.onnx)"),
    ],
)
def test_a_refused_run_leaves_no_directory(in_tmp: Path, args: list[str], text: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    (line,) = result.output.splitlines()
    assert line.startswith("Error: ") and text in line
    assert names(in_tmp) == BEFORE


def test_a_refused_run_never_removes_a_directory_it_did_not_make(in_tmp: Path) -> None:
    (in_tmp / "mine").mkdir()
    (in_tmp / "mine" / "notes.txt").write_text("keep")
    result = runner.invoke(app, ["sim", "run", "zoo:small_cnn", "--out", "mine", "--inject", "/nope=bias"])
    assert result.exit_code == 1, result.output
    assert names(in_tmp / "mine") == ["notes.txt"]  # checked before anything is written
    result = runner.invoke(app, ["sim", "run", "zoo:small_cnn", "--out", "mine", "-i", "wrong.npy"])
    assert result.exit_code == 1, result.output
    assert names(in_tmp / "mine") == ["notes.txt"]
    (in_tmp / "empty").mkdir()
    result = runner.invoke(app, ["golden", "model.onnx", "-i", "wrong.npy", "--out", "empty"])
    assert result.exit_code == 1, result.output
    assert (in_tmp / "empty").is_dir() and names(in_tmp / "empty") == []


def test_a_pickled_golden_input_is_our_one_line(in_tmp: Path) -> None:
    one_line(
        ["golden", "model.onnx", "-i", "pickled.npy", "--out", "g"],
        "pickled.npy: holds pickled Python objects, not numbers; dumpcmp never unpickles files",
    )
    assert names(in_tmp) == BEFORE


def test_inspect_says_what_the_path_is_without_a_byte_offset(in_tmp: Path) -> None:
    one_line(["inspect", "nosuch.bin"], "nosuch.bin: no such file")
    (in_tmp / "dir").mkdir()
    one_line(["inspect", "dir"], "dir: is a directory, give one dump file")


def _disk_full(*args: object, **kwargs: object) -> None:
    raise OSError(28, "No space left on device")


def test_a_full_disk_during_sim_run_is_one_line_naming_the_file(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The simulated NPU writes its dump files as the device does, not through a temp file: a
    # full disk there ended sim run and demo with an OSError traceback.
    from dumpcmp.fakes import dump_writer

    monkeypatch.setattr(dump_writer, "open", _disk_full, raising=False)
    result = runner.invoke(app, ["sim", "run", "zoo:small_cnn", "--out", "run"])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    (line,) = result.output.splitlines()
    assert line.startswith(f"Error: cannot write {in_tmp / 'run' / 'npu'}/")
    assert line.endswith(": No space left on device")
    assert names(in_tmp) == BEFORE


def test_an_os_error_a_command_meets_is_one_line(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Whatever write of the machine's fails (here the ATC json of a simulated run), never a traceback.
    from pathlib import Path as RealPath

    monkeypatch.setattr(RealPath, "write_text", _disk_full)
    result = runner.invoke(app, ["sim", "run", "zoo:small_cnn", "--out", "run"])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    (line,) = result.output.splitlines()
    assert line.startswith("Error: cannot write run/") and line.endswith(": No space left on device")
    assert names(in_tmp) == BEFORE


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_device_named_as_the_model_is_one_line(in_tmp: Path) -> None:
    # onnx read /dev/zero until memory ran out (the model is a name or a path, so no flag check).
    one_line(
        ["sim", "run", "/dev/zero", "--out", "run"],
        "/dev/zero: not a regular file, not an ONNX model (.onnx)",
    )
    assert names(in_tmp) == BEFORE
