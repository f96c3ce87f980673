"""``compare --mode torchair`` (real data) speed and memory, against straightforward numpy.

    python bench/torchair.py              # a 1 GB and a 0.25 GB GE/FX pair (both sides counted)
    python bench/torchair.py --gb 2 0.5   # other sizes

Writes a synthetic GE dump (2.0 dump files through dumpcmp's writer, with the GE graph dump that
links each op to its FX node) and the FX npy dump of the same ops, torch_npu ≥ 7.1.0 layout, in a
temporary directory removed afterwards. Each measurement runs in its own subprocess, so its peak
RSS is its own:

* dumpcmp: ``run_torchair`` in real-data mode: layout discovery, graph parse, matching, every
  column, the CSV (kernels loaded first: the steady state, as bench/compare.py's in-process row);
* cli: ``dumpcmp compare -m torchair`` as a user runs it, from interpreter start to exit (peak
  RSS of the CLI process);
* numpy: per GE file, ``read_dump`` + ``np.load`` of the FX file, then one numpy call per column
  on whole float64 arrays (cosine, Euclidean distance, max |x−y|, the relative errors with the
  eps rule, the two ratios).

Prints MB/s (GE + FX bytes over wall time), peak RSS and dumpcmp's speed over numpy's. Not a test.
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
ELEMENTS = 1 << 22  # 16 MB float32 per tensor and side
STAMP = 1735732800000000
REPO = Path(__file__).resolve().parent.parent


def build(root: Path, gigabytes: float) -> tuple[Path, Path, int]:
    """``root/ge`` and ``root/fx`` holding ``gigabytes`` of tensor data together; their byte count."""
    from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, TensorKind, write_dump
    from dumpcmp.proto.names import dump_file_name

    count = max(2, round(gigabytes * (1 << 30) / (ELEMENTS * 4 * 2)))
    ge = root / "ge" / "msprobe_ge_dump"
    ge_dir = ge / "worldsize1_global_rank0" / "20250101120000" / "0" / "graph_1_0" / "1" / "0"
    fx_dir = root / "fx" / "msprobe_fx_dump" / "worldsize1_global_rank0" / "graph_1_0" / "0"
    ge_dir.mkdir(parents=True)
    fx_dir.mkdir(parents=True)
    rng = np.random.default_rng(0)
    pool = rng.standard_normal(ELEMENTS + 4096, dtype=np.float32)
    ops = []
    for i in range(count):
        golden = pool[i * 7 : i * 7 + ELEMENTS]
        noisy = golden * (1 + np.float32(1e-4) * pool[i * 13 : i * 13 + ELEMENTS])  # every row PASSes
        name, fx = f"add_{i}", f"add_{i}-aten.add.Tensor"
        tensor = DumpTensor.from_array(TensorKind.OUTPUT, 0, noisy)
        dump = DumpFile("", Layout.V2, "2.0", STAMP + i, name, outputs=(tensor,))
        write_dump(ge_dir / dump_file_name("Add", name, i, 0, STAMP + i), dump)
        np.save(fx_dir / f"{fx}.OUTPUT.0.20240125031118{i:06d}.npy", golden)
        ops.append(
            f'  op {{ name: "{name}" type: "Add" output_desc {{ '
            f'attr {{ key: "_fx_tensor_name" value {{ s: "{fx}.OUTPUT.0" }} }} }} }}'
        )
    graph = "\n".join(['name: "m"', "graph {", '  name: "graph_1"', *ops, "}"]) + "\n"
    for kind in ("original", "optimized"):
        (ge / f"dynamo_{kind}_graph_1_rank_0_pid_1_ts_1.txt").write_text(graph)
    return root / "ge", root / "fx", count * ELEMENTS * 4 * 2


_DUMPCMP = """
import json, resource, sys, time
from pathlib import Path
import numpy as np
from dumpcmp.host.metrics.torchair import real_metrics
from dumpcmp.host.torchair.run import TorchairRequest, run_torchair
real_metrics(np.ones(8, np.float32), np.ones(8, np.float32))  # kernels loaded
ge, fx, out = (Path(a) for a in sys.argv[1:4])
start = time.perf_counter()
outcome = run_torchair(TorchairRequest(ge, fx, out, jobs=int(sys.argv[4])))
seconds = time.perf_counter() - start
assert all(r.result == "PASS" for r in outcome.rows), outcome.rows[:2]
own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "peak_rss_mb": own, "rows": len(outcome.rows)}))
"""

_NUMPY = """
import json, resource, sys, time
from pathlib import Path
import numpy as np
from dumpcmp.proto.codec import read_dump
ge, fx = Path(sys.argv[1]), Path(sys.argv[2])
fx_files = {p.name.split("-")[0]: p for p in fx.rglob("*.npy")}
start = time.perf_counter()
rows = []
for path in sorted(p for p in ge.rglob("Add.*")):
    op = path.name.split(".")[1]
    x = np.array(read_dump(path).outputs[0].array(), dtype=np.float64)
    y = np.load(fx_files[op]).astype(np.float64)
    eps = float(np.finfo(np.float32).eps)
    cosine = np.dot(x, y) / (np.linalg.norm(x) * np.linalg.norm(y))
    euc = np.linalg.norm(x - y)
    max_abs = np.max(np.abs(x - y))
    zero = y == 0
    rel = np.abs(np.where(zero, x + eps, x) - np.where(zero, y + eps, y)) / np.abs(np.where(zero, y + eps, y))
    max_rel = np.max(rel)
    one = np.count_nonzero(rel < 0.001) / rel.size
    five = np.count_nonzero(rel < 0.005) / rel.size
    rows.append((cosine, euc, max_abs, max_rel, one, five))
seconds = time.perf_counter() - start
own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "peak_rss_mb": own, "rows": len(rows)}))
"""


_CLI = """
import json, resource, subprocess, sys, time
start = time.perf_counter()
ge, fx, out, jobs = sys.argv[1:5]
command = ["compare", "-m", "torchair", "-tp", ge, "-gp", fx, "-o", out, "-j", jobs]
done = subprocess.run([sys.executable, "-m", "dumpcmp.cli", *command], capture_output=True, text=True)
seconds = time.perf_counter() - start
if done.returncode != 0:
    raise SystemExit(done.stdout + done.stderr)
child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "peak_rss_mb": child}))
"""


def _measure(script: str, *args: object) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", script, *(str(a) for a in args)],
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, nargs="+", default=[1.0, 0.25])
    parser.add_argument("-j", "--jobs", type=int, default=0, help="dumpcmp's workers (0: all cores)")
    args = parser.parse_args()
    print(f"{'GB':>5} {'tool':>8} {'seconds':>8} {'MB/s':>8} {'peak RSS MB':>12} {'x numpy':>8}")
    for gigabytes in args.gb:
        root = Path(tempfile.mkdtemp(prefix="dumpcmp-bench-torchair-"))
        try:
            ge, fx, size = build(root, gigabytes)
            subprocess.run(["cat", *map(str, ge.rglob("Add.*")), *map(str, fx.rglob("*.npy"))],
                           stdout=subprocess.DEVNULL, check=True)  # fmt: skip  # warm the page cache
            ours = _measure(_DUMPCMP, ge, fx, root / "out", args.jobs)
            # The user's whole run: interpreter start, imports, graph parse, result writing.
            cli = _measure(_CLI, ge, fx, root / "out-cli", args.jobs)
            base = _measure(_NUMPY, ge, fx)
            for tool, m in (("dumpcmp", ours), ("cli", cli), ("numpy", base)):
                speed = size / MB / m["seconds"]
                ratio = base["seconds"] / m["seconds"]
                print(f"{size / (1 << 30):5.2f} {tool:>8} {m['seconds']:8.2f} {speed:8.0f} "
                      f"{m['peak_rss_mb']:12.0f} {ratio:8.1f}")  # fmt: skip
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"total {time.perf_counter() - start:.0f} s")
