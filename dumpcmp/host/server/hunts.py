"""The host's side of a hunt (``agent run --hunt``, the NextCapture RPC): which pass ran which
capture as which run, and the planner (``dumpcmp.host.hunt``) asked for the next step.

A hunt is one model on one device of a session, named by the agent's hunt id (the token of every
pass's run id, ``proto.runs``). Its bookkeeping is a json file in the session's directory
(``hunts/{model}@dev{N}.json``, replaced atomically): the hunt id, each finished pass (index, run
id, capture) and the capture planned next. The planner is deterministic in the passes, so every
call rebuilds the passes' files from the store and asks it again; a call repeated after a lost
answer gets the same answer.

A begin (``finished_run`` "") drops every pass run of that model and device that the session
holds (an earlier hunt's, its agent killed between passes), files and rows: a rerun restarts the
hunt cleanly and never mixes passes of two hunts. The golden data, fusion rule and inputs come
before the begin as a run of their own (``{model}.hunt``, not a pass): the session takes one run's
golden data, so a hunt into a session holding another run's (another model's) has them refused
and stops before it begins, and a restarted hunt's replace the killed one's.

The planner runs on the calling handler thread (the sync server has no event loop); a pass's
comparison is bounded by the planner's byte bound of a pass.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc

from dumpcmp.errors import DumpcmpError, SessionNotFound
from dumpcmp.host.server.files import KIND_DIRS, session_dir
from dumpcmp.host.server.names import BadWireName, check_session_name
from dumpcmp.host.server.store import SessionStore, StoredFile
from dumpcmp.host.server.worker import Plan
from dumpcmp.outputs import atomic_path, sync_dir
from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb
from dumpcmp.proto.runs import (
    CAPTURED_DATA,
    HUNT_PROTOCOL,
    capture_ops,
    hunt_pass_label,
    run_slot,
    run_token,
    slot_of,
)

if TYPE_CHECKING:  # the planner (and numpy, the golden index) only once a hunt asks
    from dumpcmp.host.hunt import Capture, PassFiles, Verdict

__all__ = ["HuntRefused", "Hunts", "hunt_lines", "hunt_passes"]

_HUNTS_DIR = "hunts"
_HUNT_ID = re.compile(r"[0-9a-f]{8,32}")  # a run token (proto.runs)
_PASS = re.compile(r"(?P<model>.+)\.hunt(?P<index>\d+)@dev(?P<device>\d+)")


class HuntRefused(DumpcmpError):
    """A NextCapture the host will not answer: the call ends with ``code`` and this one line."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class _Pass:
    index: int
    run_id: str
    capture: Capture


@dataclass(frozen=True)
class _Hunt:
    """One hunt's bookkeeping, as its json file holds it."""

    hunt: str
    max_passes: int
    pass_bytes: int
    passes: tuple[_Pass, ...]
    planned: Capture | None  # the next pass's capture; None once the verdict is in
    # How it ended, in one line (kind, culprit, passes); "" until then. Said by the session's close
    # beside the passes' rows, which are each pass's capture compared on its own.
    verdict: str = ""


# Drops the files of runs that no longer count, off the disk and out of the comparison.
DropFiles = Callable[[str, Sequence[StoredFile]], None]


class Hunts:
    def __init__(self, data_dir: Path, store: SessionStore, drop_files: DropFiles) -> None:
        self._data_dir = data_dir
        self._store = store
        self._drop_files = drop_files
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._guard = threading.Lock()

    def next_capture(self, request: pb.NextCaptureRequest) -> pb.CapturePlan:
        """The answer to NextCapture, or HuntRefused."""
        if request.protocol != HUNT_PROTOCOL:
            raise HuntRefused(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"hunt protocol {request.protocol} is unknown to this host (it speaks {HUNT_PROTOCOL}); "
                "use an agent and a host of the same dumpcmp version",
            )
        try:
            name = check_session_name(request.session)
        except BadWireName as exc:
            raise HuntRefused(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None
        if not _HUNT_ID.fullmatch(request.hunt) or request.device < 0 or not request.model:
            raise HuntRefused(
                grpc.StatusCode.INVALID_ARGUMENT, "a hunt needs its id (8-32 hex digits), model and device"
            )
        plan = self._plan(name)
        key = slot_of(request.model, request.device)
        with self._guard:
            lock = self._locks.setdefault((name, key), threading.Lock())
        with lock:  # one hunt's calls one at a time: each reads and replaces its bookkeeping
            if request.finished_run:
                hunt = self._finished(name, key, request)
            else:
                hunt = self._begin(name, key, request)
            return self._step(name, key, plan, hunt)

    def _plan(self, name: str) -> Plan:
        """The session's golden data and rule, checked to be there: a hunt plans with both. (A
        closed or closing session the service refused, atomically with the close's start.)"""
        try:
            record = self._store.session(name)
        except SessionNotFound as exc:
            raise HuntRefused(grpc.StatusCode.NOT_FOUND, str(exc)) from None
        settings = pb.CompareSettings.FromString(record.settings)
        plan = Plan.of(session_dir(self._data_dir, name), settings)
        sent = not plan.needs_golden or self._store.holds(name, pb.GOLDEN)
        if settings.WhichOneof("golden") is None or not sent:
            raise HuntRefused(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"session {name} holds no golden data: a hunt steers the capture by it "
                "(give --golden DIR or --golden-on-host DIR, or run the model with --sim)",
            )
        if plan.fusion_rule is None or not plan.fusion_rule.is_file():
            raise HuntRefused(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"session {name} holds no fusion rule: a hunt plans its captures over the model's graph "
                "(give --fusion-rule FILE or --fusion-rule-on-host FILE, or run the model with --sim)",
            )
        return plan

    def _begin(self, name: str, key: str, request: pb.NextCaptureRequest) -> _Hunt:
        """A new hunt: every pass run of its model and device goes (an earlier hunt's)."""
        model, device = key.rsplit("@dev", 1)
        stale = [r for r in self._store.live_runs(name) if _pass_of(r, model, device)]
        if stale:
            self._drop_files(name, self._store.replace_runs(name, stale).dropped)
        return _Hunt(request.hunt, request.max_passes, request.pass_bytes, (), None)

    def _finished(self, name: str, key: str, request: pb.NextCaptureRequest) -> _Hunt:
        """The hunt with ``request.finished_run`` recorded as the pass it planned."""
        hunt = self._read(name, key)
        run = request.finished_run
        if hunt is None or hunt.hunt != request.hunt:
            raise HuntRefused(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"session {name} has no hunt {request.hunt} of {key} (a newer hunt replaced it, "
                "or the host lost its bookkeeping); run the hunt again",
            )
        if hunt.passes and hunt.passes[-1].run_id == run:
            return hunt  # asked again (an answer lost on the way): the same answer
        planned = hunt.planned
        if planned is None:
            raise HuntRefused(
                grpc.StatusCode.FAILED_PRECONDITION, f"hunt {request.hunt} in session {name} has ended"
            )
        label = hunt_pass_label(key.rsplit("@dev", 1)[0], planned.index)
        expected = slot_of(label, request.device)
        if run_slot(run) != expected or run_token(run) != request.hunt:
            raise HuntRefused(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"run {run} is not pass {planned.index} of hunt {request.hunt} (a run of {expected} "
                f"with token {request.hunt})",
            )
        state = self._store.run_state(name, run)
        if state != "ended":
            why = {
                None: "the host never received its start",
                "open": "it has not ended (the host has not received its END)",
            }.get(state, f"it was {state}")
            raise HuntRefused(grpc.StatusCode.FAILED_PRECONDITION, f"run {run} of session {name}: {why}")
        passes = (*hunt.passes, _Pass(planned.index, run, planned))
        return _Hunt(hunt.hunt, hunt.max_passes, hunt.pass_bytes, passes, None)

    def _step(self, name: str, key: str, plan: Plan, hunt: _Hunt) -> pb.CapturePlan:
        """Ask the planner over every pass so far; the hunt's bookkeeping keeps what it said."""
        from dumpcmp.host.fusion_rules import load_rules
        from dumpcmp.host.golden import open_golden
        from dumpcmp.host.hunt import Capture, HuntLimits, full_capture_bytes, next_step

        assert plan.fusion_rule is not None  # _plan checked it
        limits = HuntLimits(max_passes=hunt.max_passes or HuntLimits.max_passes, pass_bytes=hunt.pass_bytes)
        try:
            rules = load_rules(plan.fusion_rule)
            passes = [self._files(name, p) for p in hunt.passes]
            step = next_step(rules, open_golden(plan.golden), passes, limits)
            full = full_capture_bytes(rules)
        except DumpcmpError as exc:
            raise HuntRefused(grpc.StatusCode.FAILED_PRECONDITION, f"session {name}: hunt: {exc}") from None
        planned = step if isinstance(step, Capture) else None
        said = "" if isinstance(step, Capture) else _verdict_line(step)
        self._write(name, key, _Hunt(hunt.hunt, hunt.max_passes, hunt.pass_bytes, hunt.passes, planned, said))
        answer = pb.CapturePlan(protocol=HUNT_PROTOCOL, full_capture_bytes=full)
        if isinstance(step, Capture):
            answer.pass_index = step.index
            answer.capture.CopyFrom(_capture_message(step))
        else:
            answer.pass_index = len(hunt.passes)
            answer.verdict.CopyFrom(_verdict_message(step))
        return answer

    def _files(self, name: str, done: _Pass) -> PassFiles:
        """A finished pass's dump files and model outputs (in output order) on the host's disk."""
        from dumpcmp.host.hunt import PassFiles

        directory = session_dir(self._data_dir, name)
        own = [f for f in self._store.files(name) if f.run_id == done.run_id]
        dumps = tuple(directory / KIND_DIRS[pb.DUMP] / f.path for f in own if f.kind == pb.DUMP)
        outputs = sorted((f for f in own if f.kind == pb.OUTPUT), key=lambda f: _output_index(f.path))
        outputs_dir = directory / KIND_DIRS[pb.OUTPUT]
        return PassFiles(done.capture, dumps, tuple(outputs_dir / f.path for f in outputs))

    # ---- bookkeeping

    def _path(self, name: str, key: str) -> Path:
        return session_dir(self._data_dir, name) / _HUNTS_DIR / f"{key}.json"

    def _read(self, name: str, key: str) -> _Hunt | None:
        try:
            raw = json.loads(self._path(name, key).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            unreadable = f"session {name}: the hunt's bookkeeping is unreadable: {exc}"
            raise HuntRefused(grpc.StatusCode.INTERNAL, unreadable) from None
        return _hunt_of(raw)

    def _write(self, name: str, key: str, hunt: _Hunt) -> None:
        path = self._path(name, key)
        with atomic_path(path) as temp, temp.open("w", encoding="utf-8") as out:
            json.dump(asdict(hunt), out)
            out.flush()
            os.fsync(out.fileno())
        sync_dir(path.parent)


def _pass_of(run_id: str, model: str, device: str) -> bool:
    """Is ``run_id`` a hunt pass of ``model`` (as run ids spell it) on device ``device``?"""
    found = _PASS.fullmatch(run_slot(run_id))
    return found is not None and found["model"] == model and found["device"] == device


def _output_index(path: str) -> int:
    """The output's place from its name, ``{run_id}/{index}.output.npy``."""
    head = path.rsplit("/", 1)[-1].split(".", 1)[0]
    return int(head) if head.isdigit() else 1 << 31


def _hunt_of(raw: dict[str, Any]) -> _Hunt:
    from dumpcmp.host.hunt import Capture

    def capture(fields: dict[str, Any]) -> Capture:
        return Capture(
            int(fields["index"]), str(fields["data"]), str(fields["mode"]), tuple(fields["layers"]),
            str(fields["why"]), int(fields["expected_bytes"]), tuple(fields.get("stats", ())),
        )  # fmt: skip

    passes = tuple(_Pass(p["index"], p["run_id"], capture(p["capture"])) for p in raw["passes"])
    planned = None if raw["planned"] is None else capture(raw["planned"])
    return _Hunt(raw["hunt"], raw["max_passes"], raw["pass_bytes"], passes, planned, raw.get("verdict", ""))


def _verdict_line(verdict: Verdict) -> str:
    """The verdict as the agent's ``verdict:`` line says it."""
    originals = list(verdict.originals) if list(verdict.originals) != [verdict.culprit] else []
    culprit = f": {verdict.culprit}" if verdict.culprit else ""
    if originals:
        culprit += f" (original ops: {', '.join(originals)})"
    return f"{verdict.kind}{culprit}, after {verdict.passes} pass{'' if verdict.passes == 1 else 'es'}"


def hunt_lines(data_dir: Path, store: SessionStore, name: str) -> list[str]:
    """What the session's hunts concluded and which pass each capture (a run, a dump directory
    of its own) is, for its closed summary: its rows are the passes' captures compared one by one,
    whose first divergence need not be the culprit the hunt pinned (a statistics pass's, say)."""
    lines: list[str] = []
    for path, hunt, passes in _hunts(data_dir, store, name):
        if hunt is None:
            lines.append(f"hunt of {path.stem}: its bookkeeping is unreadable")
            continue
        ended = f"verdict {hunt.verdict}" if hunt.verdict else "no verdict (it ended before one)"
        lines.append(
            f"hunt of {path.stem} (hunt {hunt.hunt}): {ended}; the rows below are its passes' captures, "
            "each compared on its own"
        )
        for done, dirs in passes:
            where = ", ".join(f"{KIND_DIRS[pb.DUMP]}/{d}" for d in dirs) or "no dump file kept"
            lines.append(f"  pass {done.index}: {_capture_words(done.capture)}: run {done.run_id}: {where}")
    return lines


def hunt_passes(data_dir: Path, store: SessionStore, name: str) -> dict[tuple[str, ...], int]:
    """Each dump directory of a hunt's pass (``{time}/{device}/{model}/{model id}``, split), with
    the pass's number: its rows' first divergence is that pass's window's."""
    return {
        tuple(d.split("/")): done.index
        for _, hunt, passes in _hunts(data_dir, store, name)
        for done, dirs in passes
        for d in dirs
    }


def _hunts(
    data_dir: Path, store: SessionStore, name: str
) -> list[tuple[Path, _Hunt | None, list[tuple[_Pass, list[str]]]]]:
    """Each hunt's bookkeeping file, the hunt (None where unreadable), and its passes, each with
    the dump directories its run's files are in (``{time}/{device}/{model}/{model id}``)."""
    directory = session_dir(data_dir, name) / _HUNTS_DIR
    if not directory.is_dir():
        return []
    held = store.files(name, pb.DUMP)
    found: list[tuple[Path, _Hunt | None, list[tuple[_Pass, list[str]]]]] = []
    for path in sorted(directory.glob("*.json")):
        try:
            hunt = _hunt_of(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            found.append((path, None, []))
            continue
        passes = [
            (done, sorted({"/".join(f.path.split("/")[:4]) for f in held if f.run_id == done.run_id}))
            for done in hunt.passes
        ]
        found.append((path, hunt, passes))
    return found


def _capture_words(capture: Capture) -> str:
    return f"{CAPTURED_DATA.get(capture.data, capture.data)} of {capture_ops(capture.layers)}"


def _capture_message(capture: Capture) -> pb.Capture:
    return pb.Capture(
        data=capture.data, mode=capture.mode, layers=capture.layers, why=capture.why,
        expected_bytes=capture.expected_bytes, stats=capture.stats,
    )  # fmt: skip


def _verdict_message(verdict: Verdict) -> pb.HuntVerdict:
    return pb.HuntVerdict(
        kind=verdict.kind, culprit=verdict.culprit, originals=verdict.originals, evidence=verdict.evidence,
        passes=verdict.passes,
    )  # fmt: skip
