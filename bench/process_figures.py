"""A benchmark process's own figures, importable without numpy.

A child timed from its process's start (``bench/stream.py``'s agent CLI) must not import numpy
for these: its import (and its BLAS's thread per core) would be counted as the agent's CPU.
"""

from __future__ import annotations

import resource
import sys
from pathlib import Path

__all__ = ["peak_rss_kb"]


def peak_rss_kb() -> int:
    """This process's peak RSS in KiB since it started.

    Linux's ``ru_maxrss`` starts from the parent's high-water mark (exec records the forked
    copy's), so it would report the builder's memory; ``VmHWM`` belongs to this process's own
    address space. Elsewhere fall back to ``ru_maxrss`` (KiB on Linux, bytes on macOS).
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak
