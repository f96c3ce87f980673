"""A model run on the simulated backend, its dump streamed while it runs (the hardware path)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from dumpcmp.agent.live_run import RunStart, stream_model_run
from dumpcmp.agent.runtime import AclRuntime, open_backend
from dumpcmp.agent.uploader import Uploader
from dumpcmp.errors import AclError, TransferError
from dumpcmp.fakes.simulate import prepare_simulation
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from tests.agent.dumps import dump_content
from tests.agent.recording_host import RecordingHost, ServerHandle, serving, uploader_for

SESSION = "live"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerHandle]:
    with serving(RecordingHost(tmp_path / "host")) as handle:
        yield handle


def _uploader(server: ServerHandle, state: Path) -> Uploader:
    uploader = uploader_for(server.target, state, SESSION)
    uploader.start()
    return uploader


def test_the_dump_streams_while_the_model_runs(server: ServerHandle, tmp_path: Path) -> None:
    setup = prepare_simulation("zoo:small_cnn", tmp_path / "sim", steps=2)
    earlier = (
        setup.npu_dump_dir / "20200101000000" / "0" / "old" / "1" / "0" / "Conv2D.old.1.0.1700000000000000"
    )
    earlier.parent.mkdir(parents=True)
    earlier.write_bytes(dump_content(10))  # an earlier run's file: not this run's
    uploader = _uploader(server, tmp_path / "state")
    runtime = AclRuntime(open_backend("sim", **setup.backend_options))
    golden = tmp_path / "conv.0.1.npy"
    golden.write_bytes(b"golden")
    streamed = stream_model_run(
        runtime, uploader, setup.model_path, setup.inputs, setup.acl_config, setup.npu_dump_dir,
        start=lambda _model_id: RunStart("r1", ((pb.GOLDEN, golden.name, golden),)), steps=2, quiet=0.05,
    )  # fmt: skip
    report = uploader.finish()
    assert streamed.not_sent == () and report.problems == ()
    written = sorted(p for p in setup.npu_dump_dir.rglob("*") if p.is_file() and p != earlier)
    assert streamed.dump_files == len(written) == report.stored - 1 > 0  # and the golden file
    acks = [path for _s, path, _st in server.host.acks]
    assert acks[:2] == ["run:r1", golden.name] and acks[-1] == "run:r1"
    assert set(server.host.sessions[SESSION].file_runs.values()) == {"r1"}
    sent = {p for p in acks[2:] if not p.startswith("run:")}
    assert sent == {p.relative_to(setup.npu_dump_dir).as_posix() for p in written}
    assert server.host.sessions[SESSION].runs == [("r1", pb.RunMark.START), ("r1", pb.RunMark.END)]


def test_a_failed_run_has_no_end_mark(server: ServerHandle, tmp_path: Path) -> None:
    setup = prepare_simulation("zoo:small_cnn", tmp_path / "sim")
    uploader = _uploader(server, tmp_path / "state")
    runtime = AclRuntime(open_backend("sim", **setup.backend_options))
    wrong = [np.zeros((1, 1), dtype=np.float32)]
    with pytest.raises(AclError):
        stream_model_run(
            runtime,
            uploader,
            setup.model_path,
            wrong,
            setup.acl_config,
            setup.npu_dump_dir,
            start=lambda _model_id: RunStart("r2"),
            quiet=0.05,
        )
    uploader.finish()
    assert server.host.sessions[SESSION].runs == [("r2", pb.RunMark.START)]


def test_a_run_the_host_refused_stops_after_its_step(
    server: ServerHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A second --sim device into a session holding another run's golden data simulated every
    # step, each of its files refused, then failed: the refusal came right after its START.
    setup = prepare_simulation("zoo:small_cnn", tmp_path / "sim", steps=3)
    uploader = _uploader(server, tmp_path / "state")
    monkeypatch.setattr(uploader, "run_dropped", lambda run_id: "session live is closing")
    runtime = AclRuntime(open_backend("sim", **setup.backend_options))
    with pytest.raises(
        TransferError, match=r"^run r4 stopped after step 0: the host refused it: session live is closing$"
    ):
        stream_model_run(
            runtime, uploader, setup.model_path, setup.inputs, setup.acl_config, setup.npu_dump_dir,
            start=lambda _model_id: RunStart("r4"), steps=3, quiet=0.05,
        )  # fmt: skip
    uploader.finish()
    assert server.host.sessions[SESSION].runs == [("r4", pb.RunMark.START)]  # no END: replaced later


def test_an_uploader_says_a_run_whose_start_was_refused_is_dropped(
    server: ServerHandle, tmp_path: Path
) -> None:
    server.host.refuse_runs = True
    uploader = _uploader(server, tmp_path / "state")
    uploader.add_run_mark("r5", pb.RunMark.START)
    uploader.settle()
    assert uploader.run_dropped("r5") == "run was replaced"
    assert uploader.run_dropped("r6") == ""
    uploader.finish()


def test_a_model_that_does_not_load_starts_no_run(server: ServerHandle, tmp_path: Path) -> None:
    setup = prepare_simulation("zoo:small_cnn", tmp_path / "sim")
    uploader = _uploader(server, tmp_path / "state")
    runtime = AclRuntime(open_backend("sim", **setup.backend_options))
    with pytest.raises(AclError):
        stream_model_run(
            runtime, uploader, tmp_path / "gone.onnx", setup.inputs, setup.acl_config, setup.npu_dump_dir,
            start=lambda _model_id: RunStart("r3"), quiet=0.05,
        )  # fmt: skip
    uploader.finish()
    assert not server.host.sessions or server.host.sessions[SESSION].runs == []


def test_only_the_loaded_models_dump_is_the_runs(server: ServerHandle, tmp_path: Path) -> None:
    # Another run writing under the same dump path meanwhile (same second, same time directory):
    # its files are not this run's.
    setup = prepare_simulation("zoo:small_cnn", tmp_path / "sim")
    uploader = _uploader(server, tmp_path / "state")
    backend = open_backend("sim", **setup.backend_options)
    intruder: list[Path] = []

    def other_run_writes(_run: object) -> None:
        if not intruder:
            dump_dir = backend.dump_dir(1)  # type: ignore[attr-defined]
            other = dump_dir.parent / "7" / "0" / "Conv2D.other.1.0.1700000000000001"
            other.parent.mkdir(parents=True)
            other.write_bytes(dump_content(10))
            intruder.append(other)

    backend.on_op = other_run_writes  # type: ignore[attr-defined]
    streamed = stream_model_run(
        AclRuntime(backend), uploader, setup.model_path, setup.inputs, setup.acl_config, setup.npu_dump_dir,
        start=lambda _model_id: RunStart("r4"), quiet=0.05,
    )  # fmt: skip
    uploader.finish()
    sent = {p for _s, p, _st in server.host.acks}
    assert intruder and intruder[0].relative_to(setup.npu_dump_dir).as_posix() not in sent
    assert streamed.dump_files == len(backend.written)  # type: ignore[attr-defined]
