"""What ``compare -m offline_data`` is asked to do: plain records, light to import.

The command line builds them before numpy, the codec or the kernels are loaded: ``--help``, a
refused option and ``--print-request`` never load those.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from dumpcmp.host.verdict import Thresholds


@dataclass(frozen=True, slots=True)
class DetailRequest:
    op: str
    index: int = 0
    io: Literal["input", "output"] = "output"


@dataclass(frozen=True, slots=True)
class CompareRequest:
    """Everything ``compare -m offline_data`` was asked to do, resolved from the command line."""

    target: Path
    golden: Path
    fusion_rule: Path | None = None
    close_fusion_rule: Path | None = None
    quant_fusion_rule: Path | None = None
    out_dir: Path = Path(".")
    overflow_detection: bool = False
    detail: DetailRequest | None = None
    xlsx: bool = False
    jobs: int = 0
    custom: Path | None = None
    thresholds: Thresholds = field(default_factory=Thresholds)
