"""Carry out a hunt's captures on the simulated NPU offline: acl.json for a Capture, ``sim run``
in-process, the files it left as ``PassFiles``. The real path (agent ↔ host) does the same over
the session; this one lets the planner be tested and measured in seconds."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dumpcmp.acl_config import AclConfig, DumpTarget
from dumpcmp.commands.sim import simulate
from dumpcmp.host.fusion_rules import FusionRules, load_rules
from dumpcmp.host.golden import GoldenSource, open_golden
from dumpcmp.host.hunt import Capture, HuntLimits, PassFiles, Verdict, next_step
from dumpcmp.host.hunt.compare import compare_pass, result_table
from dumpcmp.host.matcher import Matcher
from dumpcmp.host.report.advisor import FIRST_DIVERGENCE, advise


@dataclass
class SimHunt:
    """One model with its faults, run once per capture into ``work/pass{k}``."""

    model: str
    work: Path
    faults: tuple[str, ...] = ()
    seed: int = 0
    passes: list[PassFiles] = field(default_factory=list)
    rules: FusionRules | None = None
    golden: GoldenSource | None = None
    full: PassFiles | None = None
    plan_s: float = 0.0  # time spent in next_step (the host's share of a hunt)

    def run(self, capture: Capture | None, name: str) -> PassFiles:
        """Run the model under ``capture`` (None: a full capture, dump_mode all of every op)."""
        out = self.work / name
        dump = out / "npu"
        dump.mkdir(parents=True)
        model_name = self.model.split(":", 1)[1]
        # What the agent writes for a capture (acl_config.builder); None: dump_mode all, every op.
        plan = capture or Capture(0, "tensor", "all", (), "full capture", 0)
        config = AclConfig.build(
            str(dump), targets=[DumpTarget(model_name, plan.layers)], mode=plan.mode,
            data="stats" if plan.data == "stats" else None, stats=plan.stats, op_switch="off",
        )  # fmt: skip
        config.write(out / "acl.json")
        result = simulate(self.model, out, acl_config=out / "acl.json", faults=self.faults, seed=self.seed)
        if self.rules is None:
            self.rules = load_rules(result.fusion_rule)
            self.golden = open_golden(result.golden_dir)
        outputs = []
        for k, array in enumerate(result.outputs):
            path = out / f"{k}.output.npy"
            np.save(path, array, allow_pickle=False)
            outputs.append(path)
        return PassFiles(plan, tuple(result.dump_files), tuple(outputs))

    def full_capture(self) -> PassFiles:
        """The run captured in full (``dump_mode: all``, every op): its rule file and golden too."""
        if self.full is None:
            self.full = self.run(None, "full")
        return self.full

    def first_capture(self) -> Capture:
        """Pass 1 as the planner plans it (the model runs once first, for its rule and golden)."""
        self.full_capture()
        assert self.rules is not None and self.golden is not None
        step = next_step(self.rules, self.golden, [], HuntLimits())
        assert isinstance(step, Capture)
        return step

    def hunt(self, limits: HuntLimits | None = None) -> Verdict:
        """Every pass until the planner gives its verdict."""
        limits = limits or HuntLimits()
        self.first_capture()
        assert self.rules is not None and self.golden is not None
        while True:
            started = time.perf_counter()
            step = next_step(self.rules, self.golden, self.passes, limits)
            self.plan_s += time.perf_counter() - started
            if isinstance(step, Verdict):
                return step
            assert step.index == len(self.passes) + 1
            self.passes.append(self.run(step, f"pass{step.index}"))


def captured_bytes(passes: Sequence[PassFiles]) -> int:
    """The bytes of the dump files ``passes`` left (what a hunt streams, outputs aside)."""
    return sum(p.stat().st_size for done in passes for p in done.dump_files)


def advisor_culprit(rules: FusionRules, golden: GoldenSource, full: PassFiles) -> str:
    """The op the advisor names as first divergence on a full capture ("" when it names none),
    by its fusion rule name: what the hunt must name."""
    rows, _ = compare_pass(Matcher(rules), golden, full.dump_files)
    finding = advise(result_table(rows, "full capture")).first(FIRST_DIVERGENCE)
    if finding is None:
        return ""
    op = rules.find(finding.op_name)
    return op.name if op is not None else finding.op_name
