"""Row verdicts: workers judge their batch's rows, the summary counts what they sent, and a plain
compare never makes a worker's rows back."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from dumpcmp.host import row_batch, workers
from dumpcmp.host.core import FileRows
from dumpcmp.host.metrics import MetricValues, compare_arrays
from dumpcmp.host.offline import run_compare
from dumpcmp.host.request import CompareRequest
from dumpcmp.host.row_batch import FileBatch
from dumpcmp.host.row_verdicts import (
    COMPARED,
    DIVERGES,
    MISSING,
    SEEN,
    TARGET,
    UNREADABLE,
    UNSEEN,
    RowVerdicts,
    row_flags,
    verdicts_of,
)
from dumpcmp.host.rows import NO_GOLDEN, ResultRow
from dumpcmp.host.session import NumberedRows
from dumpcmp.host.summary import Tally, summarize
from dumpcmp.host.verdict import Thresholds
from dumpcmp.proto.names import parse_dump_name
from dumpcmp.proto.walker import DumpEntry, GroupKey
from tests.host.test_compare_summary import (
    _all_nan,
    _corrupt,
    _fault_from_block1,
    _nan_at_3_of,
    dump_file_of,
    noisy,
    write_tree,
)

forked = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers are Linux-only")


def _row(
    index: int | None, tensor: str, shift: float | None, *, readable: bool = True, reason: str = ""
) -> ResultRow:
    """Op ``index``'s tensor: compared against values ``shift`` away (None: not compared, why)."""
    if shift is None:
        metrics = MetricValues.unavailable(reason)
    else:
        x = np.linspace(1, 2, 50, dtype=np.float32)
        metrics = compare_arrays(x + np.float32(shift), x)
    truth = NO_GOLDEN if index is None else f"op{index}"
    return ResultRow(index, None, "Add", f"op{index}", "DT_FLOAT", None, truth, "DT_FLOAT", None,
                     f"op{index}:{tensor}", (50,), None, metrics, dump_readable=readable)  # fmt: skip


ROWS = [
    _row(0, "output:0", 0.0),
    _row(1, "input:0", None, reason="no golden for input 0"),
    _row(1, "output:0", None, reason="golden file x not found"),
    _row(2, "output:0", None, readable=False, reason="corrupt dump file"),
    _row(3, "output:0", 5.0),
    _row(None, "output:0", None, reason="golden only"),
]


def test_each_row_gets_the_verdict_of_the_one_verdict_module() -> None:
    flags = [row_flags(row, Thresholds()) for row in ROWS]
    assert flags[0] == TARGET | COMPARED | SEEN
    assert flags[1] == TARGET | MISSING  # an input without numbers hides nothing
    assert flags[2] == TARGET | MISSING | UNSEEN
    assert flags[3] == TARGET | UNREADABLE | UNSEEN
    assert flags[4] == TARGET | COMPARED | SEEN | DIVERGES
    assert flags[5] == 0  # golden-only: counted as such, nothing else
    verdicts = RowVerdicts.of(ROWS, Thresholds())
    assert verdicts.missing == ("no golden for input 0", "golden file x not found")
    assert verdicts.unseen_before(4) == [3, 2]  # nearest first, back to the last output with numbers
    assert verdicts.unseen_before(1) == []


@pytest.mark.parametrize(("start", "stop"), [(0, 6), (0, 2), (2, 3), (2, 5), (5, 6), (3, 3)])
def test_a_slice_of_verdicts_keeps_its_own_reasons(start: int, stop: int) -> None:
    verdicts = RowVerdicts.of(ROWS, Thresholds())
    assert verdicts.sliced(start, stop) == RowVerdicts.of(ROWS[start:stop], Thresholds())


def _batch_files(files: list[list[ResultRow]], thresholds: Thresholds) -> list[row_batch.BatchRows]:
    verdicts = RowVerdicts.of([r for rows in files for r in rows], thresholds)
    batch = FileBatch.of([(rows, (), None) for rows in files], verdicts)
    return [rows for rows, _, _ in batch.files()]


def test_verdicts_of_files_are_those_of_their_rows_wherever_they_were_judged() -> None:
    thresholds = Thresholds()
    files = [ROWS[:1], ROWS[1:3], ROWS[3:4], ROWS[4:5]]
    sent = _batch_files(files[:2], thresholds) + _batch_files(files[2:3], thresholds)
    mixed = [*sent, files[3], (ROWS[5],)]
    assert verdicts_of(mixed, thresholds) == RowVerdicts.of(ROWS, thresholds)
    # Verdicts judged by other thresholds are judged again here.
    strict = Thresholds(cosine=0.999999)
    assert verdicts_of(mixed, strict) == RowVerdicts.of(ROWS, strict)


def test_a_batch_rows_equal_the_rows_and_are_made_once() -> None:
    (first, second) = _batch_files([ROWS[:2], ROWS[2:5]], Thresholds())
    assert len(second) == 3 and second.golden_keys() == ["", "", ""]
    # Equal, NaN metrics aside (a NaN made again is no NaN given: not equal to itself)
    assert repr(second) == repr(tuple(ROWS[2:5])) and repr(tuple(first)) == repr(tuple(ROWS[:2]))
    assert first[0] == ROWS[0] and second[-1] == ROWS[4]
    assert first.batch.rows() is second.batch.rows()


def _request(tmp_path: Path, case: str) -> CompareRequest:
    golden = write_tree(tmp_path / "golden")
    overflow = False
    if case == "clean":
        target = write_tree(tmp_path / "npu")
    elif case == "unreadable culprit":
        target = write_tree(tmp_path / "npu", _fault_from_block1)
        _corrupt(dump_file_of(target, "block1/conv"))
    elif case == "golden missing before":
        target = write_tree(tmp_path / "npu", _fault_from_block1)
        dump_file_of(golden, "block1/conv").unlink()
    elif case == "nan same places":
        target = write_tree(tmp_path / "npu", _nan_at_3_of(1))
        golden = write_tree(tmp_path / "golden2", _nan_at_3_of(1))
    elif case == "all nan":
        target = write_tree(tmp_path / "npu", _all_nan(2))
        golden = write_tree(tmp_path / "golden2", _all_nan(2))
    else:
        target, overflow = write_tree(tmp_path / "npu", noisy(0.06)), True
    return CompareRequest(target, golden, out_dir=tmp_path / "out", overflow_detection=overflow)


CASES = ["clean", "unreadable culprit", "golden missing before", "nan same places", "all nan", "noise"]


@forked
@pytest.mark.parametrize("case", CASES)
def test_the_summary_of_worker_verdicts_is_the_summary_of_the_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    request = _request(tmp_path, case)
    thresholds = request.thresholds
    here = run_compare(replace(request, out_dir=tmp_path / "j1", jobs=1))
    monkeypatch.setattr(workers, "PROCESS_MIN_FILES", 0)  # four files: forked workers all the same
    sent = run_compare(replace(request, out_dir=tmp_path / "j2", jobs=2))
    assert isinstance(sent.shards[0].rows, NumberedRows)
    assert all(isinstance(f.rows, row_batch.BatchRows) for f in sent.shards[0].rows.files)
    assert repr(Tally.of(sent, thresholds)) == repr(Tally.of(here, thresholds))  # NaN metrics: by repr
    lines = [summarize(outcome, thresholds) for outcome in (here, sent)]
    assert lines[0] == [line.replace("/j2/", "/j1/") for line in lines[1]]


@forked
def test_a_plain_compare_never_makes_a_worker_rows_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    request = _request(tmp_path, "clean")
    expected = run_compare(replace(request, out_dir=tmp_path / "j1", jobs=1))
    monkeypatch.setattr(workers, "PROCESS_MIN_FILES", 0)

    def never(self: object) -> tuple[ResultRow, ...]:
        raise AssertionError("a worker's rows were made back")

    monkeypatch.setattr(row_batch._Batch, "rows", never)
    outcome = run_compare(replace(request, out_dir=tmp_path / "j2", jobs=2))
    lines = summarize(outcome, request.thresholds)
    assert lines[-1] == "no divergence: all 4 compared tensors are within the thresholds"
    (shard,) = outcome.shards
    (written,) = expected.shards
    assert shard.result_file is not None and written.result_file is not None
    assert shard.result_file.read_bytes() == written.result_file.read_bytes()


def test_a_shard_table_numbers_each_row_by_its_file_wherever_it_is_read() -> None:
    def file(number: int, rows: Sequence[ResultRow]) -> FileRows[ResultRow]:
        name = f"Add.op{number}.{number}.1.{1763700000000000 + number}"
        return FileRows(DumpEntry(Path(name), parse_dump_name(name), GroupKey("0", "m", "1", "0")), rows)

    sent = _batch_files([ROWS[:1], [], ROWS[1:3]], Thresholds())
    files = [file(0, sent[0]), file(1, sent[1]), file(2, ()), file(3, sent[2]), file(4, ROWS[3:5])]
    table = NumberedRows(files, ROWS[5:])
    read = [table[at] for at in range(-len(table), len(table))]  # one at a time, each file made alone
    made = list(NumberedRows(files, ROWS[5:]))  # all at once
    assert [r.index for r in made] == [0, 3, 3, 4, 4, None]
    assert repr(read) == repr(made * 2) and repr(table[1:3]) == repr(tuple(made[1:3]))
    assert table[5:] == (ROWS[5],)
    with pytest.raises(IndexError):
        table[6]


@forked
def test_a_divergence_makes_back_only_the_batches_it_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    golden = write_tree(tmp_path / "golden")
    target = write_tree(tmp_path / "npu", lambda i, values: values + 1.0 if i == 2 else values)
    monkeypatch.setattr(workers, "PROCESS_MIN_FILES", 0)  # four files, four batches (one each)
    made: list[object] = []
    rows_of = row_batch._Batch.rows

    def counted(self: row_batch._Batch) -> tuple[ResultRow, ...]:
        made.append(self)
        return rows_of(self)

    monkeypatch.setattr(row_batch._Batch, "rows", counted)
    outcome = run_compare(CompareRequest(target, golden, out_dir=tmp_path / "out", jobs=2))
    lines = summarize(outcome, Thresholds())
    assert any(line.startswith("first divergence: step 0, index 2 Conv2D block2/conv") for line in lines)
    # Its own file's batch, and the one before (whether its last row is of the same file)
    assert len({id(batch) for batch in made}) == 2
