"""Dump-codec read throughput and memory, against plain ``numpy.fromfile`` on the same files.

    python bench/codec.py                 # 1 GB of dump files in a temporary directory
    python bench/codec.py --gb 4 --dir /data/bench --keep

Builds a directory of 2.0 dump files with ``write_dump`` (one fp16/fp32 input and output of
1–16 MB each per file), reads every file once to warm the page cache, then measures, each in its
own subprocess so that ``ru_maxrss`` belongs to that measurement alone:

* codec: ``read_dump`` on every file and a sum touching every payload byte;
* numpy: ``numpy.fromfile`` of every file and the same sum over all its bytes;
* codec again on the first quarter of the bytes, to show its peak RSS does not grow with the
  directory (each file's map is released before the next file is opened).

Not a test: it prints figures. The target is codec ≥ 0.8× the numpy baseline.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench.process_figures, from anywhere

from bench.process_figures import peak_rss_kb

MB = 1 << 20
_MARKER = "bench-manifest.json"


def _touch_all(buf: np.ndarray) -> int:
    """Read every byte: a wrapping uint64 sum over the 8-byte words plus the tail bytes."""
    whole = len(buf) // 8 * 8
    total = int(np.add.reduce(buf[:whole].view(np.uint64))) if whole else 0
    return total + int(buf[whole:].sum(dtype=np.uint64))


# --------------------------------------------------------------------------- data


def _build(directory: Path, gigabytes: float, seed: int = 0, *, small_files: int = 0) -> list[Path]:
    """Write dump files until ``gigabytes`` of payload exist; reuse a previous build if it fits.

    ``small_files``: instead, that many files of real-sized tensors, 0.1–3 MB a file, most of them
    small (a file is 0.1 MB × 30^(u²), u uniform in [0, 1): 0.43 MB on average), as the dump of a
    large model's step holds; ``gigabytes`` is then ignored.
    """
    from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, TensorKind, write_dump
    from dumpcmp.proto.names import dump_file_name

    marker = directory / _MARKER
    target = int(gigabytes * (1 << 30))
    if marker.is_file():
        built = json.loads(marker.read_text())
        fits = (
            len(built["files"]) == small_files
            if small_files
            else built.get("bytes", 0) >= target and not built.get("small")
        )
        if fits and all((directory / f).is_file() for f in built["files"]):
            return [directory / f for f in built["files"]]
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    pool = rng.standard_normal(8 * MB, dtype=np.float32)  # 32 MB of values, sliced per tensor
    files: list[str] = []
    written = 0
    index = 0
    while len(files) < small_files if small_files else written < target:
        tensors = []
        file_bytes = int(0.1 * MB * 30 ** (rng.random() ** 2)) if small_files else 0
        for kind in (TensorKind.INPUT, TensorKind.OUTPUT):
            dtype = np.dtype(np.float16 if rng.random() < 0.5 else np.float32)
            size = file_bytes // 2 if small_files else int(rng.integers(1, 17)) * MB  # 1–16 MB per tensor
            count = size // dtype.itemsize
            start = int(rng.integers(0, len(pool) - count + 1))
            values = pool[start : start + count].astype(dtype)
            tensors.append(DumpTensor.from_array(kind, 0, values))
        name = dump_file_name("BenchOp", f"bench/op_{index}", index, 1, 1_700_000_000_000_000 + index)
        dump = DumpFile("", Layout.V2, "2.0", 1_700_000_000_000_000 + index, f"bench/op_{index}",
                        inputs=(tensors[0],), outputs=(tensors[1],))  # fmt: skip
        path = write_dump(directory / name, dump)
        written += path.stat().st_size
        files.append(name)
        index += 1
    marker.write_text(json.dumps({"bytes": written, "files": files, "small": bool(small_files)}))
    return [directory / f for f in files]


def _warm(files: list[Path]) -> None:
    """Read every file once so both measurements start from the page cache."""
    buffer = bytearray(32 * MB)
    view = memoryview(buffer)
    for path in files:
        with path.open("rb", buffering=0) as handle:
            while handle.readinto(view):
                pass


# --------------------------------------------------------------------------- measurements (children)


def _measure_codec(files: list[Path]) -> int:
    from dumpcmp.proto.codec import iter_tensors, read_dump

    total = 0
    for path in files:
        dump = read_dump(path)
        for tensor in iter_tensors(dump):
            total += _touch_all(tensor.payload)
        del dump  # drops the last reference to the map: pages leave this process's RSS
    return total


def _measure_numpy(files: list[Path]) -> int:
    total = 0
    for path in files:
        data = np.fromfile(path, dtype=np.uint8)
        total += _touch_all(data)
        del data
    return total


def _child(kind: str, list_file: Path) -> None:
    files = [Path(line) for line in list_file.read_text().splitlines()]
    nbytes = sum(p.stat().st_size for p in files)
    import dumpcmp.proto._gen.dump_data_pb2  # imports are not part of the timing
    import dumpcmp.proto.codec  # noqa: F401

    rss_before = peak_rss_kb()
    start = time.perf_counter()
    checksum = (_measure_codec if kind == "codec" else _measure_numpy)(files)
    seconds = time.perf_counter() - start
    rss = peak_rss_kb()
    print(json.dumps({"bytes": nbytes, "seconds": seconds, "rss_kb": rss, "rss_start_kb": rss_before,
                      "checksum": checksum % (1 << 64)}))  # fmt: skip


def _run_child(kind: str, files: list[Path], workdir: Path) -> dict[str, float]:
    list_file = workdir / f"files-{kind}-{len(files)}.txt"
    list_file.write_text("\n".join(str(p) for p in files))
    result = subprocess.run(
        [sys.executable, __file__, "--child", kind, "--list", str(list_file)],
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, float] = json.loads(result.stdout.strip().splitlines()[-1])
    return figures


def _best(kind: str, files: list[Path], workdir: Path, repeat: int) -> dict[str, float]:
    """Fastest of ``repeat`` runs, with the largest peak RSS seen across them."""
    runs = [_run_child(kind, files, workdir) for _ in range(repeat)]
    best = min(runs, key=lambda r: r["seconds"])
    return {**best, "rss_kb": max(r["rss_kb"] for r in runs)}


def _line(label: str, figures: dict[str, float]) -> str:
    rate = figures["bytes"] / MB / figures["seconds"]
    return (
        f"{label:<34} {figures['bytes'] / MB:9.0f} MB  {figures['seconds']:7.3f} s  {rate:9.0f} MB/s  "
        f"peak RSS {figures['rss_kb'] / 1024:7.1f} MB (after imports {figures['rss_start_kb'] / 1024:.1f} MB)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gb", type=float, default=1.0, help="size of the dump directory (default 1.0)")
    parser.add_argument("--dir", type=Path, default=None, help="where to build it (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep a temporary directory afterwards")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the fastest counts")
    parser.add_argument("--child", choices=["codec", "numpy"], help=argparse.SUPPRESS)
    parser.add_argument("--list", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.list)
        return 0

    own_dir = args.dir is None
    directory = Path(tempfile.mkdtemp(prefix="dumpcmp-bench-")) if own_dir else args.dir
    try:
        started = time.perf_counter()
        files = _build(directory, args.gb)
        total = sum(p.stat().st_size for p in files)
        print(
            f"{len(files)} dump files, {total / MB:.0f} MB in {directory} "
            f"(ready in {time.perf_counter() - started:.1f} s)"
        )
        _warm(files)

        quarter: list[Path] = []
        for path in files:
            if sum(p.stat().st_size for p in quarter) >= total / 4:
                break
            quarter.append(path)

        with tempfile.TemporaryDirectory(prefix="dumpcmp-bench-lists-") as work:
            workdir = Path(work)
            numpy_full = _best("numpy", files, workdir, args.repeat)
            codec_full = _best("codec", files, workdir, args.repeat)
            codec_quarter = _best("codec", quarter, workdir, args.repeat)
        if numpy_full["checksum"] > 0 and codec_full["checksum"] == 0:
            print("warning: codec checksum is zero")  # payload bytes were not actually read

        print(_line("(b) numpy.fromfile + sum", numpy_full))
        print(_line("(a) read_dump + sum of payloads", codec_full))
        print(_line("(a) read_dump, first quarter", codec_quarter))
        ratio = (codec_full["bytes"] / codec_full["seconds"]) / (numpy_full["bytes"] / numpy_full["seconds"])
        verdict = "meets" if ratio >= 0.8 else "misses"
        print(f"codec / numpy throughput: {ratio:.2f}x ({verdict} the 0.8x target)")
        largest = max(p.stat().st_size for p in files) / MB
        quarter_rss, full_rss = codec_quarter["rss_kb"] / 1024, codec_full["rss_kb"] / 1024
        print(
            f"codec peak RSS: {quarter_rss:.1f} MB reading {codec_quarter['bytes'] / MB:.0f} MB, "
            f"{full_rss:.1f} MB reading {codec_full['bytes'] / MB:.0f} MB (largest file {largest:.0f} MB)"
        )
    finally:
        if own_dir and not args.keep:
            shutil.rmtree(directory, ignore_errors=True)
        elif own_dir:
            print(f"kept {directory}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
