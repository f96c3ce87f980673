"""User format converters: loading, overriding the built-ins, and every way a file can be broken."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from dumpcmp.errors import ConverterPluginError
from dumpcmp.proto.custom_converters import CONVERT_DIR, CustomConverters
from dumpcmp.proto.dtypes import Format
from dumpcmp.proto.layouts import convert, to_device, to_logical

F = Format

# Marks its output so a test can tell the plugin ran instead of the built-in.
MARKING_PLUGIN = """
    import numpy as np

    def convert(shape_from, shape_to, array):
        assert isinstance(shape_from, list) and isinstance(shape_to, list)
        assert array.ndim == 1
        return np.full(shape_to, 7, dtype=array.dtype)
"""


def write_plugins(root: Path, files: dict[str, str]) -> Path:
    folder = root / CONVERT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for name, body in files.items():
        (folder / name).write_text(textwrap.dedent(body))
    return root


def load_one(tmp_path: Path, name: str, body: str) -> CustomConverters:
    return CustomConverters.load(write_plugins(tmp_path, {name: body}))


def test_a_custom_converter_overrides_the_built_in(tmp_path: Path) -> None:
    custom = load_one(tmp_path, "convert_NC1HWC0_to_NCHW.py", MARKING_PLUGIN)
    assert custom.pairs == [(F.NC1HWC0, F.NCHW)]
    device = to_device(np.ones((1, 3, 2, 2), dtype=np.float16), F.NC1HWC0)
    got = convert(device, F.NC1HWC0, F.NCHW, (1, 3, 2, 2), custom=custom)
    assert got.shape == (1, 3, 2, 2) and (got == 7).all()
    assert (to_logical(device, F.NC1HWC0, (1, 3, 2, 2), custom=custom) == 7).all()
    assert (convert(device, F.NC1HWC0, F.NHWC, (1, 2, 2, 3), custom=custom) == 1).all()  # built-in


def test_a_custom_converter_adds_a_pair(tmp_path: Path) -> None:
    custom = load_one(tmp_path, "convert_FRACTAL_Z_3D_TRANSPOSE_to_NCDHW.py", MARKING_PLUGIN)
    assert custom.lookup(F.FRACTAL_Z_3D_TRANSPOSE, F.NCDHW) is not None
    got = convert(np.zeros((8, 1, 16, 16)), F.FRACTAL_Z_3D_TRANSPOSE, F.NCDHW, (2, 2, 2, 2, 2), custom=custom)
    assert got.shape == (2, 2, 2, 2, 2)


def test_names_with_underscores_and_any_case(tmp_path: Path) -> None:
    custom = CustomConverters.load(
        write_plugins(
            tmp_path,
            {
                "convert_FRACTAL_NZ_to_ND.py": MARKING_PLUGIN,
                "convert_nc1hwc0_TO_nhwc.py": MARKING_PLUGIN,
                "__init__.py": "",
            },
        )
    )
    assert custom.pairs == [(F.NC1HWC0, F.NHWC), (F.FRACTAL_NZ, F.ND)]
    assert len(custom) == 2
    assert custom.lookup(F.FRACTAL_NZ, F.NCHW) is None


def test_an_empty_folder_has_no_converters(tmp_path: Path) -> None:
    (tmp_path / CONVERT_DIR).mkdir()
    assert len(CustomConverters.load(tmp_path)) == 0


def test_loading_leaves_sys_path_and_modules_alone(tmp_path: Path) -> None:
    path_before, modules_before = list(sys.path), set(sys.modules)
    load_one(tmp_path, "convert_NC1HWC0_to_NCHW.py", MARKING_PLUGIN)
    assert sys.path == path_before
    assert set(sys.modules) == modules_before


@pytest.mark.parametrize(
    ("name", "body", "reason"),
    [
        ("helper.py", MARKING_PLUGIN, "convert_{FROM}_to_{TO}"),
        ("convert_NC1HWC0_NCHW.py", MARKING_PLUGIN, "two format names"),
        ("convert_BOGUS_to_NCHW.py", MARKING_PLUGIN, "two format names"),
        ("convert_NC1HWC0_to_NCHW.py", "def convert(:\n", "import failed: SyntaxError"),
        ("convert_NC1HWC0_to_NCHW.py", "raise RuntimeError('boom')\n", "import failed: RuntimeError: boom"),
        ("convert_NC1HWC0_to_NCHW.py", "import sys\nsys.exit(3)\n", "import failed: SystemExit"),
        ("convert_NC1HWC0_to_NCHW.py", "def transform(a, b, c):\n    return c\n", "no function convert"),
        ("convert_NC1HWC0_to_NCHW.py", "convert = 3\n", "no function convert"),
        ("convert_NC1HWC0_to_NCHW.py", "def convert(array):\n    return array\n", "must take"),
    ],
)
def test_broken_files_are_named(tmp_path: Path, name: str, body: str, reason: str) -> None:
    with pytest.raises(ConverterPluginError) as info:
        load_one(tmp_path, name, body)
    assert info.value.path == str(tmp_path / CONVERT_DIR / name)
    assert reason in info.value.reason
    assert name in str(info.value)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            "def convert(a, b, c):\n    raise ValueError('bad shape')\n",
            "convert() raised ValueError: bad shape",
        ),
        ("def convert(a, b, c):\n    return c.tolist()\n", "returned list, not a numpy array"),
        ("def convert(a, b, c):\n    return c[:5]\n", "returned 5 elements, shape [1, 3, 2, 2] needs 12"),
    ],
)
def test_a_converter_that_misbehaves_at_run_time(tmp_path: Path, body: str, reason: str) -> None:
    custom = load_one(tmp_path, "convert_NC1HWC0_to_NCHW.py", body)
    device = np.zeros((1, 1, 2, 2, 16), dtype=np.float16)
    with pytest.raises(ConverterPluginError) as info:
        to_logical(device, F.NC1HWC0, (1, 3, 2, 2), custom=custom)
    assert reason in info.value.reason
    assert info.value.path.endswith("convert_NC1HWC0_to_NCHW.py")


def test_a_converter_may_return_any_shape_of_the_right_size(tmp_path: Path) -> None:
    body = "def convert(shape_from, shape_to, array):\n    return array[:12].reshape(3, 4)\n"
    custom = load_one(tmp_path, "convert_NC1HWC0_to_NCHW.py", body)
    device = np.arange(64, dtype=np.float32).reshape(1, 1, 2, 2, 16)
    got = convert(device, F.NC1HWC0, F.NCHW, (1, 3, 2, 2), custom=custom)
    np.testing.assert_array_equal(got.reshape(-1), np.arange(12))


def test_two_files_for_one_pair(tmp_path: Path) -> None:
    root = write_plugins(
        tmp_path, {"convert_NCHW_to_NHWC.py": MARKING_PLUGIN, "convert_nchw_to_nhwc.py": MARKING_PLUGIN}
    )
    with pytest.raises(ConverterPluginError, match="second converter"):
        CustomConverters.load(root)


def test_missing_directories(tmp_path: Path) -> None:
    with pytest.raises(ConverterPluginError, match="no such directory") as info:
        CustomConverters.load(tmp_path / "absent")
    assert info.value.path == str(tmp_path / "absent")
    with pytest.raises(ConverterPluginError, match=CONVERT_DIR) as info:
        CustomConverters.load(tmp_path)
    assert info.value.path == str(tmp_path / CONVERT_DIR)
