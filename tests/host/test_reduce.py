"""``dumpcmp reduce`` logic and reduced data: statistics against numpy, durability, corrupt files, watch."""

from __future__ import annotations

import math
import shutil
import threading
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

from dumpcmp.commands.reduce import watch_and_reduce
from dumpcmp.errors import ConfigError, FormatError, OutputError
from dumpcmp.fakes.torchair import simulate_torchair
from dumpcmp.host.torchair import reduce as reduce_module
from dumpcmp.host.torchair.reduce import Reducer, parse_keep, tensor_summary
from dumpcmp.host.torchair.reduced_stats import reduced_in, reduced_tree
from dumpcmp.proto.codec import read_dump
from dumpcmp.proto.reduced import REDUCED_FILE, ReducedFile, append_reduced, read_reduced

CLOCK = 1_732_410_000_000_000


@pytest.fixture
def sim_tree(tmp_path: Path) -> Path:
    root = tmp_path / "run"
    simulate_torchair("zoo:small_cnn", root, faults=["/block2/Add=nan:0.2"], clock=lambda: CLOCK, pid=1)
    return root


def _originals(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix != ".txt" and p.name != REDUCED_FILE)


def _expected(path: Path) -> list[tuple[str, int, np.ndarray]]:
    """Every tensor of an original as the comparison loads it, read the plain way."""
    if path.suffix == ".npy":
        io = "input" if ".INPUT." in path.name else "output"
        return [(io, int(path.name.split(".")[-3]), np.load(path))]
    dump = read_dump(path)
    return [("input", t.index, t.logical()) for t in dump.inputs] + [
        ("output", t.index, t.logical()) for t in dump.outputs
    ]


def _same(got: float | None, want: float) -> bool:
    assert got is not None
    return (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_reduced_stats_equal_numpys_on_the_originals(sim_tree: Path) -> None:
    originals = _originals(sim_tree)
    expected = {p: _expected(p) for p in originals}
    sizes = sum(p.stat().st_size for p in originals)
    report = Reducer().reduce_tree(sim_tree)
    assert (report.reduced, report.freed, report.kept) == (len(originals), sizes, [])
    assert _originals(sim_tree) == []
    found = reduced_tree(sim_tree)
    assert sorted(found) == originals
    saw_nan = False
    for path, tensors in expected.items():
        stats = found[path]
        assert stats.kind == ("fx" if path.suffix == ".npy" else "ge")
        assert len(stats.tensors) == len(tensors)
        for io, index, array in tensors:
            got = stats.get(io, index)
            assert got is not None, (path.name, io, index)
            values = array.astype(np.float64)
            assert (got.dtype, got.shape) == (array.dtype.name, array.shape)
            assert got.crc32 == zlib.crc32(np.ascontiguousarray(array).tobytes())
            assert _same(got.max, float(np.max(values))) and _same(got.min, float(np.min(values)))
            assert _same(got.mean, float(np.mean(values)))
            assert _same(got.l2norm, float(np.linalg.norm(values)))
            saw_nan |= math.isnan(got.max or 0.0)
    assert saw_nan  # the injected NaNs survive the round trip as NaN


def test_keep_subset(sim_tree: Path) -> None:
    Reducer(parse_keep("crc32, MIN")).reduce_tree(sim_tree)
    stats = next(iter(reduced_tree(sim_tree).values())).tensor
    assert stats.min is not None and stats.crc32 is not None
    assert (stats.max, stats.mean, stats.l2norm) == (None, None, None)
    line = (next(sim_tree.rglob(REDUCED_FILE))).read_text().splitlines()[1]
    assert '"max"' not in line and '"min"' in line


@pytest.mark.parametrize("text", ["min,median", "", " , "])
def test_keep_refuses_unknown_statistics(text: str) -> None:
    with pytest.raises(ConfigError, match="choose from min,max,mean,l2norm,crc32"):
        parse_keep(text)


@pytest.mark.parametrize("text", ["min,min", "min,MAX,max"])
def test_keep_refuses_a_statistic_named_twice(text: str) -> None:
    with pytest.raises(ConfigError, match=r"more than once; name each once$"):
        parse_keep(text)


def test_original_deleted_only_after_its_summary_is_on_disk(
    sim_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deleted: list[str] = []
    real_unlink = Path.unlink

    def checked_unlink(self: Path, missing_ok: bool = False) -> None:
        if self.name != REDUCED_FILE:
            assert self.name in read_reduced(self.parent).entries, f"{self.name} deleted before its summary"
            deleted.append(self.name)
        real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", checked_unlink)
    count = len(_originals(sim_tree))
    Reducer().reduce_tree(sim_tree)
    assert len(deleted) == count


def test_failed_summary_write_keeps_the_original(sim_tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full_disk(directory: Path, entry: ReducedFile) -> Path:
        raise OutputError(f"cannot write {directory / REDUCED_FILE}: No space left on device")

    monkeypatch.setattr(reduce_module, "append_reduced", full_disk)
    first = _originals(sim_tree)[0]
    with pytest.raises(OutputError, match="No space left"):
        Reducer().reduce(first)
    assert first.is_file()


def test_corrupt_files_are_kept_and_reported(sim_tree: Path) -> None:
    originals = _originals(sim_tree)
    dump = next(p for p in originals if p.suffix != ".npy")
    npy = next(p for p in originals if p.suffix == ".npy")
    dump.write_bytes(dump.read_bytes()[:-7])  # truncated
    npy.write_bytes(b"\x93NUMPY garbage")
    report = Reducer().reduce_tree(sim_tree)
    assert sorted(p for p, _ in report.kept) == sorted([dump, npy])
    reasons = dict(report.kept)
    assert "truncat" in reasons[dump].lower() or "bytes" in reasons[dump]
    assert ".npy" in reasons[npy] or "header" in reasons[npy]
    assert dump.is_file() and npy.is_file()
    assert report.reduced == len(originals) - 2
    assert dump.name not in reduced_in(dump.parent)[0]


def test_rerun_is_idempotent_and_finishes_a_lost_deletion(sim_tree: Path, tmp_path: Path) -> None:
    victim = _originals(sim_tree)[0]
    backup = tmp_path / "backup"
    shutil.copyfile(victim, backup)
    Reducer().reduce_tree(sim_tree)
    jsonl = victim.parent / REDUCED_FILE
    lines = jsonl.read_text().count("\n")
    again = Reducer().reduce_tree(sim_tree)
    assert (again.reduced, again.freed, again.kept) == (0, 0, [])
    shutil.copyfile(backup, victim)  # as if the deletion had been lost in a crash
    third = Reducer().reduce_tree(sim_tree)
    assert third.reduced == 1 and not victim.exists()
    assert jsonl.read_text().count("\n") == lines  # the summary on disk was not written twice


def test_torn_last_line_is_skipped_and_cut(tmp_path: Path) -> None:
    summary = tensor_summary(np.array([1.0, np.inf, -np.inf], np.float32), ("max", "min", "mean", "l2norm"))
    append_reduced(tmp_path, ReducedFile("a", "fx", 10, (summary,)))
    with (tmp_path / REDUCED_FILE).open("ab") as handle:
        handle.write(b'{"name":"b","kind":"fx","si')  # an append cut short
    assert list(read_reduced(tmp_path).entries) == ["a"]
    append_reduced(tmp_path, ReducedFile("c", "fx", 10, (summary,)))
    entries = read_reduced(tmp_path).entries
    assert list(entries) == ["a", "c"]
    stats = entries["c"].tensors[0].stats
    assert stats["max"] == math.inf and stats["min"] == -math.inf and math.isnan(float(stats["mean"] or 0))
    assert "Infinity" in (tmp_path / REDUCED_FILE).read_text()  # strict JSON: no bare Infinity/NaN


def test_a_damaged_line_is_skipped_and_named_the_others_read(tmp_path: Path) -> None:
    summary = tensor_summary(np.array([1.0, 2.0], np.float32), ("max",))
    for name in ("a", "b", "c"):
        append_reduced(tmp_path, ReducedFile(name, "fx", 10, (summary,)))
    jsonl = tmp_path / REDUCED_FILE
    lines = jsonl.read_text().splitlines(keepends=True)
    lines[2] = lines[2].replace('"tensors":[', '"tensors":[{"io":')  # bit rot in b's record
    lines.insert(3, "garbage\n")  # a line that shows no name
    jsonl.write_text("".join(lines))
    found = read_reduced(tmp_path)
    assert list(found.entries) == ["a", "c"]
    assert [(d.number, d.name) for d in found.damaged] == [(3, "b"), (4, None)]
    assert str(found.damaged[0]).startswith(f"{REDUCED_FILE} line 3: not a reduced-data record (")
    append_reduced(tmp_path, ReducedFile("b", "fx", 10, (summary,)))  # reduced again: repaired
    assert [d.name for d in read_reduced(tmp_path).damaged] == [None]


def test_a_damaged_header_refuses_the_file(tmp_path: Path) -> None:
    (tmp_path / REDUCED_FILE).write_text('{"format": "other"}\n')
    with pytest.raises(FormatError, match=f"{REDUCED_FILE}: line 1: not a reduced-data header"):
        read_reduced(tmp_path)


def test_empty_tensor(tmp_path: Path) -> None:
    got = tensor_summary(np.zeros((0, 3), np.float16), ("max", "min", "mean", "l2norm", "crc32"))
    assert got.stats == {"max": None, "min": None, "mean": None, "l2norm": 0.0, "crc32": 0}
    assert got.shape == (0, 3)


def _wait(condition: object, timeout: float = 20.0) -> None:
    ends = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < ends, "timed out"
        time.sleep(0.05)


def test_watch_reduces_files_as_they_become_whole(sim_tree: Path, tmp_path: Path) -> None:
    source = _originals(sim_tree)
    dump = next(p for p in source if p.suffix != ".npy")
    npy = next(p for p in source if p.suffix == ".npy")
    watched = tmp_path / "msprobe_ge_dump"  # a TorchAir run's: the watch refuses offline dumps
    token = watched / "0"
    token.mkdir(parents=True)
    stop = threading.Event()
    reducer = Reducer()
    result: list[object] = []
    thread = threading.Thread(
        target=lambda: result.append(watch_and_reduce(watched, reducer, stop=stop, quiet=0.2))
    )
    thread.start()
    try:
        shutil.copyfile(dump, token / dump.name)
        data = npy.read_bytes()
        growing = token / npy.name
        with growing.open("wb") as handle:  # an npy written slowly, as torch's dump thread may
            handle.write(data[: len(data) // 2])
            handle.flush()
            _wait(lambda: not (token / dump.name).exists())
            time.sleep(0.6)  # well past the quiet time: still incomplete, so still there
            assert growing.exists()
            handle.write(data[len(data) // 2 :])
        _wait(lambda: not growing.exists())
        left = token / ("Add.Add_9.1.0." + "1" * 16)
        left.write_bytes(dump.read_bytes()[:100])  # never completes
    finally:
        stop.set()
        thread.join(timeout=20)
    assert not thread.is_alive()
    report = result[0]
    assert report is reducer.report
    assert reducer.report.reduced == 2
    assert [p for p, _ in reducer.report.kept] == [left]
    assert "incomplete" in reducer.report.kept[0][1]
    assert set(reduced_in(token)[0]) == {dump.name, npy.name}
