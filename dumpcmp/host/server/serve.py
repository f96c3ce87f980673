"""Start and stop the host: a gRPC server over the session store in a data directory.

With a Dask cluster (``--cluster``) the host connects once at start, every session compares its
files on it, and stopping the host closes the client (and the ``local[:N]`` cluster it started).
Dask is imported only then.
"""

from __future__ import annotations

import errno
import fcntl
import ipaddress
import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import grpc

from dumpcmp.errors import DumpcmpError
from dumpcmp.host.server.auth import TlsFiles, TokenCheck, load_token, server_credentials
from dumpcmp.host.server.limits import (
    DEFAULT_KEEPALIVE_S,
    DEFAULT_LIMITS,
    DEFAULT_RECEIVE_WINDOW,
    StreamLimits,
)
from dumpcmp.host.server.service import DEFAULT_MAX_FILE_SIZE, DumpCompareService, add_to_server
from dumpcmp.host.server.worker import NewRunner
from dumpcmp.outputs import new_output_dir
from dumpcmp.proto.channel import SERVER_OPTIONS, check_address, split_address
from dumpcmp.proto.upload_wire import keep_freed_memory

# Threads for the calls that answer at once (sessions, close, results), beyond the ones uploads
# and followers may hold: those have limits of their own (StreamLimits), so these are always free
# for the short calls. Beyond all of them, gRPC answers RESOURCE_EXHAUSTED instead of queueing.
SHORT_CALLS = 16
LOCK_FILE = ".host.lock"
_STOP_GRACE_S = 5.0


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    address: str  # tcp://HOST:PORT of a Dask scheduler, or local[:N]
    timeout: float  # seconds to reach it and find a worker


@dataclass(frozen=True, slots=True)
class HostConfig:
    listen: str  # HOST:PORT; port 0 picks a free one
    data_dir: Path
    tls: TlsFiles | None = None
    token_file: Path | None = None
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    cluster: ClusterConfig | None = None  # None: each session compares in its own thread
    host_paths: tuple[Path, ...] = ()  # where clients may name files already on the host (--host-paths)
    limits: StreamLimits = DEFAULT_LIMITS
    keepalive_s: float = DEFAULT_KEEPALIVE_S
    receive_window: int = DEFAULT_RECEIVE_WINDOW  # bytes per stream (flow control); 0: gRPC's adaptive one


class HostServer:
    """A running host; ``port`` is the port it listens on."""

    def __init__(
        self, server: grpc.Server, service: DumpCompareService, port: int, lock: int, cluster: _Cluster
    ) -> None:
        self._server = server
        self.service = service
        self.port = port
        self._lock = lock
        self._cluster = cluster

    @property
    def dashboard_link(self) -> str | None:
        """The Dask dashboard of the cluster the sessions compare on, if it has one."""
        return self._cluster.dashboard_link

    def wait(self) -> None:
        self._server.wait_for_termination()

    def stop(self, grace: float = _STOP_GRACE_S) -> None:
        self._server.stop(grace).wait()
        self.service.stop()
        self._cluster.close()
        os.close(self._lock)


class _Cluster:
    """The connection to the host's cluster, if any: a runner for each comparison a session opens."""

    def __init__(self, config: ClusterConfig | None) -> None:
        self._stack = ExitStack()
        self.new_runner: NewRunner | None = None
        self.dashboard_link: str | None = None
        if config is None:
            return
        from dumpcmp.host.cluster import ClusterRunner, connect

        with ExitStack() as stack:  # closed again if anything below fails
            connected = stack.enter_context(connect(config.address, config.timeout))
            self.dashboard_link = connected.dashboard_link
            self._stack = stack.pop_all()
        # One runner per comparison: it keeps that comparison's plan on the cluster, and a
        # session's plan changes (new golden data) drop the old one with it.
        self.new_runner = lambda: ClusterRunner(connected.client)

    def close(self) -> None:
        self._stack.close()


def exposure_warning(config: HostConfig) -> str | None:
    """What anyone on the network could do to a host listening beyond this machine; None when
    it listens on loopback only, or uses TLS and checks who calls (a token or client certificates).

    Warned, not refused: a lab network may be trusted, and scripts that serve plaintext on one
    keep working; the warning says which option closes each gap."""
    host, _ = split_address(config.listen)
    if host == "localhost":
        return None
    try:
        if ipaddress.ip_address(host).is_loopback:
            return None
    except ValueError:
        pass  # a host name may resolve to anything
    checked = config.token_file is not None or (config.tls is not None and config.tls.client_ca is not None)
    open_to_all = "anyone who reaches it can open, upload to and delete sessions (give --token-file"
    if config.tls is None:
        unread = "anyone on the network can read the dumps (give --tls-cert/--tls-key)"
        return f"listening on {config.listen} without TLS: {unread}" + (
            "" if checked else f"; and without a token, {open_to_all})"
        )
    if checked:
        return None
    return (
        f"listening on {config.listen} without a token or client certificates: {open_to_all} or --client-ca)"
    )


def start(config: HostConfig) -> HostServer:
    """Start serving; every configuration problem is a DumpcmpError before anything listens."""
    check_address(config.listen, "--listen", any_port=True)
    if config.max_file_size <= 0:
        raise DumpcmpError(f"--max-file-size {config.max_file_size}: must be positive")
    config.limits.check()
    if config.keepalive_s <= 0:
        raise DumpcmpError(f"--keepalive {config.keepalive_s:g}: must be positive")
    host_paths = tuple(_host_path_dir(p) for p in config.host_paths)
    interceptors = [] if config.token_file is None else [TokenCheck(load_token(config.token_file))]
    credentials = None if config.tls is None else server_credentials(config.tls)
    cluster = _Cluster(config.cluster)  # unreachable: one error before anything is made
    try:
        return _serve(config, credentials, interceptors, cluster, host_paths)
    except BaseException:
        cluster.close()
        raise


def _host_path_dir(path: Path) -> Path:
    """A --host-paths directory, resolved as the paths checked against it are."""
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError):
        resolved = None
    if resolved is None or not resolved.is_dir():
        raise DumpcmpError(f"--host-paths {path}: not an existing directory")
    return resolved


def _serve(
    config: HostConfig, credentials: grpc.ServerCredentials | None, interceptors: list[TokenCheck],
    cluster: _Cluster, host_paths: tuple[Path, ...],
) -> HostServer:  # fmt: skip
    # Every path the host reports (result files, dump files in the summary) is absolute: a client
    # has no idea which directory the host was started in. Cluster workers, too, read the received
    # files themselves, from another working directory.
    data_dir = config.data_dir.absolute()
    # A host that does not start leaves no directory it made.
    with new_output_dir(data_dir, "--data", durable=True):
        return _serve_in(config, credentials, interceptors, cluster, data_dir, host_paths)


def _serve_in(
    config: HostConfig, credentials: grpc.ServerCredentials | None, interceptors: list[TokenCheck],
    cluster: _Cluster, data_dir: Path, host_paths: tuple[Path, ...],
) -> HostServer:  # fmt: skip
    lock = _lock_data_dir(data_dir)
    try:
        service = DumpCompareService(
            data_dir, config.max_file_size, cluster.new_runner, host_paths, config.limits
        )
    except BaseException:
        os.close(lock)
        raise
    threads = config.limits.uploads + config.limits.followers + SHORT_CALLS
    keepalive_ms = max(1, round(config.keepalive_s * 1000))
    keep_freed_memory()  # each received message reuses the last one's pages
    server = grpc.server(
        ThreadPoolExecutor(max_workers=threads, thread_name_prefix="dumpcmp-host"),
        interceptors=interceptors,
        options=(
            *SERVER_OPTIONS,
            # gRPC shares a port between servers by default (SO_REUSEPORT): a second host on the
            # same port would silently take half of the first one's uploads.
            ("grpc.so_reuseport", 0),
            ("grpc.keepalive_time_ms", keepalive_ms),
            ("grpc.keepalive_timeout_ms", keepalive_ms),
            # gRPC 1.5x waits for a ping's answer this long (not keepalive_timeout_ms alone).
            ("grpc.http2.ping_timeout_ms", keepalive_ms),
            ("grpc.http2.max_pings_without_data", 0),  # an agent between files sends nothing for long
            *receive_window_options(config.receive_window),
        ),
        maximum_concurrent_rpcs=threads,
    )
    add_to_server(service, server)
    try:
        if credentials is None:
            port = server.add_insecure_port(config.listen)
        else:
            port = server.add_secure_port(config.listen, credentials)
    except RuntimeError as exc:
        service.stop()
        os.close(lock)
        raise DumpcmpError(
            f"--listen {config.listen}: cannot listen ({_bind_problem(config.listen, exc)})"
        ) from None
    if port == 0:
        service.stop()
        os.close(lock)
        raise DumpcmpError(f"--listen {config.listen}: cannot listen (address in use or not local)")
    server.start()
    return HostServer(server, service, port, lock, cluster)


def _bind_problem(listen: str, failed: RuntimeError) -> str:
    """Why gRPC could not bind ``listen``, in words: it says only "Failed to bind" and points at
    its debug log, so a plain socket's bind to the same address names the cause."""
    import socket

    host, port = split_address(listen)
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((host, port))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return "the port is in use: another host serve, or another program, listens there"
        if exc.errno == errno.EADDRNOTAVAIL:
            return "not an address of this machine"
        return exc.strerror or str(exc)
    return str(failed).split(";")[0]


def receive_window_options(window: int) -> tuple[tuple[str, int], ...]:
    """The server options that fix each stream's receive window at ``window`` bytes (0: leave
    gRPC's window, grown by bandwidth probing)."""
    if window == 0:
        return ()
    # Without the probe, the stream's look-ahead is its window.
    return (("grpc.http2.bdp_probe", 0), ("grpc.http2.lookahead_bytes", window))


def _lock_data_dir(data_dir: Path) -> int:
    """One host per data directory: two would write one SQLite store and one file tree."""
    fd = os.open(data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise DumpcmpError(f"--data {data_dir}: another dumpcmp host is using this directory") from None
    return fd
