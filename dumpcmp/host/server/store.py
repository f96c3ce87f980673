"""The session store: sessions, their files, runs, result rows and result files, in SQLite.

One database, ``DATA/dumpcmp.sqlite``, in WAL mode (readers never wait for the writer) with
``synchronous=FULL``: a file is acknowledged only after its row is committed, so an
acknowledged file survives a crash of the host. One connection is shared by the server's
threads behind a lock; every method is one transaction.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Generic

from dumpcmp.errors import BadFileNameError, SessionNotFound, StoreError
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.server.stored_rows import INSERT_ROW, ROWS_TABLE, SELECT_ROW, R, ShardRow, row_of, values_of
from dumpcmp.host.server.stored_stats import (
    INSERT_STATS_ROW,
    SELECT_STATS_ROW,
    STATS_INDEXES,
    STATS_ROWS_TABLE,
    stats_row_of,
    stats_values_of,
)
from dumpcmp.host.stats_compare import StatsResult
from dumpcmp.proto._gen.dumpcmp_v1_pb2 import FileKind
from dumpcmp.proto.names import parse_golden_name
from dumpcmp.proto.runs import REPLACED_REFUSAL, run_slot
from dumpcmp.proto.session_names import CLOSED_REFUSAL

# 2: runs belong to an agent; 3: a closed session says when it compared nothing; 4: rows are typed
# columns (``stored_rows``), not JSON lists of CSV cells; 5: statistics rows too (``stored_stats``);
# 6: statistics rows say whether their NaN/inf counts were compared, and the golden's they lack.
# ``dumpcmp host migrate`` converts 2, 3, 4 and 5.
SCHEMA_VERSION = 6
MIGRATES_FROM = (2, 3, 4, 5)
MIGRATE_COMMAND = "dumpcmp host migrate --data"
DB_NAME = "dumpcmp.sqlite"

_SCHEMA = f"""
CREATE TABLE sessions (
    name TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    settings BLOB NOT NULL,        -- a serialized dumpcmp.v1.CompareSettings
    state TEXT NOT NULL,           -- 'open' or 'closed'
    summary TEXT NOT NULL DEFAULT '',
    nothing_compared TEXT NOT NULL DEFAULT '',  -- the closed session's error line, or ''
    columns TEXT NOT NULL DEFAULT '[]',
    created REAL NOT NULL
);
CREATE TABLE uploaders (
    session TEXT NOT NULL REFERENCES sessions(name),
    host TEXT NOT NULL, device INTEGER NOT NULL, agent_id TEXT NOT NULL, version TEXT NOT NULL,
    PRIMARY KEY (session, host, device, agent_id)
);
CREATE TABLE files (
    session TEXT NOT NULL REFERENCES sessions(name),
    kind INTEGER NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL, sha256 BLOB NOT NULL,
    run_id TEXT NOT NULL,
    PRIMARY KEY (session, kind, path)
);
CREATE TABLE runs (
    session TEXT NOT NULL REFERENCES sessions(name),
    run_id TEXT NOT NULL,
    state TEXT NOT NULL,           -- 'open', 'ended', 'replaced' or 'refused'
    agent TEXT NOT NULL DEFAULT '',  -- a START of an id without a slot replaces its agent's open runs
    PRIMARY KEY (session, run_id)
);
{ROWS_TABLE};
CREATE INDEX rows_by_session ON rows (session, seq);
CREATE INDEX rows_by_file ON rows (session, dump_file);
{STATS_ROWS_TABLE};
{STATS_INDEXES[0]};
{STATS_INDEXES[1]};
CREATE TABLE results (
    session TEXT NOT NULL REFERENCES sessions(name),
    name TEXT NOT NULL,
    PRIMARY KEY (session, name)
);
"""


_FILE_QUERY = "SELECT kind, path, size, sha256, run_id FROM files WHERE session=?"
_ROW_TABLES = ("rows", "stats_rows")  # a session's rows: of tensors, of statistics


@dataclass(frozen=True, slots=True)
class StoredFile:
    kind: int
    path: str
    size: int
    sha256: bytes  # the checksum it was sent with: SHA-256 (32 bytes) or XXH3-128 (16)
    run_id: str = ""


@dataclass(frozen=True, slots=True)
class UploaderRecord:
    host: str
    device: int
    agent_id: str
    version: str


@dataclass(frozen=True, slots=True)
class SessionRecord:
    name: str
    model: str
    settings: bytes
    closed: bool
    summary: str
    nothing_compared: str  # closed: the one-line error of a comparison that compared nothing, or ""
    columns: tuple[str, ...]
    rows: int
    result_files: tuple[str, ...]
    replaced_runs: tuple[str, ...]
    uploaders: tuple[UploaderRecord, ...]
    dump_files: int  # received
    compared_files: int  # of those, the ones with rows


@dataclass(frozen=True, slots=True)
class SessionState:
    closed: bool
    replaced_runs: frozenset[str]
    refused_runs: frozenset[str] = frozenset()  # runs that brought another run's golden data

    def gone(self, run_id: str) -> str:
        """Why a file or mark of ``run_id`` is refused now; "" when it is welcome."""
        if run_id in self.replaced_runs:
            return REPLACED_REFUSAL.format(run_id)
        if run_id in self.refused_runs:
            return f"run {run_id} was refused: {_REFUSED_RUN}"
        return ""


# Why a run is refused: the session compares every dump file with one set of golden files.
_REFUSED_RUN = "the session holds another run's golden data (stream it into a session of its own)"


@dataclass(frozen=True, slots=True)
class StoredRow(Generic[R]):
    seq: int  # in its table's order: tensor rows and statistics rows count apart
    row: ShardRow[R]


@dataclass(frozen=True, slots=True)
class RunStart:
    """What starting a run did: the earlier unfinished runs it replaced and the files they lose."""

    replaced: tuple[str, ...]
    dropped: tuple[StoredFile, ...]


class SessionStore:
    def __init__(self, data_dir: Path) -> None:
        path = data_dir / DB_NAME
        try:
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            # An SQLite file of something else is left as it was (WAL mode would rewrite its header).
            foreign = version == 0 and self._db.execute("SELECT 1 FROM sqlite_master").fetchone() is not None
            if not foreign:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=FULL")
                self._db.execute("PRAGMA foreign_keys=ON")
        except sqlite3.Error as exc:
            raise StoreError(f"{path}: cannot open the session store ({exc})") from None
        self._lock = threading.Lock()
        if foreign:
            self._db.close()
            raise StoreError(f"{path}: not a dumpcmp session store (an SQLite database of something else)")
        if version == 0:
            with self._transaction() as db:
                # executescript would commit first: the schema goes in statement by statement.
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        elif version != SCHEMA_VERSION:
            self._db.close()
            raise StoreError(_version_problem(data_dir, version))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                yield self._db
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._roll_back()
                raise StoreError(f"session store: {exc}") from None
            except BaseException:
                self._roll_back()
                raise

    def _roll_back(self) -> None:
        # SQLite ends the transaction itself on some errors (a full disk): a second ROLLBACK then
        # failed with "no transaction is active", a traceback hiding the real error.
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")

    def open_session(self, name: str, model: str, settings: bytes, uploader: UploaderRecord | None) -> bool:
        """Create the session, or keep the existing one of that name; True when it was created."""
        with self._transaction() as db:
            created = db.execute("SELECT 1 FROM sessions WHERE name=?", (name,)).fetchone() is None
            if created:
                db.execute(
                    "INSERT INTO sessions (name, model, settings, state, created) "
                    "VALUES (?, ?, ?, 'open', ?)",
                    (name, model, settings, time.time()),
                )
            if uploader is not None:
                db.execute(
                    "INSERT OR IGNORE INTO uploaders VALUES (?, ?, ?, ?, ?)",
                    (name, uploader.host, uploader.device, uploader.agent_id, uploader.version),
                )
            return created

    def set_settings(self, name: str, settings: bytes) -> None:
        """A session's comparison settings, completed by a later agent run (see ``OpenSession``)."""
        with self._transaction() as db:
            db.execute("UPDATE sessions SET settings=? WHERE name=?", (settings, name))

    def session(self, name: str) -> SessionRecord:
        with self._transaction() as db:
            return _session(db, name)

    def state(self, name: str) -> SessionState:
        """What every received file is checked against, without counting rows."""
        with self._transaction() as db:
            row = db.execute("SELECT state FROM sessions WHERE name=?", (name,)).fetchone()
            if row is None:
                raise SessionNotFound(name)
            gone = db.execute(
                "SELECT run_id, state FROM runs WHERE session=? AND state IN ('replaced', 'refused')", (name,)
            ).fetchall()
        return SessionState(
            row[0] == "closed",
            frozenset(r for r, state in gone if state == "replaced"),
            frozenset(r for r, state in gone if state == "refused"),
        )

    def golden_of_other_run(self, name: str, run_id: str) -> str | None:
        """The run (``""``: none) whose golden files the session holds, when that is not ``run_id``;
        None when golden data of ``run_id`` may be added.

        A run still going counts as much as a finished one: two simulated runs on two devices
        (other seeds, other inputs) streaming at once had their golden files mixed, each dump
        compared with whichever run's golden file was newest."""
        with self._transaction() as db:
            row = db.execute(
                "SELECT f.run_id FROM files f WHERE f.session=? AND f.kind=? AND f.run_id<>? LIMIT 1",
                (name, FileKind.GOLDEN, run_id),
            ).fetchone()
        return None if row is None else str(row[0])

    def sessions(self) -> list[SessionRecord]:
        with self._transaction() as db:
            names = [r[0] for r in db.execute("SELECT name FROM sessions ORDER BY created, name")]
            return [_session(db, n) for n in names]

    def is_closed(self, name: str) -> bool:
        with self._transaction() as db:
            row = db.execute("SELECT state FROM sessions WHERE name=?", (name,)).fetchone()
            return row is not None and row[0] == "closed"

    def session_names(self, state: str) -> list[str]:
        """The names of the sessions in ``state`` ('open' or 'closed')."""
        with self._transaction() as db:
            query = "SELECT name FROM sessions WHERE state=? ORDER BY name"
            return [r[0] for r in db.execute(query, (state,))]

    def files(self, session: str, kind: int | None = None) -> list[StoredFile]:
        query = _FILE_QUERY
        args: tuple[object, ...] = (session,)
        if kind is not None:
            query, args = query + " AND kind=?", (session, kind)
        with self._transaction() as db:
            return [StoredFile(*r) for r in db.execute(query + " ORDER BY kind, path", args)]

    def file(self, session: str, kind: int, path: str) -> StoredFile | None:
        (found,) = self.files_named(session, [(kind, path)])
        return found

    def golden_twin(self, session: str, path: str) -> str | None:
        """Another golden file the session holds of the tensor ``path`` holds (same directory, op
        name and output index, another timestamp), None when none."""
        name = PurePosixPath(path).name
        key = _golden_key(name)
        if key is None:
            return None
        head = f"{path[: len(path) - len(name)]}{key}."
        # The primary key's order: every path starting with ``head`` lies in [head, head[:-1] + "/").
        query = "SELECT path FROM files WHERE session=? AND kind=? AND path>=? AND path<? AND path<>?"
        with self._transaction() as db:
            found = db.execute(query, (session, FileKind.GOLDEN, head, f"{head[:-1]}/", path)).fetchall()
        return next((str(p) for (p,) in found if _golden_key(PurePosixPath(p).name) == key), None)

    def holds(self, session: str, kind: int) -> bool:
        """Whether the session has a file of this kind."""
        with self._transaction() as db:
            query = "SELECT 1 FROM files WHERE session=? AND kind=? LIMIT 1"
            return db.execute(query, (session, kind)).fetchone() is not None

    def first_path(self, session: str, kind: int) -> str | None:
        """The path of one of the session's files of this kind (the first by name), None when none."""
        with self._transaction() as db:
            query = "SELECT path FROM files WHERE session=? AND kind=? ORDER BY path LIMIT 1"
            row = db.execute(query, (session, kind)).fetchone()
        return None if row is None else str(row[0])

    def files_named(self, session: str, keys: Sequence[tuple[int, str]]) -> list[StoredFile | None]:
        """The stored file of each (kind, path), None where there is none; one transaction."""
        with self._transaction() as db:
            rows = [
                db.execute(_FILE_QUERY + " AND kind=? AND path=?", (session, kind, path)).fetchone()
                for kind, path in keys
            ]
        return [None if row is None else StoredFile(*row) for row in rows]

    def add_files(self, session: str, files: Sequence[StoredFile]) -> list[str]:
        """Record received files in one transaction (one commit to disk for all of them): for
        each, "" when recorded, else why not (the session closed, or the file's run was
        replaced, while it was on the way)."""
        with self._transaction() as db:
            state = db.execute("SELECT state FROM sessions WHERE name=?", (session,)).fetchone()
            if state is None or state[0] == "closed":
                return [CLOSED_REFUSAL.format(session)] * len(files)
            runs = dict(
                db.execute(
                    "SELECT run_id, state FROM runs WHERE session=? AND state IN ('replaced', 'refused')",
                    (session,),
                ).fetchall()
            )
            state = SessionState(
                closed=False,
                replaced_runs=frozenset(r for r, kind in runs.items() if kind == "replaced"),
                refused_runs=frozenset(r for r, kind in runs.items() if kind == "refused"),
            )
            refused = [state.gone(f.run_id) for f in files]
            db.executemany(
                "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (session, f.kind, f.path, f.size, f.sha256, f.run_id)
                    for f, why in zip(files, refused, strict=True)
                    if not why
                ],
            )
            return refused

    def forget_files(self, session: str, files: Sequence[StoredFile]) -> None:
        """Drop files (and their rows) the host no longer holds, so that the agent resends them."""
        with self._transaction() as db:
            for f in files:
                db.execute(
                    "DELETE FROM files WHERE session=? AND kind=? AND path=?", (session, f.kind, f.path)
                )
                if f.kind == FileKind.DUMP:
                    _delete_rows(db, session, f.path)

    def start_run(self, session: str, run_id: str, agent: str = "") -> RunStart:
        """Mark ``run_id`` started, replacing the earlier runs it repeats (``proto.runs``): every
        other run of its slot, finished or not, whoever ran it; for an id without a slot (an
        older agent's), every other unfinished run of the same agent."""
        slot = run_slot(run_id)
        with self._transaction() as db:
            if slot:
                stale = [
                    r[0]
                    for r in db.execute(
                        "SELECT run_id FROM runs WHERE session=? AND state IN ('open', 'ended') "
                        "AND run_id<>? ORDER BY run_id",
                        (session, run_id),
                    )
                    if run_slot(r[0]) == slot
                ]
            else:
                stale = [
                    r[0]
                    for r in db.execute(
                        "SELECT run_id FROM runs WHERE session=? AND state='open' AND run_id<>? AND agent=? "
                        "ORDER BY run_id",
                        (session, run_id, agent),
                    )
                ]
            dropped = _drop_runs(db, session, stale, "replaced")
            db.execute("INSERT OR IGNORE INTO runs VALUES (?, ?, 'open', ?)", (session, run_id, agent))
            return RunStart(tuple(stale), dropped)

    def drop_unfinished_runs(self, session: str) -> RunStart:
        """Every run started and never ended is replaced, its files and rows dropped: a closing
        session's results describe complete runs (its agent was killed, or still sends it)."""
        with self._transaction() as db:
            stale = [
                r[0]
                for r in db.execute(
                    "SELECT run_id FROM runs WHERE session=? AND state='open' ORDER BY run_id", (session,)
                )
            ]
            return RunStart(tuple(stale), _drop_runs(db, session, stale, "replaced"))

    def live_runs(self, session: str) -> list[str]:
        """The session's runs that count: started ('open') or finished ('ended')."""
        with self._transaction() as db:
            query = "SELECT run_id FROM runs WHERE session=? AND state IN ('open', 'ended') ORDER BY run_id"
            return [r[0] for r in db.execute(query, (session,))]

    def replace_runs(self, session: str, run_ids: Sequence[str]) -> RunStart:
        """``run_ids`` no longer count (an older hunt's passes, when a new hunt begins): their
        files and rows are dropped, the runs listed as replaced."""
        with self._transaction() as db:
            return RunStart(tuple(run_ids), _drop_runs(db, session, run_ids, "replaced"))

    def run_state(self, session: str, run_id: str) -> str | None:
        """'open', 'ended', 'replaced' or 'refused'; None for a run the session never heard of."""
        with self._transaction() as db:
            row = db.execute(
                "SELECT state FROM runs WHERE session=? AND run_id=?", (session, run_id)
            ).fetchone()
        return None if row is None else str(row[0])

    def refuse_run(self, session: str, run_id: str) -> tuple[StoredFile, ...]:
        """``run_id`` brought golden data of its own into a session that compares with another
        run's: none of its files count, now or later. The files it loses."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO runs (session, run_id, state) VALUES (?, ?, 'open') ON CONFLICT DO NOTHING",
                (session, run_id),
            )
            return _drop_runs(db, session, [run_id], "refused")

    def end_run(self, session: str, run_id: str) -> None:
        with self._transaction() as db:
            db.execute(
                "INSERT INTO runs (session, run_id, state) VALUES (?, ?, 'ended') "
                "ON CONFLICT (session, run_id) DO UPDATE SET state='ended' WHERE state='open'",
                (session, run_id),
            )

    def replace_rows(
        self, session: str, dump_files: Sequence[str], rows: Sequence[ShardRow[ResultRow]],
        columns: Sequence[str], stats: Sequence[ShardRow[StatsResult]] = (),
    ) -> None:  # fmt: skip
        """The rows of ``dump_files`` become ``rows`` and ``stats`` (a recomputed file loses its old rows)."""
        with self._transaction() as db:
            for name in dump_files:
                _delete_rows(db, session, name)
            _insert_rows(db, session, rows, stats)
            db.execute("UPDATE sessions SET columns=? WHERE name=?", (json.dumps(list(columns)), session))

    def rows_after(self, session: str, seq: int, limit: int) -> list[StoredRow[ResultRow]]:
        with self._transaction() as db:
            return [
                StoredRow(values[0], row_of(values[1:]))
                for values in db.execute(
                    f"SELECT {SELECT_ROW} FROM rows WHERE session=? AND seq>? ORDER BY seq LIMIT ?",
                    (session, seq, limit),
                )
            ]

    def stats_after(self, session: str, seq: int, limit: int) -> list[StoredRow[StatsResult]]:
        """The session's statistics rows after ``seq`` (their own order), as ``rows_after``."""
        with self._transaction() as db:
            return [
                StoredRow(values[0], stats_row_of(values[1:]))
                for values in db.execute(
                    f"SELECT {SELECT_STATS_ROW} FROM stats_rows WHERE session=? AND seq>? "
                    "ORDER BY seq LIMIT ?",
                    (session, seq, limit),
                )
            ]

    def close_session(
        self, session: str, rows: Sequence[ShardRow[ResultRow]], columns: Sequence[str],
        result_files: Sequence[str], summary: str, nothing_compared: str = "",
        stats: Sequence[ShardRow[StatsResult]] = (),
    ) -> None:  # fmt: skip
        """The final tables replace every live row; the session is closed with its result files."""
        with self._transaction() as db:
            for table in _ROW_TABLES:
                db.execute(f"DELETE FROM {table} WHERE session=?", (session,))
            _insert_rows(db, session, rows, stats)
            db.executemany(
                "INSERT OR IGNORE INTO results VALUES (?, ?)", [(session, n) for n in result_files]
            )
            db.execute(
                "UPDATE sessions SET state='closed', summary=?, nothing_compared=?, columns=? WHERE name=?",
                (summary, nothing_compared, json.dumps(list(columns)), session),
            )

    def delete_session(self, session: str) -> tuple[SessionRecord, int]:
        """Drop the session and everything it holds; what it held, and its number of files."""
        with self._transaction() as db:
            record = _session(db, session)
            files = db.execute("SELECT COUNT(*) FROM files WHERE session=?", (session,)).fetchone()[0]
            for table in (*_ROW_TABLES, "results", "files", "runs", "uploaders"):
                db.execute(f"DELETE FROM {table} WHERE session=?", (session,))
            db.execute("DELETE FROM sessions WHERE name=?", (session,))
            return record, int(files)


def _drop_runs(
    db: sqlite3.Connection, session: str, runs: Sequence[str], state: str
) -> tuple[StoredFile, ...]:
    """Mark ``runs`` ``state`` and forget their files and rows; the files forgotten."""
    dropped: list[StoredFile] = []
    for run in runs:
        dropped += [
            StoredFile(*r)
            for r in db.execute(
                "SELECT kind, path, size, sha256, run_id FROM files WHERE session=? AND run_id=?",
                (session, run),
            )
        ]
        db.execute("UPDATE runs SET state=? WHERE session=? AND run_id=?", (state, session, run))
        db.execute("DELETE FROM files WHERE session=? AND run_id=?", (session, run))
    for f in dropped:
        if f.kind == FileKind.DUMP:
            _delete_rows(db, session, f.path)
    return tuple(dropped)


def _delete_rows(db: sqlite3.Connection, session: str, dump_file: str) -> None:
    """The rows of one dump file, tensor and statistics rows alike."""
    for table in _ROW_TABLES:
        db.execute(f"DELETE FROM {table} WHERE session=? AND dump_file=?", (session, dump_file))


def _insert_rows(
    db: sqlite3.Connection,
    session: str,
    rows: Sequence[ShardRow[ResultRow]],
    stats: Sequence[ShardRow[StatsResult]],
) -> None:
    db.executemany(INSERT_ROW, [(session, r.dump_file, *values_of(r)) for r in rows])
    db.executemany(INSERT_STATS_ROW, [(session, r.dump_file, *stats_values_of(r)) for r in stats])


def _session(db: sqlite3.Connection, name: str) -> SessionRecord:
    row = db.execute(
        "SELECT model, settings, state, summary, nothing_compared, columns FROM sessions WHERE name=?",
        (name,),
    ).fetchone()
    if row is None:
        raise SessionNotFound(name)
    model, settings, state, summary, nothing, columns = row
    count = sum(
        db.execute(f"SELECT COUNT(*) FROM {table} WHERE session=?", (name,)).fetchone()[0]
        for table in _ROW_TABLES
    )
    results = [r[0] for r in db.execute("SELECT name FROM results WHERE session=? ORDER BY name", (name,))]
    replaced = [
        r[0]
        for r in db.execute(
            "SELECT run_id FROM runs WHERE session=? AND state='replaced' ORDER BY run_id", (name,)
        )
    ]
    uploaders = [
        UploaderRecord(*r)
        for r in db.execute(
            "SELECT host, device, agent_id, version FROM uploaders WHERE session=? ORDER BY 1, 2, 3", (name,)
        )
    ]
    dumps = db.execute(
        "SELECT COUNT(*) FROM files WHERE session=? AND kind=?", (name, FileKind.DUMP)
    ).fetchone()[0]
    compared = db.execute(
        "SELECT COUNT(*) FROM (SELECT dump_file FROM rows WHERE session=? AND dump_file<>'' "
        "UNION SELECT dump_file FROM stats_rows WHERE session=? AND dump_file<>'')",
        (name, name),
    ).fetchone()[0]
    return SessionRecord(
        name, model, bytes(settings), state == "closed", summary, nothing, tuple(json.loads(columns)), count,
        tuple(results), tuple(replaced), tuple(uploaders), dumps, compared,
    )  # fmt: skip


def _version_problem(data_dir: Path, version: int) -> str:
    """The one line refusing a store of another schema; an older one names the command that converts it."""
    path = data_dir / DB_NAME
    if version in MIGRATES_FROM:
        held = {4: "no statistics rows", 5: "statistics rows without their NaN/inf counts' verdict"}.get(
            version, "rows as CSV text"
        )
        return (
            f"{path}: session store of an earlier dumpcmp (schema {version}, {held}): "
            f"convert it with `{MIGRATE_COMMAND} {data_dir}` first"
        )
    return f"{path}: session store schema version {version}, this dumpcmp reads {SCHEMA_VERSION}"


def _golden_key(name: str) -> str | None:
    try:
        return parse_golden_name(name).key
    except BadFileNameError:
        return None
