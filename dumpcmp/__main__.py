"""The ``dumpcmp`` executable's first module (and ``python -m dumpcmp``'s): Ctrl-C is taken from
its first lines on.

Loading ``dumpcmp.launch``, where the run's own handling of interrupts is set up, takes a few
milliseconds; Python's handler meanwhile raised KeyboardInterrupt from inside that import, whose
traceback no code of ours could catch. Here a signal in that time is noted, and ``launch.main``
says the one line. Only a program's start imports this module: the note would swallow a library
user's Ctrl-C until ``launch.main`` runs.
"""

from __future__ import annotations

import _signal  # built in and loaded with the interpreter: the note is in place at once
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import FrameType

_noted: list[int] = []  # the signals that came before ``launch.main`` set its own handler


def _note(signum: int, frame: FrameType | None) -> None:
    _noted.append(signum)


for _signum in (_signal.SIGINT, _signal.SIGTERM):
    _signal.signal(_signum, _note)


def main() -> None:
    from dumpcmp.launch import main as launch

    launch(interrupted_before=_noted)


if __name__ == "__main__":
    main()
