"""Model input files: .npy, raw tensor bytes (.bin), and a clear line for anything else."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dumpcmp.errors import ConfigError
from dumpcmp.fakes.inputs import load_input


@pytest.mark.parametrize(
    ("name", "content", "kind"),
    [("x.json", b'{"x": [1, 2, 3, 4]}\n', "a JSON file"), ("x.csv", b"a,b\n1,2\n3,4\n", "a CSV file")],
)
def test_a_file_of_another_kind_is_named_not_read_as_raw_bytes(
    tmp_path: Path, name: str, content: bytes, kind: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ConfigError) as info:
        load_input(path, shape=(2, 2), dtype=np.dtype(np.float32))
    assert str(info.value) == f"input file {path} is {kind}: give an .npy file or raw tensor bytes (.bin)"


@pytest.mark.parametrize("name", ["x.bin", "x.raw", "x"])
def test_raw_tensor_bytes_are_read_whatever_the_suffix(tmp_path: Path, name: str) -> None:
    values = np.arange(4, dtype=np.float32)
    values.tofile(tmp_path / name)
    got = load_input(tmp_path / name, shape=(2, 2), dtype=np.dtype(np.float32))
    np.testing.assert_array_equal(got, values.reshape(2, 2))
