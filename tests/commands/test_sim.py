"""``dumpcmp sim run``: what it writes and prints, and one red line for user errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from dumpcmp.commands import sim


@pytest.fixture(autouse=True)
def _plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "200")


def _cli() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(sim.app, name="sim")
    return app


def test_run_writes_everything_and_says_so(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        _cli(),
        ["sim", "run", "zoo:small_cnn", "--out", str(tmp_path), "--seed", "2", "--steps", "2",
         "--inject", "/block2/Add=nan", "--quantize", "/block3/conv/Conv", "--atomic"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "fault      /block2/Add=nan -> NPU op /block2/Add" in result.output
    assert "quant rule" in result.output and "2 step(s)" in result.output
    # the command to run next, as the TorchAir simulation prints its own
    assert result.output.splitlines()[-1] == (
        f"compare    dumpcmp compare -tp {tmp_path / 'npu'} -gp {tmp_path / 'golden'} "
        f"-fr {tmp_path / 'fusion_rule.json'} -qfr {tmp_path / 'quant_fusion_rule.json'}"
    )
    for name in ("fusion_rule.json", "quant_fusion_rule.json", "acl.json", "small_cnn.onnx"):
        assert (tmp_path / name).is_file()
    assert any((tmp_path / "golden").iterdir())
    steps = {p.name for p in (tmp_path / "npu").glob("*/0/small_cnn/1/*")}
    assert steps == {"0", "1"}


def test_the_next_command_gives_every_path_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The dump path (absolute in acl.json) was printed absolute, the rest as --out was given.
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(_cli(), ["sim", "run", "zoo:small_cnn", "--out", "out"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == (
        "compare    dumpcmp compare -tp out/npu -gp out/golden -fr out/fusion_rule.json"
    )


def test_inputs_and_acl_config(tmp_path: Path) -> None:
    import numpy as np

    x = tmp_path / "x.npy"
    np.save(x, np.ones((1, 8, 32), np.float32))
    dump_dir = tmp_path / "d"
    dump_dir.mkdir()
    acl = tmp_path / "acl.json"
    acl.write_text(
        json.dumps({"dump": {"dump_path": str(dump_dir), "dump_list": [{"layer": ["/attn/Softmax"]}]}})
    )
    result = CliRunner().invoke(
        _cli(),
        ["sim", "run", "zoo:transformer_block", "-o", str(tmp_path / "o"), "-i", str(x),
         "--acl-config", str(acl), "--no-fusion"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "npu dump   1 files" in result.output and "fusion off" in result.output
    assert len(list(dump_dir.rglob("SoftmaxV2.*"))) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["zoo:nope"], "Error: no zoo model 'nope'"),
        (["zoo:small_cnn", "--inject", "x=bias"], "Error: cannot inject a fault at 'x'"),
        (["zoo:small_cnn", "--inject", "x"], "Error: fault 'x'"),
        (
            ["zoo:small_cnn", "--inject", "/stem/conv/Conv=bias:0"],
            "Error: fault '/stem/conv/Conv=bias:0': bias 0 injects nothing: it adds 0 to every element; "
            "give an amount that does, e.g. /stem/conv/Conv=bias:0.5\n",
        ),
        (["missing.onnx"], "Error: missing.onnx: no such model file"),
    ],
)
def test_user_errors_are_one_red_line(tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(_cli(), ["sim", "run", *args, "--out", str(tmp_path)])
    assert result.exit_code == 1
    assert message in result.output
    assert "Traceback" not in result.output


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def test_second_run_into_one_out_is_refused(tmp_path: Path) -> None:
    first = CliRunner().invoke(_cli(), ["sim", "run", "zoo:small_cnn", "--out", str(tmp_path)])
    assert first.exit_code == 0, first.output
    before = {p: p.stat().st_mtime_ns for p in _files(tmp_path)}
    second = CliRunner().invoke(
        _cli(), ["sim", "run", "zoo:small_cnn", "--out", str(tmp_path), "--seed", "1"]
    )
    assert second.exit_code == 1
    assert second.output.startswith(
        f"Error: {tmp_path} already holds a simulation (npu, golden, fusion_rule.json)"
    )
    assert len(second.output.splitlines()) == 1
    assert {p: p.stat().st_mtime_ns for p in _files(tmp_path)} == before  # nothing touched


@pytest.mark.parametrize("under", ["", "sub"])
def test_out_that_is_a_file_is_one_line(tmp_path: Path, under: str) -> None:
    blocker = tmp_path / "taken"
    blocker.write_text("mine")
    result = CliRunner().invoke(_cli(), ["sim", "run", "zoo:small_cnn", "--out", str(blocker / under)])
    assert result.exit_code == 1
    assert "Traceback" not in result.output and len(result.output.splitlines()) == 1
    assert "is a file, not a directory" in result.output or "cannot create the directory" in result.output
    assert _files(tmp_path) == [blocker]


def test_full_disk_while_writing_golden_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    import dumpcmp.fakes.golden as golden

    def full_disk(*_: object, **__: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(golden.np, "save", full_disk)
    result = CliRunner().invoke(_cli(), ["sim", "run", "zoo:small_cnn", "--out", str(tmp_path)])
    assert result.exit_code == 1
    assert result.output.startswith("Error: cannot write ") and "No space left on device" in result.output
    assert "Traceback" not in result.output and len(result.output.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # OUT was empty: so it is again, the rerun can use it


# The backend calls of the documented dump sequence, with one execute.
SEQUENCE = (
    "init", "set_device", "init_dump", "set_dump", "load_from_file", "execute",
    "synchronize_device", "finalize_dump", "unload", "reset_device", "finalize",
)  # fmt: skip


def test_run_goes_through_the_agent_runtime_over_the_sim_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dumpcmp.agent.runtime as runtime

    chosen: list[str] = []
    api_calls: list[str] = []
    open_backend = runtime.open_backend

    def recording_open_backend(kind: Any, *args: Any, **options: Any) -> Any:
        chosen.append(kind)
        backend = open_backend(kind, *args, **options)
        for name in SEQUENCE:
            monkeypatch.setattr(backend, name, _recorded(getattr(backend, name), name, api_calls))
        return backend

    monkeypatch.setattr(runtime, "open_backend", recording_open_backend)
    result = CliRunner().invoke(
        _cli(), ["sim", "run", "zoo:small_cnn", "--out", str(tmp_path), "--steps", "2"]
    )
    assert result.exit_code == 0, result.output
    assert chosen == ["sim"]  # chosen once, by the command
    assert api_calls == [*SEQUENCE[:6], "execute", *SEQUENCE[6:]]


def _recorded(method: Any, name: str, calls: list[str]) -> Any:
    def call(*args: Any) -> Any:
        calls.append(name)
        return method(*args)

    return call


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--ranks", "3", "--fusion-off-tree", "--torchair-layout", "old"],
            "Error: --torchair-layout, --ranks, --fusion-off-tree: an option of --torchair",
        ),
        (["--torchair", "--quantize", "conv"], "Error: --quantize: not an option of --torchair"),
    ],
)
def test_options_of_the_other_simulator_are_refused_not_ignored(
    tmp_path: Path, args: list[str], message: str
) -> None:
    """The tester's ``--ranks 3 --fusion-off-tree`` without --torchair ran an offline sim."""
    out = tmp_path / "out"
    result = CliRunner().invoke(_cli(), ["sim", "run", "zoo:small_cnn", "--out", str(out), *args])
    assert result.exit_code == 1, result.output
    assert result.output.strip() == message or result.output.strip().startswith(message)
    assert len(result.output.strip().splitlines()) == 1 and not out.exists()


def test_a_bad_torchair_layout_is_a_usage_error(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        _cli(),
        ["sim", "run", "zoo:small_cnn", "--out", str(out), "--torchair", "--torchair-layout", "x"],
    )
    assert result.exit_code == 2 and "'x' is not one of" in result.output and not out.exists()


def test_the_printed_compare_commands_paste_as_they_read(tmp_path: Path) -> None:
    """``--out "q q"`` printed ``-tp q q/msprobe_ge_dump``; with ``;`` pasting ran a second command."""
    import shlex

    out = tmp_path / "q q;touch pwned"
    result = CliRunner().invoke(
        _cli(), ["sim", "run", "zoo:small_cnn", "--out", str(out), "--torchair", "--fusion-off-tree"]
    )
    assert result.exit_code == 0, result.output
    commands = [
        line[line.index("dumpcmp") :] for line in result.output.splitlines() if "dumpcmp compare" in line
    ]
    assert len(commands) == 2
    for command, bench in zip(commands, ("msprobe_fx_dump", "fusion_off/msprobe_ge_dump"), strict=True):
        ge = f"{out}/msprobe_ge_dump"
        assert shlex.split(command) == [
            "dumpcmp",
            "compare",
            "--mode",
            "torchair",
            "-tp",
            ge,
            "-gp",
            f"{out}/{bench}",
        ]


@pytest.mark.parametrize("out_existed", [False, True])
def test_an_acl_config_that_dumps_nothing_is_an_error_that_leaves_nothing(
    tmp_path: Path, out_existed: bool
) -> None:
    # It left golden/, fusion_rule.json and the model in OUT: the rerun was refused, "OUT
    # already holds a simulation".
    dump_dir = tmp_path / "d"
    dump_dir.mkdir()
    acl = tmp_path / "acl.json"
    acl.write_text(
        json.dumps({"dump": {"dump_path": str(dump_dir), "dump_list": [{"model_name": "resnet"}]}})
    )
    out = tmp_path / "o"
    if out_existed:
        out.mkdir()
    args = ["sim", "run", "zoo:small_cnn", "-o", str(out)]
    for _attempt in range(2):  # the rerun meets the same error, not its own leftovers
        result = CliRunner().invoke(_cli(), [*args, "--acl-config", str(acl)])
        assert result.exit_code == 1, result.output
        assert result.output.splitlines() == [
            f"Error: nothing dumped: {acl} selects no op of model small_cnn "
            "(its dump_list names another model, or no op of this one)"
        ]
        assert not any(dump_dir.iterdir())
        assert (list(out.iterdir()) == []) if out_existed else not out.exists()
    assert CliRunner().invoke(_cli(), args).exit_code == 0


@pytest.mark.parametrize("out_existed", [False, True])
def test_an_interrupted_simulation_leaves_nothing_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, out_existed: bool
) -> None:
    # It left OUT (empty, or npu/ and acl.json) and said "files already written are complete":
    # the rerun was refused, "OUT already holds a simulation".
    import dumpcmp.fakes.simulate

    out = tmp_path / "o"
    if out_existed:
        out.mkdir()

    def interrupted(*_args: Any, **_kwargs: Any) -> None:
        raise KeyboardInterrupt  # as Ctrl-C comes: the dump written, golden data not yet

    with monkeypatch.context() as patched:
        patched.setattr(dumpcmp.fakes.simulate, "finish_simulation", interrupted)
        result = CliRunner().invoke(_cli(), ["sim", "run", "zoo:small_cnn", "-o", str(out)])
    assert result.exit_code == 130, result.output
    assert result.output.splitlines() == [
        f"interrupted: the simulation did not finish; what it wrote in --out {out} was removed"
    ]
    assert (list(out.iterdir()) == []) if out_existed else not out.exists()
    assert CliRunner().invoke(_cli(), ["sim", "run", "zoo:small_cnn", "-o", str(out)]).exit_code == 0


def test_an_interrupted_simulation_with_an_acl_json_says_where_its_dump_files_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It said "what it wrote in --out was removed", and the partial dump in the acl.json's dump
    # path went unmentioned.
    import dumpcmp.fakes.simulate
    from dumpcmp.acl_config import AclConfig, DumpTarget

    dumps = tmp_path / "dumps"
    dumps.mkdir()
    config = AclConfig.build(str(dumps), targets=[DumpTarget("small_cnn")]).write(tmp_path / "acl.json")

    def interrupted(*_args: Any, **_kwargs: Any) -> None:
        raise KeyboardInterrupt  # the dump written, golden data not yet

    out = tmp_path / "o"
    with monkeypatch.context() as patched:
        patched.setattr(dumpcmp.fakes.simulate, "finish_simulation", interrupted)
        result = CliRunner().invoke(
            _cli(), ["sim", "run", "zoo:small_cnn", "-o", str(out), "--acl-config", str(config)]
        )
    assert result.exit_code == 130, result.output
    assert result.output.splitlines() == [
        f"interrupted: the simulation did not finish; what it wrote in --out {out} was removed; any dump "
        f"files it wrote stay in {dumps.resolve()} (--acl-config's dump_path), under this run's time"
    ]
    assert any(p.is_file() for p in dumps.rglob("*"))  # they are there, as said
