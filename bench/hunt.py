"""The hunt against a full capture, fault by fault, through the real agent ↔ host path.

    python bench/hunt.py                          # every model of MODELS, every fault, fault-free runs
    python bench/hunt.py --models resnet --kinds bias,nan --dir /tmp/hunt --keep

For each seeded fault (``--inject OP=KIND``, at ONNX ops 10%, 50% and 90% of the way through the
model) and each model without a fault, on one ``dumpcmp host serve``:

* **full capture**: ``dumpcmp agent run --model zoo:M --sim --inject F`` (the simulated NPU's default
  acl.json: every op, ``dump_mode: all``) into its own session, then ``host results --csv`` and the
  advisor's first divergence (``dumpcmp advise`` on that table): the culprit a user gets today. Its
  time is the agent's run, stream and close plus the results' download and the advice; its bytes are
  the dump files the host stored.
* **hunt**: the same command with ``--hunt``: its culprit is the verdict it prints, its time the
  command's wall time, its bytes every pass's dump and output files the host stored.

It prints one line per case and the targets of issue 21: the share of faults whose culprit the hunt
names as the full capture does (≥ 95%), the geometric mean of hunt bytes over full bytes (≤ 10%;
fault-free runs ≤ 5%) and of hunt time over full time (≤ 1). Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import math
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.e2e, from anywhere

from dumpcmp.fakes.zoo import build
from dumpcmp.host.report.advisor import FIRST_DIVERGENCE, advise
from dumpcmp.host.report.table import read_result
from tests.e2e.agent_host_kit import HostProcess, dumpcmp

MODELS = ("resnet", "transformer")
KINDS = ("bias:0.5", "scale:1.5", "nan", "overflow", "noise:0.3")
POSITIONS = (0.1, 0.5, 0.9)
# Ops that compute, as fault targets. Not those that only move data (a fault there is the layout's),
# nor the GELU's interior (Div, Erf, Mul: its saturation can swallow an inf or an overflow whole).
_COMPUTING = frozenset(
    {"Conv", "Gemm", "MatMul", "Add", "Relu", "Softmax", "LayerNormalization", "BatchNormalization",
     "GlobalAveragePool", "MaxPool", "AveragePool", "Sigmoid", "Tanh"}
)  # fmt: skip
_CAPTURED_DIRS = ("dump", "outputs")  # what the device captured; golden, rule and inputs are the host's
_VERDICT = re.compile(r"^verdict: ([^:,]+)(?:: (\S+))?", re.MULTILINE)  # kind, then the culprit


@dataclass(frozen=True)
class Case:
    model: str
    fault: str  # "" for a fault-free run

    @property
    def label(self) -> str:
        return f"{self.model} {self.fault or 'fault-free'}"


@dataclass(frozen=True)
class Outcome:
    culprit: str  # NPU op name; "" when nothing is named
    seconds: float
    captured: int  # bytes
    passes: int = 1


def fault_cases(models: list[str], kinds: list[str]) -> list[Case]:
    cases = []
    for model in models:
        nodes = [n.name for n in build(model).graph.node if n.op_type in _COMPUTING]
        for position in POSITIONS:
            for k, kind in enumerate(kinds):  # each kind a few ops further on: more ops, same depth
                op = nodes[min(len(nodes) - 1, int(position * len(nodes)) + k)]
                cases.append(Case(model, f"{op}={kind}"))
        cases.append(Case(model, ""))
    return cases


def captured_bytes(session_dir: Path) -> int:
    return sum(f.stat().st_size for d in _CAPTURED_DIRS for f in (session_dir / d).rglob("*") if f.is_file())


def agent_run(host: HostProcess, state: Path, session: str, case: Case, *extra: str) -> tuple[str, float]:
    inject = ("--inject", case.fault) if case.fault else ()
    started = time.perf_counter()
    done = dumpcmp(
        "agent", "run", "--host", host.address, "--session", session, "--model", f"zoo:{case.model}",
        "--sim", "--state", state, *inject, *extra, timeout=600,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    if done.code not in (0, 1):  # 1: the run compared and found a divergence
        raise SystemExit(f"{case.label}: agent run {' '.join(extra)} failed ({done.code}):\n{done.output}")
    return done.output, seconds


def full_capture(host: HostProcess, work: Path, session: str, case: Case) -> Outcome:
    _output, seconds = agent_run(host, work / "state", session, case)
    started = time.perf_counter()
    table = work / f"{session}.csv"
    done = dumpcmp("host", "results", session, "--host", host.address, "--csv", table, timeout=600)
    if not table.is_file():
        raise SystemExit(f"{case.label}: host results wrote no table ({done.code}):\n{done.output}")
    advice = advise(read_result(table))
    seconds += time.perf_counter() - started
    named = advice.first(FIRST_DIVERGENCE) or next((f for f in advice.findings if f.order is not None), None)
    return Outcome(named.op_name if named else "", seconds, captured_bytes(host.session_dir(session)))


def hunt(host: HostProcess, work: Path, session: str, case: Case) -> Outcome:
    output, seconds = agent_run(host, work / "state", session, case, "--hunt")
    found = _VERDICT.search(output)
    passes = len(re.findall(r"^pass \d+", output, re.MULTILINE))
    if found is None:
        raise SystemExit(f"{case.label}: the hunt gave no verdict:\n{output}")
    culprit = (found.group(2) or "").rstrip(",")  # "…: OP, after 2 passes" when OP has no originals
    if not culprit:
        print(f"  {case.label}: the hunt's verdict: {found.group(1)}", file=sys.stderr)
    return Outcome(culprit, seconds, captured_bytes(host.session_dir(session)), passes)


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(max(v, 1e-12)) for v in values) / len(values)) if values else math.nan


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", default=",".join(MODELS), help="zoo models, comma-separated")
    parser.add_argument(
        "--kinds", default=",".join(KINDS), help="fault kinds (KIND[:AMOUNT]), comma-separated"
    )
    parser.add_argument("--dir", type=Path, help="work directory (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    work = args.dir or Path(tempfile.mkdtemp(prefix="dumpcmp-hunt-"))
    work.mkdir(parents=True, exist_ok=True)
    cases = fault_cases(args.models.split(","), args.kinds.split(","))
    host = HostProcess(work / "data", work).start()
    print(f"{'case':<52} {'full culprit':<50} {'hunt culprit':<50} {'same':<4} {'passes':>6} "
          f"{'hunt MB':>8} {'full MB':>8} {'ratio':>6} {'hunt s':>7} {'full s':>7}")  # fmt: skip
    same, byte_ratios, clean_ratios, time_ratios = 0, [], [], []
    faulty = 0
    try:
        for index, case in enumerate(cases):
            full = full_capture(host, work, f"full{index}", case)
            found = hunt(host, work, f"hunt{index}", case)
            agrees = found.culprit == full.culprit
            ratio = found.captured / full.captured if full.captured else math.nan
            if case.fault:
                faulty += 1
                same += agrees
                byte_ratios.append(ratio)
            else:
                clean_ratios.append(ratio)
            time_ratios.append(found.seconds / full.seconds)
            print(
                f"{case.label:<52} {full.culprit or '-':<50} {found.culprit or '-':<50} "
                f"{'yes' if agrees else 'NO':<4} {found.passes:>6} {found.captured / 1e6:>8.2f} "
                f"{full.captured / 1e6:>8.2f} {ratio:>6.1%} {found.seconds:>7.2f} {full.seconds:>7.2f}",
                flush=True,
            )
    finally:
        host.stop()
        if not args.keep and args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(
        f"same culprit as the full capture: {same}/{faulty} faults "
        f"({same / max(faulty, 1):.0%}; target >= 95%)"
    )
    print(f"hunt bytes / full bytes, geometric mean: faults {geomean(byte_ratios):.1%} (target <= 10%), "
          f"fault-free {geomean(clean_ratios):.1%} (target <= 5%)")  # fmt: skip
    quicker = sum(r <= 1 for r in time_ratios)
    print(
        f"hunt time / full time, geometric mean: {geomean(time_ratios):.2f} (target <= 1); "
        f"the hunt no slower in {quicker}/{len(time_ratios)} cases"
    )


if __name__ == "__main__":
    main()
