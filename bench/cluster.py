"""``compare`` on a Dask cluster against the same comparison run locally, on one machine.

    python bench/cluster.py                      # 1 GB tree (bench/compare.py's), 2 workers
    python bench/cluster.py --dir /tmp/benchtree --repeat 3

Builds (or reuses) the tree of ``bench/compare.py``, warms the page cache, then times in this
process, alternating, each run with the kernels already loaded:

* local: ``run_compare`` with its own pool (forked processes, one per core);
* cluster: the same call with a ``ClusterRunner`` on a ``LocalCluster`` of N worker processes,
  one thread each, started and warmed once before the runs (what a standing cluster is).

On one machine the cluster cannot be faster (same cores, plus the scheduler and the client on
them); what it shows is the cost of going through Dask: the extra wall time per task, and the
bare round trip of an empty task. The paper estimate scales the measured local throughput per
worker to 8 workers of one core each on a 1 TB tree, adding that per-task cost for the tasks such
a tree makes, as if the scheduler handled them one after another (the worst case). Not a test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare import build  # bench/compare.py: the same tree

TB = 1 << 40


def _request(root: Path, out: Path) -> object:
    from dumpcmp.host.request import CompareRequest

    return CompareRequest(root / "npu", root / "golden", fusion_rule=root / "rules.json", out_dir=out)


def _timed(root: Path, runner: object | None) -> tuple[float, float]:
    """Wall seconds of one compare, and CPU seconds of this process and all it started."""
    from dumpcmp.host.offline import run_compare

    out = Path(tempfile.mkdtemp(prefix="dumpcmp-bench-out-"))
    try:
        cpu = _cpu_seconds()
        start = time.perf_counter()
        run_compare(_request(root, out), runner=runner)  # type: ignore[arg-type]
        return time.perf_counter() - start, _cpu_seconds() - cpu
    finally:
        shutil.rmtree(out)


def _cpu_seconds() -> float:
    """This process, its live descendants (cluster workers) and its reaped ones (forked pools)."""
    import psutil  # a dependency of Dask distributed

    me = psutil.Process()
    total = 0.0
    for process in (me, *me.children(recursive=True)):
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def _warm_kernels() -> None:
    """Load the metric kernels for the tree's dtypes (runs here and on every worker)."""
    import numpy as np

    from dumpcmp.host.metrics import compare_arrays

    for dtype in (np.float16, np.float32):
        compare_arrays(np.ones(64, dtype=dtype), np.ones(64, dtype=np.float32))


def _noop() -> None:
    return None


def _empty_task_seconds(client: object, count: int = 400) -> float:
    """Round trip of an empty task, submitted in a stream as the runner does."""
    start = time.perf_counter()
    futures = [client.submit(_noop, pure=False) for _ in range(count)]  # type: ignore[attr-defined]
    client.gather(futures)  # type: ignore[attr-defined]
    del futures
    return (time.perf_counter() - start) / count


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gb", type=float, default=1.0, help="tensor data, both sides")
    parser.add_argument("--dir", type=Path, default=None, help="build (or reuse) the tree here and keep it")
    parser.add_argument("--workers", type=int, default=2, help="worker processes of the local cluster")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each; the fastest counts")
    args = parser.parse_args()

    from dumpcmp.host.cluster import connect

    root = args.dir or Path(tempfile.mkdtemp(prefix="dumpcmp-bench-"))
    try:
        info = build(root, args.gb)
        for path in root.rglob("*"):  # warm the page cache: both runs read from memory
            if path.is_file() and "subset-" not in str(path):
                path.read_bytes()
        _warm_kernels()
        print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}, {os.cpu_count()} cores")
        with connect(f"local:{args.workers}", timeout=60) as runner:
            runner.client.run(_warm_kernels)
            empty = _empty_task_seconds(runner.client)
            local: list[tuple[float, float]] = []
            cluster: list[tuple[float, float]] = []
            tasks = 0
            for _ in range(args.repeat):
                local.append(_timed(root, None))
                before = runner.tasks
                cluster.append(_timed(root, runner))
                tasks = runner.tasks - before
        (best_local, local_cpu), (best_cluster, cluster_cpu) = min(local), min(cluster)
        files, gb = int(info["count"]), float(info["bytes"]) / (1 << 30)
        threads = args.workers  # one thread each: the extra wall time of a task is paid per worker
        per_task = max(0.0, best_cluster - best_local) * threads / tasks
        print(f"tree: {gb:.2f} GB, {files} dump files; cluster: {args.workers} workers, {tasks} tasks")
        for name, runs in (("local", local), ("cluster", cluster)):
            best, cpu = min(runs)
            walls = " ".join(f"{wall:.2f}" for wall, _ in runs)
            print(f"{name:8}{best:7.2f} s  ({gb * 1024 / best:5.0f} MB/s), CPU {cpu:5.2f} s   runs: {walls}")
        print(f"cluster / local: {best_cluster / best_local:.2f}x (target ≤ 1.5x)")
        print(f"overhead per task: {per_task * 1e3:.1f} ms of a worker's wall time ((cluster − local) x "
              f"workers / {tasks} tasks), {(cluster_cpu - local_cpu) / tasks * 1e3:.1f} ms of CPU "
              f"(client, scheduler, workers); empty tasks: {empty * 1e3:.2f} ms each, streamed")  # fmt: skip
        _paper_estimate(info, best_local, per_task, empty)
        print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


def _paper_estimate(info: dict[str, object], local_seconds: float, per_task: float, empty: float) -> None:
    """8 workers of one core on a 1 TB tree, from this machine's figures."""
    from dumpcmp.host.cluster import BATCH_FILES, SHARES

    workers, cores = 8, os.cpu_count() or 1
    per_core = float(info["bytes"]) / local_seconds / cores  # bytes/s one core compares
    files = TB / (float(info["bytes"]) / int(info["count"]))
    fewest, most = BATCH_FILES
    batch = max(fewest, min(most, int(files) // (workers * SHARES)))
    tasks = files / batch
    compute = TB / (per_core * workers)
    overhead = tasks * per_task / workers  # each worker pays it on its own tasks
    floor = tasks * empty  # the scheduler's own rate, if it handled every task one after another
    total = max(compute + overhead, floor)
    print(f"paper, {workers} workers x 1 core, 1 TB: {files:,.0f} files in {tasks:,.0f} tasks of {batch}; "
          f"compute {compute / 60:.1f} min at {per_core / (1 << 20):.0f} MB/s a core + task overhead "
          f"{overhead / 60:.1f} min = {total / 60:.1f} min ({compute / total * workers:.1f}x one worker); "
          f"scheduler floor {floor / 60:.1f} min; storage must serve {workers} workers")  # fmt: skip


if __name__ == "__main__":
    main()
