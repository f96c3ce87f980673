"""End-to-end ``compare -m offline_data`` throughput and memory, against straightforward numpy.

    python bench/compare.py                       # 2 GB of tensor data (both sides), ~2000 ops
    python bench/compare.py --gb 4 --dir /data/b  # bigger tree, kept for another run

Builds a dump tree of fp16 NC1HWC0 outputs (some fp32 NCHW), an ATC-style rule file mapping
each NPU op to its golden op, and a golden directory of float32 npy files; warms the page cache;
then, each in its own subprocess so peak RSS (VmHWM) belongs to that measurement alone:

* dumpcmp: ``run_compare`` end to end (walk, match, convert layouts, ten metrics, CSV);
* numpy: the straightforward version over the same pairs, one numpy call per metric on whole
  float64 arrays (no chunking, no threads);
* dumpcmp again on a quarter of the tree, to show peak RSS does not grow with the tree.

Figures count tensor bytes of both sides. Not a test: it prints figures.
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

MB = 1 << 20
SHAPE = (1, 64, 40, 64)  # 163,840 elements: 320 KB fp16 on the NPU side, 640 KB fp32 golden
STAMP = 1763700000000000


def build(root: Path, gigabytes: float) -> dict[str, object]:
    from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, TensorKind, write_dump
    from dumpcmp.proto.dtypes import DataType, Format
    from dumpcmp.proto.layouts import to_device
    from dumpcmp.proto.names import dump_file_name, golden_file_name

    marker = root / "bench.json"
    if marker.is_file():
        info = json.loads(marker.read_text())
        if info["gigabytes"] >= gigabytes:
            return info
    shutil.rmtree(root, ignore_errors=True)
    rng = np.random.default_rng(0)
    pool = rng.standard_normal(8 * MB, dtype=np.float32)
    per_pair = int(np.prod(SHAPE)) * (2 + 4)
    count = max(4, int(gigabytes * (1 << 30) / per_pair))
    dump_dir = root / "npu" / "20261122000000" / "0" / "bench" / "1" / "0"
    golden_dir = root / "golden"
    golden_dir.mkdir(parents=True)
    ops = []
    for i in range(count):
        name = f"layer{i}/conv/Conv2D"
        start = (i * 7919) % (pool.size - SHAPE[1] * SHAPE[2] * SHAPE[3])
        golden = pool[start : start + int(np.prod(SHAPE))].reshape(SHAPE)
        noisy = golden + np.float32(1e-3) * golden[::-1].reshape(SHAPE)
        if i % 4 == 3:  # a quarter stays fp32 NCHW, the rest is fp16 NC1HWC0
            device, fmt, dtype = noisy.astype(np.float32), Format.NCHW, DataType.DT_FLOAT
        else:
            device, fmt, dtype = (
                to_device(noisy.astype(np.float16), Format.NC1HWC0, Format.NCHW),
                Format.NC1HWC0,
                DataType.DT_FLOAT16,
            )
        tensor = DumpTensor.from_array(
            TensorKind.OUTPUT, 0, device, format=fmt, original_shape=SHAPE, data_type=dtype
        )
        dump = DumpFile("", Layout.V2, "2.0", STAMP + i, name, outputs=(tensor,))
        write_dump(dump_dir / dump_file_name("Conv2D", name, i, 1, STAMP + i), dump)
        np.save(golden_dir / golden_file_name(name, 0, STAMP), golden)
        ops.append(_rule_op(i, name, fmt, device.shape))
    rules = root / "rules.json"
    rules.write_text(json.dumps({"name": "bench", "graph": [{"name": "bench", "op": ops}]}))
    info = {"gigabytes": gigabytes, "count": count, "bytes": count * per_pair}
    marker.write_text(json.dumps(info))
    return info


def _rule_op(i: int, name: str, fmt: object, device_shape: tuple[int, ...]) -> dict[str, object]:
    attrs = [
        {"key": "_datadump_origin_name", "value": {"s": name}},
        {"key": "_datadump_origin_output_index", "value": {"i": 0}},
        {"key": "origin_format", "value": {"s": "NCHW"}},
        {"key": "origin_shape", "value": {"list": {"i": list(SHAPE), "val_type": "VT_LIST_INT"}}},
    ]
    desc = {
        "dtype": "DT_FLOAT16",
        "layout": getattr(fmt, "name", "ND"),
        "shape": {"dim": list(device_shape)},
        "attr": attrs,
    }
    return {"name": name, "type": "Conv2D", "id": i, "input": [], "output_desc": [desc]}


# --------------------------------------------------------------------------- measurements


def measure_dumpcmp(root: Path, limit: int | None) -> dict[str, float]:
    from dumpcmp.host.offline import CompareRequest, run_compare

    target = root / "npu"
    if limit is not None:  # a smaller tree: the first `limit` files, hard-linked
        target = root / f"subset-{limit}"
        if not target.exists():
            src = sorted((root / "npu").rglob("Conv2D.*"))[:limit]
            dst = target / "20261122000000" / "0" / "bench" / "1" / "0"
            dst.mkdir(parents=True)
            for path in src:
                (dst / path.name).hardlink_to(path)
    _warm_up()
    out = Path(tempfile.mkdtemp())
    start = time.perf_counter()
    outcome = run_compare(
        CompareRequest(target, root / "golden", fusion_rule=root / "rules.json", out_dir=out)
    )
    seconds = time.perf_counter() - start
    rows = sum(1 for r in outcome.rows if r.index is not None)
    shutil.rmtree(out)
    return {"seconds": seconds, "rows": rows}


def _warm_up() -> None:
    """Compile the metric kernels for the dtypes of the tree, once, outside the timed run."""
    from dumpcmp.host.metrics import compare_arrays

    for dtype in (np.float16, np.float32):
        compare_arrays(np.ones(64, dtype=dtype), np.ones(64, dtype=np.float32))


def measure_numpy(root: Path) -> dict[str, float]:
    """The straightforward version: whole arrays in float64, one numpy call per metric."""
    from dumpcmp.proto.codec import read_dump

    start = time.perf_counter()
    rows = 0
    for path in sorted((root / "npu").rglob("Conv2D.*")):
        name = read_dump(path).op_name.replace("/", "_")
        x = read_dump(path).outputs[0].logical().astype(np.float64).ravel()
        y = np.load(next((root / "golden").glob(f"{name}.0.*.npy"))).astype(np.float64).ravel()
        with np.errstate(all="ignore"):
            d = x - y
            nz = np.abs(y) > 2.220446e-16
            rel = np.where(nz, np.abs(x / np.where(nz, y, 1) - 1), 0)
            p = (x - x.min()) / (x.max() - x.min())
            q = (y - y.min()) / (y.max() - y.min())
            p = np.maximum(p, 1.1920929e-07)
            q = np.maximum(q, 1.1920929e-07)
            p, q = p / p.sum(), q / q.sum()
            _ = (
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
        rows += 1
    return {"seconds": time.perf_counter() - start, "rows": rows}


def _peak_rss_mb() -> float:
    """This process's peak plus its largest worker process's (compare may run workers)."""
    import resource

    own = float("nan")
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            own = int(line.split()[1]) / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own + children


def _child(kind: str, root: Path, limit: int | None) -> None:
    result = measure_numpy(root) if kind == "numpy" else measure_dumpcmp(root, limit)
    result["peak_rss_mb"] = _peak_rss_mb()
    print(json.dumps(result))


def _run_child(kind: str, root: Path, limit: int | None = None) -> dict[str, float]:
    args = [sys.executable, __file__, "--child", kind, "--dir", str(root)]
    if limit is not None:
        args += ["--limit", str(limit)]
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gb", type=float, default=2.0, help="tensor data, both sides counted")
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--child", choices=["dumpcmp", "numpy"], help=argparse.SUPPRESS)
    parser.add_argument("--limit", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.dir, args.limit)
        return
    root = args.dir or Path(tempfile.mkdtemp(prefix="dumpcmp-bench-"))
    try:
        info = build(root, args.gb)
        total_mb = info["bytes"] / MB
        for path in root.rglob("*"):  # warm the page cache so both sides read the same way
            if path.is_file():
                path.read_bytes()
        quarter = max(1, info["count"] // 4)
        full = _run_child("dumpcmp", root)
        part = _run_child("dumpcmp", root, quarter)
        naive = _run_child("numpy", root)
        print(f"{info['count']} ops, {total_mb:.0f} MB of tensor data (NPU fp16/fp32 + golden fp32)")
        for label, result, share in (
            ("dumpcmp compare", full, 1),
            ("dumpcmp (1/4)", part, 4),
            ("straight numpy", naive, 1),
        ):
            rate = total_mb / share / result["seconds"]
            rss = result["peak_rss_mb"]
            print(f"{label:16s} {result['seconds']:7.2f} s  {rate:8.0f} MB/s  peak RSS {rss:6.0f} MB")
        print(
            f"speed-up over straightforward numpy: {naive['seconds'] / full['seconds']:.1f}x (target >= 5x)"
        )
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
