"""The hunt's planner measured offline: does it name the culprit a full capture's advisor names?

    python bench/hunt_planner.py                       # every zoo model known, the default fault set
    python bench/hunt_planner.py --models small_cnn --kinds bias,nan --dir /tmp/hp --keep

For each model and each fault (kind × position early/middle/late of its ONNX ops), the model
runs on the simulated NPU once with a full capture (``dump_mode: all`` of every op), which the
advisor judges; then the hunt runs: ``next_step`` plans each pass, the simulated NPU carries it
out (``tests/host/hunt/simhunt.py``: acl.json of the capture, ``sim run`` in-process), until the
verdict. Printed per fault: the advisor's culprit, the hunt's verdict and culprit, passes, bytes
captured against the full capture's, and times: the hunt's (every pass simulated, golden run
included, and planned), the planner's share of it, and the full capture's (its run, compare and
advisor); then each model fault-free, the totals, and every miss with what the hunt saw.
No gRPC, no host: ``bench/hunt.py`` measures the same through the agent and the host.
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dumpcmp.errors import DumpcmpError
from dumpcmp.fakes.faults import FaultKind
from dumpcmp.fakes.zoo import build, zoo_names
from dumpcmp.host.hunt import HuntLimits, Verdict
from tests.host.hunt.simhunt import SimHunt, advisor_culprit, captured_bytes

POSITIONS = {"early": 0.15, "middle": 0.5, "late": 0.85}
AMOUNTS = {"bias": "0.5", "scale": "1.5", "nan": "0.01", "overflow": "", "noise": "0.2"}
# --subtle: faults near what the thresholds and the statistics can tell from fp16 rounding.
SUBTLE = {"bias": "0.1", "scale": "1.1", "nan": "0.0005", "overflow": "", "noise": "0.06"}
# Ops whose outputs a fault cannot land on meaningfully (no arithmetic of their own).
_SHAPE_OPS = {
    "Reshape",
    "Transpose",
    "Flatten",
    "Shape",
    "Gather",
    "Unsqueeze",
    "Squeeze",
    "Concat",
    "Constant",
}


@dataclass(frozen=True)
class Outcome:
    model: str
    fault: str
    position: str
    expected: str
    verdict: Verdict
    passes: int
    hunt_bytes: int
    full_bytes: int
    hunt_s: float
    plan_s: float
    full_s: float

    @property
    def same(self) -> bool:
        return self.verdict.culprit == self.expected and (self.verdict.kind == "isolated") == bool(
            self.expected
        )


def fault_ops(model: str, count: int = 3) -> dict[str, str]:
    """position -> the ONNX op a fault goes to (ops that compute something): early, middle and
    late, or with another ``count`` that many spread evenly (named by their share of the ops)."""
    nodes = [n.name for n in build(model).graph.node if n.op_type not in _SHAPE_OPS]
    shares = (
        POSITIONS if count == 3 else {f"{(i + 0.5) / count:.0%}": (i + 0.5) / count for i in range(count)}
    )
    return {pos: nodes[min(len(nodes) - 1, int(len(nodes) * at))] for pos, at in shares.items()}


def measure(
    model: str, faults: tuple[str, ...], work: Path, position: str, limits: HuntLimits, seed: int = 0
) -> Outcome:
    sim = SimHunt(f"zoo:{model}", work, faults, seed)
    start = time.perf_counter()
    full = sim.full_capture()
    assert sim.rules is not None and sim.golden is not None
    expected = advisor_culprit(sim.rules, sim.golden, full)
    full_s = time.perf_counter() - start  # its run, its compare and the advisor (no streaming here)
    start = time.perf_counter()
    verdict = sim.hunt(limits)
    hunt_s = time.perf_counter() - start
    return Outcome(
        model, faults[0] if faults else "(none)", position, expected, verdict, verdict.passes,
        captured_bytes(sim.passes), captured_bytes([full]), hunt_s, sim.plan_s, full_s,
    )  # fmt: skip


def _short(name: str, width: int = 38) -> str:
    return name if len(name) <= width else "…" + name[-(width - 1) :]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", default="", help="comma-separated zoo models (default: every one)")
    parser.add_argument("--kinds", default=",".join(AMOUNTS), help="fault kinds")
    parser.add_argument("--subtle", action="store_true", help="smaller fault amounts (near the thresholds)")
    parser.add_argument("--positions", type=int, default=3, help="fault positions per model and kind")
    parser.add_argument("--seed", type=int, default=0, help="seed of the inputs and the faults")
    parser.add_argument("--max-passes", type=int, default=8)
    parser.add_argument("--pass-bytes", type=int, default=0)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args(argv)
    models = [m for m in args.models.split(",") if m] or list(zoo_names())
    known = {k.value for k in FaultKind}
    kinds = [k for k in args.kinds.split(",") if k in known]  # "scale" only where the zoo has it
    limits = HuntLimits(args.max_passes, args.pass_bytes)
    root = args.dir or Path(tempfile.mkdtemp(prefix="hunt_planner_"))
    outcomes: list[Outcome] = []
    clean: list[Outcome] = []
    try:
        print(f"{'model':<18}{'fault':<44}{'pos':<7}{'same':<5}{'verdict':<14}{'passes':>6}{'bytes %':>9}"
              f"{'hunt s':>8}{'plan s':>8}{'full s':>8}  culprit (advisor's if different)")  # fmt: skip
        for model in models:
            try:
                targets = fault_ops(model, args.positions)
            except DumpcmpError as exc:  # a model this checkout's zoo lacks is skipped, said
                print(f"{model}: skipped ({exc})")
                continue
            amounts = SUBTLE if args.subtle else AMOUNTS
            runs = [(f"{op}={kind}" + (f":{amounts[kind]}" if amounts.get(kind) else ""), pos)
                    for kind in kinds for pos, op in targets.items()]  # fmt: skip
            for n, (fault, pos) in enumerate([("", "-"), *runs]):
                work = root / f"{model}_{n}"
                got = measure(model, (fault,) if fault else (), work, pos, limits, args.seed)
                (outcomes if fault else clean).append(got)
                if not args.keep:
                    shutil.rmtree(work, ignore_errors=True)
                ratio = got.hunt_bytes / got.full_bytes if got.full_bytes else math.nan
                other = "" if got.same else f"  (advisor: {_short(got.expected) or 'none'})"
                print(
                    f"{model:<18}{_short(got.fault, 42):<44}{pos:<7}{'yes' if got.same else 'NO':<5}"
                    f"{got.verdict.kind:<14}{got.passes:>6}{ratio:>9.2%}"
                    f"{got.hunt_s:>8.2f}{got.plan_s:>8.2f}{got.full_s:>8.2f}  "
                    f"{_short(got.verdict.culprit) or '-'}{other}",
                    flush=True,
                )
        if outcomes:
            same = sum(o.same for o in outcomes)
            ratios = [o.hunt_bytes / o.full_bytes for o in outcomes if o.full_bytes and o.hunt_bytes]
            geomean = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else math.nan
            share = f"{same}/{len(outcomes)} ({same / len(outcomes):.0%})"
            print(f"\nsame culprit as the full capture's advisor: {share}")
            print(f"bytes vs full capture, geometric mean over faults: {geomean:.2%}; "
                  f"passes mean {sum(o.passes for o in outcomes) / len(outcomes):.1f}, "
                  f"max {max(o.passes for o in outcomes)}")  # fmt: skip
        for o in clean:
            print(
                f"fault-free {o.model}: {o.verdict.kind}, {o.hunt_bytes / o.full_bytes:.2%} of the full bytes"
            )
        misses = [o for o in outcomes if not o.same]
        if misses:
            print("\nmisses:")
        for o in misses:
            hunt = f"{o.verdict.kind} {o.verdict.culprit}".strip()
            print(f"- {o.model} {o.fault}: advisor {o.expected or 'none'}; hunt {hunt}")
            for line in o.verdict.evidence:
                print(f"    {line}")
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
