"""The stack slot PUSH_EXC_INFO pushes when a handler (`except`, `finally`'s exception path) starts:
the exception handled before it, which POP_EXCEPT puts back when the handler ends.

It is a tracker of its own so that a graph break inside the handler knows which stack slots are
handlers entered (one per nested handler) and which exception each one handles: the resume function
re-enters each handler by raising that exception in its prologue (`pdyn.bytecode.transform`).
"""

from __future__ import annotations

from pdyn.trace.variables.base import VariableTracker


class ExcInfoSlot(VariableTracker):
    """`previous`: the exception being handled before the handler (None where none was, as far as
    the trace knows); `handled`: the exception this handler handles."""

    def __init__(self, previous: VariableTracker | None, handled: VariableTracker):
        self.previous = previous
        self.handled = handled

    def crossing(self, held: bool) -> str:
        return "exc"   # the frame code handles its exception around the step; the resume function re-enters it

    def __repr__(self) -> str:
        return f"ExcInfoSlot(handling {self.handled}, previous {self.previous})"
