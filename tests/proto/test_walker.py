"""walk_dump_tree: dump files at any depth, grouped by (device, model, model id, step)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dumpcmp.proto.walker import GroupKey, walk_dump_tree

STAMP = 1_700_000_000_000_000


def _touch(path: Path, text: str = "x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _dump_tree(root: Path) -> dict[GroupKey, list[str]]:
    """{dump_path}/{time}/{device}/{model}/{model_id}/{step}/{file}, two devices, two steps."""
    expected: dict[GroupKey, list[str]] = {}
    for device in ("0", "1"):
        for step in ("0", "1"):
            key = GroupKey(device, "ge_default_1_11", "11", step, session="20260101000000")
            names = [f"Add.add_{i}.{i}.2.{STAMP + 10 - i}" for i in range(3)]
            for name in names:
                _touch(root / "20260101000000" / device / key.model / key.model_id / step / name)
            expected[key] = sorted(names, key=lambda n: int(n.rsplit(".", 1)[1]))  # by timestamp
    return expected


def test_groups_by_device_model_id_and_step(tmp_path: Path) -> None:
    expected = _dump_tree(tmp_path / "dump")
    tree = walk_dump_tree(tmp_path / "dump")
    assert {k: [e.path.name for e in v] for k, v in tree.groups.items()} == expected
    assert tree.skipped == []
    assert all(e.group == k for k, v in tree.groups.items() for e in v)
    assert [e.path.name for e in tree.entries][:3] == expected[min(expected)]  # sorted groups


@pytest.mark.parametrize(
    "root",
    [
        "outer",  # the tree three levels below the root
        "outer/a/b/c/dump",
        "outer/a/b/c/dump/20260101000000",
        "outer/a/b/c/dump/20260101000000/0",  # inside the tree: the levels above still count
        "outer/a/b/c/dump/20260101000000/0/ge_default_1_11/11/1",
    ],
)
def test_any_depth_gives_the_same_groups(tmp_path: Path, root: str) -> None:
    expected = _dump_tree(tmp_path / "outer" / "a" / "b" / "c" / "dump")
    tree = walk_dump_tree(tmp_path / root)
    for key, entries in tree.groups.items():
        assert [e.path.name for e in entries] == expected[key]
    assert tree.skipped == []


def test_single_file_root(tmp_path: Path) -> None:
    _dump_tree(tmp_path)
    path = tmp_path / "20260101000000" / "1" / "ge_default_1_11" / "11" / "0" / f"Add.add_1.1.2.{STAMP + 9}"
    tree = walk_dump_tree(path)
    assert list(tree.groups) == [GroupKey("1", "ge_default_1_11", "11", "0", session="20260101000000")]
    assert [e.path for e in tree.entries] == [path]
    assert tree.entries[0].name.op_name == "add_1"


def test_single_file_outside_a_tree(tmp_path: Path) -> None:
    path = _touch(tmp_path / "loose" / f"Add.add.1.2.{STAMP}")
    tree = walk_dump_tree(path)
    assert list(tree.groups) == [GroupKey("0", "loose", "0", "0")]


def test_flat_directory_is_one_group_named_after_it(tmp_path: Path) -> None:
    for i in range(2):
        _touch(tmp_path / "single_op" / f"Add.add.{i}.2.{STAMP + i}")
    tree = walk_dump_tree(tmp_path / "single_op")
    (key,) = tree.groups
    assert key == GroupKey("0", "single_op", "0", "0")
    assert len(tree.entries) == 2


def test_skipped_files_carry_their_reasons(tmp_path: Path) -> None:
    step = tmp_path / "0" / "net" / "1" / "0"
    _touch(step / f"Add.add.1.2.{STAMP}")
    _touch(step / f".Add.add.1.2.{STAMP + 1}.part")  # the writer's temporary name
    _touch(step / "core.12345")  # no dump-name grammar
    _touch(step / "random.csv")  # a CSV that is not a stats dump
    for quiet in ("notes.txt", "acl.json", "golden.0.1.npy", "model.om", "fusion.pbtxt"):
        _touch(step / quiet)  # known non-dumps: not worth a line each
    tree = walk_dump_tree(tmp_path)
    assert [e.path.name for e in tree.entries] == [f"Add.add.1.2.{STAMP}"]
    reasons = {s.path.name: s.reason for s in tree.skipped}
    assert set(reasons) == {f".Add.add.1.2.{STAMP + 1}.part", "core.12345", "random.csv"}
    assert "still being written" in reasons[f".Add.add.1.2.{STAMP + 1}.part"]
    assert reasons["core.12345"].startswith("not a dump file name")
    assert reasons["random.csv"].startswith("not a dump file name")


def test_compares_own_result_files_left_in_the_tree_are_passed_over_quietly(tmp_path: Path) -> None:
    # "compare -tp . " with the default "-o ." writes its results into the tree it compares.
    step = tmp_path / "0" / "net" / "1" / "0"
    _touch(step / f"Add.add.1.2.{STAMP}")
    ours = [
        "result_20261128201616.csv",
        "0_net_0_result_20261128201616_1.csv",
        "stats_result_20261128201616.csv",
        "rank0_token1_compare_result_20261128201616.csv",
        "result_20261128201616.html",
        "result_20261128201616.xlsx",
    ]
    for name in (*ours, "my_result.csv"):
        _touch(step / name)
    tree = walk_dump_tree(tmp_path)
    assert [e.path.name for e in tree.entries] == [f"Add.add.1.2.{STAMP}"]
    assert [s.path.name for s in tree.skipped] == ["my_result.csv"]  # not compare's: still said


def test_stats_csv_files_are_entries_marked_as_stats(tmp_path: Path) -> None:
    step = tmp_path / "0" / "net" / "1" / "0"
    _touch(step / f"Add.add.1.2.{STAMP}.csv")
    (entry,) = walk_dump_tree(tmp_path).entries
    assert entry.is_stats
    assert entry.name.timestamp == STAMP


def test_mapping_csv_numeric_names_are_resolved(tmp_path: Path) -> None:
    step = tmp_path / "0" / "net" / "1" / "0"
    long_name = f"Conv2D.{'very_long_' * 25}.3.2.{STAMP}"
    _touch(step / "1700000000000077")
    _touch(step / "mapping.csv", f"1700000000000077,{long_name}\n")
    tree = walk_dump_tree(tmp_path)
    (entry,) = tree.entries
    assert entry.path == step / "1700000000000077"  # the file on disk
    assert entry.name.op_name == "very_long_" * 25  # the name it stands for
    assert entry.group == GroupKey("0", "net", "1", "0")
    assert tree.skipped == []  # mapping.csv itself is not reported


def test_unmapped_numeric_name_is_skipped(tmp_path: Path) -> None:
    _touch(tmp_path / "1700000000000077")
    tree = walk_dump_tree(tmp_path)
    assert tree.entries == []
    assert [s.path.name for s in tree.skipped] == ["1700000000000077"]


def test_order_within_a_group_is_by_timestamp_then_task(tmp_path: Path) -> None:
    step = tmp_path / "0" / "net" / "1" / "0"
    names = [f"B.b.5.2.{STAMP + 1}", f"A.a.9.2.{STAMP}", f"C.c.3.2.{STAMP + 1}"]
    for name in names:
        _touch(step / name)
    order = [e.path.name for e in walk_dump_tree(tmp_path).entries]
    assert order == [f"A.a.9.2.{STAMP}", f"C.c.3.2.{STAMP + 1}", f"B.b.5.2.{STAMP + 1}"]


def test_two_dump_sessions_in_one_dump_path_stay_apart(tmp_path: Path) -> None:
    for session in ("20260101000000", "20260101000500"):
        _touch(tmp_path / session / "0" / "net" / "1" / "0" / f"Add.add.1.2.{STAMP}")
    tree = walk_dump_tree(tmp_path)
    assert [k.session for k in tree.groups] == ["20260101000000", "20260101000500"]
    assert all(len(v) == 1 for v in tree.groups.values())


def test_names_with_every_character_ge_keeps_are_dump_files(tmp_path: Path) -> None:
    step = tmp_path / "0" / "net" / "1" / "0"
    kept = [f"Add.ln_add:0.17.2.{STAMP}", f"MatMul.层_1(x)+y.3.2.{STAMP + 1}"]
    for name in kept:
        _touch(step / name)
    _touch(step / f"Add.a b.4.2.{STAMP + 2}")  # a space: GE would have replaced it
    tree = walk_dump_tree(tmp_path)
    assert [e.path.name for e in tree.entries] == kept
    assert [e.name.op_name for e in tree.entries] == ["ln_add:0", "层_1(x)+y"]
    # The one name that still does not parse is reported by name, not dropped.
    [skipped] = tree.skipped
    assert skipped.path.name == f"Add.a b.4.2.{STAMP + 2}"
    assert "space" in skipped.reason


def test_a_fifo_is_skipped_with_its_kind_never_opened(tmp_path: Path) -> None:
    """Reading a FIFO blocks forever (a compare worker hung on one); it is named and passed over."""
    import os

    expected = _dump_tree(tmp_path / "dump")
    key = next(iter(expected))
    step = tmp_path / "dump" / key.session / key.device / key.model / key.model_id / key.step
    fifo = step / f"Conv2D.Conv2D_9.8.0.{STAMP}"
    os.mkfifo(fifo)
    tree = walk_dump_tree(tmp_path / "dump")
    assert [(s.path, s.reason) for s in tree.skipped] == [(fifo, "not a regular file: a FIFO")]
    assert {k: [e.path.name for e in v] for k, v in tree.groups.items()} == expected


def test_links_are_read_as_what_they_point_to_and_linked_directories_not_entered(tmp_path: Path) -> None:
    """The listing's file types decide, as ``os.walk`` did: a link to a dump file is a dump, a
    dangling link is named, a link to a directory is not walked (a loop would never end)."""
    import os

    expected = _dump_tree(tmp_path / "dump")
    key = next(iter(expected))
    step = tmp_path / "dump" / key.session / key.device / key.model / key.model_id / key.step
    elsewhere = _touch(tmp_path / "elsewhere" / f"Mul.mul_7.7.2.{STAMP + 20}")
    os.symlink(elsewhere, step / elsewhere.name)
    os.symlink(tmp_path / "gone", step / f"Mul.mul_8.8.2.{STAMP + 21}")
    os.symlink(tmp_path / "dump", step / "loop")
    tree = walk_dump_tree(tmp_path / "dump")
    expected[key] = [*expected[key], elsewhere.name]
    assert {k: [e.path.name for e in v] for k, v in tree.groups.items()} == expected
    assert [(s.path.name, s.reason) for s in tree.skipped] == [
        (f"Mul.mul_8.8.2.{STAMP + 21}", "a symbolic link to nothing")
    ]
