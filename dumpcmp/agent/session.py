"""One agent's part of a host session: who it is, what it sends, and the order it sends it in.

The host compares a dump file as it lands, so a session's golden files and fusion rule go into
the stream before its dump files; the uploader keeps the order things were added in.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc

from dumpcmp import __version__
from dumpcmp.agent.journal import Journal, agent_id
from dumpcmp.agent.uploader import Uploader, UploadSettings
from dumpcmp.errors import TransferError
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from dumpcmp.proto._gen import dumpcmp_v1_pb2_grpc as pb_grpc
from dumpcmp.proto.channel import ChannelOptions, call_failed, open_channel

__all__ = ["RunFile", "SessionPlan", "add_files", "open_uploader", "tree_files", "wire_path"]

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


def open_uploader(
    host: ChannelOptions, plan: SessionPlan, state_dir: Path, settings: UploadSettings
) -> Uploader:
    """An uploader for ``plan`` with its journal in ``state_dir`` (not started yet)."""
    _refused_now(host, plan.session)
    journal = Journal(state_dir, plan.session)
    return Uploader(
        lambda: open_channel(host), plan.request(state_dir), journal, settings, target=host.address
    )


# What the host says to a client it will never serve; anything else (not up yet, an unknown
# session) is the uploader's to wait out or to open.
_REFUSALS = (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)
_PROBE_TIMEOUT_S = 10.0


def _refused_now(host: ChannelOptions, session: str) -> None:
    """A bad address, certificate or token file is one line now, before a model run is spent."""
    channel = open_channel(host)
    try:
        pb_grpc.DumpCompareStub(channel).GetSession(
            pb.GetSessionRequest(session=session), timeout=_PROBE_TIMEOUT_S
        )
    except grpc.RpcError as exc:
        if isinstance(exc, grpc.Call) and exc.code() in _REFUSALS:
            raise call_failed(exc, host.address) from None
    finally:
        channel.close()


def wire_path(path: Path, root: Path) -> str:
    """``path`` relative to ``root``, '/'-separated, as the protocol names files."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        raise TransferError(f"{path} is not under {root}") from None


def _files(root: Path) -> Iterator[Path]:
    """Regular files under ``root`` (or ``root`` itself), in a stable order, hidden ones left out."""
    if root.is_file():
        yield root
        return
    if not root.is_dir():
        raise TransferError(f"{root}: no such file or directory")
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith("."):
                yield Path(directory) / name


def tree_files(kind: pb.FileKind, root: Path) -> list[RunFile]:
    """Every file under ``root`` (or ``root`` itself) as ``kind``, named relative to ``root``."""
    base = root.parent if root.is_file() else root
    return [(kind, wire_path(path, base), path) for path in _files(root)]


def add_files(uploader: Uploader, files: list[RunFile], run_id: str = "") -> None:
    for kind, name, path in files:
        uploader.add_file(kind, name, path, run_id)
