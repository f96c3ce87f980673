#!/usr/bin/env bash
# Issue 19's figures on a 16-core machine, in about 4 minutes (well under 8):
#   * `compare -j 16` on bench/compare.py's 8 GB tree (8,738 dump files): target >= 6 GB/s;
#   * the same compare on a 16-worker Dask cluster on that box (`--cluster tcp://...`, scheduler
#     and workers started here as a user starts them): target >= 0.8x the local pool's speed.
#
#   bash bench/scale16.sh [DIR]   # from the repository root; DIR (default /tmp/dumpcmp-8g) gets
#                                 # the tree (~8.5 GB of disk; reused by a second run)
#
# Prints, for each run: wall seconds, GB/s, and the CPU seconds of the compare process (with -j,
# its forked workers too; with --cluster the coordinator alone, the workers being the cluster's).
# Each is run twice after a warm-up. DUMPCMP_BENCH_GB and DUMPCMP_BENCH_WORKERS (default 8 and
# 16) try the script on a smaller box. Not a test.
set -euo pipefail
export DIR=${1:-/tmp/dumpcmp-8g}
PORT=${DUMPCMP_BENCH_PORT:-8786}
SIZE=${DUMPCMP_BENCH_GB:-8}
N=${DUMPCMP_BENCH_WORKERS:-16}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} OPENBLAS_NUM_THREADS=1  # packages the caller put on the path stay

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
SECONDS=0
python3 -c "
import sys; from pathlib import Path
sys.path.insert(0, 'bench')
from compare import build
info = build(Path('$DIR'), $SIZE)
print(f'tree: {info[\"count\"]} dump files, {info[\"bytes\"] / 2**30:.2f} GB of tensor data')
"
find "$DIR/npu" "$DIR/golden" -type f -print0 | xargs -0 -P "$N" -n 256 cat > /dev/null  # page cache
echo "tree built and read into the page cache in ${SECONDS} s"

# One compare with the given options: its wall seconds, GB/s, and CPU seconds.
MEASURE='
import json, os, resource, shutil, subprocess, sys, tempfile, time
root, (label, *options) = os.environ["DIR"], sys.argv[1:]
out = tempfile.mkdtemp()
entry = "import sys; from dumpcmp.launch import main; sys.argv[0] = \"dumpcmp\"; main()"
command = [sys.executable, "-c", entry, "compare", "-m", "offline_data", "-tp", f"{root}/npu",
           "-gp", f"{root}/golden", "-fr", f"{root}/rules.json", "-o", out, *options]
start = time.perf_counter()
done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
wall = time.perf_counter() - start
if done.returncode:
    sys.exit(f"{label}: exit {done.returncode}\n{done.stderr}")
used = resource.getrusage(resource.RUSAGE_CHILDREN)  # the compare, and its forked workers if any
shutil.rmtree(out)
gb = json.load(open(f"{root}/bench.json"))["bytes"] / 2**30
print(f"{label:>24} {wall:7.2f} s {gb / wall:6.2f} GB/s   CPU {used.ru_utime + used.ru_stime:7.2f} s")
'
run() { python3 -c "$MEASURE" "$@"; }

run "local warm-up" -j "$N"  # kernels compiled into the user cache on a first run
run "local -j $N" -j "$N"
run "local -j $N" -j "$N"

dask scheduler --host 127.0.0.1 --port "$PORT" --dashboard-address :0 > /tmp/dumpcmp-scheduler.log 2>&1 &
SCHEDULER=$!
dask worker "tcp://127.0.0.1:$PORT" --nworkers "$N" --nthreads 1 --no-dashboard \
    > /tmp/dumpcmp-workers.log 2>&1 &
WORKERS=$!
trap 'kill $WORKERS $SCHEDULER 2> /dev/null; wait 2> /dev/null' EXIT
python3 -c "
import distributed
with distributed.Client('tcp://127.0.0.1:$PORT', timeout=60) as client:
    client.wait_for_workers($N, timeout=120)
"
run "cluster warm-up" --cluster "tcp://127.0.0.1:$PORT"
run "cluster, $N workers" --cluster "tcp://127.0.0.1:$PORT"
run "cluster, $N workers" --cluster "tcp://127.0.0.1:$PORT"
echo "cluster / local: the ratio of the GB/s figures above (target >= 0.8)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); ${SECONDS} s in all"
