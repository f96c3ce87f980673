"""The options every command that talks to a host takes, meaning the same everywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dumpcmp.proto.channel import DEFAULT_TIMEOUT_S, ChannelOptions

HostAddress = Annotated[str, typer.Option("--host", help="The host's HOST:PORT.", show_default=False)]
TlsCa = Annotated[
    Path | None, typer.Option("--tls-ca", help="CA certificate (PEM) of the host's TLS certificate: use TLS.")
]
# The agent's spelling: on every command, --tls-cert/--tls-key are this side's own certificate.
ClientCert = Annotated[
    Path | None,
    typer.Option("--tls-cert", "--client-cert", help="This client's certificate (PEM), for mutual TLS."),
]
ClientKey = Annotated[
    Path | None, typer.Option("--tls-key", "--client-key", help="The key (PEM) of --tls-cert.")
]
TokenFile = Annotated[Path | None, typer.Option("--token-file", help="File holding the host's bearer token.")]
Timeout = Annotated[
    float, typer.Option("--timeout", min=0.1, help="Seconds to wait for the host before giving up.")
]
DEFAULT_TIMEOUT = DEFAULT_TIMEOUT_S


def channel_options(
    host: str, tls_ca: Path | None, client_cert: Path | None, client_key: Path | None,
    token_file: Path | None, timeout: float,
) -> ChannelOptions:  # fmt: skip
    return ChannelOptions(host, tls_ca, client_cert, client_key, token_file, timeout)


def host_command(words: list[str], address: ChannelOptions) -> str:
    """``dumpcmp host WORDS``, with the options that reach the host as this client does."""
    import shlex

    words = ["dumpcmp", "host", *words]
    for option, path in (
        ("--tls-ca", address.tls_ca), ("--tls-cert", address.client_cert), ("--tls-key", address.client_key),
        ("--token-file", address.token_file),
    ):  # fmt: skip
        if path is not None:
            words += [option, str(path)]
    return shlex.join(words)
