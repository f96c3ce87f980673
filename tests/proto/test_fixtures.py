"""The shared reference dumps (read back bit-exactly by CANN's own reader) decode to their
expected tensors, and the 2.0 ones re-encode to the same bytes.

``expected/*.npy`` hold each tensor in its logical layout and ``original_shape``; bf16 is stored
as its uint16 bit pattern. Every comparison is on bytes, so NaN and -0.0 count.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dumpcmp.proto.codec import DumpTensor, Layout, TensorKind, dump_bytes, read_dump
from dumpcmp.proto.dtypes import DataType, Format
from dumpcmp.proto.walker import GroupKey, walk_dump_tree


def _tensor_cases(manifest: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(entry["file"], tensor) for entry in manifest["files"] for tensor in entry["tensors"]]


def _expected_bits(dump_fixtures: Path, case: dict[str, Any]) -> np.ndarray:
    expected = np.load(dump_fixtures / case["expected"], allow_pickle=False)
    assert tuple(expected.shape) == tuple(case["original_shape"])
    return expected


def _as_stored(array: np.ndarray, case: dict[str, Any]) -> np.ndarray:
    """Our decoded tensor seen the way ``expected`` stores it (bf16 → its uint16 bits)."""
    if case["dtype_enum"] == DataType.DT_BF16:
        assert case["expected_stored_as"].startswith("uint16")
        return array.view(np.uint16)
    return array


def _find(dump_fixtures: Path, file: str, case: dict[str, Any]) -> DumpTensor:
    dump = read_dump(dump_fixtures / file)
    return dump.tensors(TensorKind(case["kind"]))[case["index"]]


# An oracle independent of dumpcmp.proto.layouts: formats.md §6 formulas, written out directly.
def _reference_logical(device: np.ndarray, fmt: Format, original: tuple[int, ...]) -> np.ndarray:
    if fmt in (Format.ND, Format.NCHW, Format.NHWC):
        return device.reshape(original)
    if fmt == Format.NC1HWC0:
        n, c1, h, w, c0 = device.shape
        return device.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)[:, : original[1]]
    if fmt == Format.FRACTAL_Z:
        n, c, h, w = original
        c0 = device.shape[3]
        c1, n1 = -(-c // c0), device.shape[1]
        blocks = device.reshape(c1, h, w, n1, 16, c0).transpose(3, 4, 0, 5, 1, 2)
        return blocks.reshape(n1 * 16, c1 * c0, h, w)[:n, :c]
    if fmt == Format.FRACTAL_NZ:
        rows, cols = original[-2], original[-1]
        w1, h1, h0, c0 = device.shape[-4:]
        batch = device.reshape(-1, w1, h1, h0, c0).transpose(0, 2, 3, 1, 4)
        return batch.reshape(-1, h1 * h0, w1 * c0)[:, :rows, :cols].reshape(original)
    raise AssertionError(f"no reference for {fmt.name}")


def test_manifest_lists_every_file_of_the_tree(dump_fixtures: Path, dump_manifest: dict[str, Any]) -> None:
    on_disk = sorted(
        str(p.relative_to(dump_fixtures))
        for p in dump_fixtures.rglob("*")
        if p.is_file() and p.parent.name != "expected" and p.name not in ("manifest.json", "README.md")
    )
    assert on_disk == sorted(entry["file"] for entry in dump_manifest["files"])


def test_header_fields_match_the_manifest(dump_fixtures: Path, dump_manifest: dict[str, Any]) -> None:
    for entry in dump_manifest["files"]:
        dump = read_dump(dump_fixtures / entry["file"])
        assert dump.op_name == entry["op_name"]
        assert dump.layout is (Layout.V2 if entry["layout"] == "2.0" else Layout.LEGACY)
        assert len(dump.inputs) == sum(t["kind"] == "input" for t in entry["tensors"])
        assert len(dump.outputs) == sum(t["kind"] == "output" for t in entry["tensors"])
        for case in entry["tensors"]:
            tensor = dump.tensors(TensorKind(case["kind"]))[case["index"]]
            assert tensor.data_type == case["dtype_enum"]
            assert tensor.format_name == case["format"]
            assert tensor.shape == tuple(case["device_shape"])
            assert tensor.original_shape == tuple(case["original_shape"])
            assert tensor.array().shape == tuple(case["device_shape"])


def test_every_tensor_decodes_bit_for_bit(dump_fixtures: Path, dump_manifest: dict[str, Any]) -> None:
    """Device bytes → logical layout by the spec formulas == expected, bit for bit."""
    checked = 0
    for file, case in _tensor_cases(dump_manifest):
        tensor = _find(dump_fixtures, file, case)
        expected = _expected_bits(dump_fixtures, case)
        ours = _reference_logical(tensor.array(), Format(tensor.format), tensor.original_shape)
        ours = _as_stored(ours, case)
        assert ours.dtype == expected.dtype, (file, case["kind"], case["index"])
        assert np.ascontiguousarray(ours).tobytes() == expected.tobytes(), (file, case["kind"], case["index"])
        checked += 1
    assert checked == 12


def test_logical_view_equals_expected_bit_for_bit(dump_fixtures: Path, dump_manifest: dict[str, Any]) -> None:
    """``DumpTensor.logical()`` (layouts.to_logical) reproduces every expected tensor."""
    pytest.importorskip("dumpcmp.proto.layouts")
    for file, case in _tensor_cases(dump_manifest):
        tensor = _find(dump_fixtures, file, case)
        expected = _expected_bits(dump_fixtures, case)
        logical = _as_stored(tensor.logical(), case)
        where = (file, case["kind"], case["index"])
        assert logical.shape == expected.shape, where
        assert logical.dtype == expected.dtype, where
        assert np.ascontiguousarray(logical).tobytes() == expected.tobytes(), where


def test_v2_files_re_encode_byte_identically(dump_fixtures: Path, dump_manifest: dict[str, Any]) -> None:
    v2 = [e["file"] for e in dump_manifest["files"] if e["layout"] == "2.0"]
    assert len(v2) == 4
    for file in v2:
        path = dump_fixtures / file
        assert dump_bytes(read_dump(path)) == path.read_bytes(), file


def test_legacy_fixture_is_read_as_legacy(dump_fixtures: Path, dump_manifest: dict[str, Any]) -> None:
    (legacy,) = [e["file"] for e in dump_manifest["files"] if e["layout"] == "legacy"]
    dump = read_dump(dump_fixtures / legacy)
    assert dump.layout is Layout.LEGACY
    assert dump.version != "2.0"


def test_fixture_tree_is_one_group(dump_fixtures: Path, dump_manifest: dict[str, Any]) -> None:
    tree = walk_dump_tree(dump_fixtures)
    assert list(tree.groups) == [GroupKey("0", "demo_net", "1", "0", session="20261121093000")]
    names = sorted(e.path.name for e in tree.entries)
    assert names == sorted(Path(e["file"]).name for e in dump_manifest["files"])
    assert tree.skipped == []  # README, manifest and expected/*.npy are known non-dumps
