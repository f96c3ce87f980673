"""``simulate_torchair`` / ``sim run --torchair``: layouts, GE↔FX links, fused names, faults, determinism.

The GE graph dump is read here with a small regex of its own, independent of the writer, so a
broken attribute or op block shows up as a missing FX counterpart.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dumpcmp.fakes.torchair import TorchairSimulation, simulate_torchair
from dumpcmp.proto.codec import DumpTensor, read_dump
from dumpcmp.proto.names import parse_dump_name

CLOCK = 1_732_410_000_000_000  # 2024-11-24 01:00:00 UTC in µs
_OP = re.compile(r"^  op \{\n(.*?)^  \}", re.M | re.S)
_FIELD = re.compile(r'^    (name|type|input): "([^"]*)"', re.M)
_FX_ATTR = re.compile(r'key: "_fx_tensor_name" value \{ s: "([^"]*)" \}')


def _run(tmp: Path, **options: object) -> TorchairSimulation:
    options.setdefault("clock", lambda: CLOCK)
    options.setdefault("pid", 7)
    return simulate_torchair(options.pop("model", "zoo:small_cnn"), tmp, **options)  # type: ignore[arg-type]


def _ops(text: str) -> dict[str, dict[str, list[str]]]:
    """op name -> {"type": [..], "input": [..], "fx": [per-output fx tensor names]}."""
    ops = {}
    for block in _OP.findall(text):
        fields: dict[str, list[str]] = {"type": [], "input": [], "fx": _FX_ATTR.findall(block)}
        name = ""
        for key, value in _FIELD.findall(block):
            if key == "name":
                name = value
            else:
                fields[key].append(value)
        ops[name] = fields
    return ops


def _graph(run: TorchairSimulation, kind: str, rank: int = 0) -> dict[str, dict[str, list[str]]]:
    (path,) = [p for p in run.graph_files if p.name.startswith(f"dynamo_{kind}_graph_1_rank_{rank}_")]
    return _ops(path.read_text())


def _split(name: str, known: set[str]) -> list[str]:
    """Greedy longest-prefix split, as a comparator does."""
    parts = []
    while name:
        prefix = max((k for k in known if name.startswith(k)), key=len, default=None)
        assert prefix, f"no known op name starts {name!r}"
        parts.append(prefix)
        name = name[len(prefix) :]
    return parts


def _fx_files(directory: Path) -> dict[str, Path]:
    """'{node}-{target}.{IO}.{k}' -> npy path (the timestamp dropped)."""
    return {p.name.rsplit(".", 2)[0]: p for p in directory.glob("*.npy")}


def _ge_token(run: TorchairSimulation, token: int, rank: int = 0) -> list[Path]:
    return sorted((p for p in run.ge_files if p.parent.name == str(token) and f"rank{rank}" in str(p)),
                  key=lambda p: parse_dump_name(p.name).task_id)  # fmt: skip


def test_new_layout_tree_with_ranks_and_tokens(tmp_path: Path) -> None:
    run = _run(tmp_path, ranks=2, steps=2, fusion_off_tree=True)
    ge = tmp_path / "msprobe_ge_dump"
    assert run.ge_dump_dir == ge and run.fx_dump_dir == tmp_path / "msprobe_fx_dump"
    token_dirs = {p.relative_to(ge).as_posix() for p in ge.glob("*/*/*/*/*/*") if p.is_dir()}
    assert token_dirs == {
        f"worldsize2_global_rank{r}/20241124010000/{r}/graph_1_0/1/{t}" for r in (0, 1) for t in (0, 1)
    }
    fx_dirs = {p.relative_to(run.fx_dump_dir).as_posix() for p in run.fx_dump_dir.glob("*/*/*")}
    assert fx_dirs == {f"worldsize2_global_rank{r}/graph_1/{t}" for r in (0, 1) for t in (0, 1)}
    graphs = sorted(p.name for p in ge.glob("*.txt"))
    assert [re.sub(r"_ts_\d+", "", g) for g in graphs] == [
        f"dynamo_{k}_graph_1_rank_{r}_pid_7.txt" for k in ("optimized", "original") for r in (0, 1)
    ]
    names = [p.name for p in run.fx_files]
    assert all(
        re.fullmatch(r"[a-z_0-9]+-aten\.[a-z_0-9]+\.[A-Za-z_]+\.(INPUT|OUTPUT)\.\d+\.\d{20}\.npy", n)
        for n in names
    )
    assert "convolution-aten.convolution.default.INPUT.1" in _fx_files(run.fx_files[0].parent)
    # Rank 1 ran on other inputs; the fusion-off tree has no fused op.
    r0, r1 = (read_dump(_ge_token(run, 0, r)[0]).inputs[0].logical() for r in (0, 1))
    assert not np.array_equal(r0, r1)
    assert run.fusion_off_dir is not None
    off_types = {parse_dump_name(p.name).op_type for p in run.fusion_off_files if p.suffix != ".txt"}
    assert "AutomaticBufferFusionOp" not in off_types and "Relu" in off_types
    on_types = {parse_dump_name(p.name).op_type for p in run.ge_files}
    assert "AutomaticBufferFusionOp" in on_types and "Relu" not in on_types


@pytest.mark.parametrize(
    ("layout", "fx_glob"),
    [("legacy", "msprobe_fx_dump/data_dump/*/gm_*_dump"), ("old", "data_dump/*/gm_*_dump")],
)
def test_legacy_layouts(tmp_path: Path, layout: str, fx_glob: str) -> None:
    run = _run(tmp_path, layout=layout, steps=2)
    fx_dirs = sorted(p.relative_to(tmp_path).parts for p in tmp_path.glob(fx_glob))
    assert [d[-2] for d in fx_dirs] == ["1", "2"]  # FX tokens from 1, GE from 0
    assert all(re.fullmatch(r"gm_\d{14}_dump", d[-1]) for d in fx_dirs)
    assert {p.parent.relative_to(run.ge_dump_dir).as_posix() for p in run.ge_files} == {
        f"20241124010000/0/graph_1_0/1/{t}" for t in (0, 1)
    }
    assert not list(run.ge_dump_dir.glob("worldsize*"))


def test_legacy_layout_has_no_ranks(tmp_path: Path) -> None:
    from dumpcmp.errors import ConfigError

    with pytest.raises(ConfigError, match="no rank level"):
        _run(tmp_path, layout="legacy", ranks=2)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("model", ["zoo:small_cnn", "zoo:transformer_block"])
def test_every_ge_tensor_has_its_fx_counterpart(tmp_path: Path, model: str) -> None:
    run = _run(tmp_path, model=model)
    original, optimized = _graph(run, "original"), _graph(run, "optimized")
    fx = _fx_files(next(run.fx_dump_dir.glob("*/graph_1/0")))
    mapped = {name: op["fx"] for name, op in original.items() if op["fx"]}
    fused_seen = 0
    for path in _ge_token(run, 0):
        dump_name = parse_dump_name(path.name)
        assert dump_name.op_name in optimized, dump_name.op_name
        dump = read_dump(path)
        if dump_name.op_type in ("Cast", "TransData"):
            assert dump_name.op_name not in original and not optimized[dump_name.op_name]["fx"]
            continue
        members = _split(dump_name.op_name, set(mapped))
        if dump_name.op_type == "AutomaticBufferFusionOp":
            fused_seen += 1
            assert len(members) > 1 and "".join(members) == dump_name.op_name
            # each member reads the one before it in the original graph
            for before, after in itertools.pairwise(members):
                assert original[after]["input"] == [f"{before}:0"]
        else:
            assert members == [dump_name.op_name]
        first = mapped[members[0]][0].rsplit(".OUTPUT.", 1)[0]
        last = mapped[members[-1]]
        for k, tensor in enumerate(dump.inputs):
            golden = np.load(fx[f"{first}.INPUT.{k}"])
            assert _close(tensor.logical(), golden), f"{dump_name.op_name} input {k}"
        assert len(dump.outputs) == len(last)
        for tensor, fx_name in zip(dump.outputs, last, strict=True):
            golden = np.load(fx[fx_name])
            assert _close(tensor.logical(), golden), f"{dump_name.op_name} {fx_name}"
    assert fused_seen >= 1


def _close(npu: np.ndarray, golden: np.ndarray) -> bool:
    a, b = np.asarray(npu, np.float64).ravel(), np.asarray(golden, np.float64).ravel()
    if a.shape != b.shape:
        return False
    scale = np.linalg.norm(a) * np.linalg.norm(b)
    return bool(scale == 0 or a @ b / scale > 0.999)


def _same(a: tuple[DumpTensor, ...], b: tuple[DumpTensor, ...]) -> bool:
    return all(np.array_equal(x.logical(), y.logical(), equal_nan=True) for x, y in zip(a, b, strict=True))


def _downstream(optimized: dict[str, dict[str, list[str]]], start: str) -> set[str]:
    found, frontier = {start}, [start]
    while frontier:
        current = frontier.pop()
        for name, op in optimized.items():
            if name not in found and any(i.rsplit(":", 1)[0] == current for i in op["input"]):
                found.add(name)
                frontier.append(name)
    return found


@pytest.mark.parametrize(
    ("model", "fault", "ge_op"),
    [
        ("zoo:small_cnn", "/block2/Add=bias:2", "AddRelu_4"),
        ("zoo:transformer_block", "/attn/v/Transpose=noise:0.5", "TransposeD_2"),
    ],
)
def test_fault_shows_only_in_the_faulty_op_and_downstream(
    tmp_path: Path, model: str, fault: str, ge_op: str
) -> None:
    clean = _run(tmp_path / "clean", model=model)
    bad = _run(tmp_path / "bad", model=model, faults=[fault])
    assert bad.fault_ge_ops == {fault.split("=")[0]: ge_op}
    affected = _downstream(_graph(bad, "optimized"), ge_op)
    differing = []
    for before, after in zip(_ge_token(clean, 0), _ge_token(bad, 0), strict=True):
        assert before.name == after.name
        name = parse_dump_name(after.name).op_name
        x, y = read_dump(before), read_dump(after)
        same_in = all(
            np.array_equal(a.logical(), b.logical(), equal_nan=True)
            for a, b in zip(x.inputs, y.inputs, strict=True)
        )
        same_out = all(
            np.array_equal(a.logical(), b.logical(), equal_nan=True)
            for a, b in zip(x.outputs, y.outputs, strict=True)
        )
        if name == ge_op:
            assert same_in and not same_out
        if not (same_in and same_out):
            differing.append(name)
    assert ge_op in differing and set(differing) <= affected
    assert len(differing) > 1  # the ops it feeds see it too
    # the golden side never carries the fault
    for a, b in zip(clean.fx_files, bad.fx_files, strict=True):
        assert np.array_equal(np.load(a), np.load(b))


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    def tree(run: TorchairSimulation, root: Path) -> dict[str, bytes]:
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}

    first = _run(tmp_path / "a", steps=2, faults=["/block1.pw/conv/Conv=noise"], fusion_off_tree=True)
    second = _run(tmp_path / "b", steps=2, faults=["/block1.pw/conv/Conv=noise"], fusion_off_tree=True)
    assert tree(first, tmp_path / "a") == tree(second, tmp_path / "b")
    other = _run(tmp_path / "c", steps=2, seed=1, faults=["/block1.pw/conv/Conv=noise"], fusion_off_tree=True)
    assert tree(other, tmp_path / "c") != tree(first, tmp_path / "a")


def test_second_run_into_the_same_directory_is_refused(tmp_path: Path) -> None:
    from dumpcmp.errors import OutputError

    _run(tmp_path)
    with pytest.raises(OutputError, match="already holds a TorchAir simulation"):
        _run(tmp_path)


def _cli() -> Callable[..., object]:
    import typer

    from dumpcmp.commands import sim

    app = typer.Typer()
    app.add_typer(sim.app, name="sim")
    return app  # type: ignore[return-value]


def test_cli_prints_the_compare_command(tmp_path: Path) -> None:
    out = tmp_path / "o"
    result = CliRunner().invoke(
        _cli(),  # type: ignore[arg-type]
        ["sim", "run", "zoo:small_cnn", "-o", str(out), "--torchair", "--inject", "/block2/Add=nan",
         "--fusion-off-tree", "--atomic"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "fault      /block2/Add=nan -> GE op AddRelu_4" in result.output
    assert f"-tp {out / 'msprobe_ge_dump'} -gp {out / 'msprobe_fx_dump'}" in result.output
    assert f"-gp {out / 'fusion_off' / 'msprobe_ge_dump'}" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--quantize", "/stem/conv/Conv"], "--quantize: not an option of --torchair"),
        (["--inject", "nosuch=bias"], "cannot inject a fault at 'nosuch'"),
    ],
)
def test_cli_user_errors_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    out = tmp_path / "o"
    result = CliRunner().invoke(
        _cli(),  # type: ignore[arg-type]
        ["sim", "run", "zoo:small_cnn", "-o", str(out), "--torchair", *args],
    )
    assert result.exit_code == 1
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not out.exists()
