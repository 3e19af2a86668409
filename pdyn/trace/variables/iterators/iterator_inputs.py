"""An iterator the frame receives (an argument, or a resume function's iterator that crossed a
graph break): a list's or tuple's, `reversed(list)`, and the stand-ins a break hands on for a
dict's, `enumerate` and `zip` (`pdyn/trace/variables/iterators/carried_iterators.py`). Each is traced over the live
containers from its position, so `next(it)` after a break needs no second break; the real iterator
is advanced after the graph by the steps the trace took."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Callable

from pdyn.base.errors import Unsupported
from pdyn.guards.guards import EqualsGuard, IteratorLeftGuard, LenGuard, TypeGuard
from pdyn.sources import AttrSource, ItemSource, IteratorAheadSource, IteratorStateSource, Source, iterator_state
from pdyn.trace.variables.iterators.carried_iterators import (CarriedChain, CarriedEnumerate, CarriedMappingIterator, CarriedZip,
                                                      set_count)
from pdyn.trace.variables.values.constant import FIXED_KEY_TYPES, ConstantVariable, is_constant_value
from pdyn.trace.variables.containers.core import DictVariable, DictViewVariable, IteratorVariable, ListVariable, TupleVariable
from pdyn.trace.variables.iterators.itertools_live import ChainIterator
from pdyn.trace.variables.iterators.user_iterators import SEQUENCE_ITERATOR, InputGetitemIterator
from pdyn.trace.variables.iterators.live_iterators import (EnumerateIterator, ReversedListIterator, ZipIterator, checked_iterator,
                                                 items_left)

if TYPE_CHECKING:
    from pdyn.trace.frame_codegen import ResumeCodegen
    from pdyn.trace.variables.base import VariableTracker
    from pdyn.trace.translator import InstructionTranslator as Tracer

ITERATOR_TYPES = (type(iter([])), type(iter(())), SEQUENCE_ITERATOR)


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


class AheadIterator(IteratorVariable):
    """A tuple iterator read from the frame (a loop a graph break handed on): traced from wherever
    it stands, its position data, not a guard. Each item it takes is read relative to the position
    (`IteratorAheadSource`) and the items left are guarded (`IteratorLeftGuard`: at least one more,
    or none at the end), so the resume function of a loop over N layers serves every position."""

    def __init__(self, tx: Tracer, value: Any, source: Source):
        self.seq, self.start = iterator_state(value)
        self.source = source
        self.kind = type(value)
        self.read: list[VariableTracker] = []   # the items read (wrapped), from the position on
        self.position = 0   # how many of them `next` gave
        self._tx = tx
        self._next = ConstantVariable(next)

    def crossing(self, held: bool) -> str:
        return "iter"   # itself, kept by the prologue's GET_ITER: a loop's resume of a resume is the first one's code

    def python_type(self) -> type:
        return self.kind

    @property  # type: ignore[override]
    def items(self) -> list[VariableTracker]:
        """Every item, those left read too (a zip's length, `list(it)`): the count is then guarded."""
        while self._read_one() is not None:
            pass
        return list(self.read)

    @property  # type: ignore[override]
    def index(self) -> int:
        return self.position

    def _read_one(self) -> VariableTracker | None:
        ahead, tx = len(self.read), self._tx
        left = len(self.seq) - self.start if self.start >= 0 else 0
        tx.ctx.add_guard(IteratorLeftGuard(self.source, count=min(ahead + 1, left), exact=ahead >= left,
                                           loc=tx.loc()))
        if ahead >= left:
            return None
        item = tx.wrap(self.seq[self.start + ahead], IteratorAheadSource(self.source, ahead))
        self.read.append(item)
        return item

    def next(self) -> VariableTracker | None:
        item = self.read[self.position] if self.position < len(self.read) else self._read_one()
        if item is not None:
            self.position += 1
            self._tx.ctx.side_effects.call(self._next, [self], {})
        return item


def wrap_iterator(tx: Tracer, value: Any, source: Source) -> IteratorVariable:
    """The sequence is read through its own source (a list read live, aliases kept), the position
    guarded by value; a tuple's (immutable) is traced from its position (`AheadIterator`); one over
    a user object's `__getitem__` calls it from its position (`InputGetitemIterator`)."""
    tx.ctx.add_guard(TypeGuard(source, type(value), loc=tx.loc()))
    if type(value) is type(iter(())):
        return AheadIterator(tx, value, source)
    seq, index = iterator_state(value)
    tx.ctx.add_guard(EqualsGuard(IteratorStateSource(source, "index"), index, loc=tx.loc()))
    if index < 0:
        return InputIteratorVariable(tx, [], 0, source, type(value))
    if type(value) is SEQUENCE_ITERATOR:
        return InputGetitemIterator(tx, tx.wrap(seq, IteratorStateSource(source, "seq")), index, source)
    items = tx.wrap(seq, IteratorStateSource(source, "seq"))
    if not isinstance(items, (ListVariable, TupleVariable)):   # a list or tuple subclass
        items = TupleVariable(tx.iterate(items))
    return InputIteratorVariable(tx, items if isinstance(items, ListVariable) else list(items.items), index,
                                 source, type(value))


class ReplayedIterator(IteratorVariable):
    """An iterator read from the frame that the trace steps through `model`, a tracker over the live
    containers; each step it takes is replayed on the real iterator after the graph (`replay`)."""

    def __init__(self, tx: Tracer, model: IteratorVariable, source: Source, kind: type,
                 replay: Callable[[ReplayedIterator, Any], None]) -> None:
        self.model, self.source, self.kind, self._replay = model, source, kind, replay
        self.effects = tx.ctx.side_effects

    @property  # type: ignore[override]
    def items(self) -> Any:
        return self.model.items

    @property  # type: ignore[override]
    def index(self) -> int:
        return self.model.index

    def python_type(self) -> type:
        return self.kind

    def next(self) -> Any:
        item = self.model.next()
        self._replay(self, item)
        return item


def _replay_step(it: ReplayedIterator, item: Any) -> None:
    """`next(it, None)`: the real iterator takes the step the trace took, its end included (an
    iterator Python found spent stays spent)."""
    it.effects.call(ConstantVariable(next), [it, ConstantVariable(None)], {})


def _replay_count(it: ReplayedIterator, item: Any) -> None:
    """A carried `enumerate`: its inner iterator replays its own steps; only the count is set."""
    if item is not None:
        model = it.model
        count = model.current() if isinstance(model, CountedFromInput) else ConstantVariable(model.count)
        it.effects.call(ConstantVariable(set_count), [it, count], {})


def _guard_fields(tx: Tracer, value: Any, source: Source, *names: str) -> None:
    tx.ctx.add_guard(TypeGuard(source, type(value), loc=tx.loc()))
    for name in names:
        tx.ctx.add_guard(EqualsGuard(AttrSource(source, name), getattr(value, name), loc=tx.loc()))


def _inner(tx: Tracer, value: Any, source: Source) -> IteratorVariable:
    inner = tx.wrap(value, source)
    if not isinstance(inner, IteratorVariable):
        raise Unsupported("resume", f"pdyn cannot step a carried iterator over a {type(value).__name__}")
    return inner


def wrap_mapping_iterator(tx: Tracer, value: CarriedMappingIterator, source: Source) -> IteratorVariable:
    """A dict iterator a break handed on: traced as one over the live dict, from its position."""
    # keys compared by value (constants) or by identity (classes, functions, modules): one guard
    if value.failed or value.error is not None \
            or not all(is_constant_value(k) or isinstance(k, FIXED_KEY_TYPES) for k in value.keys):
        raise Unsupported("resume", "pdyn cannot resume a loop over a dict that changed or has object keys")
    _guard_fields(tx, value, source, "failed", "error", "kind", "what", "keys", "taken")
    mapping = tx.wrap(value.mapping, AttrSource(source, "mapping"))
    model = checked_iterator(tx, DictViewVariable(mapping, value.kind)) if type(mapping) is DictVariable else None
    if model is None:
        raise Unsupported("resume", f"pdyn cannot resume a loop over a {type(value.mapping).__name__}")
    model.keys, model.taken = list(value.keys), value.taken
    return ReplayedIterator(tx, model, source, model.kind, _replay_step)   # the type it stands for


class CountedFromInput(EnumerateIterator):
    """A carried `enumerate` over a loop traced from its position: its count is an int input too
    (`i` in `for i, layer in enumerate(layers)`), symbolic until Python reads its value."""

    def __init__(self, tx: Tracer, inner: IteratorVariable, start: VariableTracker) -> None:
        self.tx, self.inner, self.start, self.steps = tx, inner, start, 0

    def current(self, ahead: int = 0) -> VariableTracker:
        steps = self.steps + ahead
        return self.start if steps == 0 else self.tx.binary(operator.add, self.start, ConstantVariable(steps))

    def next(self) -> VariableTracker | None:
        item = self.inner.next()
        if item is None:
            return None
        self.steps += 1
        return TupleVariable([self.current(-1), item])

    def left(self) -> list[VariableTracker]:
        return [TupleVariable([self.current(i), v]) for i, v in enumerate(items_left(self.inner))]

    def rebuild(self, codegen: ResumeCodegen) -> str:
        return codegen.once(self, f"{codegen.constant(CarriedEnumerate, 'CarriedEnumerate')}("
                                  f"{codegen.iterator(self.inner)}, {codegen.reconstruct(self.current())})")


def wrap_enumerate(tx: Tracer, value: CarriedEnumerate, source: Source) -> IteratorVariable:
    inner = _inner(tx, value.inner, AttrSource(source, "inner"))
    if isinstance(inner, AheadIterator):   # the loop's position is data: so is its count
        _guard_fields(tx, value, source)
        model: EnumerateIterator = CountedFromInput(tx, inner, tx.wrap(value.count, AttrSource(source, "count")))
    else:
        _guard_fields(tx, value, source, "count")
        model = EnumerateIterator(inner, value.count)
    return ReplayedIterator(tx, model, source, enumerate, _replay_count)


def wrap_zip(tx: Tracer, value: CarriedZip, source: Source) -> IteratorVariable:
    """Its iterators replay their own steps; the zip has no state of its own."""
    _guard_fields(tx, value, source, "strict")
    tx.ctx.add_guard(LenGuard(AttrSource(source, "inners"), tuple, len(value.inners), loc=tx.loc()))
    inners = [_inner(tx, it, ItemSource(AttrSource(source, "inners"), i)) for i, it in enumerate(value.inners)]
    model = ZipIterator(tx, inners, value.strict)
    model.source = source
    return model


def wrap_chain(tx: Tracer, value: CarriedChain, source: Source) -> IteratorVariable:
    """Its iterators replay their own steps; the iterables still to come are read live. Where the
    trace moves on to one, the real chain does not: a later break rebuilds it from the trace's
    state (no source), never hands on this object."""
    _guard_fields(tx, value, source)
    tx.ctx.add_guard(LenGuard(AttrSource(source, "pending"), tuple, len(value.pending), loc=tx.loc()))
    pending = [tx.wrap(p, ItemSource(AttrSource(source, "pending"), i)) for i, p in enumerate(value.pending)]
    model = ChainIterator(tx, pending)
    if value.current is not None:
        model.current = _inner(tx, value.current, AttrSource(source, "current"))
    else:
        tx.ctx.add_guard(EqualsGuard(AttrSource(source, "current"), None, loc=tx.loc()))
    return model


def wrap_reversed(tx: Tracer, value: Any, source: Source) -> IteratorVariable:
    """`reversed(list)`: traced over the live list from its position."""
    tx.ctx.add_guard(TypeGuard(source, type(value), loc=tx.loc()))
    seq, index = iterator_state(value)
    tx.ctx.add_guard(EqualsGuard(IteratorStateSource(source, "index"), index, loc=tx.loc()))
    items = tx.wrap(seq, IteratorStateSource(source, "seq")) if index >= 0 else ListVariable([])
    if not isinstance(items, ListVariable):
        raise Unsupported("resume", f"pdyn cannot step a reverse iterator over a {type(seq).__name__}")
    model = ReversedListIterator(items)
    model.position = index
    return ReplayedIterator(tx, model, source, type(value), _replay_step)


CARRIED_WRAPS = {CarriedMappingIterator: wrap_mapping_iterator, CarriedEnumerate: wrap_enumerate, CarriedZip: wrap_zip,
                 CarriedChain: wrap_chain, type(reversed([])): wrap_reversed}
