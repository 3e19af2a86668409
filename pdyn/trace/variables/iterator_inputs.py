"""A list or tuple iterator the frame receives (an argument, or a resume function's iterator that
crossed a graph break): traced over its sequence from its position, so `next(it)` after a break
needs no second break. The real iterator is advanced after the graph by the items the trace took."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pdyn.guards.guards import EqualsGuard, TypeGuard
from pdyn.sources import IteratorStateSource, Source, iterator_state
from pdyn.trace.variables.constant import ConstantVariable
from pdyn.trace.variables.containers import IteratorVariable, ListVariable, TupleVariable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

ITERATOR_TYPES = (type(iter([])), type(iter(())))


class InputIteratorVariable(IteratorVariable):
    """An iterator read from the frame: each item the trace takes is a `next(it)` replayed after the
    graph (the real iterator then stands where the trace left it)."""

    def __init__(self, tx: Tracer, items: Any, index: int, source: Source, kind: type):
        super().__init__(items)
        self.index = index
        self.source = source
        self.kind = kind
        self._effects = tx.ctx.side_effects
        self._next = ConstantVariable(next)   # rebuilt as the builtin itself in any frame code

    def python_type(self) -> type:
        return self.kind

    def next(self) -> Any:
        item = super().next()
        if item is not None:
            self._effects.call(self._next, [self], {})
        return item


def wrap_iterator(tx: Tracer, value: Any, source: Source) -> IteratorVariable:
    """The sequence is read through its own source (a list read live, aliases kept), the position
    guarded by value."""
    tx.ctx.add_guard(TypeGuard(source, type(value), loc=tx.loc()))
    seq, index = iterator_state(value)
    tx.ctx.add_guard(EqualsGuard(IteratorStateSource(source, "index"), index, loc=tx.loc()))
    if index < 0:
        return InputIteratorVariable(tx, [], 0, source, type(value))
    items = tx.wrap(seq, IteratorStateSource(source, "seq"))
    if not isinstance(items, (ListVariable, TupleVariable)):   # a list or tuple subclass
        items = TupleVariable(tx.iterate(items))
    return InputIteratorVariable(tx, items if isinstance(items, ListVariable) else list(items.items), index,
                                 source, type(value))
