"""Forked compare workers: they end with the parent, however the parent ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import dumpcmp
from dumpcmp.host import workers
from dumpcmp.host.workers import PROCESS_MIN_FILES, Work, batches, compare_files, worth_processes
from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, TensorKind, write_dump
from dumpcmp.proto.names import dump_file_name
from dumpcmp.proto.walker import DumpEntry, walk_dump_tree

STAMP = 1763700000000000
REPO = Path(dumpcmp.__file__).resolve().parents[1]

# A real forked compare whose batches take a minute each, so the workers are busy when the parent
# is signalled. ``_run_batch`` is looked up at submit time and the workers are forked, so they
# run this slow version (the parent's own first file does not go through it).
DRIVER = """
import sys, time
from pathlib import Path
from dumpcmp.host import workers
from dumpcmp.host.offline import run_compare
from dumpcmp.host.request import CompareRequest

run_batch = workers._run_batch

def slow_batch(start, stop):
    time.sleep(60)
    return run_batch(start, stop)

workers._run_batch = slow_batch
workers.PROCESS_MIN_FILES = 0
tree = Path(sys.argv[1])
run_compare(CompareRequest(tree, tree, out_dir=Path(sys.argv[2]), jobs=2))
"""


def small_tree(root: Path, files: int) -> Path:
    dump_dir = root / "npu" / "20261122000000" / "0" / "net" / "1" / "0"
    for i in range(files):
        name = f"layer{i}/Add"
        tensor = DumpTensor.from_array(TensorKind.OUTPUT, 0, np.full(8, i, dtype=np.float32))
        write_dump(
            dump_dir / dump_file_name("Add", name, i, 1, STAMP + i),
            DumpFile("", Layout.V2, "2.0", STAMP + i, name, outputs=(tensor,)),
        )
    return root / "npu"


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.update(int(c) for c in (task / "children").read_text().split())
        except OSError:
            continue
    return found


def alive(pid: int) -> bool:
    """Running or sleeping; a zombie (dead, waiting for a reaper) counts as ended."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers are Linux-only")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_workers_end_with_the_parent(tmp_path: Path, signum: signal.Signals) -> None:
    tree = small_tree(tmp_path, 40)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    parent = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(tree), str(tmp_path / "out")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while len(workers) < 2 and time.monotonic() < deadline and parent.poll() is None:
            workers |= _children(parent.pid)
            time.sleep(0.05)
        assert len(workers) >= 2, "the compare never forked its workers"
        time.sleep(0.5)  # let them pick up their (minute-long) batches
        os.kill(parent.pid, signum)
        parent.wait(timeout=30)
        deadline = time.monotonic() + 10
        while any(alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [w for w in workers if alive(w)], f"workers outlived the parent ({signum.name})"
    finally:
        for pid in [parent.pid, *workers]:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        parent.wait(timeout=30)


def _work(plan: object, entries: list[DumpEntry]) -> Work:
    return Work.of([(plan, entries)])  # type: ignore[list-item]


def test_processes_are_chosen_by_file_count_not_bytes(tmp_path: Path) -> None:
    few = _work(None, walk_dump_tree(small_tree(tmp_path / "few", 4)).entries)
    many = _work(None, walk_dump_tree(small_tree(tmp_path / "many", PROCESS_MIN_FILES)).entries)
    on_linux = sys.platform.startswith("linux")
    assert worth_processes(many, 2) is on_linux
    assert not worth_processes(few, 2)
    assert not worth_processes(many, 1)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers are Linux-only")
def test_two_pools_at_once_keep_their_own_plans(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A server compares several sessions at once: each pool must use its own plan, which a
    # module-global plan set before forking would not guarantee.
    from concurrent.futures import ThreadPoolExecutor

    from dumpcmp.host.core import ComparePlan, compare_file
    from dumpcmp.host.golden import open_golden
    from dumpcmp.host.pipeline import CompareOptions

    monkeypatch.setattr(workers, "PROCESS_MIN_FILES", 0)
    entries = walk_dump_tree(small_tree(tmp_path / "a", 24)).entries
    golden = open_golden(small_tree(tmp_path / "b", 24))
    plans = [ComparePlan(golden, None, CompareOptions(overflow_detection=flag)) for flag in (False, True)]

    def run(plan: ComparePlan) -> list[object]:
        return [r.overflow for f in compare_files(_work(plan, entries), 2) for r in f.rows]

    with ThreadPoolExecutor(2) as pool:
        plain, flagged = pool.map(run, plans)
    assert plain == [None] * 24 and flagged == [False] * 24
    assert [compare_file(e, plans[1]).rows for e in entries] == [
        f.rows for f in compare_files(_work(plans[1], entries), 2)
    ]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers are Linux-only")
def test_forked_workers_give_every_file_its_own_rows_in_order(tmp_path: Path) -> None:
    # Workers receive file numbers and send back rows only, as columns; the parent pairs them
    # with its entries again. Many batches, files that differ, two plans in one work: each file
    # must get its own rows.
    from dumpcmp.host.core import ComparePlan, compare_file
    from dumpcmp.host.golden import open_golden
    from dumpcmp.host.pipeline import CompareOptions

    entries = walk_dump_tree(small_tree(tmp_path / "a", 70)).entries
    golden = open_golden(small_tree(tmp_path / "b", 70))
    plans = [ComparePlan(golden, None, CompareOptions(overflow_detection=flag)) for flag in (False, True)]
    work = Work.of([(plans[0], entries[:35]), (plans[1], entries[35:])])
    assert worth_processes(work, 2)
    forked = list(compare_files(work, 2))
    assert forked == [compare_file(entry, plans[i >= 35]) for i, entry in enumerate(entries)]
    assert [f.rows[0].npu_name for f in forked] == [f"layer{i}/Add" for i in range(70)]
    assert [f.rows[0].overflow for f in forked] == [None] * 35 + [False] * 35
    # Every file's lines are formatted where it was compared, the first one's too (it is compared
    # before the fork): a shard with one file without them is formatted by the parent.
    assert all(f.text is not None for f in forked)


@pytest.mark.parametrize(("count", "workers"), [(1, 2), (2, 2), (64, 2), (273, 2), (1092, 2), (5000, 8)])
def test_batches_cover_every_file_once_and_shrink_to_single_files(count: int, workers: int) -> None:
    """So that no worker runs a long last batch while the others wait."""
    ranges = list(batches(1, count, workers))
    covered = [i for start, stop in ranges for i in range(start, stop)]
    assert covered == list(range(1, count))
    sizes = [stop - start for start, stop in ranges]
    assert all(1 <= s <= 32 for s in sizes)
    assert sizes == sorted(sizes, reverse=True)
    if count > 1:
        assert sizes[-1] == 1


def test_forked_workers_write_the_result_file_this_process_writes(tmp_path: Path) -> None:
    # Workers send each row's line (no OpSequence without a fusion rule: the sink drops it) and
    # the parent numbers the rows as it reads them: the file is the one written from rows here.
    from dumpcmp.host.offline import run_compare
    from dumpcmp.host.request import CompareRequest

    target, golden = small_tree(tmp_path / "a", 70), small_tree(tmp_path / "b", 70)
    written = {}
    for jobs in (1, 2):
        outcome = run_compare(CompareRequest(target, golden, out_dir=tmp_path / f"j{jobs}", jobs=jobs))
        (shard,) = outcome.shards
        assert shard.result_file is not None
        written[jobs] = shard.result_file.read_bytes()
    assert written[1] == written[2]
    assert written[1].count(b"\n") == 71 and b"\n69,Add,layer69/Add," in written[1]


# A pool whose worker died while sending its rows: the result pipe holds the start of a message
# (its length says 4096 bytes, 5 came) and the pool's own thread waits in recv for the rest. A
# SIGKILL that lands mid-send (a scheduler's SIGTERM to the PID, then our kill of the workers)
# left ``compare`` hung in ``close`` for minutes, with no output.
HALF_SENT = """
import os, struct, time
from dumpcmp.host import workers

pool = workers._Processes(None, 2)
pool._pool.submit(time.sleep, 30)
time.sleep(1)  # the workers are up, one sleeping
os.write(pool._pool._result_queue._writer.fileno(), struct.pack("!i", 4096) + b"rows ")
time.sleep(0.5)  # the pool's thread reads the length, then waits for the rest
started = time.monotonic()
pool.close(finished=False)
print("closed in", round(time.monotonic() - started, 1))
"""


def test_an_early_close_does_not_wait_on_a_worker_killed_mid_send() -> None:
    done = subprocess.run(
        [sys.executable, "-c", HALF_SENT],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr
    assert "closed in" in done.stdout


def test_a_cluster_cuts_a_tree_into_fewer_batches_that_still_shrink_to_its_fewest() -> None:
    """A Dask task costs the coordinator milliseconds: half as many batches as a local pool's,
    the last ones still small, so that no worker runs a long last batch."""
    pytest.importorskip("distributed")
    from dumpcmp.host.cluster import BATCH_FILES, SHARES

    local = list(batches(0, 9000, 2, *BATCH_FILES))
    cluster = list(batches(0, 9000, 2, *BATCH_FILES, SHARES))
    assert [i for start, stop in cluster for i in range(start, stop)] == list(range(9000))
    assert len(cluster) < 0.6 * len(local)
    sizes = [stop - start for start, stop in cluster]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] <= BATCH_FILES[1] and sizes[-1] <= BATCH_FILES[0]
