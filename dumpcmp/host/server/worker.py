"""Each open session's comparison (``dumpcmp.host.live.LiveCompare``), in its own thread.

Uploads only queue events (a dump landed, a plan file landed, a run's files were dropped, close);
acknowledgements never wait for a comparison. The worker drains whatever has queued up and then
acts once. The plan (golden, fusion rule) is built when the first dump file is compared, once
the golden data and rule file the session names have arrived; a plan file landing later, or a
replaced run's files going away, re-open the comparison and re-add every stored dump file, so
nothing stale is kept. Plan files come in bursts (a golden directory is many files), so the
worker waits for a burst to pause before re-opening, not once per file. The dump files of one
batch go to the session's runner together (a cluster's: one round trip), their rows are stored
in one transaction.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from dumpcmp.errors import DumpcmpError
from dumpcmp.host.live import LiveCompare
from dumpcmp.host.rows import ResultRow
from dumpcmp.host.server.files import (
    KIND_DIRS,
    RESULTS_DIR,
    drop_cached,
    missing_files,
    remove_file,
    session_dir,
)
from dumpcmp.host.server.store import SessionStore
from dumpcmp.host.server.stored_rows import ShardRow
from dumpcmp.host.session import CompareOutcome
from dumpcmp.host.sinks.table import TableShape
from dumpcmp.host.stats_compare import StatsResult
from dumpcmp.host.summary import InputNames, Tally, nothing_compared, summarize
from dumpcmp.host.verdict import Thresholds
from dumpcmp.host.workers import Runner, compare_files
from dumpcmp.printable import printable, skipped_lines
from dumpcmp.proto._gen.dumpcmp_v1_pb2 import CompareSettings, FileKind
from dumpcmp.proto.walker import directory_group

log = logging.getLogger(__name__)
_STOP_WAIT_S = 10.0
_PLAN_BURST_PAUSE_S = 0.2
_WAITING_RULE = "waiting for the fusion rule"
# The columns of the cells WatchRows sends (every optional one): what a session's ``columns`` say.
_STREAMED_COLUMNS = TableShape.every_column().header()


class Notifier:
    """Wakes row watchers when any session's rows or state change."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._version = 0

    def notify(self) -> None:
        with self._changed:
            self._version += 1
            self._changed.notify_all()

    @property
    def version(self) -> int:
        with self._changed:
            return self._version

    def wait(self, seen: int, timeout: float) -> None:
        with self._changed:
            self._changed.wait_for(lambda: self._version != seen, timeout)


@dataclass(frozen=True, slots=True)
class _Landed:
    kind: int
    path: str


@dataclass(frozen=True, slots=True)
class _Dropped:
    paths: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Replanned:
    """The session's settings were completed: its golden data or rule is now named."""


@dataclass(frozen=True, slots=True)
class _Close:
    done: Future[None]


@dataclass(frozen=True, slots=True)
class _Stop:
    pass


_Event = _Landed | _Dropped | _Replanned | _Close | _Stop
_PLAN_KINDS = (FileKind.GOLDEN, FileKind.FUSION_RULE)


@dataclass(frozen=True, slots=True)
class Plan:
    """Where a session's comparison reads from, resolved from its settings."""

    dump_root: Path
    golden: Path
    fusion_rule: Path | None
    out_dir: Path
    overflow_detection: bool
    needs_golden: bool  # golden data comes as GOLDEN files of the session
    needs_rule: str  # the FUSION_RULE file of the session it names, or ""

    @property
    def inputs(self) -> InputNames:
        """The agent options that gave the session its inputs, for an error saying what to check."""
        return InputNames(
            target="the dump files the agent sent",
            golden="--golden" if self.needs_golden else "--golden-on-host",
            fusion_rule="--fusion-rule-on-host"
            if self.fusion_rule and not self.needs_rule
            else "--fusion-rule",
        )

    @classmethod
    def of(cls, directory: Path, settings: CompareSettings) -> Plan:
        golden = directory / KIND_DIRS[FileKind.GOLDEN]
        if settings.WhichOneof("golden") == "golden_host_path":
            golden = Path(settings.golden_host_path)
        rule: Path | None = None
        if settings.WhichOneof("fusion_rule") == "fusion_rule_name":
            rule = directory / KIND_DIRS[FileKind.FUSION_RULE] / settings.fusion_rule_name
        elif settings.WhichOneof("fusion_rule") == "fusion_rule_host_path":
            rule = Path(settings.fusion_rule_host_path)
        return cls(
            directory / KIND_DIRS[FileKind.DUMP],
            golden,
            rule,
            directory / RESULTS_DIR,
            settings.overflow_detection,
            needs_golden=settings.WhichOneof("golden") != "golden_host_path",
            needs_rule=settings.fusion_rule_name
            if settings.WhichOneof("fusion_rule") == "fusion_rule_name"
            else "",
        )


# A runner for each comparison the worker opens (a cluster runner holds its plan's parts).
NewRunner = Callable[[], Runner]


class SessionWorker:
    """The comparison thread of one open session."""

    def __init__(
        self, data_dir: Path, name: str, store: SessionStore, notifier: Notifier,
        new_runner: NewRunner | None = None,
    ) -> None:  # fmt: skip
        self.name = name
        self._new_runner = new_runner
        self._store = store
        self._notifier = notifier
        self._data_dir = data_dir
        self._directory = session_dir(data_dir, name)
        self._plan = self._stored_plan()
        self._events: queue.Queue[_Event] = queue.Queue()
        self._live: LiveCompare | None = None
        self.problem = ""  # why the comparison could not start, until it can
        # Dump files landing now wait for the session's golden data or rule: nothing reads them
        # soon, so the host need not keep their pages (see ``compares_later``). Asked of the
        # store again only after a plan file landed or the settings changed.
        self._waiting_for_plan = bool(self._missing_plan_files())
        self._plan_changed = False
        # None while the thread runs; then "" (the session closed) or why it stopped: a close
        # asked for after that is answered at once, nobody would take it off the queue.
        self._ended: str | None = None
        self._ending = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"compare-{name}", daemon=True)
        self._thread.start()

    def landed(self, kind: int, path: str) -> None:
        if kind in _PLAN_KINDS:
            self._plan_changed = True
        self._events.put(_Landed(kind, path))

    def dropped(self, paths: tuple[str, ...]) -> None:
        self._events.put(_Dropped(paths))

    def recompare(self) -> None:
        """Compare every stored dump file afresh (a resumed session)."""
        self._events.put(_Dropped(()))

    def replan(self) -> None:
        """Read the session's settings again and compare every stored dump file afresh."""
        self._plan_changed = True
        self._events.put(_Replanned())

    def _stored_plan(self) -> Plan:
        return Plan.of(self._directory, CompareSettings.FromString(self._store.session(self.name).settings))

    def close(self) -> Future[None]:
        done: Future[None] = Future()
        with self._ending:
            if self._ended is None:
                self._events.put(_Close(done))
                return done
        _answer(done, self._ended)
        return done

    def stop(self) -> None:
        self._events.put(_Stop())
        self._thread.join(_STOP_WAIT_S)

    @property
    def compares_later(self) -> bool:
        """Whether a dump file landing now is compared only once the plan's files arrive (the
        uploads then drop its pages as soon as it is durable, and this thread after comparing).
        Asked of the store again when a plan file landed meanwhile: its event may still be
        queued here (a burst of golden files is taken in whole)."""
        if self._waiting_for_plan and self._plan_changed:
            self._plan_changed = False  # before the store is read: a file landing meanwhile asks again
            self._waiting_for_plan = bool(self._missing_plan_files())
        return self._waiting_for_plan

    @property
    def finished(self) -> bool:
        return not self._thread.is_alive()

    def _run(self) -> None:
        ended = "its comparison stopped (the host is stopping, or the session was deleted)"
        try:
            while True:
                batch = self._next_batch()
                if any(isinstance(e, _Stop) for e in batch):
                    return
                self._compare_safely(batch)
                closing = [e for e in batch if isinstance(e, _Close)]
                if closing and self._finish(closing):
                    ended = ""
                    return
        finally:
            self._answer_queued(ended)

    def _answer_queued(self, ended: str) -> None:
        """Answer every close still queued as the thread ends (a second `host close` of a session
        waited until its --timeout, holding a host thread): closed already, or why not."""
        with self._ending:
            self._ended = ended
        while True:
            try:
                event = self._events.get_nowait()
            except queue.Empty:
                return
            if isinstance(event, _Close):
                _answer(event.done, ended)

    def _compare_safely(self, batch: list[_Event]) -> None:
        try:
            self._compare(batch)
        except Exception as exc:  # a bug or a broken store: redone from scratch, said at close
            log.exception("session %s: comparison failed", self.name)
            self._live = None
            self.problem = f"comparison failed: {exc}"

    def _next_batch(self) -> list[_Event]:
        """Everything queued; while plan files are arriving, also what comes before they pause."""
        batch = [self._events.get()]
        bursting = False
        while not isinstance(batch[-1], (_Close, _Stop)):
            # Of the last event only: looking through the whole batch for each was quadratic in it.
            bursting = bursting or (isinstance(batch[-1], _Landed) and batch[-1].kind in _PLAN_KINDS)
            try:
                batch.append(
                    self._events.get(timeout=_PLAN_BURST_PAUSE_S) if bursting else self._events.get_nowait()
                )
            except queue.Empty:
                break
        return batch

    def _compare(self, batch: list[_Event]) -> None:
        landed = [e for e in batch if isinstance(e, _Landed)]
        dumps = [e.path for e in landed if e.kind == FileKind.DUMP]
        if any(isinstance(e, _Replanned) for e in batch):
            self._plan = self._stored_plan()
        stale = any(isinstance(e, (_Dropped, _Replanned)) for e in batch) or any(
            e.kind in _PLAN_KINDS for e in landed
        )
        if self._live is None or stale:
            self._live = None
            # Checked before the session's files are listed: while a session waits for its golden
            # data, every file landing would list them all again (quadratic in the files).
            missing = self._missing_plan_files()
            self._waiting_for_plan = bool(missing)
            if missing:
                if dumps or self._store.holds(self.name, FileKind.DUMP):
                    self.problem = missing  # compared when they arrive
                return
            dumps = [f.path for f in self._store.files(self.name, FileKind.DUMP)]
        if not dumps:
            return
        try:
            if self._live is None:
                self._live = LiveCompare.open(
                    dump_root=self._plan.dump_root,
                    golden=self._plan.golden,
                    fusion_rule=self._plan.fusion_rule,
                    out_dir=self._plan.out_dir,
                    overflow_detection=self._plan.overflow_detection,
                    runner=compare_files if self._new_runner is None else self._new_runner(),
                )
            self.problem = ""
        except DumpcmpError as exc:
            self.problem = str(exc)  # e.g. the rule file has not arrived yet: retried when it does
            return
        self._add(self._live, dumps)

    def _missing_plan_files(self) -> str:
        if (
            self._plan.needs_rule
            and self._store.file(self.name, FileKind.FUSION_RULE, self._plan.needs_rule) is None
        ):
            return f"{_WAITING_RULE} {self._plan.needs_rule}"
        if self._plan.needs_golden and not self._store.holds(self.name, FileKind.GOLDEN):
            return "waiting for golden data"
        return ""

    def _closing_problem(self) -> str:
        """Why the session cannot close; a golden or rule it still waits for says how to send it."""
        if not self.problem:
            return "it holds no dump files"
        if self.problem != self._missing_plan_files():
            return self.problem
        option = (
            f"--fusion-rule {self._plan.needs_rule}"
            if self.problem.startswith(_WAITING_RULE)
            else "--golden DIR"
        )
        return f"{self.problem}: run the agent into this session again with {option} to send it"

    def _add(self, live: LiveCompare, paths: list[str]) -> None:
        added = live.add_many([self._plan.dump_root / path for path in paths])
        for path in paths:
            problem = added.problems.get(self._plan.dump_root / path)
            if problem is not None:
                self.problem = f"{path}: {problem}"
        # A mapping file that landed brings back rows of files that came before it.
        brought = [p.relative_to(self._plan.dump_root).as_posix() for p in (*added.rows, *added.stats)]
        done = [
            path
            for path in dict.fromkeys([*paths, *brought])
            if self._plan.dump_root / path not in added.problems
        ]
        root = self._plan.dump_root
        keys = {path: directory_group((root / path).parent, root) for path in done}  # the live comparison's
        rows = [ShardRow(path, keys[path], row) for path in done for row in added.rows.get(root / path, [])]
        stats = [ShardRow(path, keys[path], row) for path in done for row in added.stats.get(root / path, [])]
        self._store.replace_rows(self.name, done, rows, _STREAMED_COLUMNS if rows else [], stats)
        self._notifier.notify()
        # Read for the last time until the session closes (or is compared afresh): a comparison
        # reading them again then finds them on disk, as a resumed session does.
        drop_cached(self._data_dir, self.name, FileKind.DUMP, paths)

    def _finish(self, closing: list[_Close]) -> bool:
        """Close the comparison and the session; False (the session stays open) when it failed."""
        unfinished = self._store.drop_unfinished_runs(self.name)
        for f in unfinished.dropped:
            remove_file(self._data_dir, self.name, f.kind, tuple(f.path.split("/")))
        if unfinished.dropped:
            self._live = None  # their rows go: compared again without them
        if self._live is None:  # failed or never started: once more, from scratch
            self._compare_safely([_Dropped(())])
        try:
            if self._live is None:
                raise DumpcmpError(self._closing_problem())
            outcome = self._live.close()
            replaced = {
                run: _NOT_ENDED if run in unfinished.replaced else _BY_LATER_RUN
                for run in sorted(self._store.state(self.name).replaced_runs)
            }
            # Files gone from the disk at a start and never sent again: the results lack them.
            missing = [
                name
                for name in missing_files(self._data_dir, self.name)
                if self._store.file(self.name, *_wire_file(name)) is None
            ]
            final = _final_table(_hunt_passes(outcome, self._data_dir, self._store, self.name), self._plan,
                                 replaced, missing)  # fmt: skip
            final = _with_hunts(final, self._data_dir, self._store, self.name)
            self._store.close_session(
                self.name, final.rows, final.columns, final.result_files, final.summary,
                final.nothing_compared, final.stats,
            )  # fmt: skip
        except Exception as exc:  # the closer hears why; the session stays open for a retry
            self._live = None
            for event in closing:
                event.done.set_exception(exc)
            return False
        self._notifier.notify()
        for event in closing:
            event.done.set_result(None)
        return True


# Why a run's files do not count, in the closed session's summary. A run replaced by a rerun may
# have finished (--keep-open, or a kill during the close): "interrupted" was untrue of it.
_BY_LATER_RUN = "by a later run of its model and device"
_NOT_ENDED = "not ended when the session closed"


def _answer(done: Future[None], ended: str) -> None:
    """A close's answer once the worker has ended: done ("", the session closed) or why not."""
    if ended:
        done.set_exception(DumpcmpError(ended))
    else:
        done.set_result(None)


@dataclass(frozen=True, slots=True)
class _FinalTable:
    """What a closed session stores: its rows, columns, result file names, summary, the error line
    of a comparison that compared nothing ("" when something was) and its statistics rows."""

    rows: list[ShardRow[ResultRow]]
    columns: list[str]
    result_files: list[str]
    summary: str
    nothing_compared: str
    stats: list[ShardRow[StatsResult]]


def _hunt_passes(outcome: CompareOutcome, data_dir: Path, store: SessionStore, name: str) -> CompareOutcome:
    """``outcome`` with each shard of a hunt's pass labelled "pass N": its summary lines (first
    divergence, where statistics move away) are of that pass's capture (of a few ops, whose first
    op's input may come from outside it), not the session's verdict (the hunt's, above them)."""
    from dumpcmp.host.server.hunts import hunt_passes  # it reads this module's Plan

    passes = hunt_passes(data_dir, store, name)
    if not passes:
        return outcome
    shards = []
    for shard in outcome.shards:
        key = shard.key
        number = passes.get((key.session, key.device, key.model, key.model_id))
        shards.append(shard if number is None else dataclasses.replace(shard, label=f"pass {number}"))
    return dataclasses.replace(outcome, shards=tuple(shards))


def _with_hunts(final: _FinalTable, data_dir: Path, store: SessionStore, name: str) -> _FinalTable:
    """``final`` with the session's hunts first in its summary: what each concluded, and which
    pass each capture is."""
    from dumpcmp.host.server.hunts import hunt_lines  # it reads this module's Plan

    lines = hunt_lines(data_dir, store, name)
    if not lines:
        return final
    summary = "\n".join([*map(printable, lines), final.summary])
    return dataclasses.replace(final, summary=summary)


def _wire_file(name: str) -> tuple[int, str]:
    """The kind and wire path of ``KIND_DIR/path`` (as ``record_missing`` names files)."""
    directory, _slash, path = name.partition("/")
    kind = next(k for k, d in KIND_DIRS.items() if d == directory)
    return kind, path


def _final_table(
    outcome: CompareOutcome, plan: Plan, replaced_runs: dict[str, str], missing: Sequence[str] = ()
) -> _FinalTable:
    rows = [
        ShardRow(_dump_file_of(row, shard.dump_files, plan.dump_root), shard.key, row)
        for shard in outcome.shards
        for row in shard.rows
    ]
    stats = [
        ShardRow(_relative(row.dump_file, plan.dump_root), shard.key, row)
        for shard in outcome.shards
        for row in shard.stats_rows
    ]
    columns = _STREAMED_COLUMNS if rows else []
    names: list[str] = []
    for shard in outcome.shards:
        names += [p.name for p in (shard.result_file, shard.xlsx_file, shard.stats_file) if p is not None]
    names += [p.name for p in outcome.detail_files]
    tally = Tally.of(outcome, Thresholds())
    lines = summarize(outcome, Thresholds(), tally)
    if missing:  # first: not an all-clear, whatever the lines below say of what was compared
        lines.insert(
            0,
            f"incomplete: {len(missing)} file{'s' if len(missing) > 1 else ''} the host had acknowledged "
            f"went missing from its disk and never came again (e.g. {missing[0]}): these results lack them",
        )
    lines += skipped_lines([f"{p}: {why}" for p, why in outcome.skipped])
    if replaced_runs:  # the results describe one complete run, and say which did not count, and why
        runs = ", ".join(f"{run} ({why})" for run, why in replaced_runs.items())
        lines.append(f"replaced runs (their files dropped): {runs}")
    # A remote client splits the summary at newlines: one in a path must not make two lines.
    summary = "\n".join(map(printable, lines))
    nothing = nothing_compared(outcome, Thresholds(), plan.inputs, tally) or ""
    return _FinalTable(rows, columns, names, summary, nothing, stats)


def _dump_file_of(row: ResultRow, dump_files: tuple[Path, ...], dump_root: Path) -> str:
    if row.index is None or row.index >= len(dump_files):
        return ""  # a golden-only row
    return _relative(dump_files[row.index], dump_root)


def _relative(dump_file: Path | None, dump_root: Path) -> str:
    """A dump file as the store names it: relative to the dump root; "" for none (golden-only)."""
    return "" if dump_file is None else dump_file.relative_to(dump_root).as_posix()
