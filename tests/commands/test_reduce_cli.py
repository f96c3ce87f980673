"""``dumpcmp reduce``: the summary line, one-line errors, and a watch ended by Ctrl-C."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dumpcmp.cli import app
from dumpcmp.commands.reduce import watch_and_reduce
from dumpcmp.errors import OutputError
from dumpcmp.fakes.torchair import simulate_torchair
from dumpcmp.host.torchair.reduce import Reducer
from dumpcmp.proto.reduced import REDUCED_FILE

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def sim_tree(tmp_path: Path) -> Path:
    root = tmp_path / "run"
    simulate_torchair("zoo:small_cnn", root, clock=lambda: 1_732_410_000_000_000, pid=1)
    return root


def _dumps(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix != ".txt" and p.name != REDUCED_FILE)


def test_reduce_prints_one_summary_line(sim_tree: Path) -> None:
    count = len(_dumps(sim_tree))
    result = CliRunner().invoke(app, ["reduce", str(sim_tree), "--keep", "max,crc32"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"reduced {count} files, freed ")
    assert len(result.output.strip().splitlines()) == 1
    assert _dumps(sim_tree) == []
    again = CliRunner().invoke(app, ["reduce", str(sim_tree)])
    assert again.output.strip() == "reduced 0 files, freed 0 B"


def test_corrupt_file_is_named(sim_tree: Path) -> None:
    broken = _dumps(sim_tree)[0]
    broken.write_bytes(b"\x00" * 3)
    result = CliRunner().invoke(app, ["reduce", str(sim_tree)])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[0].endswith("; 1 file left in place")
    assert lines[1].startswith(f"kept {broken}: ")
    assert broken.is_file()


def test_files_kept_for_one_reason_get_that_reason_once(tmp_path: Path) -> None:
    # A watch refusing an offline run printed its ~300-character reason once per file.
    from dumpcmp.commands.reduce import _print_report
    from dumpcmp.host.torchair.reduce import ReduceReport

    report = ReduceReport()
    report.kept.extend((tmp_path / f"f{i}", "not a TorchAir dump") for i in range(12))
    report.kept.append((tmp_path / "broken", "truncated"))
    with contextlib.redirect_stdout(io.StringIO()) as out:
        _print_report(report, stopped=True)
    lines = out.getvalue().splitlines()
    assert lines[1:] == [
        "kept 12 files: not a TorchAir dump",
        *(f"  {tmp_path / f'f{i}'}" for i in range(10)),
        "  … and 2 more",
        f"kept {tmp_path / 'broken'}: truncated",
    ]


def _one_line_error(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def _deny_summary_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    """EACCES as a non-root user meets it (the suite may run as root, which chmod cannot stop)."""
    import dumpcmp.proto.reduced as reduced

    def denied(path: object, mode: str = "r", *args: object, **kwargs: object) -> object:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(reduced, "open", denied, raising=False)


def test_unwritable_directory_is_one_line_and_keeps_everything(
    sim_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _deny_summary_writes(monkeypatch)
    before = _dumps(sim_tree)
    first = before[0].parent / REDUCED_FILE
    _one_line_error(["reduce", str(sim_tree)], f"cannot write {first}: Permission denied")
    assert _dumps(sim_tree) == before


def test_watch_ends_with_the_error_when_summaries_cannot_be_written(
    sim_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _deny_summary_writes(monkeypatch)
    before = _dumps(sim_tree)
    stop = threading.Event()
    timer = threading.Timer(20.0, stop.set)  # bounds the test if the failure never stopped the watch
    timer.start()
    try:
        with pytest.raises(OutputError, match="Permission denied"):
            watch_and_reduce(sim_tree, Reducer(), stop=stop, quiet=0.1)
    finally:
        timer.cancel()
    assert _dumps(sim_tree) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_directory(sim_tree: Path) -> None:
    token = _dumps(sim_tree)[0].parent
    token.chmod(0o555)
    try:
        _one_line_error(["reduce", str(sim_tree)], "Permission denied")
    finally:
        token.chmod(0o755)


def test_bad_arguments_are_one_line(tmp_path: Path) -> None:
    _one_line_error(["reduce", str(tmp_path / "nope")], "no such directory")
    _one_line_error(["reduce", str(tmp_path), "--keep", "max,p99"], "unknown statistic 'p99'")


def test_watch_with_duration(sim_tree: Path) -> None:
    count = len(_dumps(sim_tree))
    result = CliRunner().invoke(app, ["reduce", str(sim_tree), "--watch", "--duration", "0.5"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1].startswith(f"stopped: reduced {count} files, freed ")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_watch_stops_cleanly_on_ctrl_c(sim_tree: Path, tmp_path: Path, signum: signal.Signals) -> None:
    """Ctrl-C or SIGTERM is how a watch ends, not an interruption: exit 0 (as the README says)."""
    watched = tmp_path / "watched"
    watched.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "dumpcmp.cli", "reduce", str(watched), "--watch"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("watching ")
        files = _dumps(sim_tree)[:5]
        for source in files:
            shutil.copyfile(source, watched / source.name)
        ends = time.monotonic() + 30
        while any((watched / f.name).exists() for f in files):
            assert time.monotonic() < ends, "files not reduced in time"
            time.sleep(0.1)
        process.send_signal(signum)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    freed = sum(f.stat().st_size for f in files)
    assert out.strip().splitlines() == [f"stopped: reduced 5 files, freed {freed / 1000:.1f} KB"]
    assert "Traceback" not in err


def test_fifo_symlink_and_foreign_names_are_skipped_by_name(sim_tree: Path, tmp_path: Path) -> None:
    """A FIFO would block the reader forever; removing a symlink frees nothing (the tester saw
    "freed 7.3 KB" for one); a file compare passes over is named, not reduced or ignored silently."""
    count = len(_dumps(sim_tree))
    token = _dumps(sim_tree)[0].parent
    fifo = token / "Conv2D.Conv2D_9.8.0.1795484276456784"
    os.mkfifo(fifo)
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"x" * 7000)
    link = token / "123"
    link.symlink_to(outside)
    stray = token / "weights.npy"  # an npy file of no FX dump name: compare skips it
    np.save(stray, np.zeros(3))
    result = CliRunner().invoke(app, ["reduce", str(sim_tree)])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[0].startswith(f"reduced {count} files, freed ") and lines[0].endswith("; 3 files skipped")
    assert f"skipped {fifo}: not a regular file: a FIFO" in lines
    assert any(line.startswith(f"skipped {link}: a symbolic link") for line in lines)
    assert any(line.startswith(f"skipped {stray}: not an FX dump file name") for line in lines)
    assert link.is_symlink() and outside.stat().st_size == 7000 and stray.is_file()


def test_a_symlink_to_stdin_is_not_followed(tmp_path: Path) -> None:
    """``reduce /proc/self`` met fd/0 -> the terminal; a link is never opened."""
    (tmp_path / "0").symlink_to("/dev/null")
    result = CliRunner().invoke(app, ["reduce", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == "reduced 0 files, freed 0 B; 1 file skipped"


def test_nothing_to_reduce_says_where_it_looked(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["reduce", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"nothing to reduce: {tmp_path} holds no files (at any depth)"


def test_duration_without_watch_is_refused(tmp_path: Path) -> None:
    _one_line_error(["reduce", str(tmp_path), "--duration", "1"], "--duration: an option of --watch")


def test_an_offline_dump_tree_is_refused_and_kept(tmp_path: Path) -> None:
    """Reduced files can only be compared by TorchAir statistics/md5: reducing an ATC model's
    dump would leave a tree no compare can read (a new user lost one that way)."""
    from dumpcmp.commands.sim import simulate

    simulate("zoo:small_cnn", tmp_path / "data_dump")  # a name users give offline dump paths too
    before = _dumps(tmp_path / "data_dump")
    result = CliRunner().invoke(app, ["reduce", str(tmp_path / "data_dump" / "npu")])
    assert result.exit_code == 1
    assert "not a TorchAir dump" in result.output and "Traceback" not in result.output
    assert _dumps(tmp_path / "data_dump") == before


def test_graph_dumps_beside_an_ancestor_do_not_make_an_offline_tree_torchair(tmp_path: Path) -> None:
    """Only the ancestors themselves count: a TorchAir run's graph dumps in a sibling directory of
    some parent (or anywhere below / or /tmp) say nothing about this tree."""
    from dumpcmp.commands.sim import simulate

    simulate("zoo:small_cnn", tmp_path / "offline")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "dynamo_original_graph_1_rank_0_pid_1_ts_1.txt").write_text('name: "m"\n')
    result = CliRunner().invoke(app, ["reduce", str(tmp_path / "offline" / "npu")])
    assert result.exit_code == 1 and "not a TorchAir dump" in result.output


def test_watch_leaves_offline_dump_files_arriving_in_an_empty_directory_intact(
    sim_tree: Path, tmp_path: Path
) -> None:
    """A single pass refused an offline tree, but a watch started on an empty directory did not
    check: offline dump files copied in were reduced and deleted, and could never be compared."""
    from dumpcmp.commands.sim import simulate

    offline = simulate("zoo:small_cnn", tmp_path / "offline").npu_dump_dir
    watched = tmp_path / "watched"
    watched.mkdir()
    reducer = Reducer()
    stop = threading.Event()
    timer = threading.Timer(60.0, stop.set)  # bounds the test
    timer.start()
    watch = threading.Thread(
        target=watch_and_reduce, args=(watched, reducer), kwargs={"stop": stop, "quiet": 0.1}
    )
    watch.start()
    try:
        shutil.copytree(offline, watched / "npu")
        shutil.copytree(sim_tree, watched / "run")  # a TorchAir run's files in the same watch are reduced
        arrived = len(_dumps(watched / "npu")) + len(_dumps(watched / "run"))
        deadline = time.monotonic() + 30
        while len(reducer.report.kept) + reducer.report.reduced < arrived and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        watch.join(30)
        timer.cancel()
    copied = sorted(p.relative_to(watched / "npu") for p in _dumps(watched / "npu"))
    assert copied == sorted(p.relative_to(offline) for p in _dumps(offline))
    assert all((watched / "npu" / p).read_bytes() == (offline / p).read_bytes() for p in copied)
    assert not list((watched / "npu").rglob(REDUCED_FILE))
    assert {reason for _, reason in reducer.report.kept} == {
        "not a TorchAir dump (no dynamo_*.txt GE graph dump beside it, no msprobe_ge_dump or msprobe_fx_dump "
        "directory): reduce keeps only statistics, which compare -m offline_data cannot use"
    }
    assert reducer.report.reduced == len(_dumps(sim_tree)) and not _dumps(watched / "run")


def test_a_single_pass_keeps_an_offline_run_beside_a_torchair_one(sim_tree: Path, tmp_path: Path) -> None:
    """The tree was judged once, at its top: a TorchAir run there made every dump file below it
    reducible, and an offline run beside it was reduced and deleted (a new user lost one)."""
    from dumpcmp.commands.sim import simulate

    offline = simulate("zoo:small_cnn", sim_tree / "offline").npu_dump_dir
    before = {p: p.read_bytes() for p in _dumps(offline)}
    torchair = [p for p in _dumps(sim_tree) if "offline" not in p.relative_to(sim_tree).parts]
    result = CliRunner().invoke(app, ["reduce", str(sim_tree)])
    assert result.exit_code == 0, result.output
    assert {p: p.read_bytes() for p in _dumps(offline)} == before
    assert not list(offline.rglob(REDUCED_FILE))
    assert torchair and not any(p.exists() for p in torchair)
    assert result.output.startswith(f"reduced {len(torchair)} files")
    assert f"{len(before)} files left in place" in result.output.splitlines()[0]


def test_an_empty_graph_dump_file_does_not_make_an_offline_tree_torchair(tmp_path: Path) -> None:
    """The check trusted the name alone: an empty ``dynamo_original_*.txt`` beside an offline run
    let ``reduce`` reduce and delete dump files no compare could read again."""
    from dumpcmp.commands.sim import simulate

    npu = simulate("zoo:small_cnn", tmp_path / "offline").npu_dump_dir
    (npu / "dynamo_original_graph_1_rank_0_pid_1_ts_1.txt").touch()
    before = _dumps(npu)
    result = CliRunner().invoke(app, ["reduce", str(npu)])
    assert result.exit_code == 1 and "not a TorchAir dump" in result.output
    assert _dumps(npu) == before
