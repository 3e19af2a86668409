"""SetInputVariable: a set or frozenset read from the frame (a library's registry of classes, a
global set of names). The trace may ask whether a constant is in it, each answer guarded; anything
else about it (iteration, length, mutation) is a graph break.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pdyn.base.errors import Unsupported
from pdyn.guards.guards import MembershipGuard
from pdyn.sources import Source
from pdyn.trace.variables.base import VariableTracker

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer


class SetInputVariable(VariableTracker):
    def __init__(self, value: set[Any] | frozenset[Any], source: Source):
        self.value = value
        self.source = source

    def python_type(self) -> type:
        return type(self.value)

    def contains(self, tx: Tracer, item: VariableTracker) -> bool:
        if not item.is_python_constant():
            raise Unsupported("set_input", f"pdyn can ask a set input ({self.source}) only about constants",
                              loc=tx.loc())
        value = item.as_python_constant()
        try:
            present = value in self.value
        except TypeError:
            raise Unsupported("set_input", f"pdyn cannot look {value!r} up in {self.source}", loc=tx.loc()) from None
        tx.ctx.add_guard(MembershipGuard(self.source, item=value, present=present, loc=tx.loc()))
        return present

    def __repr__(self) -> str:
        return f"SetInputVariable({self.source})"
