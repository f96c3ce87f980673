"""End-to-end ``compare -m offline_data`` speed and memory, against straightforward numpy.

    python bench/compare.py                         # 1 GB and 0.25 GB of tensor data (both sides)
    python bench/compare.py --gb 2 1 --dir /data/b  # other sizes, tree kept for another run

Builds one dump tree of fp16 NC1HWC0 outputs (a quarter fp32 NCHW), an ATC-style rule file mapping
each NPU op to its golden op and a golden directory of float32 npy files, at the largest size
asked; smaller sizes are the first ops of it (hard links). Warms the page cache, then for every
size measures, each in its own subprocess so peak RSS belongs to that measurement alone:

* cli: the real command line (``dumpcmp compare -m offline_data ...``) from process start to
  exit: imports, kernel loading, walk, match, layouts, metrics, CSV; what a user waits for. The
  package's bytecode is compiled first, as ``pip install`` does: a checkout run with
  ``PYTHONDONTWRITEBYTECODE=1`` (set on some machines) recompiles every changed module in every
  run, ~40 ms that no installed dumpcmp pays;
* in-process: ``run_compare`` with the kernels already loaded (the steady-state pipeline);
* numpy: the straightforward baseline the issue's targets are stated against, doing per file
  what msaccucmp does, single-threaded, timed inside its process (no start-up counted): read
  the 8-byte header length, ``ParseFromString`` the header with the generated protobuf class,
  check that header and payload sizes add up to the file size, read every payload into memory
  (``tensor.data = f.read(size)``), ``np.frombuffer`` the output, NC1HWC0 to NCHW with plain
  numpy (reshape, transpose, slice the C padding, spec/formats.md §6.1), ``np.load`` the golden
  npy fully (found in one listing of the golden directory), then ten numpy metric calls on
  whole float64 arrays;
* numpy+codec: the baseline of earlier sessions, kept so that ratios stay comparable: the same
  metrics, but reading dumps with dumpcmp's memory-mapped codec and layout code (and a glob of
  the golden directory per file). It was meant to be the straightforward baseline too; "numpy"
  replaced it because it leaned on our own reader. Their CPU times differ by 0-20% (the glob
  per file costs more as the golden directory grows): the metrics are ~85% of either, so
  msaccucmp's remaining distance from them (its 28 s for 1 GB, the issue says) is not in how it
  reads files.

Prints one table; "x numpy" and "x np+codec" are that baseline's time of that size over the
row's time, all measured in the same run (absolute speed swings with the machine's load, ratios
within one run much less), for wall time and for CPU time (all processes; on a machine others
load too, it says what the work costs while wall time says what was waited). ``--repeat N``
keeps each measurement's fastest run. Peak RSS is the largest single process (the CLI's or one
of its workers'). Not a test.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

MB = 1 << 20
SHAPE = (1, 64, 40, 64)  # 163,840 elements: 320 KB fp16 on the NPU side, 640 KB fp32 golden
STAMP = 1763700000000000
REPO = Path(__file__).resolve().parent.parent
CLI = "import sys; from dumpcmp.launch import main; sys.argv[0] = 'dumpcmp'; main()"


def build(root: Path, gigabytes: float, shape: tuple[int, ...] = SHAPE) -> dict[str, object]:
    """The tree at ``root`` (kept there and reused by a later call asking no more of it):
    ``gigabytes`` of tensor data (both sides) in outputs of ``shape`` (NCHW)."""
    from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, TensorKind, write_dump
    from dumpcmp.proto.dtypes import DataType, Format
    from dumpcmp.proto.layouts import to_device
    from dumpcmp.proto.names import dump_file_name, golden_file_name

    marker = root / "bench.json"
    if marker.is_file():
        info = json.loads(marker.read_text())
        if info["gigabytes"] >= gigabytes and tuple(info.get("shape", SHAPE)) == shape:
            return info
    shutil.rmtree(root, ignore_errors=True)
    rng = np.random.default_rng(0)
    pool = rng.standard_normal(8 * MB, dtype=np.float32)
    per_pair = int(np.prod(shape)) * (2 + 4)
    count = max(4, int(gigabytes * (1 << 30) / per_pair))
    dump_dir = root / "npu" / "20261122000000" / "0" / "bench" / "1" / "0"
    golden_dir = root / "golden"
    golden_dir.mkdir(parents=True)
    ops = []
    for i in range(count):
        name = f"layer{i}/conv/Conv2D"
        start = (i * 7919) % (pool.size - shape[1] * shape[2] * shape[3])
        golden = pool[start : start + int(np.prod(shape))].reshape(shape)
        noisy = golden + np.float32(1e-3) * golden[::-1].reshape(shape)
        if i % 4 == 3:  # a quarter stays fp32 NCHW, the rest is fp16 NC1HWC0
            device, fmt, dtype = noisy.astype(np.float32), Format.NCHW, DataType.DT_FLOAT
        else:
            device, fmt, dtype = (
                to_device(noisy.astype(np.float16), Format.NC1HWC0, Format.NCHW),
                Format.NC1HWC0,
                DataType.DT_FLOAT16,
            )
        tensor = DumpTensor.from_array(
            TensorKind.OUTPUT, 0, device, format=fmt, original_shape=shape, data_type=dtype
        )
        dump = DumpFile("", Layout.V2, "2.0", STAMP + i, name, outputs=(tensor,))
        write_dump(dump_dir / dump_file_name("Conv2D", name, i, 1, STAMP + i), dump)
        np.save(golden_dir / golden_file_name(name, 0, STAMP), golden)
        ops.append(_rule_op(i, name, fmt, device.shape, shape))
    rules = root / "rules.json"
    rules.write_text(json.dumps({"name": "bench", "graph": [{"name": "bench", "op": ops}]}))
    info = {"gigabytes": gigabytes, "count": count, "bytes": count * per_pair, "shape": list(shape)}
    marker.write_text(json.dumps(info))
    return info


def _rule_op(
    i: int, name: str, fmt: object, device_shape: tuple[int, ...], shape: tuple[int, ...]
) -> dict[str, object]:
    attrs = [
        {"key": "_datadump_origin_name", "value": {"s": name}},
        {"key": "_datadump_origin_output_index", "value": {"i": 0}},
        {"key": "origin_format", "value": {"s": "NCHW"}},
        {"key": "origin_shape", "value": {"list": {"i": list(shape), "val_type": "VT_LIST_INT"}}},
    ]
    desc = {
        "dtype": "DT_FLOAT16",
        "layout": getattr(fmt, "name", "ND"),
        "shape": {"dim": list(device_shape)},
        "attr": attrs,
    }
    return {"name": name, "type": "Conv2D", "id": i, "input": [], "output_desc": [desc]}


# --------------------------------------------------------------------------- trees


def subset(root: Path, count: int) -> Path:
    """A tree of the first ``count`` ops of ``root`` (dumps and their goldens), hard-linked."""
    target = root / f"subset-{count}"
    if (target / "rules.json").exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    dumps = sorted((root / "npu").rglob("Conv2D.*"), key=_dump_order)[:count]
    dump_dir = target / "npu" / "20261122000000" / "0" / "bench" / "1" / "0"
    dump_dir.mkdir(parents=True)
    (target / "golden").mkdir()
    for path in dumps:
        (dump_dir / path.name).hardlink_to(path)
        op = path.name.split(".")[1]
        for golden in (root / "golden").glob(f"{op}.0.*.npy"):
            (target / "golden" / golden.name).hardlink_to(golden)
    (target / "rules.json").hardlink_to(root / "rules.json")
    return target


def _dump_order(path: Path) -> int:
    return int(path.name.split(".")[2])  # the task id: execution order


# --------------------------------------------------------------------------- measurements


def measure_cli(root: Path, *options: str) -> dict[str, float]:
    """``dumpcmp compare`` (with ``options``) as a user runs it: a fresh interpreter, wall time to
    exit, CPU time of it and its workers."""
    import resource

    out = Path(tempfile.mkdtemp())
    args = [sys.executable, "-c", CLI, "compare", "-m", "offline_data", "-tp", str(root / "npu"),
            "-gp", str(root / "golden"), "-fr", str(root / "rules.json"), "-o", str(out),
            *options]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start = time.perf_counter()
    subprocess.run(args, env=env, cwd=out, check=True, capture_output=True)
    seconds = time.perf_counter() - start
    shutil.rmtree(out)
    # The largest process of the tree: the CLI or one of its workers (Linux folds the peaks of
    # reaped grandchildren into their parent's, and their CPU time too).
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = children.ru_utime + children.ru_stime
    return {"seconds": seconds, "cpu": cpu, "peak_rss_mb": children.ru_maxrss / 1024}


def measure_dumpcmp(root: Path) -> dict[str, float]:
    import resource

    from dumpcmp.host.offline import run_compare
    from dumpcmp.host.request import CompareRequest

    _warm_up()
    out = Path(tempfile.mkdtemp())
    cpu = _cpu_seconds()
    start = time.perf_counter()
    run_compare(CompareRequest(root / "npu", root / "golden", fusion_rule=root / "rules.json", out_dir=out))
    seconds = time.perf_counter() - start
    cpu = _cpu_seconds() - cpu
    shutil.rmtree(out)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"seconds": seconds, "cpu": cpu, "peak_rss_mb": max(own, workers)}


def _cpu_seconds() -> float:
    """CPU time of this process and its reaped workers: less swayed by other load than wall time."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _warm_up() -> None:
    """Load the metric kernels for the dtypes of the tree, once, outside the timed run."""
    from dumpcmp.host.metrics import compare_arrays

    for dtype in (np.float16, np.float32):
        compare_arrays(np.ones(64, dtype=dtype), np.ones(64, dtype=np.float32))


def _numpy_metrics(x: np.ndarray, y: np.ndarray) -> object:
    """The ten metrics the straightforward way: whole float64 arrays, one numpy call per metric."""
    x, y = x.astype(np.float64).ravel(), y.astype(np.float64).ravel()
    with np.errstate(all="ignore"):
        d = x - y
        nz = np.abs(y) > 2.220446e-16
        rel = np.where(nz, np.abs(x / np.where(nz, y, 1) - 1), 0)
        p = (x - x.min()) / (x.max() - x.min())
        q = (y - y.min()) / (y.max() - y.min())
        p = np.maximum(p, 1.1920929e-07)
        q = np.maximum(q, 1.1920929e-07)
        p, q = p / p.sum(), q / q.sum()
        return (
            np.dot(x, y) / (np.linalg.norm(x) * np.linalg.norm(y)),
            np.max(np.abs(d)),
            np.sum(rel),
            np.sqrt(np.sum(d * d) / np.sum(y * y)),
            np.sum(p * np.log(p / q)),
            (np.mean(x), np.std(x), np.mean(y), np.std(y)),
            np.mean(np.abs(d)),
            np.sqrt(np.mean(d * d)),
            np.max(rel),
            np.mean(rel),
        )


def _timed(work: Callable[[], None]) -> dict[str, float]:
    """Wall and CPU time of ``work`` in this process, and this process's peak RSS."""
    import resource

    cpu = _cpu_seconds()
    start = time.perf_counter()
    work()
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "cpu": _cpu_seconds() - cpu,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def measure_numpy(root: Path) -> dict[str, float]:
    """What msaccucmp does per file, the straightforward way: see the module doc."""
    from dumpcmp.proto._gen import dump_data_pb2 as dd

    dtypes = {dd.DT_FLOAT: np.float32, dd.DT_FLOAT16: np.float16}

    def logical(out: object) -> np.ndarray:
        """An output's payload as its original NCHW array (bench trees hold NCHW and NC1HWC0)."""
        array = np.frombuffer(out.data, dtype=dtypes[out.data_type]).reshape(tuple(out.shape.dim))
        if out.format == dd.FORMAT_NC1HWC0:  # (N, C1, H, W, C0) -> (N, C1*C0, H, W) -> drop C padding
            n, c1, h, w, c0 = array.shape
            array = array.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)[:, : out.original_shape.dim[1]]
        return array

    def work() -> None:
        golden = {}  # golden op name and output index -> npy, one listing as msaccucmp makes
        for entry in os.listdir(root / "golden"):
            golden[entry.rsplit(".", 2)[0]] = root / "golden" / entry
        for path in sorted((root / "npu").rglob("Conv2D.*")):
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                (header_length,) = struct.unpack("<Q", f.read(8))
                if header_length > size - 8:
                    raise ValueError(f"{path}: header length {header_length} beyond the file")
                dump = dd.DumpData()
                dump.ParseFromString(f.read(header_length))
                segments = [*dump.input, *dump.output]  # payloads follow in this order
                if 8 + header_length + sum(t.size for t in segments) != size:
                    raise ValueError(f"{path}: sizes do not add up to the file's")
                for tensor in segments:
                    tensor.data = f.read(tensor.size)
            x = logical(dump.output[0])
            y = np.load(golden[dump.op_name.replace("/", "_").replace(".", "_") + ".0"])
            _numpy_metrics(x, y)

    return _timed(work)


def measure_numpy_codec(root: Path) -> dict[str, float]:
    """The first baseline: our memory-mapped codec and layouts, then the same numpy metrics."""
    from dumpcmp.proto.codec import read_dump

    def work() -> None:
        for path in sorted((root / "npu").rglob("Conv2D.*")):
            name = read_dump(path).op_name.replace("/", "_")
            x = read_dump(path).outputs[0].logical()
            y = np.load(next((root / "golden").glob(f"{name}.0.*.npy")))
            _numpy_metrics(x, y)

    return _timed(work)


# In-process first: it loads the kernels (compiling them into the user cache on a first run), so
# the CLI is timed as every run after a user's first one.
MEASURES = {"in-process": measure_dumpcmp, "cli": measure_cli, "numpy": measure_numpy,
            "numpy+codec": measure_numpy_codec}  # fmt: skip
BASELINES = ("numpy", "numpy+codec")


def _run_child(kind: str, root: Path) -> dict[str, float]:
    args = [sys.executable, __file__, "--child", kind, "--dir", str(root)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if kind in BASELINES:  # no threads, as it says: a BLAS pool spinning for np.dot made it swing 2x
        env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    done = subprocess.run(args, capture_output=True, text=True, check=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gb", type=float, nargs="+", default=[1.0, 0.25], help="tensor data, both sides")
    parser.add_argument("--dir", type=Path, default=None, help="build (or reuse) the tree here and keep it")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each measurement; the fastest counts")
    parser.add_argument("--child", choices=sorted(MEASURES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(MEASURES[args.child](args.dir)))
        return
    root = args.dir or Path(tempfile.mkdtemp(prefix="dumpcmp-bench-"))
    try:
        info = build(root, max(args.gb))
        per_op = info["bytes"] / info["count"]
        for path in root.rglob("*"):  # warm the page cache so every measurement reads the same way
            if path.is_file() and "subset-" not in str(path):
                path.read_bytes()
        compileall.compile_dir(REPO / "dumpcmp", quiet=1)
        print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}, {os.cpu_count()} cores")
        print(f"{'tensor data':>12} {'ops':>5} {'run':>11} {'seconds':>8} {'MB/s':>6} {'x numpy':>8} "
              f"{'x np+codec':>10} {'CPU s':>7} {'x numpy':>8} {'x np+codec':>10} "
              f"{'peak RSS':>9}")  # fmt: skip
        for gigabytes in sorted(args.gb, reverse=True):
            count = min(info["count"], max(4, round(gigabytes * (1 << 30) / per_op)))
            tree = root if count == info["count"] else subset(root, count)
            runs = {kind: [_run_child(kind, tree) for _ in range(args.repeat)] for kind in MEASURES}
            results = {kind: min(done, key=lambda r: r["seconds"]) for kind, done in runs.items()}
            mb = count * per_op / MB
            for kind, result in results.items():
                seconds, cpu = result["seconds"], result["cpu"]
                wall = [results[base]["seconds"] / seconds for base in BASELINES]
                work = [results[base]["cpu"] / cpu for base in BASELINES]
                print(f"{mb:9.0f} MB {count:5d} {kind:>11} {seconds:8.2f} {mb / seconds:6.0f} "
                      f"{wall[0]:7.1f}x {wall[1]:9.1f}x {cpu:7.2f} {work[0]:7.1f}x {work[1]:9.1f}x "
                      f"{result['peak_rss_mb']:6.0f} MB")  # fmt: skip
        print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
