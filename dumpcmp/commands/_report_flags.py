"""The report options that ``compare``, ``advise`` and ``host results`` share, spelled once, and the
one check of what ``--graph`` names."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from dumpcmp.host.report.graph import OpGraph

Html = Annotated[
    bool,
    typer.Option(
        "--html", help="Also write the HTML report beside the result ({result}.html): plots, graph, table."
    ),
]
ModelExplorer = Annotated[
    bool,
    typer.Option(
        "--model-explorer",
        help="Also write Model Explorer node-data JSON per original op (cosine, max relative error).",
    ),
]
Graph = Annotated[
    Path | None,
    typer.Option(
        "--graph",
        help="The model's ATC fusion rule json, or a TorchAir GE graph dump (dynamo_*.txt; the other "
        "dump of its pair is read from beside it), to draw its network in --html.",
    ),
]


def warn_of_strangers(graph: OpGraph, op_names: Iterable[str], effect: str) -> None:
    """One line when the result names ops the ``--graph`` does not hold: another model's graph is
    otherwise used for nothing (or drawn bare) without a word. ``effect``: what that does to the
    command's output."""
    from dumpcmp.commands._output import console
    from dumpcmp.host.report.graph import strangers

    missing, named = strangers(graph, op_names)
    if missing:
        which = "none" if missing == named else f"{named - missing}"
        console().print(
            f"warning: --graph holds {which} of the {named} ops the result names: is it this "
            f"model's? {effect}",
            markup=False,
        )
