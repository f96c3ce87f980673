"""Comparing a shard's files on a Dask ``distributed`` cluster (``compare --cluster``).

A file runner like the local pools of ``dumpcmp.host.workers``: batches of dump files are the
tasks, each worker reads its files from the shared path itself (only paths and rows cross the
network), and the rows come back in the order given. The plan's parts (golden index, matcher,
options) go to the cluster once, each as the result of a task that holds it: workers fetch it
from a peer when they first need it, and the scheduler can recompute it from its own copy if
every worker holding it dies, which a scattered value could not survive.

Dask reschedules the tasks of a worker that dies; a task that raises is retried; a batch that
still fails is split into its files, and a file failing on every try gets one row with the
reason, as an unreadable file does. Importing this module imports Dask: only ``--cluster``
does, so local runs never pay for it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import signal
import threading
import warnings
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from itertools import chain
from multiprocessing import resource_tracker
from typing import Any

from dumpcmp.errors import ClusterError
from dumpcmp.host.core import ComparePlan, FileRows, ResultFamily, compare_file, failed_file
from dumpcmp.host.golden import GoldenSource
from dumpcmp.host.matcher import Matcher
from dumpcmp.host.pipeline import CompareOptions, freeze_long_lived
from dumpcmp.host.workers import OnFiles
from dumpcmp.proto.walker import DumpEntry

try:
    import dask
    import distributed
except ImportError as exc:  # the message is what the user sees: say how to get it
    raise ClusterError(
        f'--cluster needs Dask distributed, which is not installed ({exc}): pip install "dumpcmp[cluster]"'
    ) from exc

LOCAL = "local"
RETRIES = 2  # a task that raises runs up to three times before its files are split or given up
# Tasks per worker thread: enough to balance the tail (a worker idle while the last big batch
# runs elsewhere costs more than Dask's few ms a task), and the number kept in flight.
_BATCHES_PER_THREAD = 8
_MAX_BATCH_FILES = 32  # ~0.1 s of work for 1 MB files: a task's few ms of overhead stays small

_frozen = False  # in a worker process: the long-lived objects are out of the GC's sight


def _compare_batch(
    entries: tuple[DumpEntry, ...],
    golden: GoldenSource | None,
    matcher: Matcher | None,
    options: CompareOptions,
    family: ResultFamily,
) -> tuple[FileRows, ...]:
    """Runs on a worker: the files of one task through the pure core."""
    global _frozen
    plan = ComparePlan(golden, matcher, options, family)
    rows = tuple(compare_file(entry, plan) for entry in entries)
    if not _frozen:
        # As a local worker inherits it: after its first files the kernels are loaded; out of
        # the cyclic GC's sight, full collections stop walking them (a fifth of a worker's CPU in
        # bench/cluster.py).
        freeze_long_lived()
        _frozen = True
    return rows


def _hold(value: object) -> object:
    """Runs on a worker: its result is ``value``, kept in cluster memory for the batches."""
    return value


@dataclass(frozen=True, slots=True)
class _Task:
    """One batch of files of one plan, with that plan's parts on the cluster."""

    entries: tuple[DumpEntry, ...]
    plan: ComparePlan
    parts: tuple[distributed.Future, ...]


class ClusterRunner:
    """A ``FileRunner`` on a connected Dask client; one per run, shards one after another."""

    def __init__(self, client: distributed.Client, retries: int = RETRIES) -> None:
        self.client = client
        self.retries = retries
        # The plan parts of the shard last run, kept for the next one: golden data and options
        # are the same for every shard of a run, so they go to the cluster once.
        self._held: list[tuple[object, distributed.Future]] = []
        self.tasks = 0  # batches submitted, splits included: what the per-task overhead is paid on

    @property
    def dashboard_link(self) -> str | None:
        return self.client.dashboard_link if "dashboard" in self._services() else None

    def _services(self) -> dict[str, Any]:
        services: dict[str, Any] = self.client.scheduler_info().get("services", {})
        return services

    def __call__(
        self, entries: Sequence[DumpEntry], plan: ComparePlan, workers: int, on_files: OnFiles = None
    ) -> Iterator[FileRows]:
        """Each file's rows in the order of ``entries``; ``workers`` is the cluster's, not ours."""
        return self._run(tuple(entries), plan, on_files)

    def compare_each(self, work: Sequence[tuple[DumpEntry, ComparePlan]]) -> list[FileRows]:
        """Each file's rows, in the order of ``work``, the files of several plans in one round trip.

        For the host, whose sessions hand over the files that landed together: every plan part
        not already on the cluster goes once, however many files use it.
        """
        if not work:  # nothing to ship: the plan parts held stay held
            return []
        by_plan: dict[int, tuple[ComparePlan, list[int]]] = {}
        for place, (_, plan) in enumerate(work):
            by_plan.setdefault(id(plan), (plan, []))[1].append(place)
        runs = list(by_plan.values())
        shipped = self._ship([plan for plan, _ in runs])
        size = self._batch_size(len(work))
        tasks = [
            _Task(tuple(work[place][0] for place in places[start : start + size]), plan, parts)
            for (plan, places), parts in zip(runs, shipped, strict=True)
            for start in range(0, len(places), size)
        ]
        rows: list[FileRows | None] = [None] * len(work)
        order = (place for _, places in runs for place in places)
        for place, result in zip(order, self._stream(tasks, None), strict=True):
            rows[place] = result
        return [result for result in rows if result is not None]

    def _run(
        self, entries: tuple[DumpEntry, ...], plan: ComparePlan, on_files: OnFiles
    ) -> Iterator[FileRows]:
        if not entries:
            return
        (parts,) = self._ship([plan])
        size = self._batch_size(len(entries))
        tasks = [_Task(entries[start : start + size], plan, parts) for start in range(0, len(entries), size)]
        yield from self._stream(tasks, on_files)

    def _batch_size(self, files: int) -> int:
        threads = max(1, sum(self.client.nthreads().values()))
        return max(1, min(_MAX_BATCH_FILES, files // (threads * _BATCHES_PER_THREAD)))

    def _stream(self, tasks: list[_Task], on_files: OnFiles) -> Iterator[FileRows]:
        """The tasks' rows in task order, a bounded number of them in flight."""
        window = max(1, sum(self.client.nthreads().values())) * _BATCHES_PER_THREAD
        running: dict[distributed.Future, int] = {}
        finished: dict[int, tuple[FileRows, ...]] = {}
        completed = distributed.as_completed(loop=self.client.loop)
        submitted = yielded = 0
        try:
            while yielded < len(tasks):
                while submitted < len(tasks) and submitted - yielded < window:
                    future = self._submit(tasks[submitted].entries, tasks[submitted].parts)
                    running[future] = submitted
                    completed.add(future)
                    submitted += 1
                if yielded in finished:
                    yield from finished.pop(yielded)
                    yielded += 1
                    continue
                future = next(completed)
                index = running.pop(future)
                task = tasks[index]
                finished[index] = self._settle(future, task.entries, task.parts, task.plan)
                if on_files:
                    on_files(len(task.entries))
        finally:
            # Stopped early (an error, Ctrl-C, a consumer that stopped): drop what is left.
            if running:
                self.client.cancel(list(running))

    def _ship(self, plans: Sequence[ComparePlan]) -> list[tuple[distributed.Future, ...]]:
        """Each plan's parts on the cluster, reusing those the previous call shipped."""
        kept = {id(value): (value, future) for value, future in self._held}
        held: dict[int, tuple[object, distributed.Future]] = {}
        shipped = []
        for plan in plans:
            for value in (plan.golden, plan.matcher, plan.options, plan.family):
                if id(value) in held:
                    continue
                if id(value) in kept:
                    held[id(value)] = kept[id(value)]
                    continue
                with warnings.catch_warnings():
                    # A large golden index makes Dask suggest what this does: embed it once.
                    warnings.filterwarnings("ignore", "Sending large graph", UserWarning)
                    held[id(value)] = (value, self.client.submit(_hold, value, pure=False))
            parts = (plan.golden, plan.matcher, plan.options, plan.family)
            shipped.append(tuple(held[id(v)][1] for v in parts))
        self._held = list(held.values())
        return shipped

    def _submit(
        self, batch: tuple[DumpEntry, ...], parts: tuple[distributed.Future, ...]
    ) -> distributed.Future:
        self.tasks += 1
        return self.client.submit(_compare_batch, batch, *parts, retries=self.retries, pure=False)

    def _settle(
        self,
        future: distributed.Future,
        batch: tuple[DumpEntry, ...],
        parts: tuple[distributed.Future, ...],
        plan: ComparePlan,
    ) -> tuple[FileRows, ...]:
        """The rows of a finished task; a task that failed every try is retried file by file."""
        try:
            rows: tuple[FileRows, ...] = future.result()
            return rows
        except (asyncio.CancelledError, concurrent.futures.CancelledError) as exc:
            raise ClusterError(
                f"the Dask cluster dropped a task ({exc or 'cancelled'}): is the scheduler up?"
            ) from None
        except Exception as exc:  # the task's own failure, after every retry: its files decide
            if len(batch) == 1:
                tries = self.retries + 1
                reason = f"comparison failed on the cluster ({tries} tries): {type(exc).__name__}: {exc}"
                return (failed_file(batch[0], plan, reason),)
            singles = [self._submit((entry,), parts) for entry in batch]
            return tuple(
                chain.from_iterable(
                    self._settle(single, (entry,), parts, plan)
                    for single, entry in zip(singles, batch, strict=True)
                )
            )


@contextmanager
def connect(address: str, timeout: float) -> Iterator[ClusterRunner]:
    """A runner on the scheduler at ``address``, or on a new ``local[:N]`` cluster of processes.

    Fails with one ``ClusterError`` line within about ``timeout`` seconds when the scheduler
    cannot be reached or has no worker, instead of waiting for one forever. Ctrl-C while the
    cluster starts or stops takes effect once that is done: a half-made cluster cannot be
    closed, and its processes would outlive the command.
    """
    local = address == LOCAL or address.startswith(LOCAL + ":")
    if local:
        # Its first start unblocks SIGINT in the thread starting it (CPython's
        # resource_tracker.ensure_running): started here, no Dask thread starts it and lets a
        # Ctrl-C reach the workers it spawns.
        resource_tracker.ensure_running()
    with ExitStack() as made:
        with _sigint_held():
            cluster = None
            if local:
                cluster = _local_cluster(address)
                made.callback(_close, cluster)
            client = _client(cluster if cluster is not None else address, address, timeout)
            made.callback(_close, client)
            try:
                client.wait_for_workers(1, timeout=timeout)
            except TimeoutError:
                raise ClusterError(
                    f"the Dask scheduler at {address} has no worker (waited {timeout:g} s): "
                    "start `dask worker ADDRESS` on the machines"
                ) from None
        yield ClusterRunner(client)


@contextmanager
def _sigint_held() -> Iterator[None]:
    """Ctrl-C (SIGINT) waits until the block is done, then does what it would have done.

    Threads and processes started inside inherit the held signal: the local cluster's worker
    processes never see a Ctrl-C (a terminal sends it to the whole process group), so they do
    not die printing tracebacks while this process stops them in order.
    """
    pressed: list[int] = []
    handler = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is threading.main_thread():
        # A thread started earlier may take the signal for the process: remember it, do not act.
        signal.signal(signal.SIGINT, lambda signum, _frame: pressed.append(signum))
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        if signal.SIGINT in signal.sigpending():
            pressed.append(signal.sigwait({signal.SIGINT}))  # taken here, not by the handler too
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, handler)
    if pressed and callable(handler):
        handler(signal.SIGINT, None)  # Python's own: KeyboardInterrupt


def _close(closable: distributed.Client | distributed.LocalCluster) -> None:
    with _sigint_held():
        closable.close()


def _client(target: distributed.LocalCluster | str, address: str, timeout: float) -> distributed.Client:
    if isinstance(target, str):
        try:  # a malformed address fails here, before a half-made Client complains at exit
            distributed.comm.get_address_host_port(target)
        except ValueError as exc:
            raise ClusterError(
                f"--cluster {address}: not a scheduler address like tcp://HOST:8786, nor local[:N] ({exc})"
            ) from None
    try:
        return distributed.Client(target, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ClusterError(
            f"cannot reach the Dask scheduler at {address} (timeout {timeout:g} s): {exc}"
        ) from None


def _local_cluster(address: str) -> distributed.LocalCluster:
    """``local``: one worker process per core; ``local:N``: N of them; one thread each (the
    per-file Python work holds the GIL)."""
    count = address.partition(":")[2]
    if count and not (count.isdigit() and int(count) > 0):
        raise ClusterError(f"--cluster {address} is neither local nor local:N with N ≥ 1 workers")
    # The workers' sampling profiler (the dashboard's Profile page) costs a tenth of their CPU
    # on the cores the comparison needs; its other pages stay.
    try:
        with dask.config.set({"distributed.worker.profile.enabled": False}):
            return distributed.LocalCluster(
                n_workers=int(count) if count else os.cpu_count() or 1,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=":0",  # a free port: the link is printed, and 8787 may be taken
                silence_logs=logging.ERROR,
            )
    except (OSError, RuntimeError) as exc:  # no free port, workers that cannot start
        raise ClusterError(f"--cluster {address}: the local cluster did not start ({exc})") from None
