"""``dumpcmp compare --cluster``: same result file as a local run, one line when the cluster is not
there, and no Dask import at all without the option."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TIMEOUT = 120  # a bound for a loaded machine, never reached when all is well
RUN_CLI = "import sys; from dumpcmp.cli import main; sys.argv[0] = 'dumpcmp'; main()"
NO_DASK = "import sys; sys.modules['distributed'] = None\n" + RUN_CLI
LOCAL_THEN_MODULES = RUN_CLI.replace(
    "main()",
    "\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
    "print(sorted(m for m in ('dask', 'distributed', 'dumpcmp.host.cluster') if m in sys.modules))",
)


@pytest.fixture
def dumps(shared_fixtures: Path) -> Path:
    return shared_fixtures / "dumps" / "20261121093000"


def _cli(script: str, *args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", script, "compare", *(str(a) for a in args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, cwd=cwd)


def _one_error_line(done: subprocess.CompletedProcess[str], text: str) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert text in lines[0]


def test_a_local_run_imports_no_dask(dumps: Path, tmp_path: Path) -> None:
    done = _cli(LOCAL_THEN_MODULES, "-tp", dumps, "-gp", dumps, "-o", tmp_path / "out", cwd=tmp_path)
    assert done.stdout.splitlines()[-1] == "[]", done.stderr
    assert list((tmp_path / "out").glob("result_*.csv"))


def test_local_cluster_writes_the_local_csv_and_the_dashboard_link(dumps: Path, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    local = _cli(RUN_CLI, "-tp", dumps, "-gp", dumps, "-o", "local", cwd=tmp_path)
    assert local.returncode == 0, local.stderr
    # Relative paths on purpose: the command hands the workers full ones.
    remote = _cli(RUN_CLI, "-tp", dumps, "-gp", dumps, "-o", "cluster", "--cluster", "local:1", cwd=tmp_path)
    assert remote.returncode == 0, remote.stderr
    assert "Traceback" not in remote.stderr
    (want,) = (tmp_path / "local").glob("result_*.csv")
    (got,) = (tmp_path / "cluster").glob("result_*.csv")
    assert got.read_bytes() == want.read_bytes()
    assert "Dask dashboard: http://127.0.0.1:" in remote.stderr


def test_an_unreachable_scheduler_is_one_line_and_no_output(dumps: Path, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    args = (
        "-tp",
        dumps,
        "-gp",
        dumps,
        "-o",
        "out",
        "--cluster",
        "tcp://127.0.0.1:9",
        "--cluster-timeout",
        "0.5",
    )
    done = _cli(RUN_CLI, *args, cwd=tmp_path)
    _one_error_line(done, "Error: cannot reach the Dask scheduler at tcp://127.0.0.1:9 (timeout 0.5 s)")
    assert list(tmp_path.iterdir()) == []


def test_without_dask_the_error_says_how_to_install_it(dumps: Path, tmp_path: Path) -> None:
    done = _cli(NO_DASK, "-tp", dumps, "-gp", dumps, "-o", "out", "--cluster", "local:1", cwd=tmp_path)
    _one_error_line(done, 'pip install "dumpcmp[cluster]"')
    assert list(tmp_path.iterdir()) == []
