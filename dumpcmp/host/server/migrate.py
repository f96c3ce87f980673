"""``dumpcmp host migrate``: a session store of an earlier dumpcmp, converted in place.

Schemas 2 and 3 kept each row as a JSON list of its CSV cells (every optional column, the
session's ``columns``); schema 4 keeps typed columns (``stored_rows``). The cells are read back
into rows that a sink writes as the same cells, byte for byte: numbers were written with six
decimals (StandardDeviation three), so the value read back formats as the text it came from,
NaN and infinities included. What the cells never held is filled in: the golden key (""), a
readable dump file, and the finite-elements metrics only as far as the reason states them.
Each row's shard is that of its dump file's directory, as the live comparison keys it; a
golden-only row (no dump file) belongs to the shard of the row before it, as the closed
session's table lists each shard's golden-only rows after its target rows.

Schema 5 adds the statistics rows (``stored_stats``), empty in a converted store: earlier hosts
kept none. A closed session's statistics tables stay its result files (``host results --csv``
writes them, ``--out`` downloads them); an open session's statistics rows are made again as its
comparison resumes.

Schema 6 adds two columns to the statistics rows: ``counts_compared`` (a schema-5 host compared
NaN/inf counts only where the device counted more than the golden holds: set there, so that each
row keeps the verdict it was stored with) and ``missing_nan_inf`` (0: that host never counted it).

One transaction: a failure leaves the store as it was. Sessions, files, runs and results are
not touched (schema 2 sessions gain the ``nothing_compared`` column of schema 3).
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from dumpcmp.errors import StoreError
from dumpcmp.host.metrics.offline_data import MetricValues
from dumpcmp.host.report.table import read_finite, read_special
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.server.files import KIND_DIRS, session_dir
from dumpcmp.host.server.store import DB_NAME, MIGRATES_FROM, SCHEMA_VERSION
from dumpcmp.host.server.stored_rows import COLUMN_NAMES, ROWS_TABLE, ShardRow, metric_values, values_of
from dumpcmp.host.server.stored_stats import STATS_INDEXES, STATS_ROWS_TABLE
from dumpcmp.proto._gen.dumpcmp_v1_pb2 import FileKind
from dumpcmp.proto.walker import GroupKey, directory_group

_SPREAD = re.compile(r"^\(([^;]+);([^)]+)\),\(([^;]+);([^)]+)\)$")
_NO_SHARD = GroupKey("", "", "", "", "")


@dataclass(frozen=True, slots=True)
class Migrated:
    """What ``migrate_store`` did: the schema it found, and what the store holds now."""

    from_version: int
    sessions: int
    rows: int

    @property
    def converted(self) -> bool:
        return self.from_version != SCHEMA_VERSION


def migrate_store(data_dir: Path) -> Migrated:
    """Convert ``data_dir``'s store to the current schema; one at the current schema is left as it is."""
    path = data_dir / DB_NAME
    if not path.is_file():
        raise StoreError(f"{path}: no session store here (is --data the directory host serve was given?)")
    try:
        db = sqlite3.connect(path, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open the session store ({exc})") from None
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version not in (*MIGRATES_FROM, SCHEMA_VERSION):
            raise StoreError(f"{path}: session store schema version {version}: cannot migrate it")
        if version != SCHEMA_VERSION:
            db.execute("BEGIN IMMEDIATE")
            try:
                _convert(db, data_dir, version)
                db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        sessions = db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
        rows = sum(db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("rows", "stats_rows"))
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: migration failed, the store is as it was ({exc})") from None
    finally:
        db.close()
    return Migrated(version, int(sessions), int(rows))


def _convert(db: sqlite3.Connection, data_dir: Path, version: int) -> None:
    if version < 4:
        _typed_rows(db, data_dir, version)
    if version < 5:
        db.execute(STATS_ROWS_TABLE)
        for index in STATS_INDEXES:
            db.execute(index)
        return
    db.execute("ALTER TABLE stats_rows ADD COLUMN missing_nan_inf INTEGER NOT NULL DEFAULT 0")
    db.execute("ALTER TABLE stats_rows ADD COLUMN counts_compared INTEGER NOT NULL DEFAULT 0")
    db.execute("UPDATE stats_rows SET counts_compared = 1 WHERE has_golden AND target_nan_inf > 0")


def _typed_rows(db: sqlite3.Connection, data_dir: Path, version: int) -> None:
    """Schemas 2 and 3: each row's CSV cells become its typed columns."""
    if version == 2:
        db.execute("ALTER TABLE sessions ADD COLUMN nothing_compared TEXT NOT NULL DEFAULT ''")
    columns = {name: tuple(json.loads(c)) for name, c in db.execute("SELECT name, columns FROM sessions")}
    old = db.execute("SELECT seq, session, dump_file, cells FROM rows ORDER BY session, seq").fetchall()
    db.execute("DROP TABLE rows")  # its indexes go with it
    db.execute(ROWS_TABLE)
    db.execute("CREATE INDEX rows_by_session ON rows (session, seq)")
    db.execute("CREATE INDEX rows_by_file ON rows (session, dump_file)")
    insert = (
        f"INSERT INTO rows (seq, session, dump_file, {', '.join(COLUMN_NAMES)}) "
        f"VALUES (?, ?, ?, {', '.join('?' * len(COLUMN_NAMES))})"
    )
    shard, last_session = _NO_SHARD, ""
    for seq, session, dump_file, cells in old:
        if session != last_session:
            shard, last_session = _NO_SHARD, session
        if dump_file:
            dump_root = session_dir(data_dir, session) / KIND_DIRS[FileKind.DUMP]
            shard = directory_group((dump_root / dump_file).parent, dump_root)
        try:
            row = row_of_cells(columns.get(session, ()), json.loads(cells))
        except (ValueError, IndexError) as exc:
            raise StoreError(f"session {session}, row {seq}: cannot read its cells ({exc})") from None
        db.execute(insert, (seq, session, dump_file, *values_of(ShardRow(dump_file, shard, row))))


def row_of_cells(header: Sequence[str], cells: Sequence[str]) -> ResultRow:
    """The row whose CSV cells (under ``header``: any of the table's optional columns) are ``cells``."""
    if len(header) != len(cells):
        raise ValueError(f"{len(cells)} cells under {len(header)} columns")
    at = 0

    def take(name: str) -> str | None:
        nonlocal at
        if at < len(header) and header[at] == name:
            at += 1
            return cells[at - 1]
        return None

    def need(name: str) -> str:
        text = take(name)
        if text is None:
            raise ValueError(
                f"column {at + 1} is {header[at] if at < len(header) else 'missing'}, not {name}"
            )
        return text

    index = need("Index")
    op_sequence = take("OpSequence")
    op_type, npu_name, npu_dtype = need("OpType"), need("NPUDump"), need("DataType")
    npu_address = take("Address")
    ground_truth, golden_dtype = need("GroundTruth"), need("DataType")
    golden_address = take("Address")
    tensor_index, shape = need("TensorIndex"), need("Shape")
    overflow = take("OverFlow")
    numbers = [need(name) for name in _METRIC_CELLS[:5]]
    spread = need("StandardDeviation")
    numbers += [need(name) for name in _METRIC_CELLS[5:]]
    reason = need("CompareFailReason")
    metrics = _metrics(numbers, spread, reason)
    return ResultRow(
        index=int(index) if index else None,
        op_sequence=None if op_sequence in (None, "NaN") else int(op_sequence),
        op_type=op_type,
        npu_name=npu_name,
        npu_dtype=npu_dtype,
        npu_address=_address(npu_address),
        ground_truth=ground_truth,
        golden_dtype=golden_dtype,
        golden_address=_address(golden_address),
        tensor_index=tensor_index,
        shape=None if shape == "NaN" else tuple(json.loads(shape)),
        overflow=None if overflow in (None, "NaN") else overflow == "YES",
        metrics=metrics,
    )


_METRIC_CELLS = (
    "CosineSimilarity", "MaxAbsoluteError", "AccumulatedRelativeError", "RelativeEuclideanDistance",
    "KullbackLeiblerDivergence", "MeanAbsoluteError", "RootMeanSquareError", "MaxRelativeError",
    "MeanRelativeError",
)  # fmt: skip


def _metrics(numbers: list[str], spread: str, reason: str) -> MetricValues:
    values = [_number(text) for text in numbers]
    found = _SPREAD.match(spread)
    if spread != "NaN" and found is None:
        raise ValueError(f"StandardDeviation {spread!r}")
    mean_x, std_x, mean_y, std_y = (
        (float(part) for part in found.groups()) if found is not None else (math.nan,) * 4
    )
    special = read_special(reason)
    return replace(
        metric_values(
            [*values[:5], mean_x, std_x, mean_y, std_y, *values[5:]],
            (reason,) if reason else (),
            spread_computed=found is not None,
            finite=read_finite(reason) if special is not None and special.positions_agree else None,
        ),
        special=special,
    )


def _number(text: str) -> float:
    return math.nan if text == "NaN" else float(text)  # float() reads "inf" and "-inf" too


def _address(text: str | None) -> int | None:
    return None if text in (None, "NaN") else int(text, 16)
