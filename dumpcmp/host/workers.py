"""Comparing files in parallel: one runner protocol and one windowing loop for every pool.

A runner takes ``Work`` (files, each with the number of its plan among the work's plans: every
shard of a tree at once, or the files a host session received together) and yields each file's
rows in the order given. Every pool runs under the same loop (``windowed``): consecutive ranges
of files are the batches, a bounded number of them in flight, results taken in order, so memory
does not grow with the tree. The pools:

* serial: one worker, the files in this thread (``-j 1``, a host session without a cluster);
* threads: the metric kernels release the GIL, but reading headers, loading npy files and
  building rows do not, so threads stop scaling at ~1.4x on two cores;
* forked processes (Linux, from ``PROCESS_MIN_FILES`` files on): they start at once with the
  parent's golden index, rules and loaded kernels; the work (every plan, every file) reaches a
  pool through its initializer, inherited through the fork, never pickled; a batch is a range of
  file numbers, and only its rows come back, as one columnar ``FileBatch`` with each row's
  line of the result table (the parent puts the Index in front: ``FileRows.text``) and verdict
  (``row_verdicts``): the parent makes the rows back only where a sink reads them;
* a Dask cluster (``dumpcmp.host.cluster``): the same loop, its own pool.

Forked workers end with the parent: the kernel kills them when it dies (SIGTERM, SIGKILL, a
crash), they leave Ctrl-C to the parent, and a parent that stops early (an exception, Ctrl-C, a
consumer that stops iterating) drops the batches not started and kills the workers running the
others.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from itertools import groupby, islice
from typing import Protocol

from dumpcmp.errors import InternalError
from dumpcmp.host.core import ComparePlan, FileRows, compare_batch
from dumpcmp.host.pipeline import freeze_long_lived
from dumpcmp.host.row_batch import FileBatch
from dumpcmp.host.row_verdicts import RowVerdicts
from dumpcmp.proto.walker import DumpEntry

# Threads run the metric kernels in parallel (they release the GIL) but not the per-file Python
# work around them (header, golden lookup, layout, row: ~1 ms a file), so what decides is the
# number of files, not their bytes: from this many on, forked workers pay for their start.
PROCESS_MIN_FILES = 64
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
BATCHES_PER_WORKER = 4  # batches in flight per worker: enough to balance the tail
MAX_BATCH_FILES = 32
_STOP_S = 5.0  # longest wait for a killed worker, then for its pool's thread, when stopped early

OnFiles = Callable[[int], None] | None


@dataclass(frozen=True, slots=True)
class Work:
    """Files to compare, each with the number of its plan: ``plans[plan_of[i]]`` for ``entries[i]``."""

    plans: tuple[ComparePlan, ...]
    entries: tuple[DumpEntry, ...]
    plan_of: tuple[int, ...]
    # The Index each file's rows will have in its shard's table, where the caller knows it (None
    # where not): rows a worker sends back get it as they are read, not made again to number them.
    places: tuple[int | None, ...] | None = None

    @classmethod
    def of(
        cls,
        shards: Sequence[tuple[ComparePlan, Sequence[DumpEntry]]],
        places: Sequence[Sequence[int | None]] = (),
    ) -> Work:
        """The files of each (plan, files), one shard after the other; ``places``: each shard's
        files' Index, when known (see ``places`` above)."""
        return cls(
            tuple(plan for plan, _ in shards),
            tuple(entry for _, entries in shards for entry in entries),
            tuple(number for number, (_, entries) in enumerate(shards) for _ in entries),
            tuple(place for shard in places for place in shard) if places else None,
        )

    @classmethod
    def each(cls, pairs: Sequence[tuple[DumpEntry, ComparePlan]]) -> Work:
        """Each (file, plan) in the order given; a plan given for several files is one plan."""
        numbers: dict[int, int] = {}
        plans: list[ComparePlan] = []
        for _, plan in pairs:
            if id(plan) not in numbers:
                numbers[id(plan)] = len(plans)
                plans.append(plan)
        return cls(tuple(plans), tuple(e for e, _ in pairs), tuple(numbers[id(p)] for _, p in pairs))

    def __len__(self) -> int:
        return len(self.entries)

    def compare(self, start: int, stop: int) -> list[FileRows]:
        """Files ``start`` to ``stop`` through the core, here."""
        return compare_batch(self.pairs(start, stop))

    def pairs(self, start: int, stop: int) -> list[tuple[DumpEntry, ComparePlan]]:
        """Files ``start`` to ``stop``, each with its plan."""
        plans, plan_of = self.plans, self.plan_of
        return [(self.entries[i], plans[plan_of[i]]) for i in range(start, stop)]

    def rows(self, start: int, stop: int, batch: FileBatch) -> list[FileRows]:
        """Files ``start`` to ``stop`` with the rows a worker sent back for them."""
        places = self.places[start:stop] if self.places is not None else None
        files = zip(self.entries[start:stop], batch.files(places), strict=True)
        return [FileRows(entry, rows, stats, text) for entry, (rows, stats, text) in files]


def batch_of(pairs: Sequence[tuple[DumpEntry, ComparePlan]]) -> FileBatch:
    """A worker's files through the core, and what it sends back of them: their rows, column by
    column, their lines of the result table and the rows' verdicts (the coordinator's CPU is what
    limits a cluster: formatting a row there cost as much as reading it back, and the summary
    then need not read it back), not the entries: the parent has them, and pickling an entry
    there and back cost more than the file's rows."""
    results = compare_batch(pairs)
    files = [
        (result.rows, result.stats, plan.family.row_text(result.rows, plan))
        for result, (_, plan) in zip(results, pairs, strict=True)
    ]
    # Judged plan by plan (the files of a plan come together), not file by file: an array a file
    # cost the worker more than judging its rows.
    judged = []
    for _, run in groupby(zip(results, pairs, strict=True), key=lambda pair: id(pair[1][1])):
        files_of_plan = list(run)
        plan = files_of_plan[0][1][1]
        judged.append(plan.family.row_verdicts([r for result, _ in files_of_plan for r in result.rows], plan))
    verdicts = [v for v in judged if v is not None]
    if len(verdicts) < len(judged) or len({v.thresholds for v in verdicts}) != 1:
        return FileBatch.of(files)  # a family that judges its own rows, or no rows at all
    return FileBatch.of(files, RowVerdicts.joined(verdicts, verdicts[0].thresholds))


# (work, workers, progress callback) -> each file's rows, in the order of the work's files;
# closed early, it stops its pool
Runner = Callable[[Work, int, OnFiles], Generator[FileRows, None, None]]


def run_shards(
    runner: Runner,
    shards: Sequence[tuple[ComparePlan, Sequence[DumpEntry]]],
    workers: int,
    on_files: OnFiles,
    shard_done: Callable[[int, list[FileRows]], None],
    places: Sequence[Sequence[int | None]] = (),
) -> None:
    """Compare the files of every (plan, files) shard at once; ``shard_done(number, results)`` as
    soon as each shard's are in, shard after shard (offline compare's and TorchAir's driver).
    ``places``: as ``Work.of`` takes them."""
    with closing(runner(Work.of(shards, places), workers, on_files)) as results:
        for number, (_, entries) in enumerate(shards):
            shard_done(number, list(islice(results, len(entries))))
        if next(results, None) is not None:  # also lets the pool end as finished
            raise InternalError("the runner gave back more files than it was given")


class Pool(Protocol):
    """Where the batches of one ``Work`` run: ``slots`` batches at once, of ``batch_files``
    (fewest, most) files, each about 1/(``shares`` * ``slots``) of the files left (``batches``);
    ``submit`` starts one, and returns what waits for its files' rows; ``close`` ends the pool
    (``finished`` False: stopped early, drop the rest)."""

    @property
    def slots(self) -> int: ...

    @property
    def batch_files(self) -> tuple[int, int]: ...

    @property
    def shares(self) -> int: ...

    def submit(self, start: int, stop: int) -> Callable[[], Sequence[FileRows]]: ...

    def close(self, finished: bool) -> None: ...


def windowed(
    work: Work, pool: Pool, on_files: OnFiles = None, start: int = 0
) -> Generator[FileRows, None, None]:
    """Files ``start`` on of ``work`` through ``pool``, in order: the one windowing loop."""
    window: deque[Callable[[], Sequence[FileRows]]] = deque()
    finished = False
    try:
        for first, stop in batches(start, len(work), pool.slots, *pool.batch_files, pool.shares):
            window.append(pool.submit(first, stop))
            if len(window) >= pool.slots * BATCHES_PER_WORKER:
                yield from _counted(window.popleft()(), on_files)
        while window:
            yield from _counted(window.popleft()(), on_files)
        finished = True
    finally:
        pool.close(finished)


def _counted(results: Sequence[FileRows], on_files: OnFiles) -> Sequence[FileRows]:
    if on_files:
        on_files(len(results))
    return results


def batches(
    start: int,
    stop: int,
    workers: int,
    fewest: int = 1,
    most: int = MAX_BATCH_FILES,
    shares: int = BATCHES_PER_WORKER,
) -> Iterator[tuple[int, int]]:
    """Files ``start`` to ``stop`` as consecutive ranges that shrink as the work left does.

    Each is about 1/(``shares`` * workers) of what is left (``fewest`` to ``most`` files), so
    the last ones are small: with equal batches one worker ran the last ~30 files while the other
    waited, a tenth of a quarter-gigabyte compare. The shrinking takes about ``shares`` *
    workers batches more each time the files left grow e-fold.
    """
    while start < stop:
        size = max(fewest, min(most, (stop - start) // (workers * shares)))
        yield start, min(start + size, stop)
        start += size


def worth_processes(work: Work, workers: int) -> bool:
    """Enough files to pay for a pool, more than one worker, and a platform where fork is sound."""
    return workers >= 2 and len(work) >= PROCESS_MIN_FILES and sys.platform.startswith("linux")


_frozen = False  # this process has frozen what the kernels' loading made (``freeze_long_lived``)


def kernels_loaded() -> None:
    """Call after a process's first compared file: freezes what loading the kernels made, once."""
    global _frozen
    if not _frozen:
        freeze_long_lived()
        _frozen = True


def compare_files(work: Work, workers: int, on_files: OnFiles = None) -> Generator[FileRows, None, None]:
    """The local runner: each file's rows, in order, from the pool that suits the work."""
    if not len(work):
        return
    processes = worth_processes(work, workers)
    # The first file runs here, alone: it loads the metric kernels once, before any fork or
    # thread, instead of once in every worker. Before forked workers, as they do it: a shard
    # whose files do not all come with their lines is formatted here (``FileRows.text``).
    first = work.rows(0, 1, batch_of(work.pairs(0, 1))) if processes else work.compare(0, 1)
    yield from _counted(first, on_files)
    kernels_loaded()
    pool: Pool
    if workers <= 1:
        pool = _Serial(work)
    elif processes:
        pool = _Processes(work, workers)
    else:
        pool = _Threads(work, workers)
    yield from windowed(work, pool, on_files, start=1)


class _Serial:
    """One worker: this thread, each batch when its rows are asked for."""

    slots = 1
    batch_files = (1, MAX_BATCH_FILES)
    shares = BATCHES_PER_WORKER

    def __init__(self, work: Work) -> None:
        self._work = work

    def submit(self, start: int, stop: int) -> Callable[[], Sequence[FileRows]]:
        return lambda: self._work.compare(start, stop)

    def close(self, finished: bool) -> None:
        pass


class _Threads:
    def __init__(self, work: Work, workers: int) -> None:
        self._work = work
        self.slots = workers
        self.batch_files = (1, MAX_BATCH_FILES)
        self.shares = BATCHES_PER_WORKER
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dumpcmp-compare")

    def submit(self, start: int, stop: int) -> Callable[[], Sequence[FileRows]]:
        return self._pool.submit(self._work.compare, start, stop).result

    def close(self, finished: bool) -> None:
        self._pool.shutdown(wait=True, cancel_futures=not finished)


# The work of a worker process, set by its initializer
_worker_work: Work | None = None


def _start_worker(parent: int, work: Work) -> None:
    """Runs first in every worker: keep the work, die with the parent, leave Ctrl-C to it."""
    global _worker_work
    _worker_work = work
    # Ctrl-C reaches the whole process group; the parent handles it and cancels the pool.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Workers blocked on the task queue never see it close (their siblings hold it open), so
    # the kernel must end them when the parent dies, however it dies.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _run_batch(start: int, stop: int) -> FileBatch:
    """Files ``start`` to ``stop`` of the work the pool was started with, as one row batch."""
    work = _worker_work
    assert work is not None, "worker started without its work"
    return batch_of(work.pairs(start, stop))


class _Processes:
    """``workers`` forked processes, the work inherited by each (a server's sessions may run
    several pools at once: each sees its own)."""

    def __init__(self, work: Work, workers: int) -> None:
        self._work = work
        self.slots = workers
        self.batch_files = (1, MAX_BATCH_FILES)
        self.shares = BATCHES_PER_WORKER
        self._pool = ProcessPoolExecutor(
            workers,
            multiprocessing.get_context("fork"),
            initializer=_start_worker,
            initargs=(os.getpid(), work),  # inherited through the fork, not pickled
        )

    def submit(self, start: int, stop: int) -> Callable[[], Sequence[FileRows]]:
        future: Future[FileBatch] = self._pool.submit(_run_batch, start, stop)
        return lambda: self._work.rows(start, stop, future.result())

    def close(self, finished: bool) -> None:
        """Shut the pool; stopped early, also end the batches already running rather than wait.

        Interpreter exit would otherwise wait for every running batch, and Ctrl-C would seem ignored.
        """
        if finished:
            self._pool.shutdown(wait=True)
            return
        pool = self._pool
        processes = list((pool._processes or {}).values())  # no public handle before 3.14
        for process in processes:
            process.kill()
        for process in processes:
            process.join(_STOP_S)
        # A worker killed while it sent its rows leaves half a message in the result pipe, and the
        # pool's thread then waits in recv for the rest, for ever (a SIGTERM to our PID alone, then
        # this kill: ``compare`` hung for minutes). The dead workers' ends of the pipe closed with
        # them; closing ours makes that recv end (EOF) and the pool's thread stop as broken.
        pool._result_queue._writer.close()  # type: ignore[attr-defined]  # private, not in typeshed
        thread: threading.Thread | None = pool._executor_manager_thread  # type: ignore[assignment]  # typeshed: wrong type
        pool.shutdown(wait=False, cancel_futures=True)
        # Joined, but not for ever: a pool forked after this one holds a copy of the pipe's end
        # until it ends. Ended here, the thread cannot outlive the run and then be woken at the
        # interpreter's exit through a pipe it closed (a traceback).
        if thread is not None:
            thread.join(_STOP_S)


def each_file(runner: Runner, pairs: Sequence[tuple[DumpEntry, ComparePlan]]) -> list[FileRows]:
    """Each (file, plan)'s rows through ``runner``, in that order."""
    return list(runner(Work.each(pairs), 1, None)) if pairs else []
