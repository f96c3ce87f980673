"""Records that cross processes in bulk pickle as their values and come back equal."""

from __future__ import annotations

import pickle
from dataclasses import FrozenInstanceError, dataclass, field, replace
from pathlib import Path

import pytest

from dumpcmp.errors import InternalError
from dumpcmp.host.request import CompareRequest
from dumpcmp.host.rule_set import RuleSet
from dumpcmp.proto.names import parse_dump_name, parse_golden_name
from dumpcmp.proto.records import pickled_as_values, set_through_slots
from dumpcmp.proto.walker import DumpEntry, GroupKey


@pickled_as_values
@dataclass(frozen=True, slots=True)
class _One:
    name: str


@pickled_as_values
@set_through_slots
@dataclass(frozen=True, slots=True)
class _Several:
    name: str
    shape: tuple[int, ...] = ()
    inner: _One | None = None


def test_records_of_one_or_several_fields_come_back_equal() -> None:
    for record in (_One("a"), _Several("b", (1, 2), _One("c")), _Several("d")):
        assert pickle.loads(pickle.dumps(record)) == record


def test_a_record_with_a_field_init_does_not_take_is_refused() -> None:
    with pytest.raises(InternalError, match="__init__ does not take"):

        @pickled_as_values
        @dataclass(frozen=True, slots=True)
        class _Derived:
            name: str
            size: int = field(init=False, default=0)


def test_a_real_rule_file_s_matchers_come_back_equal(shared_fixtures: Path) -> None:
    rule_file = shared_fixtures / "atc" / "tdnn.om.json"
    rules = RuleSet.load(CompareRequest(Path("."), Path("."), fusion_rule=rule_file))
    again = pickle.loads(pickle.dumps(rules, pickle.HIGHEST_PROTOCOL))
    assert again.default is not None and rules.default is not None
    assert again.default.rules == rules.default.rules
    assert again.default.groups == rules.default.groups


def test_dump_entries_and_golden_names_come_back_equal() -> None:
    # A Dask run ships its golden index (a GoldenName per npy file, an entry per op of a golden
    # dump tree) to the workers once: these records travel in bulk.
    file_name = "Conv2D.conv1.3.1.1700000000000000.2.0.0.0"  # FFTS+ fields too
    name = parse_dump_name(file_name)
    entry = DumpEntry(Path("/d") / file_name, name, GroupKey("0", "m", "1", "0"))
    golden = parse_golden_name("conv1.0.1700000000000000.npy")
    for record in (name, entry, golden, replace(entry, is_stats=True)):
        assert pickle.loads(pickle.dumps(record, pickle.HIGHEST_PROTOCOL)) == record


def test_a_record_set_through_its_slots_takes_the_same_arguments_and_stays_frozen() -> None:
    assert _Several("a") == _Several(name="a", shape=(), inner=None)
    assert _Several("b", (1,), inner=_One("c")).inner == _One("c")
    assert replace(_Several("d"), shape=(2,)) == _Several("d", (2,))
    assert pickle.loads(pickle.dumps(_Several("e", (3,)))) == _Several("e", (3,))
    with pytest.raises(FrozenInstanceError):
        _Several("f").name = "g"  # type: ignore[misc]
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'name'"):
        _Several()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="takes from 2 to 4 positional arguments"):
        _Several("h", (), None, 1)  # type: ignore[call-arg]


def test_a_record_with_a_default_factory_is_not_set_through_its_slots() -> None:
    with pytest.raises(InternalError, match="no plain field with a slot"):

        @set_through_slots
        @dataclass(frozen=True, slots=True)
        class _Made:
            names: list[str] = field(default_factory=list)
