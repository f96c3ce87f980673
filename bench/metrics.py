"""Throughput of the offline-data metric kernel (not a test).

    python bench/metrics.py [--mb 256] [--dtypes float16 float32] [--pairs 8] [--repeat 3]

For each dtype it builds ``--mb`` MB per side, split into ``--pairs`` tensor pairs, and prints
MB/s of tensor input (both sides counted) for:

* kernel, 1 thread   — ``compare_arrays`` over the pairs one after another;
* kernel, 2 threads  — the same pairs through a 2-thread pool (numpy releases the GIL);
* naive numpy        — one whole-array numpy call per metric in float64, the way the metrics
                       are usually written (converts each side to float64 up front).

Best of ``--repeat`` runs. Peak RSS is printed after the kernel runs and again after the naive
run, since ``ru_maxrss`` only ever grows.
"""

from __future__ import annotations

import argparse
import resource
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import ml_dtypes
import numpy as np
import numpy.typing as npt

from dumpcmp.host.metrics import DEFAULT_CHUNK, compare_arrays

Pair = tuple[npt.NDArray[np.generic], npt.NDArray[np.generic]]

DTYPES = {"float16": np.float16, "float32": np.float32, "bfloat16": ml_dtypes.bfloat16}
EPS64 = float(np.finfo(np.float64).eps)
EPS32 = float(np.finfo(np.float32).eps)


def make_pairs(dtype: str, mb: int, pairs: int, seed: int = 0) -> list[Pair]:
    """Golden ~ N(0,1) with some exact zeros; target = golden plus small noise, both in dtype."""
    rng = np.random.default_rng(seed)
    itemsize = np.dtype(DTYPES[dtype]).itemsize
    n = mb * (1 << 20) // itemsize // pairs
    out: list[Pair] = []
    for _ in range(pairs):
        golden = rng.standard_normal(n, dtype=np.float32)
        golden[rng.integers(0, n, n // 100)] = 0.0  # golden zeros exercise the masked path
        target = golden + rng.standard_normal(n, dtype=np.float32) * np.float32(1e-3)
        out.append((target.astype(DTYPES[dtype]), golden.astype(DTYPES[dtype])))
    return out


def naive(x: npt.NDArray[np.generic], y: npt.NDArray[np.generic]) -> tuple[float, ...]:
    """One numpy call per metric on whole float64 arrays: the straightforward implementation."""
    a = x.astype(np.float32).astype(np.float64)
    b = y.astype(np.float32).astype(np.float64)
    cosine = np.sum(a * b) / (np.sqrt(np.sum(a * a)) * np.sqrt(np.sum(b * b)))
    max_abs = np.max(np.abs(a - b))
    nz = np.abs(b) > EPS64
    rel = np.where(nz, np.abs(a / np.where(nz, b, 1.0) - 1.0), 0.0)
    acc_rel = np.sum(rel)
    red = np.sqrt(np.sum((a - b) ** 2) / np.sum(b * b))
    p = np.maximum((a - a.min()) / (a.max() - a.min()), EPS32)
    q = np.maximum((b - b.min()) / (b.max() - b.min()), EPS32)
    p, q = p / p.sum(), q / q.sum()
    kl = np.sum(p * np.log(p / q))
    std = (np.mean(a), np.std(a), np.mean(b), np.std(b))
    mae = np.mean(np.abs(a - b))
    rmse = np.sqrt(np.mean((a - b) ** 2))
    values = (cosine, max_abs, acc_rel, red, kl, *std, mae, rmse, np.max(rel), np.mean(rel))
    return tuple(float(v) for v in values)


def best_seconds(run: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=256, help="MB per side (default 256)")
    ap.add_argument("--dtypes", nargs="+", default=["float16", "float32"], choices=sorted(DTYPES))
    ap.add_argument("--pairs", type=int, default=8, help="tensor pairs the data is split into")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=DEFAULT_CHUNK, help="chunk_elems for the kernel")
    ap.add_argument("--no-naive", action="store_true", help="skip the naive baseline")
    args = ap.parse_args()
    chunk = args.chunk

    print(f"{args.mb} MB per side in {args.pairs} pairs, chunk {chunk} elements, best of {args.repeat}")
    data = {dtype: make_pairs(dtype, args.mb, args.pairs) for dtype in args.dtypes}
    results: dict[str, list[tuple[str, float]]] = {dtype: [] for dtype in args.dtypes}
    with ThreadPoolExecutor(2) as pool:
        # Warm-up: every thread's scratch buffers, and the page cache of every input.
        for pairs in data.values():
            list(pool.map(lambda p: compare_arrays(*p, chunk_elems=chunk), pairs))
        for dtype, pairs in data.items():
            mb = sum(x.nbytes + y.nbytes for x, y in pairs) / 1e6

            def serial(pairs: list[Pair] = pairs) -> None:
                for x, y in pairs:
                    compare_arrays(x, y, chunk_elems=chunk)

            def pooled(pairs: list[Pair] = pairs) -> None:
                list(pool.map(lambda p: compare_arrays(*p, chunk_elems=chunk), pairs))

            results[dtype].append(("kernel, 1 thread", mb / best_seconds(serial, args.repeat)))
            results[dtype].append(("kernel, 2 threads", mb / best_seconds(pooled, args.repeat)))
    inputs_mb = sum(x.nbytes + y.nbytes for pairs in data.values() for x, y in pairs) / (1 << 20)
    print(f"peak RSS after the kernel runs: {peak_rss_mb():.0f} MB (inputs alone: {inputs_mb:.0f} MB)")
    if not args.no_naive:
        for dtype, pairs in data.items():
            mb = sum(x.nbytes + y.nbytes for x, y in pairs) / 1e6

            def baseline(pairs: list[Pair] = pairs) -> None:
                for x, y in pairs:
                    naive(x, y)

            results[dtype].append(("naive numpy", mb / best_seconds(baseline, 1)))
        print(f"peak RSS after the naive runs:  {peak_rss_mb():.0f} MB")
    for dtype, rows in results.items():
        for name, mbps in rows:
            print(f"  {dtype:9s} {name:18s} {mbps:8.0f} MB/s")


if __name__ == "__main__":
    main()
