"""Result tables for the report tests: synthetic chains of any length, and a simulated run."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

from dumpcmp.cli import app
from dumpcmp.commands.sim import simulate
from dumpcmp.host.report.graph import OpGraph
from dumpcmp.host.report.table import ResultTable, table_from_cells
from dumpcmp.host.sinks.table import TableShape

HEADER = TableShape(op_sequence=True).header()
GOOD = ["1.000000", "0.000100", "0.010000", "0.000100", "0.000000", "(0.000;1.000),(0.000;1.000)",
        "0.000050", "0.000070", "0.000200", "0.000010"]  # fmt: skip
BAD = ["0.500000", "3.000000", "900.000000", "0.800000", "0.400000", "(1.000;1.000),(0.000;1.000)",
       "1.500000", "1.800000", "2.500000", "1.200000"]  # fmt: skip
HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


def op_name(i: int) -> str:
    return f"/layer{i}/conv/Conv"


def chain_cells(
    ops: int, bad_from: int | None = None, names: dict[int, str] | None = None
) -> list[list[str]]:
    """Header and rows of a chain of Conv ops, one input and one output row each; outputs from op
    ``bad_from`` on (and the inputs after it) disagree."""
    names = names or {}
    rows = [list(HEADER)]
    for i in range(ops):
        name = names.get(i, op_name(i))
        bad_out = bad_from is not None and i >= bad_from
        bad_in = bad_from is not None and i > bad_from
        for io, bad in (("input", bad_in), ("output", bad_out)):
            rows.append(
                [str(i), str(i + 1), "Conv2D", name, "DT_FLOAT16", name, "DT_FLOAT", f"{name}:{io}:0",
                 "[1,8,4,4]", *(BAD if bad else GOOD), ""]
            )  # fmt: skip
    return rows


def chain_table(ops: int, bad_from: int | None = None, names: dict[int, str] | None = None) -> ResultTable:
    return table_from_cells(chain_cells(ops, bad_from, names), source="chain.csv")


def chain_graph(ops: int, names: dict[int, str] | None = None, fused_every: int = 0) -> OpGraph:
    """The chain's graph; every ``fused_every``-th op stands for three original ops."""
    names = names or {}
    nodes = tuple(names.get(i, op_name(i)) for i in range(ops))
    originals = {
        n: (n, f"{n}/bn", f"{n}/relu") if fused_every and i % fused_every == 0 else (n,)
        for i, n in enumerate(nodes)
    }
    return OpGraph(
        nodes=nodes,
        types=dict.fromkeys(nodes, "Conv2D"),
        edges=tuple(itertools.pairwise(nodes)),
        originals=originals,
    )


@dataclass(frozen=True, slots=True)
class SimulatedResult:
    result: Path  # result_*.csv
    out_dir: Path
    fusion_rule: Path
    fault_op: str  # the NPU op the fault was injected into


def simulated_result(tmp: Path, *extra: str) -> SimulatedResult:
    """zoo:small_cnn with a bias fault at the stem conv, compared with ``extra`` compare options."""
    fault = "/stem/conv/Conv"
    sim = simulate("zoo:small_cnn", tmp / "sim", faults=(f"{fault}=bias:0.5",), seed=3)
    out = tmp / "out"
    result = CliRunner().invoke(
        app,
        ["compare", "-m", "offline_data", "-tp", str(sim.npu_dump_dir), "-gp", str(sim.golden_dir),
         "-fr", str(sim.fusion_rule), "-o", str(out), *extra],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (csv_path,) = out.glob("result_*.csv")
    return SimulatedResult(csv_path, out, Path(sim.fusion_rule), sim.fault_npu_ops[fault])
