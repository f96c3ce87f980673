"""Test kit for the host: hosts on free loopback ports, a small client, upload messages."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from dumpcmp.host.server.serve import HostConfig, HostServer, start
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from dumpcmp.proto._gen.dumpcmp_v1_pb2_grpc import DumpCompareStub
from dumpcmp.proto.channel import MAX_CHUNK, ChannelOptions, open_channel

CALL_TIMEOUT_S = 30.0


def file_messages(
    session: str, kind: int, path: str, data: bytes, *, chunk: int = MAX_CHUNK, run_id: str = "",
    sha256: bytes | None = None,
) -> list[pb.UploadMessage]:  # fmt: skip
    """One file as FileStart, data chunks, FileEnd."""
    start = pb.FileStart(session=session, kind=kind, path=path, size=len(data), run_id=run_id)  # type: ignore[arg-type]
    messages = [pb.UploadMessage(start=start)]
    messages += [pb.UploadMessage(data=data[i : i + chunk]) for i in range(0, len(data), chunk)]
    digest = hashlib.sha256(data).digest() if sha256 is None else sha256
    messages.append(pb.UploadMessage(end=pb.FileEnd(sha256=digest)))
    return messages


def run_mark(session: str, run_id: str, event: int) -> pb.UploadMessage:
    return pb.UploadMessage(run=pb.RunMark(session=session, run_id=run_id, event=event))  # type: ignore[arg-type]


@dataclass
class Client:
    stub: DumpCompareStub
    channel: grpc.Channel

    def open(self, session: str, **settings: object) -> pb.SessionInfo:
        request = pb.OpenSessionRequest(session=session, model="m", settings=pb.CompareSettings(**settings))  # type: ignore[arg-type]
        return self.stub.OpenSession(request, timeout=CALL_TIMEOUT_S)

    def upload(self, messages: Iterable[pb.UploadMessage]) -> list[pb.UploadAck]:
        return list(self.stub.Upload(iter(messages), timeout=CALL_TIMEOUT_S))

    def send(self, session: str, files: dict[tuple[int, str], bytes], run_id: str = "") -> list[pb.UploadAck]:
        messages = [m for (kind, path), data in files.items() for m in file_messages(session, kind, path, data, run_id=run_id)]
        return self.upload(messages)

    def info(self, session: str) -> pb.SessionInfo:
        return self.stub.GetSession(pb.GetSessionRequest(session=session), timeout=CALL_TIMEOUT_S)

    def close(self, session: str) -> pb.SessionInfo:
        return self.stub.CloseSession(pb.CloseSessionRequest(session=session), timeout=CALL_TIMEOUT_S)

    def fetch(self, session: str, name: str) -> bytes:
        chunks = self.stub.FetchResult(pb.FetchResultRequest(session=session, name=name), timeout=CALL_TIMEOUT_S)
        return b"".join(c.data for c in chunks)

    def rows(self, session: str, after: int = 0) -> list[pb.Row]:
        request = pb.WatchRowsRequest(session=session, after_seq=after)
        return [r for batch in self.stub.WatchRows(request, timeout=CALL_TIMEOUT_S) for r in batch.rows]


@dataclass
class Hosts:
    """Starts hosts and clients; everything stops at the end of the test."""

    servers: list[HostServer] = field(default_factory=list)
    channels: list[grpc.Channel] = field(default_factory=list)

    def start(self, data_dir: Path, **config: object) -> HostServer:
        server = start(HostConfig("127.0.0.1:0", data_dir, **config))  # type: ignore[arg-type]
        self.servers.append(server)
        return server

    def stop(self, server: HostServer) -> None:
        server.stop(grace=0)
        self.servers.remove(server)

    def client(self, server: HostServer, **options: object) -> Client:
        channel = open_channel(ChannelOptions(f"localhost:{server.port}", **options))  # type: ignore[arg-type]
        self.channels.append(channel)
        return Client(DumpCompareStub(channel), channel)

    def close(self) -> None:
        for channel in self.channels:
            channel.close()
        for server in self.servers:
            server.stop(grace=0)


