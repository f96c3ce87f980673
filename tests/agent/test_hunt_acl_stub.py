"""A hunt through the ctypes binding over the C stub of libascendcl: aclInit once for the whole
hunt, each pass the documented dump sequence under the pass's own acl.json, its dump found by
the watcher (the hardware's path: the binding does not say which files it wrote)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import grpc
import numpy as np
import pytest

from dumpcmp.agent.acl import CtypesAcl
from dumpcmp.agent.hunt import run_hunt
from dumpcmp.agent.run import AgentRun, extra_files, new_run_token, prepared_acl_run
from dumpcmp.agent.runtime import AclRuntime
from dumpcmp.agent.session import SessionPlan
from dumpcmp.agent.uploader import UploadSettings
from dumpcmp.commands.sim import simulate
from dumpcmp.errors import SessionClosed
from dumpcmp.fakes.simulate import SimulationResult
from dumpcmp.host.server.serve import HostServer
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from dumpcmp.proto.channel import ChannelOptions
from dumpcmp.proto.names import sanitize_dump_name
from dumpcmp.proto.session_names import CLOSED_METADATA, CLOSING_REFUSAL
from tests.agent.conftest import Stub
from tests.host.server.hostkit import Hosts, host_fixture, hosts_fixture  # noqa: F401 (fixtures)

FAULT = "/block2/Add=bias:0.5"


class _DumpingAcl(CtypesAcl):
    """The binding over the stub, which computes no network: after each execute, the dump files
    a simulated run of the same model, fault and capture wrote appear where the runtime writes
    them, ``{dump_path}/{time}/{device}/{model}/{model_id}/0``."""

    def __init__(self, library: Path, stats: SimulationResult, tensors: SimulationResult) -> None:
        super().__init__(str(library))
        self._runs = {"stats": stats, "tensor": tensors}
        self._dump: dict[str, object] = {}

    def set_dump(self, dump_cfg_path: str) -> int:
        self._dump = json.loads(Path(dump_cfg_path).read_text())["dump"]
        return super().set_dump(dump_cfg_path)

    def execute(self, model_id: int, inputs: Sequence[np.ndarray]) -> tuple[list[np.ndarray], int]:
        outputs, ret = super().execute(model_id, inputs)
        dump = self._dump
        items = dump["dump_list"]
        assert isinstance(items, list)
        layers = {sanitize_dump_name(name) for name in items[0].get("layer", [])}
        source = self._runs[str(dump["dump_data"])]
        target = Path(str(dump["dump_path"])) / f"2026010100000{model_id}/0/small_cnn/{model_id}/0"
        target.mkdir(parents=True)
        for path in source.dump_files:
            if not layers or path.name.split(".")[1] in layers:
                shutil.copyfile(path, target / path.name)
        return outputs, ret


def _sims(tmp_path: Path) -> tuple[SimulationResult, SimulationResult]:
    stats_config = tmp_path / "stats.json"
    (tmp_path / "stats-dump").mkdir()
    dump = {
        "dump_path": str(tmp_path / "stats-dump"),
        "dump_data": "stats",
        "dump_list": [{"model_name": "small_cnn"}],
    }
    stats_config.write_text(json.dumps({"dump": dump}))
    stats = simulate("zoo:small_cnn", tmp_path / "stats", faults=(FAULT,), acl_config=stats_config)
    return stats, simulate("zoo:small_cnn", tmp_path / "tensors", faults=(FAULT,))


def test_a_hunt_through_the_ctypes_binding_inits_once_and_runs_each_pass_under_its_own_config(
    stub: Stub, host: HostServer, tmp_path: Path, model_file: Path
) -> None:
    stats, tensors = _sims(tmp_path)
    stub.set_model_io(16, 16)
    inputs = tmp_path / "in.npy"
    np.save(inputs, np.arange(16, dtype=np.uint8))
    dump_root = tmp_path / "dump"
    dump_root.mkdir()
    config = tmp_path / "acl.json"
    config.write_text(json.dumps({"dump": {"dump_path": str(dump_root), "dump_list": [{}]}}))
    token = new_run_token()
    extras = extra_files(stats.golden_dir, stats.fusion_rule, [])
    prepared = prepared_acl_run(
        model_file, [inputs], config, dump_root, device=0, steps=1, token=token, extras=extras,
        acl_lib=str(stub.path),
    )  # fmt: skip
    run = dataclasses.replace(prepared, runtime=AclRuntime(_DumpingAcl(stub.path, stats, tensors)))
    plan = SessionPlan("h1", "small_cnn", golden_uploaded=True, fusion_rule_name=stats.fusion_rule.name)
    agent = AgentRun(ChannelOptions(f"127.0.0.1:{host.port}"), plan, tmp_path / "state", UploadSettings())
    hunted = run_hunt(agent, run, f"--model {model_file}")

    assert hunted.verdict.kind == "isolated" and hunted.verdict.culprit == "/block2/Add"
    assert len(hunted.passes) >= 2 and hunted.passes[0].dump_files == len(stats.dump_files)
    sequence = [call.split("(", 1)[0] for call in stub.sequence()]
    assert sequence.count("aclInit") == len(hunted.passes) + 1  # the hunt's, then each pass's reference
    assert sequence.count("aclFinalize") == 1 and sequence[-1] == "aclFinalize"
    assert sequence.count("aclFinalizeReference") == len(hunted.passes)
    one_pass = [
        "aclInit", "aclrtSetDevice", "aclmdlInitDump", "aclmdlSetDump", "aclmdlLoadFromFile", "aclmdlExecute",
        "aclrtSynchronizeDevice", "aclmdlFinalizeDump", "aclmdlUnload", "aclrtResetDevice",
        "aclFinalizeReference",
    ]  # fmt: skip
    assert sequence == ["aclInit", *one_pass * len(hunted.passes), "aclFinalize"]
    set_dumps = [c for c in stub.sequence() if c.startswith("aclmdlSetDump")]
    assert len(set(set_dumps)) == len(hunted.passes)  # each pass its own acl.json
    assert stub.init_refs() == 0 and stub.leaks() == {}
    info = hunted.outcome.uploader.close_session()
    assert not info.nothing_compared


class _Refused(grpc.RpcError, grpc.Call):  # type: ignore[misc]
    """A NextCapture the host refused because its session is closing (as the host says it)."""

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.FAILED_PRECONDITION

    def details(self) -> str:
        return CLOSING_REFUSAL.format("h1")

    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        return ((CLOSED_METADATA, "closing"),)

    def initial_metadata(self) -> tuple[tuple[str, str], ...]:
        return ()

    def is_active(self) -> bool:
        return False

    def time_remaining(self) -> float | None:
        return None

    def cancel(self) -> bool:
        return False

    def add_callback(self, callback: object) -> bool:
        return False


def test_a_next_pass_refused_as_its_session_closes_is_the_closed_sessions_one_line() -> None:
    # It was "host H: FAILED_PRECONDITION: session h1 is closing: ..." (call_failed's raw status).
    from dumpcmp.agent import hunt

    class Stub:
        def NextCapture(self, request: object, timeout: float) -> object:
            raise _Refused()

    host = ChannelOptions("127.0.0.1:1")
    request = pb.NextCaptureRequest(session="h1", protocol=1, hunt="00112233445566aa", model="m")
    with pytest.raises(SessionClosed) as caught:
        hunt._plan(Stub(), request, host, give_up=0)  # type: ignore[arg-type]
    assert str(caught.value) == "session h1 on host 127.0.0.1:1 is closing and its results are final"
