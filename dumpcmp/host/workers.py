"""Comparing the files of a shard in parallel: threads, or forked worker processes.

Every file goes through the pure core (``dumpcmp.host.core.compare_file``) with the shard's
plan; results come back in the order given, through a bounded window, so memory does not grow
with the tree. The metric kernels release the GIL, but reading headers, loading npy files and
building rows do not, so threads stop scaling at ~1.4x on two cores. Large shards on Linux
therefore go to forked processes, which start at once with the parent's golden index, rules and
loaded kernels. The plan and the shard's files reach a pool through its initializer, so two pools
in one process (two sessions of a server) never see each other's; a batch is then a range of
file numbers, and only the rows come back.

Workers end with the parent: the kernel kills them when it dies (SIGTERM, SIGKILL, a crash), they
leave Ctrl-C to the parent, and a parent that stops early (an exception, Ctrl-C, a consumer that
stops iterating) drops the batches not started and kills the workers running the others.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from itertools import islice
from typing import Any

from dumpcmp.host.core import ComparePlan, FileRows, compare_file
from dumpcmp.host.pipeline import freeze_long_lived
from dumpcmp.proto.walker import DumpEntry

# Threads run the metric kernels in parallel (they release the GIL) but not the per-file Python
# work around them (header, golden lookup, layout, row: ~1 ms a file), so what decides is the
# number of files, not their bytes: from this many on, forked workers pay for their start.
PROCESS_MIN_FILES = 64
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_BATCHES_PER_WORKER = 4
_FILES_PER_THREAD = 4
_MAX_BATCH_FILES = 32

# A worker process's copies of the plan and of the shard's files, set by its initializer
_worker_plan: ComparePlan | None = None
_worker_entries: Sequence[DumpEntry] = ()

OnFiles = Callable[[int], None] | None
# (files of one shard, its plan, workers, progress callback) -> each file's rows, in that order
FileRunner = Callable[[Sequence[DumpEntry], ComparePlan, int, OnFiles], Iterator[FileRows]]


def worth_processes(entries: Sequence[DumpEntry], workers: int) -> bool:
    """Enough files to pay for a pool, more than one worker, and a platform where fork is sound."""
    return workers >= 2 and len(entries) >= PROCESS_MIN_FILES and sys.platform.startswith("linux")


def compare_files(
    entries: Sequence[DumpEntry], plan: ComparePlan, workers: int, on_files: OnFiles = None
) -> Iterator[FileRows]:
    """Each file's rows, in the order of ``entries``, computed by the pool that suits the shard."""
    if worth_processes(entries, workers):
        return files_in_processes(entries, plan, workers, on_files)
    return files_in_threads(entries, plan, workers, on_files)


def files_in_threads(
    entries: Sequence[DumpEntry], plan: ComparePlan, workers: int, on_files: OnFiles = None
) -> Iterator[FileRows]:
    window: deque[Future[FileRows]] = deque()
    pending = iter(entries)
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="dumpcmp-compare") as pool:
        for entry in islice(pending, 1):  # alone: it loads the kernels the others then share
            yield _counted(compare_file(entry, plan), on_files)
            freeze_long_lived()
        for entry in pending:
            window.append(pool.submit(compare_file, entry, plan))
            if len(window) >= max(1, workers) * _FILES_PER_THREAD:
                yield _counted(window.popleft().result(), on_files)
        while window:
            yield _counted(window.popleft().result(), on_files)


def _counted(result: FileRows, on_files: OnFiles) -> FileRows:
    if on_files:
        on_files(1)
    return result


def _start_worker(parent: int, plan: ComparePlan, entries: Sequence[DumpEntry]) -> None:
    """Runs first in every worker: keep the plan and files, die with the parent, leave Ctrl-C to it."""
    global _worker_plan, _worker_entries
    _worker_plan, _worker_entries = plan, entries
    # Ctrl-C reaches the whole process group; the parent handles it and cancels the pool.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Workers blocked on the task queue never see it close (their siblings hold it open), so
    # the kernel must end them when the parent dies, however it dies.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


# What a worker sends back of a file: its rows and stats results. The parent holds the entries:
# pickling an entry (its path, name and group) there and back cost more than the file's rows.
_Results = tuple[tuple[Any, ...], tuple[Any, ...]]


def _run_batch(start: int, stop: int) -> tuple[_Results, ...]:
    """Files ``start`` to ``stop`` of the shard the pool was started with."""
    plan = _worker_plan
    assert plan is not None, "worker started without a plan"
    done = (compare_file(entry, plan) for entry in _worker_entries[start:stop])
    return tuple((result.rows, result.stats) for result in done)


def files_in_processes(
    entries: Sequence[DumpEntry], plan: ComparePlan, workers: int, on_files: OnFiles = None
) -> Iterator[FileRows]:
    """Each file's rows in the order of ``entries``, computed in ``workers`` forked processes."""
    window: deque[tuple[Sequence[DumpEntry], Future[tuple[_Results, ...]]]] = deque()
    pool: Executor | None = None
    finished = False
    try:
        # The first file runs here: it loads the metric kernels once, before the fork, instead
        # of once in every worker; one file only, so the workers start once the kernels are in.
        yield _counted(compare_file(entries[0], plan), on_files)
        freeze_long_lived()
        pool = ProcessPoolExecutor(
            workers,
            multiprocessing.get_context("fork"),
            initializer=_start_worker,
            initargs=(os.getpid(), plan, entries),  # inherited through the fork, not pickled
        )
        for start, stop in batches(1, len(entries), workers):
            window.append((entries[start:stop], pool.submit(_run_batch, start, stop)))
            if len(window) >= workers * _BATCHES_PER_WORKER:
                yield from _collect(*window.popleft(), on_files)
        while window:
            yield from _collect(*window.popleft(), on_files)
        finished = True
    finally:
        if isinstance(pool, ProcessPoolExecutor):
            _close(pool, finished)


def batches(start: int, stop: int, workers: int) -> Iterator[tuple[int, int]]:
    """Files ``start`` to ``stop`` as consecutive ranges that shrink as the work left does.

    Each is about 1/(4 * workers) of what is left (at most ``_MAX_BATCH_FILES``), so the last
    ones are single files: with equal batches one worker ran the last ~30 files while the other
    waited, a tenth of a quarter-gigabyte compare.
    """
    while start < stop:
        size = max(1, min(_MAX_BATCH_FILES, (stop - start) // (workers * _BATCHES_PER_WORKER)))
        yield start, min(start + size, stop)
        start += size


def _close(pool: ProcessPoolExecutor, finished: bool) -> None:
    """Shut the pool; stopped early, also end the batches already running rather than wait.

    Interpreter exit would otherwise wait for every running batch, and Ctrl-C would seem ignored.
    """
    if not finished:  # ended first, so that the shutdown below has nothing to wait for
        for process in list((pool._processes or {}).values()):  # no public handle before 3.14
            process.kill()
    # Waited for even when stopped early: the pool's own thread otherwise outlives the run, and
    # the interpreter's exit then wakes it through a pipe it may have closed (a traceback).
    pool.shutdown(wait=True, cancel_futures=True)


def _collect(
    batch: Sequence[DumpEntry], future: Future[tuple[_Results, ...]], on_files: OnFiles
) -> Iterator[FileRows]:
    results = future.result()
    if on_files:
        on_files(len(results))
    for entry, (rows, stats) in zip(batch, results, strict=True):
        yield FileRows(entry, rows, stats)
