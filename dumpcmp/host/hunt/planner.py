"""The hunt's planner: from the passes so far, the next capture or the verdict.

Pass 1 captures statistics of every op's outputs (and the model's outputs come with every pass).
The statistics detector (``hunt.detect``) names a suspect; pass 2 captures a window around it
(``dump_mode: all``: inputs and outputs, full tensors) of the suspect and its nearest upstream
ops. Every tensor pass is compared by the host's own core and each op judged by the advisor's
``op_agreement`` (``hunt.window``).

The verdict is the advisor's: ``verdict.divergence_start`` walks every op of the model in
execution order, each as its latest full-tensor capture saw it (an op never captured counts as
agreeing, one without a golden counterpart as not compared, as on a full capture). The walk's
first divergence is the culprit once that op was captured with its inputs (``dump_mode: all``):
its inputs agree and its outputs do not. Until then the search goes on from the earliest op
known to disagree: when one of its inputs disagrees, upstream through that input; when it was
only seen by its outputs (a probe, or the model's outputs), among its upstream ops not yet
known to agree. A region small enough is captured as one window; a larger one is bisected with
probes (``dump_mode: output``, a few ops spread over it), each agreeing probe clearing itself and
its upstream ops, the earliest disagreeing one becoming the new front.

Each capture stays within the pass's byte bound (``HuntLimits.pass_bytes``; by default a share
of the full capture), except that a window always holds at least one op.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dumpcmp.host.fusion_rules import FusionRules
from dumpcmp.host.golden import GoldenSource
from dumpcmp.host.hunt.compare import OutputCheck, check_outputs
from dumpcmp.host.hunt.detect import detect
from dumpcmp.host.hunt.graph import HuntGraph
from dumpcmp.host.hunt.records import (
    ALL_STATISTICS,
    ISOLATED,
    NO_DIVERGENCE,
    UNDECIDED,
    Capture,
    HuntLimits,
    PassFiles,
    Verdict,
)
from dumpcmp.host.hunt.window import OpSeen, TensorPass, read_tensor_pass
from dumpcmp.host.matcher import Matcher
from dumpcmp.host.pipeline import locate_golden
from dumpcmp.host.verdict import Agreement, OpAgreement, divergence_start
from dumpcmp.proto.codec import TensorKind

__all__ = ["DEFAULT_SHARE", "PROBES", "WINDOW_OPS", "full_capture_bytes", "next_step"]

DEFAULT_SHARE = 0.04  # the default bound of one pass: this share of a full capture's bytes
WINDOW_OPS = 4  # at most this many ops in one window (the suspect and its nearest upstream)
PROBES = 7  # at most this many ops probed in one bisecting pass


def full_capture_bytes(rules: FusionRules) -> int:
    """Estimate of a full capture (``dump_mode: all``, every op, full tensors) of one run."""
    graph = HuntGraph(rules)
    return graph.window_bytes(graph.order)


def next_step(
    rules: FusionRules, golden: GoldenSource, passes: Sequence[PassFiles], limits: HuntLimits
) -> Capture | Verdict:
    """The next capture after ``passes`` (none yet: pass 1), or the verdict. Deterministic in its
    inputs: the host calls it again with every pass so far after each one."""
    return _Planner(rules, golden, limits).step(passes)


@dataclass(frozen=True)
class _Seen:
    """An op as the passes saw it: its latest full-tensor look, and whether that had its inputs."""

    op: OpSeen
    with_inputs: bool
    pass_index: int


class _Planner:
    def __init__(self, rules: FusionRules, golden: GoldenSource, limits: HuntLimits) -> None:
        self.graph = HuntGraph(rules)
        self.matcher = Matcher(rules)
        self.golden = golden
        self.limits = limits
        full = self.graph.window_bytes(self.graph.order)
        self.pass_bytes = limits.pass_bytes or max(1, int(full * DEFAULT_SHARE))

    # -- the decision ----------------------------------------------------------------------

    def step(self, passes: Sequence[PassFiles]) -> Capture | Verdict:
        if not passes:
            return self.statistics_capture()
        first = detect(self.graph, self.matcher, self.golden, passes[0])
        outputs = self.outputs(passes[0])
        tensor_passes = [read_tensor_pass(self.graph, self.matcher, self.golden, p) for p in passes[1:]]
        seen = self.seen(tensor_passes)
        evidence = [*first.evidence.values(), *(o.words() for o in outputs)]
        bad_outputs = [o for o in outputs if o.agreement is Agreement.DISAGREE]
        k = len(passes)

        walk = divergence_start([self.agreement_of(name, seen) for name in self.graph.order])
        if walk.op is not None:
            name = self.graph.order[walk.op]
            if name in seen and seen[name].with_inputs:
                culprit = self.graph.order[walk.unseen[0]] if walk.unseen else name
                return Verdict(
                    ISOLATED, culprit, self.originals(culprit), (*evidence, *self.proof(name, seen)), k
                )
        # The earliest op known to disagree: the walk's first divergence (not yet seen with its
        # inputs), an op whose input differs while nothing before does, a model output's feed.
        fronts = [self.graph.order[walk.op]] if walk.op is not None else []
        if walk.inconsistent_input is not None:
            fronts.append(self.graph.order[walk.inconsistent_input[0]])
        fronts += self.graph.sorted(o.op_name for o in bad_outputs if o.op_name in self.graph)
        unchecked = [s for s in first.suspects if s not in seen]
        evidence += [
            f"pass {seen[s].pass_index}: {s} agrees in full tensors (its statistics moved, within thresholds)"
            for s in first.suspects
            if s in seen and seen[s].op.output is Agreement.AGREE
        ]
        if k >= self.limits.max_passes and (fronts or unchecked):
            return self.undecided(fronts[0] if fronts else unchecked[0], bool(fronts), evidence, k)
        if fronts[:1] and (walk.op is not None or walk.inconsistent_input is not None):
            return self.search(k + 1, fronts[0], seen)
        # Nothing disagrees yet: the next suspect of pass 1 that no window has looked at.
        if unchecked:
            why = f"around {unchecked[0]}, where statistics leave the golden"
            return self.window_capture(k + 1, self.window_around(unchecked[0], seen), why)
        if fronts:
            return self.search(k + 1, fronts[0], seen)
        return Verdict(NO_DIVERGENCE, "", (), tuple(evidence), k)

    def search(self, k: int, front: str, seen: dict[str, _Seen]) -> Capture:
        """The next capture from ``front``, the earliest op known to disagree."""
        look = seen.get(front)
        cleared = self.cleared(seen)
        if look is not None and look.with_inputs:
            bad = look.op.bad_inputs()
            sources = [p for kk in bad if (p := self.graph.input_producer(front, kk)) is not None]
            if not bad:  # no input compared (none has a golden counterpart): every producer
                sources = list(self.graph.producers(front))
            region = [n for n in {*sources, *self.graph.ancestors(sources)} if n not in cleared]
            need: list[str] = []
        else:
            region = [n for n in self.graph.ancestors([front]) if n not in cleared]
            need = [front]
        region = sorted(region, key=self.graph.place)
        where = (
            f"upstream of {front}, whose input differs"
            if not need
            else f"at and upstream of {front}, which disagrees"
        )
        if len(region) + len(need) <= WINDOW_OPS and self.fits([*region, *need], inputs=True):
            return self.window_capture(k, [*region, *need], where)
        if len(region) <= WINDOW_OPS - len(need):
            return self.window_capture(k, self.nearest(need, region), where)
        return self.probe_capture(k, region, front)

    # -- captures --------------------------------------------------------------------------

    def statistics_capture(self) -> Capture:
        size = sum(self.graph.stats_dump_bytes(n, inputs=False) for n in self.graph.order)
        why = "statistics of every op's outputs, to find where the run leaves the golden"
        return Capture(1, "stats", "output", (), why, size, ALL_STATISTICS)

    def window_capture(self, index: int, window: Sequence[str], why: str) -> Capture:
        ops = self.graph.sorted(window)
        what = f"inputs and outputs of {len(ops)} op{'s' if len(ops) > 1 else ''} {why}"
        return Capture(index, "tensor", "all", ops, what, self.graph.window_bytes(ops))

    def probe_capture(self, index: int, region: Sequence[str], front: str) -> Capture:
        """Outputs of ops spread evenly over ``region`` (execution order), within the bound."""
        count = min(PROBES, len(region))
        while count > 1:
            picks = [region[(i + 1) * len(region) // (count + 1)] for i in range(count)]
            if self.fits(picks, inputs=False):
                break
            count -= 1
        else:
            picks = [region[len(region) // 2]]
        ops = self.graph.sorted(picks)
        size = sum(self.graph.tensor_dump_bytes(n, inputs=False) for n in ops)
        why = (
            f"outputs of {len(ops)} of the {len(region)} ops upstream of {front} (disagrees), to bisect them"
        )
        return Capture(index, "tensor", "output", ops, why, size)

    def window_around(self, suspect: str, seen: dict[str, _Seen]) -> list[str]:
        return self.nearest([suspect], [n for n in self.graph.ancestors([suspect]) if n not in seen])

    def nearest(self, need: Sequence[str], region: Sequence[str]) -> list[str]:
        """``need`` and the ops of ``region`` nearest before it, while the window fits."""
        chosen = list(need) or [max(region, key=self.graph.place)]
        for name in sorted(region, key=self.graph.place, reverse=True):
            if len(chosen) >= WINDOW_OPS:
                break
            if name not in chosen and self.fits([*chosen, name], inputs=True):
                chosen.append(name)
        return chosen

    def fits(self, ops: Sequence[str], *, inputs: bool) -> bool:
        return sum(self.graph.tensor_dump_bytes(n, inputs=inputs) for n in ops) <= self.pass_bytes

    # -- what the passes showed ---------------------------------------------------------------

    def outputs(self, done: PassFiles) -> tuple[OutputCheck, ...]:
        if not done.outputs:
            return ()
        return check_outputs(self.matcher, self.golden, self.graph.net_outputs(), done.outputs)

    @staticmethod
    def seen(passes: Sequence[TensorPass]) -> dict[str, _Seen]:
        """Each op's latest look, a look with its inputs preferred to one without."""
        found: dict[str, _Seen] = {}
        for done in passes:
            for op in done.ops:
                look = _Seen(op, done.with_inputs, done.index)
                known = found.get(op.name)
                if known is None or look.with_inputs or not known.with_inputs:
                    found[op.name] = look
        return found

    def blind(self, name: str) -> bool:
        """No output of ``name`` has a golden counterpart: a full capture cannot judge it either."""
        op = self.graph.op(name)
        return not any(
            locate_golden(self.golden, self.matcher, name, TensorKind.OUTPUT, k)[1] is not None
            for k in range(len(op.outputs))
        )

    def agreement_of(self, name: str, seen: dict[str, _Seen]) -> OpAgreement:
        """``name`` as a full capture would show it, as far as the passes know: its latest look;
        never captured, agreeing (or not compared, when it has no golden counterpart)."""
        look = seen.get(name)
        if look is not None:
            return look.op.agreement
        outputs = len(self.graph.op(name).outputs) or 1
        return OpAgreement((), ((Agreement.UNKNOWN if self.blind(name) else Agreement.AGREE),) * outputs)

    def cleared(self, seen: dict[str, _Seen]) -> set[str]:
        """Ops known to agree, and every op upstream of them (an error there would show)."""
        good = [n for n, look in seen.items() if look.op.output is Agreement.AGREE]
        blind = [n for n, look in seen.items() if look.op.output is Agreement.UNKNOWN]
        return {*good, *self.graph.ancestors(good), *blind}

    def proof(self, name: str, seen: dict[str, _Seen]) -> list[str]:
        look = seen[name]
        inputs = [
            w
            for (io, k), w in look.op.words.items()
            if io == "input" and look.op.agreement.inputs[k] is Agreement.AGREE
        ]
        bad = [
            w for (io, k), w in look.op.words.items() if io == "output" and k in look.op.agreement.bad_outputs
        ]
        return [
            f"pass {look.pass_index}: {name} inputs agree ({'; '.join(inputs) or 'none compared'}), "
            f"outputs do not ({'; '.join(bad)})"
        ]

    def undecided(self, name: str, disagrees: bool, evidence: list[str], k: int) -> Verdict:
        """No pass left: the earliest op known to disagree, or the suspect not yet captured."""
        if disagrees:
            words = f"{name} disagrees; the error starts there or upstream of it (no pass left after {k})"
        else:
            words = f"statistics leave the golden at {name}; not captured in full (no pass left after {k})"
        return Verdict(UNDECIDED, name, self.originals(name), (*evidence, words), k)

    def originals(self, name: str) -> tuple[str, ...]:
        return tuple(n for n in self.graph.op(name).original_op_names if n)
