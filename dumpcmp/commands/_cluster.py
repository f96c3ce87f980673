"""``--cluster``: where a command's per-file work runs; Dask is imported only when it is given."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from dumpcmp.commands._output import error_console

if TYPE_CHECKING:  # the command module stays light until the command runs
    from dumpcmp.host.request import CompareRequest
    from dumpcmp.host.workers import Runner

# Help texts are rich markup, where an unescaped "[cluster]" is a style tag and vanishes: escaped
# here by hand, as rich.markup.escape would (compare imports this module and never loads rich
# for a normal run).
INSTALL_HINT = 'Needs pip install "dumpcmp\\[cluster]"'
CLUSTER_HELP = (
    "Run the comparison on a Dask cluster: its scheduler's address (tcp://HOST:8786), or local[:N] "
    f"for N worker processes on this machine. {INSTALL_HINT}; workers must "
    "see the dump and golden paths at the same place."
)
DEFAULT_TIMEOUT = 10.0  # seconds to reach the scheduler and find a worker: a LAN is much faster


@contextmanager
def file_runner(address: str | None, timeout: float) -> Iterator[Runner | None]:
    """The runner for ``address`` (connected, dashboard link printed), or None: the local pool."""
    if address is None:
        yield None
        return
    from dumpcmp.host.cluster import connect

    with connect(address, timeout) as runner:
        link = runner.dashboard_link
        if link:
            error_console().print(f"Dask dashboard: {link}", markup=False)
        yield runner


def for_cluster(request: CompareRequest) -> CompareRequest:
    """Workers read the files themselves, from another working directory: give them full paths."""
    return replace(request, target=request.target.absolute(), golden=request.golden.absolute())
