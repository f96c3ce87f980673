"""``LiveCompare``: files fed one at a time, in any order, give the result files of ``compare``."""

from __future__ import annotations

import json
import random
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from dumpcmp.commands.sim import simulate
from dumpcmp.errors import DumpcmpError
from dumpcmp.host.core import ComparePlan, FileRows
from dumpcmp.host.live import LiveCompare
from dumpcmp.host.offline import run_compare
from dumpcmp.host.request import CompareRequest
from dumpcmp.host.sinks.table import TableShape
from dumpcmp.host.workers import OnFiles, Work, compare_files
from dumpcmp.proto.walker import DumpEntry
from tests.atc_ops import document, op
from tests.e2e.atc_fit import FitCase, make_fit


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def _results(out: Path) -> dict[str, bytes]:
    """Result files by name with the timestamp taken out (two runs need not share a second)."""
    return {re.sub(r"\d{14}", "TS", p.name): p.read_bytes() for p in sorted(out.iterdir())}


def _live(dump: Path, golden: Path, rule: Path | None, out: Path, order: list[Path]) -> LiveCompare:
    live = LiveCompare.open(dump_root=dump, golden=golden, fusion_rule=rule, out_dir=out)
    for path in order:
        live.add(path)
    return live


@pytest.fixture(scope="module")
def sim_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("sim")
    simulate("zoo:small_cnn", root, steps=2, faults=("/block1.pw/conv/Conv=bias",))
    return root / "npu", root / "golden", root / "fusion_rule.json"


@pytest.mark.parametrize("seed", [0, 1])
def test_any_arrival_order_gives_the_offline_result_files(
    sim_run: tuple[Path, Path, Path], tmp_path: Path, seed: int
) -> None:
    dump, golden, rule = sim_run
    offline = tmp_path / "offline"
    run_compare(CompareRequest(dump, golden, fusion_rule=rule, out_dir=offline))
    order = _files(dump)
    random.Random(seed).shuffle(order)
    outcome = _live(dump, golden, rule, tmp_path / "live", order).close()
    assert len(outcome.shards) == 2
    assert _results(tmp_path / "live") == _results(offline)


def test_a_file_added_twice_is_not_counted_twice(sim_run: tuple[Path, Path, Path], tmp_path: Path) -> None:
    dump, golden, rule = sim_run
    run_compare(CompareRequest(dump, golden, fusion_rule=rule, out_dir=tmp_path / "offline"))
    files = _files(dump)
    _live(dump, golden, rule, tmp_path / "live", files + files[:5]).close()
    assert _results(tmp_path / "live") == _results(tmp_path / "offline")


def test_rows_come_back_as_each_file_lands(sim_run: tuple[Path, Path, Path], tmp_path: Path) -> None:
    dump, golden, rule = sim_run
    live = LiveCompare.open(dump_root=dump, golden=golden, fusion_rule=rule, out_dir=tmp_path)
    last = _files(dump)[-1]
    rows = live.add(last)
    assert rows and all(r.index == 0 for r in rows)  # alone in its shard so far
    table = TableShape.every_column()  # as WatchRows sends a row before the table's shape is known
    columns, cells = table.header(), table.cells(rows[0])
    assert len(columns) == len(cells) and "OpSequence" in columns and "OverFlow" in columns
    first = live.add(_files(dump)[0])
    assert first and first[0].index == 0


def test_corrupt_and_foreign_files_are_handled_as_offline(
    sim_run: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    dump, golden, rule = sim_run
    copy = tmp_path / "npu"
    shutil.copytree(dump, copy)
    victim = _files(copy)[3]
    victim.write_bytes(victim.read_bytes()[:40])
    (victim.parent / "notes.odd").write_text("not a dump")
    offline = run_compare(CompareRequest(copy, golden, fusion_rule=rule, out_dir=tmp_path / "offline"))
    live = _live(copy, golden, rule, tmp_path / "live", list(reversed(_files(copy))))
    outcome = live.close()
    assert _results(tmp_path / "live") == _results(tmp_path / "offline")
    assert [s[1] for s in outcome.skipped] == [s[1] for s in offline.skipped]


def _l1_case(tmp_path: Path, *chain: tuple[str, str, str, str]) -> tuple[Path, FitCase]:
    """A rule file whose ``chain`` of ops (name, type, input, original) is L1 fusion group 7,
    a dump and golden data made to fit it, and offline compare's result files in ``offline``."""
    rule = tmp_path / "l1.json"
    ops = [op("x", 0, "Data")]
    for i, (name, kind, source, original) in enumerate(chain, start=1):
        ops.append(
            op(name, i, kind, (source,), (original,), (original,), l1="7",
               layout="ND", shape=(2, 8), origin_format="ND", origin_shape=(2, 8))
        )  # fmt: skip
    rule.write_text(json.dumps(document(*ops)))
    case = make_fit(rule, tmp_path / "case")
    run_compare(CompareRequest(case.npu_dir, case.golden_dir, fusion_rule=rule, out_dir=tmp_path / "offline"))
    return rule, case


def test_l1_fusion_members_are_settled_when_the_session_closes(tmp_path: Path) -> None:
    # Only with every dump time known is l1_c the last op of the group; before it lands, l1_b is.
    rule, case = _l1_case(
        tmp_path,
        ("l1_a", "Conv2D", "x:0", "conv"),
        ("l1_b", "Relu", "l1_a:0", "relu"),
        ("l1_c", "Add", "l1_b:0", "add"),
    )
    live = LiveCompare.open(
        dump_root=case.npu_dir, golden=case.golden_dir, fusion_rule=rule, out_dir=tmp_path / "live"
    )
    files = _files(case.npu_dir)
    early = [r for f in files if "l1_b" in f.name for r in live.add(f)]
    assert early  # compared as the group's last op for now
    for path in files:
        if "l1_b" not in path.name:
            live.add(path)
    live.close()
    assert _results(tmp_path / "live") == _results(tmp_path / "offline")


class Recording:
    """A runner comparing here, keeping what each call was given."""

    def __init__(self) -> None:
        self.calls: list[list[tuple[DumpEntry, ComparePlan]]] = []

    def __call__(self, work: Work, workers: int, on_files: OnFiles = None) -> Iterator[FileRows]:
        self.calls.append(
            [(entry, work.plans[n]) for entry, n in zip(work.entries, work.plan_of, strict=True)]
        )
        return compare_files(work, workers, on_files)


def test_files_added_together_are_one_runner_call_with_one_plan_per_shard(
    sim_run: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    dump, golden, rule = sim_run
    run_compare(CompareRequest(dump, golden, fusion_rule=rule, out_dir=tmp_path / "offline"))
    order = _files(dump)
    random.Random(2).shuffle(order)
    runner = Recording()
    live = LiveCompare.open(
        dump_root=dump, golden=golden, fusion_rule=rule, out_dir=tmp_path / "live", runner=runner
    )
    added = live.add_many(order)
    (work,) = runner.calls
    assert [entry.path for entry, _ in work] == order
    assert len({id(plan) for _, plan in work}) == 2  # one per step's shard
    one_by_one = _live(dump, golden, rule, tmp_path / "single", [])
    assert added.rows == {path: one_by_one.add(path) for path in order}  # rows and Index as add gives
    assert not added.problems
    live.close()
    assert _results(tmp_path / "live") == _results(tmp_path / "offline")


def test_a_file_without_a_plan_is_a_problem_and_the_rest_are_compared(
    sim_run: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    dump, golden, rule = sim_run
    copy = tmp_path / "npu"
    shutil.copytree(dump, copy)
    (model,) = {p.parent for p in copy.glob("*/*/small_cnn")}
    shutil.copytree(model / "small_cnn", model / "ghost")  # a model no rule file names
    rules = tmp_path / "rules"
    rules.mkdir()
    shutil.copy(rule, rules / "small_cnn.json")
    live = LiveCompare.open(dump_root=copy, golden=golden, fusion_rule=rules, out_dir=tmp_path / "out")
    files = _files(copy)
    added = live.add_many(files)
    ghosts = [p for p in files if "ghost" in p.parts]
    assert ghosts and sorted(added.problems) == ghosts
    assert all(
        "no rule file in the -fr directory matches model 'ghost'" in str(e) for e in added.problems.values()
    )
    assert sorted(added.rows) == [p for p in files if "ghost" not in p.parts]
    assert all(added.rows.values())
    with pytest.raises(DumpcmpError, match="matches model 'ghost'"):
        live.add(ghosts[0])


def test_l1_members_are_compared_again_in_one_runner_call_at_close(tmp_path: Path) -> None:
    rule, case = _l1_case(tmp_path, ("l1_a", "Conv2D", "x:0", "conv"), ("l1_b", "Relu", "l1_a:0", "relu"))
    runner = Recording()
    live = LiveCompare.open(
        dump_root=case.npu_dir,
        golden=case.golden_dir,
        fusion_rule=rule,
        out_dir=tmp_path / "live",
        runner=runner,
    )
    files = _files(case.npu_dir)
    live.add_many(files)
    live.close()
    assert len(runner.calls) == 2
    assert sorted(entry.name.op_name for entry, _ in runner.calls[1]) == ["l1_a", "l1_b"]
    assert _results(tmp_path / "live") == _results(tmp_path / "offline")


def test_closing_with_nothing_received_is_an_error(sim_run: tuple[Path, Path, Path], tmp_path: Path) -> None:
    dump, golden, rule = sim_run
    live = LiveCompare.open(dump_root=dump, golden=golden, fusion_rule=rule, out_dir=tmp_path / "out")
    with pytest.raises(DumpcmpError, match="no dump files received"):
        live.close()
    assert not (tmp_path / "out").exists()


def test_bad_rule_file_fails_at_open(sim_run: tuple[Path, Path, Path], tmp_path: Path) -> None:
    dump, golden, _ = sim_run
    bad = tmp_path / "rule.json"
    bad.write_text("{not json")
    with pytest.raises(DumpcmpError):
        LiveCompare.open(dump_root=dump, golden=golden, fusion_rule=bad, out_dir=tmp_path / "out")


def _long_name_mapped(dump: Path, copy: Path) -> tuple[Path, Path, str]:
    """``dump`` copied with one file renamed to a numeric name that ``mapping.csv`` maps back
    (formats.md §2.3); (that file, the mapping file, its text)."""
    shutil.copytree(dump, copy)
    victim = _files(copy)[5]
    numeric = victim.with_name("1234567890123")
    victim.rename(numeric)
    mapping = numeric.parent / "mapping.csv"
    return numeric, mapping, f"{numeric.name},{victim.name}\n"


@pytest.mark.parametrize("mapping_first", [True, False])
def test_long_names_mapped_by_mapping_csv_are_compared_as_offline(
    sim_run: tuple[Path, Path, Path], tmp_path: Path, mapping_first: bool
) -> None:
    dump, golden, rule = sim_run
    copy = tmp_path / "npu"
    numeric, mapping, text = _long_name_mapped(dump, copy)
    live = LiveCompare.open(dump_root=copy, golden=golden, fusion_rule=rule, out_dir=tmp_path / "live")
    others = [p for p in _files(copy) if p != numeric]
    live.add_many(others[:3])
    if mapping_first:  # the file lands once the mapping has, as a host stores them
        mapping.write_text(text)
        assert not live.add_many([mapping]).rows  # the mapping file itself has no rows
        assert live.add_many([numeric]).rows[numeric]
    else:
        assert not live.add_many([numeric]).rows  # not a dump file name, until the mapping lands
        mapping.write_text(text)
        assert live.add_many([mapping]).rows[numeric]  # it brings back the file it names
    live.add_many(others[3:])
    outcome = live.close()
    offline = run_compare(CompareRequest(copy, golden, fusion_rule=rule, out_dir=tmp_path / "offline"))
    assert not offline.skipped and not outcome.skipped
    assert _results(tmp_path / "live") == _results(tmp_path / "offline")
