"""The ``dumpcmp`` executable's entry point, kept free of imports.

Loading the command line (typer, rich, then the command's own modules) takes about a tenth of a
second; Ctrl-C in that time raised KeyboardInterrupt from inside an import, and Python printed its
traceback. Here it is one line and exit 130, as Ctrl-C anywhere later in a command is.
"""

from __future__ import annotations

import sys

INTERRUPTED_EXIT_CODE = 130  # 128 + SIGINT, what shells report for a Ctrl-C


def main() -> None:
    try:
        from dumpcmp.cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write("interrupted: dumpcmp was still starting and did nothing\n")
        raise SystemExit(INTERRUPTED_EXIT_CODE) from None
    run()
