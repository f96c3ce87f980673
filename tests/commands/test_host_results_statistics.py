"""``host results --csv`` of a closed session of statistics alone, over several steps."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import pytest

from dumpcmp.commands import host
from dumpcmp.commands.host import StreamedRows, StreamedStatistics, _write_csv_files
from dumpcmp.host.stats_compare import StatsResult
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb

NAMES = [f"0_resnet_{step}_stats_result_1763700000.csv" for step in range(3)]


def _chunks(stub: object, info: pb.SessionInfo, name: str, timeout: float) -> Iterator[bytes]:
    yield f"the file {name}\n".encode()


def _closed(stats: list[StatsResult]) -> tuple[pb.SessionInfo, StreamedRows]:
    info = pb.SessionInfo(session="I3", state=pb.SessionInfo.CLOSED, result_files=NAMES)
    shards = [("", "0", "resnet", "", str(step)) for step in range(len(stats))]
    return info, StreamedRows(["Index"], [], [], [], StreamedStatistics(stats, shards))


def test_csv_of_a_closed_multi_step_statistics_session_holds_its_statistics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(host, "_result_chunks", _chunks)
    stats = [StatsResult(0, "Conv2D", "/c", "/c", "/c:output:0", None) for _ in range(3)]
    info, streamed = _closed(stats)
    written = _write_csv_files(None, info, tmp_path / "i3.csv", streamed, 5.0)  # type: ignore[arg-type]
    assert written == [tmp_path / "i3.csv"]
    with (tmp_path / "i3.csv").open(newline="") as handle:
        table = list(csv.reader(handle))
    assert table[0][:3] == ["Device", "Model", "Step"] and "NPU mean" in table[0], table[0]
    assert len(table) == 4, table
    assert sorted(p.name for p in tmp_path.iterdir()) == ["i3.csv"]


def test_without_stored_statistics_rows_only_the_result_files_are_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(host, "_result_chunks", _chunks)
    info, streamed = _closed([])
    written = _write_csv_files(None, info, tmp_path / "i3.csv", streamed, 5.0)  # type: ignore[arg-type]
    assert [p.name for p in written] == [f"i3.{Path(name).stem}.csv" for name in NAMES]
    assert not (tmp_path / "i3.csv").exists()
    assert (tmp_path / f"i3.{Path(NAMES[1]).stem}.csv").read_text() == f"the file {NAMES[1]}\n"
