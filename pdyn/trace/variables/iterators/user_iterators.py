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


class _Indexed:
    def __getitem__(self, i: int) -> Any:
        raise IndexError


SEQUENCE_ITERATOR = type(iter(_Indexed()))   # the `iterator` Python makes over `__getitem__`


def sequence_iterator_at(obj: Any, index: int) -> Any:
    """Python's iterator over `obj.__getitem__`, at `index` (what a break hands on)."""
    it = iter(obj)
    it.__setstate__(index)
    return it


class GetitemIterator(IteratorVariable):
    """`iter(obj)` of a user object whose class has `__getitem__` and no `__iter__`: Python calls
    `obj[0]`, `obj[1]`, ... until one raises IndexError (or StopIteration)."""

    def __init__(self, tx: Tracer, obj: Any):
        super().__init__([])
        self.tx, self.obj = tx, obj

    def python_type(self) -> type:
        return SEQUENCE_ITERATOR

    def next(self) -> VariableTracker | None:
        try:
            item = self.obj.dunder(self.tx, "__getitem__", [self.tx.wrap_constant(self.index)])
        except UserException as e:
            if isinstance(e.exc, (IndexError, StopIteration)) and e.catchable:
                return None
            raise
        if item is None:
            raise Unsupported("iterate", f"pdyn cannot index {self.obj}", loc=self.tx.loc())
        self.index += 1
        return item

    def rebuild(self, codegen: FrameCodegen) -> str:
        at = codegen.constant(sequence_iterator_at, "sequence_iterator_at")
        return codegen.once(self, f"{at}({codegen.reconstruct(self.obj)}, {self.index})")


def set_position(it: Any, index: int) -> None:
    it.__setstate__(index)


class InputGetitemIterator(GetitemIterator):
    """Python's iterator over `__getitem__` read from the frame (a loop a break handed on): traced
    from its position (guarded), the real one moved to where the trace left it after the graph.
    Its end is a break: Python marks the iterator exhausted, which no replay can do."""

    def __init__(self, tx: Tracer, obj: Any, index: int, source: Any):
        super().__init__(tx, obj)
        self.index = index
        self.source = source

    def next(self) -> VariableTracker | None:
        effects = self.tx.ctx.side_effects
        before = len(effects.order)
        item = super().next()
        if item is None and len(effects.order) != before:
            raise Unsupported("iterate", f"pdyn does not trace the end of an iterator over {self.obj}'s "
                              "__getitem__ that the frame received, where that call has effects", loc=self.tx.loc())
        if item is None:   # Python ends it by the same call, which has no effect but this
            effects.call(self.tx.wrap_constant(next), [self, self.tx.wrap_constant(None)], {})
        else:
            effects.call(self.tx.wrap_constant(set_position), [self, self.tx.wrap_constant(self.index)], {})
        return item


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
