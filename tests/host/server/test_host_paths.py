"""Files already on the host (golden data, a fusion rule) are read only under ``--host-paths``.

A client names a host path in OpenSession's settings; without the allow-list any client could
make the host open any file it can read (``/root/.bashrc`` answered "not valid json").
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from dumpcmp.commands.sim import simulate
from dumpcmp.errors import DumpcmpError
from dumpcmp.fakes.simulate import SimulationResult
from dumpcmp.host.server.serve import HostConfig, start
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from tests.host.server.hostkit import Client, Hosts, offline_csv, session_settings, simulation_files

StatusOf = Callable[[Callable[[], object]], grpc.StatusCode]


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> SimulationResult:
    return simulate("zoo:small_cnn", tmp_path_factory.mktemp("sim") / "run", seed=4)


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / ".bashrc"
    path.parent.mkdir()
    path.write_text("export SECRET=1\n")
    return path


def refusal(client: Client, session: str, **settings: object) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        client.open(session, **settings)
    return caught.value


@pytest.mark.parametrize("setting", ["golden_host_path", "fusion_rule_host_path"])
def test_by_default_no_host_path_is_read(
    client: Client, secret: Path, setting: str, status_of: StatusOf
) -> None:
    error = refusal(client, "s1", **{setting: str(secret)})
    option = "--golden-on-host" if setting == "golden_host_path" else "--fusion-rule-on-host"
    upload = "--golden" if setting == "golden_host_path" else "--fusion-rule"
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED  # type: ignore[attr-defined]
    assert error.details() == (  # type: ignore[attr-defined]
        f"{option} {str(secret)!r}: this host allows no host paths (dumpcmp host serve --host-paths DIR); "
        f"or send the {'golden data' if upload == '--golden' else 'fusion rule'} with {upload}"
    )
    assert status_of(lambda: client.info("s1")) == grpc.StatusCode.NOT_FOUND  # no session was made


def test_only_paths_under_the_allowed_directories_are_read(
    hosts: Hosts, tmp_path: Path, secret: Path, status_of: StatusOf
) -> None:
    allowed = tmp_path / "allowed"
    (allowed / "golden").mkdir(parents=True)
    (allowed / "rule.json").write_text("{}")
    (allowed / "link.json").symlink_to(secret)  # inside by name, outside once followed
    server = hosts.start(tmp_path / "data", host_paths=(allowed,))
    client = hosts.client(server)
    for name, path in [
        ("link", allowed / "link.json"),
        ("dotdot", allowed / ".." / "outside" / ".bashrc"),
        ("prefix", tmp_path / "allowed-not"),  # a sibling whose name starts alike
        ("empty", ""),
        ("relative", "outside/.bashrc"),
    ]:
        error = refusal(client, name, fusion_rule_host_path=str(path))
        assert error.code() == grpc.StatusCode.PERMISSION_DENIED, name  # type: ignore[attr-defined]
        assert "the host reads host paths only under its --host-paths directories" in error.details()  # type: ignore[attr-defined]
    info = client.open(
        "ok", golden_host_path=str(allowed / "golden"), fusion_rule_host_path=str(allowed / "." / "rule.json")
    )
    # Stored as resolved: the session reads the very file that was checked.
    assert info.settings.golden_host_path == str((allowed / "golden").resolve())
    assert info.settings.fusion_rule_host_path == str((allowed / "rule.json").resolve())


def test_a_session_compares_with_allowed_host_files_as_offline_compare_does(
    hosts: Hosts, sim: SimulationResult, tmp_path: Path
) -> None:
    server = hosts.start(tmp_path / "data", host_paths=(sim.golden_dir.parent,))
    client = hosts.client(server)
    client.open("h1", golden_host_path=str(sim.golden_dir), fusion_rule_host_path=str(sim.fusion_rule))
    dumps = {key: data for key, data in simulation_files(sim).items() if key[0] == pb.DUMP}
    assert {a.status for a in client.send("h1", dumps)} == {pb.UploadAck.STORED}
    info = client.close("h1")
    (name,) = [n for n in info.result_files if n.startswith("result_") and n.endswith(".csv")]
    assert client.fetch("h1", name) == offline_csv(sim, tmp_path / "offline")


def test_an_allowed_directory_must_exist(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for given in (tmp_path / "nosuch", tmp_path / "file"):
        with pytest.raises(DumpcmpError, match=f"^--host-paths {given}: not an existing directory$"):
            start(HostConfig("127.0.0.1:0", tmp_path / "data", host_paths=(given,)))
    assert not (tmp_path / "data").exists()


def test_an_allowed_host_path_that_is_not_there_is_refused_when_the_session_opens(
    hosts: Hosts, tmp_path: Path, status_of: StatusOf
) -> None:
    # Said to the agent before it streams anything, in its options' words; it was found only at
    # the close, as the host's "golden path … holds neither golden npy files nor NPU dump files".
    allowed = tmp_path / "allowed"
    (allowed / "golden").mkdir(parents=True)
    (allowed / "rule.json").write_text("{}")
    client = hosts.client(hosts.start(tmp_path / "data", host_paths=(allowed,)))
    no_dir, no_file = "no such directory on the host", "no such file on the host"
    for name, setting, path, said in [
        ("g1", "golden_host_path", allowed / "nosuch", f"--golden-on-host {{!r}}: {no_dir}"),
        ("g2", "golden_host_path", allowed / "rule.json", f"--golden-on-host {{!r}}: {no_dir}"),
        ("r1", "fusion_rule_host_path", allowed / "nosuch.json", f"--fusion-rule-on-host {{!r}}: {no_file}"),
        ("r2", "fusion_rule_host_path", allowed / "golden", f"--fusion-rule-on-host {{!r}}: {no_file}"),
    ]:
        error = refusal(client, name, **{setting: str(path)})
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, name  # type: ignore[attr-defined]
        assert error.details() == said.format(str(path)), name  # type: ignore[attr-defined]
        assert status_of(lambda n=name: client.info(n)) == grpc.StatusCode.NOT_FOUND  # no session was made


def test_a_host_started_with_a_relative_data_directory_reports_absolute_paths(
    hosts: Hosts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client is on another machine, or in another directory: a path relative to the directory
    the host was started in finds nothing there, and says nothing of where to look on the host."""
    sim = simulate("zoo:small_cnn", tmp_path / "run", faults=("/block2/Add=noise:0.5",), seed=5)
    monkeypatch.chdir(tmp_path)
    host = hosts.start(Path("data"))
    client = hosts.client(host)
    client.open("s1", **session_settings())
    files = simulation_files(sim)
    directory = next(path for kind, path in files if kind == pb.DUMP).rpartition("/")[0]
    files[(pb.DUMP, f"{directory}/unnamed.dump")] = b"x"
    client.send("s1", files)
    info = client.close("s1")
    session_dir = tmp_path / "data" / "sessions" / "s1"
    assert info.data_dir == str(session_dir)
    assert f"result: {session_dir / 'results'}" in info.summary
    assert f"skipped {session_dir / 'dump' / directory / 'unnamed.dump'}:" in info.summary
    assert all(str(session_dir) in line for line in info.summary.splitlines() if "sessions" in line)


def test_a_link_in_an_allowed_golden_directory_to_a_file_outside_is_refused(
    hosts: Hosts, tmp_path: Path, secret: Path, status_of: StatusOf
) -> None:
    # The session opened, and its comparison read the link's target (a row said "not a numpy
    # .npy file (a text file)"): any file the host may read, through a link under --host-paths.
    allowed = tmp_path / "allowed"
    (allowed / "golden/sub").mkdir(parents=True)
    (allowed / "golden/conv.0.1.npy").write_bytes(b"npy")
    (allowed / "kept.npy").write_bytes(b"npy")
    (allowed / "golden/inside.0.1.npy").symlink_to(allowed / "kept.npy")  # resolves inside: read
    client = hosts.client(hosts.start(tmp_path / "data", host_paths=(allowed,)))
    client.open("ok", golden_host_path=str(allowed / "golden"))
    (allowed / "golden/sub/Passwd.0.1.npy").symlink_to(secret)
    error = refusal(client, "s1", golden_host_path=str(allowed / "golden"))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED  # type: ignore[attr-defined]
    assert error.details() == (  # type: ignore[attr-defined]
        f"--golden-on-host {str(allowed / 'golden')!r}: sub/Passwd.0.1.npy in it is a symbolic link outside "
        "the host's --host-paths directories; the host reads host paths only under them"
    )
    assert status_of(lambda: client.info("s1")) == grpc.StatusCode.NOT_FOUND
