"""Comparing a shard's files on a Dask ``distributed`` cluster (``compare --cluster``).

A runner like the local pools of ``dumpcmp.host.workers``, under the same windowing loop:
batches of dump files (of every shard at once) are the tasks, each worker reads its files from
the shared path itself (only paths and columnar row batches cross the network), and the rows come
back in the order given. The plans' parts (golden source, matcher, options) go to the cluster
once, each as the result of a task that holds it (a golden source as its path: each worker lists
the golden directory itself, once a run): workers fetch it from a peer when they first
need it, and the scheduler can recompute it from its own copy if every worker holding it dies,
which a scattered value could not survive.

Dask reschedules the tasks of a worker that dies; a task that raises is retried; a batch that
still fails is split into its files, and a file failing on every try gets one row with the
reason, as an unreadable file does. Importing this module imports Dask: only ``--cluster``
does, so local runs never pay for it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import operator
import os
import pickle
import signal
import threading
import warnings
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from itertools import chain
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any

import numpy as np

from dumpcmp.errors import ClusterError
from dumpcmp.host.core import ComparePlan, FileRows, failed_file
from dumpcmp.host.row_batch import FileBatch
from dumpcmp.host.workers import OnFiles, Work, batch_of, kernels_loaded, windowed
from dumpcmp.proto.names import DumpName
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
# A task costs the client a millisecond or two of its own CPU (graph, messages, the result's
# bookkeeping; ~2.8 ms measured on a loaded 2-core box): batches are larger than a local pool's,
# so that the coordinator keeps up with any number of workers, and never single files but at a
# failure's split. Up to 1,024 files: at 256 a big tree's tasks cost the client ~11 µs a file,
# the cost of reading back the file's rows; a batch's rows are a few hundred bytes a file.
BATCH_FILES = (4, 1024)
# Batches of each worker's share of the files left (``workers.batches``): two, not a local pool's
# four. A task costs the client ~5 ms of its CPU on a loaded 2-core box, more than half of it in
# its IO loop gathering the result, and the shrinking batches take about shares * workers tasks
# more each time a tree's files grow e-fold: with four shares, 52 tasks against 38 from 1,500
# to 9,000 files on 2 workers (12 µs a file of the IO loop's CPU alone); with two, 7 more.
SHARES = 2
_PLAN_PARTS = 4  # golden, matcher, options, family


def _compare_batch(files: bytes, plan_of: np.ndarray, *parts: Any) -> FileBatch:
    """Runs on a worker: the files of one task through the pure core, their rows as one batch.

    ``files``: the task's dump entries (``_packed``). ``plan_of``: each file's plan, numbering the
    plans whose ``parts`` follow, each fetched by the worker once and kept while the run holds it.
    """
    entries = _unpacked(files)
    plans = [ComparePlan(*parts[at : at + _PLAN_PARTS]) for at in range(0, len(parts), _PLAN_PARTS)]
    rows = batch_of([(entry, plans[n]) for entry, n in zip(entries, plan_of.tolist(), strict=True)])
    # As a local worker does: after its first files the kernels are loaded; out of the cyclic
    # GC's sight, full collections stop walking them (a fifth of a worker's CPU in bench/cluster.py).
    kernels_loaded()
    return rows


_NAME_VALUES = operator.attrgetter("op_type", "op_name", "task_id", "stream_id", "timestamp", "ffts")


def _packed(entries: Sequence[DumpEntry]) -> bytes:
    """Dump entries as one pickled list of plain values: ~0.7 µs an entry of the coordinator's
    CPU, where the row batches' columns took ~3.3 and the records' own pickling ~6 (a ``Path``
    and two records made again through their ``__reduce__``). Bytes, not a list: Dask walks a
    task's list and tuple arguments element by element, looking for futures in them."""
    return pickle.dumps(
        [(str(e.path), _NAME_VALUES(e.name), e.group, e.is_stats) for e in entries], pickle.HIGHEST_PROTOCOL
    )


def _unpacked(files: bytes) -> list[DumpEntry]:
    """``_packed``'s entries made again (a shard's group is one record, pickled once)."""
    return [DumpEntry(Path(path), DumpName(*name), group, is_stats) for path, name, group, is_stats in
            pickle.loads(files)]  # fmt: skip


def _hold(value: object) -> object:
    """Runs on a worker: its result is ``value``, kept in cluster memory for the batches."""
    return value


class ClusterRunner:
    """The runner (``dumpcmp.host.workers``' protocol) on a connected Dask client; one per run,
    or per host comparison: the plan parts of its last call stay on the cluster for the next."""

    def __init__(self, client: distributed.Client, retries: int = RETRIES) -> None:
        self.client = client
        self.retries = retries
        # The plan parts of the last call, kept for the next one: golden data and options are
        # the same for every shard of a run, and every batch of files a host session receives.
        self._held: list[tuple[object, distributed.Future]] = []
        self.tasks = 0  # batches submitted, splits included: what the per-task overhead is paid on

    @property
    def dashboard_link(self) -> str | None:
        return self.client.dashboard_link if "dashboard" in self._services() else None

    def _services(self) -> dict[str, Any]:
        services: dict[str, Any] = self.client.scheduler_info().get("services", {})
        return services

    def __call__(self, work: Work, workers: int, on_files: OnFiles = None) -> Generator[FileRows, None, None]:
        """Each file's rows in the order of ``work``; ``workers`` is the cluster's, not ours."""
        if len(work):
            yield from windowed(work, _DaskPool(self, work), on_files)

    def ship(self, plans: Sequence[ComparePlan]) -> list[tuple[distributed.Future, ...]]:
        """Each plan's parts on the cluster, once, reusing those the previous call shipped."""
        kept = {id(value): (value, future) for value, future in self._held}
        held: dict[int, tuple[object, distributed.Future]] = {}
        shipped = []
        for plan in plans:
            parts = (plan.golden, plan.matcher, plan.options, plan.family)
            for value in parts:
                if id(value) in held:
                    continue
                if id(value) in kept:
                    held[id(value)] = kept[id(value)]
                    continue
                with warnings.catch_warnings():
                    # A large golden index makes Dask suggest what this does: embed it once.
                    warnings.filterwarnings("ignore", "Sending large graph", UserWarning)
                    held[id(value)] = (value, self.client.submit(_hold, value, pure=False))
            shipped.append(tuple(held[id(v)][1] for v in parts))
        self._held = list(held.values())
        return shipped

    def submit(
        self, work: Work, start: int, stop: int, parts: Sequence[tuple[distributed.Future, ...]]
    ) -> distributed.Future:
        """Files ``start`` to ``stop`` of ``work`` as one task, with the parts of the plans they use."""
        # Numbered among the plans this task uses; an array, which Dask does not walk as it walks
        # a tuple (~1 µs a file)
        used, local = np.unique(np.array(work.plan_of[start:stop], dtype=np.int64), return_inverse=True)
        self.tasks += 1
        return self.client.submit(
            _compare_batch,
            _packed(work.entries[start:stop]),
            local.astype(np.int32),
            *(part for number in used.tolist() for part in parts[number]),
            retries=self.retries,
            pure=False,
        )


class _DaskPool:
    """The batches of one ``Work`` as Dask tasks."""

    def __init__(self, runner: ClusterRunner, work: Work) -> None:
        self._runner = runner
        self._work = work
        self._parts = runner.ship(work.plans)
        self.slots = max(1, sum(runner.client.nthreads().values()))
        self.batch_files = BATCH_FILES
        self.shares = SHARES
        self._running: set[distributed.Future] = set()

    def submit(self, start: int, stop: int) -> Callable[[], Sequence[FileRows]]:
        future = self._start(start, stop)
        return lambda: self._settle(future, start, stop)

    def _start(self, start: int, stop: int) -> distributed.Future:
        future = self._runner.submit(self._work, start, stop, self._parts)
        self._running.add(future)
        return future

    def close(self, finished: bool) -> None:
        # Stopped early (an error, Ctrl-C, a consumer that stopped): drop what is left.
        if self._running:
            self._runner.client.cancel(list(self._running))

    def _settle(self, future: distributed.Future, start: int, stop: int) -> list[FileRows]:
        """The rows of a finished task; a task that failed every try is retried file by file."""
        try:
            batch = future.result()
        except (asyncio.CancelledError, concurrent.futures.CancelledError) as exc:
            raise ClusterError(
                f"the Dask cluster dropped a task ({exc or 'cancelled'}): is the scheduler up?"
            ) from None
        except Exception as exc:  # the task's own failure, after every retry: its files decide
            if stop - start == 1:
                tries = self._runner.retries + 1
                reason = f"comparison failed on the cluster ({tries} tries): {type(exc).__name__}: {exc}"
                work = self._work
                return [failed_file(work.entries[start], work.plans[work.plan_of[start]], reason)]
            singles = [self._start(i, i + 1) for i in range(start, stop)]
            return list(chain.from_iterable(self._settle(s, i, i + 1) for i, s in enumerate(singles, start)))
        finally:
            self._running.discard(future)
        return self._work.rows(start, stop, batch)


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
