"""The public surface of dumpcmp.acl_config is exactly its ``__all__``."""

from __future__ import annotations

import subprocess
import sys
import types

import dumpcmp.acl_config as acl_config


def test_all_lists_every_public_name() -> None:
    public = {
        name
        for name, value in vars(acl_config).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert set(acl_config.__all__) == public
    assert len(acl_config.__all__) == len(set(acl_config.__all__))


def test_importing_the_package_loads_no_cli_or_heavy_dependencies() -> None:
    # The simulated NPU imports this package; it must not pull in typer, rich, grpc or numpy.
    code = (
        "import sys, dumpcmp.acl_config; "
        "print(sorted(m for m in ('typer', 'rich', 'grpc', 'numpy', 'onnx') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
