"""GE dump tensors paired with FX tensors or a fusion-off GE dump (formats.md §7.3, metrics.md §2)."""

from __future__ import annotations

import pickle
import zlib
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from dumpcmp.errors import FormatError, MatchError
from dumpcmp.host.torchair.layout import open_inputs
from dumpcmp.host.torchair.matcher import TorchairMatcher, split_fused
from dumpcmp.host.torchair.records import TensorPair, TensorStats
from dumpcmp.host.torchair.records import TorchairShardKey as Shard
from dumpcmp.host.torchair.reduce import Reducer, summarize
from dumpcmp.proto.codec import DumpTensor, TensorKind
from dumpcmp.proto.dtypes import Format
from dumpcmp.proto.layouts import to_device
from dumpcmp.proto.reduced import REDUCED_FILE, append_reduced
from dumpcmp.proto.walker import DumpEntry
from tests.host.torchair.tatree import (
    Op,
    fx_file,
    fx_ranked_dir,
    ge_file,
    ge_token_dir,
    stats_file,
    write_graphs,
)

RNG = np.random.default_rng(7)
A, B, C = (RNG.standard_normal((2, 3)).astype(np.float32) for _ in range(3))
ORIGINAL = [
    Op("add", "Add", ("add-aten.add.Tensor.OUTPUT.0",)),
    Op("add_1", "Add", ("add_1-aten.add.Tensor.OUTPUT.0",)),
    Op("mul", "Mul", ("mul-aten.mul.Tensor.OUTPUT.0",)),
    Op("noattr", "Relu", ("",)),
    Op("trans_Cast_0", "Cast", ("",)),
]
OPTIMIZED = [
    ORIGINAL[0],
    Op("add_1mul", "AutomaticBufferFusionOp", ("",)),
    ORIGINAL[3],
    ORIGINAL[4],
]
S0 = Shard(0, 0)


class Run:
    """A one-rank, one-token GE dump with its graph dumps, and its FX dump."""

    def __init__(self, base: Path) -> None:
        self.ge_root, self.fx_root = base / "msprobe_ge_dump", base / "msprobe_fx_dump"
        write_graphs(self.ge_root, 0, ORIGINAL, OPTIMIZED)
        self.token = ge_token_dir(self.ge_root, 0, 0)
        self.fx_token = fx_ranked_dir(self.fx_root, 0, 0)

    def ge(
        self, op_type: str, name: str, inputs: list[np.ndarray], outputs: list[np.ndarray], **kw: object
    ) -> Path:
        return ge_file(self.token, op_type, name, inputs, outputs, **kw)  # type: ignore[arg-type]

    def fx(self, key: str, io: str, index: int, array: np.ndarray) -> Path:
        return fx_file(self.fx_token, key, io, index, array)

    def pairs(self, bench: Path | None = None) -> dict[str, list[TensorPair]]:
        inputs = open_inputs(self.ge_root, bench or self.fx_root)
        matcher = TorchairMatcher.build(inputs)
        return {e.name.op_name: matcher.pairs(e, S0) for e in inputs.target.shards[S0]}


def _entry(pairs: dict[str, list[TensorPair]], op: str) -> list[tuple[str, str]]:
    return [(p.api_name, p.reason) for p in pairs[op]]


def _load(pair: TensorPair) -> tuple[np.ndarray, np.ndarray]:
    assert pair.reason == "", pair.reason
    assert pair.load_target is not None and pair.load_bench is not None
    return pair.load_target(), pair.load_bench()


def test_ge_inputs_and_outputs_pair_with_the_fx_op_named_by_fx_tensor_name(tmp_path: Path) -> None:
    run = Run(tmp_path)
    ge = run.ge("Add", "add", [A, B], [A + B])
    fx_in0 = run.fx("add-aten.add.Tensor", "input", 0, A)
    run.fx("add-aten.add.Tensor", "input", 1, B)
    fx_out = run.fx("add-aten.add.Tensor", "output", 0, A + B)
    [pairs] = run.pairs().values()
    assert [(p.api_name, p.io, p.index) for p in pairs] == [
        ("add.input.0", "input", 0),
        ("add.input.1", "input", 1),
        ("add.output.0", "output", 0),
    ]
    assert (pairs[0].npu_label, pairs[0].bench_label) == (str(ge), str(fx_in0))
    assert pairs[2].bench_label == str(fx_out)
    for pair, (x, y) in zip(pairs, [(A, A), (B, B), (A + B, A + B)], strict=True):
        target, bench = _load(pair)
        assert np.array_equal(target, x) and np.array_equal(bench, y)
        assert pair.target_stats is None and pair.bench_stats is None


def test_missing_counterparts_say_why(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.ge("Relu", "noattr", [A], [A])
    run.ge("Add", "add", [A, B], [A + B])
    run.ge("Sub", "not_in_graph", [A], [A])
    run.fx("add-aten.add.Tensor", "output", 0, A + B)  # the FX dump holds no inputs of add
    pairs = run.pairs()
    assert _entry(pairs, "noattr") == [
        ("noattr.input.0", "no FX tensor for GE op noattr input 0 (no _fx_tensor_name)"),
        ("noattr.output.0", "no FX tensor for GE op noattr output 0 (no _fx_tensor_name)"),
    ]
    assert _entry(pairs, "add") == [
        ("add.input.0", "FX tensor add-aten.add.Tensor.INPUT.0 not in the FX dump of rank 0 token 0"),
        ("add.input.1", "FX tensor add-aten.add.Tensor.INPUT.1 not in the FX dump of rank 0 token 0"),
        ("add.output.0", ""),
    ]
    assert _entry(pairs, "not_in_graph") == [
        ("not_in_graph.input.0", "GE op not_in_graph is not in the GE graph dump of rank 0"),
        ("not_in_graph.output.0", "GE op not_in_graph is not in the GE graph dump of rank 0"),
    ]
    assert all(p.load_target is not None and p.load_bench is None for p in pairs["noattr"])


def test_a_fused_op_compares_inputs_with_its_first_member_and_outputs_with_its_last(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.ge("AutomaticBufferFusionOp", "add_1mul", [A, B], [(A + B) * C])
    run.fx("add_1-aten.add.Tensor", "input", 0, A)
    run.fx("add_1-aten.add.Tensor", "input", 1, B)
    run.fx("add_1-aten.add.Tensor", "output", 0, A + B)
    run.fx("mul-aten.mul.Tensor", "input", 0, A + B)
    last = run.fx("mul-aten.mul.Tensor", "output", 0, (A + B) * C)
    [pairs] = run.pairs().values()
    assert [p.bench_label.split("/")[-1].rsplit(".", 2)[0] for p in pairs] == [
        "add_1-aten.add.Tensor.INPUT.0",
        "add_1-aten.add.Tensor.INPUT.1",
        "mul-aten.mul.Tensor.OUTPUT.0",
    ]
    assert pairs[2].bench_label == str(last)
    for pair in pairs:
        target, bench = _load(pair)
        assert np.array_equal(target, bench)


def test_split_takes_the_longest_known_prefix_and_backs_off_when_the_rest_fails() -> None:
    known = frozenset({"add", "add_1", "mul", "ab", "abc", "cd"})
    assert split_fused("add_1mul", known) == ("add_1", "mul")  # "add" is a prefix of "add_1"
    assert split_fused("addadd_1", known) == ("add", "add_1")
    assert split_fused("abcd", known) == ("ab", "cd")  # "abc" leaves "d", which splits into nothing
    assert split_fused("add_2", known) is None
    assert split_fused("mul", known) == ("mul",)


def test_a_fused_op_that_does_not_split_says_so(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.ge("AutomaticBufferFusionOp", "add_1div", [A], [A])
    run.fx("add_1-aten.add.Tensor", "input", 0, A)
    reasons = {p.reason for p in run.pairs()["add_1div"]}
    assert reasons == {"fused GE op add_1div does not split into ops of rank 0's original graph dump"}


def test_cast_without_fx_tensor_compares_its_output_with_its_input(tmp_path: Path) -> None:
    run = Run(tmp_path)
    half = A.astype(np.float16)
    ge = run.ge("Cast", "trans_Cast_0", [half], [half.astype(np.float32)])
    run.ge("TransData", "trans_TransData_9", [A, B], [A, B])  # not in the graph: its type decides
    run.fx("add-aten.add.Tensor", "output", 0, A)  # something for the shard to exist
    pairs = run.pairs()
    [cast] = pairs["trans_Cast_0"]
    assert (cast.api_name, cast.io, cast.index) == ("trans_Cast_0.output.0", "output", 0)
    assert cast.bench_label == f"{ge} input 0"
    target, bench = _load(cast)
    assert target.dtype == np.float32 and bench.dtype == np.float16
    assert np.array_equal(target, bench.astype(np.float32))
    assert [p.api_name for p in pairs["trans_TransData_9"]] == [
        "trans_TransData_9.output.0",
        "trans_TransData_9.output.1",
    ]
    assert np.array_equal(_load(pairs["trans_TransData_9"][1])[1], B)


def test_a_corrupt_ge_file_is_one_pair_with_the_reason_and_the_others_are_compared(tmp_path: Path) -> None:
    run = Run(tmp_path)
    good = run.ge("Add", "add", [A, B], [A + B])
    broken = run.ge("Mul", "mul", [A], [A], timestamp=1735732800000002)
    broken.write_bytes(broken.read_bytes()[:-5])  # cut off
    run.fx("add-aten.add.Tensor", "output", 0, A + B)
    pairs = run.pairs()
    [bad] = pairs["mul"]
    assert bad.api_name == "mul.*" and bad.npu_label == str(broken)
    assert bad.reason.startswith(f"corrupt GE dump file: {broken}: at byte ")
    assert bad.load_target is None and bad.load_bench is None
    assert len(pairs["add"]) == 3 and pairs["add"][2].reason == "" and str(good) == pairs["add"][2].npu_label


def test_device_layouts_and_bf16_come_back_logical_and_widened(tmp_path: Path) -> None:
    run = Run(tmp_path)
    image = RNG.standard_normal((1, 3, 4, 4)).astype(np.float16)
    five_hd = to_device(image, Format.NC1HWC0)
    five_hd_input = DumpTensor.from_array(
        TensorKind.INPUT, 0, five_hd, format=Format.NC1HWC0, original_shape=image.shape
    )
    bf16 = A.astype(ml_dtypes.bfloat16)
    run.ge("Add", "add", [five_hd_input], [bf16])
    run.fx("add-aten.add.Tensor", "input", 0, image)
    run.fx("add-aten.add.Tensor", "output", 0, bf16.astype(np.float32))
    [pairs] = run.pairs().values()
    target, bench = _load(pairs[0])
    assert target.shape == (1, 3, 4, 4) and np.array_equal(target, bench)
    target, bench = _load(pairs[1])
    assert target.dtype == np.float32 and np.array_equal(target, bf16.astype(np.float32))


def test_stats_dumps_give_target_statistics_and_the_fx_tensor_to_load(tmp_path: Path) -> None:
    run = Run(tmp_path)
    stats_file(
        run.token,
        "Add",
        "add",
        ["Input,0,24,DT_FLOAT,ND,2x3,5,-1,2,6,0,0,0,7.5", "Output,0,24,DT_FLOAT,ND,2x3,NA,0,1,6,0,0,0,3"],
    )
    fx = run.fx("add-aten.add.Tensor", "output", 0, A)
    run.fx("add-aten.add.Tensor", "input", 0, A)
    [pairs] = run.pairs().values()
    assert [(p.api_name, p.reason) for p in pairs] == [("add.input.0", ""), ("add.output.0", "")]
    assert pairs[0].target_stats == TensorStats("DT_FLOAT", (2, 3), 5.0, -1.0, 2.0, 7.5)
    out = pairs[1].target_stats
    assert out is not None and np.isnan(out.max) and (out.min, out.mean, out.l2norm) == (0.0, 1.0, 3.0)  # type: ignore[arg-type]
    assert pairs[1].load_target is None and pairs[1].bench_label == str(fx)
    assert pairs[1].load_bench is not None and np.array_equal(pairs[1].load_bench(), A)


def test_a_corrupt_stats_dump_is_one_pair_with_the_reason(tmp_path: Path) -> None:
    run = Run(tmp_path)
    path = stats_file(run.token, "Add", "add", ["Input,0,24,DT_FLOAT,ND,2x3,5"])
    run.fx("add-aten.add.Tensor", "output", 0, A)
    [[pair]] = run.pairs().values()
    assert pair.reason.startswith(f"corrupt GE stats dump: {path}: at byte ")
    assert "line 2 has 7 fields, the header 14" in pair.reason


def test_a_missing_graph_dump_is_an_error_for_fx_comparisons(tmp_path: Path) -> None:
    run = Run(tmp_path)
    for graph in run.ge_root.glob("dynamo_*.txt"):
        graph.unlink()
    run.ge("Add", "add", [A], [A])
    run.fx("add-aten.add.Tensor", "output", 0, A)
    with pytest.raises(MatchError, match=r"^no GE graph dump in .*msprobe_ge_dump \(dynamo_original_\*\.txt"):
        TorchairMatcher.build(open_inputs(run.ge_root, run.fx_root))


def test_a_malformed_graph_dump_fails_its_ranks_rows_naming_file_and_line(tmp_path: Path) -> None:
    """Not the whole run: the tester's rank 0 went uncompared for a bad rank-1 graph."""
    run = Run(tmp_path)
    graph = next(run.ge_root.glob("dynamo_optimized_*.txt"))
    graph.write_text('graph {\n  op {\n    name: "add"\n    type: Add\n  }\n}\n')
    run.ge("Add", "add", [A], [A])
    run.fx("add-aten.add.Tensor", "output", 0, A)
    [pairs] = run.pairs().values()
    assert [p.api_name for p in pairs] == ["add.input.0", "add.output.0"]
    assert len({p.reason for p in pairs}) == 1
    assert pairs[0].reason.startswith(f"rank 0's GE graph dump is unreadable: {graph}:4:11: malformed ")
    assert pairs[0].load_bench is None


def test_a_malformed_graph_dump_message_escapes_what_a_terminal_cannot_show(tmp_path: Path) -> None:
    from dumpcmp.host.torchair.ge_graph import parse_ge_graph

    graph = tmp_path / "dynamo_optimized_g_rank_0_pid_1_ts_1.txt"
    graph.write_bytes(b'graph {\n  op {\n    name: "add"\n  \x00\xff }\n}\n')
    with pytest.raises(FormatError) as caught:
        parse_ge_graph(graph)
    message = str(caught.value)
    assert message.isprintable() and ("\\x00" in message or "\\udcff" in message), message


# --------------------------------------------------------------------------- fusion on vs off


def test_fusion_on_against_off_by_op_name_and_fused_ops_through_members(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.ge("Add", "add", [A, B], [A + B])
    run.ge("AutomaticBufferFusionOp", "add_1mul", [A, B], [(A + B) * C], timestamp=1735732800000002)
    run.ge("Relu", "only_on", [A], [A], timestamp=1735732800000003)
    off_root = tmp_path / "off" / "msprobe_ge_dump"
    off = ge_token_dir(off_root, 0, 0)
    add_off = ge_file(off, "Add", "add", [A, B], [A + B])
    first = ge_file(off, "Add", "add_1", [A, B], [A + B], timestamp=1735732800000002)
    last = ge_file(off, "Mul", "mul", [A + B, C], [(A + B) * C], timestamp=1735732800000003)
    pairs = run.pairs(off_root)
    assert [p.bench_label for p in pairs["add"]] == [
        f"{add_off} input 0",
        f"{add_off} input 1",
        f"{add_off} output 0",
    ]
    assert [p.bench_label for p in pairs["add_1mul"]] == [
        f"{first} input 0",
        f"{first} input 1",
        f"{last} output 0",
    ]
    for pair in pairs["add"] + pairs["add_1mul"]:
        target, bench = _load(pair)
        assert np.array_equal(target, bench)
    assert {p.reason for p in pairs["only_on"]} == {
        "GE op only_on is not in the fusion-off GE dump of rank 0 token 0"
    }


def test_fusion_off_tensor_beyond_the_file_fails_when_loaded(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.ge("Add", "add", [A, B], [A + B])
    off_root = tmp_path / "off"
    off = ge_file(ge_token_dir(off_root, 0, 0), "Add", "add", [A], [A + B])
    pairs = run.pairs(off_root)["add"]
    assert pairs[1].load_bench is not None
    with pytest.raises(FormatError, match=rf"^{off}: has no input 1 \(it holds 1\)$"):
        pairs[1].load_bench()


def test_fusion_off_stats_dumps_give_bench_statistics(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.ge("Add", "add", [A], [A])
    off_root = tmp_path / "off"
    stats_file(ge_token_dir(off_root, 0, 0), "Add", "add", ["Output,0,24,DT_FLOAT,ND,2x3,4,1,2,6,0,0,0,5"])
    pairs = run.pairs(off_root)["add"]
    assert (
        pairs[0].reason == "fusion-off stats dump " + str(next((off_root).rglob("*.csv"))) + " has no input 0"
    )
    assert pairs[1].bench_stats == TensorStats("DT_FLOAT", (2, 3), 4.0, 1.0, 2.0, 5.0)
    assert pairs[1].load_bench is None and pairs[1].load_target is not None


# --------------------------------------------------------------------------- shards and workers


def test_matcher_pickles_and_narrows_to_one_shard(tmp_path: Path) -> None:
    ge_root, fx_root = tmp_path / "ge", tmp_path / "fx"
    for rank in (0, 1):
        write_graphs(ge_root, rank, ORIGINAL, OPTIMIZED)
        for token in (0, 1):
            ge_file(ge_token_dir(ge_root, token, rank, device=str(rank)), "Add", "add", [A], [A + token])
    for token in (0, 1):  # rank 1 token 1 has no FX data
        fx_file(fx_ranked_dir(fx_root, 0, token), "add-aten.add.Tensor", "output", 0, A + token)
    fx_file(fx_ranked_dir(fx_root, 1, 0), "add-aten.add.Tensor", "output", 0, A)
    inputs = open_inputs(ge_root, fx_root)
    matcher = pickle.loads(pickle.dumps(TorchairMatcher.build(inputs)))
    shard = Shard(0, 1)
    narrow = pickle.loads(pickle.dumps(matcher.for_shard(shard)))
    assert list(narrow.graphs) == [0] and narrow.fx is not None and list(narrow.fx) == [shard]
    [entry] = inputs.target.shards[shard]
    for m in (matcher, narrow):
        output = m.pairs(entry, shard)[1]
        assert np.array_equal(_load(output)[1], A + 1)
    [lonely] = inputs.target.shards[Shard(1, 1)]
    assert {p.reason for p in matcher.pairs(lonely, Shard(1, 1))} == {"no FX dump for rank 1 token 1"}


def test_pairs_of_an_entry_list_are_in_tensor_order(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.ge("Add", "add", [A, B, C], [A, B])
    run.fx("add-aten.add.Tensor", "output", 0, A)
    inputs = open_inputs(run.ge_root, run.fx_root)
    [entry] = inputs.target.shards[S0]
    assert isinstance(entry, DumpEntry)
    pairs = TorchairMatcher.build(inputs).pairs(entry, S0)
    assert [(p.io, p.index) for p in pairs] == [
        ("input", 0),
        ("input", 1),
        ("input", 2),
        ("output", 0),
        ("output", 1),
    ]


def test_an_op_whose_optimized_desc_lost_its_fx_name_uses_the_original_one(tmp_path: Path) -> None:
    run = Run(tmp_path)
    for graph in run.ge_root.glob("dynamo_*.txt"):
        graph.unlink()
    write_graphs(
        run.ge_root, 0, [Op("add", "Add", ("add-aten.add.Tensor.OUTPUT.0",))], [Op("add", "Add", ("",))]
    )
    run.ge("Add", "add", [A], [A])
    run.fx("add-aten.add.Tensor", "output", 0, A)
    [pairs] = run.pairs().values()
    assert pairs[1].reason == "" and np.array_equal(_load(pairs[1])[1], A)


def test_a_fused_op_whose_member_has_no_fx_name_says_which_member(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.ge("AutomaticBufferFusionOp", "noattradd", [A], [A])
    run.fx("add-aten.add.Tensor", "output", 0, A)
    pairs = run.pairs()["noattradd"]
    assert [p.reason for p in pairs] == [
        "no FX tensor for GE op noattradd input 0 (through its member noattr) (no _fx_tensor_name)",
        "",
    ]


def test_a_rank_without_graph_dump_says_so_per_tensor(tmp_path: Path) -> None:
    ge_root, fx_root = tmp_path / "ge", tmp_path / "fx"
    write_graphs(ge_root, 0, ORIGINAL, OPTIMIZED)
    for rank in (0, 1):
        ge_file(ge_token_dir(ge_root, 0, rank, device=str(rank)), "Add", "add", [A], [A])
        fx_file(fx_ranked_dir(fx_root, rank, 0), "add-aten.add.Tensor", "output", 0, A)
    inputs = open_inputs(ge_root, fx_root)
    matcher = TorchairMatcher.build(inputs)
    [entry] = inputs.target.shards[Shard(1, 0)]
    assert {p.reason for p in matcher.pairs(entry, Shard(1, 0))} == {"no GE graph dump for rank 1"}


# --------------------------------------------------------------------------- reduced data


def test_reduced_ge_and_fx_files_pair_as_statistics(tmp_path: Path) -> None:
    run = Run(tmp_path)
    ge = run.ge("Add", "add", [A, B], [A + B])
    run.ge("Cast", "trans_Cast_0", [A.astype(np.float16)], [A], timestamp=1735732800000002)
    fx_in = run.fx("add-aten.add.Tensor", "input", 0, A)
    run.fx("add-aten.add.Tensor", "output", 0, A + B)
    report = Reducer().reduce_tree(tmp_path)
    assert not ge.exists() and not fx_in.exists() and report is not None
    pairs = run.pairs()
    add = pairs["add"]
    assert [(p.api_name, p.reason) for p in add] == [
        ("add.input.0", ""),
        ("add.input.1", "FX tensor add-aten.add.Tensor.INPUT.1 not in the FX dump of rank 0 token 0"),
        ("add.output.0", ""),
    ]
    first = add[0]
    assert (first.npu_label, first.bench_label) == (str(ge), str(fx_in))
    assert first.load_target is None and first.load_bench is None
    assert first.target_stats is not None and first.bench_stats is not None
    assert first.target_stats.crc32 == first.bench_stats.crc32 == zlib.crc32(A.tobytes())
    assert first.target_stats.max == pytest.approx(float(A.max()))
    assert add[2].target_stats.shape == (2, 3)  # type: ignore[union-attr]
    [cast] = pairs["trans_Cast_0"]  # self compare works from the summary too
    assert cast.target_stats is not None and cast.bench_stats is not None
    assert cast.bench_stats.dtype == "float16" and cast.target_stats.dtype == "float32"


def test_an_original_still_beside_its_summary_is_read_itself(tmp_path: Path) -> None:
    run = Run(tmp_path)
    ge = run.ge("Add", "add", [A], [A])
    run.fx("add-aten.add.Tensor", "output", 0, A)
    append_reduced(ge.parent, summarize(ge, "ge", ("crc32",)))  # reduce interrupted before the delete
    [pairs] = run.pairs().values()
    assert all(p.load_target is not None and p.target_stats is None for p in pairs)
    assert np.array_equal(_load(pairs[1])[0], A)


def test_a_reduced_fusion_off_dump_gives_bench_statistics(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.ge("Add", "add", [A], [A + B])
    off_root = tmp_path / "off"
    off = ge_file(ge_token_dir(off_root, 0, 0), "Add", "add", [A], [A + B])
    Reducer(("max", "crc32")).reduce_tree(off_root)
    pairs = run.pairs(off_root)["add"]
    assert [p.bench_label for p in pairs] == [f"{off} input 0", f"{off} output 0"]
    assert pairs[1].bench_stats == TensorStats(
        "float32", (2, 3), max=float((A + B).max()), crc32=zlib.crc32((A + B).tobytes())
    )
    assert pairs[1].load_target is not None and pairs[1].load_bench is None


def test_a_damaged_summary_line_costs_its_file_only(tmp_path: Path) -> None:
    run = Run(tmp_path)
    ge = run.ge("Add", "add", [A, B], [A + B])
    cast = run.ge("Cast", "trans_Cast_0", [A.astype(np.float16)], [A], timestamp=1735732800000002)
    fx_out = run.fx("add-aten.add.Tensor", "output", 0, A + B)
    Reducer().reduce_tree(tmp_path)
    jsonl = run.token / REDUCED_FILE
    lines = jsonl.read_text().splitlines(keepends=True)
    [bad] = [i for i, line in enumerate(lines) if cast.name in line]
    lines[bad] = lines[bad].replace('"tensors":[', '"tensors":[{"io":')
    lines.append("garbage\n")
    jsonl.write_text("".join(lines))
    fx_jsonl = fx_out.parent / REDUCED_FILE
    fx_jsonl.write_text(fx_jsonl.read_text().replace('"tensors":[', '"tensors":[{'))
    inputs = open_inputs(run.ge_root, run.fx_root)
    [skipped] = inputs.skipped  # the line that names no file
    assert skipped.path == jsonl and skipped.reason.startswith(f"{REDUCED_FILE} line {len(lines)}: ")
    pairs = run.pairs()
    [unreadable] = pairs["trans_Cast_0"]
    expected = f"corrupt GE dump file: unreadable summary: {REDUCED_FILE} line {bad + 1}: "
    assert unreadable.reason.startswith(expected)
    add = {p.api_name: p for p in pairs["add"]}
    assert add["add.input.0"].target_stats is not None and add["add.input.0"].npu_label == str(ge)
    assert add["add.output.0"].reason.startswith(f"unreadable summary: {REDUCED_FILE} line 2: ")


def test_a_damaged_summary_file_is_listed_with_its_reason(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.ge("Add", "add", [A], [A])
    run.fx("add-aten.add.Tensor", "output", 0, A)
    (run.token / REDUCED_FILE).write_text("not json\n")
    inputs = open_inputs(run.ge_root, run.fx_root)
    [skipped] = inputs.skipped
    assert skipped.path == run.token / REDUCED_FILE and str(run.token / REDUCED_FILE) in skipped.reason
