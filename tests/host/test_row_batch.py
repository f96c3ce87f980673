"""Rows cross processes as columnar batches and come back as the same typed records."""

from __future__ import annotations

import math
import pickle
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from dumpcmp.host.metrics.offline_data import MetricValues
from dumpcmp.host.metrics.torchair import RealValues
from dumpcmp.host.row_batch import FileBatch, decode, encode
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.stats_compare import Statistics, StatsResult
from dumpcmp.host.torchair.records import TensorStats
from dumpcmp.host.torchair.rows import Md5Values, StatsValues, TorchairRow
from dumpcmp.host.verdict import NotCompared, SpecialValues
from dumpcmp.proto.names import parse_dump_name
from dumpcmp.proto.walker import DumpEntry, GroupKey

NAN, INF = math.nan, math.inf


def _metrics(first: float, reasons: tuple[str, ...] = (), finite: MetricValues | None = None) -> MetricValues:
    numbers = (first, INF, -INF, NAN, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0)
    return MetricValues(*numbers, reasons=reasons, finite=finite)


def _row(number: int, **changes: object) -> ResultRow:
    fields: dict[str, object] = dict(
        index=None,
        op_sequence=number,
        op_type="Conv2D",
        npu_name=f"conv{number}",
        npu_dtype="DT_FLOAT16",
        npu_address=None,
        ground_truth="conv,relu",
        golden_dtype="float32",
        golden_address=1 << 40,
        tensor_index=f"conv{number}:output:0",
        shape=(1, 3, 224, 224),
        overflow=None,
        metrics=_metrics(0.99),
    )
    fields.update(changes)
    return ResultRow(**fields)  # type: ignore[arg-type]


ROWS = [
    _row(0),
    _row(1, index=7, op_sequence=None, shape=None, overflow=True, dump_readable=False, golden_key="g/1.npy"),
    _row(2, shape=(), overflow=False, npu_name="ünïcode/名前", metrics=MetricValues.unavailable("no golden")),
    _row(3, metrics=_metrics(NAN, ("nan/inf appeared", "second reason"), finite=_metrics(1.0, ("inner",)))),
    _row(4, ground_truth="", golden_dtype=""),
    _row(5, metrics=MetricValues(*[NAN] * 13, special=SpecialValues(3, 0, 1, 2, None))),
]


def _same(left: object, right: object) -> bool:
    """Equal, NaN equal to NaN (dataclass equality says NaN != NaN)."""
    return repr(left) == repr(right)


def test_result_rows_come_back_field_for_field() -> None:
    assert _same(decode(encode(ROWS)), ROWS)
    assert [type(r.npu_address) for r in decode(encode(ROWS))][:2] == [type(None), type(None)]


@pytest.mark.parametrize(
    "rows",
    [
        [_row(i) for i in range(5)],  # every shape 4-d, no reason, no NaN/inf record in the batch
        [_row(i, shape=(i + 1,), metrics=_metrics(0.5, ("one reason",))) for i in range(5)],
        [_row(i, shape=(), metrics=_metrics(0.5, ("a", "b"))) for i in range(3)],
        [_row(0, shape=None), _row(1), _row(2, shape=(7,))],  # None among equal lengths
        ROWS,
    ],
    ids=["same-shapes", "one-reason-each", "two-reasons-each", "none-among-them", "every-kind"],
)
def test_rows_come_back_whatever_their_batch_shares(rows: list[ResultRow]) -> None:
    assert _same(decode(encode(rows)), rows)


def test_records_made_again_equal_and_hash_as_their_originals() -> None:
    # Dump entries, as a cluster task carries them: set through their slots, not __init__.
    names = [f"Conv2D.conv{i}.{i}.1700000000{i}" for i in range(4)]
    entries = [
        DumpEntry(Path("/d") / name, parse_dump_name(name), GroupKey("0", "net", "1", str(i % 2)), i == 2)
        for i, name in enumerate(names)
    ]
    again = decode(encode(entries))
    assert again == entries and [hash(e) for e in again] == [hash(e) for e in entries]
    assert all(type(e.path) is type(entries[0].path) for e in again)


def test_a_batch_pickles_as_a_few_buffers_not_an_object_per_cell() -> None:
    # As a comparison makes them: each row its own numbers, op types and dtypes repeated.
    rows = [
        _row(
            i,
            npu_name=f"op{i}",
            tensor_index=f"op{i}:output:0",
            metrics=MetricValues(*(i / 7 + k for k in range(13))),
        )
        for i in range(2000)
    ]
    batch = FileBatch.of([(rows[i : i + 4], (), None) for i in range(0, 2000, 4)])
    data = pickle.dumps(batch, pickle.HIGHEST_PROTOCOL)
    # As columns a row is its numbers and the numbers of its strings, each string stored once.
    assert len(data) < 2000 * 250  # 13 float64s, 17 other cells, a 4-d shape: ~200 bytes
    assert b"ResultRow" in data and data.count(b"ResultRow") == 1  # the class, named once
    again = pickle.loads(data)
    assert all(isinstance(table, np.ndarray) for table in again.rows.tables)
    assert _same([r for rows, _, _ in again.files() for r in rows], rows)


def test_files_keep_their_own_rows_and_stats_rows() -> None:
    stats = StatsResult(
        None, "Add", "add", "add", "add:output:0", Path("/d/Add.add.1.1.2"), "DT_FLOAT", "ND", (2, 2), 4,
        Statistics(1.0, None, NAN, INF), None, ("a reason",), True, "add.npy",
    )  # fmt: skip
    lines = ("a,1\n", '"b, with a comma",2\n', "c\n")
    files = [
        (ROWS[:2], (), lines[:2]),
        ((), (), None),
        (ROWS[2:], (stats, stats), None),
        ((), (stats,), ()),
        (ROWS[2:3], (), lines[2:]),
    ]
    again = FileBatch.of(files).files()
    assert _same(again, [(tuple(rows), tuple(stats), text) for rows, stats, text in files])
    assert isinstance(again[2][1][0].dump_file, Path)


def test_torchair_rows_of_every_summary_mode_come_back() -> None:
    stats = TensorStats("float16", (2, 8), 1.0, -1.0, None, 3.0, 12345)
    rows = [
        TorchairRow(0, "aten.add", "npu:0", "fx:0", RealValues(1.0, None, 0.0, INF, 1.0, 1.0), "PASS"),
        TorchairRow(None, "aten.mul", "npu:1", "fx:1", StatsValues(stats, None), "FAIL", ("Max 1 > 0.5",)),
        TorchairRow(2, "aten.mm", "npu:2", "", Md5Values(None, 7), "N/A", (), False, ""),
        TorchairRow(
            3, "aten.mm", "npu:3", "", RealValues.unavailable("reduced", NotCompared.STATISTICS_ONLY), "N/A"
        ),
    ]
    assert _same(decode(encode(rows)), rows)


def test_a_record_nested_in_itself_comes_back_at_any_depth() -> None:
    deep = _row(0, metrics=_metrics(1.0, finite=_metrics(2.0, finite=_metrics(3.0))))
    assert _same(decode(encode([deep, ROWS[0], deep])), [deep, ROWS[0], deep])


def test_rows_read_back_take_their_files_place_as_index() -> None:
    files = [(ROWS[:2], (), None), ((), (), None), (ROWS[2:], (), None)]
    again = FileBatch.of(files).files([5, 6, None])
    assert [r.index for r in again[0][0]] == [5, 5]
    assert [r.index for r in again[2][0]] == [None] * len(ROWS[2:])
    unplaced = [(tuple(replace(r, index=None) for r in rows), stats, text) for rows, stats, text in again]
    assert _same(unplaced, [(tuple(replace(r, index=None) for r in rows), (), None) for rows, _, _ in files])


def test_a_shard_uses_the_golden_keys_of_the_files_it_holds_now() -> None:
    """Golden keys read from a batch at once count only while all its files are the shard's: a
    file compared again keeps only its new rows' keys, a batch across two shards only its own."""
    from dumpcmp.host.core import FileRows
    from dumpcmp.host.session import ShardRows

    def entry(number: int) -> DumpEntry:
        name = f"Conv2D.conv{number}.{number}.{1700000000 + number}"
        return DumpEntry(Path("/d") / name, parse_dump_name(name), GroupKey("0", "m", "1", "0"))

    keyed = [(_row(n, golden_key=f"g{n}"),) for n in range(4)]
    sent = FileBatch.of([(rows, (), None) for rows in keyed]).files()
    shard: ShardRows[ResultRow, str] = ShardRows("m")
    for number, (rows, _, _) in enumerate(sent[:3]):  # the fourth file is another shard's
        shard.add(FileRows(entry(number), rows))
    assert shard.used_golden() == {"g0", "g1", "g2"}
    shard.add(FileRows(entry(1), (_row(1, golden_key="g9"),)))  # compared again, another golden
    assert shard.used_golden() == {"g0", "g2", "g9"}
    whole: ShardRows[ResultRow, str] = ShardRows("m")
    for number, (rows, _, _) in enumerate(sent):
        whole.add(FileRows(entry(number), rows))
    assert whole.used_golden() == {"g0", "g1", "g2", "g3"}
