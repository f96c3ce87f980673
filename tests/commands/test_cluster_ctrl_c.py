"""Ctrl-C while ``compare --cluster local:N`` starts its workers: one line, exit 130, and no
process left behind. A terminal sends SIGINT to the whole foreground process group, so the
worker processes get it too: they used to die printing tracebacks while the command stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

TIMEOUT = 120  # a bound for a loaded machine, never reached when all is well
RUN_CLI = "import sys; from dumpcmp.cli import main; sys.argv[0] = 'dumpcmp'; main()"
INTERRUPTED = (
    "interrupted: the run did not finish; files already written are complete, the rest were not written"
)


def _session(sid: int) -> list[str]:
    """The live (not zombie) processes of session ``sid``."""
    psutil = pytest.importorskip("psutil")
    found = []
    for process in psutil.process_iter(["pid", "status", "cmdline"]):
        try:
            if os.getsid(process.pid) == sid and process.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(" ".join(process.info["cmdline"] or []))
        except (ProcessLookupError, PermissionError):
            continue
    return found


def _wait(condition: object, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"waited {TIMEOUT} s for {what}"
        time.sleep(0.01)


def test_ctrl_c_while_the_local_cluster_starts(shared_fixtures: Path, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    dumps = shared_fixtures / "dumps" / "20261121093000"
    command = [sys.executable, "-c", RUN_CLI, "compare", "-tp", str(dumps), "-gp", str(dumps),
               "-o", str(tmp_path / "out"), "--cluster", "local:2"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    # Its own session, as a shell job: the test sends SIGINT to its process group as a terminal does.
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True
    ) as run:
        try:
            # The moment of the bug: Dask's worker processes are starting.
            _wait(lambda: any("spawn_main" in c for c in _session(run.pid)) or run.poll() is not None,
                  "a worker process")  # fmt: skip
            assert run.poll() is None, run.communicate()
            os.killpg(run.pid, signal.SIGINT)
            stdout, stderr = run.communicate(timeout=TIMEOUT)
        finally:
            if run.poll() is None:
                os.killpg(run.pid, signal.SIGKILL)
    assert run.returncode == 130, stdout + stderr
    assert [line for line in (stdout + stderr).splitlines() if line.strip()] == [INTERRUPTED]
    _wait(lambda: not _session(run.pid), "the cluster's processes to go")
    assert not list((tmp_path / "out").glob("*.csv"))
