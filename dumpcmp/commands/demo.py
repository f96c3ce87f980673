"""``dumpcmp demo``: the whole product in a few seconds, on the simulated NPU.

A host comparator starts on a free loopback port; an agent runs a zoo model with one injected
fault on the simulated NPU (through the same AscendCL runtime calls as on hardware) and streams
the dump, the golden run and the fusion rule to it; the host compares each file as it lands.
The host's report names the first diverging operator (the fused NPU op and the original ops
inside it) and where the results are; then both stop.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from dumpcmp.commands._flags import StrictCommand
from dumpcmp.commands._output import console, error_console, user_errors

DEFAULT_MODEL = "zoo:small_cnn"
SESSION = "demo"
RULE_NAME = "fusion_rule.json"  # what the simulated compile writes
DEFAULT_OUT = Path("dumpcmp-demo")
# A fault needs an op of the model it is injected into: one per zoo model.
DEFAULT_FAULTS = {
    "zoo:small_cnn": "/block2.gconv/conv/Conv=bias:0.5",
    "zoo:transformer_block": "/mlp.fc1/MatMul=bias:0.5",
    "zoo:resnet": "/layer2/block3/conv1/Conv=bias:0.5",
    "zoo:transformer": "/layers.2/mlp.fc1/MatMul=bias:0.5",
}


def demo(
    model: Annotated[
        str,
        typer.Option(
            "--model", help="zoo:NAME (small_cnn, transformer_block, resnet, transformer) or an .onnx file."
        ),
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
            help=f"Where the agent's run and the host's data go (new or empty). "
            f"Default: a new {DEFAULT_OUT}/run-TIMESTAMP for every run.",
            show_default=False,
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
) -> None:
    """Stream a simulated NPU run with one fault to a local host, name the first bad op."""
    from dumpcmp.agent.run import AgentRun, new_run_token
    from dumpcmp.agent.session import SessionPlan
    from dumpcmp.agent.uploader import UploadSettings
    from dumpcmp.commands.agent import print_summary
    from dumpcmp.commands.sim import prepare_agent_run
    from dumpcmp.errors import OutputError
    from dumpcmp.host.server.serve import HostConfig, start
    from dumpcmp.outputs import new_output_dir
    from dumpcmp.proto.channel import ChannelOptions

    fault = fault or DEFAULT_FAULTS.get(model, "none")
    faults = [] if fault.lower() == "none" else [fault]
    out_console = console()
    with user_errors():
        if out is not None and out.is_dir() and any(out.iterdir()):
            raise OutputError(
                f"--out {out} already holds files (a previous demo?); give a new or empty directory"
            )
    # A refused input (an unknown fault target) or a Ctrl-C leaves no directory behind: half a
    # demo is of no use, and --out holding its files would refuse the rerun.
    target = out or _fresh_run_dir()
    stopped = f"the demo did not finish; what it wrote in --out {target} was removed"
    with user_errors(stopped), new_output_dir(target, "--out", whole=True) as run_dir:
        agent_state = run_dir / "agent"
        host = start(HostConfig("127.0.0.1:0", run_dir / "host"))
        try:
            address = f"127.0.0.1:{host.port}"
            plan = SessionPlan(SESSION, _model_name(model), golden_uploaded=True, fusion_rule_name=RULE_NAME)
            token = new_run_token()
            run = prepare_agent_run(model, agent_state / "runs" / token, token, seed=seed, faults=faults)
            agent = AgentRun(ChannelOptions(address), plan, agent_state, UploadSettings(), error_console())
            try:
                outcome = agent.run_model(run, f"--model {model}")
                outcome.closed = outcome.uploader.close_session()
            except BaseException:
                agent.uploader.abort()  # its journal closed before the run's directory is removed
                raise
        finally:
            host.stop()
    # Printed once the run is over: a refused input is then the only line.
    out_console.print(f"host comparator on {address}, data in {run_dir / 'host'}", markup=False)
    injected = f" with {fault}" if faults else ", no fault injected"
    out_console.print(f"agent: ran {model} on the simulated NPU{injected}", markup=False)
    print_summary(outcome, address, SESSION)
    if outcome.closed is not None:
        _print_advice(Path(outcome.closed.data_dir), outcome.closed.result_files)
    out_console.print(
        f"the agent's simulated run (npu/, golden/, fusion_rule.json): {agent_state / 'runs'}", markup=False
    )


def _print_advice(session_dir: Path, result_files: Sequence[str]) -> None:
    """The advisor's findings on the session's result tables, written beside them."""
    from dumpcmp.commands.advise import advise_results, result_files_named
    from dumpcmp.host.server.files import RESULTS_DIR

    with user_errors():
        advise_results(result_files_named(session_dir / RESULTS_DIR, result_files))


def _model_name(model: str) -> str:
    return Path(model.split(":", 1)[1] if model.startswith("zoo:") else model).stem


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
