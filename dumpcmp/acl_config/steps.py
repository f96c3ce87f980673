"""``dump_step``: which iterations are dumped (formats.md §3.2 rule 7).

The value is a string of at most 100 ``|``-separated items, each a step ``a`` or an inclusive
range ``a-b`` with ``a <= b``, digits only: ``"0|5|10-20"``.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from dumpcmp.errors import ConfigError

from .issues import ConfigIssue, format_issues

__all__ = ["MAX_STEP_ITEMS", "StepSet", "parse_steps", "step_problems"]

MAX_STEP_ITEMS = 100
STEP_PATH = "dump.dump_step"
STEP_RULE = "7"

# [0-9], not \d: \d also accepts other scripts' digits, which CANN's parser does not.
_ITEM = re.compile(r"([0-9]+)(?:-([0-9]+))?")


def step_problems(text: str) -> list[str]:
    """Why ``text`` is not a valid dump_step, one sentence per problem; empty when valid."""
    items = text.split("|")
    problems = []
    if len(items) > MAX_STEP_ITEMS:
        problems.append(f"has {len(items)} items, at most {MAX_STEP_ITEMS} are allowed")
    for number, item in enumerate(items, start=1):
        problem = _item_problem(item)
        if problem:
            problems.append(f"item {number} {item!r} {problem}")
    return problems


def _item_problem(item: str) -> str:
    match = _ITEM.fullmatch(item)
    if match is None:
        return "is not a step 'N' or a range 'A-B' (digits only)"
    first, last = match.group(1), match.group(2)
    if last is not None and int(first) > int(last):
        return "is a range whose start is after its end"
    return ""


@dataclass(frozen=True, slots=True)
class StepSet:
    """A set of step numbers, tested with ``step in steps``.

    ``ranges`` are inclusive, sorted and merged; ``every`` means "no dump_step given", which
    CANN reads as every step.
    """

    ranges: tuple[tuple[int, int], ...] = ()
    every: bool = False

    @classmethod
    def all_steps(cls) -> StepSet:
        return cls(every=True)

    @classmethod
    def from_ranges(cls, ranges: list[tuple[int, int]]) -> StepSet:
        return cls(ranges=_merge(ranges))

    def __contains__(self, step: object) -> bool:
        # bool is an int subclass; True is no step number.
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            return False
        if self.every:
            return True
        index = bisect.bisect_right(self.ranges, step, key=lambda r: r[0]) - 1
        return index >= 0 and self.ranges[index][0] <= step <= self.ranges[index][1]

    def __str__(self) -> str:
        """The canonical dump_step string ("" for every step)."""
        return "|".join(str(a) if a == b else f"{a}-{b}" for a, b in self.ranges)

    def describe(self) -> str:
        return "every step" if self.every else f"steps {self}"


def _merge(ranges: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    merged: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        # Adjacent ranges merge too, so 1|2|3 and 1-3 give equal sets.
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return tuple(merged)


def parse_steps(text: str) -> StepSet:
    """Parse a dump_step string; raise ConfigError (rule 7) listing every bad item."""
    problems = step_problems(text)
    if problems:
        issues = [ConfigIssue(STEP_PATH, STEP_RULE, problem) for problem in problems]
        raise ConfigError(format_issues(f"dump_step {text!r}", issues), issues)
    ranges = []
    for item in text.split("|"):
        first, _, last = item.partition("-")
        ranges.append((int(first), int(last or first)))
    return StepSet.from_ranges(ranges)
