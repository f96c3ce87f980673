"""The ``dumpcmp`` executable's entry point, kept free of imports.

Loading the command line (typer, rich, then the command's own modules) takes about a tenth of a
second; Ctrl-C in that time raised KeyboardInterrupt from inside an import, and Python printed its
traceback. Here it is one line and exit 130, as Ctrl-C anywhere later in a command is.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading

INTERRUPTED_EXIT_CODE = 130  # 128 + SIGINT, what shells report for a Ctrl-C


def main() -> None:
    try:
        from dumpcmp.cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write("interrupted: dumpcmp was still starting and did nothing\n")
        raise SystemExit(INTERRUPTED_EXIT_CODE) from None
    try:
        run()
    except SystemExit as finished:
        _end(finished)
    _end(SystemExit(0))


def _end(finished: SystemExit) -> None:
    """End a finished command without the interpreter's teardown, which frees every object of
    numpy, llvmlite's JIT and the command's modules one by one: ~12 ms of each run (a fiftieth of
    a quarter-gigabyte compare) for a process that is about to end, whose memory the kernel frees
    at once. What the teardown does that matters is done here: exit handlers run, output is
    flushed (output a reader no longer takes is dropped quietly, as a killed pipe writer's is).
    Not while another thread runs (the interpreter would wait for it), and a message given as
    the exit code is left to the interpreter to print.
    """
    code = 0 if finished.code is None else finished.code
    if not isinstance(code, int) or threading.active_count() > 1:
        raise finished
    atexit._run_exitfuncs()  # no public way; unchanged since Python 2
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader gone (``| head``); a closed stream
            stream.flush()
    os._exit(code)
