"""What a host serves at once, and how long it waits for a client that went quiet.

Kept apart from the servicer so that ``host serve``'s options can show the defaults without
loading the server.
"""

from __future__ import annotations

from dataclasses import dataclass

from dumpcmp.errors import DumpcmpError

# Seconds between the host's pings of a client with a call open; a client that does not answer
# one within as long again is gone (a dead machine, a pulled cable): its calls end.
DEFAULT_KEEPALIVE_S = 30.0

# Bytes of an upload stream on the way to the host before it must wait for the host's go-ahead
# (HTTP/2 flow control). gRPC's default grows the window to the link's bandwidth-delay product
# (BDP probing): on loopback to 8 MiB and more, which let that much pile up between the socket
# and the receiving thread, out of the CPU's caches: the host spent ~0.4 CPU-s per GB more in
# copying it (raw gRPC, 2-core VM, bench/stream.py's client) and held ~50 MB more. A fixed
# 1 MiB still carries ~1 GB/s at a round trip of 1 ms; agents far away want more (0: gRPC's).
DEFAULT_RECEIVE_WINDOW = 1024 * 1024


@dataclass(frozen=True, slots=True)
class StreamLimits:
    """The long-lived calls a host holds at once, and how long an upload may stall inside a file.

    Each Upload and each followed WatchRows holds a server thread for as long as it runs; with a
    limit of their own per kind, the calls that answer at once (ListSessions, GetSession,
    CloseSession) always find a thread, and followers cannot take the uploads' places.
    """

    uploads: int = 64  # room for 8 devices of several boxes
    followers: int = 64  # host results --follow
    upload_idle_s: float = 120.0  # no data this long inside a file: the upload is ended, its part removed

    def check(self) -> None:
        if self.uploads < 1 or self.followers < 1 or self.upload_idle_s <= 0:
            raise DumpcmpError(
                "--max-uploads and --max-followers must be at least 1, --upload-idle-timeout positive"
            )


DEFAULT_LIMITS = StreamLimits()
