"""A session fed statistics dumps (``dump_data: stats``) keeps its statistics rows as data: ``host
results`` counts them and writes them as CSV and HTML, open or closed, and the advisor reads them.

It showed "0 dump files compared, 0 rows" and wrote empty tables: the host stored no statistics row."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from dumpcmp.acl_config import AclConfig, DumpTarget
from dumpcmp.host.stats_compare import STATS_RESULT_COLUMNS
from tests.e2e.agent_host_kit import Processes, dumpcmp, procs_fixture  # noqa: F401 (fixture: procs)

FAULT = "/block2/Add=bias:0.5"
EVERY_STATISTIC = ("Max", "Min", "Avg", "Nan", "Negative Inf", "Positive Inf", "L2norm")


def _acl_json(tmp_path: Path) -> Path:
    dump = tmp_path / "dump"
    dump.mkdir()
    config = AclConfig.build(str(dump), targets=[DumpTarget("small_cnn", ())], mode="output", data="stats",
                             stats=EVERY_STATISTIC, op_switch="off")  # fmt: skip
    config.write(tmp_path / "acl.json")
    return tmp_path / "acl.json"


def _table(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text())))


def test_statistics_rows_are_the_sessions_rows(procs: Processes, tmp_path: Path) -> None:
    host = procs.host(tmp_path)
    agent = procs.agent(
        tmp_path / "agent.log", host, "st", "--model", "zoo:small_cnn", "--sim", "--inject", FAULT,
        "--acl-config", _acl_json(tmp_path), "--state", tmp_path / "state", "--keep-open",
    )  # fmt: skip
    assert agent.wait().code == 0

    # open: the statistics rows so far, as data
    out = tmp_path / "open"
    out.mkdir()
    done = dumpcmp(
        "host", "results", "st", "--host", host.address, "--csv", out / "st.csv", "--html", out / "st.html"
    )
    assert done.code == 0, done.output
    assert "20 compared, 0 not compared yet, 20 rows so far" in done.output
    live = _table(out / "st.csv")
    assert live[0] == list(STATS_RESULT_COLUMNS) and len(live) == 21
    assert [row[0] for row in live[1:]] == [str(i) for i in range(20)]  # Index: the file's place
    assert "block2" in (out / "st.html").read_text()
    advised = dumpcmp("advise", "--host", host.address, "--session", "st", "-o", tmp_path / "advice")
    assert advised.code == 0, advised.output
    assert "first divergence: op #" in advised.output and "statistics move away" in advised.output

    # closed: the session's statistics table, golden-only rows included, the same cells
    assert dumpcmp("host", "close", "st", "--host", host.address).code == 0
    out = tmp_path / "closed"
    out.mkdir()
    done = dumpcmp("host", "results", "st", "--host", host.address, "--csv", out / "st.csv")
    assert done.code == 0, done.output
    assert "session st: closed, 20 dump files compared, 31 rows" in done.output
    closed = _table(out / "st.csv")
    assert closed[1:21] == live[1:]
    assert host.stop().code == 0
