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
from typing import NoReturn, TypeVar

import grpc

from dumpcmp.errors import DumpcmpError, SessionNotFound
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.server import files
from dumpcmp.host.server.files import IncomingFile
from dumpcmp.host.server.hunts import HuntRefused, Hunts
from dumpcmp.host.server.limits import DEFAULT_LIMITS, StreamLimits
from dumpcmp.host.server.names import BadWireName, check_relative_path, check_session_name
from dumpcmp.host.server.row_messages import row_message, stats_message
from dumpcmp.host.server.store import (
    SessionRecord,
    SessionState,
    SessionStore,
    StoredFile,
    StoredRow,
    UploaderRecord,
)
from dumpcmp.host.server.worker import NewRunner, Notifier, SessionWorker
from dumpcmp.host.sinks.table import TableShape
from dumpcmp.host.stats_compare import StatsResult
from dumpcmp.outputs import make_dirs_durably
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from dumpcmp.proto._gen.dumpcmp_v1_pb2_grpc import DumpCompareServicer, add_DumpCompareServicer_to_server
from dumpcmp.proto.channel import MAX_CHUNK
from dumpcmp.proto.session_names import (
    CLOSED_METADATA,
    CLOSED_REFUSAL,
    CLOSING_REFUSAL,
    SESSION_METADATA,
    STREAMING_METADATA,
)
from dumpcmp.proto.upload_wire import (
    ACKS_METADATA,
    BATCHED,
    Whole,
    digest_of,
    read_upload_message,
    stored_file,
)
from dumpcmp.proto.walker import GroupKey, model_of

DEFAULT_MAX_FILE_SIZE = 64 * 1024**3
_ROWS_PER_BATCH = 1000
_WATCH_POLL_S = 0.5
_RESULT_CHUNK = 1024 * 1024
_PROGRESS_EVERY_S = 1.0  # a followed session's counts, at most this often
_STREAMED_TABLE = TableShape.every_column()  # the cells WatchRows sends: the columns a session states
Ack = pb.UploadAck
_T = TypeVar("_T")


@dataclass(frozen=True)
class _HostPathUse:
    """A setting naming a file on the host, as the agent's options call it."""

    option: str
    what: str
    upload: str
    directory: bool  # a directory is named, else a file


_GOLDEN = _HostPathUse("--golden-on-host", "the golden data", "--golden", directory=True)
_RULE = _HostPathUse("--fusion-rule-on-host", "the fusion rule", "--fusion-rule", directory=False)


def add_to_server(service: DumpCompareService, server: grpc.Server) -> None:
    """Serve ``service`` on ``server``: the generated handlers, but for Upload's decoding, which
    takes a data message's chunk as a view of the received bytes (read_upload_message)."""
    add_DumpCompareServicer_to_server(service, _UploadDecoding(server))


class _UploadDecoding:
    """What the generated registration sees of the server: it swaps in Upload's decoder."""

    def __init__(self, server: grpc.Server) -> None:
        self._server = server

    def add_generic_rpc_handlers(self, handlers: object) -> None:
        """Dropped: add_registered_method_handlers registers the same methods, and them decoded."""

    def add_registered_method_handlers(self, name: str, handlers: dict[str, grpc.RpcMethodHandler]) -> None:
        upload = handlers["Upload"]
        handlers = handlers | {
            "Upload": grpc.stream_stream_rpc_method_handler(
                upload.stream_stream,
                request_deserializer=read_upload_message,
                response_serializer=upload.response_serializer,
            )
        }
        self._server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(name, handlers),))
        self._server.add_registered_method_handlers(name, handlers)


class _Refused(Exception):
    """A file the host will not take; its REFUSED acknowledgement says why (and, with
    ``run_dropped``, that no file of its run counts any more)."""

    def __init__(self, message: str, *, run_dropped: bool = False) -> None:
        super().__init__(message)
        self.run_dropped = run_dropped


class DumpCompareService(DumpCompareServicer):  # type: ignore[misc]
    def __init__(
        self, data_dir: Path, max_file_size: int = DEFAULT_MAX_FILE_SIZE, new_runner: NewRunner | None = None,
        host_paths: tuple[Path, ...] = (), limits: StreamLimits = DEFAULT_LIMITS,
    ) -> None:  # fmt: skip
        self.data_dir = data_dir
        self.max_file_size = max_file_size
        self.limits = limits
        self._uploads = _Slots(limits.uploads, "uploads", "--max-uploads")
        self._followers = _Slots(limits.followers, "followed sessions", "--max-followers")
        # Directories (resolved) under which a client may name golden data or a fusion rule
        # already on the host; none: a client can make the host read no file of its own.
        self.host_paths = host_paths
        self._new_runner = new_runner  # where sessions compare their files; None: in their threads
        make_dirs_durably(data_dir / "sessions")
        self.store = SessionStore(data_dir)
        self.notifier = Notifier()
        self._workers: dict[str, SessionWorker] = {}
        self._streams: Counter[str] = Counter()  # upload calls streaming into each session now
        self._lock = threading.Lock()  # one worker per session, however many calls race for it
        # Closes under way of each session. Its own lock (taken inside _lock, never the other way):
        # a close's end is counted from the worker's thread, which a delete joins holding _lock.
        self._closing: Counter[str] = Counter()
        self._closing_lock = threading.Lock()
        # The run whose golden files each session takes, claimed by its first golden FileStart: two
        # runs' first golden files on the way at once both found the session without golden data.
        self._golden_runs: dict[str, str] = {}
        self._golden_lock = threading.Lock()
        self._commit_locks: dict[str, threading.Lock] = {}  # per session: see end_files
        self._hunts = Hunts(data_dir, self.store, self._drop_files)
        # One line per session whose acknowledged files are gone from the disk, for the command
        # that starts the host to say.
        self.start_problems: list[str] = []
        files.clear_deleted(data_dir)  # sessions a stopped host was deleting
        for name in self.store.session_names("open"):
            self._resume(name)
        for name in self.store.session_names("closed"):
            self._check_closed(name)

    def _lost(self, name: str) -> list[StoredFile]:
        """The session's acknowledged files no longer on the disk with their size."""
        return [
            f
            for f in self.store.files(name)
            if not files.is_stored(self.data_dir, name, f.kind, tuple(f.path.split("/")), f.size)
        ]

    def _check_closed(self, name: str) -> None:
        """A closed session's files deleted by hand: its results, stored at the close, stay as
        they are, but the directory no longer holds what they were computed from (an offline
        compare of it, or a check of a result by hand, silently lacks them)."""
        lost = self._lost(name)
        if lost:
            example = f"{files.KIND_DIRS[lost[0].kind]}/{lost[0].path}"
            self.start_problems.append(
                f"session {name} (closed): {len(lost)} stored file{'s' if len(lost) > 1 else ''} "
                f"missing or changed in {files.session_dir(self.data_dir, name)} (e.g. {example}); its "
                "results stay as the close stored them, but the directory no longer holds all they "
                "were computed from"
            )

    def _resume(self, name: str) -> None:
        """An open session of a previous server: files checked, compared again from scratch."""
        files.clear_incoming(self.data_dir, name)
        lost = self._lost(name)
        self.store.forget_files(name, lost)  # not acknowledged any more: the agent resends them
        if lost:
            # Deleted by hand (or lost with a disk): said now, and by the session's close if no
            # agent sends them again; its results were silently short of them.
            names = [f"{files.KIND_DIRS[f.kind]}/{f.path}" for f in lost]
            files.record_missing(self.data_dir, name, names)
            self.start_problems.append(
                f"session {name}: {len(lost)} acknowledged file{'s' if len(lost) > 1 else ''} missing or "
                f"changed in {files.session_dir(self.data_dir, name)} (e.g. {names[0]}); an agent that "
                "resumes the session sends them again; its close says the results lack any that never come"
            )
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
                _refuse_closed(context, _CLOSED_FINAL.format(name))
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
                if use.directory and (escape := self._link_out_of_bounds(resolved)) is not None:
                    # The comparison opens what a link in it names: /etc/passwd was read as a
                    # golden file ("not a numpy .npy file (a text file)").
                    _abort(
                        context,
                        grpc.StatusCode.PERMISSION_DENIED,
                        f"{use.option} {path!r}: {escape.relative_to(resolved)} in it is a symbolic link "
                        "outside the host's --host-paths directories; the host reads host paths only "
                        "under them",
                    )
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

    def _link_out_of_bounds(self, directory: Path) -> Path | None:
        """The first symbolic link under ``directory`` that resolves outside ``host_paths``."""
        for root, dirnames, filenames in os.walk(directory):  # links to directories: not walked
            for name in sorted(dirnames) + sorted(filenames):
                entry = Path(root, name)
                if not entry.is_symlink():
                    continue
                try:
                    target = entry.resolve()
                except (OSError, RuntimeError):  # a loop: nothing the comparison could read
                    continue
                if not any(target.is_relative_to(d) for d in self.host_paths):
                    return entry
        return None

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
            with self._lock, self._closing_lock:  # until it ends, a run starting is refused (``run_mark``)
                self._refuse_while_streaming(name, "close", context)
                done = worker.close()
                self._closing[name] += 1
            done.add_done_callback(lambda _done: self._closed(name))
            while not done.done():  # bounded waits: a cancelled call or a stopping server ends it
                if not context.is_active():
                    _abort(context, grpc.StatusCode.CANCELLED, f"session {name}: close abandoned")
                futures.wait([done], timeout=_WATCH_POLL_S)
            try:
                done.result()
            except DumpcmpError as exc:
                # The worker's reasons do not name the session: said once, here.
                refused = f"session {name} cannot be closed: {exc}"
                _abort(context, grpc.StatusCode.FAILED_PRECONDITION, refused)
        return self._info(name, context, with_files=True)

    def _closed(self, name: str) -> None:
        """A close of session ``name`` ended, closed or not."""
        with self._closing_lock:
            self._closing[name] -= 1
            if self._closing[name] <= 0:
                del self._closing[name]

    def _closing_now(self, name: str) -> bool:
        with self._closing_lock:
            return bool(self._closing[name])

    def DeleteSession(
        self, request: pb.DeleteSessionRequest, context: grpc.ServicerContext
    ) -> pb.DeleteSessionReply:
        name = _checked_session(request.session, context)
        with self._lock:  # no upload starts streaming into it meanwhile: its files would be refused
            self._refuse_while_streaming(name, "delete", context)
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

    def _refuse_while_streaming(self, name: str, action: str, context: grpc.ServicerContext) -> None:
        """Abort while an agent streams into session ``name`` (called holding ``_lock``).

        An agent closes its session itself once its files are in: closed now, the files still
        on the way would be refused. A stalled upload ends after --upload-idle-timeout, a dead
        agent's after the keepalive, so a session is never held for good."""
        streams = self._streams[name]
        if streams:
            context.set_trailing_metadata(((STREAMING_METADATA, str(streams)),))
            _abort(
                context,
                grpc.StatusCode.FAILED_PRECONDITION,
                f"session {name}: {streams} agent upload{'s' if streams > 1 else ''} streaming into it "
                f"right now; stop the agent (or let it finish and close the session), then {action} it",
            )

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
            model=record.model or self._dump_model(record.name),
            state=pb.SessionInfo.CLOSED if record.closed else pb.SessionInfo.OPEN,
            settings=pb.CompareSettings.FromString(record.settings),
            files=[stored_file(f.kind, f.path, f.size, f.sha256) for f in stored],
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
            checksums=[pb.XXH3_128],
            whole_files=True,
            whole_file_batches=True,
            closing=not record.closed and self._closing_now(record.name),
        )

    def _dump_model(self, name: str) -> str:
        """The model a session's dump paths name, for one opened without a model name (a watch:
        the watched directory's name was shown, ``wdB`` for a small_cnn dump)."""
        first = self.store.first_path(name, pb.DUMP)
        return "" if first is None else model_of(first)

    # ---- uploads

    def Upload(self, request_iterator: Iterable[_Received], context: grpc.ServicerContext) -> Iterator[Ack]:
        return self._uploads.holding(context, self._upload(request_iterator, context))

    def _upload(self, request_iterator: Iterable[_Received], context: grpc.ServicerContext) -> Iterator[Ack]:
        # Two threads per stream: one receives (writes and hashes each chunk), this one makes
        # finished files durable and answers, in stream order. The files finished while it
        # committed the last group are the next group, made durable together (group commit:
        # one fsync per directory and one store commit for all of them); meanwhile the next
        # files' bytes keep arriving. A lone file is committed at once: nothing waits for company.
        # An agent that asked for it gets a group's answers in one message.
        steps = _Handoff(context)
        pulse = _Pulse()
        metadata = dict(context.invocation_metadata() or ())
        named = str(metadata.get(SESSION_METADATA, ""))
        batched = metadata.get(ACKS_METADATA) == BATCHED
        receiver = threading.Thread(
            target=_receive,
            args=(self, request_iterator, steps, named, pulse),
            name="dumpcmp-recv",
            daemon=True,
        )
        receiver.start()
        batch: list[_Step] = []
        try:
            while True:
                try:
                    batch = steps.take()
                except queue.Empty:
                    if not context.is_active():
                        return
                    self._check_stalled(pulse, context)
                    continue
                acks, end = self._answers(batch)
                if batched and len(acks) > 1:
                    acks[0].more.extend(acks[1:])
                    del acks[1:]
                yield from acks
                if isinstance(end, _StreamError):
                    _abort(context, end.code, end.reason)
                if end:
                    return
        except BaseException:
            # The call ended (or failed) inside a batch: its files not answered yet are not
            # kept, as the handoff's close drops those it still holds (an answered file's is a no-op).
            for step in batch:
                _discard(step)
            raise
        finally:
            steps.close()

    def _check_stalled(self, pulse: _Pulse, context: grpc.ServicerContext) -> None:
        """End an upload that stopped sending inside a file: its part file goes, and the session
        is no longer held (close and delete refuse while an agent streams)."""
        stalled = pulse.stalled_in(self.limits.upload_idle_s)
        if stalled is not None:
            _abort(
                context,
                grpc.StatusCode.ABORTED,
                f"no data for {self.limits.upload_idle_s:g} s inside file {stalled!r}: upload ended "
                "(host serve --upload-idle-timeout)",
            )

    def _answers(self, batch: list[_Step]) -> tuple[list[Ack], _StreamError | bool]:
        """The answers to ``batch``'s steps, in order, and how the stream goes on: True (it ended),
        a _StreamError (it broke), False (more to come)."""
        acks: list[Ack] = []
        group: list[_Finished] = []
        for step in batch:
            if isinstance(step, _Finished):
                group.append(step)
                continue
            acks += self.end_files(group)  # answers go out in stream order
            group = []
            if step is None or isinstance(step, _StreamError):
                return acks, step or True
            acks.append(step)
        return acks + self.end_files(group), False

    def start_file(self, start: pb.FileStart, states: _States, dirs: files.IncomingDirs) -> IncomingFile:
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
            record = states.get(name)
        except SessionNotFound as exc:
            raise _Refused(str(exc)) from None
        if record.closed:
            raise _Refused(CLOSED_REFUSAL.format(name))
        if self._closing_now(name):  # a run refused at its START sends its files all the same
            raise _Refused(CLOSING_REFUSAL.format(name))
        if start.run_id and (gone := record.gone(start.run_id)):
            raise _Refused(gone, run_dropped=True)
        if start.kind == pb.GOLDEN and (other := self._claim_golden(name, start)) is not None:
            # Each run would be compared against the newest golden files, whichever run they
            # came from: another run's golden data is another comparison. A run that brings its
            # own is refused whole, so that its dump files are not compared with the other's.
            if start.run_id:
                self._drop_files(name, self.store.refuse_run(name, start.run_id))
            raise _Refused(
                f"session {name} already holds the golden data of run {other or '(no run)'}; "
                "stream a run with golden data of its own into a new session",
                run_dropped=bool(start.run_id),
            )
        if (
            start.kind == pb.GOLDEN
            and not start.run_id
            and (twin := self.store.golden_twin(name, start.path))
        ):
            # Two `--watch` agents (no runs to tell apart; runs have their claim) bringing golden
            # data of their own: the close compared the first's dump with the second's golden files.
            raise _Refused(
                f"session {name} already holds {twin}, another golden file of this tensor; a session "
                "compares with one set of golden data: stream other golden data into a new session"
            )
        if start.kind in _PLAN_KINDS:
            held = self.store.file(name, start.kind, start.path)
            if held is not None and held.size != start.size:
                raise _Refused(self._refuse_other_content(name, start, held), run_dropped=bool(start.run_id))
        if start.checksum not in (pb.SHA256, pb.XXH3_128):
            raise _Refused(f"unknown checksum {start.checksum} (a newer agent: update this host)")
        try:
            return IncomingFile(self.data_dir, name, start.kind, parts, start.checksum, dirs)
        except (OSError, DumpcmpError) as exc:
            raise _Refused(f"cannot store it: {_reason(exc)}") from None

    def end_files(self, finished: list[_Finished]) -> list[Ack]:
        """Check, make durable together, record and answer files received whole, in their order.

        Every answer goes out after its file, its directory and its store row are on disk."""
        acks: list[Ack] = []
        keep: list[tuple[_Finished, Ack]] = []
        for step in finished:
            ack = Ack(kind=step.start.kind, path=step.start.path, run_id=step.start.run_id)
            acks.append(ack)
            mismatch = _mismatch(step)
            if mismatch:
                step.file.discard()
                ack.status, ack.message = Ack.CHECKSUM_MISMATCH, mismatch
            else:
                keep.append((step, ack))
        by_session: dict[str, list[tuple[_Finished, Ack]]] = {}
        for step, ack in keep:
            by_session.setdefault(step.start.session, []).append((step, ack))
        for session, steps in by_session.items():
            # One stream at a time checks, renames into place and records a session's files:
            # another stream's file at the same path (a run of the same model and device started
            # at once) was stored between this one's rename and its refused record, and the
            # refusal's removal then took the stored file from the disk.
            with self._commit_locks.setdefault(session, threading.Lock()):
                self._store_files(session, steps)
        if keep:
            self.notifier.notify()  # followers count the files received
        return acks

    def _store_files(self, session: str, steps: list[tuple[_Finished, Ack]]) -> None:
        """The files of one session, each answered (its ack's status set)."""
        known = self.store.files_named(session, [(s.start.kind, s.start.path) for s, _ack in steps])
        # The stream checked each file's run when it started, against a state it reads at most once
        # a second; a run refused or replaced meanwhile by another stream must not have its files
        # renamed into place, over the paths of the run that took the session.
        state = self.store.state(session)
        fresh: list[tuple[_Finished, Ack]] = []
        for (step, ack), held in zip(steps, known, strict=True):
            gone = state.gone(step.start.run_id) if step.start.run_id else ""
            if (
                held is not None
                and held.sha256 == step.digest
                and files.is_stored(self.data_dir, session, step.start.kind, step.file.parts, held.size)
            ):
                step.file.discard()
                ack.status = Ack.DUPLICATE
            elif gone:
                step.file.discard()
                ack.status, ack.message, ack.run_dropped = Ack.REFUSED, gone, True
            elif (
                held is not None
                and _other_content(held, step.digest)
                and not (held.run_id and state.gone(held.run_id))
            ):
                step.file.discard()
                ack.status, ack.message = Ack.REFUSED, self._refuse_other_content(session, step.start, held)
                ack.run_dropped = bool(step.start.run_id)
            else:
                fresh.append((step, ack))
        worker = self._worker(session)
        # A dump file the comparison reads only once the session's golden data or rule arrives
        # need not stay in memory meanwhile (one it compares now is dropped after the compare).
        later = worker is not None and worker.compares_later

        def cached(file: files.IncomingFile) -> bool:
            return file.kind != pb.DUMP or not later

        errors = files.commit_all([s.file for s, _ack in fresh], cached)
        committed: list[tuple[_Finished, Ack]] = []
        for (step, ack), error in zip(fresh, errors, strict=True):
            if error is None:
                committed.append((step, ack))
            else:
                step.file.discard()
                ack.status, ack.message = Ack.REFUSED, f"cannot store it: {_reason(error)}"
        records = [
            StoredFile(s.start.kind, s.start.path, s.start.size, s.digest, s.start.run_id)
            for s, _ack in committed
        ]
        for (step, ack), refused in zip(committed, self.store.add_files(session, records), strict=True):
            if refused:  # the session closed, or the file's run was replaced, while it was on the way
                files.remove_file(self.data_dir, session, step.start.kind, step.file.parts)
                ack.status, ack.message = Ack.REFUSED, refused
                # Its run no longer counts (not a closed session): the agent's summary said "28 files
                # sent" of a run the host had dropped whole, and advised closing the session.
                ack.run_dropped = bool(step.start.run_id) and refused != CLOSED_REFUSAL.format(session)
                continue
            if worker is not None:
                worker.landed(step.start.kind, step.start.path)
            ack.status = Ack.STORED

    def _refuse_other_content(self, name: str, start: pb.FileStart, held: StoredFile) -> str:
        """Why ``start``, a file other than the one the session holds at its path, is refused,
        with its whole run. A golden or rule file replaced, the session's dump files would be
        compared through another run's rule or golden data (a refused watch's rule was stored over
        the session's, and the close blamed the wrong op); a dump file replaced, an acknowledged
        file (perhaps deleted from the device since) would be lost."""
        if start.run_id:
            self._drop_files(name, self.store.refuse_run(name, start.run_id))
        of_run = f"of run {held.run_id or '(no run)'}"
        if start.kind == pb.DUMP:
            return (
                f"session {name} already holds another dump file {start.path} ({of_run}, acknowledged: it is "
                "never replaced); stream a dump of other content into a new session"
            )
        what = "fusion rule" if start.kind == pb.FUSION_RULE else "golden file"
        return (
            f"session {name} already holds another {what} {start.path} ({of_run}); "
            "stream a run with golden data and a rule of its own into a new session"
        )

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
            ack.status, ack.run_dropped = Ack.REFUSED, not record.closed
            ack.message = CLOSED_REFUSAL.format(name) if record.closed else gone
            return ack
        if mark.event == pb.RunMark.END:
            self.store.end_run(name, mark.run_id)
            ack.status = Ack.RUN_ACCEPTED
            return ack
        with self._closing_lock:  # atomic with a close beginning: a START then replaced the closing run
            closed = self.store.is_closed(name)
            if closed or self._closing[name]:
                ack.status = Ack.REFUSED
                ack.message = (CLOSED_REFUSAL if closed else CLOSING_REFUSAL).format(name)
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

    # ---- hunts

    def NextCapture(self, request: pb.NextCaptureRequest, context: grpc.ServicerContext) -> pb.CapturePlan:
        name = _checked_session(request.session, context)
        # Atomic with a close beginning, as a run's START is (``run_mark``): a hunt's next pass is
        # refused once a close began, and a close that begins while the pass is planned (the
        # planner drops an earlier hunt's passes, and compares this one's) is refused as one
        # during an upload is. A new pass planned during the close had its START refused after
        # the model ran, and a new hunt dropped passes the closing comparison was reading.
        with self._lock, self._closing_lock:
            closed = self.store.is_closed(name)
            if closed or self._closing[name]:
                _refuse_closed(
                    context, (_CLOSED_FINAL if closed else CLOSING_REFUSAL).format(name), closing=not closed
                )
            self._streams[name] += 1
        try:
            return self._hunts.next_capture(request)
        except HuntRefused as exc:
            _abort(context, exc.code, str(exc))
        finally:
            self.streaming(name, -1)

    # ---- rows and results

    def WatchRows(self, request: pb.WatchRowsRequest, context: grpc.ServicerContext) -> Iterator[pb.RowBatch]:
        rows = self._watch_rows(request, context)
        return self._followers.holding(context, rows) if request.follow else rows

    def _watch_rows(
        self, request: pb.WatchRowsRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.RowBatch]:
        name = _checked_session(request.session, context)
        seq, stats_seq = request.after_seq, request.after_stats_seq
        told, told_at = pb.SessionInfo(), -_PROGRESS_EVERY_S
        while context.is_active():
            seen = self.notifier.version
            record = self._record(name, context)  # read before the rows: closed means all rows are in
            rows = self.store.rows_after(name, seq, _ROWS_PER_BATCH)
            if rows:
                seq = rows[-1].seq
                yield pb.RowBatch(
                    columns=record.columns,
                    rows=[_row_message(r) for r in rows],
                )
                continue
            stats = (
                self.store.stats_after(name, stats_seq, _ROWS_PER_BATCH) if request.with_statistics else []
            )
            if stats:
                stats_seq = stats[-1].seq
                yield pb.RowBatch(columns=record.columns, rows=[_stats_row_message(r) for r in stats])
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
        kind = None
        if request.kind == pb.FUSION_RULE:  # a report's network graph: a rule file the session holds
            kind = pb.FUSION_RULE
            if self.store.file(name, kind, request.name) is None:
                context.abort(
                    grpc.StatusCode.NOT_FOUND, f"session {name} holds no rule file {request.name!r}"
                )
        elif request.name not in record.result_files:
            context.abort(grpc.StatusCode.NOT_FOUND, f"session {name} has no result file {request.name!r}")
        try:
            with files.open_result(self.data_dir, name, request.name, kind) as fd:
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
    digest: bytes  # the checksum FileEnd claims, of the kind FileStart named


def _mismatch(step: _Finished) -> str:
    """Why a received file is not the one announced; "" when it is."""
    if step.file.received != step.start.size:
        return f"{step.file.received} bytes received, FileStart said {step.start.size}"
    if step.file.digest() != step.digest:
        return f"{pb.Checksum.Name(step.start.checksum)} of the bytes received differs from FileEnd's"
    return ""


class _StreamError(Exception):
    """The stream broke the protocol (or the disk failed): the call ends with this status."""

    def __init__(self, code: grpc.StatusCode, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


# What the receiving thread hands over, in stream order; None: the stream ended.
_Step = Ack | _Finished | _StreamError | None
# An Upload message as read_upload_message decodes it.
_Received = pb.UploadMessage | memoryview | Whole | tuple[Whole, ...]
# Steps waiting for the committing thread, at most: the largest group it commits together. Each
# holds a file's descriptor, no file data.
_FILES_COMMITTING = 32


def _receive(
    service: DumpCompareService, requests: Iterable[_Received], steps: _Handoff, session: str, pulse: _Pulse
) -> None:
    upload = _Upload(service)
    if session:
        upload.streams_into(session, "")
    last: _Step = None
    try:
        for message in pulse.messages(requests, upload):
            if not steps.put(upload.feed(message)):
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
        upload.close()
        steps.put((None,) if last is None else (last, None))


class _Slots:
    """Places for one kind of long-lived call; a call finding none is answered RESOURCE_EXHAUSTED."""

    def __init__(self, limit: int, what: str, option: str) -> None:
        self._limit = limit
        self._what = what
        self._option = option
        self._used = 0
        self._lock = threading.Lock()

    def holding(self, context: grpc.ServicerContext, answers: Iterator[_T]) -> Iterator[_T]:
        """``answers``, with a place held while they are produced (or the call refused)."""
        with self._lock:
            full = self._used >= self._limit
            if not full:
                self._used += 1
        if full:  # outside the lock: abort raises
            _abort(
                context,
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"the host serves {self._limit} {self._what} at once already "
                f"(host serve {self._option}); try again later",
            )
        try:
            yield from answers
        finally:
            with self._lock:
                self._used -= 1


class _Pulse:
    """Since when the receiving thread has waited for more of a file; the answering thread
    ends the upload when that is too long (an agent that hung, or a client that never goes on)."""

    def __init__(self) -> None:
        self._waiting: tuple[str, float] | None = None  # the file's path, since when

    def messages(self, requests: Iterable[_Received], upload: _Upload) -> Iterator[_Received]:
        """``requests``, timing each wait that falls inside a file (between files, an agent
        watching a directory waits for the next dump file as long as it likes)."""
        received = iter(requests)
        while True:
            inside = upload.receiving
            self._waiting = None if inside is None else (inside.path, time.monotonic())
            try:
                message = next(received)
            except StopIteration:
                return
            finally:
                self._waiting = None
            yield message

    def stalled_in(self, limit_s: float) -> str | None:
        """The file waited for longer than ``limit_s``, if any."""
        waiting = self._waiting  # one read: the receiving thread replaces it
        if waiting is not None and time.monotonic() - waiting[1] > limit_s:
            return waiting[0]
        return None


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

    def put(self, steps: Sequence[_Step]) -> bool:
        """Queue ``steps`` in order; False once the call is over, the files of those it did not
        queue discarded (a WholeFiles message's files after the first one refused too)."""
        with self._changed:
            for number, step in enumerate(steps):
                full = len(self._steps) >= _FILES_COMMITTING
                while not self._closed and full and self._context.is_active():
                    self._changed.wait(_WATCH_POLL_S)  # the answering side is committing: a place frees soon
                    full = len(self._steps) >= _FILES_COMMITTING
                if self._closed or full:
                    for left in steps[number:]:
                        _discard(left)
                    return False
                self._steps.append(step)
                self._changed.notify_all()
            return True

    def take(self) -> list[_Step]:
        """Every step handed over so far (at least one); queue.Empty after a while without one."""
        with self._changed:
            if not self._changed.wait_for(lambda: self._steps, _WATCH_POLL_S):
                raise queue.Empty
            steps = list(self._steps)
            self._steps.clear()
            self._changed.notify_all()
            return steps

    def close(self) -> None:
        """No more answers: files received but never answered are not kept, the agent resends."""
        with self._changed:
            self._closed = True
            while self._steps:
                _discard(self._steps.popleft())
            self._changed.notify_all()


def _discard(step: _Step) -> None:
    if isinstance(step, _Finished):
        with contextlib.suppress(OSError, DumpcmpError):  # the session's directory may be gone
            step.file.discard()


_STATE_READ_EVERY_S = 1.0


class _States:
    """The sessions' states, as one upload stream checks the files it starts against them: read
    from the store at most once a second, not for every file. Early refusals only: the
    transaction recording a file checks again (``SessionStore.add_files``)."""

    def __init__(self, store: SessionStore) -> None:
        self._store = store
        self._read: dict[str, tuple[float, SessionState]] = {}

    def get(self, name: str) -> SessionState:
        now = time.monotonic()
        read = self._read.get(name)
        if read is None or now - read[0] > _STATE_READ_EVERY_S:
            read = self._read[name] = (now, self._store.state(name))
        return read[1]

    def forget(self) -> None:
        self._read.clear()


class _Upload:
    """The state of one Upload stream: between files, or inside one."""

    def __init__(self, service: DumpCompareService) -> None:
        self.service = service
        self.receiving: _Receiving | None = None
        self._sessions: set[str] = set()  # the sessions this call streams into
        # Runs of this call refused or replaced: their files still come, each refused, and do not
        # hold the session (an agent whose run was refused kept its first agent from closing it,
        # then failed; the session stayed open with nobody to close it).
        self._dropped_runs: set[str] = set()
        self._states = _States(service.store)
        self._dirs = files.IncomingDirs(service.data_dir)

    def streams_into(self, session: str, run_id: str) -> None:
        if session not in self._sessions and (not run_id or run_id not in self._dropped_runs):
            self._sessions.add(session)
            self.service.streaming(session, +1)

    def run_dropped(self, session: str, run_id: str) -> None:
        """Run ``run_id`` no longer counts: this call holds the session no more, unless a file
        of another run follows."""
        self._dropped_runs.add(run_id)
        if session in self._sessions:
            self._sessions.discard(session)
            self.service.streaming(session, -1)

    def close(self) -> None:
        """The stream ended: a file it was inside is not kept, and the sessions are no longer held."""
        self.abandon()
        self._dirs.close()
        for session in self._sessions:
            self.service.streaming(session, -1)
        self._sessions.clear()

    def feed(self, message: _Received) -> Sequence[_Step]:
        """The steps ``message`` finishes (answers, files received whole), in stream order."""
        # A data message, a WholeFile or WholeFiles as read_upload_message decodes them, or any message.
        if isinstance(message, memoryview):
            self._data(message)
            return ()
        if isinstance(message, Whole | tuple):
            return self._wholes((message,) if isinstance(message, Whole) else message)
        body = message.WhichOneof("body")
        if body == "start":
            refused = self._start(message.start)
            return () if refused is None else (refused,)
        if body == "data":
            self._data(message.data)  # each access of a bytes field copies it: once only
            return ()
        if body == "end":
            finished = self._end(message.end)
            return () if finished is None else (finished,)
        if body in ("whole", "wholes"):
            return self._wholes((message.whole,) if body == "whole" else message.wholes.files)
        if body == "run":
            if self.receiving is not None:
                self._fail(f"RunMark inside file {self.receiving.path!r}")
            self.streams_into(message.run.session, message.run.run_id)
            # Marked as it is received: the FileStarts after it in the stream are checked against
            # it (a rerun's first golden file was refused as another run's, its START not yet applied).
            ack = self.service.run_mark(message.run)
            if ack.run_dropped:
                self.run_dropped(message.run.session, message.run.run_id)
            self._states.forget()  # a run's start replaces runs: files after it are checked afresh
            return (ack,)
        self._fail("an empty UploadMessage")

    def _wholes(self, wholes: Iterable[Whole | pb.WholeFile]) -> list[_Step]:
        steps: list[_Step] = []
        try:
            for whole in wholes:
                steps += self._whole(whole.start, whole.data, whole.end)
        except BaseException:  # the stream breaks: the files of the message received so far are not kept
            for step in steps:
                _discard(step)
            raise
        return steps

    def _whole(self, start: pb.FileStart, data: bytes | memoryview, end: pb.FileEnd) -> tuple[_Step, ...]:
        refused = self._start(start)
        self._data(data)
        finished = self._end(end)
        # at most one: a file refused at its start is not finished
        return (refused,) if refused is not None else () if finished is None else (finished,)

    def _start(self, start: pb.FileStart) -> Ack | None:
        if self.receiving is not None:
            self._fail(f"FileStart of {start.path!r} inside file {self.receiving.path!r}")
        self.streams_into(start.session, start.run_id)
        try:
            self.receiving = _Receiving(start, self.service.start_file(start, self._states, self._dirs))
        except _Refused as exc:
            self.receiving = _Receiving(start, None)
            if exc.run_dropped and start.run_id:
                self.run_dropped(start.session, start.run_id)
            return Ack(
                kind=start.kind, path=start.path, run_id=start.run_id, status=Ack.REFUSED, message=str(exc),
                run_dropped=exc.run_dropped,
            )  # fmt: skip
        return None

    def _end(self, end: pb.FileEnd) -> _Finished | None:
        if self.receiving is None:
            self._fail("FileEnd before FileStart")
        receiving, self.receiving = self.receiving, None
        if receiving.file is None:
            return None  # refused at its start, already answered
        return _Finished(receiving.start, receiving.file, digest_of(end, receiving.start.checksum))

    def _data(self, data: bytes | memoryview) -> None:
        if self.receiving is None:
            self._fail("data before FileStart")
        if len(data) > MAX_CHUNK:
            self._fail(f"a chunk of {len(data)} bytes; the limit is {MAX_CHUNK}")
        try:
            self._write(data)
        except OSError as exc:  # a full or failing disk: this upload ends, the agent retries later
            self.abandon()
            raise _StreamError(
                grpc.StatusCode.RESOURCE_EXHAUSTED, f"host cannot write: {_reason(exc)}"
            ) from None

    def _write(self, data: bytes | memoryview) -> None:
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


# The files of a session's comparison plan: one run's, never replaced by another's.
_PLAN_KINDS = (pb.GOLDEN, pb.FUSION_RULE)

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


def _other_content(held: StoredFile, digest: bytes) -> bool:
    """Whether a file sent with ``digest`` is not ``held``: known only for a like checksum (an
    older agent's SHA-256 and a newer one's XXH3-128 of one file differ)."""
    return len(held.sha256) == len(digest) and held.sha256 != digest


def _abort(context: grpc.ServicerContext, code: grpc.StatusCode, message: str) -> NoReturn:
    context.abort(code, message)  # raises: the call ends with this status
    raise AssertionError("ServicerContext.abort returned")


# Why a call into a closed session is refused (files would be refused one by one).
_CLOSED_FINAL = "session {} is closed and its results are final; stream into a new session name"


def _refuse_closed(context: grpc.ServicerContext, message: str, *, closing: bool = False) -> NoReturn:
    """End a call refused because its session is closed (or closing), saying so in the trailing
    metadata too: the agent turns that into its one line, whichever call it made."""
    context.set_trailing_metadata(((CLOSED_METADATA, "closing" if closing else "closed"),))
    _abort(context, grpc.StatusCode.FAILED_PRECONDITION, message)


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


def _row_message(stored: StoredRow[ResultRow]) -> pb.Row:
    """A stored row as WatchRows sends it: its values, and for older clients the cells of the
    table with every optional column."""
    return pb.Row(
        seq=stored.seq,
        dump_file=stored.row.dump_file,
        cells=_STREAMED_TABLE.cells(stored.row.row),
        row=row_message(stored.row.row),
        shard=_shard_message(stored.row.shard),
    )


def _stats_row_message(stored: StoredRow[StatsResult]) -> pb.Row:
    """A stored statistics row as WatchRows sends it: its values only (an older client, which
    knows no statistics rows, reads it as a row without cells)."""
    return pb.Row(
        seq=stored.seq,
        dump_file=stored.row.dump_file,
        stats=stats_message(stored.row.row),
        shard=_shard_message(stored.row.shard),
    )


def _shard_message(shard: GroupKey) -> pb.Shard:
    return pb.Shard(
        device=shard.device, model=shard.model, model_id=shard.model_id, step=shard.step, time=shard.session
    )
