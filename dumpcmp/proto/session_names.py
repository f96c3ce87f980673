"""The session-name rule of the wire protocol (``OpenSessionRequest.session``), for both sides.

A host turns a session name into a directory and an agent into a journal file name, so the
agent checks ``--session`` before it creates or runs anything, with the rule the host applies.
"""

from __future__ import annotations

import re

_SESSION = re.compile(r"[A-Za-z0-9_.-]{1,128}")
# Call metadata of an Upload naming the session it streams into, before its first file: a host
# refusing to delete a session an agent streams into must see an agent that has sent nothing yet.
SESSION_METADATA = "dumpcmp-session"
# Trailing metadata of a CloseSession or DeleteSession refused because an agent still streams
# into the session: an agent that ends while another still streams leaves the close to it.
STREAMING_METADATA = "dumpcmp-streaming"
# Why a run (and each file of it) is refused while its session closes: the agent then knows the
# session is as good as closed, though the host still says open until the comparison ends.
CLOSING_REFUSAL = "session {} is closing: its results are final; stream into a new session name"
# Why a run or file is refused once its session is closed.
CLOSED_REFUSAL = "session {} is closed"
# Trailing metadata of a call refused because its session is closed (value "closed") or closing
# ("closing"): the agent says the one line of a session whose results are final, whichever call
# met it (the session open, a hunt's next pass), not the call's status and prose.
CLOSED_METADATA = "dumpcmp-session-closed"


def session_name_problem(name: str) -> str | None:
    """Why ``name`` is not a session name (dumpcmp_v1.proto), or None when it is one."""
    if not _SESSION.fullmatch(name):
        return "a session name is 1 to 128 of A-Z a-z 0-9 _ . -"
    if name.startswith("."):
        return "a session name must not start with '.'"
    if name.startswith("-"):
        # The commands printed for it (`dumpcmp host results -rf ...`) read it as an option.
        return "a session name must not start with '-'"
    return None


def closed_by(reason: str, session: str) -> str:
    """ "closed" or "closing" when the host refused a run or file of ``session`` for ``reason``
    because the session is closed or closing (``CLOSED_REFUSAL``, ``CLOSING_REFUSAL``); ""
    for any other reason."""
    if reason == CLOSED_REFUSAL.format(session):
        return "closed"
    return "closing" if reason == CLOSING_REFUSAL.format(session) else ""
