"""A model run's identity, as the agent makes it and the host reads it (DESIGN: one run is one run).

The agent names each run it starts ``{model}@dev{device}@{YYYYMMDDhhmmss}@{token}``: what it ran
and where (the run's *slot*), when it started it, and a token of its own. A run that starts in
a session replaces every earlier run of its slot there, finished or not, whichever agent process
ran it: the same model on the same device is the same run again (a rerun after a crash, or the
same command once more), so a session never holds it twice. Runs of other slots (other devices,
other models) stay. An id of another shape (an older agent's) has no slot.

A hunt (``agent run --hunt``) runs the model once per pass, each pass a run of its own labelled
``{model}.hunt{k}`` (so pass k's slot is its own, and a pass run again replaces only itself),
all with the hunt's id as their token. The hunt's own files (golden data, fusion rule, inputs) go
before its passes as a run labelled ``{model}.hunt``: the session's golden data is one run's
(the host refuses another's), and a hunt run again replaces them with its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = [
    "CAPTURED_DATA",
    "HUNT_PROTOCOL",
    "REPLACED_REFUSAL",
    "capture_ops",
    "hunt_files_label",
    "hunt_pass_label",
    "run_identity",
    "run_slot",
    "run_token",
    "slot_of",
]

# Why the host refuses a file or mark of a run a later run of its slot replaced: the agent then
# says the session holds that later run (a rerun of it would replace the later one in turn).
REPLACED_REFUSAL = "run {} was replaced by a later run"
HUNT_PROTOCOL = 1  # NextCapture's protocol (dumpcmp_v1.proto): agent and host say which they speak
_SEPARATOR = "@"
_STARTED = re.compile(r"\d{14}")
_TOKEN = re.compile(r"[0-9a-f]{8,32}")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")  # the id is also a directory name on the agent's machine


def run_identity(model: str, device: int, started: str, token: str) -> str:
    """The id of a run of ``model`` on ``device`` started at ``started`` (``YYYYMMDDhhmmss``)."""
    if not _STARTED.fullmatch(started) or not _TOKEN.fullmatch(token) or device < 0:
        raise ValueError(f"not a run identity: device {device}, started {started!r}, token {token!r}")
    return _SEPARATOR.join((slot_of(model, device), started, token))


def hunt_files_label(model: str) -> str:
    """The model label of the run that carries a hunt of ``model``'s golden data, rule and inputs."""
    return f"{model}.hunt"


def hunt_pass_label(model: str, index: int) -> str:
    """The model label of pass ``index`` (1-based) of a hunt of ``model``."""
    return f"{model}.hunt{index}"


def slot_of(model: str, device: int) -> str:
    """The slot of runs of ``model`` on ``device``, as ``run_slot`` reads it from their ids."""
    return _SEPARATOR.join((_UNSAFE.sub("_", model) or "model", f"dev{device}"))


def run_token(run_id: str) -> str:
    """The token of an id ``run_identity`` made; "" for any other id."""
    return run_id.rsplit(_SEPARATOR, 1)[-1] if run_slot(run_id) else ""


def run_slot(run_id: str) -> str:
    """``{model}@dev{device}`` of an id ``run_identity`` made; "" for any other id."""
    parts = run_id.rsplit(_SEPARATOR, 3)
    if len(parts) != 4:
        return ""
    model, device, started, token = parts
    if not (
        model and re.fullmatch(r"dev\d+", device) and _STARTED.fullmatch(started) and _TOKEN.fullmatch(token)
    ):
        return ""
    return f"{model}{_SEPARATOR}{device}"


# A hunt capture's acl.json dump_data, as the agent's pass lines and the host's summary say it.
CAPTURED_DATA = {"stats": "statistics", "tensor": "tensors"}
_OPS_SHOWN = 4  # a pass's line names its window's first ops, not a screenful


def capture_ops(layers: Sequence[str]) -> str:
    """A hunt capture's ops in words: "every op", or how many and the first few."""
    if not layers:
        return "every op"
    more = ", …" if len(layers) > _OPS_SHOWN else ""
    return f"{len(layers)} op{'' if len(layers) == 1 else 's'} ({', '.join(layers[:_OPS_SHOWN])}{more})"
