"""The ``dumpcmp.v1.DumpCompare`` servicer: sessions, uploads, rows and result files.

Every RPC checks what the client sent before acting on it. A problem with one file (bad name,
too large, unknown or closed session, checksum) is that file's acknowledgement; a stream that
breaks the protocol (data before FileStart, an over-long chunk) ends with an error status;
neither touches other uploads or the server.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import grpc

from dumpcmp.errors import DumpcmpError, SessionNotFound
from dumpcmp.host.server import files
from dumpcmp.host.server.files import IncomingFile
from dumpcmp.host.server.names import BadWireName, check_relative_path, check_session_name
from dumpcmp.host.server.store import SessionRecord, SessionStore, StoredFile, UploaderRecord
from dumpcmp.host.server.worker import NewRunner, Notifier, SessionWorker
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from dumpcmp.proto._gen.dumpcmp_v1_pb2_grpc import DumpCompareServicer
from dumpcmp.proto.channel import MAX_CHUNK
from dumpcmp.proto.session_names import SESSION_METADATA

DEFAULT_MAX_FILE_SIZE = 64 * 1024**3
_ROWS_PER_BATCH = 1000
_WATCH_POLL_S = 0.5
_RESULT_CHUNK = 1024 * 1024
_PROGRESS_EVERY_S = 1.0  # a followed session's counts, at most this often
Ack = pb.UploadAck


@dataclass(frozen=True)
class _HostPathUse:
    """A setting naming a file on the host, as the agent's options call it."""

    option: str
    what: str
    upload: str
    directory: bool  # a directory is named, else a file


_GOLDEN = _HostPathUse("--golden-on-host", "the golden data", "--golden", directory=True)
_RULE = _HostPathUse("--fusion-rule-on-host", "the fusion rule", "--fusion-rule", directory=False)


class _Refused(Exception):
    """A file the host will not take; its REFUSED acknowledgement says why."""


class DumpCompareService(DumpCompareServicer):  # type: ignore[misc]
    def __init__(
        self, data_dir: Path, max_file_size: int = DEFAULT_MAX_FILE_SIZE, new_runner: NewRunner | None = None,
        host_paths: tuple[Path, ...] = (),
    ) -> None:  # fmt: skip
        self.data_dir = data_dir
        self.max_file_size = max_file_size
        # Directories (resolved) under which a client may name golden data or a fusion rule
        # already on the host; none: a client can make the host read no file of its own.
        self.host_paths = host_paths
        self._new_runner = new_runner  # where sessions compare their files; None: in their threads
        (data_dir / "sessions").mkdir(parents=True, exist_ok=True)
        self.store = SessionStore(data_dir)
        self.notifier = Notifier()
        self._workers: dict[str, SessionWorker] = {}
        self._streams: Counter[str] = Counter()  # upload calls streaming into each session now
        self._lock = threading.Lock()  # one worker per session, however many calls race for it
        # The run whose golden files each session takes, claimed by its first golden FileStart: two
        # runs' first golden files on the way at once both found the session without golden data.
        self._golden_runs: dict[str, str] = {}
        self._golden_lock = threading.Lock()
        files.clear_deleted(data_dir)  # sessions a stopped host was deleting
        for name in self.store.open_session_names():
            self._resume(name)

    def _resume(self, name: str) -> None:
        """An open session of a previous server: files checked, compared again from scratch."""
        files.clear_incoming(self.data_dir, name)
        lost = [
            f
            for f in self.store.files(name)
            if not files.is_stored(self.data_dir, name, f.kind, tuple(f.path.split("/")), f.size)
        ]
        self.store.forget_files(name, lost)  # not acknowledged any more: the agent resends them
        # Renamed into place, then the host died before recording it: never acknowledged (the
        # agent sends it again, maybe as part of a run that replaces this one), so not the session's.
        kept = {(f.kind, f.path) for f in self.store.files(name)}
        files.remove_unrecorded(self.data_dir, name, kept)
        worker = self._worker(name)
        if worker is not None:
            worker.recompare()

    def _worker(self, name: str) -> SessionWorker | None:
        """The session's comparison thread; None once the session is closed (nothing to compare)."""
        with self._lock:
            worker = self._workers.get(name)
            if worker is not None and not worker.finished:
                return worker
            if self.store.state(name).closed:
                return None
            worker = SessionWorker(self.data_dir, name, self.store, self.notifier, self._new_runner)
            self._workers[name] = worker
            return worker

    def stop(self) -> None:
        with self._lock:
            workers = list(self._workers.values())
            self._workers.clear()
        for worker in workers:
            worker.stop()
        self.store.close()

    # ---- sessions

    def OpenSession(self, request: pb.OpenSessionRequest, context: grpc.ServicerContext) -> pb.SessionInfo:
        name = _checked_session(request.session, context)
        settings = request.settings
        if settings.metric_family not in ("", "offline_data"):
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, f"metric family {settings.metric_family!r} is not supported"
            )
        if settings.WhichOneof("fusion_rule") == "fusion_rule_name":
            _checked_path(settings.fusion_rule_name, context, single_part=True)
        # Stored resolved: the session reads the very file that was checked.
        if settings.WhichOneof("golden") == "golden_host_path":
            settings.golden_host_path = self._host_path(settings.golden_host_path, _GOLDEN, context)
        if settings.WhichOneof("fusion_rule") == "fusion_rule_host_path":
            settings.fusion_rule_host_path = self._host_path(settings.fusion_rule_host_path, _RULE, context)
        uploader = None
        if request.HasField("uploader"):
            u = request.uploader
            uploader = UploaderRecord(u.host, u.device, u.agent_id, u.version)
        with self._lock:
            if self.store.is_closed(name):
                # Files sent now would be refused one by one; a closed session's results are final.
                _abort(
                    context,
                    grpc.StatusCode.FAILED_PRECONDITION,
                    f"session {name} is closed and its results are final; stream into a new session name",
                )
            created = self.store.open_session(name, request.model, settings.SerializeToString(), uploader)
            stored = pb.CompareSettings.FromString(self.store.session(name).settings)
            completed = stored if created else _completed_settings(name, stored, settings, context)
            if completed != stored:
                self.store.set_settings(name, completed.SerializeToString())
        if completed != stored:
            # A run that forgot --golden or --fusion-rule is fixed by running again with them.
            worker = self._worker(name)
            if worker is not None:
                worker.replan()
        return self._info(name, context, with_files=True)

    def _host_path(self, path: str, use: _HostPathUse, context: grpc.ServicerContext) -> str:
        """``path`` resolved (symlinks followed), when it lies under one of ``host_paths``."""
        try:
            resolved = Path(path).resolve() if path else None
        except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte
            resolved = None
        if resolved is not None and any(resolved.is_relative_to(d) for d in self.host_paths):
            if resolved.is_dir() if use.directory else resolved.is_file():
                return str(resolved)
            # Said now, to the agent, before it streams: the comparison would only fail at the close.
            _abort(
                context,
                grpc.StatusCode.INVALID_ARGUMENT,
                f"{use.option} {path!r}: no such {'directory' if use.directory else 'file'} on the host",
            )
        allowed = (
            "the host reads host paths only under its --host-paths directories"
            if self.host_paths
            else "this host allows no host paths"
        )
        _abort(
            context,
            grpc.StatusCode.PERMISSION_DENIED,
            f"{use.option} {path!r}: {allowed} (dumpcmp host serve --host-paths DIR); "
            f"or send {use.what} with {use.upload}",
        )

    def GetSession(self, request: pb.GetSessionRequest, context: grpc.ServicerContext) -> pb.SessionInfo:
        return self._info(_checked_session(request.session, context), context, with_files=True)

    def ListSessions(
        self, request: pb.ListSessionsRequest, context: grpc.ServicerContext
    ) -> pb.ListSessionsReply:
        return pb.ListSessionsReply(sessions=[self._info_of(r, []) for r in self.store.sessions()])

    def CloseSession(self, request: pb.CloseSessionRequest, context: grpc.ServicerContext) -> pb.SessionInfo:
        name = _checked_session(request.session, context)
        record = self._record(name, context)
        worker = None if record.closed else self._worker(name)
        if worker is not None:
            done = worker.close()
            while not done.done():  # bounded waits: a cancelled call or a stopping server ends it
                if not context.is_active():
                    _abort(context, grpc.StatusCode.CANCELLED, f"session {name}: close abandoned")
                futures.wait([done], timeout=_WATCH_POLL_S)
            try:
                done.result()
            except DumpcmpError as exc:
                _abort(context, grpc.StatusCode.FAILED_PRECONDITION, f"session {name}: {exc}")
        return self._info(name, context, with_files=True)

    def DeleteSession(
        self, request: pb.DeleteSessionRequest, context: grpc.ServicerContext
    ) -> pb.DeleteSessionReply:
        name = _checked_session(request.session, context)
        with self._lock:  # no upload starts streaming into it meanwhile: its files would be refused
            streams = self._streams[name]
            if streams:
                _abort(
                    context,
                    grpc.StatusCode.FAILED_PRECONDITION,
                    f"session {name}: {streams} agent upload{'s' if streams > 1 else ''} streaming into it "
                    "right now; stop the agent (or let it finish and close the session), then delete it",
                )
            worker = self._workers.pop(name, None)
            if worker is not None:
                worker.stop()  # before its rows go: a comparison in flight would store them again
            try:
                record, stored = self.store.delete_session(name)
            except SessionNotFound as exc:
                _abort(context, grpc.StatusCode.NOT_FOUND, str(exc))
            directory = files.session_dir(self.data_dir, name).resolve()
            doomed = files.set_aside(self.data_dir, name)  # a session reopened now starts empty
        files.remove_set_aside(doomed)  # outside the lock: a large session takes a while
        self.notifier.notify()
        return pb.DeleteSessionReply(session=name, rows=record.rows, files=stored, data_dir=str(directory))

    def streaming(self, name: str, delta: int) -> None:
        """An upload call started (+1) or stopped (-1) streaming into session ``name``."""
        with self._lock:
            self._streams[name] += delta
            if self._streams[name] <= 0:
                del self._streams[name]

    def _record(self, name: str, context: grpc.ServicerContext) -> SessionRecord:
        try:
            return self.store.session(name)
        except SessionNotFound as exc:
            _abort(context, grpc.StatusCode.NOT_FOUND, str(exc))

    def _info(self, name: str, context: grpc.ServicerContext, *, with_files: bool) -> pb.SessionInfo:
        record = self._record(name, context)
        return self._info_of(record, self.store.files(name) if with_files else [])

    def _info_of(self, record: SessionRecord, stored: list[StoredFile]) -> pb.SessionInfo:
        with self._lock:
            streams = self._streams[record.name]
            worker = self._workers.get(record.name)
        return pb.SessionInfo(
            session=record.name,
            model=record.model,
            state=pb.SessionInfo.CLOSED if record.closed else pb.SessionInfo.OPEN,
            settings=pb.CompareSettings.FromString(record.settings),
            files=[pb.StoredFile(kind=f.kind, path=f.path, sha256=f.sha256, size=f.size) for f in stored],  # type: ignore[arg-type]
            rows=record.rows,
            result_files=record.result_files,
            replaced_runs=record.replaced_runs,
            summary=record.summary,
            nothing_compared=record.nothing_compared,
            data_dir=str(files.session_dir(self.data_dir, record.name).resolve()),
            uploaders=[
                pb.Uploader(host=u.host, device=u.device, agent_id=u.agent_id, version=u.version)
                for u in record.uploaders
            ],
            streams=streams,
            dump_files=record.dump_files,
            compared_files=record.compared_files,
            waiting="" if record.closed or worker is None else worker.problem,
        )

    # ---- uploads

    def Upload(
        self, request_iterator: Iterable[pb.UploadMessage], context: grpc.ServicerContext
    ) -> Iterator[Ack]:
        # Two threads per stream: one receives (writes and hashes each chunk), this one makes
        # finished files durable (fdatasync, rename, store) and answers, in stream order. A file's
        # fdatasync waits on the disk; meanwhile the next file's bytes keep arriving.
        steps = _Handoff(context)
        named = str(dict(context.invocation_metadata() or ()).get(SESSION_METADATA, ""))
        receiver = threading.Thread(
            target=_receive, args=(self, request_iterator, steps, named), name="dumpcmp-recv", daemon=True
        )
        receiver.start()
        try:
            while True:
                try:
                    step = steps.get()
                except queue.Empty:
                    if not context.is_active():
                        return
                    continue
                if step is None:
                    return
                if isinstance(step, _StreamError):
                    _abort(context, step.code, step.reason)
                if isinstance(step, _Finished):
                    yield self.end_file(step.start, step.file, step.sha256)
                else:
                    yield step
        finally:
            steps.close()

    def start_file(self, start: pb.FileStart) -> IncomingFile:
        """The file about to be received, or _Refused."""
        try:
            name = check_session_name(start.session)
            parts = check_relative_path(start.path, single_part=start.kind == pb.FUSION_RULE)
        except BadWireName as exc:
            raise _Refused(str(exc)) from None
        if start.kind not in files.KIND_DIRS:
            raise _Refused(f"unknown file kind {start.kind}")
        if start.size > self.max_file_size:
            raise _Refused(f"{start.size} bytes: larger than this host's limit of {self.max_file_size}")
        try:
            record = self.store.state(name)
        except SessionNotFound as exc:
            raise _Refused(str(exc)) from None
        if record.closed:
            raise _Refused(f"session {name} is closed")
        if start.run_id and (gone := record.gone(start.run_id)):
            raise _Refused(gone)
        if start.kind == pb.GOLDEN and (other := self._claim_golden(name, start)) is not None:
            # Each run would be compared against the newest golden files, whichever run they
            # came from: another run's golden data is another comparison. A run that brings its
            # own is refused whole, so that its dump files are not compared with the other's.
            if start.run_id:
                self._drop_files(name, self.store.refuse_run(name, start.run_id))
            raise _Refused(
                f"session {name} already holds the golden data of run {other or '(no run)'}; "
                "stream a run with golden data of its own into a new session"
            )
        try:
            return IncomingFile(self.data_dir, name, start.kind, parts)
        except (OSError, DumpcmpError) as exc:
            raise _Refused(f"cannot store it: {_reason(exc)}") from None

    def _claim_golden(self, name: str, start: pb.FileStart) -> str | None:
        """The other run (``""``: none) whose golden data the session takes; None when it is
        ``start``'s run's, claimed now if no run's was. A golden file the session already holds
        at that size is let through (devices of one model sending the same golden directory):
        the file's checksum then says whether it is a duplicate."""
        run_id = start.run_id
        with self._golden_lock:
            known = self.store.file(name, pb.GOLDEN, start.path)
            if known is not None and known.size == start.size:
                return None
            claim = self._golden_runs.get(name)
            # A claim holds while its run does (not replaced, refused, or deleted with its session).
            if (
                claim is not None
                and claim != run_id
                and self.store.run_state(name, claim) in ("open", "ended")
            ):
                return claim
            other = self.store.golden_of_other_run(name, run_id)
            if other is None:
                self._golden_runs[name] = run_id
            return other

    def end_file(self, start: pb.FileStart, incoming: IncomingFile, sha256: bytes) -> Ack:
        ack = Ack(kind=start.kind, path=start.path, run_id=start.run_id)
        if incoming.received != start.size:
            incoming.discard()
            ack.status, ack.message = (
                Ack.CHECKSUM_MISMATCH,
                f"{incoming.received} bytes received, FileStart said {start.size}",
            )
            return ack
        if incoming.digest() != sha256:
            incoming.discard()
            ack.status, ack.message = (
                Ack.CHECKSUM_MISMATCH,
                "SHA-256 of the bytes received differs from FileEnd's",
            )
            return ack
        known = self.store.file(start.session, start.kind, start.path)
        parts = incoming.parts
        if (
            known is not None
            and known.sha256 == sha256
            and files.is_stored(self.data_dir, start.session, start.kind, parts, known.size)
        ):
            incoming.discard()
            ack.status = Ack.DUPLICATE
            return ack
        try:
            incoming.commit()
        except (OSError, DumpcmpError) as exc:
            incoming.discard()
            ack.status, ack.message = Ack.REFUSED, f"cannot store it: {_reason(exc)}"
            return ack
        refused = self.store.add_file(
            start.session, StoredFile(start.kind, start.path, start.size, sha256, start.run_id)
        )
        if refused:  # the session closed, or the file's run was replaced, while it was on the way
            files.remove_file(self.data_dir, start.session, start.kind, parts)
            ack.status, ack.message = Ack.REFUSED, refused
            return ack
        worker = self._worker(start.session)
        if worker is not None:
            worker.landed(start.kind, start.path)
        self.notifier.notify()  # followers count the files received
        ack.status = Ack.STORED
        return ack

    def run_mark(self, mark: pb.RunMark) -> Ack:
        ack = Ack(run_id=mark.run_id)
        try:
            name = check_session_name(mark.session)
            record = self.store.state(name)
        except (BadWireName, SessionNotFound) as exc:
            ack.status, ack.message = Ack.REFUSED, str(exc)
            return ack
        if not mark.run_id or mark.event not in (pb.RunMark.START, pb.RunMark.END):
            ack.status, ack.message = Ack.REFUSED, "a run mark needs a run id and START or END"
            return ack
        if record.closed or (gone := record.gone(mark.run_id)):
            ack.status = Ack.REFUSED
            ack.message = f"session {name} is closed" if record.closed else gone
            return ack
        if mark.event == pb.RunMark.END:
            self.store.end_run(name, mark.run_id)
            ack.status = Ack.RUN_ACCEPTED
            return ack
        started = self.store.start_run(name, mark.run_id, mark.agent_id)
        self._drop_files(name, started.dropped)
        ack.status = Ack.RUN_ACCEPTED
        ack.message = f"replaced runs: {', '.join(started.replaced)}" if started.replaced else ""
        return ack

    def _drop_files(self, name: str, dropped: Sequence[StoredFile]) -> None:
        """The files of runs that no longer count: off the disk (with the directories they leave
        empty) and out of the comparison."""
        if not dropped:
            return
        for f in dropped:
            files.remove_file(self.data_dir, name, f.kind, tuple(f.path.split("/")))
        worker = self._worker(name)
        if worker is not None:
            worker.dropped(tuple(f.path for f in dropped))
        self.notifier.notify()

    # ---- rows and results

    def WatchRows(self, request: pb.WatchRowsRequest, context: grpc.ServicerContext) -> Iterator[pb.RowBatch]:
        name = _checked_session(request.session, context)
        seq = request.after_seq
        told, told_at = pb.SessionInfo(), -_PROGRESS_EVERY_S
        while context.is_active():
            seen = self.notifier.version
            record = self._record(name, context)  # read before the rows: closed means all rows are in
            rows = self.store.rows_after(name, seq, _ROWS_PER_BATCH)
            if rows:
                seq = rows[-1].seq
                yield pb.RowBatch(
                    columns=record.columns,
                    rows=[pb.Row(seq=r.seq, dump_file=r.dump_file, cells=r.cells) for r in rows],
                )
                continue
            if not request.follow:
                return
            progress = self._info_of(record, [])
            if record.closed:
                yield pb.RowBatch(columns=record.columns, session_closed=True, progress=progress)
                return
            if progress != told:
                early = told_at + _PROGRESS_EVERY_S - time.monotonic()
                if early > 0:  # a busy session changes with every file: a line a second is enough
                    self.notifier.wait(seen, min(early, _WATCH_POLL_S))  # new rows go out at once
                    continue
                told, told_at = progress, time.monotonic()
                yield pb.RowBatch(columns=record.columns, progress=progress)
            self.notifier.wait(seen, _WATCH_POLL_S)

    def FetchResult(
        self, request: pb.FetchResultRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.FileChunk]:
        name = _checked_session(request.session, context)
        record = self._record(name, context)
        if request.name not in record.result_files:
            context.abort(grpc.StatusCode.NOT_FOUND, f"session {name} has no result file {request.name!r}")
        try:
            with files.open_result(self.data_dir, name, request.name) as fd:
                while chunk := os.read(fd, _RESULT_CHUNK):
                    yield pb.FileChunk(data=chunk)
        except (OSError, DumpcmpError) as exc:
            context.abort(grpc.StatusCode.DATA_LOSS, f"session {name}: result {request.name}: {_reason(exc)}")


@dataclass
class _Receiving:
    start: pb.FileStart
    file: IncomingFile | None  # None: refused, its data is skipped until FileEnd

    @property
    def path(self) -> str:
        return self.start.path


@dataclass(frozen=True)
class _Finished:
    """A file received whole; the committing thread checks it, makes it durable and answers."""

    start: pb.FileStart
    file: IncomingFile
    sha256: bytes


class _StreamError(Exception):
    """The stream broke the protocol (or the disk failed): the call ends with this status."""

    def __init__(self, code: grpc.StatusCode, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


# What the receiving thread hands over, in stream order; None: the stream ended.
_Step = Ack | _Finished | _StreamError | None
_FILES_COMMITTING = 4  # steps waiting for the committing thread: a few descriptors, no file data


def _receive(
    service: DumpCompareService, requests: Iterable[pb.UploadMessage], steps: _Handoff, session: str
) -> None:
    upload = _Upload(service)
    if session:
        upload.streams_into(session)
    last: _Step = None
    try:
        for message in requests:
            step = upload.feed(message)
            if step is not None and not steps.put(step):
                return
        if upload.receiving is not None:
            raise _StreamError(
                grpc.StatusCode.INVALID_ARGUMENT, f"stream ended inside file {upload.receiving.path!r}"
            )
    except _StreamError as exc:
        last = exc
    except grpc.RpcError:
        pass  # the call was cancelled or broke: nothing more comes, nothing is answered
    except Exception as exc:  # a bug here ends this call (as it did on the handler's thread), not the server
        last = _StreamError(grpc.StatusCode.INTERNAL, f"host error receiving the upload: {_reason(exc)}")
    finally:
        upload.abandon()
        upload.stopped_streaming()
        if last is not None:
            steps.put(last)
        steps.put(None)


class _Handoff:
    """The steps the receiving thread hands to the answering one, in stream order.

    The answering side ends first when the call dies (a killed agent): from then on every file
    handed over is discarded at once, whichever thread gets there first. A file queued after the
    answering side drained the queue would otherwise sit in ``.incoming`` until the host restarts.
    """

    def __init__(self, context: grpc.ServicerContext) -> None:
        self._context = context
        self._steps: deque[_Step] = deque()
        self._changed = threading.Condition()
        self._closed = False

    def put(self, step: _Step) -> bool:
        """Queue ``step``; False (and its file discarded) once the call is over."""
        with self._changed:
            while not self._closed and len(self._steps) >= _FILES_COMMITTING and self._context.is_active():
                self._changed.wait(_WATCH_POLL_S)  # the answering side is committing: a place frees soon
            if self._closed or len(self._steps) >= _FILES_COMMITTING:
                _discard(step)
                return False
            self._steps.append(step)
            self._changed.notify_all()
            return True

    def get(self) -> _Step:
        """The next step; queue.Empty after a while without one."""
        with self._changed:
            if not self._changed.wait_for(lambda: self._steps, _WATCH_POLL_S):
                raise queue.Empty
            step = self._steps.popleft()
            self._changed.notify_all()
            return step

    def close(self) -> None:
        """No more answers: files received but never answered are not kept, the agent resends."""
        with self._changed:
            self._closed = True
            while self._steps:
                _discard(self._steps.popleft())
            self._changed.notify_all()


def _discard(step: _Step) -> None:
    if isinstance(step, _Finished):
        with contextlib.suppress(OSError):
            step.file.discard()


class _Upload:
    """The state of one Upload stream: between files, or inside one."""

    def __init__(self, service: DumpCompareService) -> None:
        self.service = service
        self.receiving: _Receiving | None = None
        self._sessions: set[str] = set()  # the sessions this call streams into

    def streams_into(self, session: str) -> None:
        if session not in self._sessions:
            self._sessions.add(session)
            self.service.streaming(session, +1)

    def stopped_streaming(self) -> None:
        for session in self._sessions:
            self.service.streaming(session, -1)
        self._sessions.clear()

    def feed(self, message: pb.UploadMessage) -> _Step:
        body = message.WhichOneof("body")
        if body == "start":
            if self.receiving is not None:
                self._fail(f"FileStart of {message.start.path!r} inside file {self.receiving.path!r}")
            self.streams_into(message.start.session)
            return self._start(message.start)
        if body == "data":
            if self.receiving is None:
                self._fail("data before FileStart")
            data = message.data  # each access of a bytes field copies it: once only
            if len(data) > MAX_CHUNK:
                self._fail(f"a chunk of {len(data)} bytes; the limit is {MAX_CHUNK}")
            try:
                self._write(data)
            except OSError as exc:  # a full or failing disk: this upload ends, the agent retries later
                self.abandon()
                raise _StreamError(
                    grpc.StatusCode.RESOURCE_EXHAUSTED, f"host cannot write: {_reason(exc)}"
                ) from None
            return None
        if body == "end":
            if self.receiving is None:
                self._fail("FileEnd before FileStart")
            receiving, self.receiving = self.receiving, None
            if receiving.file is None:
                return None  # refused at its start, already answered
            return _Finished(receiving.start, receiving.file, message.end.sha256)
        if body == "run":
            if self.receiving is not None:
                self._fail(f"RunMark inside file {self.receiving.path!r}")
            self.streams_into(message.run.session)
            # Marked as it is received: the FileStarts after it in the stream are checked against
            # it (a rerun's first golden file was refused as another run's, its START not yet applied).
            return self.service.run_mark(message.run)
        self._fail("an empty UploadMessage")

    def _start(self, start: pb.FileStart) -> Ack | None:
        try:
            self.receiving = _Receiving(start, self.service.start_file(start))
        except _Refused as exc:
            self.receiving = _Receiving(start, None)
            return Ack(
                kind=start.kind, path=start.path, run_id=start.run_id, status=Ack.REFUSED, message=str(exc)
            )
        return None

    def _write(self, data: bytes) -> None:
        assert self.receiving is not None
        incoming = self.receiving.file
        if incoming is None:
            return
        if incoming.received + len(data) > self.receiving.start.size:
            # More than announced: the end's ack says so; nothing more is written for it.
            incoming.received += len(data)
            return
        incoming.write(data)

    def _fail(self, reason: str) -> NoReturn:
        self.abandon()
        raise _StreamError(grpc.StatusCode.INVALID_ARGUMENT, reason)

    def abandon(self) -> None:
        if self.receiving is not None and self.receiving.file is not None:
            with contextlib.suppress(OSError):
                self.receiving.file.discard()
        self.receiving = None


# The settings an agent run may add to a session that lacks them, and what they are called.
_PLAN_SETTINGS = (("golden", "the golden data"), ("fusion_rule", "the fusion rule"))
_SOURCES = {
    "golden_uploaded": "sent by an agent (--golden)",
    "golden_host_path": "{} on the host (--golden-on-host)",
    "fusion_rule_name": "{} sent by an agent (--fusion-rule)",
    "fusion_rule_host_path": "{} on the host (--fusion-rule-on-host)",
}


def _completed_settings(
    name: str, stored: pb.CompareSettings, given: pb.CompareSettings, context: grpc.ServicerContext
) -> pb.CompareSettings:
    """``stored`` with the golden data or fusion rule ``given`` names where ``stored`` names none.

    Sound because the worker then compares every stored dump file afresh. A different source than
    the one the session has is refused: the session's rows would mix two comparisons."""
    completed = pb.CompareSettings()
    completed.CopyFrom(stored)
    for group, what in _PLAN_SETTINGS:
        field = given.WhichOneof(group)
        have = stored.WhichOneof(group)
        if field is None:
            continue
        if have is None:
            setattr(completed, field, getattr(given, field))
        elif (have, getattr(stored, have)) != (field, getattr(given, field)):
            _abort(
                context,
                grpc.StatusCode.FAILED_PRECONDITION,
                f"session {name} compares with {what} {_SOURCES[have].format(getattr(stored, have))}, this "
                f"run gives {_SOURCES[field].format(getattr(given, field))}; delete the session first "
                f"(dumpcmp host delete {name}) or stream into a new session name",
            )
    return completed


def _abort(context: grpc.ServicerContext, code: grpc.StatusCode, message: str) -> NoReturn:
    context.abort(code, message)  # raises: the call ends with this status
    raise AssertionError("ServicerContext.abort returned")


def _checked_session(name: str, context: grpc.ServicerContext) -> str:
    try:
        return check_session_name(name)
    except BadWireName as exc:
        _abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(exc))


def _checked_path(path: str, context: grpc.ServicerContext, *, single_part: bool = False) -> None:
    try:
        check_relative_path(path, single_part=single_part)
    except BadWireName as exc:
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))


def _reason(exc: BaseException) -> str:
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc)
