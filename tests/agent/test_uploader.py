"""The upload client against a recording host on loopback: chunks, checksums, acks, journal,
reconnects, resends, and delivery exactly once across restarts of either side."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import threading
import time
from collections.abc import Callable, Iterator
from io import RawIOBase
from pathlib import Path

import pytest
import xxhash

from dumpcmp.agent import uploader as uploader_module
from dumpcmp.agent.journal import Journal
from dumpcmp.agent.uploader import (
    Uploader,
    UploadReport,
    UploadSettings,
    _Item,
    _Opened,
    data_message,
    default_read_ahead,
)
from dumpcmp.errors import TransferError
from dumpcmp.proto import upload_wire
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from dumpcmp.proto.upload_wire import (
    FilledMessage,
    data_head,
    file_end,
    new_digest,
    whole_head,
    whole_head_size,
    whole_message,
)
from tests.agent.dumps import STEP_DIR, write_dumps
from tests.agent.recording_host import RecordingHost, ServerHandle, serving, uploader_for

SESSION = "s1"
WAIT_S = 30.0
FAST = UploadSettings(chunk_size=64 * 1024, backoff_first=0.05, backoff_max=0.2, give_up=20.0)


# Both ways of preparing messages: on gRPC's sending thread, and a few ahead on a reader thread
# (the default depends on the machine's cores: each must work on any machine).
READING = pytest.mark.parametrize("read_ahead", [0, 4], ids=["inline", "reader"])


@pytest.fixture
def host(tmp_path: Path) -> Iterator[ServerHandle]:
    with serving(RecordingHost(tmp_path / "host")) as handle:
        yield handle


def make_uploader(
    target: str, state: Path, settings: UploadSettings = FAST, token: str | None = None
) -> Uploader:
    return uploader_for(target, state, SESSION, settings, token)


def upload(
    target: str,
    state: Path,
    root: Path,
    files: list[Path],
    settings: UploadSettings = FAST,
    token: str | None = None,
) -> UploadReport:
    """A whole upload of ``files``: start, queue, wait for every answer."""
    uploader = make_uploader(target, state, settings, token)
    send(uploader, root, files)
    return uploader.finish()


def send(uploader: Uploader, root: Path, files: list[Path]) -> None:
    uploader.start()
    for path in files:
        uploader.add_file(pb.DUMP, path.relative_to(root).as_posix(), path)


def wire(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def assert_landed(host: RecordingHost, root: Path, files: list[Path]) -> None:
    for path in files:
        name = wire(root, path)
        assert host.stored_count(name) == 1, (name, host.statuses(name))
        landed = host.data_dir / SESSION / "DUMP" / name
        assert landed.read_bytes() == path.read_bytes()


@READING
def test_files_arrive_whole_in_chunks_and_are_journalled(
    host: ServerHandle, tmp_path: Path, read_ahead: int
) -> None:
    root = tmp_path / "dump"
    files = write_dumps(root, 5, elements=50_000)  # 200 KB each: four chunks of 64 KiB
    settings = dataclasses.replace(FAST, read_ahead=read_ahead)
    report = upload(host.target, tmp_path / "state", root, files, settings)
    assert (report.stored, report.duplicates, report.already, report.problems) == (5, 0, 0, ())
    assert_landed(host.host, root, files)
    assert 0 < host.host.largest_chunk <= 64 * 1024
    with Journal(tmp_path / "state", SESSION) as journal:
        assert len(journal) == 5
        entry = journal.get("DUMP", wire(root, files[0]))
    assert entry is not None and entry.size == files[0].stat().st_size


def test_a_corrupted_file_is_sent_again(host: ServerHandle, tmp_path: Path) -> None:
    root = tmp_path / "dump"
    files = write_dumps(root, 3)
    host.host.corrupt_next = 1
    report = upload(host.target, tmp_path / "state", root, files)
    assert report.stored == 3 and not report.problems
    first = wire(root, files[0])
    assert host.host.statuses(first) == [pb.UploadAck.CHECKSUM_MISMATCH, pb.UploadAck.STORED]
    assert_landed(host.host, root, files)


def test_a_file_corrupted_every_time_is_reported_not_looped(host: ServerHandle, tmp_path: Path) -> None:
    root = tmp_path / "dump"
    files = write_dumps(root, 2)
    host.host.corrupt_next = 100
    settings = UploadSettings(chunk_size=64 * 1024, max_resends=2)
    report = upload(host.target, tmp_path / "state", root, files, settings)
    assert report.stored == 0
    assert len(report.problems) == 2
    assert "refused by the host: checksum_mismatch" in report.problems[0]
    assert len(host.host.statuses(wire(root, files[0]))) == 3  # the first try and two resends


@READING
def test_a_dropped_stream_is_resumed_and_nothing_is_stored_twice(
    host: ServerHandle, tmp_path: Path, read_ahead: int
) -> None:
    root = tmp_path / "dump"
    files = write_dumps(root, 8)
    host.host.drop_after = 3
    report = upload(
        host.target, tmp_path / "state", root, files, dataclasses.replace(FAST, read_ahead=read_ahead)
    )
    assert report.reconnects >= 1
    assert report.stored + report.already == 8  # files answered before the drop are not resent
    assert_landed(host.host, root, files)


@READING
def test_host_restart_mid_stream(tmp_path: Path, read_ahead: int) -> None:
    root = tmp_path / "dump"
    files = write_dumps(root, 12)
    recording = RecordingHost(tmp_path / "host")
    recording.ack_delay = 0.05
    server = ServerHandle(recording)
    try:
        uploader = make_uploader(
            server.target, tmp_path / "state", dataclasses.replace(FAST, read_ahead=read_ahead)
        )
        send(uploader, root, files)
        deadline = time.monotonic() + 20
        while len(recording.acks) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        server.stop()  # the host goes away with files in flight...
        time.sleep(0.3)
        recording.ack_delay = 0.0
        server.start()  # ...and comes back on the same port with what it had stored
        report = uploader.finish()
    finally:
        server.stop()
    assert report.reconnects == 1  # one outage, however many tries it took (it said "5 reconnects")
    assert_landed(recording, root, files)


def test_unreachable_host_gives_up_with_one_line(tmp_path: Path) -> None:
    server = ServerHandle(RecordingHost(tmp_path / "host"))
    target = server.target
    server.stop()  # nothing listens there now
    root = tmp_path / "dump"
    files = write_dumps(root, 1)
    settings = UploadSettings(backoff_first=0.05, backoff_max=0.1, give_up=0.5)
    uploader = make_uploader(target, tmp_path / "state", settings)
    send(uploader, root, files)
    with pytest.raises(TransferError, match=r"gave up after \d+ s without progress") as caught:
        uploader.finish()
    assert "\n" not in str(caught.value)


def test_wrong_token_is_refused_at_once(tmp_path: Path) -> None:
    with serving(RecordingHost(tmp_path / "host", token="right")) as server:
        root = tmp_path / "dump"
        files = write_dumps(root, 1)
        uploader = make_uploader(server.target, tmp_path / "state", token="wrong")
        send(uploader, root, files)
        with pytest.raises(
            TransferError, match=r"host 127\.0\.0\.1:\d+: UNAUTHENTICATED: missing or wrong bearer token"
        ):
            uploader.finish()
        assert upload(server.target, tmp_path / "state2", root, files, token="right").stored == 1


def test_a_restarted_agent_sends_nothing_twice(host: ServerHandle, tmp_path: Path) -> None:
    root = tmp_path / "dump"
    files = write_dumps(root, 4)
    upload(host.target, tmp_path / "state", root, files)
    acks = len(host.host.acks)
    report = upload(host.target, tmp_path / "state", root, files)
    assert (report.stored, report.duplicates, report.already) == (0, 0, 4)
    assert len(host.host.acks) == acks


def test_files_the_host_lost_are_sent_again(tmp_path: Path) -> None:
    root = tmp_path / "dump"
    files = write_dumps(root, 3)
    for data in ("host-a", "host-b"):  # the second host knows nothing of the first one's files
        with serving(RecordingHost(tmp_path / data)) as server:
            assert upload(server.target, tmp_path / "state", root, files).stored == 3


def test_files_the_host_has_but_the_journal_missed_are_not_resent(host: ServerHandle, tmp_path: Path) -> None:
    """The agent died between the host's acknowledgement and its journal line."""
    root = tmp_path / "dump"
    files = write_dumps(root, 3)
    upload(host.target, tmp_path / "state", root, files)
    (tmp_path / "state" / f"{SESSION}.journal").write_text("")
    acks = len(host.host.acks)
    assert upload(host.target, tmp_path / "state", root, files).already == 3
    assert len(host.host.acks) == acks
    with Journal(tmp_path / "state", SESSION) as journal:
        assert len(journal) == 3


def test_a_changed_file_is_sent_again(host: ServerHandle, tmp_path: Path) -> None:
    root = tmp_path / "dump"
    files = write_dumps(root, 1)
    upload(host.target, tmp_path / "state", root, files)
    files[0].write_bytes(files[0].read_bytes()[:-4] + b"\0\0\0\1")
    assert upload(host.target, tmp_path / "state", root, files).stored == 1
    assert host.host.stored_count(wire(root, files[0])) == 2


def test_delete_acked_removes_dump_files_once_journalled(host: ServerHandle, tmp_path: Path) -> None:
    root = tmp_path / "dump"
    files = write_dumps(root, 3)
    golden = tmp_path / "golden.npy"
    golden.write_bytes(b"not really npy")
    settings = UploadSettings(delete_acked=True)
    uploader = make_uploader(host.target, tmp_path / "state", settings)
    uploader.start()
    uploader.add_file(pb.GOLDEN, "golden.npy", golden)
    for path in files:
        uploader.add_file(pb.DUMP, wire(root, path), path)
    assert uploader.finish().stored == 4
    assert not any(p.exists() for p in files)
    assert golden.exists()  # only dump files are deleted
    with Journal(tmp_path / "state", SESSION) as journal:
        assert len(journal) == 4
    assert (root / STEP_DIR).is_dir()


@pytest.mark.parametrize("journal_kept", [True, False])
def test_delete_acked_removes_files_found_already_on_the_host(
    host: ServerHandle, tmp_path: Path, journal_kept: bool
) -> None:
    # A first agent (or one that died before its journal line) delivered them; with --delete-acked
    # the rerun found them "already on the host" and left them on the device's disk for good.
    root = tmp_path / "dump"
    files = write_dumps(root, 3)
    upload(host.target, tmp_path / "state", root, files)
    if not journal_kept:
        (tmp_path / "state" / f"{SESSION}.journal").write_text("")
    report = upload(host.target, tmp_path / "state", root, files, UploadSettings(delete_acked=True))
    assert report.already == 3
    assert not any(p.exists() for p in files)
    with Journal(tmp_path / "state", SESSION) as journal:
        assert len(journal) == 3


@pytest.mark.parametrize(
    ("delete_acked", "said"),
    [(True, "it was deleted here (--delete-acked)"), (False, "it is gone here")],
)
def test_deleted_files_the_host_lost_are_reported(tmp_path: Path, delete_acked: bool, said: str) -> None:
    root = tmp_path / "dump"
    files = write_dumps(root, 2)
    with serving(RecordingHost(tmp_path / "host-a")) as server:
        upload(server.target, tmp_path / "state", root, files, UploadSettings(delete_acked=True))
    with serving(RecordingHost(tmp_path / "host-b")) as server:
        # The reason is this run's: one without --delete-acked does not blame it.
        uploader = make_uploader(server.target, tmp_path / "state", UploadSettings(delete_acked=delete_acked))
        uploader.start()
        report = uploader.finish()
    assert len(report.problems) == 2
    assert f"the host no longer has it and {said}: cannot be sent again" in report.problems[0]


def test_the_window_bounds_files_in_flight(host: ServerHandle, tmp_path: Path) -> None:
    root = tmp_path / "dump"
    files = write_dumps(root, 20)
    host.host.ack_delay = 0.01
    uploader = make_uploader(host.target, tmp_path / "state", UploadSettings(window_files=3))
    send(uploader, root, files)
    uploader.finish()
    assert 1 <= uploader.stats().peak_in_flight <= 3
    assert_landed(host.host, root, files)


def test_run_marks_keep_their_place_in_the_stream(host: ServerHandle, tmp_path: Path) -> None:
    root = tmp_path / "dump"
    files = write_dumps(root, 2)
    uploader = make_uploader(host.target, tmp_path / "state")
    uploader.start()
    uploader.add_run_mark("r1", pb.RunMark.START)
    for path in files:
        uploader.add_file(pb.DUMP, wire(root, path), path, run_id="r1")
    uploader.add_run_mark("r1", pb.RunMark.END)
    uploader.finish()
    order = [path for _s, path, _status in host.host.acks]
    assert order == ["run:r1", wire(root, files[0]), wire(root, files[1]), "run:r1"]
    assert host.host.sessions[SESSION].runs == [("r1", pb.RunMark.START), ("r1", pb.RunMark.END)]


def test_abort_stops_at_once_and_keeps_the_journal(host: ServerHandle, tmp_path: Path) -> None:
    root = tmp_path / "dump"
    files = write_dumps(root, 30)
    host.host.ack_delay = 0.05
    uploader = make_uploader(host.target, tmp_path / "state", UploadSettings(window_files=2))
    send(uploader, root, files)
    stop = threading.Timer(0.3, uploader.abort)
    stop.start()
    stop.join()
    stored = len([a for a in host.host.acks if a[2] == pb.UploadAck.STORED])
    assert stored < 30
    with Journal(tmp_path / "state", SESSION) as journal:
        assert len(journal) <= stored


def test_four_agents_into_four_sessions_at_once(host: ServerHandle, tmp_path: Path) -> None:
    uploaders = []
    trees = []
    for index in range(4):
        root = tmp_path / f"dump{index}"
        files = write_dumps(root, 6, elements=5_000 + index)
        uploader = uploader_for(host.target, tmp_path / f"state{index}", f"device{index}", FAST)
        send(uploader, root, files)
        uploaders.append(uploader)
        trees.append((root, files))
    for uploader in uploaders:
        assert uploader.finish().stored == 6
    for index, (root, files) in enumerate(trees):
        for path in files:
            landed = host.host.data_dir / f"device{index}" / "DUMP" / wire(root, path)
            assert landed.read_bytes() == path.read_bytes()


def test_a_refused_run_mark_is_reported_and_does_not_hang(host: ServerHandle, tmp_path: Path) -> None:
    host.host.refuse_runs = True
    uploader = make_uploader(host.target, tmp_path / "state")
    uploader.start()
    uploader.add_run_mark("r9", pb.RunMark.START)
    report = uploader.finish()
    assert report.problems == ("run r9: refused by the host: run was replaced",)


def test_a_replaced_runs_files_are_sent_again_with_the_new_run(host: ServerHandle, tmp_path: Path) -> None:
    """The host drops an unfinished run's files when the next run starts: the journal and the
    host's list from before the start must not stop the new run's copy."""
    golden = tmp_path / "golden.0.1.npy"
    golden.write_bytes(b"the same golden data in both runs")
    for run in ("a", "b"):
        uploader = make_uploader(host.target, tmp_path / "state")
        uploader.start()
        uploader.add_run_mark(run, pb.RunMark.START)
        uploader.add_file(pb.GOLDEN, golden.name, golden, run_id=run)
        uploader.finish()  # run "a" never ends: the agent died
    assert host.host.stored_count(golden.name) == 2
    assert (pb.GOLDEN, golden.name) in host.host.sessions[SESSION].files


@pytest.mark.parametrize("size", [0, 1, 127, 128, 16383, 16384, 1024 * 1024 + 3])
def test_a_pre_encoded_data_message_is_the_protobuf_encoding(size: int) -> None:
    data = bytes(i % 251 for i in range(size))
    encoded = data_message(memoryview(bytearray(data)))
    assert encoded == pb.UploadMessage(data=data).SerializeToString()
    assert pb.UploadMessage.FromString(encoded).data == data


@pytest.mark.parametrize("size", [0, 1, 127, 128, 4095, 4096, 4097, 16384, 1024 * 1024 + 3])
@pytest.mark.parametrize("in_place", [True, False], ids=["in-place", "copied"])
def test_a_message_read_straight_into_is_the_protobuf_encoding(
    size: int, in_place: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Filled in place (CPython) or, where that is not to be had, in a buffer copied once."""
    assert upload_wire._FRESH_BYTES is not None  # this test runs on CPython
    if not in_place:
        monkeypatch.setattr(upload_wire, "_FRESH_BYTES", None)
    data = bytes(i % 251 for i in range(size))
    message = FilledMessage(len(data_head(size)), size)
    message.data[:] = data
    assert message.done(data_head(size)) == pb.UploadMessage(data=data).SerializeToString()
    start = pb.FileStart(session=SESSION, kind=pb.DUMP, path="d/f", size=size, checksum=pb.XXH3_128)
    end = pb.FileEnd(xxh3_128=xxhash.xxh3_128(data).digest())
    whole = FilledMessage(whole_head_size(start.SerializeToString(), pb.XXH3_128, size), size)
    whole.data[:] = data
    encoded = whole.done(whole_head(start.SerializeToString(), end, size))
    assert encoded == whole_message(start, end, data)  # as built around data read elsewhere
    assert pb.UploadMessage.FromString(encoded) == pb.UploadMessage(
        whole=pb.WholeFile(start=start, end=end, data=data)
    )


@pytest.mark.parametrize("checksum", [pb.XXH3_128, pb.SHA256])
def test_a_whole_files_head_is_counted_as_long_as_it_is_encoded(checksum: int) -> None:
    """Counted before the file is read (its digest not known yet), across every length boundary
    of the varints in it (a path of 100 or 20,000 characters, sizes around 2**7 and 2**14)."""
    digest = bytes(len(new_digest(checksum).digest()))
    for path_length in (1, 100, 120, 200, 20_000):
        for size in (0, 1, 127, 128, 16383, 16384, 4 * 1024 * 1024):
            start = pb.FileStart(session=SESSION, path="p" * path_length, size=size, checksum=checksum)  # type: ignore[arg-type]
            encoded = start.SerializeToString()
            head = whole_head(encoded, file_end(checksum, digest), size)
            assert whole_head_size(encoded, checksum, size) == len(head), (path_length, size)


def test_every_file_is_read_straight_into_the_messages_that_carry_it(
    host: ServerHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One message filled in place per whole file and per data chunk; none built around a copy."""
    filled = 0
    fresh = upload_wire._FRESH_BYTES
    assert fresh is not None

    def counted(size: int) -> tuple[bytes, memoryview]:
        nonlocal filled
        filled += 1
        return fresh(size)

    monkeypatch.setattr(upload_wire, "_FRESH_BYTES", counted)
    copied: list[str] = []  # messages built around data read elsewhere (a file that shrank)
    monkeypatch.setattr(uploader_module, "data_message", lambda data: copied.append("data"))
    monkeypatch.setattr(uploader_module, "whole_message", lambda *args: copied.append("whole"))
    root = tmp_path / "dump"
    root.mkdir()
    sizes = {"small": 1000, "chunked": 3 * 64 * 1024 + 7}  # one WholeFile; four data messages
    for name, size in sizes.items():
        (root / name).write_bytes(bytes(range(256)) * (size // 256) + b"x" * (size % 256))
    report = upload(host.target, tmp_path / "state", root, sorted(root.iterdir()))
    assert (report.stored, report.problems) == (2, ())
    assert_landed(host.host, root, sorted(root.iterdir()))
    assert (filled, copied) == (5, [])


def test_a_filled_messages_data_is_gone_once_it_is_done() -> None:
    """Its bytes are the message's, which gRPC may free once sent: no view of them outlives it."""
    message = FilledMessage(len(data_head(4)), 4)
    message.data[:] = b"abcd"
    with pytest.raises(ValueError, match="a head of 1 bytes where 2 were set aside"):
        message.done(b"x")
    assert message.done(data_head(4)) == data_message(b"abcd")
    with pytest.raises(ValueError, match="released"):
        message.data[0]


def _opened(item: _Item, handle: RawIOBase, size: int) -> _Opened:
    """``item`` opened as the uploader opens a file it sends, announced at ``size`` bytes."""
    start = pb.FileStart(session=SESSION, kind=item.kind, path=item.path, size=size, checksum=pb.XXH3_128)
    encoded = start.SerializeToString()
    return _Opened(item, handle, start, encoded, whole_head_size(encoded, pb.XXH3_128, size) + size)


def test_files_read_straight_into_one_message_are_a_protobuf_encoding_of_it(tmp_path: Path) -> None:
    contents = {"a": b"", "b/c": b"bc" * 100, "d": bytes(range(256)) * 70}  # a varint of 1, 2, 3 bytes
    request = pb.OpenSessionRequest(session=SESSION)
    with Journal(tmp_path / "state", SESSION) as journal, contextlib.ExitStack() as stack:
        opened = []
        for number, (name, data) in enumerate(contents.items()):
            path = tmp_path / f"file{number}"
            path.write_bytes(data)
            handle = stack.enter_context(path.open("rb", buffering=0))
            opened.append(_opened(_Item(seq=number, kind=pb.DUMP, path=name, local=path), handle, len(data)))
        uploader = Uploader(lambda: pytest.fail("no connection"), request, journal, FAST, target="-")
        encoded = uploader._wholes_message(opened, pb.XXH3_128)
    files = [
        pb.WholeFile(start=file.start, end=pb.FileEnd(xxh3_128=xxhash.xxh3_128(data).digest()), data=data)
        for file, data in zip(opened, contents.values(), strict=True)
    ]
    # Equal once parsed: an empty file's data field is there, empty (protobuf leaves it out).
    assert pb.UploadMessage.FromString(encoded) == pb.UploadMessage(wholes=pb.WholeFiles(files=files))


@pytest.mark.parametrize("size", [100, 3 * 64 * 1024 + 5], ids=["whole", "chunked"])
@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batched"])
def test_a_file_that_shrank_since_it_was_opened_goes_as_it_was_read(
    tmp_path: Path, size: int, batched: bool
) -> None:
    """Fewer bytes than its size announced: the messages hold what was read, no bytes of a
    message filled in place that no read set, and the host sees the file short (and refuses it);
    in a WholeFiles message, the files after it as they are."""
    path, other = tmp_path / "f", tmp_path / "g"
    path.write_bytes(b"x" * (size - 10))
    other.write_bytes(b"y" * 50)
    request = pb.OpenSessionRequest(session=SESSION)
    item = _Item(seq=0, kind=pb.DUMP, path="f", local=path)
    with (
        Journal(tmp_path / "state", SESSION) as journal,
        path.open("rb", buffering=0) as handle,
        other.open("rb", buffering=0) as other_handle,
    ):
        uploader = Uploader(lambda: pytest.fail("no connection"), request, journal, FAST, target="-")
        opened = _opened(item, handle, size)
        if batched:
            next_one = _opened(_Item(seq=1, kind=pb.DUMP, path="g", local=other), other_handle, 50)
            wholes = pb.UploadMessage.FromString(uploader._wholes_message([opened, next_one], pb.XXH3_128))
            assert [(f.start.path, f.data) for f in wholes.wholes.files] == [
                ("f", b"x" * (size - 10)),
                ("g", b"y" * 50),
            ]
            return
        messages = list(uploader._file_messages(opened, pb.XXH3_128, whole=True))
    decoded = [pb.UploadMessage.FromString(m) if isinstance(m, bytes) else m for m in messages]
    sent = b"".join(m.whole.data if m.HasField("whole") else m.data for m in decoded)
    assert sent == b"x" * (size - 10)


def _upload_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "dumpcmp-upload" and t.is_alive()]


def test_abort_cancels_an_open_session_waiting_on_a_silent_host(tmp_path: Path) -> None:
    # A host that accepts the connection and never answers held OpenSession, and with it a
    # stopping agent, for its whole timeout: abort could not cancel a blocking call.
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        target = f"127.0.0.1:{silent.getsockname()[1]}"
        uploader = make_uploader(target, tmp_path / "state")
        before = len(_upload_threads())
        uploader.start()
        deadline = time.monotonic() + 10
        while not uploader.stalled and time.monotonic() < deadline:
            time.sleep(0.01)
        assert uploader.stalled  # connecting, and getting no answer
        time.sleep(0.3)
        uploader.abort()
        assert len(_upload_threads()) == before and not uploader.stalled


def test_stalled_while_the_host_is_away_not_while_it_is_there(tmp_path: Path) -> None:
    root = tmp_path / "dump"
    files = write_dumps(root, 2)
    server = ServerHandle(RecordingHost(tmp_path / "host"))
    try:
        uploader = make_uploader(server.target, tmp_path / "state")
        send(uploader, root, files[:1])
        deadline = time.monotonic() + 20
        while uploader.stats().files_done < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert uploader.stats().connected and not uploader.stalled
        server.stop()
        while not uploader.stalled and time.monotonic() < deadline:
            time.sleep(0.01)
        assert uploader.stalled  # reconnecting
        server.start()
        uploader.add_file(pb.DUMP, wire(root, files[1]), files[1])
        report = uploader.finish()
    finally:
        server.stop()
    assert not uploader.stalled and report.stored + report.already == 2


@pytest.mark.parametrize(
    ("verifies", "digest"),
    [
        ([pb.XXH3_128], lambda data: xxhash.xxh3_128(data).digest()),
        ([], lambda data: hashlib.sha256(data).digest()),
    ],
)
def test_files_go_with_the_fastest_checksum_the_host_verifies(
    tmp_path: Path, verifies: list[int], digest: Callable[[bytes], bytes]
) -> None:
    """XXH3-128 to a host that lists it; SHA-256 to an older host, which knows no other."""
    recording = RecordingHost(tmp_path / "host")
    recording.checksums = verifies
    root = tmp_path / "dump"
    files = write_dumps(root, 2)
    with serving(recording) as handle:
        report = upload(handle.target, tmp_path / "state", root, files)
    assert report.stored == 2 and not report.problems
    for path in files:
        assert recording.sessions[SESSION].files[(pb.DUMP, wire(root, path))][0] == digest(path.read_bytes())
    with Journal(tmp_path / "state", SESSION) as journal:
        entries = journal.entries()
    assert {e.sha256 for e in entries} == {digest(p.read_bytes()).hex() for p in files}


def test_a_file_the_host_holds_under_either_checksum_is_not_sent_again(
    host: ServerHandle, tmp_path: Path
) -> None:
    """The agent died between the host's answer and its journal line: the host's list decides,
    whichever checksum the file was stored with."""
    root = tmp_path / "dump"
    files = write_dumps(root, 2)
    upload(host.target, tmp_path / "first", root, [])  # opens the session
    session = host.host.sessions[SESSION]
    for path, checksum in zip(files, (hashlib.sha256, xxhash.xxh3_128), strict=True):
        data = path.read_bytes()
        session.files[(pb.DUMP, wire(root, path))] = (checksum(data).digest(), len(data))
    report = upload(host.target, tmp_path / "state", root, files)
    assert (report.already, report.stored) == (2, 0)


def _held(monkeypatch: pytest.MonkeyPatch, method: str) -> tuple[threading.Event, threading.Event]:
    """``Uploader.method`` made to stop on its way in: (reached, go on)."""
    reached, go_on = threading.Event(), threading.Event()
    original = getattr(Uploader, method)

    def held(self: Uploader, *args: object) -> object:
        reached.set()
        go_on.wait(WAIT_S)
        return original(self, *args)

    monkeypatch.setattr(Uploader, method, held)
    return reached, go_on


def test_a_file_being_opened_is_not_idle_and_settle_waits_for_its_answer(
    host: ServerHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Between the queue and the window (the file being opened) an item was in neither: idle said
    # True with a file not sent, and a hunt asked the host for its next step before the host had it.
    root = tmp_path / "dump"
    (path,) = write_dumps(root, 1)
    opening, go_on = _held(monkeypatch, "_prepare")
    uploader = make_uploader(host.target, tmp_path / "state")
    send(uploader, root, [path])
    assert opening.wait(WAIT_S)
    assert not uploader.idle
    go_on.set()
    uploader.settle()
    assert host.host.stored_count(wire(root, path)) == 1
    uploader.add_file(pb.DUMP, "again/" + path.name, path)  # still open for more after settling
    assert uploader.finish().stored == 2


def test_an_answer_being_counted_is_not_idle(
    host: ServerHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Out of flight but not yet counted stored: idle said True, and a watch that waited for its
    # golden files' answers read a report without them and took them for refused.
    root = tmp_path / "dump"
    (path,) = write_dumps(root, 1)
    counting, go_on = _held(monkeypatch, "_acknowledged")
    uploader = make_uploader(host.target, tmp_path / "state")
    send(uploader, root, [path])
    assert counting.wait(WAIT_S)
    assert not uploader.idle and uploader.report().stored == 0
    go_on.set()
    deadline = time.monotonic() + WAIT_S
    while not uploader.idle and time.monotonic() < deadline:
        time.sleep(0.01)
    assert uploader.idle and uploader.report().stored == 1
    assert uploader.finish().stored == 1


def test_a_reader_thread_only_where_cores_are_to_spare(host: ServerHandle, tmp_path: Path) -> None:
    # On two cores the reader thread cost more CPU per file than it saved, and no speed.
    assert [default_read_ahead(cpus) for cpus in (1, 2, 3, 16)] == [0, 0, 4, 4]
    root = tmp_path / "dump"
    files = write_dumps(root, 6)
    host.host.ack_delay = 0.05  # the upload is still on its way while its threads are looked at
    earlier = set(threading.enumerate())  # an earlier test's reader may still be ending
    uploader = make_uploader(host.target, tmp_path / "state", dataclasses.replace(FAST, read_ahead=0))
    send(uploader, root, files)
    seen: set[str] = set()
    deadline = time.monotonic() + WAIT_S
    while not uploader.idle and time.monotonic() < deadline:
        seen.update(thread.name for thread in threading.enumerate() if thread not in earlier)
        time.sleep(0.005)
    report = uploader.finish()
    assert report.stored == 6
    assert "dumpcmp-upload" in seen and "dumpcmp-read" not in seen


def test_a_file_swapped_for_a_link_after_it_was_queued_is_not_followed(
    host: ServerHandle, tmp_path: Path
) -> None:
    # The watcher passes links over when it lists, but a file can be swapped for one before the
    # uploader opens it: the open itself must refuse to follow it.
    root = tmp_path / "dump"
    files = write_dumps(root, 2)
    secret = tmp_path / "secret"
    secret.write_bytes(b"not for the host")
    files[0].unlink()
    files[0].symlink_to(secret)
    report = upload(host.target, tmp_path / "state", root, files)
    assert report.stored == 1
    assert len(report.problems) == 1 and "a symbolic link: not followed" in report.problems[0]
    assert host.host.stored_count(wire(root, files[0])) == 0
    assert_landed(host.host, root, files[1:])
