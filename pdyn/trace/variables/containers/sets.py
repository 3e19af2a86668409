"""SetVariable: a set of constants made in the trace.

Every method runs on a real set of the same constants (so what it returns, raises and leaves is
Python's), and a method that changes the set writes the result back to the tracker.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Callable

from pdyn.base.errors import UserException
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.containers.core import _const, container_getattr, hashable

if TYPE_CHECKING:
    from pdyn.trace.frame_codegen import FrameCodegen
    from pdyn.trace.translator import InstructionTranslator as Tracer

# set methods that change the set in place
MUTATORS = frozenset({"add", "update", "discard", "remove", "pop", "clear", "difference_update",
                      "intersection_update", "symmetric_difference_update"})
IN_PLACE = {operator.ior: operator.or_, operator.iand: operator.and_, operator.isub: operator.sub,
            operator.ixor: operator.xor}
SET_OPS = (operator.or_, operator.and_, operator.sub, operator.xor, operator.le, operator.lt, operator.ge,
           operator.gt, operator.eq, operator.ne)


class SetVariable(VariableTracker):
    """A set of constants made in the trace."""

    def __init__(self, items: list[VariableTracker], source: Any = None):
        self.items: dict[Any, VariableTracker] = {}
        for i in items:
            self.items.setdefault(hashable(i, "set element"), i)
        self.source = source

    def python_type(self) -> type:
        return set

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return set(self.items)

    def iterate(self, tx: Tracer) -> list[VariableTracker]:
        return [ConstantVariable(v) for v in set(self.items)]

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        return container_getattr(self, name)

    def contains(self, tx: Tracer, item: VariableTracker) -> bool:
        return hashable(item, "set element") in self.items

    def length(self, tx: Tracer) -> VariableTracker:
        return ConstantVariable(len(self.items))

    def truth(self, tx: Tracer) -> bool:
        return bool(self.items)

    def _store(self, real: set[Any]) -> None:
        self.items = {v: self.items[v] if v in self.items else ConstantVariable(v) for v in real}

    def call_method(self, tx: Tracer, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if kwargs:
            raise UserException(TypeError(f"set.{name}() takes no keyword arguments"), tx.loc())
        real = set(self.items)
        values = [_constants(tx, a) if name not in ("add", "discard", "remove") else hashable(a, "set element")
                  for a in args]
        try:
            result = getattr(real, name)(*values)
        except (KeyError, TypeError, AttributeError) as e:  # decided by constants: catchable
            raise UserException(e, tx.loc(), catchable=True) from None
        if name in MUTATORS:
            self._store(real)
        return tx.wrap_constant(result)

    def binary_op(self, tx: Tracer, fn: Callable[[Any, Any], Any], other: VariableTracker) -> VariableTracker:
        plain = IN_PLACE.get(fn, fn)
        if plain not in SET_OPS or not (isinstance(other, SetVariable) or (
                other.is_python_constant() and isinstance(other.as_python_constant(), (set, frozenset)))):
            return super().binary_op(tx, fn, other)
        real, theirs = set(self.items), other.as_python_constant()
        if fn in IN_PLACE:
            self._store(fn(real, theirs))
            return self
        return tx.wrap_constant(plain(real, theirs))

    def reconstruct(self, codegen: FrameCodegen) -> str:
        return codegen.once(self, f"set({codegen.constant(tuple(self.items))})")


def _constants(tx: Tracer, vt: VariableTracker) -> Any:
    """An argument of a set method: an iterable of constants, as a frozenset or tuple of them."""
    if isinstance(vt, SetVariable):
        return set(vt.items)
    if vt.is_python_constant() and isinstance(vt.as_python_constant(), (set, frozenset, str, tuple, range)):
        return vt.as_python_constant()
    return tuple(hashable(i, "set element") for i in tx.iterate(vt))
