"""A run of many shards (steps, devices, ranks, tokens) seen as one: which shards diverge, where first.

A compare of a tree with several (device, model, step) shards, or a TorchAir run of several
(rank, token) shards, writes one result table per shard (``0_net_3_result_{ts}.csv``,
``rank0_token1_compare_result_{ts}.csv``); users and msprobe tooling read those as they are. The
advisor and the HTML report look across them instead of repeating themselves once per shard:
the shards of one run are grouped by their file names (``run_groups``), each shard is advised on
its own (``advisor.advise``), and ``RunAdvice`` says each finding once, with the shards it holds
in and the shard whose figures it shows. A run of sixty steps with the same fault in every step
is one ``first divergence`` line, not sixty. A shard whose dump held tensors and statistics has
two results (``…result_{ts}`` and ``…stats_result_{ts}``): one shard, advised as one walk.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from dumpcmp.host.report.advisor import (
    FIRST_DIVERGENCE,
    FP16_OVERFLOW,
    INPUT_INCONSISTENCY,
    NAN_APPEARED,
    SUSPECTS_SHOWN,
    Advice,
    Finding,
    Suspect,
    advise,
)
from dumpcmp.host.report.grading import GradeThresholds
from dumpcmp.host.report.graph import OpGraph
from dumpcmp.host.report.table import ResultTable

__all__ = [
    "AdvisedRun",
    "RunAdvice",
    "RunFinding",
    "RunSuspect",
    "ShardAdvice",
    "ShardName",
    "advise_run",
    "run_groups",
    "shard_labels",
]

T = TypeVar("T")

# {shard}_{kind}_{stamp}[_{copy}]: the shard part is what the writers put in front of a run's own
# result name (``result_name`` of each family); a single-shard run has none. A shard's statistics
# result is its tensor result's name with ``stats_`` before the kind (none is tried first: a
# single-shard run's ``stats_result_{ts}`` is no shard named "stats").
_SHARDED = re.compile(
    r"^(?:(?P<shard>.+?)_)??(?P<statistics>stats_)?(?P<run>(?:compare_)?result_\d{14}(?:_\d+)?)$"
)
# offline_data: {device}_{model}_{step}, with the dump time directory in front (the run) when two
# runs into one dump path hold the same ones. A device is a number, as the walker reads it: a
# 14-digit device (a tree without its device level, whose time directory stands there) is no run
# in front of a model name split at its underscores.
_OFFLINE_SHARD = re.compile(r"^(?:(?P<run>\d{14})_)?(?P<device>\d+)_(?P<model>.+)_(?P<step>[^_]+)$")
_TORCHAIR_SHARD = re.compile(r"^rank(?P<rank>\d+)_token(?P<token>\d+)$")
# Kinds that say the shard's numbers go wrong somewhere (the others: consistent, nothing compared)
_DIVERGING = (FP16_OVERFLOW, NAN_APPEARED, INPUT_INCONSISTENCY, FIRST_DIVERGENCE)
LABELS_SHOWN = 6  # shards named in a span of unrelated labels; the rest are counted


@dataclass(frozen=True, slots=True)
class ShardName:
    """A result file's stem split into the run it belongs to and its shard within the run."""

    run: str  # "result_{ts}", "compare_result_{ts}_1": the name a single-shard run would have
    shard: str  # "0_net_3", "rank0_token1"; "" for a single-shard result or another name
    statistics: bool = False  # the shard's statistics result (``stats_result_{ts}``), not its tensor result

    @classmethod
    def of(cls, stem: str) -> ShardName:
        found = _SHARDED.match(stem)
        if found is None:
            return cls(stem, "")
        return cls(found["run"], found["shard"] or "", bool(found["statistics"]))

    @property
    def result(self) -> str:
        """The run's name as the result file has it: ``stats_result_{ts}`` for a statistics result."""
        return f"stats_{self.run}" if self.statistics else self.run


def run_groups(items: Sequence[T], stem: Callable[[T], str], where: Callable[[T], Hashable]) -> list[list[T]]:
    """``items`` (result files, tables) grouped into runs: the same run name in the same place
    (a shard's statistics result in its tensor result's run). Runs in the order of their first
    item; each run's items in the order given."""
    runs: dict[tuple[Hashable, str], list[T]] = {}
    for item in items:
        runs.setdefault((where(item), ShardName.of(stem(item)).run), []).append(item)
    return list(runs.values())


def shard_labels(shards: Sequence[str]) -> list[str]:
    """Each shard named by the fields that tell it from the run's others ("step 3", "rank 0
    token 1"); a shard name of another form is kept as it is."""
    fields = [_fields(s) for s in shards]
    if any(f is None for f in fields):
        return [s or "(whole run)" for s in shards]
    known = [f for f in fields if f is not None]
    varying = [name for name in known[0] if len({f[name] for f in known}) > 1] if known else []
    return [
        " ".join(f"{name} {f[name]}" for name in varying if f[name]) or s
        for f, s in zip(known, shards, strict=True)
    ]


def _fields(shard: str) -> dict[str, str] | None:
    """The shard's fields; "" for one its name leaves out (the run of a shard named without it)."""
    found = _TORCHAIR_SHARD.match(shard) or _OFFLINE_SHARD.match(shard)
    return {k: v or "" for k, v in found.groupdict().items()} if found is not None else None


def span(labels: Sequence[str]) -> str:
    """Shards in few words: "steps 0-4, 7" when one numbered field tells them apart, else the
    first few labels and how many more."""
    parts = [label.rpartition(" ") for label in labels]
    names = {name for name, _, _ in parts}
    if len(labels) > 1 and len(names) == 1 and "" not in names and all(v.isdigit() for _, _, v in parts):
        (name,) = names
        return f"{name}s {_ranges(sorted(int(v) for _, _, v in parts))}"
    shown = ", ".join(labels[:LABELS_SHOWN])
    more = len(labels) - LABELS_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def _ranges(numbers: Sequence[int]) -> str:
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)


@dataclass(frozen=True, slots=True)
class AdvisedRun:
    """A run's result tables as the advisor read them, with its advice: the reports of the same
    compare take them instead of reading and advising every shard again."""

    paths: tuple[Path, ...]
    tables: tuple[ResultTable, ...]
    advice: Advice | RunAdvice


@dataclass(frozen=True, slots=True)
class ShardAdvice:
    """One shard's own advice, with the label the run's lines name it by."""

    label: str
    source: str  # its result file
    advice: Advice
    # Its tables among the run's (positions in the order advised): one, or its tensor result
    # and its statistics result (a dump of both kinds, advised as one: ``advise_run``).
    tables: tuple[int, ...]

    @property
    def diverges(self) -> bool:
        return self.advice.disagreeing > 0 or any(f.kind in _DIVERGING for f in self.advice.findings)

    def first_fault(self) -> Finding | None:
        """Its first finding that places a fault (overflow, NaN, inconsistency, divergence)."""
        return next((f for f in self.advice.findings if f.kind in _DIVERGING), None)

    def fault_place(self) -> str:
        """Its first fault in a few words ("first divergence at op #12 Add"); "" when none."""
        fault = self.first_fault()
        if fault is None:
            return ""
        if fault.order is None:  # an op without a dump (``advisor``) has a name and no place
            return fault.kind + (f" at {fault.op_name}" if fault.op_name else "")
        return f"{fault.kind} at op #{fault.order} {fault.op_name}"


@dataclass(frozen=True, slots=True)
class RunFinding:
    """A finding that holds in ``shards`` (indices into the run's shards), worded as the first
    of them has it."""

    finding: Finding
    shards: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class RunSuspect:
    """An op that amplifies error in ``shards``, with the shard where it amplifies most."""

    suspect: Suspect
    shards: tuple[int, ...]
    shown: int  # the shard whose figures ``suspect`` holds


@dataclass(frozen=True, slots=True)
class RunAdvice:
    """The advice of a run's shards as one: each finding once, with the shards it holds in."""

    run: str  # the run's name ("result_{ts}")
    shards: tuple[ShardAdvice, ...]
    findings: tuple[RunFinding, ...]
    suspects: tuple[RunSuspect, ...]

    @classmethod
    def of(cls, run: str, shards: Sequence[ShardAdvice]) -> RunAdvice:
        findings: dict[tuple[object, ...], list[int]] = {}
        first: dict[tuple[object, ...], Finding] = {}
        suspects: dict[tuple[int, str], list[int]] = {}
        worst: dict[tuple[int, str], tuple[Suspect, int]] = {}
        for k, shard in enumerate(shards):
            for finding in shard.advice.findings:
                # The same fault at the same op is one finding, whatever its figures in each shard.
                # A finding of the whole shard is its figures ("all 86 compared tensors agree"):
                # a shard that compared fewer is not folded into another's words.
                whole = finding.order is None and not finding.op_name
                key = (finding.kind, finding.order, finding.op_name, finding.detail if whole else "")
                findings.setdefault(key, []).append(k)
                first.setdefault(key, finding)
            for suspect in shard.advice.suspects:
                op = (suspect.order, suspect.op_name)
                suspects.setdefault(op, []).append(k)
                if op not in worst or suspect.amplification > worst[op][0].amplification:
                    worst[op] = (suspect, k)
        ranked = sorted(worst, key=lambda op: (-worst[op][0].amplification, op[0]))
        return cls(
            run,
            tuple(shards),
            tuple(RunFinding(first[key], tuple(ks)) for key, ks in findings.items()),
            tuple(RunSuspect(worst[op][0], tuple(suspects[op]), worst[op][1]) for op in ranked),
        )

    @property
    def diverging(self) -> tuple[int, ...]:
        return tuple(k for k, s in enumerate(self.shards) if s.diverges)

    @property
    def compared(self) -> int:
        return sum(s.advice.compared for s in self.shards)

    @property
    def disagreeing(self) -> int:
        return sum(s.advice.disagreeing for s in self.shards)

    def head(self) -> str:
        """Which shards there are, which diverge, and the first of them with where it goes wrong."""
        labels = [s.label for s in self.shards]
        line = f"shards: {len(labels)} ({span(labels)}), diverging: "
        bad = self.diverging
        if not bad:
            return line + "none"
        line += f"{len(bad)} ({span([labels[k] for k in bad])})"
        where = self.shards[bad[0]].fault_place()
        return f"{line}; the first: {labels[bad[0]]}" + (f", {where}" if where else "")

    def _scope(self, shards: Sequence[int], shown: int, as_in: str = "as in") -> str:
        total = len(self.shards)
        labels = [self.shards[k].label for k in shards]
        where = (
            f"in all {total} shards"
            if len(shards) == total
            else f"in {len(shards)} of {total}: {span(labels)}"
        )
        return (
            f" [{where}; {as_in} {self.shards[shown].label}]"
            if len(shards) > 1
            else f" [only in {labels[0]}]"
        )

    def lines(self) -> list[str]:
        """The head line, each finding once with its shards, then the top suspects; a run of
        one shard (its tensor and statistics results) as that shard's advice."""
        if len(self.shards) == 1:
            return self.shards[0].advice.lines()
        lines = [self.head()]
        lines += [f.finding.line() + self._scope(f.shards, f.shards[0]) for f in self.findings]
        lines += [
            s.suspect.line() + self._scope(s.shards, s.shown, "largest in")
            for s in self.suspects[:SUSPECTS_SHOWN]
        ]
        more = len(self.suspects) - SUSPECTS_SHOWN
        if more > 0:
            lines.append(f"suspects: {more} more, with smaller amplification (all in the advisor JSON)")
        return lines

    def to_json(self) -> dict[str, Any]:
        if len(self.shards) == 1:
            return self.shards[0].advice.to_json()
        labels = [s.label for s in self.shards]
        shards = [s.advice.to_json() for s in self.shards]
        # The shards of one run are judged by the same thresholds.
        thresholds = next((own["thresholds"] for own in shards if "thresholds" in own), None)
        return {
            "source": self.run,
            "family": self.shards[0].advice.family if self.shards else "",
            "compared": self.compared,
            "disagreeing": self.disagreeing,
            **({"thresholds": thresholds} if thresholds is not None else {}),
            "diverging": [labels[k] for k in self.diverging],
            "findings": [
                {**f.finding.to_json(), "shards": [labels[k] for k in f.shards]} for f in self.findings
            ],
            "suspects": [
                {**s.suspect.to_json(), "shards": [labels[k] for k in s.shards], "shown": labels[s.shown]}
                for s in self.suspects
            ],
            # Every shard's own advice, as ``advise`` of its result alone gives it.
            "shards": [
                {"label": s.label, "diverging": s.diverges, **own, "source": s.source}
                for s, own in zip(self.shards, shards, strict=True)
            ],
        }


def advise_run(
    tables: Sequence[ResultTable],
    stems: Sequence[str],
    thresholds: GradeThresholds | None = None,
    graph: OpGraph | None = None,
) -> RunAdvice:
    """The advice of one run's shards (``tables``, from the result files named ``stems``), as one;
    ``graph``: their network's fusion rule, where known (``advisor.advise``). A shard whose dump
    holds tensors and statistics has two results, advised as one walk of its ops (its tensor
    rows, and its statistics rows for the ops without a tensor dump), not as two shards."""
    names = [ShardName.of(stem) for stem in stems]
    members: dict[str, list[int]] = {}
    for k, name in enumerate(names):
        members.setdefault(name.shard, []).append(k)
    labels = shard_labels(list(members))
    shards = []
    for label, own in zip(labels, members.values(), strict=True):
        tensors = [k for k in own if not names[k].statistics]
        statistics = [k for k in own if names[k].statistics]
        first = (tensors or statistics)[0]
        both = tables[statistics[0]] if tensors and statistics else None
        advice = advise(tables[first], thresholds, graph, both)
        shards.append(ShardAdvice(label, tables[first].source or stems[first], advice, tuple(own)))
    run = next((n.run for n in names if not n.statistics), names[0].result if names else "")
    return RunAdvice.of(run, shards)
