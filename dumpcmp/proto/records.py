"""How records (frozen slots dataclasses) sent to other processes in bulk are pickled."""

from __future__ import annotations

import dataclasses
import operator
import types
from collections.abc import Callable
from dataclasses import fields
from typing import Any, TypeVar

from dumpcmp.errors import InternalError

R = TypeVar("R", bound=type)


def pickled_as_values(cls: R) -> R:
    """Pickle records of ``cls`` as the class and its field values, made again by ``__init__``.

    A frozen slots dataclass pickles its state through ``dataclasses.fields`` on every record and
    sets it back field by field through ``object.__setattr__``; as values, pickling takes about
    a third of the time and loading half. It counts for what crosses to a cluster in bulk: a
    run's plan (the golden index, the rule records and matcher entries: a record or more per op)
    goes to the Dask workers once a run, from the coordinator's CPU. Every field must be an
    ``__init__`` argument, in field order.
    """
    names = [f.name for f in fields(cls)]
    if not all(f.init for f in fields(cls)):  # not an assert: ``python -O`` would drop the check
        raise InternalError(f"{cls.__name__}: a field __init__ does not take")
    values: Callable[[Any], tuple[Any, ...]] = (
        operator.attrgetter(*names) if len(names) > 1 else lambda record: (getattr(record, names[0]),)
    )

    def __reduce__(self: Any) -> tuple[type, tuple[Any, ...]]:
        return cls, values(self)

    cls.__reduce__ = __reduce__  # type: ignore[method-assign, assignment]
    return cls


def set_through_slots(cls: R) -> R:
    """Give frozen slots dataclass ``cls`` an ``__init__`` that sets each field through its slot.

    A frozen dataclass's own ``__init__`` sets each field through ``object.__setattr__``, about
    twice the time of the slot's own setter: ~2.5 against ~1.2 µs for a record of 15 fields,
    and a dump file compared makes ten records or so (entry, header, tensor, job, golden, row,
    …). The record stays frozen (setting a field afterwards raises as before) and takes the same
    arguments: every field an ``__init__`` argument, positional or by keyword, with its default.
    A class with a ``__post_init__``, a default factory or a keyword-only field is refused.
    """
    params: list[str] = []
    setters: dict[str, Any] = {}
    lines: list[str] = []
    for number, item in enumerate(fields(cls)):
        slot = cls.__dict__.get(item.name)
        unusual = item.default_factory is not dataclasses.MISSING or item.kw_only or not item.init
        if unusual or not isinstance(slot, types.MemberDescriptorType):
            raise InternalError(f"{cls.__name__}.{item.name}: no plain field with a slot")
        setters[f"_set{number}"] = slot.__set__
        if item.default is dataclasses.MISSING:
            params.append(item.name)
        else:
            setters[f"_default{number}"] = item.default
            params.append(f"{item.name}=_default{number}")
        lines.append(f"    _set{number}(self, {item.name})\n")
    if hasattr(cls, "__post_init__"):
        raise InternalError(f"{cls.__name__}: a __post_init__ to run")
    made: dict[str, Any] = {}
    body = "".join(lines) or "    pass\n"
    exec(f"def __init__(self, {', '.join(params)}):\n{body}", setters, made)
    init = made["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init  # type: ignore[misc]
    return cls
