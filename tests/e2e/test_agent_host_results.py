"""``dumpcmp host results`` of a session of several steps: one table whose rows say their shard,
no column that is NaN everywhere, and an HTML report with the network of the session's rule."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import openpyxl

from tests.e2e.agent_host_kit import (  # noqa: F401 (fixture: procs)
    Processes,
    assert_csv_is_the_offline_tables,
    dumpcmp,
    offline_results,
    procs_fixture,
)

FAULT = "/block2/Add=bias:0.5"


def _table(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text())))


def _results(address: str, session: str, out: Path, *formats: str) -> str:
    """``host results`` writing each of ``formats`` (csv, xlsx, html) as ``out/SESSION.FORMAT``."""
    out.mkdir(exist_ok=True)
    args = [a for f in formats for a in (f"--{f}", out / f"{session}.{f}")]
    done = dumpcmp("host", "results", session, "--host", address, *args)
    assert done.code == 0, done.output
    return done.output


def test_results_of_a_session_of_three_steps_say_each_rows_step(procs: Processes, tmp_path: Path) -> None:
    host = procs.host(tmp_path)
    agent = procs.agent(
        tmp_path / "agent.log", host, "m1", "--model", "zoo:small_cnn", "--sim", "--steps", "3",
        "--inject", FAULT, "--state", tmp_path / "state", "--keep-open",
    )  # fmt: skip
    assert agent.wait().code == 0

    # open: the rows so far, one table led by the shard columns
    _results(host.address, "m1", tmp_path / "open", "csv", "xlsx", "html")
    live = _table(tmp_path / "open" / "m1.csv")
    assert live[0][:3] == ["Device", "Model", "Step"]
    assert {row[2] for row in live[1:]} == {"0", "1", "2"}
    keys = [(row[2], row[live[0].index("NPUDump")], row[live[0].index("TensorIndex")]) for row in live[1:]]
    assert len(keys) == len(set(keys))  # the same tensor of two steps is two told-apart rows
    assert not [c for i, c in enumerate(live[0]) if all(row[i] == "NaN" for row in live[1:])]
    book = openpyxl.load_workbook(tmp_path / "open" / "m1.xlsx", read_only=True)
    try:
        assert [c.value for c in next(book.worksheets[0].iter_rows(max_row=1))] == live[0]
    finally:
        book.close()
    html = (tmp_path / "open" / "m1.html").read_text()
    assert "No network graph" not in html and "/block2/Add" in html
    # the advisor looks across the steps' tables as one run, as at a closed session's result files
    advised = dumpcmp("advise", "--host", host.address, "--session", "m1", "-o", tmp_path / "advice")
    assert advised.code == 0, advised.output
    assert advised.output.startswith("shards: 3 (steps 0-2), diverging: 3 (steps 0-2)")
    assert advised.output.count("advisor: ") == 1

    # closed: the same rows, value for value the offline compare of the files the host holds
    assert dumpcmp("host", "close", "m1", "--host", host.address).code == 0
    shown = _results(host.address, "m1", tmp_path / "closed", "csv", "html")
    assert "session m1: closed" in shown
    offline = offline_results(host.session_dir("m1"), tmp_path / "offline")
    assert len(offline) == 3
    assert_csv_is_the_offline_tables((tmp_path / "closed" / "m1.csv").read_bytes(), offline)
    assert "No network graph" not in (tmp_path / "closed" / "m1.html").read_text()
    assert host.stop().code == 0
