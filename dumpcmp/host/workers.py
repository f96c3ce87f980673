"""Comparing large shards in forked worker processes.

The metric kernels release the GIL, but reading headers, loading npy files and building rows do
not, so threads stop scaling at ~1.4x on two cores. Large runs on Linux therefore cut a shard
into batches of consecutive dump files and evaluate them in forked processes, each running the
very same ``iter_jobs``/``evaluate`` on its batch. Forking (rather than spawning) lets workers
start at once with the parent's golden index, rules and loaded kernels. Rows come back in
execution order through a bounded window of batches, so memory does not grow with the tree.

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
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass

from dumpcmp.host.golden import GoldenSource
from dumpcmp.host.matcher import Matcher
from dumpcmp.host.pipeline import CompareOptions, evaluate, freeze_long_lived, iter_jobs
from dumpcmp.host.rows import ResultRow
from dumpcmp.proto.walker import DumpEntry

# Threads run the metric kernels in parallel (they release the GIL) but not the per-file Python
# work around them (header, golden lookup, layout, row: ~1 ms a file), so what decides is the
# number of files, not their bytes: from this many on, forked workers pay for their start.
PROCESS_MIN_FILES = 64
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_BATCHES_PER_WORKER = 4
_MAX_BATCH_FILES = 32


@dataclass(frozen=True, slots=True)
class _Shard:
    golden: GoldenSource
    matcher: Matcher | None
    options: CompareOptions


_shard: _Shard | None = None  # set in the parent before the pool forks; read in the workers


@dataclass(frozen=True, slots=True)
class _BatchResult:
    rows: tuple[ResultRow, ...]
    used_golden: frozenset[str]
    files: int


def worth_processes(entries: Sequence[DumpEntry], workers: int) -> bool:
    """Enough files to pay for a pool, more than one worker, and a platform where fork is sound."""
    return workers >= 2 and len(entries) >= PROCESS_MIN_FILES and sys.platform.startswith("linux")


def _start_worker(parent: int) -> None:
    """Runs first in every worker: die with the parent, leave Ctrl-C to it."""
    # Ctrl-C reaches the whole process group; the parent handles it and cancels the pool.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Workers blocked on the task queue never see it close (their siblings hold it open), so
    # the kernel must end them when the parent dies, however it dies.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _run_batch(entries: tuple[DumpEntry, ...], start: int) -> _BatchResult:
    shard = _shard
    assert shard is not None, "worker forked before the shard was set"
    jobs = iter_jobs(entries, shard.golden, shard.matcher, shard.options, start=start)
    rows = tuple(evaluate(job, shard.options) for job in jobs)
    return _BatchResult(rows, shard.golden.drain_used(), len(entries))


def rows_in_processes(
    entries: Sequence[DumpEntry],
    golden: GoldenSource,
    matcher: Matcher | None,
    options: CompareOptions,
    workers: int,
    on_files: Callable[[int], None] | None = None,
) -> Iterator[ResultRow]:
    """The rows of one shard in execution order, computed in ``workers`` forked processes."""
    global _shard
    _shard = _Shard(golden, matcher, options)
    size = max(1, min(_MAX_BATCH_FILES, len(entries) // (workers * _BATCHES_PER_WORKER)))
    window: deque[Future[_BatchResult]] = deque()
    pool: ProcessPoolExecutor | None = None
    finished = False
    try:
        # The first file runs here: it loads the metric kernels once, before the fork, instead
        # of once in every worker; one file only, so the workers start once the kernels are in.
        yield from _collect_result(_run_batch(tuple(entries[:1]), 0), golden, on_files)
        freeze_long_lived()
        pool = ProcessPoolExecutor(
            workers, multiprocessing.get_context("fork"), initializer=_start_worker, initargs=(os.getpid(),)
        )
        for start in range(1, len(entries), size):
            window.append(pool.submit(_run_batch, tuple(entries[start : start + size]), start))
            if len(window) >= workers * _BATCHES_PER_WORKER:
                yield from _collect(window.popleft(), golden, on_files)
        while window:
            yield from _collect(window.popleft(), golden, on_files)
        finished = True
    finally:
        if pool is not None:
            _close(pool, finished)
        _shard = None


def _close(pool: ProcessPoolExecutor, finished: bool) -> None:
    """Shut the pool; stopped early, also end the batches already running rather than wait.

    Interpreter exit would otherwise wait for every running batch, and Ctrl-C would seem ignored.
    """
    running = list((pool._processes or {}).values())  # no public handle before Python 3.14
    pool.shutdown(wait=finished, cancel_futures=True)
    if not finished:
        for process in running:
            process.kill()


def _collect(
    future: Future[_BatchResult], golden: GoldenSource, on_files: Callable[[int], None] | None
) -> Iterator[ResultRow]:
    return _collect_result(future.result(), golden, on_files)


def _collect_result(
    result: _BatchResult, golden: GoldenSource, on_files: Callable[[int], None] | None
) -> Iterator[ResultRow]:
    golden.mark_used(result.used_golden)
    if on_files:
        on_files(result.files)
    yield from result.rows
