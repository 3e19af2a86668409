"""`map`, `filter` and `itertools.starmap` objects made in the trace.

They call their function only when an item is taken, as Python does: a function with side effects
runs in eager's order, and an iterator consumed halfway calls it only for the items taken.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from pdyn.base.errors import Unsupported
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.registry import Rule, register
from pdyn.trace.variables.containers.core import IteratorVariable
from pdyn.trace.variables.iterators.live_iterators import make_iterator

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

class LazyIterator(IteratorVariable):
    """An iterator whose next item is computed by a call at the moment it is taken."""

    def __init__(self, tx: Tracer, kind: type, fn: VariableTracker, sources: list[IteratorVariable]):
        super().__init__([])
        self.tx, self.kind, self.fn, self.sources = tx, kind, fn, sources

    @property  # type: ignore[override]
    def items(self) -> list[VariableTracker]:
        # Only a break reads the items left; they do not exist until taken.
        raise Unsupported("resume", f"pdyn cannot carry a {self.kind.__name__} object across a graph break")

    @items.setter
    def items(self, value: list[VariableTracker]) -> None:
        pass

    def python_type(self) -> type:
        return self.kind

    def next(self) -> VariableTracker | None:
        while True:
            row = []
            for it in self.sources:  # stops at the first exhausted source, taking no more, as Python's map
                item = it.next()
                if item is None:
                    return None
                row.append(item)
            if self.kind is map:
                return self.fn.call(self.tx, row, {})
            if self.kind is itertools.starmap:
                return self.fn.call(self.tx, self.tx.iterate(row[0]), {})
            (item,) = row
            keep = item if self.fn.is_python_constant() and self.fn.as_python_constant() is None \
                else self.fn.call(self.tx, [item], {})
            if keep.truth(self.tx):
                return item

    def __repr__(self) -> str:
        return f"LazyIterator({self.kind.__name__})"


def _lazy(kind: type, arity: int | None) -> Rule:
    def build(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if kwargs or len(args) < 2 or (arity is not None and len(args) != arity):
            raise Unsupported("builtin", f"{kind.__name__}() called with unusual arguments", loc=tx.loc())
        return LazyIterator(tx, kind, args[0], [make_iterator(tx, a) for a in args[1:]])
    return build


register(map, _lazy(map, None))
register(filter, _lazy(filter, 2))
register(itertools.starmap, _lazy(itertools.starmap, 2))
