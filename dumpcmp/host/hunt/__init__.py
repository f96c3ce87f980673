"""Golden-steered capture (``agent run --hunt``): the host plans each pass's dump from the
passes so far until it has pinned the culprit op. A pure library: no RPC, no printing."""

from dumpcmp.host.hunt.planner import full_capture_bytes, next_step
from dumpcmp.host.hunt.records import Capture, HuntLimits, PassFiles, Verdict

__all__ = ["Capture", "HuntLimits", "PassFiles", "Verdict", "full_capture_bytes", "next_step"]
