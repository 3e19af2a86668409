"""Iterating a user object: what its class's `__iter__` returns, taken one item at a time.

A generator (`def __iter__(self): yield ...`) or `iter(self.items)` is already an iterator the
trace advances lazily; an object of an iterator class (`__iter__` returning `self`, with
`__next__`) is advanced by inlining its `__next__` as the loop asks for each item, so the loop
body's side effects and the iterator's interleave as in Python, and the body's changes to what the
iterator reads are seen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.containers.core import IteratorVariable

if TYPE_CHECKING:
    from pdyn.trace.frame_codegen import FrameCodegen
    from pdyn.trace.translator import InstructionTranslator as Tracer


class UserIterator(IteratorVariable):
    """An object of a user iterator class, advanced by its `__next__` (a StopIteration it raises
    ends the loop). At a break it is the object itself, which Python's loop then advances."""

    def __init__(self, tx: Tracer, obj: Any):
        super().__init__([])
        self.tx, self.obj = tx, obj

    def python_type(self) -> type:
        return self.obj.python_type()

    def next(self) -> VariableTracker | None:
        try:
            item = self.obj.dunder(self.tx, "__next__", [])
        except UserException as e:
            if isinstance(e.exc, StopIteration) and e.catchable:
                return None
            raise
        if item is None:
            raise Unsupported("iterate", f"pdyn cannot advance {self.obj}", loc=self.tx.loc())
        return item

    def rebuild(self, codegen: FrameCodegen) -> str:
        return codegen.reconstruct(self.obj)


def user_iterator(tx: Tracer, it: VariableTracker) -> IteratorVariable:
    """`iter(obj)` from what `type(obj).__iter__(obj)` returned: it must be an iterator."""
    if isinstance(it, IteratorVariable):
        return it
    cls = it.python_type()
    if not hasattr(cls, "__next__"):  # the returned value's type is known here: guarded
        raise UserException(TypeError(f"iter() returned non-iterator of type '{cls.__name__}'"), tx.loc(),
                            catchable=True)
    if hasattr(it, "dunder"):  # a user object (user_objects imports this module)
        return UserIterator(tx, it)
    return IteratorVariable(tx.iterate(it))
