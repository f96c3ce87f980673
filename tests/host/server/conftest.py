"""A host on a free loopback port per test, and a client to drive it with."""

from __future__ import annotations

from collections.abc import Callable

import grpc
import pytest

from dumpcmp.host.server.serve import HostServer
from tests.host.server.hostkit import Client, Hosts, host_fixture, hosts_fixture  # noqa: F401 (fixtures)


@pytest.fixture
def client(hosts: Hosts, host: HostServer) -> Client:
    return hosts.client(host)


@pytest.fixture
def status_of() -> Callable[[Callable[[], object]], grpc.StatusCode]:
    def call(action: Callable[[], object]) -> grpc.StatusCode:
        with pytest.raises(grpc.RpcError) as caught:
            action()
        return caught.value.code()  # type: ignore[attr-defined,no-any-return]

    return call
