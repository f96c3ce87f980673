"""The simulated runtime's dump thread: dump files are written beside the execution, not by it.

On a device, an op's dump leaves the device after the op ran and the runtime's dump thread
writes it while the model goes on executing (formats.md §9, §4.2): files appear during the run,
one after another in execution order, each filling chunk by chunk, and aclrtSynchronizeDevice
and aclmdlFinalizeDump return once nothing is pending. ``DumpThread`` does that for
``SimulatedAcl``: the executing thread hands each op's dump over (its timestamp taken when the op
ran), this thread writes them in that order. The queue is bounded, as the device's dump buffer
is: an execution far ahead of the disk waits for it. The thread lives while there is something
to write (until the next ``drain``, or a moment without dumps), so an idle simulator holds none.
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass
from pathlib import Path

from .dump_settings import OpSelection
from .dump_writer import DumpWriter
from .executor import OpRun

__all__ = ["DumpJob", "DumpThread"]

log = logging.getLogger(__name__)
_IDLE_S = 0.5  # the thread ends after this long without a dump (a script that never synchronizes)


@dataclass(frozen=True, slots=True)
class DumpJob:
    """One executed op's dump, as the executing thread hands it over."""

    run: OpRun
    selection: OpSelection
    directory: Path
    task_id: int
    stream_id: int
    timestamp: int  # when the op ran: the file name's and the header's dump_time
    stats: tuple[str, ...] | None  # dump_data: stats (the stats to write), else None


class DumpThread:
    """Writes handed-over dumps through ``writer`` on a thread of its own, in hand-over order."""

    def __init__(self, writer: DumpWriter, depth: int = 16) -> None:
        self.writer = writer
        self._jobs: queue.Queue[DumpJob | None] = queue.Queue(maxsize=depth)
        self._lock = threading.Lock()  # the thread's start and its idle end, never both at once
        self._thread: threading.Thread | None = None
        self._failure = ""  # the first write that failed since the last drain
        self._error: Exception | None = None  # the first error of another kind: raised by drain

    def submit(self, job: DumpJob) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._write_all, name="dumpcmp-sim-dump", daemon=True)
                self._thread.start()
            # Under the lock, so the thread cannot end idle in between. A full queue blocks here
            # (the dump buffer is full) while the thread writes: it takes the lock only when idle.
            self._jobs.put(job)

    def drain(self) -> str:
        """Wait until every dump handed over is written; the first failed write's reason, or "".

        A write that failed with an error of dumpcmp's own (the writer's one line naming the file,
        e.g. a full disk) or with a bug is raised here, as the simulator raised it from the
        execution before it had a dump thread."""
        with self._lock:
            thread, self._thread = self._thread, None
            if thread is not None:
                self._jobs.put(None)
        if thread is not None:
            thread.join()
        failure, self._failure = self._failure, ""
        error, self._error = self._error, None
        if error is not None:
            raise error
        return failure

    def _write_all(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=_IDLE_S)
            except queue.Empty:
                with self._lock:
                    if self._jobs.empty():
                        self._thread = None
                        return
                continue
            if job is None:
                return
            self.writer.stats = job.stats
            try:
                self.writer.write(
                    job.run, job.selection, job.directory,
                    task_id=job.task_id, stream_id=job.stream_id, timestamp=job.timestamp,
                )  # fmt: skip
            except OSError as exc:  # the device loses this dump; the next sync's code says so
                log.warning("dump of %s not written: %s", job.run.op.name, exc)
                self._failure = self._failure or f"{job.directory}: {exc.strerror or exc}"
            except Exception as exc:  # kept for drain: this thread must live on, or submit waits for ever
                self._error = self._error or exc
