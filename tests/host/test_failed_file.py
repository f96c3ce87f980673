"""``core.failed_file``: a file whose comparison never finished still gets its one row, with why."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from dumpcmp.host.core import ComparePlan, compare_file, failed_file
from dumpcmp.host.golden import NpyGoldenDir
from dumpcmp.host.pipeline import CompareOptions
from dumpcmp.proto.walker import DumpEntry, walk_dump_tree

STAMP = 1763700000000000


def _entries(root: Path) -> dict[bool, DumpEntry]:
    run = root / "npu" / "20261122000000" / "0" / "net" / "1" / "0"
    run.mkdir(parents=True)
    (run / f"Add.layer0_Add.1.1.{STAMP}").write_bytes(b"not a dump")
    (run / f"Mul.layer1_Mul.2.1.{STAMP + 1}.csv").write_text("not stats")
    return {entry.is_stats: entry for entry in walk_dump_tree(root / "npu").entries}


def test_a_failed_file_is_one_row_with_the_reason_like_an_unreadable_one(tmp_path: Path) -> None:
    (tmp_path / "golden").mkdir()
    plan = ComparePlan(NpyGoldenDir(tmp_path / "golden"), None, CompareOptions())
    entries = _entries(tmp_path)
    assert set(entries) == {True, False}  # a tensor dump and a statistics dump
    for is_stats, entry in entries.items():
        failed = failed_file(entry, plan, "crashed every worker")
        unreadable = compare_file(entry, plan)
        if is_stats:
            (result,) = failed.stats
            (bad_stats,) = unreadable.stats
            assert result == replace(bad_stats, reasons=("crashed every worker",))
        else:
            (row,) = failed.rows
            (bad,) = unreadable.rows
            assert row.reasons == ("crashed every worker",)
            assert row == replace(bad, metrics=row.metrics)  # only the reason differs
            assert not row.dump_readable  # named with the unreadable files in the summary
