"""What one more file costs: per-file CPU slopes on trees of tiny tensors (LLM and TorchAir dumps
hold tens of thousands of small files a step).

    python bench/scale.py                      # trees of 1,500 and 9,000 files, 2 Dask workers
    python bench/scale.py --dir /tmp/scale --repeat 5

Builds (or reuses) ``bench/compare.py``'s tree with outputs of 1x16x2x2 (its builder, a tiny shape)
and its 1,500-file subset, then measures on both trees, alternating, ``--repeat`` times each (the
slope of the fastest runs, and the median of the slopes of each repeat's two runs):

* ``-j 1``: the real command line (``dumpcmp compare ... -j 1``), CPU of its process from start to
  exit: interpreter, imports, walk, match, compare, CSV;
* ``-j 1`` in-process: ``run_compare`` with ``jobs=1`` and the kernels loaded, CPU of this process;
* the coordinator on Dask: ``run_compare`` with a ``ClusterRunner`` on a standing cluster of N
  worker processes (one thread each) whose scheduler runs in another process, as ``compare
  --cluster tcp://...`` meets one: CPU of this process alone (its client thread included), not
  of the scheduler or the workers; then that command line itself (``compare --cluster
  tcp://...``), CPU of its process from start to exit, the cluster's connection included.

A slope is (CPU on 9,000 files − CPU on 1,500) / 7,500: what each file costs once the fixed costs
(start-up, rule file, kernels, the cluster's connection) are paid. Targets (issue 19): ``-j 1``
≤ 250 µs a file, the Dask coordinator ≤ 50 µs a file. Not a test.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare import REPO, build, measure_cli, subset  # bench/compare.py: its trees and its CLI run

TINY = (1, 16, 2, 2)  # 64 elements: 128 B fp16 (NC1HWC0) on the NPU side, 256 B fp32 golden
SIZES = (1500, 9000)

# A standing cluster in its own process: its scheduler's CPU is not the coordinator's.
_CLUSTER = """
import sys
import dask, distributed
with dask.config.set({"distributed.worker.profile.enabled": False}):
    cluster = distributed.LocalCluster(n_workers=int(sys.argv[1]), threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None, silence_logs=40)
print(cluster.scheduler_address, flush=True)
sys.stdin.read()  # until the bench closes it
cluster.close()
"""


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def cli_cpu(tree: Path, *options: str) -> float:
    """CPU seconds of ``dumpcmp compare`` with ``options`` (``-j 1`` by default) on ``tree``,
    start to exit."""
    before = _children_cpu()
    measure_cli(tree, *(options or ("-j", "1")))
    return _children_cpu() - before


def in_process_cpu(tree: Path, runner: object | None = None, jobs: int = 1) -> float:
    """CPU seconds of this process for one ``run_compare`` of ``tree``."""
    from dumpcmp.host.offline import run_compare
    from dumpcmp.host.request import CompareRequest

    out = Path(tempfile.mkdtemp(prefix="dumpcmp-scale-out-"))
    try:
        request = CompareRequest(
            tree / "npu", tree / "golden", fusion_rule=tree / "rules.json", out_dir=out, jobs=jobs
        )
        start = time.process_time()
        run_compare(request, runner=runner)  # type: ignore[arg-type]
        return time.process_time() - start
    finally:
        shutil.rmtree(out)


@contextmanager
def standing_cluster(workers: int) -> Iterator[str]:
    """The address of a ``workers``-process Dask cluster started in a process of its own."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen([sys.executable, "-c", _CLUSTER, str(workers)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip()
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=60)


def _slope(
    measure: Callable[[Path], float], trees: dict[int, Path], repeat: int
) -> tuple[float, float, float, float]:
    """(fastest CPU on the small tree, on the large one, per-file slope of the fastest, median of
    the slopes of each repeat's pair), the runs alternating. On a loaded machine one slow run of
    the small tree makes the fastest's slope look good, one of the large tree bad; the median of
    the pairs says how often either happened."""
    runs: dict[int, list[float]] = {count: [] for count in trees}
    for _ in range(repeat):
        for count, tree in trees.items():
            runs[count].append(measure(tree))
    small, large = (min(runs[count]) for count in SIZES)
    files = SIZES[1] - SIZES[0]
    pairs = [(b - a) / files for a, b in zip(runs[SIZES[0]], runs[SIZES[1]], strict=True)]
    return small, large, (large - small) / files, statistics.median(pairs)


def _print(name: str, figures: tuple[float, float, float, float], target_us: float) -> None:
    small, large, slope, median = figures
    print(
        f"{name:>30} {small:8.3f} s {large:8.3f} s {slope * 1e6:9.0f} µs/file {median * 1e6:9.0f} µs/file"
        f"   (target ≤ {target_us:.0f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--dir", type=Path, default=None, help="build (or reuse) the trees here and keep them"
    )
    parser.add_argument("--workers", type=int, default=2, help="worker processes of the Dask cluster")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs of each: the fastest's slope and the pairs' median"
    )
    args = parser.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="dumpcmp-scale-"))
    try:
        per_pair = 6 * TINY[0] * TINY[1] * TINY[2] * TINY[3]
        build(root, (SIZES[1] + 0.5) * per_pair / (1 << 30), TINY)
        trees = {SIZES[0]: subset(root, SIZES[0]), SIZES[1]: root}
        for path in root.rglob("*"):  # warm the page cache: every run reads from memory
            if path.is_file():
                path.read_bytes()
        print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}, {os.cpu_count()} cores")
        print(f"{'CPU of':>30} {SIZES[0]:>8} f {SIZES[1]:>8} f {'slope, fastest':>16} {'pairs median':>16}")
        in_process_cpu(trees[SIZES[0]])  # loads the kernels (and compiles them on a first run)
        _print("-j 1, command line", _slope(cli_cpu, trees, args.repeat), 250)
        _print("-j 1, in-process", _slope(in_process_cpu, trees, args.repeat), 250)
        from dumpcmp.host.cluster import connect

        with standing_cluster(args.workers) as address, connect(address, timeout=60) as runner:
            in_process_cpu(trees[SIZES[0]], runner)  # the workers load their kernels
            figures = _slope(lambda tree: in_process_cpu(tree, runner), trees, args.repeat)
            _print(f"Dask coordinator, {args.workers} workers", figures, 50)
            figures = _slope(lambda tree: cli_cpu(tree, "--cluster", address), trees, args.repeat)
            _print("Dask coordinator, command line", figures, 50)
        print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
