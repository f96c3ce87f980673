"""``dumpcmp golden``: the golden npy files of an ONNX model, every intermediate included.

Runs the model on onnxruntime (CPU, graph optimisations off so node names survive) and writes
``{node}.{output index}.{timestamp}.npy`` for every node output and graph input — the files
``compare`` pairs with an NPU dump through the ATC json (formats.md §2.4).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.markup import escape

from dumpcmp.commands._flags import StrictCommand
from dumpcmp.commands._output import console, error_console, user_errors

__all__ = ["app", "golden_command", "register"]

app = typer.Typer(help="Write golden npy files from an ONNX model run on onnxruntime.", no_args_is_help=True)


def golden_command(
    model: Annotated[Path, typer.Argument(help="The ONNX model (.onnx).", show_default=False)],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Directory for the golden npy files.", show_default=False)
    ],
    inputs: Annotated[
        list[Path] | None,
        typer.Option(
            "--input",
            "-i",
            help="An input as .npy or raw .bin, in graph-input order; repeatable. "
            "Without any, inputs are random (seeded) with the model's shapes.",
        ),
    ] = None,
    input_shape: Annotated[
        list[str] | None,
        typer.Option(
            "--input-shape", help="[NAME:]D0,D1,...: shape of a .bin input or of symbolic dims; repeatable."
        ),
    ] = None,
    input_dtype: Annotated[
        list[str] | None,
        typer.Option(
            "--input-dtype", help="[NAME:]DTYPE of a .bin input (default: the model's); repeatable."
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random inputs.")] = 0,
) -> None:
    """Run MODEL in float32 on onnxruntime and save every intermediate tensor as golden npy.

    OUT must not hold npy files of an earlier run: they would be paired with either run's dump.
    """
    with user_errors():
        written, arrays, names, warnings = _golden(
            model, out, inputs or [], input_shape or [], input_dtype or [], seed
        )
    for line in warnings:
        error_console().print(f"[yellow]warning[/yellow]: {escape(line)}")
    printer = console()
    for name, array in zip(names, arrays, strict=True):
        printer.print(f"input {escape(name)}: {array.dtype} {list(array.shape)}")
    printer.print(f"wrote {len(written)} golden files to {escape(str(out))}")


def _golden(
    model: Path, out: Path, inputs: list[Path], shapes: list[str], dtypes: list[str], seed: int
) -> tuple[list[Path], list[np.ndarray], list[str], list[str]]:
    """The golden files written, the inputs as run, their names, and a warning line per input
    cast and per golden file name several ops share."""
    from dumpcmp.fakes.golden import refuse_previous_golden, run_golden, shared_golden_names, write_golden
    from dumpcmp.fakes.inputs import fitted_inputs, parse_dtype, parse_named, parse_shape, resolve_inputs
    from dumpcmp.fakes.onnx_model import analyse, load_model
    from dumpcmp.outputs import new_output_dir

    refuse_previous_golden(out)
    with new_output_dir(out, "--out"):
        proto = load_model(model)
        declared = analyse(proto, simulated=False).inputs
        shape_map = parse_named([parse_shape(s) for s in shapes], declared, "--input-shape")
        dtype_map = parse_named([parse_dtype(d) for d in dtypes], declared, "--input-dtype")
        specs = analyse(proto, shape_map, simulated=False).inputs
        given = resolve_inputs(specs, list(inputs), seed=seed, shapes=shape_map, dtypes=dtype_map)
        arrays, casts = fitted_inputs(specs, given)  # onnxruntime takes the declared dtypes only
        run = run_golden(proto, arrays)
        return write_golden(run, out), arrays, [s.name for s in specs], casts + shared_golden_names(run)


def register(parent: typer.Typer) -> None:
    """Mount ``golden`` as a command of ``parent`` (the dumpcmp CLI)."""
    parent.command(
        "golden", cls=StrictCommand, help="Write golden npy files from an ONNX model run on onnxruntime."
    )(golden_command)


app.command("golden", cls=StrictCommand)(golden_command)
