"""Test kit for the host: hosts on free loopback ports, a small client, upload messages."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest

from dumpcmp.fakes.simulate import SimulationResult
from dumpcmp.host.offline import run_compare
from dumpcmp.host.request import CompareRequest
from dumpcmp.host.server.serve import HostConfig, HostServer, start
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from dumpcmp.proto._gen.dumpcmp_v1_pb2_grpc import DumpCompareStub
from dumpcmp.proto.channel import MAX_CHUNK, ChannelOptions, open_channel
from dumpcmp.proto.upload_wire import file_end, new_digest

CALL_TIMEOUT_S = 30.0


def file_messages(
    session: str, kind: int, path: str, data: bytes, *, chunk: int = MAX_CHUNK, run_id: str = "",
    sha256: bytes | None = None, checksum: int = pb.SHA256,
) -> list[pb.UploadMessage]:  # fmt: skip
    """One file as FileStart, data chunks, FileEnd (checksummed as an agent before XXH3_128 did,
    unless ``checksum`` says otherwise; ``sha256``: a wrong checksum instead)."""
    start = pb.FileStart(
        session=session, kind=kind, path=path, size=len(data), run_id=run_id, checksum=checksum
    )  # type: ignore[arg-type]
    messages = [pb.UploadMessage(start=start)]
    messages += [pb.UploadMessage(data=data[i : i + chunk]) for i in range(0, len(data), chunk)]
    if sha256 is None:
        digest = new_digest(checksum)
        digest.update(data)
        sha256 = digest.digest()
    messages.append(pb.UploadMessage(end=file_end(checksum, sha256)))
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
        messages = [
            m
            for (kind, path), data in files.items()
            for m in file_messages(session, kind, path, data, run_id=run_id)
        ]
        return self.upload(messages)

    def info(self, session: str) -> pb.SessionInfo:
        return self.stub.GetSession(pb.GetSessionRequest(session=session), timeout=CALL_TIMEOUT_S)

    def close(self, session: str) -> pb.SessionInfo:
        return self.stub.CloseSession(pb.CloseSessionRequest(session=session), timeout=CALL_TIMEOUT_S)

    def fetch(self, session: str, name: str) -> bytes:
        chunks = self.stub.FetchResult(
            pb.FetchResultRequest(session=session, name=name), timeout=CALL_TIMEOUT_S
        )
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
        return self.client_at(f"localhost:{server.port}", **options)

    def client_at(self, address: str, **options: object) -> Client:
        channel = open_channel(ChannelOptions(address, **options))  # type: ignore[arg-type]
        self.channels.append(channel)
        return Client(DumpCompareStub(channel), channel)

    def close(self) -> None:
        for channel in self.channels:
            channel.close()
        for server in self.servers:
            server.stop(grace=0)


@dataclass(frozen=True)
class Pki:
    """A CA and, signed by it, a server certificate for localhost and a client certificate."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def make_pki(directory: Path, name: str = "test") -> Pki:
    """Certificates made with the ``cryptography`` package (EC P-256, valid for a day)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    directory.mkdir(parents=True, exist_ok=True)

    def write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> Path:
        path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        return path

    def certificate(
        subject: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name | None,
        signer: ec.EllipticCurvePrivateKey, extensions: list[tuple[x509.ExtensionType, bool]],
    ) -> x509.Certificate:  # fmt: skip
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
        builder = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(issuer or name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
        )
        for extension, critical in extensions:
            builder = builder.add_extension(extension, critical)
        return builder.sign(signer, hashes.SHA256())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = certificate(
        f"{name} CA", ca_key, None, ca_key, [(x509.BasicConstraints(ca=True, path_length=None), True)]
    )
    paths = {}
    for role, san in (
        (
            "server",
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
        ),
        ("client", x509.SubjectAlternativeName([x509.DNSName("agent")])),
    ):
        key = ec.generate_private_key(ec.SECP256R1())
        cert = certificate(
            role,
            key,
            ca.subject,
            ca_key,
            [(san, False), (x509.BasicConstraints(ca=False, path_length=None), True)],
        )
        (directory / f"{role}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        paths[role] = (directory / f"{role}.pem", write_key(key, directory / f"{role}.key"))
    (directory / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    return Pki(directory / "ca.pem", *paths["server"], *paths["client"])


def simulation_files(
    sim: SimulationResult, *, rule_name: str = "fusion_rule.json"
) -> dict[tuple[int, str], bytes]:
    """Every file a session needs for ``sim``: rule, golden npy files, then the dump files."""
    files = {(pb.FUSION_RULE, rule_name): sim.fusion_rule.read_bytes()}
    files |= {(pb.GOLDEN, p.relative_to(sim.golden_dir).as_posix()): p.read_bytes() for p in sim.golden_files}
    files |= {(pb.DUMP, p.relative_to(sim.npu_dump_dir).as_posix()): p.read_bytes() for p in sim.dump_files}
    return files


def offline_csv(sim: SimulationResult, out_dir: Path) -> bytes:
    """What ``dumpcmp compare -tp DUMP -gp GOLDEN -fr RULE -o OUT`` writes for ``sim``."""
    outcome = run_compare(
        CompareRequest(
            target=sim.npu_dump_dir, golden=sim.golden_dir, fusion_rule=sim.fusion_rule, out_dir=out_dir
        )
    )
    (shard,) = outcome.shards
    assert shard.result_file is not None
    return shard.result_file.read_bytes()


def session_settings() -> dict[str, object]:
    return {"golden_uploaded": True, "fusion_rule_name": "fusion_rule.json"}


@pytest.fixture(name="hosts")
def hosts_fixture() -> Iterator[Hosts]:
    """Hosts a test starts, stopped when it ends (import into a conftest or test module)."""
    made = Hosts()
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(name="host")
def host_fixture(hosts: Hosts, tmp_path: Path) -> HostServer:
    return hosts.start(tmp_path / "data")


@dataclass(frozen=True)
class HeldClose:
    entered: threading.Event  # a closing comparison is waiting
    release: threading.Event


@pytest.fixture(name="held_close")
def held_close_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldClose]:
    """The sessions' closing comparisons wait until released (at the end, whatever happens)."""
    from dumpcmp.host.live import LiveCompare

    held = HeldClose(threading.Event(), threading.Event())
    real_close = LiveCompare.close

    def close(self: LiveCompare) -> object:
        held.entered.set()
        assert held.release.wait(CALL_TIMEOUT_S)
        return real_close(self)

    monkeypatch.setattr(LiveCompare, "close", close)
    try:
        yield held
    finally:
        held.release.set()
