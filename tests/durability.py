"""Records the directories made and the descriptors fsynced, to check what is durable when."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest


def _path_of(fd: int) -> Path:
    return Path(os.readlink(f"/proc/self/fd/{fd}"))


@dataclass
class FsyncLog:
    """``("mkdir" | "fsync", path)`` in the order they happened, made by any thread."""

    events: list[tuple[str, Path]] = field(default_factory=list)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real_mkdir, real_fsync = os.mkdir, os.fsync

        def mkdir(path: Any, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
            real_mkdir(path, mode, dir_fd=dir_fd)
            made = Path(os.fsdecode(path))
            self.events.append(("mkdir", made if dir_fd is None else _path_of(dir_fd) / made))

        def fsync(fd: Any) -> None:
            real_fsync(fd)
            self.events.append(("fsync", _path_of(fd if isinstance(fd, int) else fd.fileno())))

        monkeypatch.setattr(os, "mkdir", mkdir)
        monkeypatch.setattr(os, "fsync", fsync)

    def made(self, under: Path) -> list[Path]:
        return [p for kind, p in self.events if kind == "mkdir" and p.is_relative_to(under)]

    def unsynced(self, events: list[tuple[str, Path]]) -> list[Path]:
        """Directories made in ``events`` whose parent was not fsynced after they were made."""
        return [
            made
            for i, (kind, made) in enumerate(events)
            if kind == "mkdir" and ("fsync", made.parent) not in events[i + 1 :]
        ]


@pytest.fixture
def fsync_log(monkeypatch: pytest.MonkeyPatch) -> FsyncLog:
    log = FsyncLog()
    log.install(monkeypatch)
    return log
