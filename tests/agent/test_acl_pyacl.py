"""The pyACL-shaped face: a pyACL-style script runs unchanged, codes come back instead of errors."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from dumpcmp.agent.acl import CtypesAcl
from dumpcmp.agent.pyacl import AclFace, make_acl

if TYPE_CHECKING:
    from conftest import Stub


@pytest.fixture
def face(acl: CtypesAcl) -> AclFace:
    return make_acl(acl)


def test_a_pyacl_dump_script(face: AclFace, stub: Stub, dump_config: Path, model_file: Path) -> None:
    acl = face  # read the body as a pyACL script
    stub.set_model_io(3, 3)
    assert acl.init() == 0
    assert acl.rt.set_device(1) == 0
    assert acl.mdl.init_dump() == 0
    assert acl.mdl.set_dump(str(dump_config)) == 0
    model_id, ret = acl.mdl.load_from_file(str(model_file))
    assert (model_id, ret) == (1, 0)
    outputs, ret = acl.mdl.execute(model_id, [np.array([9, 8, 7], np.uint8)])
    assert ret == 0
    np.testing.assert_array_equal(outputs[0], [10, 9, 8])
    assert acl.rt.synchronize_device() == 0
    assert acl.mdl.finalize_dump() == 0
    assert acl.mdl.unload(model_id) == 0
    assert acl.rt.reset_device(1) == 0
    assert acl.finalize() == 0
    assert stub.sequence() == [
        "aclInit(NULL)",
        "aclrtSetDevice(1)",
        "aclmdlInitDump()",
        f"aclmdlSetDump({dump_config})",
        f"aclmdlLoadFromFile({model_file})",
        "aclmdlExecute(1)",
        "aclrtSynchronizeDevice()",
        "aclmdlFinalizeDump()",
        "aclmdlUnload(1)",
        "aclrtResetDevice(1)",
        "aclFinalize()",
    ]


def test_init_with_a_config_path(face: AclFace, stub: Stub) -> None:
    assert face.init("/etc/acl_init.json") == 0
    assert stub.calls() == ["aclInit(/etc/acl_init.json)"]


def test_failures_are_returned_not_raised(face: AclFace, tmp_path: Path) -> None:
    assert face.finalize() == 100037
    assert face.rt.set_device(0) == 100001
    assert face.rt.reset_device(0) == 100001
    assert face.rt.synchronize_device() == 100001
    assert face.mdl.init_dump() == 100001
    assert face.init() == 0
    assert face.init() == 100002
    assert face.mdl.set_dump(str(tmp_path / "acl.json")) == 100045
    assert face.mdl.finalize_dump() == 100045
    _, ret = face.mdl.load_from_file(str(tmp_path / "missing.om"))
    assert ret == 100014
    assert face.mdl.execute(1, []) == ([], 100011)
    assert face.mdl.unload(1) == 100011


def test_get_recent_err_msg(face: AclFace) -> None:
    assert face.get_recent_err_msg() == ""
    face.rt.set_device(0)
    assert face.get_recent_err_msg() == "stub aclrtSetDevice failed with 100001: aclInit has not been called"


def test_return_shapes_match_pyacl(face: AclFace, model_file: Path) -> None:
    face.init()
    loaded = face.mdl.load_from_file(str(model_file))
    assert isinstance(loaded, tuple) and len(loaded) == 2
    assert all(isinstance(v, int) for v in loaded)
    ret = face.rt.set_device(0)
    assert type(ret) is int
