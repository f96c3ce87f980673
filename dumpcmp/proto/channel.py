"""How a client (agent or laptop) reaches a host: channel, TLS, token, timeouts, errors.

Shared by every command that talks to a host, so that ``--tls-ca``, ``--client-cert``,
``--client-key``, ``--token-file`` and ``--timeout`` mean the same everywhere and a failed call
is one line naming the host, never a gRPC traceback.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from dumpcmp.errors import DumpcmpError, SessionClosed, TransferError
from dumpcmp.proto.session_names import CLOSED_METADATA

MAX_CHUNK = 4 * 1024 * 1024  # bytes of file data in one UploadMessage / FileChunk
# What a host takes in one message: a chunk plus the few fields around it.
MAX_MESSAGE = MAX_CHUNK + 64 * 1024
# What a client takes in one answer: a SessionInfo lists every file of a session (tens of
# thousands of dump files), far more than a chunk.
MAX_ANSWER = 256 * 1024 * 1024
DEFAULT_TIMEOUT_S = 10.0
SERVER_OPTIONS = (("grpc.max_receive_message_length", MAX_MESSAGE),)
CLIENT_OPTIONS = (
    ("grpc.max_send_message_length", MAX_MESSAGE),
    ("grpc.max_receive_message_length", MAX_ANSWER),
    # A host that went away and came back is reached again within seconds (gRPC's backoff grows
    # to two minutes): `host results --follow` waits for it on the same channel.
    ("grpc.max_reconnect_backoff_ms", 2000),
)
_ADDRESS = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>\d{1,5})")


@dataclass(frozen=True, slots=True)
class ChannelOptions:
    address: str  # HOST:PORT
    tls_ca: Path | None = None  # set: TLS, the host's certificate checked against this CA
    client_cert: Path | None = None  # with client_key: mutual TLS (--tls-cert / --tls-key)
    client_key: Path | None = None
    token_file: Path | None = None
    timeout: float = DEFAULT_TIMEOUT_S  # seconds per call (a followed stream waits as long as it runs)


def check_address(address: str, option: str = "--host", *, any_port: bool = False) -> str:
    """``address`` if it is HOST:PORT; ``any_port`` allows port 0 (listen on a free port)."""
    found = _ADDRESS.fullmatch(address)
    if found is None or not (0 if any_port else 1) <= int(found["port"]) < 65536:
        raise DumpcmpError(f"{option} {address!r}: expected HOST:PORT")
    return address


def split_address(address: str) -> tuple[str, int]:
    """(host, port) of a checked HOST:PORT (``check_address``), an IPv6 host without its brackets."""
    found = _ADDRESS.fullmatch(address)
    if found is None:
        raise DumpcmpError(f"{address!r}: expected HOST:PORT")
    return found["host"].strip("[]"), int(found["port"])


def read_secret(path: Path, option: str) -> str:
    """The token in ``path``: its one line, without surrounding white space."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise DumpcmpError(f"{option} {path}: cannot read ({reason or exc})") from None
    if not text or any(c.isspace() or not c.isprintable() for c in text):
        raise DumpcmpError(f"{option} {path}: expected one token of printable characters without spaces")
    return text


def open_channel(options: ChannelOptions) -> grpc.Channel:
    """A channel to the host (TLS when a CA is given), adding the token to every call."""
    check_address(options.address)
    if (options.client_cert is None) != (options.client_key is None):
        raise DumpcmpError("--tls-cert and --tls-key go together (the client certificate and its key)")
    if options.client_cert is not None and options.tls_ca is None:
        raise DumpcmpError("--tls-cert needs --tls-ca (client certificates are a TLS feature)")
    if options.client_cert is not None and options.client_key is not None:
        check_key_pair(options.client_cert, options.client_key)
    if options.tls_ca is None:
        channel = grpc.insecure_channel(options.address, options=CLIENT_OPTIONS)
    else:
        credentials = grpc.ssl_channel_credentials(
            root_certificates=read_pem(options.tls_ca, "--tls-ca"),
            private_key=None if options.client_key is None else read_pem(options.client_key, "--tls-key"),
            certificate_chain=None
            if options.client_cert is None
            else read_pem(options.client_cert, "--tls-cert"),
        )
        channel = grpc.secure_channel(options.address, credentials, options=CLIENT_OPTIONS)
    if options.token_file is None:
        return channel
    token = read_secret(options.token_file, "--token-file")
    return grpc.intercept_channel(channel, _BearerToken(token))


def call_failed(exc: grpc.RpcError, address: str, options: ChannelOptions | None = None) -> TransferError:
    """One line for a failed call: what the host (or the network) said; with the ``options``
    the channel was opened with, what to change when TLS is why (``tls_hint``)."""
    code = exc.code() if isinstance(exc, grpc.Call) else None
    details = (exc.details() if isinstance(exc, grpc.Call) else None) or str(exc)
    details = " ".join(str(details).split())
    hint = None if options is None else tls_hint(exc, options)
    if hint is not None:
        return TransferError(f"cannot reach the host at {address}: {hint}")
    if code is grpc.StatusCode.UNAVAILABLE and not _at_connect(details):
        return TransferError(
            f"the host at {address} went away during the call ({details}); run the same command again "
            "once it is back"
        )
    if code is grpc.StatusCode.UNAVAILABLE:
        return TransferError(f"cannot reach the host at {address}: {details}")
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return TransferError(f"the host at {address} did not answer in time ({details}); see --timeout")
    name = code.name if code is not None else "error"
    return TransferError(f"host {address}: {name}: {details}")


def session_closed(exc: grpc.RpcError, session: str, address: str) -> SessionClosed | None:
    """The one line of a call refused because ``session`` is closed or closing (the host says so
    in the call's trailing metadata, ``CLOSED_METADATA``); None for any other failure."""
    trailing = exc.trailing_metadata() if isinstance(exc, grpc.Call) else None
    state = next((str(value) for key, value in trailing or () if key == CLOSED_METADATA), None)
    if state is None:
        return None
    return SessionClosed(session, address, closing=state == "closing")


def tls_hint(exc: grpc.RpcError, options: ChannelOptions) -> str | None:
    """What to change when TLS is why a call failed: never mended by waiting or retrying.

    A plaintext client's HTTP/2 preface is not a TLS hello: a TLS host drops the connection
    ("Socket closed"). A TLS client's hello to a plaintext host gets bytes that are no TLS
    record (WRONG_VERSION_NUMBER). A host asking for client certificates (--client-ca) drops a
    TLS client that has none, or one it does not trust, the same way. Any other failed
    handshake is a certificate problem.
    """
    details = " ".join(((exc.details() if isinstance(exc, grpc.Call) else "") or "").split())
    # Only a connection refused at its start is the TLS handshake's doing: a host killed during
    # an established call ("Stream removed (Socket closed)") was diagnosed as a TLS host.
    closed_at_once = "Socket closed" in details and _at_connect(details)
    if options.tls_ca is None:
        if closed_at_once:
            return (
                "it closed the connection at once, as a TLS host does to a plaintext client: "
                "pass --tls-ca CA.pem (the CA of the host's certificate)"
            )
        return None
    if "WRONG_VERSION_NUMBER" in details:
        return (
            f"the host does not speak TLS: drop --tls-ca {options.tls_ca} (or start the host with --tls-cert)"
        )
    if "Hostname Verification" in details:
        name = options.address.rpartition(":")[0]
        return (
            f"the host's certificate is not made out to {name}: connect by a name or address the "
            "certificate holds (--host)"
        )
    if closed_at_once:
        if options.client_cert is None:
            return (
                "it closed the TLS connection at once, as a host asking for client certificates "
                "(--client-ca) does: pass --tls-cert and --tls-key signed by that CA"
            )
        return (
            f"it closed the TLS connection at once: it does not trust --tls-cert {options.client_cert} "
            "(signed by another CA than the host's --client-ca?)"
        )
    if "handshake failed" in details.lower():
        return f"the TLS handshake failed ({details}); check --tls-ca {options.tls_ca}"
    return None


def _at_connect(details: str) -> bool:
    """Whether a failed call's details say the connection failed as it was made (gRPC's words),
    not that an established one broke."""
    return "failed to connect" in details


def check_key_pair(cert: Path, key: Path) -> None:
    """--tls-key is the key of --tls-cert, or one line saying so (gRPC says only that it cannot
    bind, or cannot create a handshaker)."""
    import ssl  # only where TLS is used

    read_pem(cert, "--tls-cert")
    read_pem(key, "--tls-key")
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_cert_chain(cert, key, password="")
    except ssl.SSLError as exc:
        if "KEY_VALUES_MISMATCH" in str(exc):
            raise DumpcmpError(f"--tls-key {key} is not the key of --tls-cert {cert}") from None
        reason = exc.reason or exc.strerror or str(exc)
        raise DumpcmpError(f"--tls-cert {cert} with --tls-key {key}: cannot be used ({reason})") from None


def read_pem(path: Path, option: str) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DumpcmpError(f"{option} {path}: cannot read ({exc.strerror or exc})") from None
    if b"-----BEGIN" not in data:
        raise DumpcmpError(f"{option} {path}: not a PEM file")
    return data


class _CallDetails(grpc.ClientCallDetails):  # type: ignore[misc]
    def __init__(self, base: grpc.ClientCallDetails, metadata: list[tuple[str, str]]) -> None:
        self.method = base.method
        self.timeout = base.timeout
        self.metadata = metadata
        self.credentials = base.credentials
        self.wait_for_ready = getattr(base, "wait_for_ready", None)
        self.compression = getattr(base, "compression", None)


class _BearerToken(
    grpc.UnaryUnaryClientInterceptor,  # type: ignore[misc]
    grpc.UnaryStreamClientInterceptor,  # type: ignore[misc]
    grpc.StreamUnaryClientInterceptor,  # type: ignore[misc]
    grpc.StreamStreamClientInterceptor,  # type: ignore[misc]
):
    """Adds ``authorization: Bearer <token>`` to every call of the channel."""

    def __init__(self, token: str) -> None:
        self._header = ("authorization", f"Bearer {token}")

    def _with_token(self, details: grpc.ClientCallDetails) -> _CallDetails:
        return _CallDetails(details, [*(details.metadata or ()), self._header])

    def intercept_unary_unary(self, continuation: Callable[..., Any], details: Any, request: Any) -> Any:
        return continuation(self._with_token(details), request)

    def intercept_unary_stream(self, continuation: Callable[..., Any], details: Any, request: Any) -> Any:
        return continuation(self._with_token(details), request)

    def intercept_stream_unary(self, continuation: Callable[..., Any], details: Any, requests: Any) -> Any:
        return continuation(self._with_token(details), requests)

    def intercept_stream_stream(self, continuation: Callable[..., Any], details: Any, requests: Any) -> Any:
        return continuation(self._with_token(details), requests)
