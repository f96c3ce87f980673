"""How the agent reaches a host: the gRPC channel (plain or TLS) and the call metadata (token)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc

from dumpcmp.errors import TransferError

__all__ = ["HostAddress"]

# A data message is at most 4 MiB of payload plus its envelope; answers (SessionInfo with every
# stored file of a big session) may be larger.
_CHANNEL_OPTIONS = (
    ("grpc.max_send_message_length", 8 * 1024 * 1024),
    ("grpc.max_receive_message_length", 256 * 1024 * 1024),
)


@dataclass(frozen=True, slots=True)
class HostAddress:
    target: str  # HOST:PORT
    root_ca: bytes | None = None  # TLS when set (or when a client certificate is given)
    client_cert: bytes | None = None
    client_key: bytes | None = None
    token: str | None = None

    @classmethod
    def from_options(
        cls,
        target: str,
        *,
        tls_ca: Path | None = None,
        client_cert_file: Path | None = None,
        client_key_file: Path | None = None,
        token_file: Path | None = None,
    ) -> HostAddress:
        host, sep, port = target.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise TransferError(f"--host {target!r}: expected HOST:PORT, e.g. 127.0.0.1:50051")
        if (client_cert_file is None) != (client_key_file is None):
            raise TransferError("--client-cert and --client-key go together (the agent's client certificate)")
        token = None
        if token_file is not None:
            token = _read(token_file, "--token-file").decode("utf-8", "replace").strip()
            if not token:
                raise TransferError(f"--token-file {token_file}: the file is empty")
        return cls(
            target,
            root_ca=_read(tls_ca, "--tls-ca") if tls_ca is not None else None,
            client_cert=_read(client_cert_file, "--client-cert") if client_cert_file is not None else None,
            client_key=_read(client_key_file, "--client-key") if client_key_file is not None else None,
            token=token,
        )

    @property
    def tls(self) -> bool:
        return self.root_ca is not None or self.client_cert is not None

    def channel(self) -> grpc.Channel:
        if not self.tls:
            return grpc.insecure_channel(self.target, options=_CHANNEL_OPTIONS)
        credentials = grpc.ssl_channel_credentials(
            root_certificates=self.root_ca, private_key=self.client_key, certificate_chain=self.client_cert
        )
        return grpc.secure_channel(self.target, credentials, options=_CHANNEL_OPTIONS)

    @property
    def metadata(self) -> Sequence[tuple[str, str]]:
        return (("authorization", f"Bearer {self.token}"),) if self.token else ()


def _read(path: Path, option: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise TransferError(f"{option} {path}: {exc.strerror or exc}") from None
