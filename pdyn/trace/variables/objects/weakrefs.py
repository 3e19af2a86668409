"""Calling a weak reference read from the frame (`ref()`, as nn.RNNBase checks whether its flat
weights changed): the referent, read through a WeakRefTargetSource so what the trace reads of it
is guarded like any input (None once the object is gone)."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from pdyn.base.errors import Unsupported
from pdyn.sources import WeakRefTargetSource
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.registry import rule

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer


@rule(weakref.ReferenceType.__call__)
def _dereference(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    ref = args[0] if len(args) == 1 and not kwargs else None
    source = getattr(ref, "source", None)
    if source is None or not isinstance(getattr(ref, "value", None), weakref.ReferenceType):
        raise Unsupported("weakref", "pdyn follows weak references read from the frame only", loc=tx.loc())
    return tx.wrap(ref.value(), WeakRefTargetSource(source))  # type: ignore[union-attr]
