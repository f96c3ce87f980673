"""A command's work in a process forked at launch, which loads that work while the command line
loads here.

Starting ``dumpcmp compare`` is two independent loads, one after the other on one core: the
command line (typer, click, rich, the options) and the work (numpy, protobuf, llvmlite, the codec,
the metric kernels). Forked at launch, before either, a second process loads the work on the
other core while this one reads the command line; the command then hands it the resolved request
and waits. The work runs there as it would here: it prints, draws the progress bar, forks its own
workers and answers Ctrl-C; this process ends with its exit code. A command that does not hand
work over (help, a refused option, another mode) ends the forked process unused.

Signals. Until the hand-over the forked process holds SIGINT and SIGTERM pending and this one
answers them (ending the other). After it, Ctrl-C at a terminal reaches both processes (the
foreground process group) and only the work acts on it; a signal sent to this process alone
(``kill``, a supervisor) is passed on to the work. If this process dies, the work dies with it.

The command waits for the work process to end and reaps it, however it ends: never an orphan left
for init to reap (a container's first process may never do it). Ending early on a reported code
saved the 5-15 ms the kernel takes to free the work process's memory; a zombie per run where PID 1
does not reap was judged too high a price.
"""

from __future__ import annotations

import os
import signal
import struct
import sys
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable

T = TypeVar("T")

_STOPS = frozenset({signal.SIGINT, signal.SIGTERM})
_WAITED = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGCHLD})
_SI_KERNEL = 0x80  # si_code of a signal the kernel sent: a terminal's Ctrl-C (asm-generic/siginfo.h)
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
# The work's pickled size, before it: the pipe stays open after, so that what the work process
# did not read can be told from what it did.
_LENGTH = struct.Struct("<Q")

# The forked process, loading or loaded, and the pipe its work will go through. A tuple, not a
# dataclass: this module loads before anything else, and dataclasses cost 7 ms to import.
_waiting: tuple[int, int] | None = None


def start(module: str) -> int | None:
    """Fork a process that imports ``module`` and calls its ``warm()``, then waits for work.

    Returns None here. In the forked process it returns once that work has run, with its exit
    code (the caller ends the process); given no work, the forked process ends silently.
    """
    global _waiting
    if not sys.platform.startswith("linux"):
        return None
    parent = os.getpid()
    requests_out, requests_in = os.pipe()
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)  # inherited held: no window unheld
    pid = os.fork()
    if pid:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        os.close(requests_out)
        _waiting = (pid, requests_in)
        return None
    os.close(requests_in)
    return _serve(parent, requests_out, module)


def run(function: Callable[[T], None], argument: T) -> None:
    """``function(argument)`` in the process started at launch, then exit with its code; here,
    if none was started (tests, other platforms) or it ended without taking the work."""
    import pickle

    global _waiting
    waiting, _waiting = _waiting, None
    if waiting is None:
        function(argument)
        return
    pid, requests = waiting
    work = pickle.dumps((function, argument), pickle.HIGHEST_PROTOCOL)
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:  # None: started with that descriptor closed (``>&-``)
            stream.flush()
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _WAITED)  # from here on, taken by _wait
    try:
        _send(requests, _LENGTH.pack(len(work)) + work)
        code = _wait(pid, requests)
    except BrokenPipeError:  # it ended while loading (it is never ended before this)
        os.waitpid(pid, 0)
        code = None
    finally:
        os.close(requests)
    if code is None:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        function(argument)
        return
    # Signals stay held: this process only exits now, and one arriving after the work ended
    # would interrupt that.
    raise SystemExit(code)


def dismiss() -> None:
    """End the process started at launch if it never got work (the command ended without it)."""
    global _waiting
    waiting, _waiting = _waiting, None
    if waiting is None:
        return
    pid, requests = waiting
    os.close(requests)
    os.kill(pid, signal.SIGKILL)  # never reaped before: it exists, if as a zombie
    os.waitpid(pid, 0)


def _send(pipe: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(pipe, view) :]


def _unread(pipe: int) -> int:
    """Bytes written to ``pipe`` and not yet read."""
    import array
    import fcntl
    import termios

    count = array.array("i", [0])
    fcntl.ioctl(pipe, termios.FIONREAD, count)
    return count[0]


def _wait(pid: int, requests: int) -> int | None:
    """The work's exit code, passing on the signals sent to this process alone meanwhile; None if
    the work process ended without taking the work."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return None if _unread(requests) else _exit_code(status)
        received = signal.sigwaitinfo(_WAITED)
        # A terminal's Ctrl-C reached the work too; a kill(2) aimed at this process did not.
        if received.si_signo in _STOPS and received.si_code != _SI_KERNEL:
            os.kill(pid, received.si_signo)


def _exit_code(status: int) -> int:
    """The work's exit code; killed by a signal, one line saying so and the shell's 128 + N."""
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        return code
    name = signal.Signals(-code).name
    sys.stderr.write(f"Error: the process doing the work was killed by {name}; nothing more was written\n")
    return 128 - code


def _receive(pipe: int) -> bytes:
    """One length-prefixed message; empty if the pipe closed first (no work is coming)."""
    with open(pipe, "rb", closefd=True) as reader:
        header = reader.read(_LENGTH.size)
        if len(header) < _LENGTH.size:
            return b""
        return reader.read(_LENGTH.unpack(header)[0])


def _serve(parent: int, requests: int, module: str) -> int:
    """The forked process: load ``module``, wait for its work, run it; its exit code."""
    import contextlib
    import ctypes
    import gc
    import importlib
    import pickle

    from dumpcmp.launch import INTERRUPTED, INTERRUPTED_EXIT_CODE, interrupt_on

    # However the command-line process ends (even SIGKILL), this one ends with it.
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(0)
    # No collections while loading: imports and the unpickled work make hundreds of thousands of
    # objects and next to no garbage, and the collections they set off walk all of them again
    # (~8 ms of the ~200 this process takes to be ready). The work starts with them back on.
    gc.disable()
    with contextlib.suppress(Exception):  # a broken install: the work meets it again, and says so
        importlib.import_module(module).warm()
    work = _receive(requests)
    if not work:  # the command ended without handing work over
        os._exit(0)
    function, argument = pickle.loads(work)
    interrupt_on(*_STOPS)
    try:
        try:
            gc.enable()
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)  # one held since the fork fires here
            function(argument)
        finally:  # the work is over: a signal now would only interrupt the ending
            signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    except SystemExit as ended:
        if isinstance(ended.code, str):  # what the interpreter would print for such an exit
            sys.stderr.write(f"{ended.code}\n")
        return ended.code if isinstance(ended.code, int) else 1 if ended.code else 0
    except KeyboardInterrupt:  # before the work's own handling began
        sys.stderr.write(f"interrupted: {INTERRUPTED}\n")
        return INTERRUPTED_EXIT_CODE
    return 0
