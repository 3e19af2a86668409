"""`itertools.chain`, `islice`, `zip_longest` and `pairwise` made in the trace: like CPython's, they
take from the iterators under them one item at a time, so a list changed after the iterator was
made and before it is consumed is seen as it is then. (`product` reads its inputs whole when made,
as CPython's does.) At a graph break a chain is rebuilt over the live iterables (`rebuild`), the
others go as the items they have left (`left`)."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.iterators.carried_iterators import CarriedChain
from pdyn.trace.variables.containers.core import IteratorVariable, TupleVariable
from pdyn.trace.variables.iterators.live_iterators import _Derived, items_left, make_iterator

if TYPE_CHECKING:
    from pdyn.trace.frame_codegen import ResumeCodegen
    from pdyn.trace.translator import InstructionTranslator as Tracer


class ChainIterator(_Derived):
    """Each iterable is turned into an iterator only when the chain reaches it."""

    kind = itertools.chain

    def __init__(self, tx: Tracer, iterables: list[VariableTracker]) -> None:
        self.tx, self.pending, self.current = tx, list(iterables), None

    def next(self) -> VariableTracker | None:
        while True:
            if self.current is None:
                if not self.pending:
                    return None
                self.current = make_iterator(self.tx, self.pending.pop(0))
            item = self.current.next()
            if item is not None:
                return item
            self.current = None

    def left(self) -> list[VariableTracker]:
        rest = items_left(self.current) if self.current is not None else []
        return rest + [item for p in self.pending for item in items_left(make_iterator(self.tx, p))]

    def rebuild(self, codegen: ResumeCodegen) -> str:
        current = "None" if self.current is None else codegen.iterator(self.current)
        pending = "".join(f"{codegen.reconstruct(p)}, " for p in self.pending)
        return codegen.once(self, f"{codegen.constant(CarriedChain, 'CarriedChain')}({current}, ({pending}))")


class IsliceIterator(_Derived):
    """CPython's islice: skips to the next wanted index, one item of the source at a time."""

    kind = itertools.islice

    def __init__(self, inner: IteratorVariable, start: int, stop: int | None, step: int) -> None:
        self.inner, self.stop, self.step = inner, stop, step
        self.count, self.wanted, self.done = 0, start, False

    def next(self) -> VariableTracker | None:
        if self.done or self.stop is not None and self.count >= self.stop:
            return None
        while self.count < self.wanted:
            if self.inner.next() is None:
                self.done = True
                return None
            self.count += 1
        if self.stop is not None and self.count >= self.stop:
            return None
        item = self.inner.next()
        if item is None:
            self.done = True
            return None
        self.count += 1
        self.wanted = self.wanted + self.step if self.stop is None else min(self.wanted + self.step, self.stop)
        return item

    def left(self) -> list[VariableTracker]:
        if self.done:
            return []
        rest = items_left(self.inner)
        stop = len(rest) if self.stop is None else min(len(rest), self.stop - self.count)
        return rest[self.wanted - self.count:max(stop, 0):self.step] if self.wanted - self.count < stop else []


class ZipLongestIterator(_Derived):
    kind = itertools.zip_longest

    def __init__(self, inners: list[IteratorVariable], fill: VariableTracker) -> None:
        self.inners, self.fill = inners, fill
        self.active = [True] * len(inners)

    def next(self) -> VariableTracker | None:
        if not any(self.active):
            return None
        row = []
        for i, it in enumerate(self.inners):
            item = it.next() if self.active[i] else None
            if item is None:
                self.active[i] = False
            row.append(self.fill if item is None else item)
        return TupleVariable(row) if any(self.active) else None

    def left(self) -> list[VariableTracker]:
        columns = [items_left(it) if on else [] for it, on in zip(self.inners, self.active)]
        if not any(self.active):
            return []
        return [TupleVariable(list(row)) for row in itertools.zip_longest(*columns, fillvalue=self.fill)]


class PairwiseIterator(_Derived):
    kind = itertools.pairwise

    def __init__(self, inner: IteratorVariable) -> None:
        self.inner, self.old, self.done = inner, None, False

    def next(self) -> VariableTracker | None:
        if self.done:
            return None
        if self.old is None:
            self.old = self.inner.next()
            if self.old is None:
                self.done = True
                return None
        new = self.inner.next()
        if new is None:
            self.done = True
            return None
        row, self.old = TupleVariable([self.old, new]), new
        return row

    def left(self) -> list[VariableTracker]:
        if self.done:
            return []
        items = ([self.old] if self.old is not None else []) + items_left(self.inner)
        return [TupleVariable([a, b]) for a, b in zip(items, items[1:])]
