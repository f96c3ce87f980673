"""Golden-steered capture (``agent run --hunt``): the host plans each pass's dump from the
passes so far until it has pinned the culprit op. A pure library: no RPC, no printing.

``next_step(rules, golden, passes, limits)`` gives pass 1 (statistics of every op), then after
each pass the next ``Capture`` (a window of ops with their inputs, or probes of a few ops'
outputs) or the ``Verdict``. Every comparison is the host's own (``host.core``), every judgement
the advisor's (``report.advisor.op_agreement``, ``verdict.divergence_start``), so the culprit is
the op a full capture's advisor names as the first divergence. The modules:

* ``graph``: dumped ops in execution order, producers and consumers, dump sizes;
* ``compare``: a pass's files through the core; the model's outputs against their golden;
* ``detect``: pass 1's statistics detector (what it cannot see is in its docstring);
* ``window``: a tensor pass judged op by op as the advisor judges a full capture;
* ``planner``: the search, its byte bound and the verdict.

The session's one fusion rule file is used as it is (no ``-cfr``/``-qfr`` merges), and a run of
several steps is judged on its first step.
"""

from dumpcmp.host.hunt.planner import full_capture_bytes, next_step
from dumpcmp.host.hunt.records import Capture, HuntLimits, PassFiles, Verdict

__all__ = ["Capture", "HuntLimits", "PassFiles", "Verdict", "full_capture_bytes", "next_step"]
