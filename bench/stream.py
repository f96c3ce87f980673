"""Agent → host streaming throughput on loopback, next to a raw gRPC stream of the same bytes.

    python bench/stream.py                  # 1 GB of dump files in a temporary directory
    python bench/stream.py --gb 2 --dir /data/bench --keep

Builds dump files with ``bench/codec.py``'s builder, reads them once into the page cache, then
runs, each pair in the same run and each process on its own (so CPU and peak RSS are its own):

* raw: a client streaming every file in chunks over one gRPC client stream of plain bytes
  (no protobuf message, no checksum, no acknowledgement) into a server that only counts them,
  both with the agent's and host's malloc settings (``keep_freed_memory``): its CPU per GB, both
  ends together, is the floor of the agent's and host's;
* agent: ``dumpcmp.agent.uploader`` (per-file FileStart/data/FileEnd, SHA-256, per-file acks,
  journal) into the recording host of the agent tests: once verifying each file's SHA-256 only,
  once also writing every file to disk (``--host-data``) with a rename before acknowledging, as
  the host does; and once into ``dumpcmp host serve`` itself;
* agent CLI: ``dumpcmp agent run --watch DIR --until-idle 0 --keep-open`` end to end (imports,
  watcher, completeness checks), timed from its process's start, into a fresh recording host;
* disk: the same files written, fdatasynced and renamed where the host stores, with no network
  and no checksum: the rate no host that acknowledges only durable files can beat on this disk,
  and its CPU per GB (the least of its runs): its writes' (into the page cache), which with raw
  gRPC's is the floor of the agent's and host's CPU together, and fdatasync's (the writeback,
  which a host's syncfs leaves to the kernel's threads, counted in no process's figures);
* small files (``--files``, 1040 by default, 0: none): as many real-sized dump files (0.1–3 MB,
  0.43 MB on average) through the uploader and through the agent CLI into ``dumpcmp host serve``,
  for the per-file CPU of each side: its CPU less its per-byte cost (from the large files' run
  into ``dumpcmp host serve``), per file.

A server's CPU counts from when it listens (its imports are not part of it), a client's from
its first file (the CLI's: from its process's start, with the package's bytecode compiled first,
as ``pip install`` does). ``--only host`` runs just raw, ``dumpcmp
host serve`` and disk. The last line has the machine's load averages: the machine may be
shared, and ratios within one run are what compare.

Each measurement runs ``--repeat`` times, interleaved with the others; the fastest counts (CPU:
each side's least, peak RSS: the largest seen). Not a test: it prints MB/s, CPU seconds and
peak RSS of client and server, the agent/raw ratio (target ≥ 0.8× the slower of raw and disk)
and CPU per GB and per file of each side (targets: agent + host ≤ 2.5 s per GB; per file agent
≤ 0.3 ms, host ≤ 0.5 ms).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench.codec and tests.agent, from anywhere

from bench.process_figures import peak_rss_kb

_PROCESS_START = time.perf_counter()  # as near to the interpreter's start as this file gets
MB = 1 << 20
_RAW_METHOD = "/dumpcmp.bench.Raw/Push"
SESSION = "bench"


def _cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def _system_seconds() -> float:
    return os.times().system  # the kernel's share: sockets, page cache, file system


# --------------------------------------------------------------------------- servers (children)


def _serve(mode: str, data: Path) -> None:
    """Serve until stdin closes, then print this process's figures as JSON."""
    import grpc

    from dumpcmp.proto._gen import dumpcmp_v1_pb2_grpc as pb_grpc
    from dumpcmp.proto.upload_wire import keep_freed_memory
    from tests.agent.recording_host import RecordingHost

    if mode == "real":
        _serve_real_host(data)
        return
    received = [0]
    keep_freed_memory()  # as the host does: raw gRPC's cost, not malloc's
    options = [("grpc.max_receive_message_length", 8 * MB)]  # a 4 MiB chunk and its message
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), options=options)
    if mode == "raw":

        def push(requests: Iterator[bytes], context: Any) -> bytes:
            for chunk in requests:
                received[0] += len(chunk)
            return b""

        handler = grpc.method_handlers_generic_handler(
            "dumpcmp.bench.Raw",
            {"Push": grpc.stream_unary_rpc_method_handler(push, lambda b: b, lambda b: b)},
        )
        server.add_generic_rpc_handlers((handler,))
    else:
        host = RecordingHost(data, keep_data=mode == "host")
        pb_grpc.add_DumpCompareServicer_to_server(host, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    ready, ready_sys = _cpu_seconds(), _system_seconds()
    print(port, flush=True)
    sys.stdin.read()  # the parent closes stdin when the client is done
    server.stop(grace=None).wait(5.0)
    if mode != "raw":
        received[0] = sum(size for s in host.sessions.values() for _sha, size in s.files.values())
    figures = {
        "bytes": received[0], "cpu": _cpu_seconds() - ready, "sys": _system_seconds() - ready_sys,
        "rss_kb": peak_rss_kb(),
    }  # fmt: skip
    print(json.dumps(figures), flush=True)


def _serve_real_host(data: Path) -> None:
    """``dumpcmp host serve`` in this process (no golden data is sent, so it stores and waits),
    with the entry point's process settings, as a user runs it: without them the host's numpy
    import starts OpenBLAS's spinning threads, ~0.1 CPU-s a run that ``dumpcmp`` never pays."""
    from dumpcmp.launch import prepare_process

    prepare_process()
    from dumpcmp.host.server.serve import HostConfig, start

    host = start(HostConfig("127.0.0.1:0", data))
    ready, ready_sys = _cpu_seconds(), _system_seconds()
    print(host.port, flush=True)
    sys.stdin.read()
    host.stop()
    cpu, system = _cpu_seconds() - ready, _system_seconds() - ready_sys
    # Counted after the host's figures: walking its files was ~0.03 ms a file of "host" CPU.
    stored = sum(p.stat().st_size for p in (data / "sessions").rglob("*") if p.is_file())
    figures = {"bytes": stored, "cpu": cpu, "sys": system, "rss_kb": peak_rss_kb()}
    print(json.dumps(figures), flush=True)


# --------------------------------------------------------------------------- clients (children)


def _client(mode: str, target: str, files: list[Path], chunk: int, state: Path) -> None:
    import grpc

    from dumpcmp.agent.journal import Journal
    from dumpcmp.agent.uploader import Uploader, UploadSettings
    from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
    from dumpcmp.proto.channel import ChannelOptions, open_channel
    from dumpcmp.proto.upload_wire import keep_freed_memory

    total = sum(p.stat().st_size for p in files)
    cpu, system = _cpu_seconds(), _system_seconds()
    start = time.perf_counter()
    extra: dict[str, Any] = {}
    if mode == "cli":
        # As a user runs it (the entry point's process settings first: without them a numpy
        # import starts OpenBLAS's spinning thread per core); timed from this process's start
        # (imports, watcher, session close).
        from dumpcmp.launch import prepare_process

        prepare_process()
        from dumpcmp.cli import app

        args = ["agent", "run", "--host", target, "--session", SESSION, "--watch", str(files[0].parent),
                "--until-idle", "0", "--quiet-time", "0", "--keep-open", "--state", str(state)]  # fmt: skip
        try:
            app(args, standalone_mode=False)
        except SystemExit as exc:
            if exc.code:
                raise
        start, cpu, system = _PROCESS_START, 0.0, 0.0
    elif mode == "raw":

        def chunks() -> Iterator[bytes]:
            for path in files:
                with path.open("rb") as handle:
                    while data := handle.read(chunk):
                        yield data

        keep_freed_memory()  # as the agent does
        with grpc.insecure_channel(target) as channel:
            push = channel.stream_unary(
                _RAW_METHOD, request_serializer=lambda b: b, response_deserializer=lambda b: b
            )
            push(chunks())
    else:
        address = ChannelOptions(target)
        request = pb.OpenSessionRequest(session=SESSION, model="bench")
        uploader = Uploader(
            lambda: open_channel(address),
            request,
            Journal(state, SESSION),
            UploadSettings(chunk_size=chunk),
            target=target,
        )
        uploader.start()
        root = files[0].parent
        for path in files:
            uploader.add_file(pb.DUMP, path.relative_to(root).as_posix(), path)
        report = uploader.finish()
        if report.stored != len(files) or report.problems:
            raise SystemExit(f"agent: {report}")
        extra = {"peak_in_flight": uploader.stats().peak_in_flight}
    seconds = time.perf_counter() - start
    figures = {
        "bytes": total, "seconds": seconds, "cpu": _cpu_seconds() - cpu, "sys": _system_seconds() - system,
        "rss_kb": peak_rss_kb(),
    }  # fmt: skip
    print(json.dumps({**figures, **extra}))


# --------------------------------------------------------------------------- the parent


def _start_server(mode: str, data: Path) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", mode, "--data", str(data)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    port = server.stdout.readline().strip()
    if not port.isdigit():
        server.kill()
        raise SystemExit(f"{mode} server did not start")
    return server, f"127.0.0.1:{port}"


def _stop_server(server: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = server.communicate(input="", timeout=120)
    figures: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return figures


def _pair(
    mode: str, files: list[Path], chunk: int, work: Path, server_mode: str, spent: Path | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One client and its server; what the server stored is deleted, or moved into ``spent``."""
    data = work / f"host-{mode}"
    server, target = _start_server(server_mode, data)
    try:
        list_file = work / "files.txt"
        list_file.write_text("\n".join(str(p) for p in files))
        state = work / f"state-{mode}"
        result = subprocess.run(
            [sys.executable, __file__, "--client", mode, "--target", target, "--list", str(list_file),
             "--chunk", str(chunk), "--state", str(state)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        client = json.loads(result.stdout.strip().splitlines()[-1])
    finally:
        host = _stop_server(server)
        if spent is not None and data.exists():
            spent.mkdir(parents=True, exist_ok=True)
            data.rename(spent / f"{len(list(spent.iterdir()))}")
        shutil.rmtree(data, ignore_errors=True)
    return client, host


@dataclass(frozen=True)
class _Disk:
    """One run of the disk floor: its seconds, and this process's CPU seconds (user and system)
    writing the files into the page cache, and then writing them back (fdatasync)."""

    seconds: float
    write_user: float
    write_system: float
    sync: float


def _disk(files: list[Path], chunk: int, where: Path) -> _Disk:
    """Store the files as the host must (write, fdatasync, rename), with no network; each file
    read before its clock starts (the raw client's figures count reading it)."""
    where.mkdir(parents=True, exist_ok=True)
    seconds = user = system = sync = 0.0
    for number, path in enumerate(files):
        data = memoryview(path.read_bytes())
        part = where / f"{number}.part"
        before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            for offset in range(0, len(data), chunk):
                os.write(fd, data[offset : offset + chunk])
            written = resource.getrusage(resource.RUSAGE_SELF)  # finer than os.times' clock ticks
            os.fdatasync(fd)
        finally:
            os.close(fd)
        os.replace(part, where / f"{number}.bin")
        after = resource.getrusage(resource.RUSAGE_SELF)
        seconds += time.perf_counter() - start
        user += written.ru_utime - before.ru_utime
        system += written.ru_stime - before.ru_stime
        sync += after.ru_utime + after.ru_stime - written.ru_utime - written.ru_stime
    shutil.rmtree(where)
    return _Disk(seconds, user, system, sync)


def _fastest(runs: list[tuple[dict[str, Any], dict[str, Any]]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The fastest run, with each side's least CPU of all of them and the largest peak RSS seen.

    A busy machine adds CPU to a run (caches, locks, a file system others churn), never takes
    any away: the least is the nearest to the code's own cost. The fastest run's CPU had the
    host's per-file figure, a difference of two runs' figures, at 0.02-0.42 ms in runs of one
    code (loaded 2-core VM)."""
    client, host = min(runs, key=lambda run: run[0]["seconds"])
    sides = []
    for side, fastest in enumerate((client, host)):
        least = min((run[side] for run in runs), key=lambda figures: figures["cpu"])
        rss_kb = max(run[side]["rss_kb"] for run in runs)
        sides.append({**fastest, "cpu": least["cpu"], "sys": least["sys"], "rss_kb": rss_kb})
    return sides[0], sides[1]


def _line(label: str, client: dict[str, Any], host: dict[str, Any]) -> str:
    rate = client["bytes"] / MB / client["seconds"]
    return (
        f"{label:<10} {client['bytes'] / MB:7.0f} MB {client['seconds']:7.2f} s {rate:7.0f} MB/s | "
        f"client CPU {client['cpu']:6.2f} s RSS {client['rss_kb'] / 1024:6.1f} MB | "
        f"server CPU {host['cpu']:6.2f} s RSS {host['rss_kb'] / 1024:6.1f} MB"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gb", type=float, default=1.0, help="size of the dump directory (default 1.0)")
    parser.add_argument("--dir", type=Path, default=None, help="where to build it (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep a temporary directory afterwards")
    parser.add_argument(
        "--host-data", type=Path, default=None, help="where the host stores (default: temp dir)"
    )
    parser.add_argument("--chunk", type=int, default=4 * MB, help="bytes per data message (default 4 MiB)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the fastest counts")
    parser.add_argument("--only", choices=["host"], help="host: only raw, dumpcmp host serve and disk")
    parser.add_argument(
        "--files", type=int, default=1040, help="real-sized files for the per-file case (default 1040)"
    )
    parser.add_argument("--serve", choices=["raw", "host", "hash", "real"], help=argparse.SUPPRESS)
    parser.add_argument("--client", choices=["raw", "agent", "cli"], help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--target", help=argparse.SUPPRESS)
    parser.add_argument("--list", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--state", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        _serve(args.serve, args.data)
        return 0
    if args.client:
        files = [Path(line) for line in args.list.read_text().splitlines()]
        _client(args.client, args.target, files, args.chunk, args.state)
        return 0

    own_dir = args.dir is None
    directory = Path(tempfile.mkdtemp(prefix="dumpcmp-stream-")) if own_dir else args.dir
    small_dir = directory.with_name(f"{directory.name}-small")  # beside: the CLI watches one of them
    work = Path(tempfile.mkdtemp(prefix="dumpcmp-stream-work-"))
    host_dir = Path(tempfile.mkdtemp(prefix="dumpcmp-stream-host-", dir=args.host_data))
    from bench.codec import _build, _warm  # numpy: the parent's only (see bench.process_figures)

    try:
        started = time.perf_counter()
        files = sorted(_build(directory, args.gb))
        small = sorted(_build(small_dir, 0, small_files=args.files)) if args.files else []
        total = sum(p.stat().st_size for p in files)
        _warm(files + small)
        # As pip install does: the agent CLI's run is timed from its start, and with
        # PYTHONDONTWRITEBYTECODE (set on some machines) it compiled every module every run, ~0.2 s
        compileall.compile_dir(Path(__file__).resolve().parents[1] / "dumpcmp", quiet=1)
        ready = time.perf_counter() - started
        print(f"{len(files)} dump files, {total / MB:.0f} MB in {directory} (ready in {ready:.1f} s)")
        if small:
            small_mb = sum(p.stat().st_size for p in small) / MB
            print(f"{len(small)} real-sized dump files, {small_mb:.0f} MB in {small_dir}")
        _measure(args, files, small, work, host_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(host_dir, ignore_errors=True)
        if own_dir and not args.keep:
            shutil.rmtree(directory, ignore_errors=True)
            shutil.rmtree(small_dir, ignore_errors=True)
    return 0


Run = tuple[dict[str, Any], dict[str, Any]]


def _measure(
    args: argparse.Namespace, files: list[Path], small: list[Path], work: Path, host_dir: Path
) -> None:
    total = sum(p.stat().st_size for p in files)
    # name: (client mode, server mode, where the host stores, what the line says)
    plan = {
        "raw": ("raw", "raw", work, ""),
        "verify": ("agent", "hash", work, "  host verifies the checksum, stores nothing"),
        "agent": ("agent", "host", host_dir, f"  host verifies and stores in {host_dir}"),
        "cli": ("cli", "host", host_dir, "  the same, timed from the agent's start (watcher)"),
        "real": ("agent", "real", host_dir, "  into `dumpcmp host serve` (stores, no golden)"),
    }  # fmt: skip
    if args.only == "host":
        plan = {name: plan[name] for name in ("raw", "real")}
    # the per-file case: the uploader, then the CLI, into `dumpcmp host serve`
    small_plan = {
        "small": ("agent", "real", host_dir, "  real-sized files into `dumpcmp host serve`"),
        "small cli": ("cli", "real", host_dir, "  the same, the agent CLI from its start"),
    }
    if not small or args.only == "host":
        small_plan = {}
    runs: dict[str, list[Run]] = {name: [] for name in (*plan, *small_plan)}
    disk: list[_Disk] = []
    for _ in range(args.repeat):  # interleaved, so a busy moment of the machine hits all alike
        for name, (client_mode, server_mode, where, _note) in plan.items():
            runs[name].append(_pair(client_mode, files, args.chunk, where, server_mode))
        for name, (client_mode, server_mode, where, _note) in small_plan.items():
            # Their files deleted only at the end: on ext4 without a journal (this VM's), creating
            # a file looks at every inode of its group freed in the last minute or more, and the
            # next runs' host paid for this one's thousands of deleted files (~0.3 ms a file
            # created after 2,000 deleted, 0.02 ms with none).
            spent = where / "spent"
            runs[name].append(_pair(client_mode, small, args.chunk, where, server_mode, spent))
        disk.append(_disk(files, args.chunk, host_dir / "disk"))
    best = {name: _fastest(found) for name, found in runs.items()}
    for name, (client_mode, _server, _where, note) in (plan | small_plan).items():
        label = "raw" if name == "raw" else "agent CLI" if client_mode == "cli" else "agent"
        print(_line(label, *best[name]) + note)
    fastest_disk = min(run.seconds for run in disk)
    disk_rate = total / fastest_disk
    # The least CPU of the runs: the floor of what storing costs. Writing the files into the page
    # cache only: fdatasync writes them back in this process, the host's syncfs leaves that to
    # the kernel's flusher threads, whose CPU no process's figures count.
    cheapest = min(disk, key=lambda run: run.write_user + run.write_system)
    total_gb = total / (1 << 30)
    disk_gb = (cheapest.write_user + cheapest.write_system) / total_gb
    print(
        f"{'disk':<10} {total / MB:7.0f} MB {fastest_disk:7.2f} s {disk_rate / MB:7.0f} MB/s | "
        f"CPU per GB: writes {disk_gb:.2f} s (system {cheapest.write_system / total_gb:.2f}), "
        f"fdatasync {min(run.sync for run in disk) / total_gb:.2f} s | "
        "write, fdatasync and rename of each file where the host stores, no network: its floor"
    )
    rate = {name: r[0]["bytes"] / r[0]["seconds"] for name, r in best.items()}
    floor = min(rate["raw"], disk_rate)
    ratios = {"verify": "a verifying host", "agent": "a storing host", "real": "dumpcmp host"}
    shown = ", ".join(f"{rate[n] / floor:.2f}x with {what}" for n, what in ratios.items() if n in rate)
    print(f"agent/min(raw, disk) {shown} (target >= 0.8); chunks of {args.chunk // 1024} KiB")
    client, host = best["real"]
    gb = client["bytes"] / (1 << 30)
    agent_gb, host_gb = client["cpu"] / gb, host["cpu"] / gb
    raw_client, raw_server = best["raw"]
    raw_size = raw_client["bytes"] / (1 << 30)
    raw_gb = (raw_client["cpu"] + raw_server["cpu"]) / raw_size
    raw_sys = (raw_client["sys"] + raw_server["sys"]) / raw_size
    print(
        f"CPU per GB into dumpcmp host: agent {agent_gb:.2f} s (system {client['sys'] / gb:.2f}), "
        f"host {host_gb:.2f} s (system {host['sys'] / gb:.2f}), together {agent_gb + host_gb:.2f} s "
        f"(target <= 2.5); raw gRPC alone {raw_gb:.2f} s (system {raw_sys:.2f}); with the disk's "
        f"writes {raw_gb + disk_gb:.2f} s (the floor), agent and host beyond it "
        f"{agent_gb + host_gb - raw_gb - disk_gb:.2f} s"
    )
    if small_plan:
        (client, host), (cli, _cli_host) = best["small"], best["small cli"]
        count, size_gb = len(small), client["bytes"] / (1 << 30)
        agent_ms = (client["cpu"] - agent_gb * size_gb) / count * 1000
        host_ms = (host["cpu"] - host_gb * size_gb) / count * 1000
        print(
            f"CPU per file beyond the per-byte cost ({count} files): agent {agent_ms:.2f} ms "
            f"(target <= 0.3), host {host_ms:.2f} ms (target <= 0.5); all of it: agent "
            f"{client['cpu'] / count * 1000:.2f} ms, host {host['cpu'] / count * 1000:.2f} ms, "
            f"agent CLI {cli['cpu'] / count * 1000:.2f} ms; "
            f"CLI/min(raw, disk) {rate['small cli'] / floor:.2f} (target >= 0.6)"
        )
    in_flight = best["real"][0]["peak_in_flight"]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"agent peak files in flight {in_flight}; load average {load}")


if __name__ == "__main__":
    sys.exit(main())
