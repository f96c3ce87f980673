"""The host's commit path: group commit keeps durability before acknowledgement; the checksums."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import grpc
import pytest
import xxhash

from dumpcmp.agent.uploader import UploadSettings
from dumpcmp.commands.sim import simulate
from dumpcmp.host.server import files as host_files
from dumpcmp.host.server.service import DumpCompareService
from dumpcmp.host.server.store import SessionStore, StoredFile
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from dumpcmp.proto.channel import MAX_CHUNK
from dumpcmp.proto.upload_wire import (
    ACKS_METADATA,
    BATCHED,
    data_message,
    file_end,
    read_upload_message,
    whole_message,
    wholes_message,
)
from tests.agent.recording_host import uploader_for
from tests.host.server.hostkit import Client, Hosts, file_messages, session_settings, simulation_files

Ack = pb.UploadAck
DUMP = pb.DUMP


@pytest.fixture(name="client")
def client_fixture(hosts: Hosts, tmp_path: Path) -> Client:
    return hosts.client(hosts.start(tmp_path / "data"))


class _Call:
    """A servicer context whose call stays active."""

    def is_active(self) -> bool:
        return True

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return ()

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise AssertionError(f"aborted: {code} {details}")


def _fd_path(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


@pytest.mark.parametrize("syncfs", [True, False], ids=["syncfs", "fdatasync"])
def test_no_file_is_acknowledged_before_it_and_its_directory_are_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, syncfs: bool
) -> None:
    """Files finished together are committed together, and each answer still comes after its
    file is durable (its fdatasync, or a syncfs after its last write), its rename, its
    directory's fsync and its store row; with syncfs (Linux 5.8+) or without."""
    events: list[tuple[str, str]] = []
    lock = threading.Lock()
    first_sync = threading.Event()
    real_fdatasync, real_fsync, real_replace, real_write = os.fdatasync, os.fsync, os.replace, os.write
    real_add_files = SessionStore.add_files

    def record(event: str, what: str) -> None:
        with lock:
            events.append((event, what))

    def write(fd: int, data: bytes) -> int:
        if _fd_path(fd).endswith(".part"):
            record("write", Path(_fd_path(fd)).name)
        return real_write(fd, data)

    def sync_file_system(fd: int) -> int:
        record("syncfs", "")
        os.sync()  # what syncfs does, for every file system
        return 0

    monkeypatch.setattr(os, "write", write)
    monkeypatch.setattr(host_files, "_SYNCFS", sync_file_system if syncfs else None)

    def fdatasync(fd: int) -> None:
        if not first_sync.is_set():
            first_sync.set()
            time.sleep(0.3)  # a slow disk: the files behind the first one finish meanwhile
        record("fdatasync", Path(_fd_path(fd)).name)
        real_fdatasync(fd)

    def fsync(fd: int) -> None:
        record("fsync", _fd_path(fd))
        real_fsync(fd)

    def replace(src: str, dst: str, *, src_dir_fd: int, dst_dir_fd: int) -> None:
        record("rename", f"{src} {_fd_path(dst_dir_fd)}/{dst}")
        real_replace(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    def add_files(store: SessionStore, session: str, files: list[StoredFile]) -> list[str]:
        refused = real_add_files(store, session, files)
        for f in files:
            record("stored", f.path)
        return refused

    monkeypatch.setattr(os, "fdatasync", fdatasync)
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(SessionStore, "add_files", add_files)

    service = DumpCompareService(tmp_path / "data")
    call = _Call()
    service.OpenSession(pb.OpenSessionRequest(session="s1"), call)
    names = [f"d{n % 2}/f{n}" for n in range(12)]
    messages = [
        m
        for name in names
        for m in file_messages("s1", DUMP, name, name.encode() * 100, checksum=pb.XXH3_128)
    ]
    for ack in service.Upload(iter(messages), call):
        assert ack.status == Ack.STORED, ack.message
        record("ack", ack.path)
    service.stop()

    def at(event: str, test: object) -> int:
        matches = [i for i, (e, what) in enumerate(events) if e == event and test(what)]  # type: ignore[operator]
        assert matches, (event, events)
        return matches[0]

    dump = tmp_path / "data/sessions/s1/dump"
    for name in names:
        acked = at("ack", lambda what, n=name: what == n)
        renamed = at("rename", lambda what, n=name: what.endswith(f" {dump / n}"))
        part = events[renamed][1].split()[0]
        written = max(i for i, (e, what) in enumerate(events) if e == "write" and what == part)
        durable = [
            i
            for i, (e, what) in enumerate(events)
            if (e == "fdatasync" and what == part) or (e == "syncfs" and i > written)
        ]
        assert durable and durable[0] < renamed, f"{name}: renamed into place before it was durable"
        directory = str((dump / name).parent)
        synced = [
            i for i, (e, what) in enumerate(events) if e == "fsync" and what == directory and i > renamed
        ]
        assert synced and synced[0] < acked, f"{name}: answered before its directory was fsynced"
        assert at("stored", lambda what, n=name: what == n) < acked
    # Committed in groups: fewer directory fsyncs and store commits than files.
    assert sum(e == "fsync" and what.startswith(str(dump)) for e, what in events) < len(names)
    # With syncfs, one for each group (a file committed alone is fdatasynced).
    fdatasyncs = sum(e == "fdatasync" for e, _what in events)
    if syncfs:
        assert ("syncfs", "") in events and fdatasyncs < len(names)
    else:
        assert fdatasyncs == len(names)
    assert (dump / names[-1]).read_bytes() == names[-1].encode() * 100


@pytest.mark.parametrize("syncfs", [None, lambda fd: -1], ids=["without-syncfs", "syncfs-failed"])
def test_a_failed_fdatasync_refuses_that_file_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, syncfs: object
) -> None:
    """A failed syncfs says not which file failed: each file of the group is fdatasynced then."""
    monkeypatch.setattr(host_files, "_SYNCFS", syncfs)
    real_fdatasync, real_open = os.fdatasync, os.open
    parts: list[str] = []  # temporary names, in the order the files arrive

    def open_(path: str, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if str(path).endswith(".part"):
            parts.append(str(path))
        return real_open(path, flags, mode, dir_fd=dir_fd)

    def fdatasync(fd: int) -> None:
        if Path(_fd_path(fd)).name in parts[1:2]:  # the second file's disk write failed
            raise OSError(5, "Input/output error")
        real_fdatasync(fd)

    service = DumpCompareService(tmp_path / "data")
    call = _Call()
    service.OpenSession(pb.OpenSessionRequest(session="s1"), call)
    messages = [m for name in ("a", "b", "c") for m in file_messages("s1", DUMP, name, b"x" * 10)]
    monkeypatch.setattr(os, "open", open_)
    monkeypatch.setattr(os, "fdatasync", fdatasync)
    acks = list(service.Upload(iter(messages), call))
    stored = [f.path for f in service.store.files("s1")]
    service.stop()
    assert [(a.path, a.status) for a in acks] == [("a", Ack.STORED), ("b", Ack.REFUSED), ("c", Ack.STORED)]
    assert "Input/output error" in acks[1].message
    assert stored == ["a", "c"]
    assert not any((tmp_path / "data/sessions/s1/.incoming").iterdir())


def test_one_syncfs_is_asked_through_the_earliest_opened_file_of_the_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """syncfs reports write errors since its descriptor's open: through the first file of the
    list, a background write error of a file opened before it went unreported."""
    asked: list[int] = []
    monkeypatch.setattr(host_files, "_SYNCFS", lambda fd: asked.append(fd) or 0)
    first = host_files.IncomingFile(tmp_path, "s1", DUMP, ("a",))
    second = host_files.IncomingFile(tmp_path, "s1", DUMP, ("b",))
    earliest = first._fd
    assert host_files.commit_all([second, first]) == [None, None]
    assert asked == [earliest]


def test_an_xxh3_file_is_stored_and_listed_with_its_checksum(client: Client) -> None:
    assert list(client.open("s1").checksums) == [pb.XXH3_128]
    data = bytes(range(256)) * 50
    acks = client.upload(file_messages("s1", DUMP, "a/f", data, chunk=1000, checksum=pb.XXH3_128))
    assert [a.status for a in acks] == [Ack.STORED]
    (listed,) = client.info("s1").files
    assert (listed.xxh3_128, listed.sha256) == (xxhash.xxh3_128(data).digest(), b"")
    again = client.upload(file_messages("s1", DUMP, "a/f", data, checksum=pb.XXH3_128))
    assert [a.status for a in again] == [Ack.DUPLICATE]


def test_a_corrupted_chunk_is_refused_with_either_checksum(client: Client, tmp_path: Path) -> None:
    client.open("s1")
    data = b"0123456789" * 1000
    for checksum in (pb.XXH3_128, pb.SHA256):
        messages = file_messages("s1", DUMP, "f", data, chunk=4000, checksum=checksum)
        corrupted = bytearray(messages[2].data)
        corrupted[17] ^= 0x01  # one bit flipped in transit
        messages[2] = pb.UploadMessage(data=bytes(corrupted))
        (ack,) = client.upload(messages)
        assert ack.status == Ack.CHECKSUM_MISMATCH
        assert pb.Checksum.Name(checksum) in ack.message
    assert list(client.info("s1").files) == []
    assert not (tmp_path / "data/sessions/s1/dump/f").exists()


def test_an_older_agents_sha256_upload_is_still_stored(client: Client) -> None:
    client.open("s1")
    messages = file_messages("s1", DUMP, "old", b"from an older agent")
    messages[0].start.ClearField("checksum")  # an agent that knows no checksum but SHA-256
    assert [a.status for a in client.upload(messages)] == [Ack.STORED]
    assert len(client.info("s1").files[0].sha256) == 32


def test_a_checksum_this_host_does_not_know_is_refused_in_one_line(client: Client) -> None:
    client.open("s1")
    messages = file_messages("s1", DUMP, "f", b"data")
    messages[0].start.checksum = 7  # type: ignore[assignment]
    (ack,) = client.upload(messages)
    assert (ack.status, ack.message) == (Ack.REFUSED, "unknown checksum 7 (a newer agent: update this host)")


@pytest.mark.parametrize("size", [0, 1, 127, 128, 16384, 1024 * 1024 + 3])
def test_a_data_message_is_decoded_as_a_view_of_the_received_bytes(size: int) -> None:
    data = bytes(i % 251 for i in range(size))
    decoded = read_upload_message(data_message(data))
    assert isinstance(decoded, memoryview) and decoded == data


def test_several_whole_files_are_decoded_each_as_views_of_the_received_bytes() -> None:
    files = [
        (pb.FileStart(session="s", path=f"d/{n}", size=n * 100), pb.FileEnd(xxh3_128=bytes([n]) * 16),
         bytes([n]) * n * 100)
        for n in range(4)
    ]  # fmt: skip
    decoded = read_upload_message(wholes_message(files))
    assert isinstance(decoded, tuple)
    assert [(w.start, w.end, w.data) for w in decoded] == files
    assert all(isinstance(w.data, memoryview) for w in decoded)
    # Anything but WholeFiles of WholeFile entries (valid protobuf, never what an agent sends): parsed.
    odd = pb.UploadMessage(wholes=pb.WholeFiles(files=[pb.WholeFile(data=b"x")])).SerializeToString()
    odd = odd[:2] + b"\x12" + odd[3:]  # the entry as a field 2, which WholeFiles does not have
    assert read_upload_message(odd) == pb.UploadMessage.FromString(odd)


def test_any_other_message_is_decoded_by_protobuf() -> None:
    start = pb.UploadMessage(start=pb.FileStart(session="s", path="p", size=3))
    assert read_upload_message(start.SerializeToString()) == start
    # A data field followed by another field (valid protobuf, never what an agent sends): parsed.
    odd = data_message(b"abc") + pb.UploadMessage(end=pb.FileEnd(sha256=b"x")).SerializeToString()
    assert read_upload_message(odd) == pb.UploadMessage.FromString(odd)
    truncated = data_message(b"abcdef")[:-1]
    with pytest.raises(Exception):  # noqa: B017  protobuf's DecodeError: the stream's error status
        read_upload_message(truncated)


def _whole(session: str, path: str, data: bytes, *, digest: bytes | None = None) -> bytes:
    start = pb.FileStart(session=session, kind=DUMP, path=path, size=len(data), checksum=pb.XXH3_128)
    return whole_message(start, file_end(pb.XXH3_128, digest or xxhash.xxh3_128(data).digest()), data)


def _raw_upload(client: Client, messages: list[bytes], batched: bool = False) -> list[pb.UploadAck]:
    """An Upload of already encoded messages; each answer, and those an answer holds (``more``)."""
    upload = client.channel.stream_stream(
        "/dumpcmp.v1.DumpCompare/Upload",
        request_serializer=lambda raw: raw,
        response_deserializer=pb.UploadAck.FromString,
    )
    metadata = ((ACKS_METADATA, BATCHED),) if batched else ()
    return list(upload(iter(messages), metadata=metadata, timeout=30.0))


def test_small_files_sent_whole_are_stored_or_refused_each(client: Client, tmp_path: Path) -> None:
    assert client.open("s1").whole_files
    acks = _raw_upload(
        client,
        [
            _whole("s1", "a/one", b"first file"),
            _whole("s1", "../escape", b"refused by its name"),
            _whole("s1", "two", b"corrupted", digest=b"\0" * 16),
            _whole("s1", "empty", b""),
        ],
    )
    assert [(a.path, a.status) for a in acks] == [
        ("a/one", Ack.STORED),
        ("../escape", Ack.REFUSED),
        ("two", Ack.CHECKSUM_MISMATCH),
        ("empty", Ack.STORED),
    ]
    assert (tmp_path / "data/sessions/s1/dump/a/one").read_bytes() == b"first file"
    assert sorted(f.path for f in client.info("s1").files) == ["a/one", "empty"]


def test_small_files_sent_together_are_stored_or_refused_each(client: Client, tmp_path: Path) -> None:
    assert client.open("s1").whole_file_batches

    def whole(path: str, data: bytes, digest: bytes | None = None) -> tuple[pb.FileStart, pb.FileEnd, bytes]:
        start = pb.FileStart(session="s1", kind=DUMP, path=path, size=len(data), checksum=pb.XXH3_128)
        return start, file_end(pb.XXH3_128, digest or xxhash.xxh3_128(data).digest()), data

    together = [
        whole("a/one", b"first file"),
        whole("../escape", b"refused by its name"),
        whole("two", b"corrupted", digest=b"\0" * 16),
        whole("empty", b""),
    ]
    acks = _raw_upload(client, [wholes_message(together), _whole("s1", "after", b"alone")])
    assert [(a.path, a.status) for a in acks] == [
        ("a/one", Ack.STORED),
        ("../escape", Ack.REFUSED),
        ("two", Ack.CHECKSUM_MISMATCH),
        ("empty", Ack.STORED),
        ("after", Ack.STORED),
    ]
    assert (tmp_path / "data/sessions/s1/dump/a/one").read_bytes() == b"first file"
    assert sorted(f.path for f in client.info("s1").files) == ["a/one", "after", "empty"]


def test_answers_come_several_a_message_only_to_an_agent_that_asks(client: Client) -> None:
    client.open("s1")
    for batched in (False, True):
        names = [f"{batched}/f{n}" for n in range(40)]
        acks = _raw_upload(client, [_whole("s1", name, name.encode()) for name in names], batched)
        answered = [a for ack in acks for a in (ack, *ack.more)]
        assert [(a.path, a.status) for a in answered] == [(name, Ack.STORED) for name in names]
        if batched:
            assert len(acks) < len(names)  # files finished together are answered together
        else:
            assert all(not ack.more for ack in acks)


def test_the_agent_sends_small_files_whole_and_reads_batched_answers(
    hosts: Hosts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dumpcmp.host.server import service

    wholes: list[str] = []
    real_whole = service._Upload._whole

    def whole(upload: service._Upload, start: pb.FileStart, data: memoryview, end: pb.FileEnd) -> object:
        wholes.append(start.path)
        return real_whole(upload, start, data, end)

    monkeypatch.setattr(service._Upload, "_whole", whole)
    host = hosts.start(tmp_path / "data")
    root = tmp_path / "dump"
    root.mkdir()
    sizes = {"small": 1000, "exactly_a_chunk": 64 * 1024, "large": 64 * 1024 + 1}
    for name, size in sizes.items():
        (root / name).write_bytes(os.urandom(size))
    uploader = uploader_for(
        f"127.0.0.1:{host.port}", tmp_path / "state", "s1", UploadSettings(chunk_size=64 * 1024)
    )
    uploader.start()
    for name in sizes:
        uploader.add_file(DUMP, name, root / name)
    report = uploader.finish()
    assert (report.stored, report.problems) == (3, ())
    assert sorted(wholes) == ["exactly_a_chunk", "small"]
    for name in sizes:
        assert (tmp_path / "data/sessions/s1/dump" / name).read_bytes() == (root / name).read_bytes()


@pytest.mark.parametrize("older_host", [False, True], ids=["batches", "older-host"])
def test_the_agent_sends_small_files_waiting_together_in_one_message(
    hosts: Hosts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, older_host: bool
) -> None:
    """Files queued together go as WholeFiles messages, their data at most a chunk each, in
    stream order (a file too large for one goes on its own, between them); a host that does not
    say it takes them gets each small file as one WholeFile."""
    from dumpcmp.host.server import service

    messages: list[list[str]] = []  # the files of each WholeFile or WholeFiles message received
    real_wholes = service._Upload._wholes

    def wholes(upload: service._Upload, received: list[pb.WholeFile]) -> object:
        messages.append([whole.start.path for whole in received])
        return real_wholes(upload, received)

    monkeypatch.setattr(service._Upload, "_wholes", wholes)
    if older_host:
        real_info = service.DumpCompareService._info_of

        def info_of(self: DumpCompareService, *args: object) -> pb.SessionInfo:
            info = real_info(self, *args)  # type: ignore[arg-type]
            info.whole_file_batches = False
            return info

        monkeypatch.setattr(service.DumpCompareService, "_info_of", info_of)
    host = hosts.start(tmp_path / "data")
    root = tmp_path / "dump"
    root.mkdir()
    chunk = 64 * 1024
    sizes = {f"f{n:02}": 3000 for n in range(30)} | {"f15": 2 * chunk}  # 21 files a chunk, f15 chunked
    for name, size in sizes.items():
        (root / name).write_bytes(os.urandom(size))
    uploader = uploader_for(
        f"127.0.0.1:{host.port}", tmp_path / "state", "s1", UploadSettings(chunk_size=chunk)
    )
    for name in sizes:  # all waiting before the stream starts
        uploader.add_file(DUMP, name, root / name)
    uploader.start()
    report = uploader.finish()
    assert (report.stored, report.problems) == (len(sizes), ())
    for name in sizes:
        assert (tmp_path / "data/sessions/s1/dump" / name).read_bytes() == (root / name).read_bytes()
    if older_host:
        assert messages == [[name] for name in sizes if name != "f15"]
    else:
        assert [name for names in messages for name in names] == [name for name in sizes if name != "f15"]
        assert [len(names) for names in messages] == [15, 14]  # f15 between them, alone


def test_a_session_waiting_for_its_golden_data_does_not_list_its_files_per_file(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every file landing in a session still waiting for its golden data listed all its dump
    files again: quadratic in the files, on the host's busiest path."""
    listed: list[int | None] = []
    real_files = SessionStore.files

    def files(store: SessionStore, session: str, kind: int | None = None) -> list[StoredFile]:
        listed.append(kind)
        return real_files(store, session, kind)

    monkeypatch.setattr(SessionStore, "files", files)
    client.open("s1", golden_uploaded=True)
    for number in range(20):
        assert [a.status for a in client.upload(file_messages("s1", DUMP, f"f{number}", b"x"))] == [
            Ack.STORED
        ]
    deadline = time.monotonic() + 30.0
    while client.info("s1").waiting != "waiting for golden data" and time.monotonic() < deadline:
        time.sleep(0.01)  # the worker has seen the files
    assert client.info("s1").waiting == "waiting for golden data"
    assert DUMP not in listed and pb.GOLDEN not in listed


def test_the_largest_messages_the_agent_sends_by_default_fit_the_hosts_limit(
    hosts: Hosts, tmp_path: Path
) -> None:
    """A WholeFile of a whole chunk (plus its FileStart with a long path) and full data chunks."""
    host = hosts.start(tmp_path / "data")
    root = tmp_path / "dump"
    long_dir = root.joinpath(*["d" * 200] * 4)
    long_dir.mkdir(parents=True)
    files = {long_dir / "whole": MAX_CHUNK, root / "chunked": 2 * MAX_CHUNK + 1}
    for path, size in files.items():
        path.write_bytes(os.urandom(size))
    uploader = uploader_for(f"127.0.0.1:{host.port}", tmp_path / "state", "s1")  # default settings
    uploader.start()
    for path in files:
        uploader.add_file(DUMP, path.relative_to(root).as_posix(), path)
    report = uploader.finish()
    assert (report.stored, report.problems) == (2, ())
    for path in files:
        assert (tmp_path / "data/sessions/s1/dump" / path.relative_to(root)).read_bytes() == path.read_bytes()


class _Advice:
    """Which files got POSIX_FADV_DONTNEED, and on which thread (os.posix_fadvise recorded)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # By inode: a file received is advised under its temporary name, before its rename
        self._dropped: dict[tuple[int, int], str] = {}
        self._lock = threading.Lock()
        real = os.posix_fadvise

        def fadvise(fd: int, offset: int, length: int, advice: int) -> None:
            if advice == os.POSIX_FADV_DONTNEED:
                info = os.fstat(fd)
                with self._lock:
                    self._dropped.setdefault((info.st_dev, info.st_ino), threading.current_thread().name)
            real(fd, offset, length, advice)

        monkeypatch.setattr(os, "posix_fadvise", fadvise)

    def thread(self, path: Path) -> str | None:
        """The thread that dropped the file's pages; None: none did."""
        info = path.stat()
        with self._lock:
            return self._dropped.get((info.st_dev, info.st_ino))


def test_a_dump_file_waiting_for_its_golden_data_leaves_the_page_cache_once_durable(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing reads it until the golden data comes: its pages go as soon as it is durable; a
    golden file's stay (every comparison reads them), as do a small file's (not worth a call)."""
    advice = _Advice(monkeypatch)
    client.open("s1", **session_settings())
    big = b"1" * (1 << 20)
    sent = {(DUMP, "d/big"): big, (DUMP, "d/small"): b"2" * 5000, (pb.GOLDEN, "g.npy"): big}
    assert [a.status for a in client.send("s1", sent)] == [Ack.STORED] * 3
    session = tmp_path / "data/sessions/s1"
    assert advice.thread(session / "dump/d/big") is not None
    assert advice.thread(session / "dump/d/small") is None
    assert advice.thread(session / "golden/g.npy") is None


def test_a_dump_file_compared_as_it_lands_leaves_the_page_cache_after_its_comparison(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its golden data is there: the comparison reads it from memory, then its pages go."""
    sim = simulate("zoo:small_cnn", tmp_path / "sim", seed=3)
    files = simulation_files(sim)
    advice = _Advice(monkeypatch)
    monkeypatch.setattr(host_files, "_DROP_FROM", 0)  # the model's dump files are small
    client.open("s1", **session_settings())
    plan = {key: data for key, data in files.items() if key[0] != DUMP}
    dumps = {key: data for key, data in files.items() if key[0] == DUMP}
    assert {a.status for a in client.send("s1", plan)} == {Ack.STORED}
    assert {a.status for a in client.send("s1", dumps)} == {Ack.STORED}
    session = tmp_path / "data/sessions/s1"

    def dropped_by() -> set[str | None]:
        return {advice.thread(session / "dump" / path) for _kind, path in dumps}

    deadline = time.monotonic() + 60.0  # compared, then dropped (after the rows are stored)
    while time.monotonic() < deadline and None in dropped_by():
        time.sleep(0.05)
    assert dropped_by() == {"compare-s1"}
    assert client.info("s1").compared_files == len(dumps)
    assert {advice.thread(session / "golden" / path) for kind, path in plan if kind == pb.GOLDEN} == {None}
