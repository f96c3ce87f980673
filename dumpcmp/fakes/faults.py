"""Fault injection: what goes wrong in which op, as a frozen plan the executor follows.

A fault names an *original* (ONNX) op; the executor applies it to the result of the stage that
computes that op, inside whichever NPU op contains it, before the result is rounded to the
device type — so an overflow really becomes ±inf in fp16, and every later op consumes the bad
tensor. Random choices come from a generator seeded by (plan seed, op name, step): the same
plan gives the same bytes on every run.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

import numpy as np

from dumpcmp.errors import ConfigError

__all__ = ["FP16_MAX", "Fault", "FaultKind", "FaultPlan", "apply_fault"]

FP16_MAX = 65504.0


class FaultKind(str, Enum):
    BIAS = "bias"  # AMOUNT added to every element (default 1)
    SCALE = "scale"  # every element multiplied by AMOUNT (default 1.5)
    NOISE = "noise"  # Gaussian noise of AMOUNT × the tensor's std (default 0.1)
    NAN = "nan"  # a fraction AMOUNT of the elements become NaN (default 0.1, at least one)
    INF = "inf"  # a fraction AMOUNT of the elements become ±inf (default 0.1, at least one)
    OVERFLOW = "overflow"  # scaled by AMOUNT (default: the largest value lands at 2× fp16 max)
    LAYOUT = "layout"  # channels permuted (axis 1 of 3-D and larger tensors, else the last axis)
    DROP = "drop"  # the op's output replaced by its input (same shape) or zeros


_DEFAULTS = {
    FaultKind.BIAS: 1.0,
    FaultKind.SCALE: 1.5,
    FaultKind.NOISE: 0.1,
    FaultKind.NAN: 0.1,
    FaultKind.INF: 0.1,
}


_FLOAT32_MAX = float(np.finfo(np.float32).max)


@dataclass(frozen=True, slots=True)
class _Inert:
    """The amount at which a kind of fault changes no element, what it then does, and an amount
    that does inject something (for the error's example)."""

    amount: float
    does: str
    instead: str


@dataclass(frozen=True, slots=True)
class _Amounts:
    """The amounts a kind of fault takes: finite float32 values in an interval (``low``/``high``
    excluded where ``open_low``/``open_high``), or none (``words`` says so); never its ``inert``
    amount."""

    words: str  # the allowed range, as the error says it
    low: float = -_FLOAT32_MAX
    high: float = _FLOAT32_MAX
    open_low: bool = False
    open_high: bool = False
    takes: bool = True
    inert: _Inert | None = None

    def admits(self, amount: float) -> bool:
        if not self.takes or not math.isfinite(amount):
            return False
        above = amount > self.low if self.open_low else amount >= self.low
        below = amount < self.high if self.open_high else amount <= self.high
        return above and below

    def inert_at(self, amount: float) -> _Inert | None:
        """What ``amount`` does if it changes nothing once it is the float32 the executor applies:
        ``bias:0`` and ``scale:1``, but also ``scale:1.00000001`` and ``noise:1e-50``, which round
        to them."""
        if self.inert is not None and float(np.float32(amount)) == self.inert.amount:
            return self.inert
        return None


_FINITE = f"a finite number within ±{_FLOAT32_MAX:.4g} (float32)"
_FRACTION = _Amounts("takes a fraction of the elements in [0, 1] (0: a single one)", low=0.0, high=1.0)
# Checked when the spec is parsed: a negative noise scale failed deep in the runtime, NaN or an
# out-of-range amount ran, and layout or drop silently ignored the amount they were given.
# An inert amount ran, and the user read the comparison's "all clear" as the fault going unseen.
_ALLOWED = {
    FaultKind.BIAS: _Amounts(f"takes {_FINITE}", inert=_Inert(0.0, "adds 0 to every element", "0.5")),
    FaultKind.SCALE: _Amounts(f"takes {_FINITE}", inert=_Inert(1.0, "multiplies every element by 1", "1.5")),
    FaultKind.NOISE: _Amounts(
        "takes its size in units of the tensor's std: above 0, up to float32 max",
        low=0.0,
        open_low=True,
        inert=_Inert(0.0, "adds noise of size 0", "0.1"),
    ),
    FaultKind.NAN: _FRACTION,
    FaultKind.INF: _FRACTION,
    FaultKind.OVERFLOW: _Amounts(
        "takes the factor the output is scaled by, above 1 (up to float32 max; default: enough "
        "to reach twice float16's largest value)",
        low=1.0,
        open_low=True,
        inert=_Inert(1.0, "scales the output by 1", "100"),
    ),
    FaultKind.LAYOUT: _Amounts("takes no amount (the channels are permuted)", takes=False),
    FaultKind.DROP: _Amounts("takes no amount (the output is replaced by its input or zeros)", takes=False),
}


@dataclass(frozen=True, slots=True)
class Fault:
    """One fault at original op ``op``."""

    op: str
    kind: FaultKind
    amount: float | None = None

    @classmethod
    def parse(cls, spec: str) -> Fault:
        """``OP=KIND[:AMOUNT]``; the op name may itself contain ``=`` or ``:``."""
        op, sep, rest = spec.rpartition("=")
        if not sep or not op:
            raise ConfigError(f"fault {spec!r}: expected OP=KIND[:AMOUNT], e.g. /stem/conv/Conv=bias:0.5")
        kind_text, _, amount_text = rest.partition(":")
        try:
            kind = FaultKind(kind_text.strip().lower())
        except ValueError:
            kinds = ", ".join(k.value for k in FaultKind)
            raise ConfigError(f"fault {spec!r}: unknown kind {kind_text!r}; kinds are {kinds}") from None
        amount = None
        if amount_text:
            try:
                amount = float(amount_text)
            except ValueError:
                raise ConfigError(f"fault {spec!r}: amount {amount_text!r} is not a number") from None
            allowed = _ALLOWED[kind]
            if not allowed.admits(amount):
                raise ConfigError(f"fault {spec!r}: {kind.value} {allowed.words}")
            inert = allowed.inert_at(amount)
            if inert is not None:
                rounded = "" if amount == inert.amount else f" (it is {inert.amount:g} as float32)"
                raise ConfigError(
                    f"fault {spec!r}: {kind.value} {amount_text.strip()} injects nothing{rounded}: it "
                    f"{inert.does}; give an amount that does, e.g. {op}={kind.value}:{inert.instead}"
                )
        return cls(op, kind, amount)

    def __str__(self) -> str:
        return f"{self.op}={self.kind.value}" + (f":{self.amount:g}" if self.amount is not None else "")


@dataclass(frozen=True, slots=True)
class FaultPlan:
    """Every fault of a run, and the seed their random choices use."""

    faults: tuple[Fault, ...] = ()
    seed: int = 0

    @classmethod
    def parse(cls, specs: Iterable[str], seed: int = 0) -> FaultPlan:
        return cls(tuple(Fault.parse(s) for s in specs), seed)

    def __bool__(self) -> bool:
        return bool(self.faults)

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.op for f in self.faults))

    def at(self, originals: Iterable[str]) -> tuple[Fault, ...]:
        names = set(originals)
        return tuple(f for f in self.faults if f.op in names)


def _rng(seed: int, op: str, step: int) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(op.encode("utf-8")), step])


def apply_fault(
    fault: Fault, result: np.ndarray, stage_input: np.ndarray | None, *, seed: int, step: int
) -> np.ndarray:
    """``result`` (float32, the stage's exact output) with ``fault`` applied; never in place."""
    rng = _rng(seed, fault.op, step)
    x = np.array(result, dtype=np.float32)
    amount = fault.amount if fault.amount is not None else _DEFAULTS.get(fault.kind)
    if x.size == 0:
        return x
    if fault.kind is FaultKind.BIAS:
        return x + np.float32(amount)
    if fault.kind is FaultKind.SCALE:
        return x * np.float32(amount)
    if fault.kind is FaultKind.NOISE:
        std = float(np.nanstd(x)) or 1.0
        return x + rng.normal(0.0, float(amount or 0.0) * std, x.shape).astype(np.float32)
    if fault.kind in (FaultKind.NAN, FaultKind.INF):
        flat = x.reshape(-1)
        count = max(1, round(float(amount or 0.0) * flat.size))
        where = rng.choice(flat.size, size=min(count, flat.size), replace=False)
        flat[where] = np.nan if fault.kind is FaultKind.NAN else np.where(flat[where] < 0, -np.inf, np.inf)
        return x
    if fault.kind is FaultKind.OVERFLOW:
        peak = float(np.nanmax(np.abs(x))) if np.isfinite(x).any() else 1.0
        factor = fault.amount if fault.amount is not None else 2.0 * FP16_MAX / (peak or 1.0)
        with np.errstate(over="ignore"):
            return x * np.float32(factor)
    if fault.kind is FaultKind.LAYOUT:
        axis = 1 if x.ndim >= 3 else x.ndim - 1
        size = x.shape[axis]
        perm = rng.permutation(size)
        if size > 1 and np.array_equal(perm, np.arange(size)):
            perm = np.roll(perm, 1)  # a permutation that changes nothing would hide the fault
        return np.take(x, perm, axis=axis)
    if fault.kind is FaultKind.DROP:
        if stage_input is not None and stage_input.shape == x.shape:
            return np.array(stage_input, dtype=np.float32)
        return np.zeros_like(x)
    raise AssertionError(fault.kind)
