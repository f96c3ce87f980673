"""The report options that ``compare``, ``advise`` and ``host results`` share, spelled once, and the
one check of what ``--graph`` names; the verdict's thresholds, which ``compare`` judges its rows by
and ``advise`` re-judges a result by (the same names, defaults and ranges in both)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dumpcmp.host.verdict import Thresholds

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


VERDICT_DEFAULTS = Thresholds()  # msit analyser's defaults
CosineThreshold = Annotated[
    float, typer.Option("--cosine-threshold", help="A tensor diverges when CosineSimilarity < this.")
]
RedThreshold = Annotated[
    float,
    typer.Option(
        "--red-threshold",
        "--euclidean-threshold",
        help="… or RelativeEuclideanDistance is above this.",
    ),
]
KlThreshold = Annotated[
    float, typer.Option("--kl-threshold", help="… or KullbackLeiblerDivergence is above this.")
]
RmseThreshold = Annotated[
    float, typer.Option("--rmse-threshold", help="… or RootMeanSquareError is above this.")
]
MreThreshold = Annotated[float, typer.Option("--mre-threshold", help="… or MeanRelativeError is above this.")]
StatsThreshold = Annotated[
    float,
    typer.Option(
        "--stats-threshold",
        help="Statistics dumps, and --mode torchair --summary-mode statistics: a statistic fails when "
        "|diff| / max(|NPU|, |golden|) is above this.",
    ),
]


@dataclass(frozen=True, slots=True)
class _Range:
    """The values a threshold may take: finite, ``low`` to ``high`` (``low`` itself unless open)."""

    low: float
    high: float = math.inf
    low_open: bool = False

    def holds(self, value: float) -> bool:
        # NaN fails every comparison: a NaN limit would pass or fail every tensor without a word.
        above = value > self.low if self.low_open else value >= self.low
        return math.isfinite(value) and above and value <= self.high

    def __str__(self) -> str:
        if self.high == math.inf:
            return f"{'>' if self.low_open else '>='} {self.low:g}"
        return f"in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}]"


# The range of each threshold is that of the value it is compared with: a limit outside it would
# make every tensor pass (or fail) that check, which no user means.
THRESHOLD_RANGES = {
    "cosine_threshold": (_Range(-1.0, 1.0), "the range of CosineSimilarity"),
    "red_threshold": (_Range(0.0), "RelativeEuclideanDistance is never negative"),
    "kl_threshold": (_Range(0.0), "KullbackLeiblerDivergence is never negative"),
    "rmse_threshold": (_Range(0.0), "RootMeanSquareError is never negative"),
    "mre_threshold": (_Range(0.0), "MeanRelativeError is never negative"),
    # |diff| / (max(|NPU|, |golden|) + 1e-10) is below 2
    "stats_threshold": (_Range(0.0, 2.0), "a statistic's relative difference is below 2"),
    "max_rel_threshold": (_Range(0.0, low_open=True), "a row passes below it: at 0 none could"),
    "thousandth_bound": (_Range(0.0, low_open=True), "errors are counted below it: at 0 none could be"),
    "five_thousandth_bound": (_Range(0.0, low_open=True), "errors are counted below it: at 0 none could be"),
}


def threshold_problem(ctx: typer.Context) -> str | None:
    """One line naming the first threshold outside its range, and the range; None if all hold."""
    for param in ctx.command.params:
        limits = THRESHOLD_RANGES.get(param.name or "")
        value = ctx.params.get(param.name or "")
        if limits is not None and isinstance(value, float) and not limits[0].holds(value):
            allowed, meaning = limits
            return f"{param.opts[0]} {value:g}: must be a finite number {allowed} ({meaning})"
    return None


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
