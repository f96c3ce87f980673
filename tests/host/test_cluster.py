"""Comparing on a Dask cluster (two worker processes on the loopback): the same CSV as a local run,
whatever the cluster loses on the way."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from random import Random

import pytest

from dumpcmp.errors import ClusterError
from dumpcmp.host.core import ComparePlan, FileRows, compare_file, file_order
from dumpcmp.host.golden import open_golden
from dumpcmp.host.offline import run_compare
from dumpcmp.host.pipeline import CompareOptions
from dumpcmp.host.request import CompareRequest
from dumpcmp.host.rule_set import RuleSet
from dumpcmp.host.session import CompareOutcome
from dumpcmp.proto.walker import DumpEntry, GroupKey, walk_dump_tree

distributed = pytest.importorskip("distributed")
cloudpickle = pytest.importorskip("cloudpickle")

from dumpcmp.host import cluster  # noqa: E402  (needs Dask)
from dumpcmp.host.cluster import ClusterRunner, connect  # noqa: E402
from dumpcmp.host.workers import Work, each_file  # noqa: E402

WORKERS = 2
TIMEOUT = 60  # generous bounds for a machine other jobs load too; never reached when all is well


@pytest.fixture(scope="module")
def client() -> Iterator[distributed.Client]:
    with (
        distributed.LocalCluster(
            n_workers=WORKERS,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=":0",
            silence_logs=50,  # workers killed on purpose below: no log noise
        ) as cluster,
        distributed.Client(cluster, timeout=TIMEOUT, set_as_default=False) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> CompareRequest:
    from dumpcmp.commands.sim import simulate

    run = simulate(
        "zoo:small_cnn", tmp_path_factory.mktemp("sim"), steps=2, faults=("/block1.pw/conv/Conv=bias",)
    )
    return CompareRequest(run.npu_dump_dir, run.golden_dir, fusion_rule=run.fusion_rule)


def _csvs(outcome: CompareOutcome) -> dict[str, bytes]:
    """Each result CSV's bytes, by its name without the timestamp."""
    paths = [p for shard in outcome.shards for p in (shard.result_file, shard.stats_file) if p is not None]
    return {path.name.rsplit("_", 1)[0]: path.read_bytes() for path in paths}


def _run(
    request: CompareRequest, out: Path, runner: ClusterRunner | None = None, **kw: object
) -> dict[str, bytes]:
    outcome = run_compare(replace(request, out_dir=out), runner=runner, **kw)  # type: ignore[arg-type]
    return _csvs(outcome)


@pytest.fixture(params=[1, 10], ids=["file-tasks", "batch-tasks"])
def files_per_task(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """Tasks of one file (what a failed batch is split into) or of ten (what big trees get)."""
    monkeypatch.setattr(cluster, "BATCH_FILES", (request.param, request.param))
    return int(request.param)


def test_cluster_csv_is_the_local_csv(
    simulated: CompareRequest, client: distributed.Client, tmp_path: Path, files_per_task: int
) -> None:
    local = _run(simulated, tmp_path / "local")
    progress: list[int] = []
    runner = ClusterRunner(client)
    remote = _run(simulated, tmp_path / "cluster", runner, on_progress=progress.append)
    assert len(local) == 2
    assert remote == local
    assert runner.tasks == 40 // files_per_task
    assert progress == [files_per_task] * runner.tasks  # fed as tasks are taken, in order


@contextmanager
def patched_workers(client: distributed.Client, patch: Callable[[], None]) -> Iterator[None]:
    """``patch`` run in every worker process for the block; the core restored after it."""
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import tests
    try:
        client.run(patch)
        yield
    finally:
        client.run(_heal_compare_batch)
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def _heal_compare_batch() -> None:
    from dumpcmp.host import core, workers

    workers.compare_batch = core.compare_batch


def _first_files_slow() -> None:
    """Runs in each worker: the first two ops of a step take a while, so later tasks finish first."""
    import time

    from dumpcmp.host import core, workers

    def slow(pairs: Sequence[tuple[DumpEntry, ComparePlan]]) -> list[FileRows]:
        if any(".1.1." in entry.path.name or ".2.1." in entry.path.name for entry, _ in pairs):
            time.sleep(0.5)
        return core.compare_batch(pairs)

    workers.compare_batch = slow


def test_tasks_finishing_out_of_order_give_the_ordered_csv(
    simulated: CompareRequest, client: distributed.Client, tmp_path: Path
) -> None:
    local = _run(simulated, tmp_path / "local")
    entries = sorted(walk_dump_tree(simulated.target).entries, key=file_order)
    plan = ComparePlan(open_golden(simulated.golden), None, CompareOptions())
    with patched_workers(client, _first_files_slow):
        rows = list(ClusterRunner(client)(Work.of([(plan, entries)]), WORKERS, None))
        remote = _run(simulated, tmp_path / "cluster", ClusterRunner(client))
    assert [r.entry for r in rows] == entries  # the runner's promise, whatever finished first
    assert remote == local


def test_corrupt_files_give_the_same_reason_rows(
    simulated: CompareRequest, client: distributed.Client, tmp_path: Path
) -> None:
    tree = tmp_path / "npu"
    shutil.copytree(simulated.target, tree)
    files = sorted(p for p in tree.rglob("*") if p.is_file())
    files[1].write_bytes(files[1].read_bytes()[:-7])  # truncated
    files[5].write_bytes(b"\x00garbage" * 10)
    files[30].write_bytes(b"")
    request = replace(simulated, target=tree)
    local = _run(request, tmp_path / "local")
    assert b"corrupt dump file" in b"".join(local.values())
    assert _run(request, tmp_path / "cluster", ClusterRunner(client)) == local


def test_a_worker_killed_mid_run_costs_a_retry_not_the_run(
    simulated: CompareRequest, client: distributed.Client, tmp_path: Path
) -> None:
    local = _run(simulated, tmp_path / "local")
    pids = client.run(os.getpid)
    victim = next(iter(pids.values()))
    killed: list[int] = []

    def kill_once(files: int) -> None:
        # At the first finished task: the victim holds results not yet collected, and tasks
        # still to run; both must be redone elsewhere.
        if not killed:
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

    remote = _run(simulated, tmp_path / "cluster", ClusterRunner(client), on_progress=kill_once)
    assert killed
    assert remote == local
    client.wait_for_workers(WORKERS, timeout=TIMEOUT)  # the nanny's replacement, for the next tests
    assert victim not in client.run(os.getpid).values()


POISON = "MaxPool"


def _poison_compare_batch() -> None:
    """Runs in each worker: comparing one op's files raises, as a crashing dependency would."""
    from dumpcmp.host import core, workers

    def failing(pairs: Sequence[tuple[DumpEntry, ComparePlan]]) -> list[FileRows]:
        if any(POISON in entry.path.name for entry, _ in pairs):
            raise RuntimeError("simulated crash")
        return core.compare_batch(pairs)

    workers.compare_batch = failing


def test_a_file_failing_every_try_gets_its_reason_row_and_the_rest_are_compared(
    simulated: CompareRequest, client: distributed.Client, tmp_path: Path, files_per_task: int
) -> None:
    local = _run(simulated, tmp_path / "local")
    runner = ClusterRunner(client)
    with patched_workers(client, _poison_compare_batch):
        remote = _run(simulated, tmp_path / "cluster", runner)
    assert remote.keys() == local.keys()
    for name, table in remote.items():
        want = [line for line in local[name].decode().splitlines() if POISON not in line]
        got = remote[name].decode().splitlines()
        poisoned = [line for line in got if POISON in line]
        assert [line for line in got if POISON not in line] == want
        assert len(poisoned) == 1, table  # one row for the file, not one per tensor
        assert "comparison failed on the cluster (3 tries): RuntimeError: simulated crash" in poisoned[0]
    # A failed batch is split into its files: only the poisoned file is given up.
    assert runner.tasks == 40 // files_per_task + (2 * files_per_task if files_per_task > 1 else 0)


def _session_work(request: CompareRequest) -> list[tuple[DumpEntry, ComparePlan]]:
    """Every file with its shard's plan, shuffled: what a host session hands over at once."""
    golden = open_golden(request.golden)
    matcher = RuleSet.load(request).default
    options = CompareOptions()
    plans: dict[GroupKey, ComparePlan] = {}  # sharing golden data and options, as a session's do
    work = [
        (entry, plans.setdefault(entry.group, ComparePlan(golden, matcher, options)))
        for entry in walk_dump_tree(request.target).entries
    ]
    Random(4).shuffle(work)
    assert len(plans) == 2
    return work


def test_files_of_several_plans_in_one_call_come_back_in_order_the_plans_shipped_once(
    simulated: CompareRequest, client: distributed.Client
) -> None:
    work = _session_work(simulated)
    runner = ClusterRunner(client)
    rows = each_file(runner, work)
    assert [r.entry for r in rows] == [entry for entry, _ in work]
    assert repr(rows) == repr([compare_file(entry, plan) for entry, plan in work])
    shipped = sorted(future.key for _, future in runner._held)
    assert len(shipped) == 4  # golden, matcher, options, family: once for both plans
    each_file(runner, work[:3])
    assert sorted(future.key for _, future in runner._held) == shipped  # nothing sent again
    assert each_file(runner, []) == []
    assert sorted(future.key for _, future in runner._held) == shipped


def test_a_worker_killed_during_a_sessions_batch_costs_a_retry(
    simulated: CompareRequest, client: distributed.Client
) -> None:
    work = _session_work(simulated)
    want = repr([compare_file(entry, plan) for entry, plan in work])
    address, victim = next(iter(client.run(os.getpid).items()))
    runner = ClusterRunner(client)
    with patched_workers(client, _first_files_slow), ThreadPoolExecutor(1) as pool:
        running = pool.submit(each_file, runner, work)
        deadline = time.monotonic() + TIMEOUT
        while not client.processing().get(address) and time.monotonic() < deadline:
            time.sleep(0.01)  # until the victim holds tasks of the batch
        assert not running.done()
        os.kill(victim, signal.SIGKILL)
        rows = running.result(timeout=TIMEOUT)
    assert repr(rows) == want
    client.wait_for_workers(WORKERS, timeout=TIMEOUT)  # the nanny's replacement, for the next tests


def test_an_unreachable_scheduler_fails_fast_in_one_error() -> None:
    with (
        pytest.raises(ClusterError, match=r"cannot reach the Dask scheduler at tcp://127.0.0.1:9 "),
        connect("tcp://127.0.0.1:9", timeout=0.5),
    ):
        pass


def test_a_scheduler_without_workers_fails_fast_in_one_error() -> None:
    with distributed.LocalCluster(
        n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1", dashboard_address=":0"
    ) as empty:
        address = empty.scheduler_address
        with (
            pytest.raises(ClusterError, match=rf"the Dask scheduler at {address} has no worker"),
            connect(address, timeout=0.5),
        ):
            pass


@pytest.mark.parametrize("address", ["local:0", "local:two", "nonsense"])
def test_a_malformed_address_says_so(address: str) -> None:
    with pytest.raises(ClusterError, match="--cluster"), connect(address, timeout=0.5):
        pass


def test_without_dask_the_error_names_the_extra() -> None:
    blocked = "import sys; sys.modules['distributed'] = None\nimport dumpcmp.host.cluster"
    done = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 1
    assert "ClusterError: --cluster needs Dask distributed" in done.stderr
    assert 'pip install "dumpcmp[cluster]"' in done.stderr


def test_a_local_cluster_that_cannot_start_is_one_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from dumpcmp.errors import ClusterError

    def refuse(*_: object, **__: object) -> None:
        raise RuntimeError("An attempt has been made to start a new process before bootstrapping")

    monkeypatch.setattr(distributed, "LocalCluster", refuse)
    with (
        pytest.raises(ClusterError, match="local:2: the local cluster did not start"),
        connect("local:2", 1.0),
    ):
        pass


def test_entries_reach_the_workers_as_walked(tmp_path: Path) -> None:
    """Every field of a task's dump entries arrives as the walk made it: FFTS+ fields, no stream,
    statistics dumps, the session directory of the group, names a mapping file gave."""
    from dumpcmp.proto.names import DumpName, FftsFields

    group = GroupKey("0", "resnet", "1", "3", "20260101000000")
    other = GroupKey("1", "resnet", "1", "3")
    entries = [
        DumpEntry(tmp_path / "Add.add_1.2.3.1700000000", DumpName("Add", "add_1", 3, 2, 1700000000), group),
        DumpEntry(tmp_path / "Conv2D.c.5.1700000001", DumpName("Conv2D", "c", 5, None, 1700000001), group),
        DumpEntry(tmp_path / "1.csv", DumpName("Add", "a", 7, None, 9, FftsFields(1, 2, 3, 4)), other, True),
    ]
    assert cluster._unpacked(cluster._packed(entries)) == entries
