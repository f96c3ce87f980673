"""The fakes package surface: lazy exports, and no onnx/onnxruntime for a bare import."""

from __future__ import annotations

import subprocess
import sys

import dumpcmp.fakes


def test_exports_resolve_and_are_listed() -> None:
    assert sorted(dumpcmp.fakes.__all__) == dumpcmp.fakes.__all__
    for name in dumpcmp.fakes.__all__:
        assert getattr(dumpcmp.fakes, name) is not None


def test_a_bare_import_loads_neither_onnx_nor_onnxruntime() -> None:
    code = "import sys, dumpcmp.fakes; print(sorted(m for m in ('onnx', 'onnxruntime') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_simulator_does_not_import_the_agent() -> None:
    code = "import sys, dumpcmp.fakes.npu, dumpcmp.fakes.simulate; print('dumpcmp.agent' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
