"""What the hunt's planner and its caller (the host's hunt service) exchange: captures,
the files a pass left, the verdict, the limits."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ALL_STATISTICS",
    "Capture",
    "HuntLimits",
    "PassFiles",
    "Verdict",
]

# dump_stats of a statistics pass: the L2 norm is the statistic the detector leans on most.
ALL_STATISTICS = ("Max", "Min", "Avg", "Nan", "Negative Inf", "Positive Inf", "L2norm")

ISOLATED = "isolated"
NO_DIVERGENCE = "no divergence"
UNDECIDED = "undecided"


@dataclass(frozen=True)
class Capture:
    """One pass's capture, as the agent writes it into acl.json."""

    index: int  # 1-based pass number this capture is for
    data: str  # acl.json dump_data: "stats" | "tensor"
    mode: str  # acl.json dump_mode: "output" | "all"
    layers: tuple[str, ...]  # NPU op names as in the fusion rule json ("layer"); () = every op
    why: str  # one line for the user: why this capture
    expected_bytes: int  # the planner's estimate of this pass's dump bytes
    stats: tuple[str, ...] = ()  # acl.json dump_stats (only with data "stats"); () = CANN's default


@dataclass(frozen=True)
class Verdict:
    """How the hunt ended."""

    kind: str  # "isolated" | "no divergence" | "undecided"
    culprit: str  # NPU op name ("" when none)
    originals: tuple[str, ...]  # the culprit's original (framework) op names
    evidence: tuple[str, ...]  # lines with the numbers that decided it
    passes: int  # passes it took


@dataclass(frozen=True)
class PassFiles:
    """What one pass carried out and the files it left on the host."""

    capture: Capture  # what the pass carried out
    dump_files: tuple[Path, ...]  # its dump files on the host's disk (stats .csv or tensor dumps)
    outputs: tuple[Path, ...]  # the model's outputs (.npy, output order); () when none came


@dataclass(frozen=True)
class HuntLimits:
    max_passes: int = 8
    pass_bytes: int = 0  # 0: the planner's default bound (a share of the full capture)
