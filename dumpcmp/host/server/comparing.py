"""The one place the server calls the comparison: a session's live comparison and row cells.

The session layer (``dumpcmp/host/session.py``: ``LiveCompare``, ``row_cells``) is being split
out of the offline comparator. Until it lands, this stand-in has the same interface and runs
the offline comparison over the session's dump directory when the session closes, so that the
server, its store and its result files are exercised end to end on real comparisons; rows
then appear at close rather than as each file lands.
"""

from __future__ import annotations

from pathlib import Path

from dumpcmp.host.offline import CompareOutcome, CompareRequest, run_compare
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.sinks.table import TableShape

__all__ = ["CompareOutcome", "LiveCompare", "ResultRow", "row_cells"]

_FULL_TABLE = TableShape(op_sequence=True, npu_address=True, golden_address=True, overflow=True)


class LiveCompare:
    def __init__(
        self, dump_root: Path, golden: Path, fusion_rule: Path | None, out_dir: Path, overflow_detection: bool
    ) -> None:
        self._request = CompareRequest(
            target=dump_root,
            golden=golden,
            fusion_rule=fusion_rule,
            out_dir=out_dir,
            overflow_detection=overflow_detection,
            jobs=1,  # no forked pool inside the server process
        )

    @classmethod
    def open(
        cls, *, dump_root: Path, golden: Path, fusion_rule: Path | None, out_dir: Path,
        overflow_detection: bool = False,
    ) -> LiveCompare:  # fmt: skip
        return cls(dump_root, golden, fusion_rule, out_dir, overflow_detection)

    def add(self, dump_file: Path) -> list[ResultRow]:
        return []  # the offline comparator needs the whole tree: every row comes at close

    def close(self) -> CompareOutcome:
        return run_compare(self._request)


def row_cells(row: ResultRow) -> tuple[list[str], list[str]]:
    """(column names, CSV cells) of ``row`` with every optional column present."""
    return _FULL_TABLE.header(), _FULL_TABLE.cells(row)
