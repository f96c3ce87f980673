"""The ``dumpcmp`` executable's start, after ``dumpcmp.__main__``; kept free of imports.

Loading the command line (typer, rich, then the command's own modules) takes about a tenth of a
second; Ctrl-C in that time raised KeyboardInterrupt from inside an import, and Python printed its
traceback. Here it is one line and exit 130, as Ctrl-C anywhere later in a command is; before this
module loaded, ``dumpcmp.__main__`` (the executable's first module) notes it for ``main`` to say.

One process per command: its work runs here, after the command line, with the command's own
modules imported lazily (``dumpcmp.cli``). No process is forked to load them meanwhile.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from types import FrameType

INTERRUPTED_EXIT_CODE = 130  # 128 + SIGINT, what shells report for a Ctrl-C
INTERRUPTED = "the run did not finish; files already written are complete, the rest were not written"


def main(interrupted_before: Sequence[int] = ()) -> None:
    """Run the command of ``sys.argv``; ``interrupted_before``: the signals that came before this
    was called, which ``dumpcmp.__main__`` notes while this module loads."""
    prepare_process()
    if interrupted_before:
        _still_starting()
    try:
        from dumpcmp.cli import app as run  # cli.main's prepare_process is done above
    except KeyboardInterrupt:
        _still_starting()
    # An interrupt put off while the command line was imported (``_put_off``) is taken here, not
    # left to come back once a quick command (``--version``) may have finished
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    if _put_off_signals:
        _put_off_signals.clear()
        _still_starting()
    try:
        # One that came meanwhile is taken as this unblocks it: in here, as an interrupt
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
        run()
    except SystemExit as finished:
        _end(finished)
    except KeyboardInterrupt:  # before the command's own handling began (typer building the command)
        sys.stderr.write(f"interrupted: {INTERRUPTED}\n")
        _end(SystemExit(INTERRUPTED_EXIT_CODE))
    _end(SystemExit(0))


def _still_starting() -> None:
    sys.stderr.write("interrupted: dumpcmp was still starting and did nothing\n")
    _end(SystemExit(INTERRUPTED_EXIT_CODE))


def prepare_process() -> None:
    """What every run sets before any command module loads."""
    # dumpcmp runs its own workers and no large matrix products, but OpenBLAS starts a thread per
    # core that spins on import (~0.1 s of CPU a run, taken from the workers on a busy machine).
    # A user's own setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # gRPC's C core logs its own view of every failure (E1123 ... add_port.cc) to stderr, before
    # the one line our commands say; read when grpc is imported, which no command did yet.
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    interrupt_on(signal.SIGINT, signal.SIGTERM)


# One interrupt can arrive twice (a supervisor's SIGTERM to the process group, then SIGINT from a
# terminal, or a ``timeout`` that signals twice): repeats this soon after are the same interrupt.
_SAME_INTERRUPT_SECONDS = 1.0
# (process, time) of the last interrupt taken by ``interrupt_on``'s handler
_interrupted: tuple[int, float] | None = None


def interrupt_on(*signals: signal.Signals) -> None:
    """Each of ``signals`` ends the run as Ctrl-C does (temporaries removed, the one "interrupted"
    line). A repeat within a second is ignored, where it would interrupt the clean-up the first
    began; a later one (a user pressing Ctrl-C again) interrupts again.

    Forked workers inherit the handler; in them it falls back to the default action (they end
    with the process that forked them), so only the process that owns the output reports.
    """
    owner = os.getpid()

    def handler(signum: int, frame: FrameType | None) -> None:
        global _interrupted
        if os.getpid() != owner:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if _put_off(frame):
            _put_off_signals.append(signum)
            _take_again_soon(signum)
            return
        now = time.monotonic()
        if _interrupted is not None and now - _interrupted[1] < _SAME_INTERRUPT_SECONDS:
            return
        _interrupted = (owner, now)
        raise KeyboardInterrupt

    for signum in signals:
        signal.signal(signum, handler)


# How soon an interrupt put off by ``_take_again_soon`` is taken again: a class's ``__set_name__``
# calls take microseconds, an import a few hundred milliseconds at most, and a user's Ctrl-C must
# still feel immediate.
_RETAKE_SECONDS = 0.01
_IMPORTING = "<frozen importlib._bootstrap>"  # the file name of the import machinery's frames


def _put_off(frame: FrameType | None) -> bool:
    """Whether ``frame`` runs where an exception raised is no interrupt any command can take:

    * inside a ``__set_name__`` call, which Python makes while it creates a class (a dataclass's
      fields, in a module a command imports lazily). Python 3.11 wraps an exception raised there
      in ``RuntimeError("Error calling __set_name__ ...")``: it ended the run with that traceback
      and exit 1;
    * inside an import: a native extension's initialisation runs Python code (onnx's nanobind
      module makes its enums so), and an exception raised there became a C++ exception that
      aborted the process ("terminate called after throwing an instance of
      'nanobind::python_error'", exit -6). Taken once the import is done, it is an interrupt.
    """
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__set_name__" or code.co_filename == _IMPORTING:
            return True
        frame = frame.f_back
    return False


_put_off_signals: list[int] = []  # put off by ``_put_off``, not yet taken again


def _take_again_soon(signum: int) -> None:
    """Send ``signum`` to this process again shortly, once the class being created or the module
    being imported exists (unless ``main`` took it meanwhile)."""

    def again_unless_taken() -> None:
        if _put_off_signals:
            _put_off_signals.clear()
            os.kill(os.getpid(), signum)

    again = threading.Timer(_RETAKE_SECONDS, again_unless_taken)
    again.daemon = True  # never what keeps a finished run alive
    again.start()


def took_interrupt() -> bool:
    """Whether this process took an interrupt through ``interrupt_on``'s handler.

    A handler's KeyboardInterrupt that comes while Python runs a finalizer, a weakref callback
    or a fork hook is dropped ("Exception ignored in ..."), and the run goes on as if nothing had
    come: asked between files, where no interrupt can still be on its way up, this tells.
    """
    return _interrupted is not None and _interrupted[0] == os.getpid()


def _end(finished: SystemExit) -> None:
    """End a finished command without the interpreter's teardown, which frees every object of
    numpy, llvmlite's JIT and the command's modules one by one: ~12 ms of each run (a fiftieth of
    a quarter-gigabyte compare) for a process that is about to end, whose memory the kernel frees
    at once. What the teardown does that matters is done here: exit handlers run, output is
    flushed (output a reader no longer takes is dropped quietly, as a killed pipe writer's is).
    Not while another thread runs (the interpreter would wait for it), and a message given as
    the exit code is left to the interpreter to print.
    """
    # Finished: a signal now would only interrupt the ending (a traceback from here, say).
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    code = 0 if finished.code is None else finished.code
    if not isinstance(code, int) or threading.active_count() > 1:
        raise finished
    atexit._run_exitfuncs()  # no public way; unchanged since Python 2
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):  # a reader gone (``| head``);
            stream.flush()  # a closed stream; none at all (started with ``>&-``)
    os._exit(code)
