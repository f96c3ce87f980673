"""No client can stall the host: long-lived calls have limits of their own, stalled and dead
uploads end, and close/delete wait for no agent that is gone."""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from dumpcmp.host.server.limits import DEFAULT_RECEIVE_WINDOW, StreamLimits
from dumpcmp.host.server.serve import receive_window_options
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from dumpcmp.proto.session_names import STREAMING_METADATA
from tests.host.server.hostkit import CALL_TIMEOUT_S, Client, Hosts, file_messages

Ack = pb.UploadAck
DUMP = pb.DUMP
_QUICK_S = 5.0  # what "answers at once" may take on a loaded machine


class _Held:
    """Upload streams that send ``messages`` and then nothing until released."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._release = threading.Event()
        self.calls: list[grpc.Future] = []

    def open(self, messages: list[pb.UploadMessage]) -> grpc.Future:
        def stream() -> Iterator[pb.UploadMessage]:
            yield from messages
            self._release.wait(CALL_TIMEOUT_S)

        call = self._client.stub.Upload(stream(), timeout=CALL_TIMEOUT_S)
        self.calls.append(call)
        return call

    def release(self) -> None:
        for call in self.calls:
            call.cancel()
        self._release.set()


@pytest.fixture
def held(client: Client) -> Iterator[_Held]:
    made = _Held(client)
    try:
        yield made
    finally:
        made.release()


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + CALL_TIMEOUT_S
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _stalled_file(session: str, path: str) -> list[pb.UploadMessage]:
    """FileStart and the first of its chunks: a file that stops halfway."""
    return file_messages(session, DUMP, path, b"x" * 3000, chunk=1000)[:2]


def test_64_stalled_uploads_leave_the_host_answering(client: Client, held: _Held) -> None:
    # A fixed pool of 64 threads and no limit: 64 uploads that stop sending held every thread,
    # and ListSessions, GetSession and every further upload timed out.
    client.open("s1")
    for n in range(64):
        held.open(_stalled_file("s1", f"f{n}"))
    _wait_for(lambda: client.info("s1").streams == 64, "64 uploads streaming")
    assert [
        s.session for s in client.stub.ListSessions(pb.ListSessionsRequest(), timeout=_QUICK_S).sessions
    ] == ["s1"]
    assert client.stub.GetSession(pb.GetSessionRequest(session="s1"), timeout=_QUICK_S).streams == 64
    with pytest.raises(grpc.RpcError) as caught:
        list(client.stub.Upload(iter(file_messages("s1", DUMP, "more", b"m")), timeout=_QUICK_S))
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
    assert "--max-uploads" in caught.value.details()  # type: ignore[attr-defined]


def test_64_followers_leave_the_host_answering_and_uploads_their_places(client: Client) -> None:
    # 64 `host results --follow` clients held the 64 threads: nothing else was answered.
    client.open("s1")
    follow = pb.WatchRowsRequest(session="s1", follow=True)
    followers = [client.stub.WatchRows(follow, timeout=CALL_TIMEOUT_S) for _ in range(64)]
    try:
        for call in followers:
            next(call)  # each is being served
        assert len(client.stub.ListSessions(pb.ListSessionsRequest(), timeout=_QUICK_S).sessions) == 1
        acks = list(client.stub.Upload(iter(file_messages("s1", DUMP, "a", b"a")), timeout=_QUICK_S))
        assert [a.status for a in acks] == [Ack.STORED]
    finally:
        for call in followers:
            call.cancel()


def test_followers_cannot_take_the_uploads_places(hosts: Hosts, tmp_path: Path) -> None:
    host = hosts.start(tmp_path / "data", limits=StreamLimits(uploads=2, followers=2))
    client = hosts.client(host)
    client.open("s1")
    follow = pb.WatchRowsRequest(session="s1", follow=True)
    followers = [client.stub.WatchRows(follow, timeout=CALL_TIMEOUT_S) for _ in range(2)]
    try:
        for call in followers:
            next(call)  # the session's progress: the follower holds its place
        with pytest.raises(grpc.RpcError) as caught:
            next(client.stub.WatchRows(follow, timeout=_QUICK_S))
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
        assert "--max-followers" in caught.value.details()  # type: ignore[attr-defined]
        # Rows without --follow, uploads and the short calls are not followers.
        assert client.rows("s1") == []
        assert [a.status for a in client.send("s1", {(DUMP, "a"): b"a"})] == [Ack.STORED]
        assert client.info("s1").streams == 0
    finally:
        for call in followers:
            call.cancel()
    # Their places come back when they end.
    _wait_for(lambda: _follows(client), "a follower's place back")


def _follows(client: Client) -> bool:
    call = client.stub.WatchRows(pb.WatchRowsRequest(session="s1", follow=True), timeout=_QUICK_S)
    try:
        next(call)
    except grpc.RpcError:
        return False
    finally:
        call.cancel()
    return True


def test_an_upload_stalled_inside_a_file_ends_and_frees_its_session(hosts: Hosts, tmp_path: Path) -> None:
    # It was never bounded: its .part stayed and close/delete were refused for as long as it lasted.
    host = hosts.start(tmp_path / "data", limits=StreamLimits(upload_idle_s=0.3))
    client = hosts.client(host)
    client.open("s1")
    held = _Held(client)
    try:
        call = held.open(_stalled_file("s1", "half"))
        with pytest.raises(grpc.RpcError) as caught:
            list(call)
        assert caught.value.code() == grpc.StatusCode.ABORTED  # type: ignore[attr-defined]
        assert "no data for 0.3 s inside file 'half'" in caught.value.details()  # type: ignore[attr-defined]
        incoming = tmp_path / "data/sessions/s1/.incoming"
        _wait_for(lambda: not any(incoming.iterdir()), "the stalled file's part removed")
        _wait_for(lambda: client.info("s1").streams == 0, "the session no longer streamed into")
        client.stub.DeleteSession(pb.DeleteSessionRequest(session="s1"), timeout=_QUICK_S)
    finally:
        held.release()


def test_an_upload_quiet_between_files_is_not_ended(hosts: Hosts, tmp_path: Path) -> None:
    # An agent watching a directory waits between dump files for as long as the run takes.
    host = hosts.start(tmp_path / "data", limits=StreamLimits(upload_idle_s=0.2))
    client = hosts.client(host)
    client.open("s1")

    def stream() -> Iterator[pb.UploadMessage]:
        yield from file_messages("s1", DUMP, "first", b"1")
        time.sleep(1.0)
        yield from file_messages("s1", DUMP, "second", b"2")

    acks = list(client.stub.Upload(stream(), timeout=CALL_TIMEOUT_S))
    assert [(a.path, a.status) for a in acks] == [("first", Ack.STORED), ("second", Ack.STORED)]


@pytest.mark.parametrize("call", ["close", "delete"])
def test_close_and_delete_are_refused_by_the_host_while_an_agent_streams(
    client: Client, held: _Held, call: str
) -> None:
    # The rule lived only in the command line: a raw CloseSession closed the session under the
    # agent, whose next files were refused.
    client.open("s1")
    held.open(file_messages("s1", DUMP, "a", b"a"))
    _wait_for(lambda: len(client.info("s1").files) == 1 and client.info("s1").streams == 1, "one file in")
    with pytest.raises(grpc.RpcError) as caught:
        if call == "close":
            client.stub.CloseSession(pb.CloseSessionRequest(session="s1"), timeout=_QUICK_S)
        else:
            client.stub.DeleteSession(pb.DeleteSessionRequest(session="s1"), timeout=_QUICK_S)
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION  # type: ignore[attr-defined]
    said = caught.value.details()  # type: ignore[attr-defined]
    assert "session s1: 1 agent upload streaming into it right now; stop the agent" in said
    assert said.endswith(f"then {call} it")
    # Typed, for the agent that ends while another streams: it leaves the close to that one.
    trailing = dict(caught.value.trailing_metadata())  # type: ignore[attr-defined]
    assert trailing[STREAMING_METADATA] == "1"
    assert client.info("s1").state == pb.SessionInfo.OPEN


class _Proxy:
    """A TCP relay to a host that can be frozen: the client's machine gone without a word."""

    def __init__(self, port: int) -> None:
        self._target = ("127.0.0.1", port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.frozen = threading.Event()
        self._stopped = threading.Event()
        self._sockets: list[socket.socket] = [self._listener]
        self._threads = [threading.Thread(target=self._accept)]
        self._threads[0].start()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            if not select.select([self._listener], [], [], 0.05)[0]:
                continue
            near, _ = self._listener.accept()
            far = socket.create_connection(self._target)
            self._sockets += [near, far]
            for a, b in ((near, far), (far, near)):
                pump = threading.Thread(target=self._pump, args=(a, b))
                self._threads.append(pump)
                pump.start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        while not self._stopped.is_set():
            if self.frozen.is_set() or not select.select([source], [], [], 0.05)[0]:
                time.sleep(0.05)
                continue
            try:
                data = source.recv(65536)
                if not data:
                    return
                sink.sendall(data)
            except OSError:
                return

    def stop(self) -> None:
        self._stopped.set()
        for thread in self._threads:
            thread.join(CALL_TIMEOUT_S)
        for sock in self._sockets:
            sock.close()


def test_a_stream_from_a_client_gone_silent_ends_at_the_keepalive(hosts: Hosts, tmp_path: Path) -> None:
    host = hosts.start(tmp_path / "data", keepalive_s=0.2)
    client = hosts.client(host)
    client.open("s1")
    proxy = _Proxy(host.port)
    try:
        far = hosts.client_at(f"127.0.0.1:{proxy.port}")
        held = _Held(far)
        try:
            held.open(file_messages("s1", DUMP, "a", b"a"))
            _wait_for(
                lambda: client.info("s1").streams == 1 and len(client.info("s1").files) == 1, "streaming"
            )
            proxy.frozen.set()
            _wait_for(lambda: client.info("s1").streams == 0, "the silent client's stream ended")
            client.stub.DeleteSession(pb.DeleteSessionRequest(session="s1"), timeout=_QUICK_S)
        finally:
            held.release()
    finally:
        proxy.stop()


@pytest.mark.parametrize("window", [0, 64 * 1024, DEFAULT_RECEIVE_WINDOW])
def test_files_of_chunks_larger_than_the_receive_window_arrive_whole(
    hosts: Hosts, tmp_path: Path, window: int
) -> None:
    # A 4 MiB chunk is several windows of 1 MiB (or 64 KiB): flow control lets each message
    # through in pieces, however the window is set (0: gRPC's own, grown by probing).
    server = hosts.start(tmp_path / "data", receive_window=window)
    client = hosts.client(server)
    client.open("s")
    data = bytes(range(256)) * (9 * 1024 * 1024 // 256)  # two full chunks and a part
    acks = client.upload(file_messages("s", DUMP, "big.bin", data))
    assert [a.status for a in acks] == [Ack.STORED]
    assert (tmp_path / "data" / "sessions" / "s" / "dump" / "big.bin").read_bytes() == data


def test_the_receive_window_is_fixed_unless_zero() -> None:
    assert receive_window_options(0) == ()  # gRPC's adaptive window (BDP probing)
    assert dict(receive_window_options(1 << 20)) == {
        "grpc.http2.bdp_probe": 0,
        "grpc.http2.lookahead_bytes": 1 << 20,
    }


def test_an_agent_turned_away_by_a_busy_host_waits_as_for_a_busy_host(hosts: Hosts, tmp_path: Path) -> None:
    # `host serve --max-uploads 1` and two agents: the second said "cannot reach the host;
    # retrying" and "2 reconnects", as for a host that is down.
    from dumpcmp.agent.uploader import UploadSettings
    from tests.agent.recording_host import uploader_for

    host = hosts.start(tmp_path / "data", limits=StreamLimits(uploads=1))
    client = hosts.client(host)
    client.open("s1")
    held = _Held(client)
    local = tmp_path / "Add.a.1.1.1"
    local.write_bytes(b"dump")
    settings = UploadSettings(backoff_first=0.05, backoff_max=0.2, give_up=CALL_TIMEOUT_S)
    uploader = uploader_for(f"127.0.0.1:{host.port}", tmp_path / "state", "s1", settings)
    try:
        held.open(_stalled_file("s1", "first"))
        _wait_for(lambda: client.info("s1").streams == 1, "the first upload streaming")
        uploader.start()
        uploader.add_file(DUMP, "t/Add.a.1.1.1", local)
        _wait_for(lambda: "--max-uploads" in uploader.stats().busy, "the second upload turned away")
    finally:
        held.release()
        report = uploader.finish()
    assert (report.stored, report.reconnects) == (1, 0)
    assert uploader.stats().busy == ""
