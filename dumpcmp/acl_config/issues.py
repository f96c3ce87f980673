"""The record every acl.json check produces, and how a list of them reads as one message."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["ConfigIssue", "format_issues"]


@dataclass(frozen=True, slots=True)
class ConfigIssue:
    """One broken rule of formats.md §3.2.

    ``path`` is a JSON path into the file ("dump.dump_list[0].layer", "$" for the document
    itself), ``rule`` the rule number of §3.2 as a string, ``message`` what is wrong.
    """

    path: str
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message} (rule {self.rule})"


def format_issues(source: str, issues: Sequence[ConfigIssue]) -> str:
    """One line naming ``source`` and every issue, numbered (an error is one line: the terminal
    shows a newline inside it as ``\\n``)."""
    if len(issues) == 1:
        return f"{source}: {issues[0]}"
    return f"{source}: {len(issues)} problems: " + " ".join(f"({n}) {i}" for n, i in enumerate(issues, 1))
