"""``dumpcmp advise``: the advisor's findings for a result table, from a file or a host session.

``advise RESULT`` reads a result ``.csv``/``.xlsx`` (or every result table of a directory) and
prints each finding on one line, then writes ``{prefix}advisor_{stamp}.txt`` and ``.json``
beside the result (or into ``-o``). ``advise --host ADDR --session NAME`` does the same for a
host session's result files (a closed session) or its rows so far (an open one). ``compare
--advisor`` and the demo call ``advise_file`` on the results they have just written.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dumpcmp.commands._flags import StrictCommand
from dumpcmp.commands._output import console, fail, user_errors
from dumpcmp.commands._remote import (
    DEFAULT_TIMEOUT,
    ClientCert,
    ClientKey,
    Timeout,
    TlsCa,
    TokenFile,
    channel_options,
)
from dumpcmp.commands._report_flags import (
    VERDICT_DEFAULTS,
    CosineThreshold,
    Graph,
    Html,
    KlThreshold,
    ModelExplorer,
    MreThreshold,
    RedThreshold,
    RmseThreshold,
    StatsThreshold,
    threshold_problem,
    warn_of_strangers,
)
from dumpcmp.errors import DumpcmpError

if TYPE_CHECKING:
    from dumpcmp.host.report.advisor import Advice, Worded
    from dumpcmp.host.report.files import ReportRequest
    from dumpcmp.host.report.grading import GradeThresholds
    from dumpcmp.host.report.graph import OpGraph
    from dumpcmp.host.report.shards import AdvisedRun, RunAdvice
    from dumpcmp.host.report.table import ResultTable

__all__ = ["advise_file", "advise_table", "print_advice", "register", "result_files", "result_files_named"]

# result_{ts}.csv, or a batch shard's {device}_{model}_{step}_result_{ts}.csv (and _1, _2 … copies, whose
# advisor files keep the suffix).
_RESULT_NAME = re.compile(r"^(?P<prefix>.*?)result_(?P<stamp>\d{14}(?:_\d+)?)$")


def result_files(directory: Path) -> list[Path]:
    """The result tables in ``directory``: every ``*result_*.csv`` (statistics results
    ``*stats_result_*`` included), and an ``.xlsx`` with no CSV twin."""
    found = sorted(
        p
        for p in directory.iterdir()
        if p.is_file() and p.suffix.lower() in (".csv", ".xlsx") and _is_result_name(p.stem)
    )
    stems = {p.stem for p in found if p.suffix.lower() == ".csv"}
    return [p for p in found if p.suffix.lower() == ".csv" or p.stem not in stems]


def _stats_twin(path: Path) -> Path | None:
    """``{prefix}stats_result_{ts}`` beside a tensor result ``{prefix}result_{ts}``; None for a
    statistics result or another name."""
    named = _RESULT_NAME.match(path.stem)
    if named is None or named["prefix"].endswith("stats_"):
        return None
    return path.with_name(f"{named['prefix']}stats_{path.name[len(named['prefix']) :]}")


def readable_results(paths: Sequence[Path]) -> list[tuple[ResultTable, Path]]:
    """The result tables at ``paths``, read; a tensor result that holds only golden-only rows
    is left out when its statistics result is among ``paths`` (a statistics dump writes both,
    and only the statistics table has the comparison)."""
    from dumpcmp.host.report.table import read_result

    return _compared_tables([(read_result(path), path) for path in paths])


def _compared_tables(tables: Sequence[tuple[ResultTable, Path]]) -> list[tuple[ResultTable, Path]]:
    """``tables`` less each tensor result of golden-only rows whose statistics result is among them."""
    given = {path for _, path in tables}
    return [(table, path) for table, path in tables if table.targets() or _stats_twin(path) not in given]


def advise_results(
    paths: Sequence[Path],
    thresholds: GradeThresholds | None = None,
    graphs: Mapping[Path, OpGraph] | None = None,
) -> list[AdvisedRun]:
    """Print the findings of the result tables at ``paths`` (``compare --advisor``): one block per
    run, the shards of a run (steps, ranks, tokens) as one; each block under a heading naming
    its run when there are several (a statistics result beside the tensor result). ``graphs``:
    each result's fusion rule, where known. Returns each run's tables and advice, for its reports."""
    from dumpcmp.host.report.shards import AdvisedRun, run_groups

    runs = run_groups(readable_results(paths), lambda t: t[1].stem, lambda t: t[1].parent)
    advised = []
    for run in runs:
        (_, first), many = run[0], len(run) > 1
        # Set apart from the summary above (which has a first-divergence line of its own).
        heading = "advisor findings:"
        if len(runs) > 1:
            named = _run_path(first.parent, [p.stem for _, p in run]) if many else first
            heading = f"advisor findings for {named}:"
        tables = [table for table, _ in run]
        graph = (graphs or {}).get(first)
        advice, text, data = advise_tables(tables, [p.stem for _, p in run], first.parent, thresholds, graph)
        print_advice(advice, text, data, heading=heading)
        advised.append(AdvisedRun(tuple(p for _, p in run), tuple(tables), advice))
    return advised


def _run_path(directory: Path, stems: Sequence[str]) -> str:
    """A run of several results named by what its files share: ``DIR/result_{ts} (N shards)``;
    one shard's tensor and statistics results by the first."""
    from dumpcmp.host.report.shards import ShardName

    names = [ShardName.of(stem) for stem in stems]
    shards = len({n.shard for n in names})
    if shards == 1:
        return str(directory / stems[0])
    run = next((n.run for n in names if not n.statistics), names[0].result)
    return f"{directory / run} ({shards} shards)"


def result_files_named(directory: Path, names: Sequence[str]) -> list[Path]:
    """The result tables among ``names`` (a host session's result files), as paths in ``directory``."""
    return [
        directory / Path(n).name
        for n in names
        if Path(n).suffix.lower() == ".csv" and _is_result_name(Path(n).stem)
    ]


def _is_result_name(stem: str) -> bool:
    return _RESULT_NAME.match(stem) is not None


def advise_file(
    path: Path, out_dir: Path | None = None, thresholds: GradeThresholds | None = None
) -> tuple[Advice, Path, Path]:
    """Advise the result table at ``path``; its advisor files go beside it (or into ``out_dir``)."""
    from dumpcmp.host.report.table import read_result

    return advise_table(read_result(path), path.stem, out_dir or path.parent, thresholds)


def advise_table(
    table: ResultTable,
    result_stem: str,
    out_dir: Path,
    thresholds: GradeThresholds | None = None,
    graph: OpGraph | None = None,
) -> tuple[Advice, Path, Path]:
    """Advise ``table`` (the result named ``result_stem``) and write its advisor files in ``out_dir``.

    A result ``{prefix}result_{stamp}`` gets ``{prefix}advisor_{stamp}.txt``/``.json``, so the
    two sort together; another name gets ``{name}_advisor_{now}``.
    """
    from dumpcmp.host.report.advisor import advise, write_advice

    advice = advise(table, thresholds, graph)
    text, data = write_advice(advice, out_dir, *_advisor_name(result_stem))
    return advice, text, data


def _advisor_name(result_stem: str) -> tuple[str, str]:
    """(stamp, prefix) of the advisor files of the result ``result_stem``."""
    named = _RESULT_NAME.match(result_stem)
    if named is not None:
        return named["stamp"], named["prefix"]
    return time.strftime("%Y%m%d%H%M%S"), f"{result_stem}_"


def advise_tables(
    tables: Sequence[ResultTable],
    stems: Sequence[str],
    out_dir: Path,
    thresholds: GradeThresholds | None = None,
    graph: OpGraph | None = None,
    *,
    name: str | None = None,
) -> tuple[Advice | RunAdvice, Path, Path]:
    """Advise the tables of one run (the results named ``stems``) and write the advisor files in
    ``out_dir``: one table as ``advise_table``; several as one (``shards.advise_run``: a shard's
    tensor and statistics results as one walk, the shards of a run of several as one
    ``RunAdvice``), in the advisor files its first result's name gives for one shard, the run's
    own result name for several (``advisor_{stamp}`` for ``0_net_{step}_result_{stamp}``,
    ``compare_advisor_{stamp}`` for ``rank{R}_token{T}_compare_result_{stamp}``); ``name``, the
    stem of one file that held every shard's rows, names them after that file instead."""
    if len(tables) == 1:
        return advise_table(tables[0], stems[0], out_dir, thresholds, graph)
    from dumpcmp.host.report.advisor import write_advice
    from dumpcmp.host.report.shards import advise_run

    run = advise_run(tables, stems, thresholds, graph)
    text, data = write_advice(
        run, out_dir, *_advisor_name(name or (stems[0] if len(run.shards) == 1 else run.run))
    )
    return run, text, data


def print_advice(advice: Worded, text: Path, data: Path, heading: str = "") -> None:
    """The findings, one per line, then where they were written."""
    out = console()
    if heading:
        out.print(heading, markup=False)
    for line in advice.lines():
        out.print(line, markup=False)
    out.print(f"advisor: {text}, {data}", markup=False)


# A table to advise: the table, its result's file stem, the directory beside it, its name to show,
# and for a shard of a table of several, that table's file stem (its run's advisor files are named
# after it).
_ToAdvise = tuple["ResultTable", str, Path, str, "str | None"]


def advise_command(
    ctx: typer.Context,
    result: Annotated[
        str | None,  # text, not Path: Path("") would quietly be the current directory
        typer.Argument(
            help="A result .csv or .xlsx, or a directory of them (not with --host).",
            show_default=False,
            metavar="RESULT",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output-path",
            help="Where the advisor files go (default: beside the result; the current directory "
            "for a host session).",
            show_default=False,
        ),
    ] = None,
    host: Annotated[
        str | None,
        typer.Option("--host", help="Advise a session of this host (HOST:PORT).", show_default=False),
    ] = None,
    session: Annotated[
        str | None, typer.Option("--session", help="The host session to advise.", show_default=False)
    ] = None,
    tls_ca: TlsCa = None,
    client_cert: ClientCert = None,
    client_key: ClientKey = None,
    token_file: TokenFile = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    html: Html = False,
    model_explorer: ModelExplorer = False,
    graph: Graph = None,
    # compare's own: a result made with other thresholds is re-judged the way it was made.
    cosine_threshold: CosineThreshold = VERDICT_DEFAULTS.cosine,
    red_threshold: RedThreshold = VERDICT_DEFAULTS.relative_euclidean,
    kl_threshold: KlThreshold = VERDICT_DEFAULTS.kl,
    rmse_threshold: RmseThreshold = VERDICT_DEFAULTS.rmse,
    mre_threshold: MreThreshold = VERDICT_DEFAULTS.mean_relative,
    stats_threshold: StatsThreshold = VERDICT_DEFAULTS.statistics,
) -> None:
    """Say in words what went wrong and where, from a result table (CSV, xlsx or a host session).

    The thresholds are compare's: give the ones the result was compared with, or the advice
    judges its rows by the defaults.
    """
    from dumpcmp.host.report.files import ReportRequest
    from dumpcmp.host.report.grading import GradeThresholds
    from dumpcmp.host.report.graph import graph_for
    from dumpcmp.host.report.shards import run_groups
    from dumpcmp.host.verdict import Thresholds
    from dumpcmp.outputs import prepare_output_dir

    bad_limit = threshold_problem(ctx)
    if bad_limit is not None:
        fail(bad_limit)
    verdict = Thresholds(
        cosine_threshold, red_threshold, kl_threshold, rmse_threshold, mre_threshold, stats_threshold
    )
    limits = GradeThresholds(verdict=verdict)
    tables: list[_ToAdvise] = []
    still_open = False
    session_graph: OpGraph | None = None
    with user_errors():
        if (host is None) != (session is None):
            raise DumpcmpError("--host and --session go together: give both, or neither")
        if (host is None) == (result is None):
            raise DumpcmpError("give a RESULT file or directory, or --host and --session (not both)")
        if result is not None and not result.strip():
            raise DumpcmpError("RESULT is an empty path: give a result .csv/.xlsx or a directory of them")
        tables = _read_path(Path(result)) if result is not None else []
        op_graph = graph_for(graph) if graph is not None else None  # the advisor's walk reads it too
    if host is not None and session is not None:
        from dumpcmp.commands.host import session_tables

        options = channel_options(host, tls_ca, client_cert, client_key, token_file, timeout)
        fetched = session_tables(options, session)
        still_open = fetched.still_open
        # The session's own rule, unless --graph names another: a capture of a few ops (a hunt's
        # window) is read in its network, so an input made outside it is not "the network's input".
        session_graph = fetched.graph if op_graph is None else None
        for line in fetched.hunts:  # first: each table below is one pass's capture, not the hunt
            console().print(line, markup=False)
        with user_errors():
            tables = _read_cells(fetched.tables)
    # Every table is read before anything is written: a bad one leaves no output behind.
    with user_errors():
        if output is not None:
            prepare_output_dir(output, "-o")
        reports = ReportRequest(html=html, model_explorer=model_explorer, graph=graph, verdict=verdict)
        runs = run_groups(tables, lambda t: t[1], lambda t: t[2])
        for run in runs:
            _advise_run(run, output, reports, op_graph, limits, several=len(runs) > 1, own=session_graph)
    if still_open:
        # Its dump files still coming may hold the first divergence: these findings are not final.
        console().print(
            f"session {session} is open: the findings cover only its rows so far (not final until it closes)",
            markup=False,
        )


def _advise_run(
    run: Sequence[_ToAdvise],
    output: Path | None,
    reports: ReportRequest,
    graph: OpGraph | None,
    thresholds: GradeThresholds,
    *,
    several: bool,
    own: OpGraph | None = None,
) -> None:
    """Advise one run's tables (its shards as one), print the findings and write its reports."""
    from dumpcmp.host.report.advisor import Advice
    from dumpcmp.host.report.files import write_reports, write_run_reports
    from dumpcmp.host.report.shards import RunAdvice

    (table, stem, _, name, whole), out_dir = run[0], output or run[0][2]
    heading = ""
    if several:
        heading = f"result {_run_path(Path(name).parent, [t[1] for t in run]) if len(run) > 1 else name}"
        heading = f"result {name}" if whole is not None else heading
    if graph is not None:
        names = (row.op_name for t in run for row in t[0].targets())
        warn_of_strangers(graph, names, "the advisor walks the result's ops alone")
    graph = graph or own  # the host session's rule: its own network, no stranger to warn of
    advice, text, data = advise_tables(
        [t[0] for t in run], [t[1] for t in run], out_dir, thresholds, graph, name=whole
    )
    print_advice(advice, text, data, heading=heading)
    if not reports.wanted:
        return
    if isinstance(advice, RunAdvice):
        stems = [out_dir / t[1] for t in run]
        written = write_run_reports(
            advice, [t[0] for t in run], stems, reports, graphs=[graph] * len(run), name=whole
        )
    else:
        assert isinstance(advice, Advice)  # one table: its own advice
        written = write_reports(table, out_dir / stem, reports, advice=advice, graph=graph)
    for path in written:
        console().print(f"report: {path}", markup=False)


def _read_path(result: Path) -> list[_ToAdvise]:
    from dumpcmp.host.report.table import read_result

    if not result.is_dir():
        return _shards((read_result(result), result))
    files = result_files(result)
    if not files:
        raise DumpcmpError(f"{result}: no result table in this directory (result_*.csv or .xlsx)")
    # Every shard: a batch compare writes one per device/model/step.
    return [shard for read in readable_results(files) for shard in _shards(read)]


def _shards(read: tuple[ResultTable, Path]) -> list[_ToAdvise]:
    """The table at a path, or, for a table of several shards led by their columns (``host results
    --csv`` of a multi-step session), each shard's: named as a batch compare names its shard
    results (``{device}_{model}_{step}_result_{stamp}``), so that they are advised as one run,
    whose advisor files are named after the file."""
    from dumpcmp.host.report.table import split_shards

    table, path = read
    split = split_shards(table)
    if len(split) == 1:
        return [(table, path.stem, path.parent, str(path), None)]
    named = _RESULT_NAME.match(path.stem)
    stamp = named["stamp"] if named is not None else time.strftime("%Y%m%d%H%M%S")
    return [(shard, f"{label}_result_{stamp}", path.parent, str(path), path.stem) for label, shard in split]


def _read_cells(fetched: Sequence[tuple[str, Sequence[Sequence[str]]]]) -> list[_ToAdvise]:
    """A host session's tables; their advice goes to the current directory unless -o says."""
    from dumpcmp.host.report.table import refuse_cut_table, table_from_cells

    tables = [
        (table_from_cells(refuse_cut_table([list(row) for row in cells], name), source=name), Path(name))
        for name, cells in fetched
    ]
    return [(table, path.stem, Path("."), str(path), None) for table, path in _compared_tables(tables)]


def register(app: typer.Typer) -> None:
    app.command("advise", cls=StrictCommand)(advise_command)
