"""``dumpcmp sim``: run a model on the simulated NPU and write a dump, its golden and its rules.

``sim run MODEL|zoo:NAME --out DIR`` is ``simulate``: ``dumpcmp.fakes.simulate`` prepares the run
and writes the golden and ATC json; the model runs in between through the agent's runtime
(``run_model``) over ``open_backend("sim")``, the same AscendCL calls as on a real box.
``agent run --sim`` runs it through the agent's live path instead (``prepare_agent_run``).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from dumpcmp.commands._flags import StrictCommand, refusal
from dumpcmp.commands._output import console, error_console, fail, user_errors

if TYPE_CHECKING:
    from dumpcmp.agent.run import PreparedRun
    from dumpcmp.agent.session import RunFile
    from dumpcmp.fakes.simulate import SimulationResult
    from dumpcmp.fakes.torchair import TorchairSimulation

__all__ = ["app", "prepare_agent_run", "simulate"]


class TorchairLayout(str, Enum):
    new = "new"
    legacy = "legacy"
    old = "old"


app = typer.Typer(help="Run models on the simulated NPU.", no_args_is_help=True)


def simulate(model: str | Path, out_dir: str | Path, **options: Any) -> SimulationResult:
    """Simulate ``model`` (an .onnx path or ``zoo:NAME``) into ``out_dir``: dump, golden, rules.

    ``options`` are the keyword arguments of ``prepare_simulation`` (seed, steps, faults, …).
    Raises a DumpcmpError on user errors (an ``AclError`` when the simulated runtime refuses a
    call, e.g. a model it cannot compile).
    """
    from dumpcmp.agent.model_run import run_model
    from dumpcmp.agent.runtime import AclRuntime, open_backend
    from dumpcmp.fakes.simulate import finish_simulation, prepare_simulation

    setup = prepare_simulation(model, out_dir, **options)
    backend = open_backend("sim", **setup.backend_options)
    run = run_model(
        AclRuntime(backend), setup.model_path, setup.inputs, setup.acl_config,
        device=setup.device, steps=setup.steps,
    )  # fmt: skip
    return finish_simulation(setup, backend, run.outputs[-1], run.dump_files)


def prepare_agent_run(
    model: str, work: Path, token: str, extras: Sequence[RunFile] = (), **options: Any
) -> PreparedRun:
    """``model`` on the simulated NPU, ready for the agent's live path (``AgentRun.run_model``),
    with its local files in ``work``: the inputs (npy) and golden data are written now, the
    fusion rule once the model is loaded (compiled, as ATC would have); the dump streams while
    it runs. ``options`` are ``prepare_simulation``'s (seed, steps, faults, acl_config, inputs,
    device); ``extras`` (the user's golden data or rule) go with the run's own files."""
    import numpy as np

    from dumpcmp.agent.run import PreparedRun
    from dumpcmp.agent.runtime import AclRuntime, open_backend
    from dumpcmp.agent.session import tree_files
    from dumpcmp.errors import InternalError
    from dumpcmp.fakes.atc_json import write_atc_json
    from dumpcmp.fakes.golden import run_golden, write_golden
    from dumpcmp.fakes.npu import SimulatedAcl
    from dumpcmp.fakes.onnx_model import analyse
    from dumpcmp.fakes.simulate import prepare_simulation
    from dumpcmp.outputs import atomic_path
    from dumpcmp.printable import skipped_lines
    from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb

    setup = prepare_simulation(model, work, **options)
    inputs_dir = work / "inputs"
    for index, (spec, array) in enumerate(zip(analyse(setup.proto).inputs, setup.inputs, strict=True)):
        with (
            atomic_path(inputs_dir / f"{index}.{spec.name.replace('/', '_')}.npy") as temp,
            temp.open("wb") as f,
        ):
            np.save(f, array, allow_pickle=False)
    golden_dir = work / "golden"
    write_golden(run_golden(setup.proto, list(setup.inputs)), golden_dir, clock=setup.clock)
    backend = open_backend("sim", **setup.backend_options)
    if not isinstance(backend, SimulatedAcl):
        raise InternalError("open_backend('sim') is not the simulated NPU")

    def files(model_id: int) -> list[RunFile]:
        rule = write_atc_json(backend.compiled(model_id), work / "fusion_rule.json")
        # Golden data first: a session comparing with another run's refuses the run at its first file.
        own = (pb.GOLDEN, golden_dir), (pb.INPUT, inputs_dir), (pb.FUSION_RULE, rule)
        skipped: list[str] = []
        sent = [*(f for kind, path in own for f in tree_files(kind, path, skipped)), *extras]
        for line in skipped_lines(skipped):  # a file of the run the host will not have, said here
            console().print(line, markup=False)
        return sent

    return PreparedRun(
        AclRuntime(backend), setup.model_path, setup.model_path.stem, setup.inputs, setup.acl_config,
        setup.npu_dump_dir, setup.device, setup.steps, token, files, work,
    )  # fmt: skip


@app.command("run", cls=StrictCommand)
def run_command(
    ctx: typer.Context,
    model: Annotated[
        str,
        typer.Argument(
            help="An .onnx file, or zoo:NAME (small_cnn, transformer_block, resnet, transformer).",
            show_default=False,
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory.", show_default=False)],
    inputs: Annotated[
        list[Path] | None,
        typer.Option(
            "--input", "-i", help="An input .npy in graph-input order; repeatable (default: random)."
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of random inputs and faults.")] = 0,
    steps: Annotated[int, typer.Option("--steps", min=1, help="How many times to execute the model.")] = 1,
    inject: Annotated[
        list[str] | None,
        typer.Option(
            "--inject",
            help="OP=KIND[:AMOUNT] at an original ONNX op; KIND is bias, scale, noise, "
            "nan, inf, overflow, layout or drop; repeatable.",
        ),
    ] = None,
    acl_config: Annotated[
        Path | None, typer.Option("--acl-config", help="Dump with this acl.json instead of a generated one.")
    ] = None,
    no_fusion: Annotated[
        bool, typer.Option("--no-fusion", help="Compile with fusion off (for -cfr).")
    ] = False,
    quantize: Annotated[
        list[str] | None,
        typer.Option("--quantize", help="Quantise this conv/matmul layer to int8; repeatable."),
    ] = None,
    atomic: Annotated[
        bool,
        typer.Option(
            "--atomic/--progressive",
            help="Write each dump file atomically, or chunk by chunk as a "
            "real dump directory fills (default).",
        ),
    ] = False,
    torchair: Annotated[
        bool,
        typer.Option(
            "--torchair",
            help="Write a TorchAir run instead: GE dump with graph dumps (msprobe_ge_dump) and FX npy dump "
            "(msprobe_fx_dump), for compare --mode torchair.",
        ),
    ] = False,
    torchair_layout: Annotated[
        TorchairLayout,
        typer.Option(
            "--torchair-layout",
            help="new (torch_npu > 7.1.0: worldsize/rank levels), legacy (7.1.0: data_dump/{token+1}) "
            "or old (./data_dump).",
        ),
    ] = TorchairLayout.new,
    ranks: Annotated[int, typer.Option("--ranks", min=1, help="With --torchair: ranks of the run.")] = 1,
    fusion_off_tree: Annotated[
        bool,
        typer.Option(
            "--fusion-off-tree",
            help="With --torchair: also a fault-free GE dump without fused ops in OUT/fusion_off.",
        ),
    ] = False,
) -> None:
    """Simulate MODEL: dump tree in OUT/npu, golden npy in OUT/golden, OUT/fusion_rule.json.

    OUT must not hold an earlier simulation: its golden files would be mixed with this run's.
    """
    from dumpcmp.errors import ConfigError
    from dumpcmp.outputs import new_output_dir

    refused = refusal(ctx, _ONLY_TORCHAIR if not torchair else _NOT_TORCHAIR)
    if refused is not None:
        fail(refused)
    # A half simulation is of no use, and its rerun would refuse OUT as taken: it goes.
    stopped = _stopped_line(out, None if torchair else acl_config)
    if torchair:
        with user_errors(stopped), new_output_dir(out, "--out", whole=True):
            run = _simulate_torchair(
                model, out, seed=seed, steps=steps, faults=inject or (), inputs=inputs or (),
                layout=torchair_layout.value, ranks=ranks, fusion=not no_fusion,
                fusion_off_tree=fusion_off_tree, atomic=atomic,
            )  # fmt: skip
        _print_torchair(run)
        return
    with user_errors(stopped), new_output_dir(out, "--out", whole=True):
        result = simulate(
            model,
            out,
            seed=seed,
            steps=steps,
            faults=inject or (),
            no_fusion=no_fusion,
            quantize=quantize or (),
            acl_config=acl_config,
            inputs=inputs or (),
            atomic=atomic,
        )
        if not result.dump_files:  # CANN is silent about it too; a simulation made to dump is not
            raise ConfigError(
                f"nothing dumped: {result.acl_config} selects no op of model {result.model_name} "
                "(its dump_list names another model, or no op of this one)"
            )
    for line in result.golden_warnings:
        error_console().print(f"[yellow]warning[/yellow]: {escape(line)}")
    printer = console()
    tasks = len(result.compiled.tasks)
    printer.print(
        f"model      {escape(result.model_name)} ({escape(str(result.model_path))}): {tasks} NPU ops, "
        f"fusion {'off' if no_fusion else 'on'}, {result.steps} step(s)"
    )
    printer.print(f"npu dump   {len(result.dump_files)} files in {escape(str(result.run_dir))}")
    printer.print(f"golden     {len(result.golden_files)} files in {escape(str(result.golden_dir))}")
    printer.print(f"rules      {escape(str(result.fusion_rule))}")
    if result.quant_rule is not None:
        printer.print(f"quant rule {escape(str(result.quant_rule))}")
    printer.print(f"acl.json   {escape(str(result.acl_config))}")
    for fault in result.faults:
        printer.print(
            f"fault      {escape(str(fault))} -> NPU op {escape(result.fault_npu_ops.get(fault.op, '?'))}"
        )
    # What to run next, quoted for a shell (as the TorchAir simulation says its own)
    command = ["dumpcmp", "compare", "-tp", _here(result.npu_dump_dir), "-gp", _here(result.golden_dir),
               "-fr", _here(result.fusion_rule)]  # fmt: skip
    if result.quant_rule is not None:
        command += ["-qfr", _here(result.quant_rule)]
    printer.print(f"compare    {shlex.join(command)}", markup=False)


def _stopped_line(out: Path, acl_config: Path | None) -> str:
    """What an interrupted simulation says: what it wrote is gone, when OUT held nothing before;
    and, dumping with a given acl.json, that the dump files it wrote are in its dump path (not
    OUT's: the user's directory, which may hold other runs, is left as it is)."""
    from dumpcmp.launch import INTERRUPTED
    from dumpcmp.outputs import holds_nothing

    line = INTERRUPTED
    if holds_nothing(out):
        line = f"the simulation did not finish; what it wrote in --out {out} was removed"
    dump_path = _dump_path(acl_config) if acl_config is not None else None
    if dump_path is not None:
        line += (
            f"; any dump files it wrote stay in {dump_path} (--acl-config's dump_path), under this run's time"
        )
    return line


def _dump_path(acl_config: Path) -> Path | None:
    """The local dump path ``acl_config`` names; None where it names none (the run refuses it)."""
    from dumpcmp.acl_config import load as load_config
    from dumpcmp.errors import DumpcmpError

    try:
        dump = load_config(acl_config).dump
    except DumpcmpError:
        return None
    return Path(dump.dump_path).resolve() if dump is not None and dump.dump_path else None


_ONLY_TORCHAIR = dict.fromkeys(("torchair_layout", "ranks", "fusion_off_tree"), "an option of --torchair")
_NOT_TORCHAIR = dict.fromkeys(
    ("acl_config", "quantize"), "not an option of --torchair (its dump is written without AscendCL)"
)


def _simulate_torchair(model: str, out: Path, **options: Any) -> TorchairSimulation:
    from dumpcmp.fakes.torchair import simulate_torchair

    return simulate_torchair(model, out, **options)


def _print_torchair(run: TorchairSimulation) -> None:
    printer = console()
    fused = sum(1 for op in run.graph.ops if op.fused)
    printer.print(
        f"model      {escape(run.model_name)}: {len(run.graph.ops)} GE ops ({fused} fused), "
        f"{run.ranks} rank(s), {run.steps} token(s), layout {run.layout}"
    )
    printer.print(f"ge dump    {len(run.ge_files)} files in {escape(str(run.ge_dump_dir))}")
    printer.print(f"ge graphs  {len(run.graph_files)} files in {escape(str(run.ge_dump_dir))}")
    printer.print(f"fx dump    {len(run.fx_files)} files in {escape(str(run.fx_dump_dir))}")
    if run.fusion_off_dir is not None:
        printer.print(f"fusion off {len(run.fusion_off_files)} files in {escape(str(run.fusion_off_dir))}")
    for fault in run.faults:
        printer.print(
            f"fault      {escape(str(fault))} -> GE op {escape(run.fault_ge_ops.get(fault.op, '?'))}"
        )
    benches = [run.fx_dump_dir] + ([run.fusion_off_dir] if run.fusion_off_dir is not None else [])
    for label, bench in zip(("compare   ", "          "), benches, strict=False):
        # Quoted for a shell: a directory named "q q" or "a;b" pastes as one argument.
        command = shlex.join(["dumpcmp", "compare", "--mode", "torchair", "-tp", str(run.ge_dump_dir),
                              "-gp", str(bench)])  # fmt: skip
        printer.print(f"{label} {command}", markup=False)


def _here(path: Path) -> str:
    """``path`` as the next command takes it: relative to the working directory when below it, so
    that the dump path (absolute in acl.json) and the rest (as the user gave ``--out``) read alike."""
    absolute = path.absolute()
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:
        return str(absolute)
