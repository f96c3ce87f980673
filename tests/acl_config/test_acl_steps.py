"""dump_step parsing: the step predicate the simulated NPU asks "dump this iteration?"."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dumpcmp.acl_config import MAX_STEP_ITEMS, ConfigIssue, StepSet, parse_steps
from dumpcmp.errors import ConfigError


def issue_pairs(error: ConfigError) -> list[tuple[str, str]]:
    """(path, rule) of a ConfigError's issues; ConfigError types them loosely, as objects."""
    assert all(isinstance(i, ConfigIssue) for i in error.issues)
    return [(i.path, i.rule) for i in error.issues if isinstance(i, ConfigIssue)]


def test_steps_and_ranges() -> None:
    steps = parse_steps("0|5|10-20")
    assert [s for s in range(30) if s in steps] == [0, 5, *range(10, 21)]
    assert str(steps) == "0|5|10-20"


def test_overlapping_and_adjacent_items_merge() -> None:
    steps = parse_steps("10-20|3|15-25|4|2")
    assert steps.ranges == ((2, 4), (10, 25))
    assert str(steps) == "2-4|10-25"
    assert parse_steps("1|2|3") == parse_steps("1-3")


def test_huge_steps_do_not_materialise() -> None:
    # msprobe parks a dump on step INT_MAX; that must cost nothing.
    steps = parse_steps("0-2147483647")
    assert 2147483647 in steps and 2147483648 not in steps


@pytest.mark.parametrize("value", [-1, True, 1.0, "1", None])
def test_only_non_negative_ints_are_members(value: object) -> None:
    assert value not in parse_steps("0-5")
    assert value not in StepSet.all_steps()


def test_every_step() -> None:
    every = StepSet.all_steps()
    assert 0 in every and 10**12 in every
    assert every.describe() == "every step"
    assert parse_steps("7").describe() == "steps 7"


@pytest.mark.parametrize("text", ["", "a", "1-", "3-1", "1|", "1 ", "+1", "0x10", "1-2-3"])
def test_malformed_steps_raise_config_error(text: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_steps(text)
    assert issue_pairs(caught.value) == [("dump.dump_step", "7")]


def test_too_many_items() -> None:
    assert parse_steps("|".join(["1"] * MAX_STEP_ITEMS)) == parse_steps("1")
    with pytest.raises(ConfigError, match="at most 100"):
        parse_steps("|".join(["1"] * (MAX_STEP_ITEMS + 1)))


def test_every_bad_item_is_named() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_steps("1|x|9-2")
    messages = [i.message for i in caught.value.issues if isinstance(i, ConfigIssue)]
    assert len(messages) == 2
    assert messages[0].startswith("item 2 'x'") and messages[1].startswith("item 3 '9-2'")


_ranges = st.lists(st.tuples(st.integers(0, 500), st.integers(0, 50)), min_size=1, max_size=MAX_STEP_ITEMS)


@given(_ranges, st.integers(-5, 600))
def test_membership_matches_a_plain_set(pairs: list[tuple[int, int]], probe: int) -> None:
    text = "|".join(f"{a}-{a + n}" if n else str(a) for a, n in pairs)
    expected = {s for a, n in pairs for s in range(a, a + n + 1)}
    steps = parse_steps(text)
    assert (probe in steps) == (probe in expected)
    assert parse_steps(str(steps)) == steps
