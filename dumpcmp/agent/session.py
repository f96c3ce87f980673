"""One agent's part of a host session: who it is, what it sends, and the order it sends it in.

The host compares a dump file as it lands, so a session's golden files and fusion rule go into
the stream before its dump files; the uploader keeps the order things were added in.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from dumpcmp import __version__
from dumpcmp.agent.completeness import not_sendable
from dumpcmp.agent.journal import Journal, agent_id
from dumpcmp.agent.uploader import Uploader, UploadSettings
from dumpcmp.errors import SessionClosed, TransferError
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from dumpcmp.proto._gen import dumpcmp_v1_pb2_grpc as pb_grpc
from dumpcmp.proto.channel import ChannelOptions, call_failed, open_channel, tls_hint
from dumpcmp.proto.wire_paths import wire_path_problem

__all__ = [
    "HostSession",
    "RunFile",
    "SessionPlan",
    "add_files",
    "closed_on_host",
    "drop_if_empty",
    "open_uploader",
    "reach_host",
    "session_info",
    "streamed_by_another",
    "tree_files",
    "wire_path",
]

RunFile = tuple[pb.FileKind, str, Path]  # kind, wire path, the file here


@dataclass(frozen=True, slots=True)
class SessionPlan:
    """What the host is told when the session opens."""

    session: str
    model: str
    golden_uploaded: bool = False
    golden_host_path: str = ""
    fusion_rule_name: str = ""
    fusion_rule_host_path: str = ""
    device: int = -1

    def request(self, state_dir: Path) -> pb.OpenSessionRequest:
        settings = pb.CompareSettings()
        if self.golden_host_path:
            settings.golden_host_path = self.golden_host_path
        elif self.golden_uploaded:
            settings.golden_uploaded = True
        if self.fusion_rule_host_path:
            settings.fusion_rule_host_path = self.fusion_rule_host_path
        elif self.fusion_rule_name:
            settings.fusion_rule_name = self.fusion_rule_name
        identity = pb.Uploader(
            host=socket.gethostname(), device=self.device, agent_id=agent_id(state_dir), version=__version__
        )
        return pb.OpenSessionRequest(
            session=self.session, model=self.model, settings=settings, uploader=identity
        )


# What the host says to a client it will never serve; anything else (not up yet, an unknown
# session) is the uploader's to wait out or to open.
_REFUSALS = (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)
_PROBE_TIMEOUT_S = 10.0
_DROP_TIMEOUT_S = 2.0  # a stopping agent asks briefly: the user is waiting for it to end
_OWN_STREAM_ENDS_S = 1.0  # the host counts this agent's ended stream no longer within this


@dataclass(frozen=True, slots=True)
class HostSession:
    """A host that answered, and whether the session was there before this agent opened it."""

    host: ChannelOptions
    name: str
    existed: bool | None  # None: the host could not say (not reachable yet, or an older host)


def reach_host(host: ChannelOptions, session: str) -> HostSession:
    """Ask the host about ``session`` once, before a model run is spent or a session opened: a
    refused token or certificate, or TLS on one side only, is one line now instead of retries
    until --give-up."""
    channel = open_channel(host)
    try:
        info = pb_grpc.DumpCompareStub(channel).GetSession(
            pb.GetSessionRequest(session=session), timeout=_PROBE_TIMEOUT_S
        )
    except grpc.RpcError as exc:
        code = exc.code() if isinstance(exc, grpc.Call) else None
        if code in _REFUSALS or tls_hint(exc, host) is not None:
            raise call_failed(exc, host.address, host) from None
        return HostSession(host, session, existed=False if code is grpc.StatusCode.NOT_FOUND else None)
    finally:
        channel.close()
    if info.state == pb.SessionInfo.CLOSED:
        # A rerun after a Ctrl-C during the close that the host finished: said now, not as the
        # host's refusal to open it once a model run was spent.
        raise SessionClosed(session, host.address)
    return HostSession(host, session, existed=True)


def open_uploader(
    target: HostSession, plan: SessionPlan, state_dir: Path, settings: UploadSettings
) -> Uploader:
    """An uploader for ``plan`` with its journal in ``state_dir`` (not started yet)."""
    journal = Journal(state_dir, plan.session)
    host = target.host
    return Uploader(
        lambda: open_channel(host), plan.request(state_dir), journal, settings, target=host.address
    )


def drop_if_empty(target: HostSession) -> bool:
    """Delete the session when this agent created it and it received no dump file: an empty
    open session cannot be closed ("holds no dump files"), only deleted by hand. A session of
    another agent, or one that was there before, is left alone. True when it was deleted."""
    if target.existed is not False:
        return False
    channel = open_channel(target.host)
    stub = pb_grpc.DumpCompareStub(channel)
    try:
        info = _once_own_stream_ended(stub, target.name, _DROP_TIMEOUT_S)
        if info.dump_files or info.state != pb.SessionInfo.OPEN or len(info.uploaders) > 1 or info.streams:
            return False  # streamed into still: not (only) this agent's any more
        stub.DeleteSession(pb.DeleteSessionRequest(session=target.name), timeout=_DROP_TIMEOUT_S)
        return True
    except grpc.RpcError:
        return False  # the host is gone: the session stays, and the line that follows says so
    finally:
        channel.close()


def _once_own_stream_ended(stub: pb_grpc.DumpCompareStub, session: str, wait_s: float) -> Any:
    """The session's SessionInfo once the host no longer counts this agent's own stream, ended
    or cancelled a moment ago: asked again until it counts none, the session is no longer open
    and streamed into, or ``wait_s`` passed (the streams it counts then are others')."""
    deadline = time.monotonic() + wait_s
    while True:
        info = stub.GetSession(pb.GetSessionRequest(session=session), timeout=wait_s)
        done = not info.streams or info.state != pb.SessionInfo.OPEN or info.closing
        if done or time.monotonic() >= deadline:
            return info
        time.sleep(0.05)


def closed_on_host(target: HostSession) -> bool:
    """Whether the host says the session is closed, or closing, now (another agent may have closed
    it while this one's files were refused); False when the host does not answer: not known to be."""
    info = session_info(target)
    # Closing is closed for this agent: its files are refused, and the results will be final.
    return info is not None and bool(info.state == pb.SessionInfo.CLOSED or info.closing)


def session_info(target: HostSession) -> Any:
    """The host's SessionInfo of the session now; None when it does not answer."""
    channel = open_channel(target.host)
    try:
        return pb_grpc.DumpCompareStub(channel).GetSession(
            pb.GetSessionRequest(session=target.name), timeout=_PROBE_TIMEOUT_S
        )
    except grpc.RpcError:
        return None
    finally:
        channel.close()


def streamed_by_another(target: HostSession) -> bool:
    """Whether another agent still streams into the session, which is open and not closing: its
    run is live there, and ending the session (close, delete, or a rerun that replaces the run)
    is not this agent's to advise. Only streams that outlast this agent's own count. False when
    the host does not answer."""
    channel = open_channel(target.host)
    try:
        info = _once_own_stream_ended(pb_grpc.DumpCompareStub(channel), target.name, _OWN_STREAM_ENDS_S)
        return bool(info.streams and info.state == pb.SessionInfo.OPEN and not info.closing)
    except grpc.RpcError:
        return False
    finally:
        channel.close()


def wire_path(path: Path, root: Path) -> str:
    """``path`` relative to ``root``, '/'-separated, as the protocol names files."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        raise TransferError(f"{path} is not under {root}") from None


def _files(root: Path, skipped: list[str]) -> Iterator[Path]:
    """Regular files under ``root`` (or ``root`` itself), in a stable order, hidden ones left out;
    a FIFO or device (or a link to one) or a symbolic link is passed over, as ``PATH: REASON`` in
    ``skipped``: reading it would block the agent, or send what is no file of the directory."""
    if root.is_file():
        yield root
        return
    if not root.is_dir():
        raise TransferError(f"{root}: no such file or directory")
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = Path(directory) / name
            if why := not_sendable(path):
                skipped.append(f"{path}: {why}")
                continue
            yield path


def tree_files(kind: pb.FileKind, root: Path, skipped: list[str]) -> list[RunFile]:
    """Every file under ``root`` (or ``root`` itself) as ``kind``, named relative to ``root``
    (files passed over go to ``skipped``, as ``_files`` says, and so do names the host refuses:
    never silently, or the host says a golden file the run made is "not found")."""
    base = root.parent if root.is_file() else root
    sent: list[RunFile] = []
    for path in _files(root, skipped):
        name = wire_path(path, base)
        if why := wire_path_problem(name, single_part=kind == pb.FUSION_RULE):
            # The host would refuse it, and with it the run's whole golden data: nothing was sent.
            skipped.append(f"{path}: a name the host takes no file by ({why})")
            continue
        # A file named on the command line is read through its link, if it is one: the user chose
        # it (the uploader opens no link); links met inside a directory were passed over above.
        sent.append((kind, name, path.resolve() if path == root else path))
    return sent


def add_files(uploader: Uploader, files: list[RunFile], run_id: str = "") -> None:
    for kind, name, path in files:
        uploader.add_file(kind, name, path, run_id)
