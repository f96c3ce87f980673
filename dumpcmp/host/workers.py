"""Comparing large shards in forked worker processes.

The metric kernels release the GIL, but reading headers, loading npy files and building rows do
not, so threads stop scaling at ~1.4x on two cores. Large runs on Linux therefore cut a shard
into batches of consecutive dump files and evaluate them in forked processes, each running the
very same ``iter_jobs``/``evaluate`` on its batch. Forking (rather than spawning) lets workers
start at once with the parent's golden index, rules and compiled kernels. Rows come back in
execution order through a bounded window of batches, so memory does not grow with the tree.
"""

from __future__ import annotations

import multiprocessing
import sys
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass

from dumpcmp.host.golden import GoldenSource
from dumpcmp.host.matcher import Matcher
from dumpcmp.host.pipeline import CompareOptions, evaluate, iter_jobs
from dumpcmp.host.rows import ResultRow
from dumpcmp.proto.walker import DumpEntry

# Below this many bytes of dump files a pool costs more than it saves. Measured on two cores with
# bench/compare.py: threads win with 200 MB of dump files (+300 MB golden), processes with 800 MB.
PROCESS_MIN_BYTES = 384 << 20
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
    """Enough data to pay for a pool, more than one worker, and a platform where fork is sound."""
    if workers < 2 or len(entries) < 2 or not sys.platform.startswith("linux"):
        return False
    total = 0
    for entry in entries:
        try:
            total += entry.path.stat().st_size
        except OSError:
            continue  # its row will say what is wrong with it
        if total >= PROCESS_MIN_BYTES:
            return True
    return False


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
    try:
        # The first batch runs here: it compiles (or loads) the metric kernels once, before the
        # fork, instead of once in every worker.
        yield from _collect_result(_run_batch(tuple(entries[:size]), 0), golden, on_files)
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            for start in range(size, len(entries), size):
                window.append(pool.submit(_run_batch, tuple(entries[start : start + size]), start))
                if len(window) >= workers * _BATCHES_PER_WORKER:
                    yield from _collect(window.popleft(), golden, on_files)
            while window:
                yield from _collect(window.popleft(), golden, on_files)
    finally:
        _shard = None


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
