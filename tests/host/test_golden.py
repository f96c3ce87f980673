"""Golden sources: npy directories read through the shared npy reader, read-only and mapped."""

from __future__ import annotations

import mmap
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from dumpcmp.errors import DumpcmpError, FormatError
from dumpcmp.host.golden import NpuDumpGolden, NpyGoldenDir, open_golden
from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, TensorKind, write_dump
from dumpcmp.proto.npy import save_npy

STAMP = 1_700_000_000_000_000
VALUES = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
BF16 = VALUES.astype(ml_dtypes.bfloat16)


def test_bf16_goldens_of_every_kind_give_values_not_bits(tmp_path: Path) -> None:
    save_npy(tmp_path / f"mm.0.{STAMP}.npy", BF16, keep_dtype=True)  # bits + sidecar
    np.save(tmp_path / f"add.0.{STAMP}.npy", BF16)  # np.save of bfloat16: opaque '<V2'
    save_npy(tmp_path / f"mul.0.{STAMP}.npy", BF16)  # widened to float32
    source = open_golden(tmp_path)
    assert isinstance(source, NpyGoldenDir)
    assert source.skipped == []  # the sidecar belongs to its npy file, it is not a stray file
    for op in ("mm", "add", "mul"):
        found = source.output(op, 0)
        assert found is not None, op
        loaded = found.load()
        assert loaded.dtype.kind != "u", op  # raw bits are never compared as numbers
        assert np.array_equal(loaded.astype(np.float32), BF16.astype(np.float32)), op


def test_a_sidecar_goes_by_the_file_name_on_disk(tmp_path: Path) -> None:
    # The listing tells which goldens have a dtype sidecar; a long name mapped by mapping.csv
    # keeps the sidecar of the short file, and a sidecar that is no regular file is none.
    save_npy(tmp_path / "1.npy", BF16, keep_dtype=True)
    (tmp_path / "mapping.csv").write_text(f"1.npy,long_op.0.{STAMP}.npy\n")
    save_npy(tmp_path / f"mm.0.{STAMP}.npy", BF16, keep_dtype=True)
    (tmp_path / f"mm.0.{STAMP}.npy.json").unlink()
    (tmp_path / f"mm.0.{STAMP}.npy.json").mkdir()
    source = open_golden(tmp_path)
    assert isinstance(source, NpyGoldenDir)
    mapped, unmarked = source.output("long_op", 0), source.output("mm", 0)
    assert mapped is not None and unmarked is not None
    assert np.array_equal(mapped.load().astype(np.float32), BF16.astype(np.float32))
    assert unmarked.load().dtype == np.uint16  # its bits, refused later as raw bits


@pytest.mark.parametrize("rows", [1, 2048])
def test_loaded_goldens_are_read_only_memory_maps(tmp_path: Path, rows: int) -> None:
    np.save(tmp_path / f"conv.0.{STAMP}.npy", np.tile(VALUES, (rows, 1)))
    found = open_golden(tmp_path).output("conv", 0)  # type: ignore[union-attr]
    assert found is not None
    loaded = found.load()
    assert not loaded.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        loaded[0, 0] = 1.0
    base: object = loaded
    while isinstance(base, np.ndarray):
        base = base.base
    # Backed by the file's map, not read into fresh memory; a file that fits in the read that
    # takes its header is not mapped as well
    assert isinstance(base, mmap.mmap if rows > 1 else bytes)


def test_dump_goldens_are_read_only_too(tmp_path: Path) -> None:
    tensor = DumpTensor.from_array(TensorKind.OUTPUT, 0, VALUES)
    dump = DumpFile("", Layout.V2, "2.0", STAMP, "net/conv", outputs=(tensor,))
    write_dump(tmp_path / f"Conv2D.net_conv.1.2.{STAMP}", dump)
    source = open_golden(tmp_path)
    assert isinstance(source, NpuDumpGolden)
    found = source.tensor("net/conv", TensorKind.OUTPUT, 0)
    assert found is not None
    assert not found.load().flags.writeable


def test_a_junk_npy_golden_is_one_clear_line(tmp_path: Path) -> None:
    (tmp_path / f"conv.0.{STAMP}.npy").write_text("definitely not numpy\n")
    found = open_golden(tmp_path).output("conv", 0)  # type: ignore[union-attr]
    assert found is not None
    with pytest.raises(FormatError) as info:
        found.load()
    assert str(info.value) == f"{tmp_path / f'conv.0.{STAMP}.npy'}: not a numpy .npy file (a text file)"


def test_a_fifo_among_the_golden_files_is_skipped_not_opened(tmp_path: Path) -> None:
    import os

    np.save(tmp_path / "Relu_1.0.1700000000000000.npy", np.zeros(2, np.float32))
    fifo = tmp_path / "Relu_2.0.1700000000000000.npy"
    os.mkfifo(fifo)
    source = NpyGoldenDir(tmp_path)
    assert source.skipped == [(fifo, "not a regular file: a FIFO")]
    assert source.output("Relu_1", 0) is not None and source.output("Relu_2", 0) is None


def test_golden_files_without_a_timestamp_are_named_in_the_error(tmp_path: Path) -> None:
    # "holds neither golden npy files nor NPU dump files" for a directory of 26 .npy files.
    for op in ("conv", "relu"):
        np.save(tmp_path / f"{op}.0.npy", np.ones(3, np.float32))
    with pytest.raises(DumpcmpError) as raised:
        open_golden(tmp_path)
    assert str(raised.value).startswith(
        f"golden path {tmp_path} holds 2 .npy files, none named as golden data (e.g. "
    )


def test_a_second_run_in_the_golden_directory_is_named_and_the_newest_used(tmp_path: Path) -> None:
    # Two runs' files in one directory: one tensor of the wrong run blames the wrong op.
    np.save(tmp_path / "conv.0.1700000000000002.npy", np.full(3, 2.0, np.float32))
    np.save(tmp_path / "conv.0.1700000000000001.npy", np.full(3, 1.0, np.float32))
    source = open_golden(tmp_path)
    found = source.output("conv", 0)
    assert found is not None and found.load().tolist() == [2.0, 2.0, 2.0]
    assert source.skipped == [
        (tmp_path / "conv.0.1700000000000001.npy",
         "an older golden of conv.0 (a second run here?); conv.0.1700000000000002.npy is used"),
    ]  # fmt: skip


def test_npy2dumps_golden_dump_files_are_golden_data_by_output(tmp_path: Path) -> None:
    import pickle

    outputs = tuple(DumpTensor.from_array(TensorKind.OUTPUT, k, VALUES + k) for k in range(2))
    dump = DumpFile("", Layout.V2, "2.0", STAMP, "_net_split", outputs=outputs)
    name = f"Golden._net_split.0.0.{STAMP}"
    write_dump(tmp_path / name, dump)
    write_dump(tmp_path / f"Conv2D.net_conv.1.2.{STAMP}", dump)  # an NPU op's dump: no golden data
    source = open_golden(tmp_path)
    assert isinstance(source, NpyGoldenDir)
    [(passed_over, _)] = source.skipped
    assert passed_over.name.startswith("Conv2D.")
    for again in (source, pickle.loads(pickle.dumps(source))):
        second = again.output("/net/split", 1)
        assert second is not None and second.label == f"{name} output 1" and second.key == "_net_split.1"
        assert np.array_equal(second.load(), VALUES + 1)
        assert again.output("/net/split", 2) is None
        assert again.unused(["_net_split.0"]) == ["_net_split.1"]


def test_a_golden_index_pickled_to_cluster_workers_finds_what_it_found_here(tmp_path: Path) -> None:
    import pickle

    save_npy(tmp_path / f"mm.0.{STAMP}.npy", BF16, keep_dtype=True)  # with its dtype sidecar
    np.save(tmp_path / f"mm.0.{STAMP - 1}.npy", VALUES)  # an older run of it: skipped, named
    (tmp_path / "sub").mkdir()
    np.save(tmp_path / "sub" / f"relu.1.{STAMP}.npy", VALUES)
    (tmp_path / "sub" / "notes.npy").write_text("not golden data")
    for source in (NpyGoldenDir(tmp_path), NpyGoldenDir.single(tmp_path / "sub" / f"relu.1.{STAMP}.npy")):
        again = pickle.loads(pickle.dumps(source))
        assert again.root == source.root and again.skipped == source.skipped
        assert again.unused([]) == source.unused([])
        for op, index in (("mm", 0), ("relu", 1), ("relu", 0)):
            found, kept = source.output(op, index), again.output(op, index)
            assert (found is None) is (kept is None)
            if found is not None and kept is not None:
                assert (kept.label, kept.path, kept.key) == (found.label, found.path, found.key)
                assert np.array_equal(kept.load(), found.load()) and kept.load().dtype == found.load().dtype


def test_a_golden_source_goes_to_a_worker_as_its_path_whatever_it_holds(tmp_path: Path) -> None:
    """The coordinator pickles no record per golden file (each worker lists the directory itself),
    and a process that cannot see the directory (a Dask scheduler without the shared storage)
    unpickles an empty index, not an error."""
    import pickle

    for count in (1, 200):
        root = tmp_path / f"golden{count}"
        root.mkdir()
        for k in range(count):
            np.save(root / f"op{k}.0.{STAMP}.npy", VALUES)
        assert len(pickle.dumps(open_golden(root))) < 400
    source = open_golden(tmp_path / "golden200")
    moved = pickle.dumps(source)
    (tmp_path / "golden200").rename(tmp_path / "elsewhere")
    unseen = pickle.loads(moved)
    assert unseen.root == source.root and unseen.output("op7", 0) is None
