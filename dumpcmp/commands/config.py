"""``dumpcmp config``: write an acl.json dump configuration, or check one (formats.md §3)."""

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from dumpcmp.acl_config import (
    AclConfig,
    DumpTarget,
    build_raw,
    describe,
    format_issues,
    is_remote_path,
    load,
    validate,
)
from dumpcmp.commands._flags import StrictCommand, given_in_order
from dumpcmp.commands._output import console, fail, user_errors

app = typer.Typer(
    help="Write and check acl.json, the AscendCL dump configuration.",
    no_args_is_help=True,
)


def _absolute_local(dump_path: str | None) -> str | None:
    """Local dump paths are written absolute: the model may run from another directory."""
    if not dump_path or is_remote_path(dump_path):
        return dump_path
    return os.path.abspath(dump_path)


def _targets(given: list[tuple[str, str]]) -> list[DumpTarget]:
    """dump_list entries from --model/--layer/--watcher-node in command-line order: ops belong to
    the --model before them, those before any --model to the first one; no --model, one entry
    for any model."""
    models: list[str | None] = [value for name, value in given if name == "model"] or [None]
    ops: dict[str | None, dict[str, list[str]]] = {m: {"layer": [], "watcher_node": []} for m in models}
    current = models[0]
    for name, value in given:
        if name == "model":
            current = value
        else:
            ops[current][name].append(value)
    targets = [DumpTarget(m, tuple(ops[m]["layer"]), tuple(ops[m]["watcher_node"])) for m in models]
    return [t for t in targets if t.model is not None or t.layers or t.watcher_nodes]


@app.command("acl", cls=StrictCommand)
def acl_command(
    ctx: typer.Context,
    output: Annotated[Path, typer.Option("--output", "-o", help="Where to write the config.")] = Path(
        "acl.json"
    ),
    dump_path: Annotated[
        str | None,
        typer.Option(
            "--dump-path",
            help="Directory the dumps go to (must exist, read+write), or 'IPv4:path'. "
            "Local paths are written absolute.",
        ),
    ] = None,
    model: Annotated[
        list[str] | None,
        typer.Option("--model", help="Model to dump (om file stem or json name); repeat for several models."),
    ] = None,
    layer: Annotated[
        list[str] | None,
        typer.Option(
            "--layer",
            help="Op to dump (post-fusion or original name); repeatable. Belongs to the --model given "
            "before it (before any --model: to the first); without --model, to one entry that matches "
            "any model.",
        ),
    ] = None,
    watcher_node: Annotated[
        list[str] | None,
        typer.Option("--watcher-node", help="Node to watch with --scene watcher; repeatable, like --layer."),
    ] = None,
    mode: Annotated[str | None, typer.Option(help="input | output | all (CANN default: output).")] = None,
    step: Annotated[
        str | None, typer.Option(help="Steps to dump, e.g. '0|5|10-20' (default: every).")
    ] = None,
    data: Annotated[str | None, typer.Option(help="tensor | stats (CANN default: tensor).")] = None,
    stats: Annotated[
        list[str] | None,
        typer.Option(
            help="With --data stats: Max, Min, Avg, Nan, 'Negative Inf', 'Positive Inf', L2norm; "
            "repeatable, or comma-separated."
        ),
    ] = None,
    op_switch: Annotated[str | None, typer.Option(help="on | off: single-op dump (default off).")] = None,
    level: Annotated[str | None, typer.Option(help="op | kernel | all (CANN default: all).")] = None,
    debug: Annotated[str | None, typer.Option(help="on | off: overflow dump (default off).")] = None,
    scene: Annotated[
        str | None,
        typer.Option(
            help="lite_exception | aic_err_brief_dump | aic_err_norm_dump | aic_err_detail_dump | watcher."
        ),
    ] = None,
    kernel_data: Annotated[
        str | None, typer.Option(help="Comma list of all, printf, tensor, assert, timestamp.")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing --output file.")] = False,
) -> None:
    """Build an acl.json, check every rule, and write it; an invalid config is not written, nor
    one whose --output exists (without --force)."""
    # An acl.json is often edited by hand (paths, steps): replacing it unasked loses that work.
    if not force and (output.exists() or output.is_symlink()):
        fail(f"not writing {output}: it exists; give --force to replace it, or another --output")
    models = model or []
    repeated = next((name for i, name in enumerate(models) if name in models[:i]), None)
    if repeated is not None:
        fail(f"--model {repeated} is given twice; give each model once")
    stat_names = [name.strip() for given in stats or () for name in given.split(",") if name.strip()]
    if stats and not stat_names:
        fail("--stats names no statistic; leave it out for the default set")
    raw = build_raw(
        _absolute_local(dump_path),
        targets=_targets(given_in_order(ctx, ("model", "layer", "watcher_node"))),
        mode=mode,
        step=step,
        data=data,
        stats=stat_names,
        op_switch=op_switch,
        level=level,
        debug=debug,
        scene=scene,
        kernel_data=kernel_data,
    )
    issues = validate(raw)
    if issues:
        fail(format_issues(f"not writing {output}", issues))
    with user_errors():
        config = AclConfig.from_json(raw)
    if not config.enables_dump:
        # CANN accepts such a config and dumps nothing (rule 10); older ACL rejects its empty
        # dump_list. Either way it is not what someone asking for a dump config wants.
        fail(
            f"not writing {output}: it would dump nothing; give --model NAME (model dump), "
            "--layer OP (any model), --op-switch on, --debug on or --scene"
        )
    with user_errors():
        written = config.write(output)
    console().print(f"Wrote {escape(str(written))}: {escape(describe(config))}")


@app.command("check", cls=StrictCommand)
def check_command(
    path: Annotated[Path, typer.Argument(help="The acl.json (or aclInit config) to check.")],
) -> None:
    """Check an acl.json against every CANN rule and say what it will dump."""
    with user_errors():
        config = load(path)
    console().print(f"OK: {escape(describe(config))}")
    unknown = sorted(config.dump.extra) if config.dump is not None else []
    if unknown:
        # CANN ignores keys it does not know, so a misspelt option silently does nothing.
        names = ", ".join(unknown)
        console().print(f'[yellow]Note[/yellow]: unknown key(s) in "dump", ignored by CANN: {escape(names)}')
