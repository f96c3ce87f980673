"""One host per port and per data directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from dumpcmp.errors import DumpcmpError
from dumpcmp.host.server.serve import HostConfig, start


def test_a_second_host_on_the_same_port_is_refused(tmp_path: Path) -> None:
    first = start(HostConfig("127.0.0.1:0", tmp_path / "a"))
    try:
        with pytest.raises(DumpcmpError, match=r"cannot listen \(the port is in use: another host serve"):
            start(HostConfig(f"127.0.0.1:{first.port}", tmp_path / "b" / "data"))
        assert not (tmp_path / "b").exists()  # no store, no lock file, no directory it made
        (tmp_path / "c").mkdir()
        (tmp_path / "c" / "keep").write_text("x")
        with pytest.raises(DumpcmpError, match="cannot listen"):
            start(HostConfig(f"127.0.0.1:{first.port}", tmp_path / "c"))
        assert (tmp_path / "c" / "keep").read_text() == "x"  # a directory that was there stays
    finally:
        first.stop(0)


def test_a_second_host_on_the_same_data_directory_is_refused(tmp_path: Path) -> None:
    first = start(HostConfig("127.0.0.1:0", tmp_path / "data"))
    try:
        with pytest.raises(DumpcmpError, match="another dumpcmp host is using this directory"):
            start(HostConfig("127.0.0.1:0", tmp_path / "data"))
    finally:
        first.stop(0)
    again = start(HostConfig("127.0.0.1:0", tmp_path / "data"))  # the lock went with the first
    again.stop(0)
