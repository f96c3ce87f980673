"""Where ``dumpcmp compare``'s fixed start-up goes: the phases a CLI run passes before its first pair.

    python bench/startup.py            # 7 fresh interpreters, median of each phase

Each run is a fresh interpreter that goes through what the CLI does, in its order, timing each
step: the interpreter itself (``python -c pass``), importing ``dumpcmp.cli``, building the compare
command and parsing a command line (typer), the host modules ``run_compare`` imports, and the
metric kernels made ready for the float16/float32 pair (what the first pair of a tree waits
for). Absolute times swing with the machine's load; the medians of one run compare phases. Not a
test.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_PHASES = """
import json, sys, time
marks = [time.perf_counter()]
import dumpcmp.cli
marks.append(time.perf_counter())
command = dumpcmp.cli.load_command("compare")
command.make_context("compare", ["-tp", ".", "-gp", ".", "-o", ".", "-j", "1", "-m", "offline_data"])
marks.append(time.perf_counter())
import dumpcmp.host.offline, dumpcmp.host.summary
marks.append(time.perf_counter())
import numpy as np
from dumpcmp.host.metrics import compare_arrays
compare_arrays(np.ones(64, np.float16), np.ones(64, np.float32))
marks.append(time.perf_counter())
print(json.dumps([b - a for a, b in zip(marks, marks[1:])] + ["numba" in sys.modules]))
"""

NAMES = ("interpreter", "import dumpcmp.cli", "compare command + parse", "host imports", "kernels ready")


def _run(code: str) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    _run(_PHASES)  # a first run may compile kernels into the cache; not counted
    compileall.compile_dir(REPO / "dumpcmp", quiet=1)  # as pip install does (bench/compare.py says why)
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    columns: list[list[float]] = [[] for _ in NAMES]
    numba_loaded = False
    for _ in range(args.runs):
        columns[0].append(_run("pass")[0])
        *phases, numba_loaded = json.loads(_run(_PHASES)[1])
        for column, seconds in zip(columns[1:], phases, strict=True):
            column.append(seconds)
    medians = [statistics.median(c) for c in columns]
    for name, median in zip(NAMES, medians, strict=True):
        print(f"{name:>24} {median * 1000:7.0f} ms")
    print(f"{'total':>24} {sum(medians) * 1000:7.0f} ms   (numba imported: {numba_loaded})")
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
