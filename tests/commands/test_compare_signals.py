"""``dumpcmp compare`` through its real entry point, one process per command: Ctrl-C at a
terminal, or a signal sent to the command alone or to its process group, is one "interrupted"
line, exit 130, no temporary left; a worker killed mid-run is one line; output no one reads is
dropped; ``--help`` and a refused option load neither numpy nor the kernels' llvmlite."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from dumpcmp.launch import INTERRUPTED
from tests.host.test_workers import REPO, small_tree

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pty and /proc are Linux's")

# The first file of the compare takes a minute, and says in MARK which process compares it.
_SLOW_COMPARE = """
import os, sys, time
from dumpcmp.host import workers

compare_batch = workers.compare_batch

def slow(pairs):
    mark = os.environ["MARK"]
    with open(mark + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.replace(mark + ".tmp", mark)
    time.sleep(60)
    return compare_batch(pairs)

workers.compare_batch = slow
sys.argv = ["dumpcmp", *sys.argv[1:]]
from dumpcmp.launch import main
main()
"""


def _command(tmp_path: Path) -> tuple[list[str], dict[str, str], Path, Path]:
    tree = small_tree(tmp_path, 3)
    out, mark = tmp_path / "out", tmp_path / "worker.pid"
    argv = [
        sys.executable,
        "-c",
        _SLOW_COMPARE,
        "compare",
        "-tp",
        str(tree),
        "-gp",
        str(tree),
        "-o",
        str(out),
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO), "MARK": str(mark), "NO_COLOR": "1"}
    return argv, env, out, mark


def _work_pid(mark: Path, running: Callable[[], bool]) -> int:
    deadline = time.monotonic() + 60
    while not mark.exists():
        assert running(), "the compare ended before its first file"
        assert time.monotonic() < deadline, "the compare never reached its first file"
        time.sleep(0.02)
    return int(mark.read_text())


def _assert_interrupted(code: int, output: str, out: Path, work: int, command: int) -> None:
    assert work == command, "the work ran in another process than the command's"
    assert code == 130, output
    assert output.count("interrupted: ") == 1, output
    assert f"interrupted: {INTERRUPTED}" in output
    assert "Traceback" not in output
    assert not out.exists() or not any(out.rglob("*")), "the interrupted run left files"


def test_ctrl_c_at_a_terminal_interrupts_the_work_once(tmp_path: Path) -> None:
    argv, env, out, mark = _command(tmp_path)
    pid, terminal = pty.fork()
    if pid == 0:  # the command, in its own session with the terminal as its controlling tty
        os.execve(argv[0], argv, env)
    output = b""
    try:
        work = _work_pid(mark, lambda: os.waitpid(pid, os.WNOHANG) == (0, 0))
        os.write(terminal, b"\x03")  # the terminal sends SIGINT to the foreground process group
        while True:
            try:
                chunk = os.read(terminal, 4096)
            except OSError:  # EIO: every process holding the terminal has exited
                break
            if not chunk:
                break
            output += chunk
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    finally:
        os.close(terminal)
    _assert_interrupted(code, output.decode(errors="replace"), out, work, pid)


@pytest.mark.parametrize(
    ("signum", "group"),
    [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGINT, True), (signal.SIGTERM, True)],
    ids=["SIGINT-to-the-command", "SIGTERM-to-the-command", "SIGINT-to-the-group", "SIGTERM-to-the-group"],
)
def test_a_signal_to_the_command_or_its_group_interrupts_the_work_once(
    tmp_path: Path, signum: signal.Signals, group: bool
) -> None:
    argv, env, out, mark = _command(tmp_path)
    command = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True)  # fmt: skip
    try:
        work = _work_pid(mark, lambda: command.poll() is None)
        if group:
            os.killpg(command.pid, signum)  # as a supervisor or `timeout` does
        else:
            command.send_signal(signum)  # as `kill PID` does
        output, _ = command.communicate(timeout=60)
    finally:
        if command.poll() is None:
            os.killpg(command.pid, signal.SIGKILL)
            command.wait()
    _assert_interrupted(command.returncode, output.decode(), out, work, command.pid)


def test_a_command_line_refused_before_the_work_leaves_no_process(tmp_path: Path) -> None:
    argv, env, _, _ = _command(tmp_path)
    done = subprocess.run([*argv, "--no-such-option"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    left = [p for p in Path("/proc").glob("[0-9]*") if _runs_with(p, str(tmp_path))]
    assert not left, "a process of the refused command is still there"


def _runs_with(proc: Path, text: str) -> bool:
    try:
        return text in (proc / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False


_ENTRY = "import sys; from dumpcmp.launch import main; sys.argv[0] = 'dumpcmp'; main()"


def test_a_compare_started_with_its_output_closed_still_compares(tmp_path: Path) -> None:
    tree = small_tree(tmp_path, 3)
    out = tmp_path / "out"
    compare = [sys.executable, "-c", _ENTRY, "compare", "-tp", str(tree), "-gp", str(tree), "-o", str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *compare], env=env, stderr=subprocess.PIPE,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(list(out.glob("result_*.csv"))) == 1


# Forked workers whose batches take a minute, each saying in MARK.<pid> that it started one.
_SLOW_WORKERS = """
import os, sys, time
from dumpcmp.host import workers

def slow_batch(start, stop):
    open(os.environ["MARK"] + f".{os.getpid()}", "w").close()
    time.sleep(60)

workers._run_batch = slow_batch
workers.PROCESS_MIN_FILES = 0
sys.argv = ["dumpcmp", *sys.argv[1:]]
from dumpcmp.launch import main
main()
"""


def test_a_worker_killed_mid_run_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    tree = small_tree(tmp_path, 8)
    mark = tmp_path / "batch"
    argv = [sys.executable, "-c", _SLOW_WORKERS, "compare", "-tp", str(tree), "-gp", str(tree), "-j", "2"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "MARK": str(mark), "NO_COLOR": "1"}
    command = subprocess.Popen([*argv, "-o", str(tmp_path / "out")], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob("batch.*")):
            assert command.poll() is None and time.monotonic() < deadline, "no worker started a batch"
            time.sleep(0.02)
        worker = int(next(tmp_path.glob("batch.*")).suffix[1:])
        os.kill(worker, signal.SIGKILL)  # as the kernel's OOM killer does
        output, _ = command.communicate(timeout=60)
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
    assert command.returncode == 1, output
    assert "Traceback" not in output
    assert "Error: a worker process ended abruptly (killed? out of memory?)" in output


def test_output_no_one_reads_is_dropped_and_the_asked_for_files_are_still_written(tmp_path: Path) -> None:
    # As ``dumpcmp compare ... --advisor | head -1`` once the reader has left.
    tree = small_tree(tmp_path, 3)
    out = tmp_path / "out"
    compare = [sys.executable, "-c", _ENTRY, "compare", "-tp", str(tree), "-gp", str(tree), "-o", str(out)]
    command = subprocess.Popen([*compare, "--advisor"], env={**os.environ, "PYTHONPATH": str(REPO)},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert command.stdout is not None
    command.stdout.close()  # the reader leaves before the first line
    _, errors = command.communicate(timeout=120)
    assert command.returncode == 0, errors
    assert "Traceback" not in errors
    assert [p.suffix for p in sorted(out.glob("advisor_*"))] == [".json", ".txt"]
