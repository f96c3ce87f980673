"""A minimal host for agent tests (and bench/stream.py): the DumpCompare service's upload half.

It keeps the contract's promises the agent relies on: a file is written to disk under its
session (temporary name, rename) and its size and checksum checked before it is acknowledged;
a path already held with the same checksum is DUPLICATE; OpenSession returns the files held;
a bearer token is checked on every call when set. It records every acknowledgement, and can
misbehave on request: corrupt the next files' bytes, answer slowly, or drop the stream after a
number of files. It compares nothing.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from dumpcmp.agent.journal import Journal
from dumpcmp.agent.uploader import Uploader, UploadSettings
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from dumpcmp.proto._gen import dumpcmp_v1_pb2_grpc as pb_grpc
from dumpcmp.proto.channel import SERVER_OPTIONS, ChannelOptions, open_channel
from dumpcmp.proto.upload_wire import digest_of, new_digest, stored_file


@dataclass
class _Session:
    name: str
    request: Any
    files: dict[tuple[int, str], tuple[bytes, int]] = field(default_factory=dict)
    closed: bool = False
    closing: bool = False  # another's close is comparing it (SessionInfo.closing)
    runs: list[tuple[str, int]] = field(default_factory=list)
    file_runs: dict[tuple[int, str], str] = field(default_factory=dict)

    def start_run(self, run_id: str) -> None:
        """As the host does: a run started and never ended is replaced, its files dropped."""
        ended = {r for r, event in self.runs if event == pb.RunMark.END}
        stale = {r for r, event in self.runs if event == pb.RunMark.START and r not in ended and r != run_id}
        for key in [k for k, r in self.file_runs.items() if r in stale]:
            del self.files[key], self.file_runs[key]


class RecordingHost(pb_grpc.DumpCompareServicer):
    def __init__(self, data_dir: Path, token: str | None = None, keep_data: bool = True) -> None:
        self.data_dir = data_dir
        self.token = token
        self.keep_data = keep_data  # False: hash and count only (a host that stores elsewhere)
        self.closing_summary = ""  # what a closed session's info says (a real host's summary lines)
        self.closing_results: list[str] = []  # and the names of its result files
        self.sessions: dict[str, _Session] = {}
        self.acks: list[tuple[str, str, int]] = []  # (session, path, status) in answer order
        self.lock = threading.Lock()
        self.corrupt_next = 0  # flip a byte of the next N files received
        self.ack_delay = 0.0  # seconds before each acknowledgement
        self.drop_after: int | None = None  # end the stream UNAVAILABLE after this many acks
        self.refuse_runs = False  # answer run marks REFUSED (as for a replaced run)
        self.run_refusal = "run was replaced"  # why, then ({} is the run's id)
        self.opened = 0
        self.largest_chunk = 0
        self.checksums: list[int] = [pb.XXH3_128]  # what OpenSession says it verifies ([]: an older host)
        self.closing = threading.Event()  # set when a CloseSession comes in
        self.close_gate: threading.Event | None = None  # a CloseSession waits for it (at most a minute)

    # -- helpers for tests -----------------------------------------------------------------

    def statuses(self, path: str) -> list[int]:
        with self.lock:
            return [status for _s, p, status in self.acks if p == path]

    def stored_count(self, path: str) -> int:
        return self.statuses(path).count(pb.UploadAck.STORED)

    # -- service ---------------------------------------------------------------------------

    def _auth(self, context: grpc.ServicerContext) -> None:
        if self.token is None:
            return
        metadata = dict(context.invocation_metadata())
        if metadata.get("authorization") != f"Bearer {self.token}":
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")

    def _info(self, session: _Session) -> pb.SessionInfo:
        return pb.SessionInfo(
            session=session.name,
            model=session.request.model,
            state=pb.SessionInfo.CLOSED if session.closed else pb.SessionInfo.OPEN,
            closing=session.closing and not session.closed,
            settings=session.request.settings,
            files=[
                stored_file(kind, path, size, digest)
                for (kind, path), (digest, size) in session.files.items()
            ],
            checksums=self.checksums,
            data_dir=str(self.data_dir / session.name),
            summary=self.closing_summary if session.closed else "",
            result_files=self.closing_results if session.closed else [],
        )

    def OpenSession(self, request: Any, context: grpc.ServicerContext) -> pb.SessionInfo:
        self._auth(context)
        with self.lock:
            self.opened += 1
            session = self.sessions.setdefault(request.session, _Session(request.session, request))
            return self._info(session)

    def GetSession(self, request: Any, context: grpc.ServicerContext) -> pb.SessionInfo:
        self._auth(context)
        with self.lock:
            session = self.sessions.get(request.session)
            if session is None:
                context.abort(grpc.StatusCode.NOT_FOUND, f"no session {request.session!r}")
            return self._info(session)

    def CloseSession(self, request: Any, context: grpc.ServicerContext) -> pb.SessionInfo:
        self._auth(context)
        self.closing.set()
        if self.close_gate is not None:
            self.close_gate.wait(60.0)
        with self.lock:
            session = self.sessions.get(request.session)
            if session is None:
                context.abort(grpc.StatusCode.NOT_FOUND, f"no session {request.session!r}")
            session.closed = True
            return self._info(session)

    def Upload(
        self, request_iterator: Iterator[Any], context: grpc.ServicerContext
    ) -> Iterator[pb.UploadAck]:
        self._auth(context)
        current: Any = None
        digest: Any = None
        writer: _Writer | None = None
        received = 0
        corrupt = False
        temp = Path()
        answered = 0
        try:
            for message in request_iterator:
                body = message.WhichOneof("body")
                if body == "run":
                    status = pb.UploadAck.REFUSED if self.refuse_runs else pb.UploadAck.RUN_ACCEPTED
                    with self.lock:
                        session = self.sessions[message.run.session]
                        if not self.refuse_runs:
                            if message.run.event == pb.RunMark.START:
                                session.start_run(message.run.run_id)
                            session.runs.append((message.run.run_id, message.run.event))
                        self.acks.append((message.run.session, f"run:{message.run.run_id}", status))
                    why = self.run_refusal.format(message.run.run_id) if self.refuse_runs else ""
                    yield pb.UploadAck(status=status, run_id=message.run.run_id, message=why)
                elif body == "start":
                    current = message.start
                    if current.session not in self.sessions:
                        context.abort(grpc.StatusCode.NOT_FOUND, f"no session {current.session!r}")
                    digest, received = new_digest(current.checksum), 0
                    with self.lock:
                        corrupt = self.corrupt_next > 0
                        self.corrupt_next -= int(corrupt)
                    target = self.data_dir / current.session / pb.FileKind.Name(current.kind) / current.path
                    temp = target.with_name(f".{target.name}.part")
                    if self.keep_data:
                        writer = _Writer(temp)
                elif body == "data":
                    data = message.data
                    self.largest_chunk = max(self.largest_chunk, len(data))
                    if corrupt and received == 0 and data:
                        data = bytes([data[0] ^ 0xFF]) + data[1:]
                    if writer is not None:
                        writer.put(data)  # written on the writer's thread while this one hashes
                    digest.update(data)
                    received += len(data)
                elif body == "end":
                    if writer is not None:
                        writer.close()
                        writer = None
                    claimed = digest_of(message.end, current.checksum)
                    status = self._land(current, digest.digest(), received, claimed, temp)
                    if self.ack_delay:
                        time.sleep(self.ack_delay)
                    answered += 1
                    yield pb.UploadAck(kind=current.kind, path=current.path, status=status)
                    if self.drop_after is not None and answered >= self.drop_after:
                        self.drop_after = None
                        context.abort(grpc.StatusCode.UNAVAILABLE, "dropped on purpose")
        finally:
            if writer is not None:
                writer.close()
                temp.unlink(missing_ok=True)

    def _land(self, start: Any, got: bytes, received: int, claimed: bytes, temp: Path) -> int:
        key = (start.kind, start.path)
        with self.lock:
            session = self.sessions[start.session]
            if got != claimed or received != start.size:
                status = pb.UploadAck.CHECKSUM_MISMATCH
            elif session.files.get(key) == (got, received):
                status = pb.UploadAck.DUPLICATE
            else:
                status = pb.UploadAck.STORED
                session.files[key] = (got, received)
                session.file_runs[key] = start.run_id
                if self.keep_data:
                    os.replace(temp, temp.with_name(temp.name[1 : -len(".part")]))
            if self.keep_data and temp.exists():
                temp.unlink()
            self.acks.append((start.session, start.path, status))
        return status


class _Writer:
    """Writes one file on its own thread, a few chunks behind the stream (memory stays bounded)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = path.open("wb")
        self._chunks: queue.Queue[bytes | None] = queue.Queue(maxsize=8)
        self._thread = threading.Thread(target=self._write, name="recording-host-writer", daemon=True)
        self._thread.start()

    def _write(self) -> None:
        with self._handle:
            while (chunk := self._chunks.get()) is not None:
                self._handle.write(chunk)

    def put(self, chunk: bytes) -> None:
        self._chunks.put(chunk)

    def close(self) -> None:
        self._chunks.put(None)
        self._thread.join()


class ServerHandle:
    """A RecordingHost served on 127.0.0.1; ``restart`` brings it back on the same port."""

    def __init__(self, host: RecordingHost, port: int = 0) -> None:
        self.host = host
        self.port = port
        self._server: grpc.Server | None = None
        self.start()

    def start(self) -> None:
        self._pool = futures.ThreadPoolExecutor(max_workers=8)
        server = grpc.server(self._pool, options=SERVER_OPTIONS)  # a real host's message limit
        pb_grpc.add_DumpCompareServicer_to_server(self.host, server)
        port = server.add_insecure_port(f"127.0.0.1:{self.port}")
        if not port:
            raise RuntimeError(f"cannot listen on 127.0.0.1:{self.port}")
        self.port = port
        server.start()
        self._server = server

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=None).wait(5.0)
            self._server = None
            self._pool.shutdown(wait=True, cancel_futures=True)

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"


@contextmanager
def serving(host: RecordingHost) -> Iterator[ServerHandle]:
    """``host`` on a free loopback port for the length of a ``with`` block."""
    handle = ServerHandle(host)
    try:
        yield handle
    finally:
        handle.stop()


def uploader_for(
    target: str,
    state: Path,
    session: str,
    settings: UploadSettings | None = None,
    token: str | None = None,
) -> Uploader:
    """An agent's uploader into ``session`` at ``target``, its journal in ``state`` (not started)."""
    token_file = None
    if token is not None:
        token_file = state.parent / f"token-{token}"
        token_file.write_text(token)
    address = ChannelOptions(target, token_file=token_file)
    request = pb.OpenSessionRequest(session=session, model="net")
    return Uploader(
        lambda: open_channel(address), request, Journal(state, session), settings or UploadSettings(), target
    )
