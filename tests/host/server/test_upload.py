"""Uploads: stored and acknowledged once on disk, duplicates, checksum mismatches, bad streams."""

from __future__ import annotations

import errno
import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
import xxhash

from dumpcmp.host.server.files import INCOMING_DIR, IncomingDirs, IncomingFile
from dumpcmp.host.server.serve import HostServer
from dumpcmp.host.server.store import StoredFile
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from dumpcmp.proto.channel import MAX_CHUNK
from dumpcmp.proto.upload_wire import file_end, read_upload_message, wholes_message
from tests.durability import FsyncLog
from tests.host.server.hostkit import CALL_TIMEOUT_S, Client, Hosts, file_messages

Ack = pb.UploadAck
DUMP = pb.DUMP


def test_stored_file_is_on_disk_with_its_checksum(client: Client, host: HostServer, tmp_path: Path) -> None:
    client.open("s1")
    data = bytes(range(256)) * 5000  # several chunks of 300 KiB
    acks = client.upload(file_messages("s1", DUMP, "t/0/m/1/0/Add.a.1.2", data, chunk=300 * 1024))
    assert [(a.status, a.path) for a in acks] == [(Ack.STORED, "t/0/m/1/0/Add.a.1.2")]
    stored = tmp_path / "data/sessions/s1/dump/t/0/m/1/0/Add.a.1.2"
    assert stored.read_bytes() == data
    (listed,) = client.info("s1").files
    assert (listed.path, listed.size, listed.sha256) == (
        "t/0/m/1/0/Add.a.1.2",
        len(data),
        hashlib.sha256(data).digest(),
    )
    assert not any((tmp_path / "data/sessions/s1/.incoming").iterdir())


def test_each_new_directory_is_durable_in_its_parent_before_a_file_in_it_is_acknowledged(
    hosts: Hosts, tmp_path: Path, fsync_log: FsyncLog
) -> None:
    # strace showed mkdirat of dump/ and its children without an fsync of the parent: a file
    # acknowledged there could vanish in a power cut, and with --delete-acked the agent's copy too.
    data = tmp_path.resolve() / "data"
    client = hosts.client(hosts.start(data))
    client.open("s1")
    (ack,) = client.upload(file_messages("s1", DUMP, "t/0/m/Add.a.1.2", b"x"))
    at_ack = list(fsync_log.events)
    assert ack.status == Ack.STORED
    session = data / "sessions" / "s1"
    made = set(fsync_log.made(data.parent))
    assert {data, data / "sessions", session, session / "dump", session / "dump/t/0/m"} <= made
    assert fsync_log.unsynced(at_ack) == []


def test_the_same_file_again_is_a_duplicate(client: Client) -> None:
    client.open("s1")
    files = {(DUMP, "a/Add.x.1.2"): b"abc", (pb.GOLDEN, "x.0.1.npy"): b"def"}
    assert [a.status for a in client.send("s1", files)] == [Ack.STORED, Ack.STORED]
    assert [a.status for a in client.send("s1", files)] == [Ack.DUPLICATE, Ack.DUPLICATE]
    assert len(client.info("s1").files) == 2


def test_checksum_mismatch_is_not_stored_and_a_resend_is(client: Client, tmp_path: Path) -> None:
    client.open("s1")
    (ack,) = client.upload(
        file_messages("s1", DUMP, "a/f", b"payload", sha256=hashlib.sha256(b"other").digest())
    )
    assert ack.status == Ack.CHECKSUM_MISMATCH
    assert not (tmp_path / "data/sessions/s1/dump/a/f").exists()
    assert not client.info("s1").files
    (ack,) = client.upload(file_messages("s1", DUMP, "a/f", b"payload"))
    assert ack.status == Ack.STORED


def test_more_or_fewer_bytes_than_announced_is_a_mismatch(client: Client) -> None:
    client.open("s1")
    short = file_messages("s1", DUMP, "a/f", b"payload")
    short[0].start.size = 100
    long = file_messages("s1", DUMP, "a/g", b"payload")
    long[0].start.size = 3
    acks = client.upload(short + long)
    assert [a.status for a in acks] == [Ack.CHECKSUM_MISMATCH, Ack.CHECKSUM_MISMATCH]
    assert "bytes received" in acks[0].message


def test_unknown_and_closed_sessions_are_refused_per_file(client: Client) -> None:
    acks = client.upload(
        file_messages("nobody", DUMP, "a/f", b"x") + file_messages("bad/name", DUMP, "a/f", b"x")
    )
    assert [a.status for a in acks] == [Ack.REFUSED, Ack.REFUSED]
    assert "nobody" in acks[0].message


def test_file_over_the_size_limit_is_refused(hosts: Hosts, tmp_path: Path) -> None:
    server = hosts.start(tmp_path / "data", max_file_size=10)
    client = hosts.client(server)
    client.open("s1")
    acks = client.upload(
        file_messages("s1", DUMP, "big", b"x" * 11) + file_messages("s1", DUMP, "small", b"x" * 10)
    )
    assert [a.status for a in acks] == [Ack.REFUSED, Ack.STORED]
    # It read "(4, '11 bytes: ...')": the exception was given the status as well.
    assert acks[0].message == "11 bytes: larger than this host's limit of 10"


@pytest.mark.parametrize(
    ("messages", "said"),
    [
        ([pb.UploadMessage(data=b"x")], "data before FileStart"),
        ([pb.UploadMessage(end=pb.FileEnd())], "FileEnd before FileStart"),
        ([pb.UploadMessage()], "empty"),
        (file_messages("s1", DUMP, "a", b"x")[:1] * 2, "inside file"),
        (file_messages("s1", DUMP, "a", b"x")[:2], "stream ended inside file"),
    ],
)
def test_malformed_stream_ends_that_upload_only(
    client: Client, status_of: Callable[..., grpc.StatusCode], messages: list[pb.UploadMessage], said: str
) -> None:
    client.open("s1")
    good = file_messages("s1", DUMP, "ok", b"fine")
    with pytest.raises(grpc.RpcError) as caught:
        client.upload(good + messages)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert said in caught.value.details()  # type: ignore[attr-defined]
    # The file acknowledged before stays; the server goes on serving.
    assert [f.path for f in client.info("s1").files] == ["ok"]
    assert [a.status for a in client.upload(file_messages("s1", DUMP, "next", b"x"))] == [Ack.STORED]


@pytest.mark.parametrize(
    ("size", "code"),
    [
        (MAX_CHUNK + 1, grpc.StatusCode.INVALID_ARGUMENT),  # the protocol's limit, checked by the host
        (6 * 1024 * 1024, grpc.StatusCode.RESOURCE_EXHAUSTED),  # over the message limit, refused by gRPC
    ],
)
def test_over_long_chunk_ends_the_upload_only(client: Client, size: int, code: grpc.StatusCode) -> None:
    client.open("s1")
    with pytest.raises(grpc.RpcError) as caught:
        client.upload(file_messages("s1", DUMP, "a", b"x" * size, chunk=size))
    assert caught.value.code() == code  # type: ignore[attr-defined]
    assert not client.info("s1").files
    assert [a.status for a in client.upload(file_messages("s1", DUMP, "a", b"x" * size))] == [Ack.STORED]


def test_a_session_of_many_files_is_listed_whole(client: Client, host: HostServer) -> None:
    client.open("s1")
    for i in range(5000):  # a SessionInfo of about 5 MB: more than one upload message may hold
        host.service.store.add_files("s1", [StoredFile(pb.DUMP, f"{i:04d}/" + "x" * 1000, 1, b"\0" * 32)])
    assert len(client.info("s1").files) == 5000


def test_a_file_of_a_run_replaced_while_it_was_on_the_way_is_refused(client: Client, tmp_path: Path) -> None:
    client.open("s1")
    start = pb.RunMark(session="s1", run_id="r1", event=pb.RunMark.START)
    assert client.upload([pb.UploadMessage(run=start)])[0].status == Ack.RUN_ACCEPTED
    replaced = threading.Event()
    messages = file_messages("s1", DUMP, "late", b"data of r1", run_id="r1")

    def stream() -> Iterator[pb.UploadMessage]:
        yield from messages[:-1]
        assert replaced.wait(CALL_TIMEOUT_S)
        yield messages[-1]

    acks: list[pb.UploadAck] = []
    sender = threading.Thread(
        target=lambda: acks.extend(client.stub.Upload(stream(), timeout=CALL_TIMEOUT_S))
    )
    sender.start()
    incoming = tmp_path / "data/sessions/s1/.incoming"
    deadline = time.monotonic() + CALL_TIMEOUT_S
    while not (incoming.is_dir() and any(incoming.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.01)  # until the host is receiving the file
    try:
        start2 = pb.RunMark(session="s1", run_id="r2", event=pb.RunMark.START)
        assert client.upload([pb.UploadMessage(run=start2)])[0].message == "replaced runs: r1"
    finally:
        replaced.set()
        sender.join(CALL_TIMEOUT_S)
    assert [(a.status, a.message) for a in acks] == [(Ack.REFUSED, "run r1 was replaced by a later run")]
    assert not client.info("s1").files
    assert not (tmp_path / "data/sessions/s1/dump/late").exists()


def test_a_failing_disk_ends_the_upload_with_resource_exhausted(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    client.open("s1")

    def full_disk(self: IncomingFile, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(IncomingFile, "write", full_disk)
    with pytest.raises(grpc.RpcError) as caught:
        client.upload(file_messages("s1", DUMP, "a", b"data"))
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
    assert "No space left on device" in caught.value.details()  # type: ignore[attr-defined]
    monkeypatch.undo()
    assert [a.status for a in client.upload(file_messages("s1", DUMP, "a", b"data"))] == [Ack.STORED]


def test_each_file_is_answered_before_the_client_sends_more(client: Client) -> None:
    # An agent whose window is full sends nothing until an answer comes: the host must answer a
    # file it has made durable without waiting for the stream's next message.
    client.open("s1")
    answered: list[pb.UploadAck] = []
    got_one = threading.Condition()

    def stream() -> Iterator[pb.UploadMessage]:
        for number in range(3):
            yield from file_messages("s1", DUMP, f"f{number}", b"x" * 1000)
            with got_one:
                assert got_one.wait_for(lambda n=number: len(answered) > n, CALL_TIMEOUT_S)

    for ack in client.stub.Upload(stream(), timeout=CALL_TIMEOUT_S):
        with got_one:
            answered.append(ack)
            got_one.notify_all()
    assert [(a.path, a.status) for a in answered] == [(f"f{n}", Ack.STORED) for n in range(3)]


def test_a_cancelled_upload_leaves_no_partial_files(client: Client, tmp_path: Path) -> None:
    client.open("s1")
    whole = file_messages("s1", DUMP, "whole", b"w" * 100)
    half = file_messages("s1", DUMP, "half", b"h" * 3000, chunk=1000)[:2]
    sent = threading.Event()

    def stream() -> Iterator[pb.UploadMessage]:
        yield from whole + half
        sent.set()
        time.sleep(CALL_TIMEOUT_S)  # cancelled before it ends

    call = client.stub.Upload(stream(), timeout=CALL_TIMEOUT_S)
    assert next(call).path == "whole"
    assert sent.wait(CALL_TIMEOUT_S)
    call.cancel()
    incoming = tmp_path / "data/sessions/s1/.incoming"
    deadline = time.monotonic() + CALL_TIMEOUT_S
    while any(incoming.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.01)  # the host notices the cancellation and drops the half file
    assert not any(incoming.iterdir())
    assert [f.path for f in client.info("s1").files] == ["whole"]


def test_a_stream_finds_its_sessions_incoming_directory_once_not_for_every_file(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each file received made sure of ``.incoming`` again: three mkdirs and four opens a file."""
    made: list[str] = []
    real_mkdir = os.mkdir

    def mkdir(path: str, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        made.append(os.fspath(path))
        real_mkdir(path, mode, dir_fd=dir_fd)

    client.open("s1")
    monkeypatch.setattr(os, "mkdir", mkdir)
    acks = client.send("s1", {(DUMP, f"f{number}"): b"x" for number in range(20)})
    assert [a.status for a in acks] == [Ack.STORED] * 20
    assert made.count(INCOMING_DIR) == 1


def test_incoming_directories_are_opened_again_once_a_while(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dirs = IncomingDirs(tmp_path)
    first = dirs.get("s1")
    assert dirs.get("s1") == first and os.path.samefile(
        f"/proc/self/fd/{first}", tmp_path / "sessions/s1/.incoming"
    )
    monkeypatch.setattr(IncomingDirs, "FRESH_S", -1.0)
    second = dirs.get("s1")  # the old one closed first: the same number may come back
    assert os.path.samefile(f"/proc/self/fd/{second}", tmp_path / "sessions/s1/.incoming")
    dirs.close()
    with pytest.raises(OSError):
        os.fstat(second)


def test_short_writes_are_written_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write
    monkeypatch.setattr(
        os, "write", lambda fd, data: real_write(fd, bytes(data)[:7])
    )  # a slow pipe, a full disk
    incoming = IncomingFile(tmp_path, "s1", DUMP, ("a",))
    data = bytes(range(256)) * 4
    incoming.write(data)
    incoming.write(memoryview(data)[:100])
    monkeypatch.undo()
    stored = incoming.commit()
    assert stored.read_bytes() == data + data[:100]
    assert incoming.digest() == hashlib.sha256(data + data[:100]).digest()


class _EndingCall:
    """A servicer context whose call ends when the test says (an agent killed mid-stream)."""

    def __init__(self) -> None:
        self.active = True

    def is_active(self) -> bool:
        return self.active

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return ()

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise AssertionError(f"aborted: {code} {details}")


def test_files_sent_together_after_the_call_ended_leave_no_temporary(tmp_path: Path) -> None:
    # The first file of a WholeFiles message was discarded when the call was found over, the
    # others stayed in .incoming (an agent killed mid-stream, then rerun: e2e watch test).
    from dumpcmp.host.server.service import DumpCompareService

    service = DumpCompareService(tmp_path / "data")
    call = _EndingCall()
    service.OpenSession(pb.OpenSessionRequest(session="s1"), call)

    def whole(path: str) -> tuple[pb.FileStart, pb.FileEnd, bytes]:
        start = pb.FileStart(session="s1", kind=DUMP, path=path, size=1, checksum=pb.XXH3_128)
        return start, file_end(pb.XXH3_128, xxhash.xxh3_128(b"x").digest()), b"x"

    call_over = threading.Event()

    def stream() -> Iterator[object]:
        yield read_upload_message(wholes_message([whole("first")]))
        assert call_over.wait(CALL_TIMEOUT_S)
        yield read_upload_message(wholes_message([whole(f"late{n}") for n in range(3)]))

    answers = service.Upload(stream(), call)  # type: ignore[arg-type]
    answering = threading.Thread(target=lambda: list(answers))
    answering.start()
    deadline = time.monotonic() + CALL_TIMEOUT_S
    while not service.store.files("s1") and time.monotonic() < deadline:
        time.sleep(0.01)  # the first file is stored
    receiver = next(t for t in threading.enumerate() if t.name == "dumpcmp-recv")
    call.active = False
    answering.join(CALL_TIMEOUT_S)
    assert not answering.is_alive()
    call_over.set()
    receiver.join(CALL_TIMEOUT_S)
    assert not receiver.is_alive()
    assert not any((tmp_path / "data/sessions/s1/.incoming").iterdir())
    assert [f.path for f in service.store.files("s1")] == ["first"]
    service.stop()


def test_a_file_finished_after_its_call_ended_leaves_no_temporary(tmp_path: Path) -> None:
    # Under load, the receiving thread can finish a file the killed agent had sent just after the
    # answering side gave up on the call: nobody would answer it, its .part stayed until a restart.
    from dumpcmp.host.server.service import DumpCompareService

    service = DumpCompareService(tmp_path / "data")
    call = _EndingCall()
    service.OpenSession(pb.OpenSessionRequest(session="s1"), call)
    *sent, last = file_messages("s1", DUMP, "late", b"l" * 3000, chunk=1000)
    call_over = threading.Event()

    def stream() -> Iterator[pb.UploadMessage]:
        yield from sent
        assert call_over.wait(CALL_TIMEOUT_S)
        yield last  # was buffered: the receiving thread gets it after the call ended

    incoming = tmp_path / "data/sessions/s1/.incoming"
    answers = service.Upload(stream(), call)
    answering = threading.Thread(target=lambda: list(answers))
    answering.start()
    deadline = time.monotonic() + CALL_TIMEOUT_S
    while not (incoming.is_dir() and any(incoming.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.01)  # the file is being received
    receiver = next(t for t in threading.enumerate() if t.name == "dumpcmp-recv")
    call.active = False
    answering.join(CALL_TIMEOUT_S)  # the answering side notices the call is over and stops
    assert not answering.is_alive()
    call_over.set()
    receiver.join(CALL_TIMEOUT_S)
    assert not receiver.is_alive()
    assert not any(incoming.iterdir())
    assert service.store.files("s1") == []
    service.stop()
