"""The statistics drift detector (``verdict.statistics_drifts``) measured on the simulator.

    python bench/statistics_drift.py                      # every zoo model, seeds 0-2, the fault set
    python bench/statistics_drift.py --models small_cnn --no-faults

Each model runs on the simulated NPU with a statistics dump (``dump_data: stats``, every statistic,
inputs and outputs) and is compared with its golden run by the host's core. Fault-free, per model
and seed: the largest error of a row over the run's noise before it (the jump limit must stay above
it), read per op as the hunt's pass 1 does and per row as a summary does. With faults (bench
``hunt_planner``'s set: bias, scale, nan, overflow and noise at an early, middle and late op, normal
and subtle amounts): how often the first drift is the faulty op, upstream of it, downstream, or
nowhere. The figures behind ``verdict.DriftLimits``.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hunt_planner import AMOUNTS, SUBTLE, fault_ops

from dumpcmp.acl_config import AclConfig, DumpTarget
from dumpcmp.commands.sim import simulate
from dumpcmp.fakes.zoo import zoo_names
from dumpcmp.host.fusion_rules import load_rules
from dumpcmp.host.golden import open_golden
from dumpcmp.host.hunt.compare import compare_pass
from dumpcmp.host.hunt.graph import HuntGraph
from dumpcmp.host.matcher import Matcher
from dumpcmp.host.verdict import DriftLimits, StatisticError, statistics_drift, statistics_error

EVERY_STATISTIC = ("Max", "Min", "Avg", "Nan", "Negative Inf", "Positive Inf", "L2norm")
KINDS = ("bias", "scale", "nan", "overflow", "noise")


@dataclass(frozen=True)
class Run:
    """One simulated statistics dump, its errors per row (Index order) and per op (execution order)."""

    rows: list[StatisticError]
    row_ops: list[str]  # the fusion rule op of each row
    ops: list[StatisticError]
    op_names: list[str]
    order: list[str]  # every op, in execution order
    faulty: set[str]  # the ops holding the faulty ONNX op


def run(model: str, seed: int, fault: str = "") -> Run:
    with tempfile.TemporaryDirectory() as work:
        out = Path(work)
        (out / "npu").mkdir()
        config = AclConfig.build(str(out / "npu"), targets=[DumpTarget(model, ())], mode="all", data="stats",
                                 stats=EVERY_STATISTIC, op_switch="off")  # fmt: skip
        config.write(out / "acl.json")
        faults = (fault,) if fault else ()
        result = simulate(f"zoo:{model}", out, acl_config=out / "acl.json", faults=faults, seed=seed)
        rules = load_rules(result.fusion_rule)
        graph = HuntGraph(rules)
        _, stats = compare_pass(Matcher(rules), open_golden(result.golden_dir), result.dump_files)
    compared = [r for r in stats if r.index is not None and r.compared]
    rows = [statistics_error(r.drift_row()) for r in compared]
    row_ops = [op.name if (op := rules.find(r.npu_name)) is not None else r.npu_name for r in compared]
    per_op: dict[str, StatisticError] = {}
    for row, error, name in zip(compared, rows, row_ops, strict=True):
        output = ":output:" in row.tensor_index and name in graph and not math.isnan(error.value)
        if output and (name not in per_op or error.value >= per_op[name].value):
            per_op[name] = error
    ops = graph.sorted(per_op)
    onnx = fault.split("=")[0]
    faulty = {n for n in graph.order if onnx and onnx in graph.op(n).original_op_names}
    return Run(rows, row_ops, [per_op[n] for n in ops], ops, list(graph.order), faulty)


def largest_jump(errors: Sequence[StatisticError], floor: float) -> float:
    """The largest error over the largest before it (errors below ``floor`` counting as it)."""
    noise, worst = floor, 0.0
    for error in errors:
        if not math.isnan(error.value):
            worst, noise = max(worst, error.value / noise), max(noise, error.value)
    return worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", default="", help="comma-separated zoo models (default: every one)")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--no-faults", action="store_true", help="fault-free runs only")
    args = parser.parse_args(argv)
    models = [m for m in args.models.split(",") if m] or list(zoo_names())
    limits = DriftLimits()
    print(
        f"fault-free: largest jump over the run's noise (floor {limits.floor:g}; a drift at {limits.jump:g}x)"
    )
    for model in models:
        for seed in (int(s) for s in args.seeds.split(",")):
            done = run(model, seed)
            rows, ops = done.rows, done.ops
            named = (
                "  NAMES A SUSPECT" if statistics_drift(rows, limits) or statistics_drift(ops, limits) else ""
            )
            print(f"  {model:<18} seed {seed}: per op {largest_jump(ops, limits.floor):5.2f}x, "
                  f"per row {largest_jump(rows, limits.floor):5.2f}x{named}")  # fmt: skip
    if args.no_faults:
        return 0
    print("faults: where the first drift is (per op, as the hunt's pass 1; per row, as a summary)")
    totals: dict[str, Counter[str]] = {"op": Counter(), "row": Counter()}
    for model in models:
        for amounts in (AMOUNTS, SUBTLE):
            for kind in KINDS:
                for onnx in fault_ops(model).values():
                    done = run(
                        model, 0, f"{onnx}={kind}" + (f":{amounts[kind]}" if amounts.get(kind) else "")
                    )
                    for view, errors, names in (
                        ("op", done.ops, done.op_names),
                        ("row", done.rows, done.row_ops),
                    ):
                        drift = statistics_drift(errors, limits)
                        totals[view][_placed(done, None if drift is None else names[drift.at])] += 1
    for view, counts in totals.items():
        places = ("at the fault", "upstream", "downstream", "nowhere")
        print(f"  per {view:<3}: " + ", ".join(f"{place} {counts[place]}" for place in places))
    return 0


def _placed(done: Run, at: str | None) -> str:
    if at is None:
        return "nowhere"
    if at in done.faulty:
        return "at the fault"
    first = min((done.order.index(n) for n in done.faulty), default=len(done.order))
    return "upstream" if at in done.order and done.order.index(at) < first else "downstream"


if __name__ == "__main__":
    sys.exit(main())
