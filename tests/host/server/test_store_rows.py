"""The session store keeps rows as typed columns; a store of an earlier dumpcmp is migrated.

``store_v3/`` is a data directory made by the host of schema 3 (commit 46cafa8), as a user's
would be: its ``dumpcmp.sql`` is the SQL text of that host's ``dumpcmp.sqlite`` (``iterdump``;
SQLite keeps the schema version outside it: 3) and ``sessions/twostep/results`` the result files
it wrote. It was made by::

    dumpcmp host serve --listen 127.0.0.1:0 --data data &
    dumpcmp agent run --host ADDR --session open1 --model zoo:small_cnn --sim --keep-open --state st2
    dumpcmp agent run --host ADDR --session twostep --model zoo:small_cnn --sim --steps 2 \\
        --inject /block2/Add=bias:0.5 --state st1

The received dump and golden files are left out (2.8 MB): migration does not read them.

``store_v4/`` is the same for the host of schema 4 (commit 7c91c3c): one closed session of a
statistics dump (``dump_data: stats``, every statistic), whose statistics rows that host did not
store. It was made by::

    dumpcmp host serve --listen 127.0.0.1:0 --data data &
    dumpcmp agent run --host ADDR --session stats --model zoo:small_cnn --sim --acl-config acl.json \\
        --inject /block2/Add=bias:0.5 --state st1

``store_v5/`` is the same for the host of schema 5 (commit 350b405): one closed session of a
statistics dump of NaN/inf counts alone, whose zero counts that host left "not compared"::

    dumpcmp host serve --listen 127.0.0.1:0 --data data &
    dumpcmp config acl --dump-path dump --model small_cnn --data stats --stats Nan \\
        --stats "Positive Inf" --mode all -o acl.json
    dumpcmp agent run --host ADDR --session counts --model zoo:small_cnn --sim --acl-config acl.json \\
        --inject /block2/Add=inf:0.1 --state st1
"""

from __future__ import annotations

import csv
import json
import math
import shutil
import sqlite3
from pathlib import Path

import pytest

from dumpcmp.errors import StoreError
from dumpcmp.host.metrics.offline_data import MetricValues
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.server.migrate import migrate_store, row_of_cells
from dumpcmp.host.server.store import DB_NAME, SessionStore
from dumpcmp.host.server.stored_rows import METRIC_NUMBERS, ShardRow
from dumpcmp.host.sinks.table import TableShape
from dumpcmp.host.stats_compare import Statistics, StatsResult
from dumpcmp.host.stats_compare import cells as stats_cells
from dumpcmp.host.verdict import SpecialValues
from dumpcmp.proto.walker import GroupKey
from tests.e2e.agent_host_kit import dumpcmp
from tests.host.server.hostkit import Hosts

V3 = Path(__file__).parent / "store_v3"
V4 = Path(__file__).parent / "store_v4"
V5 = Path(__file__).parent / "store_v5"
SHARD = GroupKey("0", "m", "1", "3", "20261128061611")
_TABLES = ("sessions", "files", "runs", "results", "uploaders")


def _metrics(*numbers: float, **changes: object) -> MetricValues:
    values = dict(zip(METRIC_NUMBERS, map(float, numbers), strict=True))
    return MetricValues(**values, **changes)  # type: ignore[arg-type]


def _row(metrics: MetricValues, **changes: object) -> ResultRow:
    fields: dict[str, object] = {
        "index": 4, "op_sequence": 9, "op_type": "Add", "npu_name": "/a/Add", "npu_dtype": "DT_FLOAT16",
        "npu_address": 0x12C0_0000_1000, "ground_truth": "/a/Add", "golden_dtype": "DT_FLOAT",
        "golden_address": None, "tensor_index": "/a/Add:output:0", "shape": (1, 3, 8, 8), "overflow": None,
        "metrics": metrics, "golden_key": "_a_Add.0.1.npy",
    }  # fmt: skip
    return ResultRow(**(fields | changes))  # type: ignore[arg-type]


nan, inf = math.nan, math.inf
# fmt: off
ROWS = [
    _row(_metrics(0.999, 0.01, 2.5, 0.001, 0.0, 0.4, 1.7, 0.4, 1.7, 0.001, 0.002, 1.5, 0.004)),
    # NaN, both infinities and a negative zero: SQLite keeps none of NaN and -0.0 by itself
    _row(
        _metrics(
            nan, inf, -inf, nan, nan, -0.0, nan, inf, 0.0, -0.0, nan, nan, nan,
            reasons=("nan/inf appeared", "(where both are finite: CosineSimilarity 1, …)"),
            finite=_metrics(1.0, 0, 0, 0, 0, 0.1, 0.2, 0.1, 0.2, 0, 0, 0, -0.0, spread_computed=False),
            special=SpecialValues(target_nan=3, target_inf=1, golden_nan=0, golden_inf=2, mismatched=4),
        )
    ),
    # the "not compared" kind: no metric is a number; an address above 2**63; no shape; overflow
    _row(
        MetricValues.unavailable("input 1: x has no framework counterpart"),
        index=None, op_sequence=None, npu_address=0xFFFF_8000_0000_0010, shape=None, overflow=True,
        dump_readable=False, golden_key="",
    ),
    _row(_metrics(*[1.0] * 13), shape=(), overflow=False, golden_address=7),
]
# fmt: on


def test_typed_rows_come_back_as_they_went_in(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    try:
        store.open_session("s", "m", b"", None)
        stored = [ShardRow(f"d/{i}" if r.index is not None else "", SHARD, r) for i, r in enumerate(ROWS)]
        store.replace_rows("s", [], stored, ["c"])
        back = store.rows_after("s", 0, 100)
    finally:
        store.close()
    # repr tells NaN from NaN and -0.0 from 0.0, which == does not
    assert [repr(r.row) for r in back] == [repr(r) for r in stored]
    assert [row_cells(r.row.row)[1] for r in back] == [row_cells(r)[1] for r in ROWS]


def test_rows_are_numbers_a_query_across_sessions_reads(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    try:
        for session, rows in (("a", ROWS[:2]), ("b", ROWS[2:])):
            store.open_session(session, "m", b"", None)
            store.replace_rows(session, [], [ShardRow("f", SHARD, r) for r in rows], [])
    finally:
        store.close()
    db = sqlite3.connect(tmp_path / DB_NAME)
    try:
        typed = db.execute("SELECT typeof(cosine_similarity), shard_step FROM rows WHERE seq=1").fetchone()
        assert typed == ("real", "3")
        diverging = db.execute(
            "SELECT session, seq FROM rows WHERE compared AND (cosine_similarity IS NULL OR "
            "cosine_similarity < 0.99 OR max_absolute_error > 1e300) ORDER BY seq"
        ).fetchall()
        assert diverging == [("a", 2)]
        assert db.execute("SELECT session FROM rows WHERE NOT compared").fetchall() == [("b",)]
    finally:
        db.close()


def _v3_store(directory: Path, version: int = 3) -> Path:
    """The committed schema-3 data directory, as SQLite and the files it names (2: before the
    sessions' nothing_compared column; 4 and 5: the committed schema-4 and schema-5 ones)."""
    made = {4: V4, 5: V5}.get(version, V3)
    shutil.copytree(made / "sessions", directory / "sessions")
    sql = (made / "dumpcmp.sql").read_text()
    if version == 2:
        column = "    nothing_compared TEXT NOT NULL DEFAULT '',  -- the closed session's error line, or ''\n"
        assert column in sql
        sql = sql.replace(column, "").replace("','','[\"Index\"", "','[\"Index\"")
    db = sqlite3.connect(directory / DB_NAME)
    db.executescript(sql)
    db.execute(f"PRAGMA user_version={version}")
    db.commit()
    db.close()
    return directory


def _tables(directory: Path) -> dict[str, list[tuple[object, ...]]]:
    db = sqlite3.connect(directory / DB_NAME)
    try:
        return {t: db.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in _TABLES}
    finally:
        db.close()


def test_a_v3_store_is_refused_in_one_line_naming_the_migrate_command(tmp_path: Path) -> None:
    data = _v3_store(tmp_path / "data")
    with pytest.raises(StoreError) as refused:
        SessionStore(data)
    assert str(refused.value) == (
        f"{data / DB_NAME}: session store of an earlier dumpcmp (schema 3, rows as CSV text): "
        f"convert it with `dumpcmp host migrate --data {data}` first"
    )
    done = dumpcmp("host", "serve", "--listen", "127.0.0.1:0", "--data", data)
    assert done.code == 1
    assert done.output.strip().splitlines() == [f"Error: {refused.value}"]


@pytest.mark.parametrize("version", [2, 3])
def test_migration_keeps_rows_sessions_and_files(tmp_path: Path, version: int) -> None:
    data = _v3_store(tmp_path / "data", version)
    before = _tables(data)
    db = sqlite3.connect(data / DB_NAME)
    cells = db.execute("SELECT seq, session, dump_file, cells FROM rows ORDER BY seq").fetchall()
    db.close()
    on_disk = {p: p.read_bytes() for p in sorted(data.rglob("*.csv"))}

    done = dumpcmp("host", "migrate", "--data", data)
    assert done.code == 0, done.output
    assert done.output.strip() == f"migrated {data} from schema {version}: 2 sessions, 176 rows"

    after = _tables(data)
    if version == 2:  # schema 3's column, added at the end of the table, empty
        assert all(s[-1] == "" for s in after["sessions"])
        after["sessions"] = [s[:-1] for s in after["sessions"]]
    assert after == before
    assert {p: p.read_bytes() for p in sorted(data.rglob("*.csv"))} == on_disk
    store = SessionStore(data)
    try:
        by_session = {s: store.rows_after(s, 0, 1000) for s in ("open1", "twostep")}
        assert store.session("twostep").rows == 121
    finally:
        store.close()
    rows = [*by_session["open1"], *by_session["twostep"]]
    # every row formats as the cells it was stored as, byte for byte; seq and dump file kept
    assert sorted((r.seq, r.row.dump_file, row_cells(r.row.row)[1]) for r in rows) == [
        (seq, dump_file, json.loads(text)) for seq, _, dump_file, text in cells
    ]
    twostep = [r.row for r in by_session["twostep"]]
    assert {r.shard.step for r in twostep} == {"0", "1"}
    golden_only = [r for r in twostep if not r.dump_file]
    assert golden_only and all(r.row.index is None for r in golden_only)
    assert dumpcmp("host", "migrate", "--data", data).output.strip() == (
        f"{data} is current already: 2 sessions, 176 rows"
    )


def _refused_then_migrated(directory: Path, version: int, held: str, rows: int) -> Path:
    """The committed store of schema ``version``: refused in one line naming what it lacks
    (``held``) and the command, then migrated with its ``rows``, every other table as it was."""
    data = _v3_store(directory, version)
    before = _tables(data)
    with pytest.raises(StoreError) as refused:
        SessionStore(data)
    assert str(refused.value) == (
        f"{data / DB_NAME}: session store of an earlier dumpcmp (schema {version}, {held}): "
        f"convert it with `dumpcmp host migrate --data {data}` first"
    )
    done = dumpcmp("host", "migrate", "--data", data)
    assert done.code == 0, done.output
    assert done.output.strip() == f"migrated {data} from schema {version}: 1 session, {rows} rows"
    assert _tables(data) == before
    return data


def test_a_v4_store_is_refused_then_migrated_keeping_its_statistics_results(tmp_path: Path) -> None:
    data = _refused_then_migrated(tmp_path / "data", 4, "no statistics rows", 0)
    hosts = Hosts()
    try:  # the closed session's statistics table is still its result file, served byte for byte
        client = hosts.client(hosts.start(data))
        (name,) = client.info("stats").result_files
        assert client.fetch("stats", name) == (V4 / "sessions/stats/results" / name).read_bytes()
        # and it says where its rows are, not "0 dump files compared, 0 rows" above "compared: 41"
        address = f"127.0.0.1:{hosts.servers[0].port}"
        shown = dumpcmp("host", "results", "stats", "--host", address).output.splitlines()
        assert shown[0] == (
            "session stats: closed, statistics rows in its result files only: use --out DIR to download them"
        )
        listed = dumpcmp("host", "sessions", "--host", address).output
        assert "stats  closed  statistics rows in its result files only  model" in listed, listed
    finally:
        hosts.close()


def test_a_v5_store_is_refused_then_migrated_keeping_each_statistics_rows_verdict(tmp_path: Path) -> None:
    # Schema 6 says whether a statistics row's NaN/inf counts were compared: a schema-5 host
    # compared them only where the device counted more than the golden holds.
    held = "statistics rows without their NaN/inf counts' verdict"
    data = _refused_then_migrated(tmp_path / "data", 5, held, 66)
    store = SessionStore(data)
    try:
        rows = [r.row.row for r in store.stats_after("counts", 0, 1000)]
    finally:
        store.close()
    # every row writes the cells the schema-5 host wrote in its result file: the same verdicts
    (result,) = (V5 / "sessions/counts/results").glob("stats_result_*.csv")
    with result.open(newline="") as handle:
        written = list(csv.reader(handle))[1:]
    assert [stats_cells(r, 0.5) for r in rows] == written
    assert {row[-2] for row in written} == {"FAIL", "N/A"}  # zero counts: "not compared" then
    assert sum(r.counts_compared for r in rows) == sum(row[-2] == "FAIL" for row in written) > 0


def test_migrate_data_that_is_a_file_or_missing_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    for data, says in [(tmp_path / "file", "not a directory"), (tmp_path / "gone", "no such directory")]:
        done = dumpcmp("host", "migrate", "--data", data)
        assert done.code != 0 and done.output.strip() == f"Error: --data {data}: {says}", done.output


_ADD = Path("/d/Add._a_Add.3.1.7.csv")
STATS = [
    StatsResult(
        3,
        "Add",
        "/a/Add",
        "/a/Add",
        "/a/Add:output:0",
        _ADD,
        "DT_FLOAT16",
        "NC1HWC0",
        (1, 1, 4, 4, 16),
        256,
        Statistics(2.5, -0.0, 0.1, 9.0),
        Statistics(2.25, -1.0, 0.0, 8.5),
        golden_key="_a_Add.0.1.npy",
    ),
    # NaN, infinity and statistics the dump does not carry (None), the device's NaN/inf counted
    StatsResult(
        4,
        "Relu",
        "/a/Relu",
        "/a/Relu",
        "/a/Relu:output:0",
        Path("/d/Relu._a_Relu.4.1.8.csv"),
        count=16,
        target=Statistics(math.nan, math.inf, None, None),
        golden=Statistics(1.0, 0.0, 0.5, None),
        reasons=("target holds 3 Nan",),
        target_nan_inf=3,
        counts_compared=True,
    ),
    # counts alone: the golden holds NaN/inf the device did not count
    StatsResult(
        5,
        "Cast",
        "/a/Cast",
        "/a/Cast",
        "/a/Cast:output:0",
        Path("/d/Cast._a_Cast.5.1.9.csv"),
        count=16,
        target=Statistics(None, None, None, None),
        golden=Statistics(1.0, 0.0, 0.5, 2.0),
        reasons=("golden holds 2 NaN",),
        missing_nan_inf=2,
        counts_compared=True,
    ),
    # golden-only, unreadable
    StatsResult(None, "", "/b", "/b", "/b:output:0", None, reasons=("no NPU counterpart",)),
    StatsResult(
        0, "Conv2D", "/c", "*", "/c:*", Path("/d/c.csv"), reasons=("unreadable",), dump_readable=False
    ),
]


def test_statistics_rows_come_back_as_they_went_in(tmp_path: Path) -> None:
    from dumpcmp.host.server.row_messages import stats_message, stats_row
    from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb

    store = SessionStore(tmp_path)
    try:
        store.open_session("s", "m", b"", None)
        stored = [ShardRow(f"d/{i}" if r.index is not None else "", SHARD, r) for i, r in enumerate(STATS)]
        store.replace_rows("s", [], [ShardRow("d/9", SHARD, ROWS[0])], ["c"], stored)
        back = store.stats_after("s", 0, 100)
        record = store.session("s")
        assert (record.rows, record.compared_files) == (6, 5)  # golden-only rows have no dump file
        store.replace_rows("s", ["d/0"], [], [])  # a recomputed file loses its statistics rows too
        assert [r.row.dump_file for r in store.stats_after("s", 0, 100)] == ["d/1", "d/2", "", "d/4"]
    finally:
        store.close()
    # repr tells NaN from NaN and -0.0 from 0.0, which == does not
    assert [repr(r.row) for r in back] == [repr(r) for r in stored]
    for row in STATS:
        sent = pb.StatsRow.FromString(stats_message(row).SerializeToString())
        assert repr(stats_row(sent)) == repr(row)


def test_a_failed_migration_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    data = _v3_store(tmp_path / "data")
    db = sqlite3.connect(data / DB_NAME)
    db.execute('UPDATE rows SET cells=\'["1", "2"]\' WHERE seq=7')
    db.commit()
    db.close()
    before = (data / DB_NAME).read_bytes()
    with pytest.raises(StoreError, match=r"session open1, row 7: cannot read its cells \(2 cells under 23"):
        migrate_store(data)
    assert (data / DB_NAME).read_bytes() == before
    with pytest.raises(StoreError, match="host migrate"):
        SessionStore(data)


def test_a_migrated_store_serves_its_sessions(tmp_path: Path) -> None:
    data = _v3_store(tmp_path / "data")
    migrate_store(data)
    hosts = Hosts()
    try:
        client = hosts.client(hosts.start(data))
        info = client.info("twostep")
        assert info.rows == 121 and len(info.result_files) == 2
        rows = client.rows("twostep")
        assert len(rows) == 121 and {r.shard.step for r in rows} == {"0", "1"}
        name = sorted(info.result_files)[0]
        assert client.fetch("twostep", name) == (V3 / "sessions/twostep/results" / name).read_bytes()
    finally:
        hosts.close()


def test_cells_of_any_table_shape_read_back() -> None:
    from dumpcmp.host.sinks.table import TableShape

    for shape in (TableShape(), TableShape.every_column(), TableShape(npu_address=True, overflow=True)):
        for row in ROWS:
            read = row_of_cells(shape.header(), shape.cells(row))
            assert shape.cells(read) == shape.cells(row)


def test_rows_cross_the_wire_as_they_are() -> None:
    from dumpcmp.host.server.row_messages import result_row, row_message
    from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb

    for row in ROWS:
        sent = pb.ResultRow.FromString(row_message(row).SerializeToString())
        assert repr(result_row(sent)) == repr(row)


def test_a_results_table_of_several_shards_says_each_rows_shard() -> None:
    from dumpcmp.commands.host import StreamedRows

    two = GroupKey("0", "m", "1", "4", "20261128061611")
    keys = [(k.session, k.device, k.model, k.model_id, k.step) for k in (SHARD, SHARD, two, two)]
    rows = [ROWS[0], ROWS[2], ROWS[0], ROWS[2]]
    cells = [row_cells(r)[1] for r in rows]
    columns, table = StreamedRows(row_cells(ROWS[0])[0], cells, keys, rows).table()
    # one optional column has values (OpSequence, the NPU address, OverFlow); the golden address not
    assert columns[:4] == ["Device", "Model", "Step", "Index"]
    assert columns.count("Address") == 1 and "OpSequence" in columns and "OverFlow" in columns
    assert [row[:4] for row in table] == [["0", "m", "3", "4"], ["0", "m", "3", ""], ["0", "m", "4", "4"],
                                          ["0", "m", "4", ""]]  # fmt: skip
    # a host before typed rows: its cells as they came, one shard
    old = StreamedRows(row_cells(ROWS[0])[0], cells, [("",) * 5] * 4, None)  # type: ignore[list-item]
    assert old.table() == (row_cells(ROWS[0])[0], cells)


def test_a_store_too_old_to_migrate_is_refused_without_a_command(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / DB_NAME)
    db.execute("CREATE TABLE sessions (name TEXT)")
    db.execute("PRAGMA user_version=1")
    db.commit()
    db.close()
    with pytest.raises(StoreError) as refused:
        SessionStore(tmp_path)
    assert str(refused.value) == f"{tmp_path / DB_NAME}: session store schema version 1, this dumpcmp reads 6"
    with pytest.raises(StoreError, match="schema version 1: cannot migrate it"):
        migrate_store(tmp_path)


def test_a_client_fetches_the_rule_file_a_session_holds_and_nothing_else(tmp_path: Path) -> None:
    import grpc

    from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
    from tests.host.server.hostkit import CALL_TIMEOUT_S, session_settings

    hosts = Hosts()
    try:
        client = hosts.client(hosts.start(tmp_path / "data"))
        client.open("s", **session_settings())
        assert {a.status for a in client.send("s", {(pb.FUSION_RULE, "fusion_rule.json"): b"{}"})} == {
            pb.UploadAck.STORED
        }

        def fetch(name: str, kind: int = pb.FUSION_RULE) -> bytes:
            request = pb.FetchResultRequest(session="s", name=name, kind=kind)  # type: ignore[arg-type]
            return b"".join(c.data for c in client.stub.FetchResult(request, timeout=CALL_TIMEOUT_S))

        assert fetch("fusion_rule.json") == b"{}"
        for name, kind in (("../../dumpcmp.sqlite", pb.FUSION_RULE), ("other.json", pb.FUSION_RULE),
                           ("fusion_rule.json", pb.FILE_KIND_UNSPECIFIED)):  # fmt: skip
            with pytest.raises(grpc.RpcError) as refused:
                fetch(name, kind)
            assert refused.value.code() == grpc.StatusCode.NOT_FOUND  # type: ignore[attr-defined]
    finally:
        hosts.close()


def test_every_field_of_a_row_has_its_column() -> None:
    # A field added to ResultRow or MetricValues needs its column, a new SCHEMA_VERSION and a
    # step in ``host migrate``: this fails until stored_rows knows it.
    from dataclasses import fields

    assert [f.name for f in fields(ResultRow)] == [
        "index", "op_sequence", "op_type", "npu_name", "npu_dtype", "npu_address", "ground_truth",
        "golden_dtype", "golden_address", "tensor_index", "shape", "overflow", "metrics", "dump_readable",
        "golden_key",
    ]  # fmt: skip
    assert [f.name for f in fields(MetricValues)] == [
        *METRIC_NUMBERS, "reasons", "spread_computed", "finite", "special",
    ]  # fmt: skip
    assert [f.name for f in fields(SpecialValues)] == [
        "target_nan", "target_inf", "golden_nan", "golden_inf", "mismatched",
    ]  # fmt: skip


def row_cells(row: ResultRow) -> tuple[list[str], list[str]]:
    """(column names, CSV cells) of one row with every optional column, as WatchRows sends them."""
    table = TableShape.every_column()
    return table.header(), table.cells(row)
