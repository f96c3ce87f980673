"""Fault harness: seeded random SIGKILLs of the agent, the host or both, then rerun or restart.

    python bench/faults.py                      # 50 trials, seed 0, in a temporary directory
    python bench/faults.py --trials 8 --seed 3 --dir /tmp/faults --keep

Each trial draws (from its own seeded random generator) a scenario, a victim and a moment:

* ``model``: ``dumpcmp agent run --model zoo:small_cnn --sim`` (1 to 3 steps, one fault injected);
* ``watch``: ``dumpcmp agent run --watch DIR`` of a finished simulated dump, with its golden
  data and rule;
* ``close``: the model run again, killed once every dump file has landed on the host (so while
  the agent ends its run and closes the session);

the victim is the agent, the host (``dumpcmp host serve``) or both, SIGKILLed at a random moment
of the run. Then the host is restarted on its port and data directory, and the agent's command
run again until it exits 0 (at most three times). The trial holds when:

* every tensor is there exactly once: the closed session lists exactly the files of the run that
  finished (its local files, ``--keep-run``; or the watched directory), byte for byte;
* its values are a clean run's: the session's result tables are those of an uninterrupted run of
  the same command (time stamps aside), and those ``dumpcmp compare`` writes for the host's tree;
* no temporary or orphan file: nothing in ``.incoming``, no file on the host's disk that the
  session does not list, no empty directory left by a replaced run;
* nothing acknowledged is missing: every file of the agent's journal is on the host.

Not a test (``tests/e2e/test_faults.py`` runs a few trials): it prints one line per trial and
how many held. Every process a trial starts is killed when it ends.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.e2e, from anywhere

from tests.e2e.agent_host_kit import (
    Background,
    HostProcess,
    dumpcmp,
    files_under,
    host_results,
    offline_results,
    run_files,
    session_info,
    start_dumpcmp,
)

SESSION = "f"
FAULT = "/block2/Add=bias:0.5"
SCENARIOS = ("model", "watch", "close")
VICTIMS = ("agent", "host", "both")
RERUNS = 3
WAIT_S = 300.0
_KEPT = re.compile(r"^run (\S+): its local files are in (\S+)$", re.MULTILINE)
_CLOSED = "is closed and its results are final"  # a rerun's refusal, once the session was closed
_STAMP = re.compile(rb"\d{16}")  # dump and golden file names' µs time stamps: another run, others


@dataclass(frozen=True)
class Reference:
    """What every trial is held to: a finished simulated dump to watch, and clean runs' results."""

    sim: Path  # `dumpcmp sim run` output: npu/, golden/, fusion_rule.json
    model_results: dict[int, dict[str, bytes]]  # by step count, time stamps blanked
    watch_results: dict[str, bytes]
    model_seconds: float  # how long a clean one-step model run took, agent start to exit

    @property
    def dump_files(self) -> int:
        """Dump files of one step of the model."""
        return sum(len(names) for _d, _s, names in os.walk(self.sim / "npu"))


@dataclass(frozen=True)
class Trial:
    scenario: str
    victim: str
    steps: int
    delay: float  # seconds into the run (close: after the last dump file landed)
    broken: tuple[str, ...]  # invariants that did not hold; () when the trial held

    def line(self, index: int) -> str:
        what = f"{self.scenario:5} steps {self.steps} kill {self.victim:5} at {self.delay:5.2f} s"
        return f"trial {index:3}: {what}: " + (
            "held" if not self.broken else "BROKEN: " + "; ".join(self.broken)
        )


def _agent_args(host: HostProcess, scenario: str, steps: int, root: Path, ref: Reference) -> list[object]:
    args: list[object] = ["agent", "run", "--host", host.address, "--session", SESSION, "--give-up", WAIT_S]
    if scenario == "watch":
        args += ["--watch", root / "dump", "--golden", ref.sim / "golden", "--fusion-rule"]
        return [*args, ref.sim / "fusion_rule.json", "--until-idle", 0, "--quiet-time", 0.05]
    args += ["--model", "zoo:small_cnn", "--sim", "--inject", FAULT, "--steps", steps]
    return [*args, "--state", root / "state", "--keep-run"]


def _blanked(results: dict[str, bytes]) -> dict[str, bytes]:
    return {name: _STAMP.sub(b"T", data) for name, data in results.items()}


def _session_results(host: HostProcess) -> dict[str, bytes]:
    info = session_info(host.address, SESSION)
    return _blanked(host_results(host.address, SESSION, list(info.result_files)))


def reference(root: Path, steps_counts: tuple[int, ...] = (1, 2, 3)) -> Reference:
    """The simulated dump the watch trials stream, and the results of clean runs to hold trials
    to (model runs of each of ``steps_counts`` steps, and a watch)."""
    sim = root / "sim"
    made = dumpcmp("sim", "run", "zoo:small_cnn", "--out", sim, "--inject", FAULT)
    assert made.code == 0, made.output
    model: dict[int, dict[str, bytes]] = {}
    seconds = 0.0
    for steps in steps_counts:
        run_root = root / f"clean-model-{steps}"
        host = HostProcess(run_root / "host" / "data", run_root / "host" / "logs").start()
        try:
            started = time.monotonic()
            done = dumpcmp(*_agent_args(host, "model", steps, run_root, Reference(sim, {}, {}, 0.0)))
            seconds = seconds or time.monotonic() - started
            assert done.code == 0, done.output
            model[steps] = _session_results(host)
        finally:
            host.kill()
    run_root = root / "clean-watch"
    shutil.copytree(sim / "npu", run_root / "dump")
    host = HostProcess(run_root / "host" / "data", run_root / "host" / "logs").start()
    try:
        done = dumpcmp(*_agent_args(host, "watch", 1, run_root, Reference(sim, {}, {}, 0.0)))
        assert done.code == 0, done.output
        watch = _session_results(host)
    finally:
        host.kill()
    return Reference(sim, model, watch, seconds)


def run_trial(rng: random.Random, root: Path, ref: Reference) -> Trial:
    """One randomly drawn trial in ``root`` (new)."""
    scenario, victim, steps = rng.choice(SCENARIOS), rng.choice(VICTIMS), rng.randint(1, 3)
    delay = rng.uniform(0.0, 0.4) if scenario == "close" else rng.uniform(0.0, ref.model_seconds * steps)
    return trial(scenario, victim, steps, delay, root, ref)


def trial(scenario: str, victim: str, steps: int, delay: float, root: Path, ref: Reference) -> Trial:
    """Kill ``victim`` ``delay`` seconds into a ``scenario`` run, restart and rerun, check; every
    process it starts is gone when it returns."""
    host = HostProcess(root / "host" / "data", root / "host" / "logs").start()
    agents: list[Background] = []
    try:
        if scenario == "watch":
            shutil.copytree(ref.sim / "npu", root / "dump")
        args = _agent_args(host, scenario, steps, root, ref)
        agents.append(start_dumpcmp(root / "agent0.log", *args))
        _wait_for_the_moment(scenario, delay, host, agents[0], ref, steps)
        if victim in ("agent", "both"):
            agents[0].kill()
        if victim in ("host", "both"):
            host.kill()
            host.start()  # the same port and data directory
        last = agents[0]
        for attempt in range(1, RERUNS + 1):
            if last.process.poll() is None:
                last.process.wait(timeout=WAIT_S)
            if last.process.returncode == 0:
                break
            last = start_dumpcmp(root / f"agent{attempt}.log", *args)
            agents.append(last)
        broken = _check(host, scenario, steps, root, ref, last)
    finally:
        for agent in agents:
            agent.kill()
        if host.current is not None and host.current.process.poll() is None:
            host.kill()
    return Trial(scenario, victim, steps, delay, tuple(broken))


def _wait_for_the_moment(
    scenario: str, delay: float, host: HostProcess, agent: Background, ref: Reference, steps: int
) -> None:
    """Until the kill: ``delay`` seconds into the run, or after the last dump file landed (close)."""
    if scenario == "close":
        want = ref.dump_files * steps
        dumps = host.session_dir(SESSION) / "dump"
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline and agent.process.poll() is None:
            if sum(len(names) for _d, _s, names in os.walk(dumps)) >= want:
                break
            time.sleep(0.005)
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline and agent.process.poll() is None:
        time.sleep(0.005)


def _check(
    host: HostProcess, scenario: str, steps: int, root: Path, ref: Reference, last: Background
) -> list[str]:
    """The invariants that did not hold."""
    from dumpcmp.host.server.files import INCOMING_DIR, KIND_DIRS
    from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb

    done = last.wait(timeout=WAIT_S)
    closed_before = _CLOSED in done.output  # the killed agent's close had gone through: final
    if done.code != 0 and not closed_before:
        return [f"the last agent run exited {done.code}: {done.output.strip().splitlines()[-1:]}"]
    broken: list[str] = []
    info = session_info(host.address, SESSION)
    if info.state != pb.SessionInfo.CLOSED:
        broken.append("the session is not closed")
    want: dict[int, dict[str, bytes]]
    if scenario == "watch":
        want = {pb.DUMP: files_under(root / "dump"), pb.GOLDEN: files_under(ref.sim / "golden")}
        want[pb.FUSION_RULE] = {"fusion_rule.json": (ref.sim / "fusion_rule.json").read_bytes()}
        expected = ref.watch_results
    else:
        kept = _KEPT.search(done.output)
        if closed_before:
            # The killed agent's close went through: the session holds its run, whose local files
            # the rerun removed (a killed agent's). One run, whole: one {time}/{device} tree of a
            # clean run's size, and (below) a clean run's results.
            dumps = [f.path for f in info.files if f.kind == pb.DUMP]
            trees = {tuple(path.split("/")[:2]) for path in dumps}
            if len(trees) != 1 or len(dumps) != ref.dump_files * steps:
                broken.append(f"the closed session's {len(dumps)} dump files are not one whole run")
            want = {}
        elif kept is None:
            return [*broken, "the last run did not name its local files"]
        else:
            want = run_files(Path(kept.group(2)))
        expected = ref.model_results[steps]
    directory = host.session_dir(SESSION)
    listed: dict[int, list[str]] = {kind: [] for kind in KIND_DIRS}
    for f in info.files:
        listed[f.kind].append(f.path)
    for kind, files in want.items():
        name = KIND_DIRS[kind]
        if len(listed[kind]) != len(set(listed[kind])):
            broken.append(f"{name}: a file listed twice")
        if sorted(listed[kind]) != sorted(files):
            broken.append(f"{name}: the session lists {len(listed[kind])} files, the run has {len(files)}")
        if files_under(directory / name) != files:
            broken.append(f"{name}: the host's files are not the run's, byte for byte")
    for kind_dir, name in KIND_DIRS.items():
        on_disk = set(files_under(directory / name))
        if orphans := on_disk - set(listed[kind_dir]):
            broken.append(f"{name}: {len(orphans)} file(s) on disk the session does not list")
        empty = [d for d, dirs, names in os.walk(directory / name) if not dirs and not names]
        if [d for d in empty if Path(d) != directory / name]:
            broken.append(f"{name}: {len(empty)} empty director(ies) left")
    if list((directory / INCOMING_DIR).glob("*")):
        broken.append("temporary files left in .incoming")
    got = _blanked(host_results(host.address, SESSION, list(info.result_files)))
    if got != expected:
        broken.append("the result tables differ from a clean run's")
    if _blanked(offline_results(directory, root / "offline")) != got:
        broken.append("the result tables are not dumpcmp compare's of the host's tree")
    held = {(f.kind, f.path) for f in info.files}
    broken += _journal_missing(root, scenario, held, set(info.replaced_runs))
    return broken


def _journal_missing(root: Path, scenario: str, held: set[tuple[int, str]], replaced: set[str]) -> list[str]:
    """Files the agent's journal says the host acknowledged, and that the host does not hold
    (but for a replaced run's: dropped with it, by design)."""
    from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb

    state = root / "dump.dumpcmp-agent" if scenario == "watch" else root / "state"
    journal = state / f"{SESSION}.journal"
    if not journal.is_file():
        return []
    missing = 0
    for line in journal.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a torn last line
        if (
            entry.get("run_id") not in replaced
            and (pb.FileKind.Value(entry["kind"]), entry["path"]) not in held
        ):
            missing += 1
    return [f"{missing} acknowledged file(s) of the journal missing on the host"] if missing else []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", type=Path, help="where trials run (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the trials' directories")
    options = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="dumpcmp-faults-", dir=options.dir))
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # a stopped bench still kills its children
    try:
        ref = reference(root / "reference")
        clean = f"{ref.model_seconds:.1f} s"
        print(f"reference: clean model run {clean}; {options.trials} trials, seed {options.seed}")
        held = 0
        for index in range(options.trials):
            result = run_trial(random.Random(f"{options.seed}/{index}"), root / f"trial{index}", ref)
            held += not result.broken
            print(result.line(index), flush=True)
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"{held} of {options.trials} trials held (a loaded machine's load averages: {load})")
        return 0 if held == options.trials else 1
    finally:
        if not options.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
