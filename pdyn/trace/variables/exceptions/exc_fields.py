"""The state of builtin exceptions as a trace reads it: the getset fields of an input exception
(`args`, `__cause__`, `__context__`, `__traceback__`), read through its source and guarded as any
attribute is, and the exception the caller is handling when the frame starts.

The exception handled at frame start is read at trace time and guarded: where none is, a guard says
so (a call from inside a caller's `except` then recompiles); where one is, what would depend on it
is a graph break, which Python runs for real.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pdyn.base.errors import Unsupported
from pdyn.sources import AttrSource, Const, Source
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ObjectConstantVariable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer


class _HandledNow:
    """The exception being handled where this is called (`sys.exception()` of Python 3.11+); shown
    in guard sentences by its name."""

    def __call__(self) -> BaseException | None:
        return sys.exc_info()[1]

    def __repr__(self) -> str:
        return "handled_now"


handled_now = _HandledNow()


def handled_by_caller() -> BaseException | None:
    """`handled_now()` at trace time, seen past pdyn's own exceptions: a retrace after a break runs
    inside pdyn's handler of the first trace's Unsupported, whose context is the caller's exception
    (one that pdyn itself handles instead is taken for the caller's: a break, never a wrong guard)."""
    handled = handled_now()
    while handled is not None and type(handled).__module__.startswith("pdyn."):
        handled = handled.__context__
    return handled


@dataclass(frozen=True)
class HandledAtStartSource(Source):
    """The exception being handled when the frame starts: its caller's, read by the guard (which
    runs in the frame's caller's state, before the frame)."""

    def _code(self, const: Const, bound: Mapping[Source, str]) -> str:
        return f"{const(handled_now, 'handled_now')}()"

    def read(self, L: Mapping[str, Any], G: Mapping[str, Any]) -> Any:
        return handled_now()


def assume_none_handled_at_start(tx: Tracer, what: str) -> None:
    """`what` depends on the exception being handled when the frame starts, which the trace takes to
    be none: guarded so. Where the caller is handling one, `what` is a break (Python runs it)."""
    handled = handled_by_caller()
    if handled is not None:
        tx.wrap(handled, HandledAtStartSource())  # its type guarded: calls handling none trace again
        raise Unsupported("handled_exception", f"pdyn cannot trace {what} while the caller handles an "
                          "exception", loc=tx.loc())
    tx.wrap(None, HandledAtStartSource())


# getset fields of builtin exceptions: plain reads of the object's state, no code runs
def is_exception_field(cls: type, attr: Any) -> bool:
    owner = getattr(attr, "__objclass__", None)
    return isinstance(attr, types.GetSetDescriptorType) and isinstance(owner, type) \
        and issubclass(owner, BaseException) and owner.__module__ == "builtins" and issubclass(cls, owner)


def read_exception_field(tx: Tracer, obj: Any, name: str) -> VariableTracker:
    """`obj.<name>` of an input exception (`args`, `__cause__`, `__context__`, `__traceback__`,
    `__suppress_context__`, ...), read through its source and guarded as any value is."""
    if obj.source is None:
        raise Unsupported("descriptor", f"pdyn cannot read {name} of an exception object it made as an object",
                          loc=tx.loc())
    return tx.wrap(getattr(obj.value, name), AttrSource(obj.source, name))


class CaughtExceptionVariable(ObjectConstantVariable):
    """An exception the trace raised and caught, raised with no handler of the trace around it: its
    `__context__` is eager's exception handled at frame start, which is read (and guarded) only
    where the program reads it. Its traceback is Python's, which the trace has not."""

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        if name == "__context__" and self.value.__context__ is None:
            assume_none_handled_at_start(tx, "reading the __context__ of an exception")
        if name == "__traceback__":
            raise Unsupported("exception_traceback", "pdyn cannot trace the traceback of an exception it raised",
                              loc=tx.loc())
        return super().getattr(tx, name)


def caught_here(exc: VariableTracker) -> VariableTracker:
    """The tracker a handler of the trace gets for `exc`: an exception the trace made, raised while
    no handler of the trace ran (its context unset), is a CaughtExceptionVariable."""
    value = getattr(exc, "value", None)
    if type(exc) is ObjectConstantVariable and isinstance(value, BaseException) and value.__context__ is None:
        return CaughtExceptionVariable(value)
    return exc
