"""Help texts are rich markup: a ``[word]`` in one (``pip install "dumpcmp[cluster]"``) must be
escaped, or the help shows it with the brackets and the word gone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer
from rich.text import Text
from typer.testing import CliRunner

from dumpcmp.cli import app


def _commands(command: Any, path: str) -> Iterator[tuple[str, Any]]:
    yield path, command
    if hasattr(command, "list_commands"):  # a group (typer vendors its own click: no isinstance)
        ctx = command.context_class(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None:
                yield from _commands(sub, f"{path} {name}")


def _help_texts() -> Iterator[tuple[str, str]]:
    for path, command in _commands(typer.main.get_command(app), "dumpcmp"):
        yield f"{path} (help)", command.help or ""
        yield f"{path} (epilog)", command.epilog or ""
        for param in command.params:
            yield f"{path} {'/'.join(param.opts)}", getattr(param, "help", None) or ""


def test_no_help_text_loses_a_bracketed_word_to_markup() -> None:
    texts = dict(_help_texts())
    assert len(texts) > 100  # every command's options were reached
    lost = {
        where: text
        for where, text in texts.items()
        if Text.from_markup(text).plain != text.replace("\\[", "[")
    }
    assert lost == {}


def test_compare_help_shows_the_cluster_extra() -> None:
    for command in (["compare"], ["host", "serve"]):
        result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "400", "NO_COLOR": "1"})
        assert result.exit_code == 0, result.output
        assert 'pip install "dumpcmp[cluster]"' in result.output, command
