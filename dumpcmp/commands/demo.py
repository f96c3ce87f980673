"""``dumpcmp demo``: the whole product in a few seconds, on the simulated NPU.

A zoo model runs with one injected fault; its dump is compared with the float32 golden run
through the same code as ``compare -m offline_data``; the worst ops and the first diverging op
are printed, naming the fused NPU op and the original ops inside it.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from dumpcmp.commands._flags import StrictCommand
from dumpcmp.commands._output import console, user_errors

DEFAULT_MODEL = "zoo:small_cnn"
DEFAULT_OUT = Path("dumpcmp-demo")
# A fault needs an op of the model it is injected into: one per zoo model.
DEFAULT_FAULTS = {
    "zoo:small_cnn": "/block2.gconv/conv/Conv=bias:0.5",
    "zoo:transformer_block": "/mlp.fc1/MatMul=bias:0.5",
}
WORST_ROWS = 8


def demo(
    model: Annotated[
        str, typer.Option("--model", help="zoo:small_cnn, zoo:transformer_block or an .onnx file.")
    ] = (DEFAULT_MODEL),
    fault: Annotated[
        str | None,
        typer.Option(
            "--fault",
            help="OP=KIND[:AMOUNT] on an original (ONNX) op; 'none' for a clean run. "
            "Default: a bias in one op of a zoo model, none for an .onnx file.",
            show_default=False,
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help=f"Where the simulation and results go (new or empty). "
            f"Default: a new {DEFAULT_OUT}/run-TIMESTAMP for every run.",
            show_default=False,
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
) -> None:
    """Simulate a model with one fault, compare with its golden run, name the first bad op."""
    from dumpcmp.commands.sim import simulate
    from dumpcmp.host.offline import CompareRequest, run_compare
    from dumpcmp.host.verdict import Thresholds
    from dumpcmp.outputs import new_output_dir

    fault = fault or DEFAULT_FAULTS.get(model, "none")
    faults = () if fault.lower() == "none" else (fault,)
    out_console = console()
    limits = Thresholds()
    with user_errors():
        with new_output_dir(out or _fresh_run_dir(), "--out") as run_dir:
            sim = simulate(model, run_dir, seed=seed, faults=faults)
        files = f"{len(sim.dump_files)} dump files, {len(sim.golden_files)} golden files"
        out_console.print(f"simulated {sim.model_name}: {files}")
        for original, npu_op in sim.fault_npu_ops.items():
            out_console.print(f"injected {fault.split('=', 1)[1]} into {original} (inside NPU op {npu_op})")
        outcome = run_compare(
            CompareRequest(
                sim.run_dir or sim.npu_dump_dir,
                sim.golden_dir,
                fusion_rule=sim.fusion_rule,
                out_dir=run_dir / "result",
            )
        )
    rows = [r for r in outcome.rows if r.index is not None and not math.isnan(r.cosine)]
    table = Table(title=f"worst {WORST_ROWS} tensors by CosineSimilarity")
    table.add_column("Index", justify="right")
    table.add_column("NPU op", overflow="fold")
    table.add_column("tensor", no_wrap=True)
    table.add_column("cosine", no_wrap=True)
    table.add_column("max abs err", no_wrap=True)
    for row in sorted(rows, key=lambda r: r.cosine)[:WORST_ROWS]:
        style = "red" if limits.diverges(row.metrics) else None
        table.add_row(
            str(row.index),
            row.npu_name,
            ":".join(row.tensor_index.rsplit(":", 2)[-2:]),
            f"{row.cosine:.6f}",
            f"{row.metrics.max_absolute_error:.4g}",
            style=style,
        )
    out_console.print(table)
    first = next((r for r in rows if ":output:" in r.tensor_index and limits.diverges(r.metrics)), None)
    if first is None:
        out_console.print(f"every output agrees with the golden run (none has {limits.describe()})")
    else:
        out_console.print(
            f"first diverging operator: [bold]{first.npu_name}[/bold] "
            f"({first.op_type}, index {first.index}), original ops: {first.ground_truth}; "
            f"cosine {first.cosine:.6f}"
        )
    for shard in outcome.shards:
        out_console.print(f"result file: {shard.result_file}", markup=False)
    out_console.print(f"simulation: {sim.out_dir} (npu/, golden/, fusion_rule.json)", markup=False)


def _fresh_run_dir() -> Path:
    """A directory of its own for this run, so running the demo again never meets the last run's files."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidate = DEFAULT_OUT / f"run-{stamp}"
    suffix = 1
    while candidate.exists():
        candidate = DEFAULT_OUT / f"run-{stamp}-{suffix}"
        suffix += 1
    return candidate


def register(app: typer.Typer) -> None:
    app.command("demo", cls=StrictCommand)(demo)
