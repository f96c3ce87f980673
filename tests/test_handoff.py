"""The work process forked at launch: it loads the work, runs what it is handed, and the command
line's process ends with its exit code; without it, the work runs in the command's own process."""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import dumpcmp
from dumpcmp.commands._compare_work import run_offline, run_torchair
from dumpcmp.launch import _WORK_MODULES

REPO = Path(dumpcmp.__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the work process is Linux-only")

# ``work`` prints where it ran and who warmed that process; it exits with its argument.
_WORK_MODULE = """
import os, sys
WARMED = []

def warm():
    {warm}
    WARMED.append(os.getpid())

def work(code):
    print("work", os.getpid(), WARMED, flush=True)
    {work}
    raise SystemExit(code)
"""

_FRONT = """
import os, sys
from dumpcmp import handoff
code = handoff.start("workmod")
if code is not None:  # the forked process: its work is done; it ends as dumpcmp's entry point does
    from dumpcmp.launch import _end
    _end(SystemExit(code))
print("front", os.getpid(), flush=True)
import workmod
handoff.run(workmod.work, 3)
"""


def _python(code: str, *path: Path) -> subprocess.CompletedProcess[str]:
    """``code`` run by a fresh interpreter that imports this checkout (and ``path``)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, path), str(REPO)])}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def _front(tmp_path: Path, warm: str = "pass", work: str = "pass") -> subprocess.CompletedProcess[str]:
    (tmp_path / "workmod.py").write_text(_WORK_MODULE.format(warm=warm, work=work))
    return _python(_FRONT, tmp_path)


def _lines(done: subprocess.CompletedProcess[str]) -> dict[str, list[str]]:
    return {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines()}


def test_the_work_runs_in_the_process_that_warmed_it_and_its_exit_code_ends_the_command(
    tmp_path: Path,
) -> None:
    done = _front(tmp_path)
    assert done.returncode == 3, done.stderr
    lines = _lines(done)
    front, (worker, warmed) = lines["front"][0], lines["work"]
    assert worker != front
    assert warmed == f"[{worker}]"


def test_the_command_ends_after_its_work_process_and_leaves_no_orphan(tmp_path: Path) -> None:
    # The work process's own exit made slow: the command still reaps it before ending, so that
    # no process is left for init to reap (a container's first process may never reap one).
    slow_exit = "import time; real_exit = os._exit; os._exit = lambda code: (time.sleep(2), real_exit(code))"
    done = _front(tmp_path, warm=slow_exit)
    assert done.returncode == 3, done.stderr
    worker = int(_lines(done)["work"][0])
    gone = not Path(f"/proc/{worker}").exists()
    if not gone:
        os.kill(worker, signal.SIGKILL)
    assert gone, "the command ended before its work process"


def test_the_work_process_loads_without_collections_and_works_with_them(tmp_path: Path) -> None:
    gc_state = "import gc; print('{}', gc.isenabled(), flush=True)"
    done = _front(tmp_path, warm=gc_state.format("loading"), work=gc_state.format("working"))
    assert done.returncode == 3, done.stderr
    lines = _lines(done)
    assert (lines["loading"], lines["working"]) == (["False"], ["True"])


def test_a_work_process_that_died_while_loading_leaves_the_work_to_the_command(tmp_path: Path) -> None:
    done = _front(tmp_path, warm="os._exit(0)")
    assert done.returncode == 3, done.stderr
    lines = _lines(done)
    assert lines["work"] == [lines["front"][0], "[]"]


def test_a_killed_work_process_is_one_line_and_the_signal_s_exit_code(tmp_path: Path) -> None:
    done = _front(tmp_path, work="import signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert done.returncode == 128 + 9
    assert (
        done.stderr == "Error: the process doing the work was killed by SIGKILL; nothing more was written\n"
    )


def test_a_command_that_hands_no_work_over_ends_the_work_process(tmp_path: Path) -> None:
    script = (
        "from dumpcmp import handoff\n"
        "assert handoff.start('json') is None\n"
        "pid = handoff._waiting[0]\n"
        "handoff.dismiss()\n"
        "print(pid)\n"
    )
    done = _python(script)
    assert done.returncode == 0, done.stderr
    assert not Path(f"/proc/{done.stdout.strip()}").exists()  # ended and reaped


def test_each_command_s_work_module_warms_the_module_its_work_comes_from() -> None:
    for module in _WORK_MODULES.values():
        assert callable(importlib.import_module(module).warm)
    assert run_offline.__module__ == run_torchair.__module__ == _WORK_MODULES["compare"]


def test_warming_loads_the_compare_s_modules_and_kernel_engine_but_not_rich() -> None:
    check = (
        "import sys\n"
        "from dumpcmp.commands import _compare_work\n"
        "assert 'numpy' not in sys.modules\n"
        "_compare_work.warm()\n"
        "from dumpcmp.host.metrics import _native\n"
        "wanted = {'numpy', 'dumpcmp.host.offline', 'dumpcmp.host.pipeline', 'dumpcmp.host.summary'}\n"
        "print(sorted(wanted - set(sys.modules)), _native._ENGINE is not None, 'rich' in sys.modules)\n"
    )
    done = _python(check)
    assert done.stdout == "[] True False\n", done.stderr  # rich: only for a console's first use
