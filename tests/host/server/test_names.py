"""Names from the wire never lead outside the session directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dumpcmp.host.server.names import BadWireName, check_relative_path, check_session_name
from dumpcmp.host.server.serve import LOCK_FILE, HostServer
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from tests.host.server.hostkit import Client, file_messages

HOSTILE = [
    "../escape",
    "a/../../escape",
    "/etc/passwd",
    "a//b",
    "a/",
    "./a",
    "a\\..\\b",
    "a\x00b",
    "a\nb",
    "a\x7fb",
    "x" * 256,
    "/".join(["a"] * 17),
    "a/" * 600 + "b",
    "",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_paths_are_refused(name: str) -> None:
    with pytest.raises(BadWireName):
        check_relative_path(name)


@pytest.mark.parametrize("name", ["", ".hidden", "-rf", "a/b", "..", "x" * 129, "a b", "é"])
def test_bad_session_names_are_refused(name: str) -> None:
    with pytest.raises(BadWireName):
        check_session_name(name)


def test_fine_names_pass() -> None:
    assert check_relative_path("20250101/0/net/1/0/Conv2D.conv1.1.2.3") == (
        "20250101",
        "0",
        "net",
        "1",
        "0",
        "Conv2D.conv1.1.2.3",
    )
    assert check_session_name("run-1_a.b") == "run-1_a.b"
    with pytest.raises(BadWireName):
        check_relative_path("a/b.json", single_part=True)


def test_hostile_uploads_write_nothing_outside(client: Client, host: HostServer, tmp_path: Path) -> None:
    client.open("s1")
    messages = [m for name in HOSTILE for m in file_messages("s1", pb.DUMP, name, b"evil")]
    messages += file_messages("s1", pb.FUSION_RULE, "dir/rule.json", b"{}")
    acks = client.upload(messages)
    assert [a.status for a in acks] == [pb.UploadAck.REFUSED] * (len(HOSTILE) + 1)
    written = [
        p
        for p in tmp_path.rglob("*")
        if p.is_file() and p.name not in ("dumpcmp.sqlite", LOCK_FILE) and "sqlite-" not in p.name
    ]
    assert written == []
    assert not client.info("s1").files


def test_symlink_planted_in_the_session_directory_is_not_followed(
    client: Client, host: HostServer, tmp_path: Path
) -> None:
    client.open("s1")
    outside = tmp_path / "outside"
    outside.mkdir()
    dump = tmp_path / "data/sessions/s1/dump"
    dump.mkdir(parents=True)
    os.symlink(outside, dump / "link")
    (outside / "victim").write_bytes(b"precious")
    os.symlink(outside / "victim", dump / "file")
    acks = client.upload(
        file_messages("s1", pb.DUMP, "link/x", b"evil") + file_messages("s1", pb.DUMP, "file", b"evil")
    )
    assert acks[0].status == pb.UploadAck.REFUSED
    assert "not a plain directory" in acks[0].message
    # A symlink at the file's own place is replaced by the file, never written through.
    assert acks[1].status == pb.UploadAck.STORED
    assert sorted(p.name for p in outside.iterdir()) == ["victim"]
    assert (outside / "victim").read_bytes() == b"precious"
    assert not (dump / "file").is_symlink()
    assert (dump / "file").read_bytes() == b"evil"


def test_symlinked_session_parts_are_refused(client: Client, host: HostServer, tmp_path: Path) -> None:
    client.open("s1")
    outside = tmp_path / "outside"
    outside.mkdir()
    session = tmp_path / "data/sessions/s1"
    session.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, session / "golden")
    os.symlink(outside, session / ".incoming")
    (ack,) = client.upload(file_messages("s1", pb.GOLDEN, "a.0.1.npy", b"evil"))
    assert ack.status == pb.UploadAck.REFUSED
    assert list(outside.iterdir()) == []
