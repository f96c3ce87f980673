"""The report options that ``compare``, ``advise`` and ``host results`` share, spelled once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

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
