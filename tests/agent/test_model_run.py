"""``run_model``: one model under a dump config, through the runtime, on the C stub and the simulator."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from dumpcmp.agent.acl import CtypesAcl
from dumpcmp.agent.model_run import ModelRun, run_model
from dumpcmp.agent.runtime import AclRuntime, open_backend
from dumpcmp.errors import AclError

if TYPE_CHECKING:
    from conftest import Stub


def test_the_documented_sequence_on_the_c_stub(
    acl: CtypesAcl, stub: Stub, model_file: Path, dump_config: Path
) -> None:
    stub.set_model_io(2, 2)
    executed_before: list[int] = []
    run = run_model(
        AclRuntime(acl), model_file, [np.array([1, 2], np.uint8)], dump_config, device=3, steps=2,
        on_step=lambda step: executed_before.append(stub.sequence().count("aclmdlExecute(1)") - step),
    )  # fmt: skip
    assert executed_before == [1, 1]  # on_step(i) comes right after step i's aclmdlExecute
    assert [[o.tolist() for o in step] for step in run.outputs] == [[[2, 3]], [[2, 3]]]
    assert run.dump_files == ()  # real AscendCL does not say which files it wrote
    assert stub.sequence() == [
        "aclInit(NULL)",
        "aclrtSetDevice(3)",
        "aclmdlInitDump()",
        f"aclmdlSetDump({dump_config})",
        f"aclmdlLoadFromFile({model_file})",
        "aclmdlExecute(1)",
        "aclmdlExecute(1)",
        "aclrtSynchronizeDevice()",
        "aclmdlFinalizeDump()",
        "aclmdlUnload(1)",
        "aclrtResetDevice(3)",
        "aclFinalize()",
    ]
    assert stub.leaks() == {}


def test_a_failure_unwinds_and_raises(
    acl: CtypesAcl, stub: Stub, model_file: Path, dump_config: Path
) -> None:
    stub.set_return("aclmdlExecute", 507011)
    with pytest.raises(AclError, match="aclmdlExecute failed with ACL_ERROR_RT_MODEL_EXECUTE"):
        run_model(AclRuntime(acl), model_file, [np.zeros(16, np.uint8)], dump_config)
    assert stub.names()[-3:] == ["aclmdlUnload", "aclrtResetDevice", "aclFinalize"]


def test_steps_must_be_positive(acl: CtypesAcl, model_file: Path, dump_config: Path) -> None:
    with pytest.raises(ValueError, match="steps must be at least 1"):
        run_model(AclRuntime(acl), model_file, [], dump_config, steps=0)


def test_it_runs_on_the_thread_that_calls_it(
    acl: CtypesAcl, stub: Stub, model_file: Path, dump_config: Path
) -> None:
    runs: list[ModelRun] = []
    worker = threading.Thread(
        target=lambda: runs.append(
            run_model(AclRuntime(acl), model_file, [np.zeros(16, np.uint8)], dump_config)
        )
    )
    worker.start()
    worker.join(timeout=10)
    assert len(runs) == 1 and stub.sequence()[-1] == "aclFinalize()"


def test_the_simulator_reports_the_files_of_this_run(tmp_path: Path) -> None:
    dump_dir = tmp_path / "dump"
    dump_dir.mkdir()
    config = tmp_path / "acl.json"
    config.write_text(json.dumps({"dump": {"dump_path": str(dump_dir), "dump_list": [{}]}}))
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)
    runtime = AclRuntime(open_backend("sim"))
    first = run_model(runtime, Path("zoo:small_cnn"), [x], config, steps=2)
    second = run_model(runtime, Path("zoo:small_cnn"), [x], config)
    assert {p.parent.name for p in first.dump_files} == {"0", "1"}
    assert second.dump_files and not set(second.dump_files) & set(first.dump_files)
    assert sorted(first.dump_files + second.dump_files) == sorted(
        p for p in dump_dir.rglob("*") if p.is_file()
    )
    (probs,) = second.outputs[0]
    assert probs.shape == (1, 10) and probs.dtype == np.float32
    np.testing.assert_array_equal(first.outputs[1][0], probs)
