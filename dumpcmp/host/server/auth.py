"""Who may call the host: a bearer token on every call, TLS and mutual TLS."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from dumpcmp.proto.channel import check_key_pair, read_pem, read_secret

_REFUSED = "a valid 'authorization: Bearer <token>' is required"


class TokenCheck(grpc.ServerInterceptor):  # type: ignore[misc]
    """Refuses every call whose metadata lacks the host's token, with UNAUTHENTICATED."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

    def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Any], details: grpc.HandlerCallDetails
    ) -> Any:
        given = dict(details.invocation_metadata or ()).get("authorization", "")
        # Compared in constant time, so the answer's timing says nothing about the token.
        if hmac.compare_digest(str(given).encode(), self._expected):
            return continuation(details)
        handler = continuation(details)
        return None if handler is None else _refusing(handler)


def _refusing(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    """A handler of the same kind as ``handler`` that only refuses."""

    def refuse(request: Any, context: grpc.ServicerContext) -> Any:
        context.abort(grpc.StatusCode.UNAUTHENTICATED, _REFUSED)

    make = {
        (False, False): grpc.unary_unary_rpc_method_handler,
        (False, True): grpc.unary_stream_rpc_method_handler,
        (True, False): grpc.stream_unary_rpc_method_handler,
        (True, True): grpc.stream_stream_rpc_method_handler,
    }[(handler.request_streaming, handler.response_streaming)]
    return make(
        refuse,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


@dataclass(frozen=True, slots=True)
class TlsFiles:
    cert: Path
    key: Path
    client_ca: Path | None = None  # set: clients must present a certificate signed by it


def server_credentials(tls: TlsFiles) -> grpc.ServerCredentials:
    check_key_pair(tls.cert, tls.key)  # else gRPC only says that it cannot bind the address
    pair = (read_pem(tls.key, "--tls-key"), read_pem(tls.cert, "--tls-cert"))
    if tls.client_ca is None:
        return grpc.ssl_server_credentials([pair])
    return grpc.ssl_server_credentials(
        [pair], root_certificates=read_pem(tls.client_ca, "--client-ca"), require_client_auth=True
    )


def load_token(path: Path) -> str:
    return read_secret(path, "--token-file")
