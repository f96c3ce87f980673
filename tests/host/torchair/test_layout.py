"""Finding GE and FX dumps under every layout of formats.md §7, from any directory level."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from dumpcmp.errors import DumpcmpError, MatchError
from dumpcmp.host.torchair.fx_golden import FxTensorKey, parse_fx_name
from dumpcmp.host.torchair.layout import FxDump, FxLayout, GeDump, GeLayout, open_dump, open_inputs
from dumpcmp.host.torchair.records import TorchairShardKey as Shard
from tests.host.torchair.tatree import (
    TIME,
    Op,
    fx_data_dump_dir,
    fx_file,
    fx_ranked_dir,
    ge_file,
    ge_token_dir,
    write_graphs,
)

X = np.arange(6, dtype=np.float32).reshape(2, 3)
ADD = Op("add_1", "Add", ("add_1-aten.add.Tensor.OUTPUT.0",))


def _ranked_run(
    base: Path, ranks: tuple[int, ...] = (0, 1), tokens: tuple[int, ...] = (0, 1)
) -> tuple[Path, Path]:
    """``base/msprobe_ge_dump`` and ``base/msprobe_fx_dump`` in the torch_npu ≥ 7.1.0 layout."""
    ge_root, fx_root = base / "msprobe_ge_dump", base / "msprobe_fx_dump"
    for rank in ranks:
        write_graphs(ge_root, rank, [ADD])
        for token in tokens:
            ge_file(ge_token_dir(ge_root, token, rank, device=str(rank)), "Add", "add_1", [X, X], [X + X])
            fx_file(fx_ranked_dir(fx_root, rank, token), "add_1-aten.add.Tensor", "output", 0, X + X)
    return ge_root, fx_root


def _ge(path: Path) -> GeDump:
    found = open_dump(path)
    assert isinstance(found, GeDump)
    return found


def _fx(path: Path) -> FxDump:
    found = open_dump(path)
    assert isinstance(found, FxDump)
    return found


# --------------------------------------------------------------------------- the 7.1.0+ layout


def test_ranked_layout_gives_rank_and_token_shards_with_graphs_per_rank(tmp_path: Path) -> None:
    ge_root, fx_root = _ranked_run(tmp_path)
    inputs = open_inputs(ge_root, fx_root)
    expected = (Shard(0, 0), Shard(0, 1), Shard(1, 0), Shard(1, 1))
    assert inputs.shards == expected
    assert inputs.bench_only == ()
    assert inputs.target.layout is GeLayout.RANKED
    assert inputs.target.root == ge_root
    [entry] = inputs.target.shards[Shard(1, 1)]
    assert entry.name.op_name == "add_1"
    assert entry.path.parent == ge_token_dir(ge_root, 1, 1, device="1")
    assert sorted(inputs.target.graphs) == [0, 1]
    assert [p.name for p in inputs.target.graphs[1].original] == [
        "dynamo_original_graph_1_rank_1_pid_4242_ts_1735732800.txt"
    ]
    assert [p.name for p in inputs.target.graphs[1].optimized] == [
        "dynamo_optimized_graph_1_rank_1_pid_4242_ts_1735732800.txt"
    ]
    bench = inputs.bench
    assert isinstance(bench, FxDump)
    assert bench.layout is FxLayout.RANKED
    # rank layout: the FX token directory is GE's token id as it is
    assert bench.shards[Shard(1, 1)] == {
        FxTensorKey("add_1-aten.add.Tensor", "output", 0): fx_ranked_dir(fx_root, 1, 1)
        / "add_1-aten.add.Tensor.OUTPUT.0.20250101120000000001.npy"
    }
    assert inputs.skipped == ()


@pytest.mark.parametrize("level", ["parent", "rank", "time", "token"])
def test_the_dump_is_found_from_the_parent_or_any_directory_inside(tmp_path: Path, level: str) -> None:
    ge_root, _ = _ranked_run(tmp_path)
    rank_dir = ge_root / "worldsize2_global_rank1"
    path = {
        "parent": tmp_path / "msprobe_ge_dump",
        "rank": rank_dir,
        "time": rank_dir / TIME,
        "token": ge_token_dir(ge_root, 0, 1, device="1"),
    }[level]
    found = _ge(path)
    assert found.root == ge_root
    assert Shard(1, 0) in found.shards
    # the graph dumps lie above a deeper path and are found there
    assert 1 in found.graphs and found.graphs[1].original


def test_the_parent_of_the_ge_dump_alone_is_enough(tmp_path: Path) -> None:
    _ranked_run(tmp_path / "run")
    (tmp_path / "run" / "msprobe_fx_dump").rename(tmp_path / "fx")
    assert _ge(tmp_path / "run").root == tmp_path / "run" / "msprobe_ge_dump"


def test_fx_from_a_rank_or_token_directory(tmp_path: Path) -> None:
    _, fx_root = _ranked_run(tmp_path)
    assert set(_fx(fx_root / "worldsize2_global_rank1").shards) == {Shard(1, 0), Shard(1, 1)}
    assert set(_fx(fx_ranked_dir(fx_root, 0, 1)).shards) == {Shard(0, 1)}


# --------------------------------------------------------------------------- 7.1.0 and older


@pytest.mark.parametrize("fx_under", ["msprobe_fx_dump", "."], ids=["torch_npu_7.1.0", "older_cwd"])
def test_data_dump_layouts_count_fx_tokens_from_one(tmp_path: Path, fx_under: str) -> None:
    ge_root = tmp_path / "msprobe_ge_dump"
    write_graphs(ge_root, 0, [ADD])
    cwd = tmp_path / "cwd"
    for token in (0, 1, 2):
        ge_file(ge_token_dir(ge_root, token), "Add", "add_1", [X, X], [X + X * token])
        fx_file(
            fx_data_dump_dir(cwd / fx_under, token + 1), "add_1-aten.add.Tensor", "output", 0, X + X * token
        )
    inputs = open_inputs(ge_root, cwd)
    assert inputs.target.layout is GeLayout.PLAIN
    assert inputs.shards == (Shard(0, 0), Shard(0, 1), Shard(0, 2))
    bench = inputs.bench
    assert isinstance(bench, FxDump) and bench.layout is FxLayout.DATA_DUMP
    assert set(bench.shards) == {Shard(0, 0), Shard(0, 1), Shard(0, 2)}
    [path] = bench.shards[Shard(0, 0)].values()
    assert path.parent.parent.name == "1"  # GE token 0 ↔ FX directory 1
    assert np.array_equal(np.load(path), X)
    assert list(inputs.target.graphs) == [0]


def test_fx_token_directory_zero_under_data_dump_is_reported(tmp_path: Path) -> None:
    fx_file(fx_data_dump_dir(tmp_path, 1), "relu-aten.relu.default", "output", 0, X)
    stray = fx_file(fx_data_dump_dir(tmp_path, 0), "relu-aten.relu.default", "output", 0, X)
    found = _fx(tmp_path)
    assert set(found.shards) == {Shard(0, 0)}
    assert [(s.path, s.reason) for s in found.skipped] == [
        (stray, "FX token directory 0 under data_dump: these count from 1")
    ]


def test_several_graph_modules_of_one_token_merge_and_the_latest_fx_file_wins(tmp_path: Path) -> None:
    first = fx_data_dump_dir(tmp_path, 1, time="1")
    second = fx_data_dump_dir(tmp_path, 1, time="2")
    old = fx_file(first, "mm-aten.mm.default", "input", 0, X, ts=100)
    new = fx_file(second, "mm-aten.mm.default", "input", 0, X + 1, ts=200)
    other = fx_file(first, "relu-aten.relu.default", "output", 0, X)
    found = _fx(tmp_path)
    assert found.shards[Shard(0, 0)] == {
        FxTensorKey("mm-aten.mm.default", "input", 0): new,
        FxTensorKey("relu-aten.relu.default", "output", 0): other,
    }
    assert [(s.path, s.reason) for s in found.skipped] == [
        (old, f"FX tensor dumped twice in this token; the later {new.name} is used")
    ]


# --------------------------------------------------------------------------- duplicates and strays


def test_an_op_dumped_twice_in_a_token_keeps_the_larger_file(tmp_path: Path) -> None:
    token = ge_token_dir(tmp_path, 0, 0)
    small = ge_file(token, "Add", "add_1", [X], [X], timestamp=1735732800000005, task=2)
    large = ge_file(token, "Add", "add_1", [X, X], [X], timestamp=1735732800000001, task=1)
    other_model = token.parent.parent.parent / "graph_2_0" / "7" / "0"  # a second model of the same token
    other_model.mkdir(parents=True)
    relu = ge_file(other_model, "Relu", "relu", [X], [X])
    found = _ge(tmp_path)
    assert [e.path for e in found.shards[Shard(0, 0)]] == [large, relu]
    assert [(s.path, s.reason) for s in found.skipped] == [
        (small, f"op dumped twice in this token; the larger {large} is kept")
    ]


def test_files_that_do_not_parse_are_listed_with_the_reason(tmp_path: Path) -> None:
    token = ge_token_dir(tmp_path / "ge", 0, 0)
    ge_file(token, "Add", "add_1", [X], [X])
    (token / "Add.add_1.notanumber.0.1").write_bytes(b"x")
    (token / "garbage.csv").write_text("a,b\n")
    (token / "notes.txt").write_text("quietly passed over: not a dump")
    misplaced = tmp_path / "ge" / "Relu.relu.1.0.1735732800000001"
    misplaced.write_bytes(b"x")
    found = _ge(tmp_path / "ge")
    reasons = {s.path.name: s.reason for s in found.skipped}
    assert set(reasons) == {"Add.add_1.notanumber.0.1", "garbage.csv", misplaced.name}
    assert reasons["Add.add_1.notanumber.0.1"].startswith("not a dump file name")
    assert (
        reasons[misplaced.name] == "dump file outside a {time}/{device}/{model}/{model_id}/{token} directory"
    )

    fx_token = fx_ranked_dir(tmp_path / "fx", 0, 0)
    fx_file(fx_token, "relu-aten.relu.default", "output", 0, X)
    np.save(fx_token / "relu.npy", X)
    np.save(tmp_path / "fx" / "mm-aten.mm.default.OUTPUT.0.1.npy", X)
    fx = _fx(tmp_path / "fx")
    fx_reasons = {s.path.name: s.reason for s in fx.skipped}
    assert fx_reasons["relu.npy"].startswith("not an FX dump file name")
    assert fx_reasons["mm-aten.mm.default.OUTPUT.0.1.npy"].startswith("npy file outside an FX dump directory")


def test_long_names_from_mapping_csv(tmp_path: Path) -> None:
    token = ge_token_dir(tmp_path, 0, 0)
    written = ge_file(token, "Add", "add_1", [X], [X])
    numeric = written.rename(token / "1234567")
    (token / "mapping.csv").write_text(f"1234567,{written.name}\n")
    [entry] = _ge(tmp_path).shards[Shard(0, 0)]
    assert entry.path == numeric and entry.name.op_name == "add_1"


def test_fx_names_are_read_from_their_end() -> None:
    name = parse_fx_name("mm-aten.mm.default.INPUT.1.20240125031118787351.npy")
    assert name.key == FxTensorKey("mm-aten.mm.default", "input", 1)
    assert name.timestamp == 20240125031118787351
    assert name.key.label == "mm-aten.mm.default.INPUT.1"


# --------------------------------------------------------------------------- errors


def _error(call: object, *args: Path) -> str:
    with pytest.raises(MatchError) as caught:
        call(*args)  # type: ignore[operator]
    message = str(caught.value)
    assert "\n" not in message
    assert isinstance(caught.value, DumpcmpError)
    return message


def test_error_mixed_ge_layouts(tmp_path: Path) -> None:
    ge_file(ge_token_dir(tmp_path, 0, rank=0), "Add", "add_1", [X], [X])
    ge_file(ge_token_dir(tmp_path, 0, rank=None, time="20250101130000"), "Add", "add_1", [X], [X])
    message = _error(open_dump, tmp_path)
    assert message.startswith(f"{tmp_path} mixes GE dump layouts: ")
    assert GeLayout.RANKED.value in message and GeLayout.PLAIN.value in message


def test_error_mixed_fx_layouts(tmp_path: Path) -> None:
    ranked = fx_file(fx_ranked_dir(tmp_path, 0, 0), "relu-aten.relu.default", "output", 0, X)
    plain = fx_file(fx_data_dump_dir(tmp_path, 1), "relu-aten.relu.default", "output", 0, X)
    message = _error(open_dump, tmp_path)
    assert message.startswith(f"{tmp_path} mixes FX dump layouts: ")
    # each layout by a directory of its own (both roots are tmp_path: the message named it twice)
    assert f"({ranked.parent})" in message and f"({plain.parent})" in message


def test_error_two_runs_in_one_ge_dump_path(tmp_path: Path) -> None:
    ge_file(ge_token_dir(tmp_path, 0, rank=0), "Add", "add_1", [X], [X])
    ge_file(ge_token_dir(tmp_path, 0, rank=0, time="20250102000000"), "Add", "add_1", [X], [X])
    message = _error(open_dump, tmp_path)
    first = tmp_path / "worldsize2_global_rank0" / TIME / "0"
    second = tmp_path / "worldsize2_global_rank0" / "20250102000000" / "0"
    assert (
        message == f"two GE dumps in {tmp_path} for rank 0: {first} and {second}; give the directory of one"
    )


def test_error_two_ge_dump_directories(tmp_path: Path) -> None:
    ge_file(ge_token_dir(tmp_path / "a" / "msprobe_ge_dump", 0, rank=0), "Add", "add_1", [X], [X])
    ge_file(ge_token_dir(tmp_path / "b" / "msprobe_ge_dump", 0, rank=0), "Add", "add_1", [X], [X])
    message = _error(open_dump, tmp_path)
    assert message == (
        f"two GE dumps in {tmp_path}: {tmp_path / 'a' / 'msprobe_ge_dump'} and "
        f"{tmp_path / 'b' / 'msprobe_ge_dump'}; give the directory of one"
    )


def test_error_ge_and_fx_in_one_path(tmp_path: Path) -> None:
    _ranked_run(tmp_path)
    message = _error(open_dump, tmp_path)
    assert message.startswith(f"{tmp_path} holds both a GE dump (")
    assert "and an FX dump (" in message


def test_error_nothing_recognisable(tmp_path: Path) -> None:
    (tmp_path / "readme.txt").write_text("hello")
    assert _error(open_dump, tmp_path) == f"{tmp_path} holds no GE dump files and no FX npy files"
    (tmp_path / "weights.bin.gz").write_bytes(b"\0")
    assert "1 files passed over, e.g. weights.bin.gz: not a dump file name" in _error(open_dump, tmp_path)


def test_error_missing_path_and_file_path(tmp_path: Path) -> None:
    assert _error(open_dump, tmp_path / "nope") == f"{tmp_path / 'nope'} does not exist"
    (tmp_path / "f").write_text("")
    assert (
        _error(open_dump, tmp_path / "f")
        == f"{tmp_path / 'f'} is a file; give the directory of a GE or FX dump"
    )


def test_error_fx_dump_given_as_target(tmp_path: Path) -> None:
    ge_root, fx_root = _ranked_run(tmp_path)
    message = _error(open_inputs, fx_root, ge_root)
    assert message == f"{fx_root} holds an FX dump ({fx_root}); the target side (-tp) is the GE dump"


def test_error_shards_that_do_not_overlap_say_what_each_side_has(tmp_path: Path) -> None:
    ge_root = tmp_path / "ge"
    for token in (0, 1, 2, 4):
        ge_file(ge_token_dir(ge_root, token, rank=0), "Add", "add_1", [X], [X])
    fx_root = tmp_path / "fx"
    fx_file(fx_ranked_dir(fx_root, 1, 0), "relu-aten.relu.default", "output", 0, X)
    fx_file(fx_ranked_dir(fx_root, 1, 3), "relu-aten.relu.default", "output", 0, X)
    message = _error(open_inputs, ge_root, fx_root)
    assert message == (
        f"the GE dump {ge_root} and the FX dump {fx_root} share no (rank, token): "
        "the GE dump has rank 0 tokens 0-2, 4, the FX dump has rank 1 tokens 0, 3"
    )


def test_partly_overlapping_shards_are_kept_and_the_bench_only_ones_listed(tmp_path: Path) -> None:
    ge_root, fx_root = _ranked_run(tmp_path, ranks=(0,), tokens=(0, 1))
    fx_file(fx_ranked_dir(fx_root, 0, 5), "add_1-aten.add.Tensor", "output", 0, X)
    os.remove(next(iter(_fx(fx_ranked_dir(fx_root, 0, 1)).shards[Shard(0, 1)].values())))
    inputs = open_inputs(ge_root, fx_root)
    assert inputs.shards == (Shard(0, 0), Shard(0, 1))
    assert inputs.bench_only == (Shard(0, 5),)


def test_error_two_devices_without_rank_directories(tmp_path: Path) -> None:
    ge_file(ge_token_dir(tmp_path, 0, device="0"), "Add", "add_1", [X], [X])
    ge_file(ge_token_dir(tmp_path, 0, device="1"), "Add", "add_1", [X], [X])
    assert _error(open_dump, tmp_path) == (
        f"two GE dumps in {tmp_path} for rank 0: {tmp_path / TIME / '0'} and {tmp_path / TIME / '1'}; "
        "give the directory of one"
    )
    # one device's directory is one dump
    assert set(_ge(tmp_path / TIME / "1").shards) == {Shard(0, 0)}


def test_a_side_without_rank_levels_takes_the_one_rank_of_the_other(tmp_path: Path) -> None:
    """torch_npu 7.1.0: the GE dump has worldsize levels, the FX dump is data_dump/{token+1}."""
    ge_root = tmp_path / "msprobe_ge_dump"
    write_graphs(ge_root, 1, [ADD])
    ge_file(ge_token_dir(ge_root, 0, rank=1, device="1"), "Add", "add_1", [X], [X])
    fx_root = tmp_path / "msprobe_fx_dump"
    fx_file(fx_data_dump_dir(fx_root, 1), "add_1-aten.add.Tensor", "output", 0, X)
    inputs = open_inputs(ge_root / "worldsize2_global_rank1", fx_root)
    assert inputs.shards == (Shard(1, 0),)
    assert set(inputs.bench.shards) == {Shard(1, 0)}
    # and the other way round: a GE dump without rank levels against a one-rank FX dump
    plain = tmp_path / "plain"
    write_graphs(plain, 0, [ADD])
    ge_file(ge_token_dir(plain, 0), "Add", "add_1", [X], [X])
    other_fx = tmp_path / "fx"
    fx_file(fx_ranked_dir(other_fx, 3, 0), "add_1-aten.add.Tensor", "output", 0, X)
    swapped = open_inputs(plain, other_fx)
    assert swapped.shards == (Shard(3, 0),) and list(swapped.target.graphs) == [3]


def test_error_a_side_without_rank_levels_against_several_ranks(tmp_path: Path) -> None:
    ge_root, _ = _ranked_run(tmp_path, ranks=(0, 1), tokens=(0,))
    fx_root = tmp_path / "old_fx"
    fx_file(fx_data_dump_dir(fx_root, 1), "add_1-aten.add.Tensor", "output", 0, X)
    assert _error(open_inputs, ge_root, fx_root) == (
        f"the FX dump {fx_root} is one process's (no worldsize{{W}}_global_rank{{R}} directories) but the "
        f"GE dump {ge_root} holds ranks 0, 1: give the directory of the one rank meant "
        "(worldsize{W}_global_rank{R})"
    )
