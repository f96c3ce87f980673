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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dumpcmp.errors import InternalError
from dumpcmp.host.fusion_rules import FusionRules
from dumpcmp.host.golden import GoldenSource
from dumpcmp.host.hunt.compare import OutputCheck, check_outputs
from dumpcmp.host.hunt.detect import Detection, detect
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
from dumpcmp.host.verdict import Agreement, DriftLimits, OpAgreement, divergence_start
from dumpcmp.printable import counted
from dumpcmp.proto.codec import TensorKind

__all__ = ["DEFAULT_SHARE", "PROBES", "WINDOW_OPS", "full_capture_bytes", "next_step"]

DEFAULT_SHARE = 0.04  # the default bound of one pass: this share of a full capture's bytes
WINDOW_OPS = 4  # at most this many ops in one window (the suspect and its nearest upstream)
PROBES = 7  # at most this many ops probed in one bisecting pass
MOVED_AS_FAR = 0.5  # after a suspect that agrees: ops whose statistics moved at least half as far
# Statistics errors below this are the run's own noise (the detector's jump over its floor).
NOISE = DriftLimits().noise


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
        self.errors: Mapping[str, float] = {}  # pass 1's statistics error of each op

    # -- the decision ----------------------------------------------------------------------

    def step(self, passes: Sequence[PassFiles]) -> Capture | Verdict:
        if not passes:
            return self.statistics_capture()
        first = detect(self.graph, self.matcher, self.golden, passes[0])
        self.errors = first.errors
        outputs = self.outputs(passes[0])
        tensor_passes = [read_tensor_pass(self.graph, self.matcher, self.golden, p) for p in passes[1:]]
        seen = self.seen(tensor_passes)
        evidence = [*first.evidence.values(), *(o.words() for o in outputs)]
        bad_outputs = [o for o in outputs if o.agreement is Agreement.DISAGREE]
        k = len(passes)

        evidence += [
            f"pass {seen[s].pass_index}: {s} agrees in full tensors (its statistics moved, within thresholds)"
            for s in first.suspects
            if s in seen and seen[s].op.output is Agreement.AGREE
        ]

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
        moved = self.moved_downstream(first, seen)
        if k >= self.limits.max_passes and (fronts or unchecked or moved):
            return self.undecided(fronts, unchecked, moved, evidence, k)
        if fronts[:1] and (walk.op is not None or walk.inconsistent_input is not None):
            return self.search(k + 1, fronts[0], seen, evidence)
        # Nothing disagrees yet: the next suspect of pass 1 that no window has looked at.
        if unchecked:
            why = f"around {unchecked[0]}, where statistics leave the golden"
            return self.window_capture(k + 1, self.window_around(unchecked[0], seen), why)
        if fronts:
            return self.search(k + 1, fronts[0], seen, evidence)
        if moved:
            where = f"downstream of {moved[0]}, whose statistics moved"
            purpose = "to find where the error that starts there crosses the thresholds"
            return self.probe_capture(k + 1, moved[1], where, purpose, earliest=True)
        return Verdict(NO_DIVERGENCE, "", (), tuple(evidence), k)

    def moved_downstream(self, first: Detection, seen: dict[str, _Seen]) -> tuple[str, list[str]] | None:
        """A suspect whose window agreed, and the ops after it (not yet cleared) whose statistics
        moved as far: an error within the thresholds at its start can cross them further on,
        where a full capture's advisor places the divergence."""
        cleared = self.cleared(seen)
        for suspect in first.suspects:
            if suspect not in seen or seen[suspect].op.output is not Agreement.AGREE:
                continue
            level = first.errors.get(suspect, 0.0) * MOVED_AS_FAR
            later = [
                n for n in self.graph.descendants([suspect])
                if n not in cleared and n not in seen and first.errors.get(n, 0.0) >= level
            ]  # fmt: skip
            if later:
                return suspect, sorted(later, key=self.graph.place)
        return None

    def search(
        self, k: int, front: str, seen: dict[str, _Seen], evidence: Sequence[str]
    ) -> Capture | Verdict:
        """The next capture (pass ``k``) from ``front``, the earliest op known to disagree."""
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
        if not region and not need:
            # Its input differs, yet every op upstream of that input agrees: no capture can say
            # more (a Data or Const input of its own, or a copy the rule file does not show).
            assert look is not None
            differ = ", ".join(look.op.words[("input", kk)] for kk in look.op.bad_inputs())
            words = f"pass {look.pass_index}: {front}'s {differ or 'inputs'} differ; every op upstream agrees"
            return Verdict(UNDECIDED, front, self.originals(front), (*evidence, words), k - 1)
        where = (
            f"upstream of {front}, whose input differs"
            if not need
            else f"at and upstream of {front}, which disagrees"
        )
        if len(region) + len(need) <= WINDOW_OPS and self.fits([*region, *need], inputs=True):
            return self.window_capture(k, [*region, *need], where)
        if len(region) <= WINDOW_OPS - len(need):
            return self.window_capture(k, self.nearest(need, region), where)
        return self.probe_capture(k, region, f"upstream of {front}, which disagrees", "to bisect them")

    # -- captures --------------------------------------------------------------------------

    def statistics_capture(self) -> Capture:
        size = sum(self.graph.stats_dump_bytes(n, inputs=False) for n in self.graph.order)
        why = "statistics of every op's outputs, to find where the run leaves the golden"
        return Capture(1, "stats", "output", (), why, size, ALL_STATISTICS)

    def window_capture(self, index: int, window: Sequence[str], why: str) -> Capture:
        ops = self.graph.sorted(window)
        if not ops:  # an empty layer list asks for every op: the full capture the hunt avoids
            raise InternalError(f"the hunt planned an empty window for pass {index}")
        what = f"inputs and outputs of {counted(len(ops), 'op')} {why}"
        return Capture(index, "tensor", "all", ops, what, self.graph.window_bytes(ops))

    def probe_capture(
        self, index: int, region: Sequence[str], where: str, purpose: str, *, earliest: bool = False
    ) -> Capture:
        """Outputs of ops of ``region`` (execution order), as many as the bound allows: spread
        evenly over it (to bisect), or its ``earliest`` ones."""
        count = min(PROBES, len(region))
        while count > 1:
            picks = _spread(region, count) if not earliest else list(region[:count])
            if self.fits(picks, inputs=False):
                break
            count -= 1
        else:
            picks = [region[0] if earliest else region[len(region) // 2]]
        ops = self.graph.sorted(picks)
        size = sum(self.graph.tensor_dump_bytes(n, inputs=False) for n in ops)
        why = f"outputs of {len(ops)} of {counted(len(region), 'op')} {where}, {purpose}"
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
        """Ops known to agree, and the ops upstream of them whose statistics moved no further
        than theirs (or stayed within the run's noise): an error there would show. An upstream
        op that moved further may disagree though a later one agrees (the error absorbed on the
        way), and a full capture's advisor names the earliest that disagrees."""
        good = [n for n, look in seen.items() if look.op.output is Agreement.AGREE]
        blind = [n for n, look in seen.items() if look.op.output is Agreement.UNKNOWN]
        found = {*good, *blind}
        for name in good:
            level = max(self.errors.get(name, 0.0), NOISE)
            found.update(a for a in self.graph.ancestors([name]) if self.errors.get(a, 0.0) <= level)
        return found

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

    def undecided(
        self,
        fronts: Sequence[str],
        unchecked: Sequence[str],
        moved: tuple[str, list[str]] | None,
        evidence: list[str],
        k: int,
    ) -> Verdict:
        """No pass left: the earliest op known to disagree, or a suspect of the statistics not
        yet captured upstream of it (the error starts there or upstream: the suspect is the
        nearer guess), else the suspect whose error may cross the thresholds further on."""
        left = f"(no pass left after {k})"
        if unchecked and fronts and self.graph.place(unchecked[0]) < self.graph.place(fronts[0]):
            name, words = (
                unchecked[0],
                f"statistics leave the golden at {unchecked[0]}, not captured in full; {fronts[0]} further "
                f"on disagrees {left}",
            )
        elif fronts:
            name, words = fronts[0], f"{fronts[0]} disagrees; the error starts there or upstream of it {left}"
        elif unchecked:
            name, words = (
                unchecked[0],
                f"statistics leave the golden at {unchecked[0]}; not captured in full {left}",
            )
        else:
            assert moved is not None
            name = moved[0]
            words = (
                f"{name}'s error may cross the thresholds in {counted(len(moved[1]), 'op')} after it {left}"
            )
        return Verdict(UNDECIDED, name, self.originals(name), (*evidence, words), k)

    def originals(self, name: str) -> tuple[str, ...]:
        return tuple(n for n in self.graph.op(name).original_op_names if n)


def _spread(region: Sequence[str], count: int) -> list[str]:
    """``count`` ops of ``region`` at even steps, neither end included (a bisection's cuts)."""
    return [region[(i + 1) * len(region) // (count + 1)] for i in range(count)]
