"""Bearer token on every call, TLS and mutual TLS, NOT_FOUND for unknown sessions."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from dumpcmp.host.server.auth import TlsFiles
from dumpcmp.host.server.serve import HostConfig, exposure_warning
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from tests.host.server.hostkit import Client, Hosts, file_messages, make_pki

Status = Callable[[Callable[[], object]], grpc.StatusCode]


def token_file(path: Path, token: str) -> Path:
    path.write_text(token + "\n")
    return path


def every_call(client: Client) -> list[Callable[[], object]]:
    stub = client.stub
    return [
        lambda: client.open("s1"),
        lambda: client.info("s1"),
        lambda: stub.ListSessions(pb.ListSessionsRequest(), timeout=10),
        lambda: client.close("s1"),
        lambda: client.rows("s1"),
        lambda: client.fetch("s1", "x.csv"),
        lambda: client.upload(file_messages("s1", pb.DUMP, "a", b"x")),
        lambda: stub.DeleteSession(pb.DeleteSessionRequest(session="s1"), timeout=10),
    ]


def test_token_is_checked_on_every_call(hosts: Hosts, tmp_path: Path, status_of: Status) -> None:
    server = hosts.start(tmp_path / "data", token_file=token_file(tmp_path / "token", "s3cret-token"))
    anonymous = hosts.client(server)
    wrong = hosts.client(server, token_file=token_file(tmp_path / "wrong", "s3cret-tokeN"))
    for client in (anonymous, wrong):
        assert [status_of(call) for call in every_call(client)] == [grpc.StatusCode.UNAUTHENTICATED] * 8
    right = hosts.client(server, token_file=tmp_path / "token")
    assert right.open("s1").session == "s1"
    assert [a.status for a in right.upload(file_messages("s1", pb.DUMP, "a", b"x"))] == [pb.UploadAck.STORED]


def test_unknown_session_is_not_found(client: Client, status_of: Status) -> None:
    for call in (lambda: client.info("nope"), lambda: client.close("nope"), lambda: client.rows("nope"),
                 lambda: client.fetch("nope", "r.csv")):  # fmt: skip
        assert status_of(call) == grpc.StatusCode.NOT_FOUND
    client.open("s1")
    assert status_of(lambda: client.fetch("s1", "../dumpcmp.sqlite")) == grpc.StatusCode.NOT_FOUND


def test_tls_and_a_client_without_the_ca(hosts: Hosts, tmp_path: Path, status_of: Status) -> None:
    pki = make_pki(tmp_path / "pki")
    server = hosts.start(tmp_path / "data", tls=TlsFiles(pki.server_cert, pki.server_key))
    assert hosts.client(server, tls_ca=pki.ca).open("s1").session == "s1"
    plain = hosts.client(server, timeout=5)
    assert (
        status_of(lambda: plain.stub.ListSessions(pb.ListSessionsRequest(), timeout=5))
        == grpc.StatusCode.UNAVAILABLE
    )
    other = make_pki(tmp_path / "other", "other")
    stranger = hosts.client(server, tls_ca=other.ca)
    assert (
        status_of(lambda: stranger.stub.ListSessions(pb.ListSessionsRequest(), timeout=5))
        == grpc.StatusCode.UNAVAILABLE
    )


def test_mutual_tls_needs_a_client_certificate_from_the_ca(
    hosts: Hosts, tmp_path: Path, status_of: Status
) -> None:
    pki = make_pki(tmp_path / "pki")
    other = make_pki(tmp_path / "other", "other")
    server = hosts.start(tmp_path / "data", tls=TlsFiles(pki.server_cert, pki.server_key, client_ca=pki.ca))
    good = hosts.client(server, tls_ca=pki.ca, client_cert=pki.client_cert, client_key=pki.client_key)
    assert good.open("s1").session == "s1"
    no_cert = hosts.client(server, tls_ca=pki.ca)
    foreign = hosts.client(server, tls_ca=pki.ca, client_cert=other.client_cert, client_key=other.client_key)
    for client in (no_cert, foreign):
        assert (
            status_of(lambda c=client: c.stub.ListSessions(pb.ListSessionsRequest(), timeout=5))
            == grpc.StatusCode.UNAVAILABLE
        )


_READ = "without TLS: anyone on the network can read the dumps (give --tls-cert/--tls-key)"
_OPEN = "anyone who reaches it can open, upload to and delete sessions (give --token-file"


@pytest.mark.parametrize(
    ("listen", "tls", "token", "warned"),
    [("127.0.0.1:1", "", False, None), ("localhost:1", "", False, None), ("[::1]:1", "", False, None),
     ("127.0.0.2:1", "", False, None),
     ("0.0.0.0:1", "", False, f"listening on 0.0.0.0:1 {_READ}; and without a token, {_OPEN})"),
     ("10.1.2.3:1", "", True, f"listening on 10.1.2.3:1 {_READ}"),
     ("myhost:1", "mtls", False, None),
     ("[::]:1", "mtls", False, None),
     ("0.0.0.0:1", "tls", True, None),
     # TLS, but anyone may call: it said nothing.
     ("0.0.0.0:1", "tls", False,
      f"listening on 0.0.0.0:1 without a token or client certificates: {_OPEN} or --client-ca)")],
)  # fmt: skip
def test_a_host_open_to_the_network_is_warned_of(
    listen: str, tls: str, token: bool, warned: str | None
) -> None:
    files = TlsFiles(Path("c"), Path("k"), Path("ca") if tls == "mtls" else None) if tls else None
    config = HostConfig(listen, Path("d"), tls=files, token_file=Path("t") if token else None)
    assert exposure_warning(config) == warned
