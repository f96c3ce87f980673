"""``dumpcmp host``: serve sessions to agents, and look at them from anywhere.

``host serve`` runs the comparator that agents stream dump files to; ``host sessions``,
``host results``, ``host close`` and ``host delete`` ask a running host, with the same TLS and
token options as the agent. ``host migrate`` converts the data directory of an earlier version.
"""

from __future__ import annotations

import csv
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import grpc
import typer

from dumpcmp.commands._cluster import DEFAULT_TIMEOUT as DEFAULT_CLUSTER_TIMEOUT
from dumpcmp.commands._cluster import INSTALL_HINT
from dumpcmp.commands._flags import StrictCommand
from dumpcmp.commands._output import console, counted, error_console, fail, user_errors
from dumpcmp.commands._remote import (
    DEFAULT_TIMEOUT,
    ClientCert,
    ClientKey,
    HostAddress,
    Timeout,
    TlsCa,
    TokenFile,
    channel_options,
    host_command,
)
from dumpcmp.commands._report_flags import Graph, warn_of_strangers
from dumpcmp.errors import DumpcmpError, OutputError, TransferError
from dumpcmp.host.server.limits import (
    DEFAULT_KEEPALIVE_S,
    DEFAULT_LIMITS,
    DEFAULT_RECEIVE_WINDOW,
    StreamLimits,
)
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from dumpcmp.proto._gen.dumpcmp_v1_pb2_grpc import DumpCompareStub
from dumpcmp.proto.channel import ChannelOptions, call_failed, open_channel
from dumpcmp.proto.session_names import CLOSED_METADATA, STREAMING_METADATA

if TYPE_CHECKING:
    from dumpcmp.host.report.graph import OpGraph
    from dumpcmp.host.report.table import ShardKey
    from dumpcmp.host.rows import ResultRow
    from dumpcmp.host.stats_compare import StatsResult

__all__ = ["app"]

DEFAULT_LISTEN = "127.0.0.1:50051"
SessionName = Annotated[str, typer.Argument(help="The session's name.", show_default=False)]
_APPEAR_POLL_S = 0.5  # how often --follow asks whether the session it waits for exists yet
_FOLLOW_RECONNECT_S = 300.0  # how long --follow waits for a host that went away (as agent --give-up)
_FOLLOW_RETRY_S = 0.5

HOST_CLUSTER_HELP = (
    "Run every session's comparisons on a Dask cluster: its scheduler's address (tcp://HOST:8786), "
    f"or local[:N] for N worker processes on this machine. {INSTALL_HINT}; "
    "workers must see --data (and golden host paths) at the same place."
)

app = typer.Typer(
    help="Serve sessions to agents; list sessions and fetch their results.", no_args_is_help=True
)


@app.command("serve", cls=StrictCommand)
def serve_command(
    data: Annotated[Path, typer.Option("--data", help="Directory of the session store and received files.")],
    listen: Annotated[
        str, typer.Option("--listen", help="HOST:PORT to listen on (port 0: any free port).")
    ] = (DEFAULT_LISTEN),
    tls_cert: Annotated[
        Path | None, typer.Option("--tls-cert", help="Server certificate (PEM): serve TLS.")
    ] = None,
    tls_key: Annotated[Path | None, typer.Option("--tls-key", help="The key (PEM) of --tls-cert.")] = None,
    client_ca: Annotated[
        Path | None,
        typer.Option("--client-ca", help="Require client certificates signed by this CA (mutual TLS)."),
    ] = None,
    token_file: TokenFile = None,
    max_file_size: Annotated[
        int, typer.Option("--max-file-size", min=1, help="Largest file accepted, in bytes.")
    ] = 64 * 1024**3,
    host_paths: Annotated[
        list[Path] | None,
        typer.Option(
            "--host-paths",
            metavar="DIR",
            help="Agents may name golden data or a fusion rule already on this machine "
            "(--golden-on-host, --fusion-rule-on-host) only under this directory; repeatable. Default: none.",
        ),
    ] = None,
    cluster: Annotated[str | None, typer.Option("--cluster", help=HOST_CLUSTER_HELP)] = None,
    cluster_timeout: Annotated[
        float,
        typer.Option(
            "--cluster-timeout", min=0.1, help="Seconds to reach the --cluster scheduler and a worker."
        ),
    ] = DEFAULT_CLUSTER_TIMEOUT,
    max_uploads: Annotated[
        int,
        typer.Option("--max-uploads", min=1, help="Agent upload streams served at once; more are refused."),
    ] = DEFAULT_LIMITS.uploads,
    max_followers: Annotated[
        int,
        typer.Option(
            "--max-followers", min=1, help="host results --follow clients served at once; more are refused."
        ),
    ] = DEFAULT_LIMITS.followers,
    upload_idle_timeout: Annotated[
        float,
        typer.Option(
            "--upload-idle-timeout",
            min=0.001,
            help="Seconds an upload may send nothing in the middle of a file before the host ends it.",
        ),
    ] = DEFAULT_LIMITS.upload_idle_s,
    keepalive: Annotated[
        float,
        typer.Option(
            "--keepalive",
            min=0.001,
            help="Seconds between pings of a connected client; one that does not answer within as long "
            "again is gone, and its uploads end.",
        ),
    ] = DEFAULT_KEEPALIVE_S,
    receive_window: Annotated[
        int,
        typer.Option(
            "--receive-window",
            min=0,
            metavar="BYTES",
            help="Bytes an upload may have on the way before the host asks for more (HTTP/2 flow "
            "control; a stream carries at most about this much per round trip). 0: grown to the link "
            "by gRPC, for agents far away, at more memory and CPU per byte.",
        ),
    ] = DEFAULT_RECEIVE_WINDOW,
) -> None:
    """Receive dump files from agents, compare them as they land, serve the results."""
    from rich.markup import escape

    from dumpcmp.host.server.auth import TlsFiles
    from dumpcmp.host.server.serve import ClusterConfig, HostConfig, exposure_warning, start

    with user_errors():
        if (tls_cert is None) != (tls_key is None):
            raise DumpcmpError("--tls-cert and --tls-key go together")
        if client_ca is not None and tls_cert is None:
            raise DumpcmpError("--client-ca needs --tls-cert and --tls-key (mutual TLS is TLS)")
        tls = None if tls_cert is None or tls_key is None else TlsFiles(tls_cert, tls_key, client_ca)
        on_cluster = None if cluster is None else ClusterConfig(cluster, cluster_timeout)
        limits = StreamLimits(max_uploads, max_followers, upload_idle_timeout)
        config = HostConfig(
            listen,
            data,
            tls,
            token_file,
            max_file_size,
            on_cluster,
            tuple(host_paths or ()),
            limits,
            keepalive,
            receive_window,
        )
        server = start(config)
    out = console()
    try:  # from here on, a signal stops the server: it is running
        if server.dashboard_link:
            error_console().print(f"Dask dashboard: {server.dashboard_link}", markup=False)
        if (exposed := exposure_warning(config)) is not None:
            error_console().print(f"[yellow]warning[/yellow]: {escape(exposed)}", soft_wrap=True)
        for problem in server.service.start_problems:
            error_console().print(f"[yellow]warning[/yellow]: {escape(problem)}", soft_wrap=True)
        host = listen.rpartition(":")[0]
        out.print(f"dumpcmp host listening on {host}:{server.port}, data in {data}", markup=False)
        server.wait()
    except KeyboardInterrupt:
        pass  # Ctrl-C or SIGTERM: the normal way to stop a server
    finally:
        # A second signal (a wrapper such as timeout forwarding the first one) must not cut the
        # stop short: it left threads behind that interpreter exit then waited for forever.
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)
        server.stop()
    out.print("host stopped", markup=False)
    # Everything is stored (the store commits, files are renamed only once synced). What may be
    # left is a gRPC pool thread stuck sending an ack on the stopped server: gRPC never wakes it,
    # and interpreter exit would wait for it forever (seen with an agent mid-stream).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


@contextmanager
def _stub(options: ChannelOptions) -> Iterator[DumpCompareStub]:
    """A stub for the host; every failed call is one line (exit 1), Ctrl-C one line (exit 130)."""
    with user_errors():
        channel = open_channel(options)
        try:
            yield DumpCompareStub(channel)
        except grpc.RpcError as exc:
            raise call_failed(exc, options.address, options) from None
        finally:
            channel.close()


@app.command("sessions", cls=StrictCommand)
def sessions_command(
    host: HostAddress,
    tls_ca: TlsCa = None,
    client_cert: ClientCert = None,
    client_key: ClientKey = None,
    token_file: TokenFile = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
) -> None:
    """List the host's sessions: state, rows, model, uploaders."""
    options = channel_options(host, tls_ca, client_cert, client_key, token_file, timeout)
    with _stub(options) as stub:
        reply = stub.ListSessions(pb.ListSessionsRequest(), timeout=timeout)
    out = console()
    if not reply.sessions:
        out.print(f"no sessions on {host}", markup=False)
    for info in reply.sessions:
        state = "closed" if info.state == pb.SessionInfo.CLOSED else "closing" if info.closing else "open"
        agents = _uploaders_text(info.uploaders) or "-"
        replaced = f"  replaced runs: {', '.join(info.replaced_runs)}" if info.replaced_runs else ""
        model = info.model or "-"
        streaming = f"  {counted(info.streams, 'agent')} streaming" if info.streams else ""
        rows = (
            _IN_FILES_ONLY.partition(":")[0] if _rows_in_files_only(info, info.rows) else f"{info.rows} rows"
        )
        out.print(
            f"{info.session}  {state}  {rows}  model {model}  from {agents}{replaced}{streaming}",
            markup=False,
        )


def _uploaders_text(uploaders: Iterable[pb.Uploader]) -> str:
    """Each HOST:DEVICE that streamed into a session once; several agents of one (other state
    directories) told apart by the start of their ids (STATE/agent-id): it read "vm:0, vm:0"."""
    agents: dict[str, set[str]] = {}
    for u in uploaders:
        agents.setdefault(f"{u.host}:{u.device}", set()).add(u.agent_id[:_AGENT_ID_SHOWN])
    return ", ".join(
        where if len(ids) == 1 else f"{where} (agents {', '.join(sorted(ids))})"
        for where, ids in agents.items()
    )


_AGENT_ID_SHOWN = 8  # hex digits: tells a session's few agents apart, and the user finds it in agent-id


@app.command("close", cls=StrictCommand)
def close_command(
    session: SessionName,
    host: HostAddress,
    tls_ca: TlsCa = None,
    client_cert: ClientCert = None,
    client_key: ClientKey = None,
    token_file: TokenFile = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout", min=0.1, help="Seconds to wait for the host to finish the comparison and answer."
        ),
    ] = 600.0,
) -> None:
    """Close a session an agent left open (it gave up, or died): compare what it holds, write the
    result files. Its results are final; files sent afterwards are refused."""
    options = channel_options(host, tls_ca, client_cert, client_key, token_file, timeout)
    with _stub(options) as stub:
        before = stub.GetSession(pb.GetSessionRequest(session=session), timeout=timeout)
        if before.state == pb.SessionInfo.CLOSED:
            raise TransferError(f"session {session} is closed already")
        if before.streams:
            raise TransferError(
                f"session {session}: {counted(before.streams, 'agent')} streaming into it right now; "
                "an agent closes its session itself when it is done (stop it first to close it here)"
            )
        try:
            info = stub.CloseSession(pb.CloseSessionRequest(session=session), timeout=timeout)
        except grpc.RpcError as exc:
            raise _close_refused(exc, before, options) from None
    out = console()
    out.print(status_line(info), markup=False)
    for line in info.summary.splitlines():
        out.print(line, markup=False)
    if info.result_files:
        out.print(
            f"result files on {host}: {info.data_dir}/results ({', '.join(info.result_files)})", markup=False
        )
    if info.nothing_compared:
        fail(info.nothing_compared)


def _close_refused(exc: grpc.RpcError, before: pb.SessionInfo, options: ChannelOptions) -> TransferError:
    """The one line of a refused close, with the way out: a session that cannot close stays open
    until it is mended or deleted (one stalled upload left nothing but an empty session)."""
    said = call_failed(exc, options.address, options)
    trailing = dict(exc.trailing_metadata() or ()) if isinstance(exc, grpc.Call) else {}
    refused = isinstance(exc, grpc.Call) and exc.code() is grpc.StatusCode.FAILED_PRECONDITION
    if not refused or STREAMING_METADATA in trailing or CLOSED_METADATA in trailing:
        return said  # streamed into, or closed meanwhile: the host's line says what to do
    delete = host_command(["delete", before.session, "--host", options.address, "--yes"], options)
    if not before.dump_files:
        return TransferError(f"{said}; nothing to compare, so delete it: {delete}")
    return TransferError(
        f"{said}; it stays open until that is mended (then close it again), or delete it: {delete}"
    )


@app.command("delete", cls=StrictCommand)
def delete_command(
    session: SessionName,
    host: HostAddress,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
    tls_ca: TlsCa = None,
    client_cert: ClientCert = None,
    client_key: ClientKey = None,
    token_file: TokenFile = None,
    timeout: Timeout = 60.0,  # a session's comparison stops, its files go
) -> None:
    """Delete a session: its rows, received files and result files, from the host's store and
    disk. Refused while an agent streams into it."""
    options = channel_options(host, tls_ca, client_cert, client_key, token_file, timeout)
    with _stub(options) as stub:
        info = stub.GetSession(pb.GetSessionRequest(session=session), timeout=timeout)
        what = (
            f"session {session} on {host} ({'closed' if info.state == pb.SessionInfo.CLOSED else 'open'}, "
            f"{counted(len(info.files), 'file')}, {counted(info.rows, 'row')}, {info.data_dir})"
        )
        if not yes:
            if not sys.stdin.isatty():
                raise DumpcmpError(f"deleting {what} cannot be undone: add --yes")
            if not typer.confirm(f"delete {what}?", default=False):
                raise typer.Exit(1)
        reply = stub.DeleteSession(pb.DeleteSessionRequest(session=session), timeout=timeout)
    console().print(
        f"deleted session {reply.session}: {counted(reply.files, 'file')} and {counted(reply.rows, 'row')} "
        f"dropped, {reply.data_dir} removed",
        markup=False,
    )


@app.command("migrate", cls=StrictCommand)
def migrate_command(
    data: Annotated[Path, typer.Option("--data", help="The data directory of host serve to convert.")],
) -> None:
    """Convert the session store of an earlier dumpcmp in place (host serve refuses it until then):
    its rows become typed columns, beside a table of statistics rows; sessions, files, runs and
    result files stay as they are. Run it with the host stopped."""
    with user_errors():
        from dumpcmp.host.server.migrate import migrate_store
        from dumpcmp.host.server.serve import _lock_data_dir  # one process per data directory

        if not data.is_dir():
            raise DumpcmpError(
                f"--data {data}: {'not a directory' if data.exists() else 'no such directory'}"
            )
        lock = _lock_data_dir(data)
        try:
            done = migrate_store(data)
        finally:
            os.close(lock)
    sessions, rows = counted(done.sessions, "session"), counted(done.rows, "row")
    if done.converted:
        console().print(f"migrated {data} from schema {done.from_version}: {sessions}, {rows}", markup=False)
    else:
        console().print(f"{data} is current already: {sessions}, {rows}", markup=False)


@app.command("results", cls=StrictCommand)
def results_command(
    session: SessionName,
    host: HostAddress,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow",
            help="Wait for new rows until the session closes; a session no agent opened yet is waited for.",
        ),
    ] = False,
    wait: Annotated[
        float | None,
        typer.Option(
            "--wait",
            min=0,
            metavar="SECONDS",
            help="With --follow: how long to wait for the session to appear. Default: until Ctrl-C.",
        ),
    ] = None,
    # Text, not Path: Path("cdir/") forgets the separator that says a directory was meant.
    csv_text: Annotated[
        str | None,
        typer.Option(
            "--csv",
            metavar="FILE",
            help="Write the result table here: a closed session's result file itself, else its rows so far, "
            "led by Device/Model/Step columns when they are of several steps (--out: a file per step); "
            "statistics tables (a hunt's first pass) beside it, as FILE.statistics.csv.",
        ),
    ] = None,
    xlsx_text: Annotated[
        str | None, typer.Option("--xlsx", metavar="FILE", help="Write the result table here (.xlsx).")
    ] = None,
    html_text: Annotated[
        str | None,
        typer.Option(
            "--html", metavar="FILE", help="Write the HTML report of the result table here (.html)."
        ),
    ] = None,
    graph: Graph = None,
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Download every result file of the closed session here, as compare writes them "
            "(one per device/model/step).",
        ),
    ] = None,
    tls_ca: TlsCa = None,
    client_cert: ClientCert = None,
    client_key: ClientKey = None,
    token_file: TokenFile = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
) -> None:
    """A session's results: its summary, and the table as CSV or xlsx; --follow waits for the close
    (and for the session to appear, when no agent opened it yet)."""
    from dumpcmp.outputs import kept_if_written, new_file, prepare_output_dir

    options = channel_options(host, tls_ca, client_cert, client_key, token_file, timeout)
    out = console()
    with user_errors():
        if wait is not None and not follow:
            raise DumpcmpError("--wait goes with --follow (how long to wait for the session to appear)")
        if graph is not None and html_text is None:
            raise DumpcmpError("--graph goes with --html (the graph is drawn in the HTML report)")
        csv_out = _file_target(csv_text, "--csv")
        xlsx_out = _file_target(xlsx_text, "--xlsx")
        html_out = _file_target(html_text, "--html")
    # An --out directory this command makes goes again when nothing was written into it.
    with kept_if_written(out_dir) if out_dir is not None else nullcontext():
        with user_errors():
            if out_dir is not None:
                prepare_output_dir(out_dir, "--out")
        with _stub(options) as stub:
            # Ctrl-C while it waits or follows: no file is written yet, and the session is the host's.
            if follow:
                with user_errors(f"stopped waiting for session {session} to appear; nothing was written"):
                    info = _await_session(stub, session, options, wait)
            else:
                info = stub.GetSession(pb.GetSessionRequest(session=session), timeout=timeout)
            if follow and info.state != pb.SessionInfo.CLOSED:
                with user_errors(
                    f"stopped following session {session}; the session is unchanged (still open on the "
                    "host), and nothing was written"
                ):
                    _follow(stub, session, options.address)
                info = stub.GetSession(pb.GetSessionRequest(session=session), timeout=timeout)
            streamed = _rows(stub, session, timeout)
            written: list[Path] = []
            if csv_out is not None:
                written += _write_csv_files(stub, info, csv_out, streamed, timeout)
            if xlsx_out is not None:
                written.append(
                    new_file(xlsx_out, lambda temp: _write_xlsx(stub, info, temp, streamed, timeout))
                )
            if html_out is not None:
                with user_errors():
                    html = new_file(
                        html_out, lambda temp: _write_html(stub, info, temp, graph, streamed, timeout)
                    )
                written.append(html)
            written += _download(stub, info, out_dir, options) if out_dir is not None else []
    out.print(status_line(info, streamed.count), markup=False)
    if info.replaced_runs and info.state != pb.SessionInfo.CLOSED:  # a closed session's summary says it
        out.print(f"replaced runs (their files dropped): {', '.join(info.replaced_runs)}", markup=False)
    for line in info.summary.splitlines():
        out.print(line, markup=False)
    for target in written:
        out.print(f"wrote {target}", markup=False)
    if info.nothing_compared:
        fail(info.nothing_compared)  # as compare: the files are written, and exit 1


# The formats ``host results`` writes, by the suffixes that name them: another one's is refused.
_TABLE_SUFFIXES = {".csv": ".csv", ".xlsx": ".xlsx", ".html": ".html", ".htm": ".html"}


def _file_target(text: str | None, option: str) -> Path | None:
    """The file ``option`` names, in a directory that exists and takes files; a directory, or a
    path ending in a separator, is one line, as are a missing directory (never made here) and a
    device or FIFO."""
    from dumpcmp.outputs import prepare_output_dir

    if text is None:
        return None
    if not text:
        raise OutputError(f"{option}: the file path is empty")
    path = Path(text)
    suffix, named = "." + option.removeprefix("--"), _TABLE_SUFFIXES.get(path.suffix.lower())
    if named is not None and named != suffix:  # an xlsx named x.csv fools whoever opens it
        raise OutputError(f"{option} {text}: a {suffix} file's name, not a {path.suffix} one")
    if text.rpartition(os.sep)[2] in ("", ".", "..") or path.is_dir():
        raise OutputError(f"{option} {text}: a file path is needed, not a directory")
    if path.exists() and not path.is_file():  # /dev/null: the next free name would land in /dev
        raise OutputError(f"{option} {text}: not a regular file; give the path of a file to write")
    if not path.parent.is_dir():
        raise OutputError(f"{option} {text}: cannot write: directory {path.parent} does not exist")
    prepare_output_dir(path.parent, option)  # it exists: only proves it takes files
    return path


def _download(
    stub: DumpCompareStub, info: pb.SessionInfo, out_dir: Path, options: ChannelOptions
) -> list[Path]:
    """Each of the closed session's result files, byte for byte, under its own name (or the next
    free one: a file already in --out is never replaced)."""

    if info.state != pb.SessionInfo.CLOSED:
        # --follow waits for an agent's close: with no agent streaming, it would wait for ever.
        close = host_command(["close", info.session, "--host", options.address], options)
        how = "use --follow" if info.streams else f"no agent is streaming into it: {close}"
        raise TransferError(
            f"session {info.session} is open: its result files are written when it closes ({how})"
        )
    timeout = options.timeout
    written = []
    for name in info.result_files:
        # a name from the wire never leaves --out
        written.append(_copy_result(stub, info, name, out_dir / Path(name).name, timeout))
    return written


def _result_chunks(stub: DumpCompareStub, info: pb.SessionInfo, name: str, timeout: float) -> Iterator[bytes]:
    """The bytes of one of the session's result files, as they come."""
    for chunk in stub.FetchResult(pb.FetchResultRequest(session=info.session, name=name), timeout=timeout):
        yield chunk.data


def _await_session(
    stub: DumpCompareStub, session: str, options: ChannelOptions, wait: float | None
) -> pb.SessionInfo:
    """The session, once an agent has opened it: a user may start following before the agent
    connects. Up to ``wait`` seconds, or until Ctrl-C; every other failure is one line at once."""
    deadline = None if wait is None else time.monotonic() + wait
    told = False
    while True:
        try:
            return stub.GetSession(pb.GetSessionRequest(session=session), timeout=options.timeout)  # type: ignore[no-any-return]
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.NOT_FOUND:
                raise
        if deadline is not None and time.monotonic() >= deadline:
            raise TransferError(
                f"session {session} did not appear on {options.address} within {wait:g} s "
                f"(is an agent running with --session {session}?)"
            )
        if not told:
            until = "Ctrl-C to stop" if wait is None else f"for up to {wait:g} s"
            error_console().print(
                f"waiting for session {session} to appear on {options.address} (an agent opens it; {until})",
                markup=False,
                soft_wrap=True,
            )
            told = True
        time.sleep(
            _APPEAR_POLL_S if deadline is None else max(0.0, min(_APPEAR_POLL_S, deadline - time.monotonic()))
        )


def _follow(stub: DumpCompareStub, session: str, address: str) -> None:
    """Say how the session stands whenever that changes, until it closes (no deadline: a session
    may run for hours). A host that goes away is waited for, as an agent waits for it: a
    restarted host resumes its open sessions."""
    lost_since: float | None = None
    while True:
        try:
            for batch in stub.WatchRows(pb.WatchRowsRequest(session=session, follow=True)):
                lost_since = None
                if batch.session_closed:
                    return  # the results printed next begin with the closed session's line
                if batch.HasField("progress"):
                    console().print(status_line(batch.progress), markup=False)
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.UNAVAILABLE:
                raise
            if lost_since is None:
                lost_since = time.monotonic()
                error_console().print(
                    f"the host at {address} went away; waiting up to {_FOLLOW_RECONNECT_S:g} s for it to "
                    "come back (Ctrl-C to stop)",
                    markup=False,
                    soft_wrap=True,
                )
            elif time.monotonic() - lost_since >= _FOLLOW_RECONNECT_S:
                raise TransferError(
                    f"the host at {address} went away and did not come back within "
                    f"{_FOLLOW_RECONNECT_S:g} s; run the same command again once it is back"
                ) from None
            time.sleep(_FOLLOW_RETRY_S)


def status_line(info: pb.SessionInfo, rows: int | None = None) -> str:
    """One line on how far the session is: files received and compared, rows, agents streaming."""
    rows = info.rows if rows is None else rows
    if _rows_in_files_only(info, rows):
        return f"session {info.session}: closed, {_IN_FILES_ONLY}"
    if info.state == pb.SessionInfo.CLOSED:
        compared = counted(info.compared_files, "dump file")
        return f"session {info.session}: closed, {compared} compared, {counted(rows, 'row')}"
    pending = info.dump_files - info.compared_files
    why = f" ({info.waiting})" if pending and info.waiting else ""
    streaming = f"{counted(info.streams, 'agent')} streaming" if info.streams else "no agent streaming"
    return (
        f"session {info.session}: open (results so far), {counted(info.dump_files, 'dump file')} received, "
        f"{info.compared_files} compared, {pending} not compared yet{why}, {counted(rows, 'row')} so far, "
        f"{streaming}"
    )


_IN_FILES_ONLY = "statistics rows in its result files only: use --out DIR to download them"


def _rows_in_files_only(info: pb.SessionInfo, rows: int) -> bool:
    """A closed session whose statistics rows the store does not hold: one migrated from a
    schema-4 store (which kept no statistics rows) has them in its result files alone, and "0
    rows" beside its summary's count of compared tensors would read as nothing compared."""
    return not rows and not info.compared_files and bool(_statistics_results(info))


def _rows(stub: DumpCompareStub, session: str, timeout: float) -> StreamedRows:
    """The session's current rows (a recomputed file's rows replace its old ones on the host)."""
    from dumpcmp.host.server.row_messages import result_row, stats_row
    from dumpcmp.host.sinks.table import TableShape

    columns: list[str] = []
    cells: list[list[str]] = []
    shards: list[ShardKey] = []
    files: list[str] = []
    typed: list[ResultRow] = []
    stats: list[StatsResult] = []
    stats_shards: list[ShardKey] = []
    stats_files: list[str] = []
    request = pb.WatchRowsRequest(session=session, with_statistics=True)
    for batch in stub.WatchRows(request, timeout=timeout):
        columns = list(batch.columns) or columns
        for row in batch.rows:
            if row.HasField("stats"):
                stats.append(stats_row(row.stats))
                stats_shards.append(_shard_key(row.shard))
                stats_files.append(row.dump_file)
                continue
            cells.append(list(row.cells))
            shards.append(_shard_key(row.shard))
            files.append(row.dump_file)
            if row.HasField("row"):
                typed.append(result_row(row.row))
    # No rows yet: the header rows streamed live would have (every optional column).
    header = columns or TableShape.every_column().header()
    stats_order, stats = _as_result_files_hold(stats_shards, stats_files, stats)
    statistics = StreamedStatistics(stats, [stats_shards[at] for at in stats_order])
    if len(typed) != len(cells):
        return StreamedRows(header, cells, shards, None, statistics)
    order, typed = _as_result_files_hold(shards, files, typed)
    return StreamedRows(header, [cells[at] for at in order], [shards[at] for at in order], typed, statistics)


Numbered = TypeVar("Numbered", "ResultRow", "StatsResult")


def _as_result_files_hold(
    shards: list[ShardKey], files: list[str], typed: list[Numbered]
) -> tuple[list[int], list[Numbered]]:
    """WatchRows sends rows as their files finish: put them as the result files will hold them,
    shard by shard, each in execution order (``core.file_order``), Index the file's place in its
    shard. The positions of the rows in that order, and the rows."""
    from dumpcmp.host.core import numbered
    from dumpcmp.host.offline_table import directories_order

    order = sorted(range(len(typed)), key=lambda at: (directories_order(shards[at]), _file_order(files[at])))
    places: dict[tuple[ShardKey, str], int] = {}
    per_shard: dict[ShardKey, int] = {}
    rows = []
    for at in order:
        key = (shards[at], files[at])
        if key not in places:
            places[key] = per_shard.get(shards[at], 0)
            per_shard[shards[at]] = places[key] + 1
        rows.append(numbered(typed[at], places[key]) if typed[at].index is not None else typed[at])
    return order, rows


def _file_order(dump_file: str) -> tuple[int, int, int, str]:
    """A dump file's place in its shard's execution (dump timestamp, task id), as ``core.file_order``;
    a statistics file's too (its name is a dump file's and ``.csv``)."""
    from dumpcmp.errors import FormatError
    from dumpcmp.proto.names import STATS_SUFFIX, parse_dump_name

    try:
        name = parse_dump_name(Path(dump_file).name.removesuffix(STATS_SUFFIX))
    except FormatError:
        return (1, 0, 0, dump_file)
    return (0, name.timestamp, name.task_id, dump_file)


_ALWAYS_SHOWN = frozenset({"Device", "Model", "Step"})  # a result file's name: {device}_{model}_{step}


def _shard_key(shard: pb.Shard) -> ShardKey:
    """A row's shard as the directories name it (``table.SHARD_COLUMNS``); all "" from a host that
    does not say (the session is then one shard)."""
    return (shard.time, shard.device, shard.model, shard.model_id, shard.step)


@dataclass(frozen=True, slots=True)
class StreamedStatistics:
    """A session's statistics rows (``dump_data: stats`` files), in result file order, with their
    shards; none from a host too old to send them."""

    rows: list[StatsResult] = field(default_factory=list)
    shards: list[ShardKey] = field(default_factory=list)

    def table(self) -> tuple[list[str], list[list[str]]]:
        """The statistics table as a session's statistics result file holds it, led by the shard
        columns when the rows are of several shards."""
        from dumpcmp.host.stats_compare import STATS_RESULT_COLUMNS, cells
        from dumpcmp.host.verdict import Thresholds

        threshold = Thresholds().statistics
        rows = [cells(r, threshold) for r in self.rows]
        return _led_by_shards(list(STATS_RESULT_COLUMNS), rows, self.shards)

    def by_shard(self) -> dict[ShardKey, tuple[list[str], list[list[str]]]]:
        """Each shard's statistics table, in the order the shards first appear."""
        split: dict[ShardKey, list[int]] = {}
        for at, shard in enumerate(self.shards):
            split.setdefault(shard, []).append(at)
        return {
            shard: StreamedStatistics([self.rows[at] for at in rows], [shard] * len(rows)).table()
            for shard, rows in split.items()
        }


@dataclass(frozen=True, slots=True)
class StreamedRows:
    """A session's rows as WatchRows sends them: cells under every optional column, each row's
    shard, and the rows as data (None from a host too old to send them); its statistics rows."""

    columns: list[str]
    rows: list[list[str]]
    shards: list[ShardKey]
    typed: list[ResultRow] | None
    statistics: StreamedStatistics = field(default_factory=StreamedStatistics)

    @property
    def count(self) -> int:
        """Every row, of tensors and of statistics."""
        return len(self.rows) + len(self.statistics.rows)

    def by_shard(self) -> dict[ShardKey, tuple[list[str], list[list[str]]]]:
        """Each shard's table, in the order the shards first appear."""
        split: dict[ShardKey, list[int]] = {}
        for at, shard in enumerate(self.shards):
            split.setdefault(shard, []).append(at)
        return {shard: self._cells(rows) for shard, rows in split.items()}

    def table(self) -> tuple[list[str], list[list[str]]]:
        """The rows as one table, led by shard columns when they are of several shards, so that
        the same tensor of two steps stays two told-apart rows. A shard column that is the same
        for every row is left out, unless it is one of those naming a result file."""
        columns, rows = self._cells(range(len(self.rows)))
        return _led_by_shards(columns, rows, self.shards)

    def _cells(self, positions: Iterable[int]) -> tuple[list[str], list[list[str]]]:
        """The table of the rows at ``positions``, formatted here from their values: an optional
        column only where some row has a value in it (no column of NaN alone). From an older
        host, and for no rows at all, the cells and columns as they came."""
        from dumpcmp.host.sinks.table import TableShape

        positions = list(positions)
        if self.typed is None or not positions:
            return self.columns, [self.rows[at] for at in positions]
        rows = [self.typed[at] for at in positions]
        shape = TableShape.of(
            rows,
            op_sequence=any(r.op_sequence is not None for r in rows),
            overflow=any(r.overflow is not None for r in rows),
        )
        return shape.header(), [shape.cells(r) for r in rows]


def _led_by_shards(
    columns: list[str], rows: list[list[str]], shards: list[ShardKey]
) -> tuple[list[str], list[list[str]]]:
    """``rows`` led by shard columns when they are of several shards, so that the same tensor of
    two steps stays two told-apart rows. A shard column that is the same for every row is left
    out, unless it is one of those naming a result file."""
    from dumpcmp.host.report.table import SHARD_COLUMNS

    if len(set(shards)) < 2:
        return columns, rows
    shown = [
        i
        for i, name in enumerate(SHARD_COLUMNS)
        if name in _ALWAYS_SHOWN or len({key[i] for key in shards}) > 1
    ]
    return (
        [*(SHARD_COLUMNS[i] for i in shown), *columns],
        [[*(key[i] for i in shown), *row] for key, row in zip(shards, rows, strict=True)],
    )


def _single_result(info: pb.SessionInfo, suffix: str) -> str | None:
    """The closed session's one result table, which the file written must equal byte for byte."""
    if info.state != pb.SessionInfo.CLOSED:
        return None
    names = [n for n in info.result_files if n.startswith("result_") and n.endswith(suffix)]
    return names[0] if len(names) == 1 else None


def _statistics_results(info: pb.SessionInfo) -> list[str]:
    """A closed session's statistics tables (``dump_data: stats`` shards, a hunt's first pass):
    of another shape than the tensor rows, so never among them."""
    if info.state != pb.SessionInfo.CLOSED:
        return []
    return [n for n in info.result_files if "stats_result_" in Path(n).name and n.endswith(".csv")]


def _write_csv_files(
    stub: DumpCompareStub, info: pb.SessionInfo, csv_out: Path, streamed: StreamedRows, timeout: float
) -> list[Path]:
    """--csv: the tensor rows, and each statistics table beside them (``FILE.statistics.csv``);
    a session of statistics alone (a fault-free hunt) has its one statistics table in FILE."""
    statistics = _statistics_results(info)
    if len(statistics) > 1 and not streamed.rows:
        # A closed multi-step session of statistics alone: no table of tensors to head the files.
        return _write_statistics_alone(stub, info, csv_out, statistics, streamed.statistics, timeout)
    # Rows of an open session (or of a closed one whose tables were not kept): from their values.
    from dumpcmp.host.sinks.csv_file import write_new_table

    from_rows = bool(streamed.statistics.rows) and not statistics
    single = _single_result(info, ".csv")
    if len(statistics) == 1 and not streamed.rows:
        target = _copy_result(stub, info, statistics.pop(), csv_out, timeout)
    elif from_rows and not streamed.rows:
        target = write_new_table(csv_out, *streamed.statistics.table())
        from_rows = False
    elif single is not None:
        target = _copy_result(stub, info, single, csv_out, timeout)
    else:
        target = write_new_table(csv_out, *streamed.table())
    written = [target]
    for name in statistics:
        label = "statistics" if len(statistics) == 1 else Path(name).stem
        written.append(
            _copy_result(stub, info, name, target.with_name(f"{target.stem}.{label}.csv"), timeout)
        )
    if from_rows:
        beside = target.with_name(f"{target.stem}.statistics.csv")
        written.append(write_new_table(beside, *streamed.statistics.table()))
    return written


def _write_statistics_alone(
    stub: DumpCompareStub,
    info: pb.SessionInfo,
    csv_out: Path,
    names: list[str],
    streamed: StreamedStatistics,
    timeout: float,
) -> list[Path]:
    """FILE holds every shard's statistics rows, led by the shard columns, as an open session's
    --csv does; where the store holds none of them (a session migrated from a schema-4 store keeps
    them in its result files only), each result file beside FILE instead, and no FILE of a header
    alone."""
    from dumpcmp.host.sinks.csv_file import write_new_table

    if streamed.rows:
        return [write_new_table(csv_out, *streamed.table())]
    return [
        _copy_result(stub, info, name, csv_out.with_name(f"{csv_out.stem}.{Path(name).stem}.csv"), timeout)
        for name in names
    ]


def _copy_result(stub: DumpCompareStub, info: pb.SessionInfo, name: str, path: Path, timeout: float) -> Path:
    """The session's result file ``name``, byte for byte, at ``path`` or the next free name."""
    from dumpcmp.outputs import new_file

    def write(temp: Path) -> None:
        with temp.open("wb") as handle:
            for data in _result_chunks(stub, info, name, timeout):
                handle.write(data)

    return new_file(path, write)


def _write_xlsx(
    stub: DumpCompareStub, info: pb.SessionInfo, target: Path, streamed: StreamedRows, timeout: float
) -> None:
    from dumpcmp.host.sinks.xlsx_file import write_xlsx_cells
    from dumpcmp.host.verdict import Thresholds

    columns, rows = _table_cells(stub, info, streamed, timeout)
    write_xlsx_cells(target, columns, rows, thresholds=Thresholds())


def _write_html(
    stub: DumpCompareStub, info: pb.SessionInfo, target: Path, graph: Path | None, streamed: StreamedRows,
    timeout: float,
) -> None:  # fmt: skip
    """The session's report at ``target``: of one shard, as ``compare --html`` of its result; of
    several (steps, devices: the table is led by their columns), one page for the run with a shard
    picker and the advice across the shards, as ``compare --html`` of a multi-step tree."""
    from dumpcmp.host.report.files import ReportRequest, write_reports, write_run_reports
    from dumpcmp.host.report.graph import graph_for
    from dumpcmp.host.report.shards import advise_run
    from dumpcmp.host.report.table import split_shards, table_from_cells

    columns, rows = _table_cells(stub, info, streamed, timeout)
    table = table_from_cells([columns, *rows], source=f"session {info.session}")
    op_graph = None
    if graph is not None:  # the user's: maybe another model's, where the session's own is not
        op_graph = graph_for(graph, info.model)
        warn_of_strangers(
            op_graph,
            (row.op_name for row in table.targets()),
            "the report's graph has no numbers on the others",
        )
    with tempfile.TemporaryDirectory(prefix="dumpcmp-rule-") as scratch:
        if graph is None:  # the network of the rule the session compared with, where it holds one
            graph = _session_rule(stub, info, Path(scratch), timeout)
        request = ReportRequest(html=True, graph=graph)
        shards = split_shards(table)
        if len(shards) == 1:
            write_reports(
                table, target.with_suffix(""), request, model=info.model, html_path=target, graph=op_graph
            )
            return
        if op_graph is None and graph is not None:
            op_graph = graph_for(graph, info.model)
        stamp = time.strftime("%Y%m%d%H%M%S")  # the names a batch compare gives its shards' results
        stems = [target.with_name(f"{label}_result_{stamp}") for label, _ in shards]
        tables = [shard for _, shard in shards]
        run = advise_run(tables, [s.name for s in stems], graph=op_graph)
        write_run_reports(run, tables, stems, request, graphs=[op_graph] * len(tables), html_path=target)


def _session_rule(stub: DumpCompareStub, info: pb.SessionInfo, scratch: Path, timeout: float) -> Path | None:
    """The fusion rule file the session holds, fetched into ``scratch``; None when it holds none (or
    the host is too old to send it: the report then has no graph, as before)."""
    settings = info.settings
    if settings.WhichOneof("fusion_rule") != "fusion_rule_name":
        return None
    name = settings.fusion_rule_name
    request = pb.FetchResultRequest(session=info.session, name=name, kind=pb.FUSION_RULE)
    try:
        data = b"".join(chunk.data for chunk in stub.FetchResult(request, timeout=timeout))
    except grpc.RpcError as exc:
        if exc.code() == grpc.StatusCode.NOT_FOUND:
            return None
        raise
    path = scratch / Path(name).name
    path.write_bytes(data)
    return path


def _table_cells(
    stub: DumpCompareStub, info: pb.SessionInfo, streamed: StreamedRows, timeout: float
) -> tuple[list[str], list[list[str]]]:
    """The closed session's one result table as written (its own columns, not every optional one),
    else the rows streamed (``StreamedRows.table``); of a session of statistics rows alone, their
    table."""
    name = _single_result(info, ".csv")
    if name is None:
        return (
            streamed.statistics.table()
            if streamed.statistics.rows and not streamed.rows
            else streamed.table()
        )
    from dumpcmp.host.sinks.csv_file import restored_rows

    text = b"".join(_result_chunks(stub, info, name, timeout))
    table = restored_rows(csv.reader(text.decode("utf-8").splitlines()))
    return table[0], table[1:]


@dataclass(frozen=True)
class SessionTables:
    """A session's result tables as (name, header + rows), for ``advise --host``."""

    tables: list[tuple[str, list[list[str]]]]
    still_open: bool
    # A closed session's hunts (their summary lines): what each concluded, and which pass each
    # result's capture is; the advice of each table is of one pass, not of the hunt.
    hunts: list[str]
    # The network of the fusion rule the session compared with, where it holds one: the advisor
    # traces an input that differs where a capture starts (a hunt's window) to its maker upstream.
    graph: OpGraph | None = None


def session_tables(options: ChannelOptions, session: str) -> SessionTables:
    """Each result file of a closed session, else the rows so far (named after the session; when
    they are of several shards, a table per shard named as its result file will be,
    ``{device}_{model}_{step}_result_{now}``, so that the shards are advised as one run); and the
    network of the session's fusion rule."""
    with _stub(options) as stub:
        info = stub.GetSession(pb.GetSessionRequest(session=session), timeout=options.timeout)
        graph = _session_graph(stub, info, options.timeout)
        if info.state != pb.SessionInfo.CLOSED:  # a table per shard, named as its result file will be
            streamed = _rows(stub, session, options.timeout)
            split = streamed.by_shard()
            stats = streamed.statistics.by_shard()
            if len(split) < 2 and len(stats) < 2:
                columns, rows = streamed.table()
                tables = [(session, [columns, *rows])] if rows or not stats else []
                tables += [(f"{session}_statistics", [c, *r]) for c, r in stats.values()]
                return SessionTables(tables, True, [], graph)
            from dumpcmp.host.report.table import shard_file_labels

            labels, stamp = shard_file_labels(list({**split, **stats})), time.strftime("%Y%m%d%H%M%S")
            shards = [
                *((f"{labels[k]}_result_{stamp}", [header, *rows]) for k, (header, rows) in split.items()),
                *(
                    (f"{labels[k]}_stats_result_{stamp}", [header, *rows])
                    for k, (header, rows) in stats.items()
                ),
            ]
            return SessionTables(shards, True, [], graph)
        from dumpcmp.host.sinks.csv_file import restored_rows

        hunts = _hunt_lines(info.summary)
        passes = _pass_tables(_rows(stub, session, options.timeout), hunts) if hunts else None
        if passes is not None:
            return SessionTables(passes, False, hunts, graph)
        tables = []
        for name in info.result_files:
            if not Path(name).name.endswith(".csv"):
                continue  # the xlsx twin holds the same rows
            text = b"".join(_result_chunks(stub, info, name, options.timeout)).decode("utf-8")
            tables.append((Path(name).name, restored_rows(csv.reader(text.splitlines()))))
        return SessionTables(tables, False, hunts, graph)


def _pass_tables(streamed: StreamedRows, hunts: list[str]) -> list[tuple[str, list[list[str]]]] | None:
    """A hunt session's rows as one table per pass, ``hunt_pass{k}`` (``hunt_pass{k}_statistics``),
    each advised on its own: the passes are captures of one run, not shards of a run with a first
    one, and their result files' names (``{time}_{device}_{model}_{step}_result_{ts}``, ``_1`` …)
    do not say which pass each is. None where a shard is of no pass, or a pass has several (the
    result files are advised then, as before)."""
    dirs = _pass_dirs(hunts)
    tables: list[tuple[int, str, list[list[str]]]] = []
    for split, kind in ((streamed.by_shard(), ""), (streamed.statistics.by_shard(), "_statistics")):
        for key, (header, rows) in split.items():
            number = dirs.get(key[:4])
            if number is None:
                return None
            tables.append((number, f"hunt_pass{number}{kind}", [header, *rows]))
    if len({name for _, name, _ in tables}) < len(tables):
        return None
    return [(name, cells) for _, name, cells in sorted(tables, key=lambda t: t[0])]


_PASS_LINE = re.compile(r"  pass (?P<number>\d+): ")


def _pass_dirs(hunts: list[str]) -> dict[tuple[str, ...], int]:
    """Each pass's dump directories, ``(time, device, model, model id)``, as its summary line
    (``hunts.hunt_lines``) ends: ``…: dump/{time}/{device}/{model}/{model id}[, …]``."""
    found: dict[tuple[str, ...], int] = {}
    for line in hunts:
        head = _PASS_LINE.match(line)
        if head is None:
            continue
        for where in line.rsplit(": ", 1)[-1].split(", "):
            parts = tuple(where.split("/"))
            if len(parts) == 5 and parts[0] == "dump":
                found[parts[1:]] = int(head["number"])
    return found


def _session_graph(stub: DumpCompareStub, info: pb.SessionInfo, timeout: float) -> OpGraph | None:
    """The network of the fusion rule the session holds; None when it holds none."""
    from dumpcmp.host.report.graph import graph_for

    with tempfile.TemporaryDirectory(prefix="dumpcmp-rule-") as scratch:
        rule = _session_rule(stub, info, Path(scratch), timeout)
        return graph_for(rule, info.model) if rule is not None else None


def _hunt_lines(summary: str) -> list[str]:
    """The lines of a closed summary about the session's hunts (``hunts.hunt_lines``): each
    hunt's line and its passes' indented ones."""
    lines: list[str] = []
    for line in summary.splitlines():
        if line.startswith("hunt of ") or (lines and line.startswith("  pass ")):
            lines.append(line)
        elif lines:
            break
    return lines
