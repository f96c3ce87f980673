"""How records (frozen slots dataclasses) sent to other processes in bulk are pickled."""

from __future__ import annotations

import operator
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
