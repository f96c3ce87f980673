"""The upload client: files of one session to the host, each exactly once, whatever breaks.

One thread owns the connection. It opens (or resumes) the session, then runs one ``Upload``
stream: gRPC's own thread sends messages (files read from disk chunk by chunk straight into the
messages, hashed as they are read: XXH3-128 where the host verifies it, else SHA-256), prepared a
few ahead by a reader thread where the machine has cores to spare, while this thread reads the
host's per-file acknowledgements. Small files waiting together go in one message (WholeFiles),
where the host takes that: a message's fixed cost on each side is paid once for all of them.
What is in flight — sent, not yet acknowledged — is bounded by a window of files and bytes, so
memory does not depend on how much is waiting; gRPC's flow control bounds the rest.

A file acknowledged STORED or DUPLICATE goes into the journal; CHECKSUM_MISMATCH sends it again;
REFUSED is reported. When the stream breaks, everything in flight goes back to the head of the
queue and the thread reconnects with exponential backoff and jitter, giving up after
``give_up`` seconds without progress. Before a file is sent, the journal and the host's list of
stored files (from ``OpenSession``) are consulted, so files delivered before a crash or a
restart of either side are not sent twice, and files the host lost are sent again.

The uploader never calls AscendCL.
"""

from __future__ import annotations

import errno
import logging
import os
import queue
import random
import stat
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from io import RawIOBase
from pathlib import Path
from typing import Any, TypeVar

import grpc

from dumpcmp.agent.completeness import LINK_NOT_FOLLOWED
from dumpcmp.agent.journal import Journal, JournalEntry
from dumpcmp.errors import DumpcmpError, StillStreaming, TransferError
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from dumpcmp.proto._gen import dumpcmp_v1_pb2_grpc as pb_grpc
from dumpcmp.proto.channel import MAX_CHUNK, call_failed, session_closed
from dumpcmp.proto.runs import REPLACED_REFUSAL
from dumpcmp.proto.session_names import SESSION_METADATA, STREAMING_METADATA
from dumpcmp.proto.upload_wire import (
    ACKS_METADATA,
    BATCHED,
    Digest,
    FilledMessage,
    data_head,
    data_message,
    file_end,
    keep_freed_memory,
    new_digest,
    whole_head,
    whole_head_size,
    whole_message,
    wholes_head,
    wholes_head_size,
    wholes_message,
)

__all__ = [
    "REFUSED",
    "ChannelFactory",
    "RefusedRun",
    "UploadReport",
    "UploadSettings",
    "UploadStats",
    "Uploader",
    "data_message",
]

log = logging.getLogger(__name__)

REFUSED = ": refused by the host: "  # a problem line's words between the file and the host's reason

ChannelFactory = Callable[[], grpc.Channel]
_Call = TypeVar("_Call", bound=grpc.Future)

# Worth another connection: the host went away, restarts, or is overloaded. Anything else (a
# wrong token, an unknown session, a request the host calls malformed) ends the upload.
_RETRYABLE = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.CANCELLED,
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.INTERNAL,
    }
)


def default_read_ahead(cpus: int) -> int:
    """How many messages to prepare ahead on a reader thread, on a machine of ``cpus`` cores.

    The reader overlaps reading and hashing with gRPC's sending only where a core is free to run
    it; each message then passes between two threads, and the GIL with it. With two cores (the
    agent, gRPC's threads and the host's share them on loopback) reading on gRPC's thread was
    better in every way: ~0.3 ms less agent CPU per real-sized file, 0.15 s per GB, 25 MB less
    RSS, and no slower (bench/stream.py's pairs, 2-core VM). The reader thread once took a
    stream from 294 to 417 MB/s where cores were free.
    """
    return 4 if cpus > 2 else 0


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))  # what this process may run on (taskset, cpusets)
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@dataclass(frozen=True, slots=True)
class UploadSettings:
    # The most a message may hold: real-sized dump files (0.1-3 MB) then go as one WholeFile
    # message each, a large file in a quarter of the messages of 1 MiB chunks (on real-sized
    # files, 10-15% less CPU on each side than 1 MiB, for 10-20 MB more RSS).
    chunk_size: int = MAX_CHUNK
    window_bytes: int = 64 * 1024 * 1024
    window_files: int = 256
    backoff_first: float = 0.2
    backoff_max: float = 10.0
    give_up: float = 300.0  # seconds without progress before the upload fails
    max_resends: int = 5  # CHECKSUM_MISMATCH answers for one file before it is reported
    delete_acked: bool = False  # remove a DUMP file once the host has it and the journal is synced
    sync_every: float = 1.0  # seconds between journal fsyncs (and always before a delete)
    # Messages read and hashed ahead of gRPC's sending, on a thread of their own (memory: this ×
    # chunk_size); 0: read on gRPC's sending thread as it asks for each message.
    read_ahead: int = field(default_factory=lambda: default_read_ahead(_usable_cpus()))
    on_give_up: str = "unacknowledged files are sent on the next run"  # what then, in giving up's line


@dataclass(frozen=True, slots=True)
class _Item:
    seq: int
    kind: pb.FileKind  # FILE_KIND_UNSPECIFIED for a run mark
    path: str  # wire path of a file, or the run id of a run mark
    local: Path | None = None
    run_id: str = ""
    event: pb.RunMark.Event = pb.RunMark.EVENT_UNSPECIFIED
    resends: int = 0

    @property
    def key(self) -> tuple[int, str]:
        return (self.kind, self.path) if self.local is not None else (-self.event, self.path)

    @property
    def label(self) -> str:
        return str(self.local) if self.local is not None else f"run {self.path}"


@dataclass(frozen=True, slots=True)
class _Opened:
    """A file opened to be sent, in flight: its FileStart, and the bytes it adds to a message."""

    item: _Item
    handle: RawIOBase
    start: pb.FileStart
    encoded_start: bytes
    cost: int  # its data and its WholeFile's other fields


@dataclass(slots=True)
class _InFlight:
    item: _Item
    size: int
    mtime_ns: int
    digest: bytes = b""  # the file's checksum, as sent


@dataclass(frozen=True, slots=True)
class UploadStats:
    """A snapshot for progress displays."""

    files_done: int
    bytes_done: int
    bytes_sent: int
    backlog_files: int
    in_flight: int
    peak_in_flight: int  # most files in flight at once so far (the window's effect, for tests and benches)
    reconnects: int
    connected: bool
    # The host's words while it turns the upload away at its limit (host serve --max-uploads):
    # a busy host, not one that cannot be reached, for the progress lines.
    busy: str = ""
    retrying: bool = False  # the connection broke (or never came up) and is being tried again


@dataclass(frozen=True, slots=True)
class RefusedRun:
    """A run the host took none of (refused, replaced, or its START refused)."""

    run_id: str
    why: str  # the first reason the host gave
    files: int  # its files handed to the uploader: none of them is the session's
    dropped: int  # of those, acknowledged by the host before it dropped them with the run


@dataclass(frozen=True, slots=True)
class UploadReport:
    stored: int
    duplicates: int  # the host had them already (sent again after a crash)
    already: int  # not sent: the journal or the host's list showed them delivered
    bytes_sent: int  # every byte streamed, a refused file's and a resent one's too
    bytes_delivered: int  # the sizes of the files the host holds (stored and duplicates)
    reconnects: int
    problems: tuple[str, ...]  # one line each: refused, vanished, lost on the host
    replaced_runs: tuple[str, ...]
    session: Any = field(repr=False)  # the last SessionInfo the host sent
    refused_runs: tuple[RefusedRun, ...] = ()


class Uploader:
    """Sends the files given to ``add_file`` (and run marks) into one session."""

    def __init__(
        self,
        connect: ChannelFactory,
        open_request: pb.OpenSessionRequest,
        journal: Journal,
        settings: UploadSettings = UploadSettings(),
        target: str = "",
    ) -> None:
        if not 0 < settings.chunk_size <= MAX_CHUNK:
            raise TransferError(f"chunk size {settings.chunk_size} is outside 1..{MAX_CHUNK} bytes")
        self._connect = connect
        self._open = open_request
        self._session = open_request.session
        self._journal = journal
        self._settings = settings
        self._target = target
        self._cond = threading.Condition()
        self._queue: deque[_Item] = deque()
        self._in_flight: dict[tuple[int, str], _InFlight] = {}
        self._in_flight_bytes = 0
        self._taken = 0  # out of the queue, not in flight yet (being opened): not idle meanwhile
        # Answer messages being taken in: out of flight, not yet counted stored or refused
        self._answering = 0
        self._seq = 0
        self._gen = 0
        self._closed = False
        self._aborted = threading.Event()
        self._error: DumpcmpError | None = None
        self._thread: threading.Thread | None = None
        self._call: Any = None
        self._host_files: dict[tuple[int, str], tuple[bytes, int]] = {}  # (checksum, size)
        self._checksum: int = pb.SHA256  # what the files are sent with: the best the host verifies
        self._whole_files = False  # the host takes a small file as one WholeFile message
        self._whole_file_batches = False  # and several of them as one WholeFiles message
        self._last_sync = time.monotonic()
        self._connected = False
        # Not connected and trying to be: from the start until OpenSession answers, and again
        # from a broken connection until the next one is up (not while a finished upload ends).
        self._reaching = True
        self._outage = False  # from a broken or refused connection until the next one is up
        self._busy = ""  # UploadStats.busy
        # counters
        self._stored = self._duplicates = self._already = 0
        self._bytes_done = self._bytes_sent = 0
        self._reconnects = 0
        self._peak_in_flight = 0
        self._problems: list[str] = []
        # The first reason the host gave for refusing a file or mark of each run: the run's other
        # files are refused because of it ("run R was refused: ..."), said once with that cause.
        self._run_refusals: dict[str, str] = {}
        # Of each run: the files the host stored, those it had already, and their bytes; none of
        # them counts once the host says the run is dropped (a refused run's inputs, stored and then
        # dropped with it, were reported "2 files sent"; so were its inputs and rule that the host
        # held as another run's, identical, files).
        self._acked_of_run: dict[str, tuple[int, int, int]] = {}
        self._dropped_runs: set[str] = set()
        self._files_of_run: Counter[str] = Counter()  # files handed over, by run
        self._replaced: list[str] = []
        self.session_info: Any = None

    # -- the caller's side -----------------------------------------------------------------

    def start(self) -> None:
        keep_freed_memory()  # the next message reuses the last one's pages
        self._thread = threading.Thread(target=self._run, name="dumpcmp-upload", daemon=True)
        self._thread.start()

    def add_file(self, kind: pb.FileKind, wire_path: str, local: Path, run_id: str = "") -> None:
        self._add(lambda seq: _Item(seq, kind, wire_path, local, run_id))
        if run_id:
            with self._cond:
                self._files_of_run[run_id] += 1

    def add_run_mark(self, run_id: str, event: pb.RunMark.Event) -> None:
        self._add(lambda seq: _Item(seq, pb.FILE_KIND_UNSPECIFIED, run_id, None, run_id, event))

    def _add(self, make: Callable[[int], _Item]) -> None:
        with self._cond:
            if self._closed:
                raise TransferError("internal: a file was added after the upload was finished")
            self._seq += 1
            self._queue.append(make(self._seq))
            self._cond.notify_all()

    def stats(self) -> UploadStats:
        with self._cond:
            return UploadStats(
                files_done=self._stored + self._duplicates + self._already,
                bytes_done=self._bytes_done,
                bytes_sent=self._bytes_sent,
                backlog_files=len(self._queue),
                in_flight=len(self._in_flight),
                peak_in_flight=self._peak_in_flight,
                reconnects=self._reconnects,
                connected=self._connected,
                busy=self._busy,
                retrying=self._outage,
            )

    @property
    def idle(self) -> bool:
        """Nothing waiting and nothing in flight."""
        with self._cond:
            return not self._queue and not self._in_flight and not self._taken and not self._answering

    @property
    def failed(self) -> bool:
        return self._error is not None

    def run_dropped(self, run_id: str) -> str:
        """Why the host took none of run ``run_id`` (refused or replaced it, or refused its START);
        "" while it counts. Its files still to come would be refused one by one."""
        with self._cond:
            return self._run_refusals.get(run_id, "") if run_id in self._dropped_runs else ""

    def run_replaced(self, run_id: str) -> None:
        """The host replaced run ``run_id`` once every file of it was acknowledged (a later run of
        its model and device, another agent's, started meanwhile): none of it counts any more."""
        with self._cond:
            self._dropped_runs.add(run_id)
            self._run_refusals.setdefault(run_id, REPLACED_REFUSAL.format(run_id))

    @property
    def journal_path(self) -> Path:
        return self._journal.path

    @property
    def stalled(self) -> bool:
        """Running, but without the host: connecting, or waiting to connect again."""
        with self._cond:
            reaching = self._reaching
        return reaching and self._thread is not None and self._thread.is_alive()

    def settle(self, on_wait: Callable[[], None] | None = None) -> None:
        """Wait until everything added so far is acknowledged, the upload staying open for more
        (a hunt's next pass); raise TransferError if the upload failed."""
        while not self.idle and self._error is None:
            with self._cond:
                self._cond.wait(0.1)
            if on_wait is not None:
                on_wait()
        if self._error is not None:
            raise self._error

    def finish(self, on_wait: Callable[[], None] | None = None) -> UploadReport:
        """No more files: wait until every one is acknowledged; raise TransferError if the upload failed."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        thread = self._thread
        while thread is not None and thread.is_alive():
            thread.join(timeout=0.2)
            if on_wait is not None:
                on_wait()
        self._journal.close()
        if self._error is not None:
            raise self._error
        return self.report()

    def abort(self) -> None:
        """Stop now (a second Ctrl-C): what is in flight stays unacknowledged and is sent next time."""
        self._aborted.set()
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        call = self._call
        if call is not None:
            call.cancel()  # an OpenSession waiting for an unreachable host, or the upload stream
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        self._journal.close()

    def report(self) -> UploadReport:
        with self._cond:
            lost = [self._acked_of_run.get(run, (0, 0, 0)) for run in self._dropped_runs]
            return UploadReport(
                stored=self._stored - sum(stored for stored, _dup, _size in lost),
                duplicates=self._duplicates - sum(dup for _stored, dup, _size in lost),
                already=self._already,
                bytes_sent=self._bytes_sent,
                bytes_delivered=self._bytes_done - sum(size for _stored, _dup, size in lost),
                reconnects=self._reconnects,
                problems=tuple(self._problems),
                replaced_runs=tuple(self._replaced),
                session=self.session_info,
                refused_runs=tuple(self._refused_run(run) for run in sorted(self._dropped_runs)),
            )

    def _refused_run(self, run: str) -> RefusedRun:
        """Run ``run`` as the host dropped it (called holding ``_cond``)."""
        stored, duplicates, _size = self._acked_of_run.get(run, (0, 0, 0))
        return RefusedRun(run, self._run_refusals.get(run, ""), self._files_of_run[run], stored + duplicates)

    def close_session(self) -> Any:
        """CloseSession, retried like the upload; returns the host's SessionInfo. Raises
        ``StillStreaming`` when the host leaves the session open because another agent still
        streams into it (said in the call's trailing metadata, not only in its prose)."""
        request = pb.CloseSessionRequest(session=self._session)

        def close(channel: grpc.Channel) -> Any:
            try:
                return pb_grpc.DumpCompareStub(channel).CloseSession(request, timeout=600.0)
            except grpc.RpcError as exc:
                trailing = exc.trailing_metadata() if isinstance(exc, grpc.Call) else None
                if any(key == STREAMING_METADATA for key, _value in trailing or ()):
                    raise StillStreaming(
                        f"session {self._session} left open: another agent is still streaming into it"
                    ) from None
                raise

        return self._with_retries(close)

    # -- the connection thread -------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._with_retries(self._session_pass)
        except DumpcmpError as exc:
            self._error = exc
        finally:
            with self._cond:
                self._connected = False
                self._cond.notify_all()

    def _with_retries(self, action: Callable[[grpc.Channel], Any]) -> Any:
        attempt = 0
        last_progress = time.monotonic()
        while True:
            channel = self._connect()
            progress_before = self._progress_mark()
            try:
                return action(channel)
            except grpc.FutureCancelledError:
                raise TransferError("upload stopped") from None  # abort cancelled the call
            except grpc.RpcError as exc:
                code = exc.code() if hasattr(exc, "code") else grpc.StatusCode.UNKNOWN
                details = (exc.details() if hasattr(exc, "details") else "") or str(code)
                if self._aborted.is_set():
                    raise TransferError("upload stopped") from None
                if code not in _RETRYABLE:
                    # A session closed between the agent's first look and its open: said as then.
                    raise session_closed(exc, self._session, self._target) or call_failed(
                        exc, self._target
                    ) from None
                busy = code == grpc.StatusCode.RESOURCE_EXHAUSTED
                with self._cond:
                    self._reaching = True
                    self._busy = details if busy else ""
                    # A reconnect is counted once an outage: a host killed and restarted was "5
                    # reconnects", one per attempt; a busy host's turning away is none.
                    if not busy and not self._outage:
                        self._reconnects += 1
                    self._outage = not busy
                self._requeue_in_flight()
                if self._progress_mark() != progress_before:
                    attempt, last_progress = 0, time.monotonic()
                waited = time.monotonic() - last_progress
                if waited >= self._settings.give_up:
                    raise TransferError(
                        f"host {self._target}: gave up after {waited:.0f} s without progress "
                        f"({code.name.lower()}: {details}); {self._settings.on_give_up}"
                    ) from None
                delay = min(self._settings.backoff_max, self._settings.backoff_first * 2**attempt)
                delay = min(delay * random.uniform(0.5, 1.0), self._settings.give_up - waited)
                attempt += 1
                log.info("host %s: %s (%s); retrying in %.1f s", self._target, code.name, details, delay)
                if self._aborted.wait(max(delay, 0.0)):
                    raise TransferError("upload stopped") from None
            finally:
                channel.close()

    def _progress_mark(self) -> int:
        with self._cond:
            return self._stored + self._duplicates + self._already + (1 if self._connected else 0)

    def _session_pass(self, channel: grpc.Channel) -> None:
        # A future, not a blocking call, so that abort can cancel it: against a host that does
        # not answer, OpenSession would otherwise hold a stopping agent for its whole timeout.
        info = self._track(
            pb_grpc.DumpCompareStub(channel).OpenSession.future(self._open, timeout=60.0)
        ).result()
        self._reconcile(info)
        with self._cond:
            self._connected = True
            self._reaching = False
            self._outage = False
            self._gen += 1
            gen = self._gen
        try:
            upload = channel.stream_stream(
                _UPLOAD_METHOD, request_serializer=_serialized, response_deserializer=pb.UploadAck.FromString
            )
            # Answers several files a message (UploadAck.more), where the host does that.
            metadata = ((SESSION_METADATA, self._session), (ACKS_METADATA, BATCHED))
            call = self._track(upload(self._requests(gen), metadata=metadata))
            for ack in call:
                self._on_acks([ack, *ack.more])
        finally:
            self._call = None
            with self._cond:
                self._connected = False
                self._gen += 1  # whatever the old request iterator still does is void
                self._cond.notify_all()
        with self._cond:
            unfinished = bool(self._queue or self._in_flight) and not self._aborted.is_set()
        if unfinished:  # the host ended the stream cleanly but early: take it as a dropped connection
            raise _Dropped()

    def _track(self, call: _Call) -> _Call:
        """``call``, made the one ``abort`` cancels (at once, when abort came first)."""
        self._call = call
        if self._aborted.is_set():
            call.cancel()
        return call

    def _reconcile(self, info: Any) -> None:
        """Remember what the host holds; report journal entries the host lost and we cannot resend."""
        self.session_info = info
        held = {(f.kind, f.path): (bytes(f.xxh3_128 or f.sha256), int(f.size)) for f in info.files}
        replaced = set(info.replaced_runs)
        with self._cond:
            self._checksum = pb.XXH3_128 if pb.XXH3_128 in info.checksums else pb.SHA256
            self._whole_files = info.whole_files
            self._whole_file_batches = info.whole_file_batches
            self._host_files = held
            self._replaced = sorted(replaced)
        for entry in self._journal.entries():
            key = (pb.FileKind.Value(entry.kind), entry.path)
            if key in held or entry.run_id in replaced or os.path.exists(entry.local):
                continue
            # Gone here: deleted once acknowledged (--delete-acked), or by hand or a run's cleanup.
            how = "it was deleted here (--delete-acked)" if self._settings.delete_acked else "it is gone here"
            self._problem(
                f"{entry.local}: acknowledged earlier, but the host no longer has it and {how}: "
                "cannot be sent again"
            )

    def _problem(self, line: str) -> None:
        with self._cond:
            if line not in self._problems:
                self._problems.append(line)

    def _requeue_in_flight(self) -> None:
        with self._cond:
            self._gen += 1
            items = sorted((e.item for e in self._in_flight.values()), key=lambda i: i.seq)
            self._in_flight.clear()
            self._in_flight_bytes = 0
            self._queue.extendleft(reversed(items))
            self._cond.notify_all()

    # -- what gRPC's thread pulls ----------------------------------------------------------

    def _requests(self, gen: int) -> Iterator[_Message]:
        """What gRPC sends: messages a reader thread prepared (read from disk, hashed) a few ahead,
        or read as gRPC asks for them (``read_ahead`` 0).

        Reading and hashing on their own thread overlap with gRPC's sending; the queue's bound
        (``read_ahead`` messages) keeps memory independent of file sizes.
        """
        if self._settings.read_ahead == 0:
            yield from self._messages(gen)
            return
        ready: queue.Queue[_Message | None] = queue.Queue(maxsize=self._settings.read_ahead)
        reader = threading.Thread(
            target=self._read_ahead, args=(gen, ready), name="dumpcmp-read", daemon=True
        )
        reader.start()
        while True:
            try:
                message = ready.get(timeout=0.5)
            except queue.Empty:
                if self._stale(gen):
                    return
                continue
            if message is None:
                return
            yield message

    def _stale(self, gen: int) -> bool:
        with self._cond:
            return gen != self._gen or self._aborted.is_set()

    def _read_ahead(self, gen: int, ready: queue.Queue[_Message | None]) -> None:
        for message in self._messages(gen):
            while True:
                try:
                    ready.put(message, timeout=0.5)
                    break
                except queue.Full:
                    if self._stale(gen):
                        return  # the stream is gone; what was registered is requeued already
        ready.put(None)

    def _messages(self, gen: int) -> Iterator[_Message]:
        with self._cond:
            checksum, whole = self._checksum, self._whole_files
            batches = whole and self._whole_file_batches
        pending: _Opened | None = None  # opened for a batch it did not fit: it goes next
        try:
            while True:
                first, pending = pending, None
                if first is None:
                    item = self._next_item(gen)
                    if item is None:
                        return
                    if item.local is None:
                        if not self._register(gen, item, 0, 0):
                            return
                        yield self._run_mark(item)
                        continue
                    first = self._opened(gen, item, checksum)
                    if first is None:
                        continue
                files = [first]
                room = self._settings.chunk_size - first.cost
                # Files waiting right now go with it while their data fits one chunk; none is waited for.
                while batches and room >= 0 and (item := self._next_item(gen, at_most=room)) is not None:
                    opened = self._opened(gen, item, checksum)
                    if opened is None:
                        continue
                    if opened.cost > room:  # with its head (or grown since queued): it starts the next one
                        pending = opened
                        break
                    files.append(opened)
                    room -= opened.cost
                try:
                    if len(files) > 1:
                        yield self._wholes_message(files, checksum)
                    else:
                        yield from self._file_messages(first, checksum, whole)
                finally:
                    for opened in files:
                        opened.handle.close()
        finally:
            if pending is not None:
                pending.handle.close()

    def _run_mark(self, item: _Item) -> pb.UploadMessage:
        return pb.UploadMessage(
            run=pb.RunMark(
                session=self._session,
                run_id=item.path,
                event=item.event,
                agent_id=self._open.uploader.agent_id,
            )
        )

    def _opened(self, gen: int, item: _Item, checksum: int) -> _Opened | None:
        """``item``'s file opened and in flight; None when it is not to be sent, or the stream is gone."""
        prepared = self._prepare(item)
        if prepared is None:
            return None
        handle, size, mtime_ns = prepared
        if not self._register(gen, item, size, mtime_ns):
            handle.close()
            return None
        start = pb.FileStart(
            session=self._session, kind=item.kind, path=item.path, size=size, run_id=item.run_id,
            checksum=checksum,  # type: ignore[arg-type]
        )  # fmt: skip
        encoded = start.SerializeToString()
        return _Opened(item, handle, start, encoded, whole_head_size(encoded, checksum, size) + size)

    def _file_messages(self, file: _Opened, checksum: int, whole: bool) -> Iterator[_Message]:
        """FileStart, data chunks, FileEnd; a file that fits one chunk as one WholeFile, where the
        host takes that (a message costs each side as much as a small file's bytes). Each is read
        straight into the message it goes in (FilledMessage)."""
        item, handle, start, size = file.item, file.handle, file.start, file.start.size
        digest = new_digest(checksum)
        if whole and size <= self._settings.chunk_size:
            message = FilledMessage(file.cost - size, size)
            got = self._read(item, handle, message.data, digest)
            end = self._ended(item, checksum, digest)
            # A file that shrank since it was opened goes as it was read: the host refuses it.
            yield (
                message.done(whole_head(file.encoded_start, end, size))
                if got == size
                else whole_message(start, end, message.data[:got])
            )
            return
        yield pb.UploadMessage(start=start)
        left = size
        while left > 0:
            want = min(self._settings.chunk_size, left)
            message = FilledMessage(len(data_head(want)), want)
            got = self._read(item, handle, message.data, digest)
            if not got:
                break  # shrunk since it was opened, or unreadable: the host refuses it, it is sent again
            left -= got
            yield message.done(data_head(want)) if got == want else data_message(message.data[:got])
        yield pb.UploadMessage(end=self._ended(item, checksum, digest))

    def _wholes_message(self, files: list[_Opened], checksum: int) -> bytes:
        """One WholeFiles message of ``files``, each read straight into its place in it."""
        files_size = sum(file.cost for file in files)
        message = FilledMessage(wholes_head_size(files_size), files_size)
        read: list[tuple[pb.FileStart, pb.FileEnd, memoryview]] = []
        short = False
        at = 0
        for file in files:
            size = file.start.size
            head_size = file.cost - size
            digest = new_digest(checksum)
            data = message.data[at + head_size : at + file.cost]
            got = self._read(file.item, file.handle, data, digest)
            end = self._ended(file.item, checksum, digest)
            message.data[at : at + head_size] = whole_head(file.encoded_start, end, size, in_wholes=True)
            read.append((file.start, end, data[:got]))
            short = short or got < size
            at += file.cost
        # A file that shrank since it was opened goes as it was read: the host refuses it.
        return wholes_message(read) if short else message.done(wholes_head(files_size))

    def _read(self, item: _Item, handle: RawIOBase, view: memoryview, digest: Digest) -> int:
        """Bytes read into ``view``, hashed and counted: all of it, unless the file ends first."""
        got = 0
        try:
            while got < len(view) and (more := handle.readinto(view[got:])):
                got += more
        except OSError as exc:
            log.info("%s: read failed mid-file (%s); the host will refuse it", item.label, exc)
        digest.update(view[:got])
        with self._cond:
            self._bytes_sent += got
        return got

    def _ended(self, item: _Item, checksum: int, digest: Digest) -> pb.FileEnd:
        """The file's FileEnd; its checksum kept for the journal line its acknowledgement writes."""
        with self._cond:
            entry = self._in_flight.get(item.key)
            if entry is not None and entry.item is item:
                entry.digest = digest.digest()
        return file_end(checksum, digest.digest())

    def _next_item(self, gen: int, at_most: int | None = None) -> _Item | None:
        """The next item the window allows; None when the stream is to end. ``at_most``: only a
        file of at most that many bytes, and only if it is there now (None, else: no waiting)."""
        s = self._settings
        with self._cond:
            while True:
                if gen != self._gen or self._aborted.is_set():
                    return None
                for index, item in enumerate(self._queue):
                    if item.key in self._in_flight:
                        continue  # the same file once more: after the host answered the first
                    size = _size(item.local)
                    fits = not self._in_flight or (
                        len(self._in_flight) < s.window_files
                        and self._in_flight_bytes + size <= s.window_bytes
                    )
                    if not fits or (at_most is not None and (item.local is None or size > at_most)):
                        break
                    del self._queue[index]
                    self._taken += 1
                    return item
                else:
                    if self._closed and not self._queue and not self._in_flight:
                        return None
                if at_most is not None:
                    return None
                self._cond.wait(0.5)

    def _register(self, gen: int, item: _Item, size: int, mtime_ns: int) -> bool:
        with self._cond:
            self._taken -= 1
            if gen != self._gen:
                self._queue.appendleft(item)  # the connection broke meanwhile; it goes out next time
                return False
            self._in_flight[item.key] = _InFlight(item, size, mtime_ns)
            self._in_flight_bytes += size
            self._peak_in_flight = max(self._peak_in_flight, len(self._in_flight))
            return True

    def _prepare(self, item: _Item) -> tuple[RawIOBase, int, int] | None:
        """The open file to send, or None when it is not to be sent (delivered, or gone)."""
        assert item.local is not None
        kind = pb.FileKind.Name(item.kind)
        try:
            handle, st = _open_regular(item.local)
        except OSError as exc:
            self._problem(f"{item.local}: not sent: {exc.strerror or exc}")
            self._done_without_sending()
            return None
        if item.run_id:
            # A run's files always go: the run's START may have dropped an unfinished earlier
            # run's copy since the host listed what it holds (the host answers DUPLICATE otherwise).
            return handle, st.st_size, st.st_mtime_ns
        known = self._journal.get(kind, item.path)
        with self._cond:
            held = self._host_files.get((item.kind, item.path))
        if known is not None and (known.size, known.mtime_ns) == (st.st_size, st.st_mtime_ns):
            if held == (bytes.fromhex(known.sha256), known.size):
                handle.close()
                self._delete_held([(item, st.st_size, st.st_mtime_ns)])
                self._done_without_sending()
                return None
            log.info("%s: acknowledged earlier but the host does not hold it; sending again", item.local)
        elif held is not None and held[1] == st.st_size:
            # Delivered before the journal heard of it (the agent died between the host's
            # acknowledgement and the journal line): the checksum decides.
            digest = _checksum_of(handle, held[0])
            if digest == held[0]:
                handle.close()
                self._journal.record(_entry(item, kind, st.st_size, digest, st.st_mtime_ns))
                self._delete_held([(item, st.st_size, st.st_mtime_ns)])
                self._done_without_sending()
                return None
            handle.seek(0)
        return handle, st.st_size, st.st_mtime_ns

    def _done_without_sending(self) -> None:
        with self._cond:
            self._taken -= 1
            self._already += 1
            self._cond.notify_all()

    # -- acknowledgements ------------------------------------------------------------------

    def _on_acks(self, acks: list[Any]) -> None:
        """The host's answers of one message: the files it holds journaled together (one write).
        Not idle until each is counted stored or refused: a caller that waits for idle then reads
        the report (the files a watch sends first) sees every answer in it."""
        with self._cond:
            self._answering += 1
            self._busy = ""  # answered: the host took the upload
        try:
            held = [answer for ack in acks for answer in self._on_ack(ack)]
            if held:
                self._acknowledged(held)
        finally:
            with self._cond:
                self._answering -= 1
                self._cond.notify_all()
        self._maybe_sync()

    def _on_ack(self, ack: Any) -> list[tuple[_InFlight, bool]]:
        """The file ``ack`` says the host holds (and whether it had it already), or nothing."""
        status = ack.status
        with self._cond:
            if ack.kind == pb.FILE_KIND_UNSPECIFIED and not ack.path:  # a run mark's answer, any status
                key = next((k for k in self._in_flight if k[0] < 0 and k[1] == ack.run_id), None)
            else:
                key = (ack.kind, ack.path)
            entry = self._in_flight.pop(key, None) if key is not None else None
            if entry is not None:
                self._in_flight_bytes -= entry.size
            self._cond.notify_all()
        if entry is None:
            log.warning(
                "host acknowledged %s %r, which is not in flight", pb.FileKind.Name(ack.kind), ack.path
            )
            return []
        item = entry.item
        if status == pb.UploadAck.RUN_ACCEPTED:
            if ack.message:
                log.info("run %s: %s", item.path, ack.message)
        elif status in (pb.UploadAck.STORED, pb.UploadAck.DUPLICATE):
            return [(entry, status == pb.UploadAck.DUPLICATE)]
        elif status == pb.UploadAck.CHECKSUM_MISMATCH and item.resends < self._settings.max_resends:
            with self._cond:
                self._queue.appendleft(_replace_resends(item))
                self._cond.notify_all()
        else:
            why = ack.message or pb.UploadAck.Status.Name(status).lower()
            if item.run_id:
                with self._cond:
                    # A refused START: the session takes nothing of the run (it is closed or closing).
                    if ack.run_dropped or (item.local is None and item.event == pb.RunMark.START):
                        self._dropped_runs.add(item.run_id)
                    refused_before = item.run_id in self._run_refusals
                    why = self._run_refusals.setdefault(item.run_id, why)
                if refused_before and item.local is None:
                    return []  # a run mark of a run already refused: no file, nothing more to say
            self._problem(f"{item.label}{REFUSED}{why}")
        return []

    def _acknowledged(self, held: list[tuple[_InFlight, bool]]) -> None:
        self._journal.record(
            *(_entry(e.item, pb.FileKind.Name(e.item.kind), e.size, e.digest, e.mtime_ns) for e, _dup in held)
        )
        with self._cond:
            for entry, duplicate in held:
                if duplicate:
                    self._duplicates += 1
                else:
                    self._stored += 1
                if run := entry.item.run_id:
                    stored, duplicates, size = self._acked_of_run.get(run, (0, 0, 0))
                    self._acked_of_run[run] = (
                        stored + (not duplicate),
                        duplicates + duplicate,
                        size + entry.size,
                    )
                self._bytes_done += entry.size
        self._delete_held([(e.item, e.size, e.mtime_ns) for e, _dup in held])

    def _delete_held(self, held: list[tuple[_Item, int, int]]) -> None:
        """With --delete-acked, the dump files of ``held`` (item, size, mtime) the host holds and
        the journal names, unless changed since they were read."""
        doomed = [h for h in held if self._settings.delete_acked and h[0].kind == pb.DUMP]
        if doomed:
            self._journal.sync()  # durable before the files are gone for good: one fsync for them all
        for item, size, mtime_ns in doomed:
            local = item.local
            assert local is not None
            try:
                st = local.stat()
                if (st.st_size, st.st_mtime_ns) == (size, mtime_ns):
                    local.unlink()
            except OSError as exc:
                log.info("%s: not deleted (%s)", local, exc)

    def _maybe_sync(self) -> None:
        now = time.monotonic()
        if now - self._last_sync >= self._settings.sync_every:
            self._journal.sync()
            self._last_sync = now


# A data message goes out already encoded (see data_message); the others as protobuf messages.
_Message = pb.UploadMessage | bytes
_UPLOAD_METHOD = "/{}/Upload".format(pb.DESCRIPTOR.services_by_name["DumpCompare"].full_name)


def _serialized(message: _Message) -> bytes:
    return message if isinstance(message, bytes) else message.SerializeToString()


class _Dropped(grpc.RpcError):
    """The host closed the upload stream with files still unanswered."""

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE

    def details(self) -> str:
        return "the host ended the upload stream before answering every file"


def _replace_resends(item: _Item) -> _Item:
    return _Item(item.seq, item.kind, item.path, item.local, item.run_id, item.event, item.resends + 1)


def _entry(item: _Item, kind: str, size: int, digest: bytes, mtime_ns: int) -> JournalEntry:
    return JournalEntry(kind, item.path, size, digest.hex(), mtime_ns, str(item.local), item.run_id)


def _size(local: Path | None) -> int:
    if local is None:
        return 0
    try:
        return local.stat().st_size
    except OSError:
        return 0


def _open_regular(path: Path) -> tuple[RawIOBase, os.stat_result]:
    """``path`` opened to be sent, and its status: a regular file, never through a symbolic link.

    The watcher passes links over when it lists a directory, but a file can become a link
    (``ln -sf /etc/shadow``) between then and this open: only what the open itself finds counts.
    Unbuffered: reads go straight into the messages, through no buffer of the file object's."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, LINK_NOT_FOLLOWED) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return os.fdopen(fd, "rb", buffering=0), st  # type: ignore[return-value]
    except BaseException:
        os.close(fd)
        raise


def _checksum_of(handle: RawIOBase, like: bytes) -> bytes:
    """The file's checksum of the kind ``like`` is (a digest's length tells SHA-256's from XXH3-128's)."""
    digest = new_digest(pb.SHA256 if len(like) == 32 else pb.XXH3_128)
    while block := handle.read(1024 * 1024):
        digest.update(block)
    return digest.digest()
