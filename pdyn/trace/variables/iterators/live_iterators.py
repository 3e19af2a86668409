"""Iterators made in the trace that read their container as they go, as Python's do.

`enumerate`, `zip` and `reversed` take from the iterators under them one item at a time, so a list
the loop body grows or shrinks is seen as it is then. An iterator over a dict or a set raises
Python's RuntimeError once the container changed size (a dict whose keys changed at the same size
raises too: CPython's own point of failure there depends on its table layout; pdyn raises on the
next item).

At a graph break each is rebuilt (`rebuild`) as a real iterator over the live containers at the
trace's position (`carried_iterators.py`), so the resume function sees a change made after the
break as Python would; only a set's iterator goes as the items it has left (`items`).
"""

from __future__ import annotations

import abc
import collections
from typing import TYPE_CHECKING, Any

from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.variables.iterators.carried_iterators import (CarriedEnumerate, CarriedMappingIterator, CarriedZip, mutation_error,
                                                      place_reversed)
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.containers.sets import SetVariable
from pdyn.trace.variables.containers.core import (DictVariable, DictViewVariable, IteratorVariable, ListVariable,
                                             TupleVariable, key_tracker)

if TYPE_CHECKING:
    from pdyn.trace.frame_codegen import ResumeCodegen
    from pdyn.trace.translator import InstructionTranslator as Tracer


def items_left(it: IteratorVariable) -> list[VariableTracker]:
    """What `it` would still give, without taking it."""
    if isinstance(it, _Derived):
        return it.items
    seq = it.items.items if isinstance(it.items, ListVariable) else it.items
    return list(seq[it.index:])


class _Derived(IteratorVariable):
    """An iterator whose items come from others: no item list of its own, except at a break."""

    kind: type = object

    def __init__(self) -> None:
        """No `items`/`index` to set: both are read from the iterators underneath."""

    @property  # type: ignore[override]
    def items(self) -> list[VariableTracker]:
        return self.left()

    @property  # type: ignore[override]
    def index(self) -> int:
        return 0

    def python_type(self) -> type:
        return self.kind

    @abc.abstractmethod
    def left(self) -> list[VariableTracker]:
        """The items still to come, as a break hands them on (each kind says how)."""


class EnumerateIterator(_Derived):
    kind = enumerate

    def __init__(self, inner: IteratorVariable, start: int) -> None:
        self.inner, self.count = inner, start

    def next(self) -> VariableTracker | None:
        item = self.inner.next()
        if item is None:
            return None
        self.count += 1
        return TupleVariable([ConstantVariable(self.count - 1), item])

    def left(self) -> list[VariableTracker]:
        return [TupleVariable([ConstantVariable(self.count + i), v]) for i, v in enumerate(items_left(self.inner))]

    def rebuild(self, codegen: ResumeCodegen) -> str:
        return codegen.once(self, f"{codegen.constant(CarriedEnumerate, 'CarriedEnumerate')}("
                                  f"{codegen.iterator(self.inner)}, {self.count})")


class ZipIterator(_Derived):
    kind = zip

    def __init__(self, tx: Tracer, inners: list[IteratorVariable], strict: bool) -> None:
        self.tx, self.inners, self.strict = tx, inners, strict

    def next(self) -> VariableTracker | None:
        row = []
        for i, it in enumerate(self.inners):  # stops at the first exhausted one, taking no more
            item = it.next()
            if item is None:
                if self.strict:
                    self._check_all_done(i)
                return None
            row.append(item)
        return TupleVariable(row)

    def _check_all_done(self, first_done: int) -> None:
        """`strict=True`: every argument must end together, as Python checks."""
        def firsts(n: int) -> str:
            return "argument 1" if n == 1 else f"arguments 1-{n}"
        if first_done > 0:
            raise UserException(ValueError(f"zip() argument {first_done + 1} is shorter than {firsts(first_done)}"),
                                self.tx.loc())
        for i, it in enumerate(self.inners[1:], start=2):
            if it.next() is not None:
                raise UserException(ValueError(f"zip() argument {i} is longer than {firsts(i - 1)}"), self.tx.loc())

    def left(self) -> list[VariableTracker]:
        return [TupleVariable(list(row)) for row in zip(*(items_left(it) for it in self.inners))]

    def rebuild(self, codegen: ResumeCodegen) -> str:
        inners = "".join(f"{codegen.iterator(it)}, " for it in self.inners)
        return codegen.once(self, f"{codegen.constant(CarriedZip, 'CarriedZip')}(({inners}), {self.strict})")


class ReversedListIterator(_Derived):
    """`reversed(list)`: from the end it had when made, down; a list shorter by then stops it."""

    kind = type(reversed([]))

    def __init__(self, seq: ListVariable) -> None:
        self.seq, self.position = seq, len(seq.items) - 1

    def next(self) -> VariableTracker | None:
        if 0 <= self.position < len(self.seq.items):
            self.position -= 1
            return self.seq.items[self.position + 1]
        self.position = -1
        return None

    def left(self) -> list[VariableTracker]:
        if not 0 <= self.position < len(self.seq.items):
            return []
        return list(reversed(self.seq.items[:self.position + 1]))

    def rebuild(self, codegen: ResumeCodegen) -> str:
        """The list's own reverse iterator, placed after the list's writes are replayed."""
        seq = codegen.reconstruct(self.seq)
        name = codegen.once(self, f"reversed({seq})")
        if self.position < len(self.seq.items):
            codegen.positioned.append(f"{name}.__setstate__({self.position})")
        else:   # past the end of a list shortened under it: `__setstate__` alone would clamp it
            place = codegen.constant(place_reversed, "place_reversed")
            codegen.positioned.append(f"{place}({name}, {seq}, {self.position})")
        return name


class CheckedIterator(_Derived):
    """Over a dict (its keys, values or items) or a set made in the trace: raises as Python does
    once the container changed under it."""

    def __init__(self, tx: Tracer, container: Any, kind: type, read: Any, what: str, view: str = "") -> None:
        self.tx, self.container, self.kind, self.read, self.what = tx, container, kind, read, what
        self.view = view   # "keys", "values" or "items" over a dict; "" over a set
        self.keys = list(container.items)
        self.taken = 0
        self.failed = False

    def next(self) -> VariableTracker | None:
        if self.failed:
            return None
        keys = list(self.container.items)
        ordered = self.what == "OrderedDict"
        if len(keys) != len(self.keys) or ordered and keys != self.keys:
            self.failed = True  # CPython's iterator is spent after the error
            raise UserException(mutation_error(self.what, False), self.tx.loc())
        if keys != self.keys and self.what == "dictionary":
            self.failed = True
            raise UserException(mutation_error(self.what, True), self.tx.loc())
        if self.taken >= len(keys):
            self.failed = True  # spent for good once it ended, as CPython's is
            return None
        self.taken += 1
        return self.read(keys[self.taken - 1])

    def left(self) -> list[VariableTracker]:
        return [self.read(k) for k in list(self.container.items)[self.taken:]]

    def rebuild(self, codegen: ResumeCodegen) -> str | None:
        """Over a dict: pdyn's stand-in for its iterator, over the live dict, checked against the keys
        the loop began with and moved to the trace's position after the dict's writes are replayed.
        A set's goes as its items left (None): its order in the frame code's rebuilt set may differ."""
        if not self.view:
            return None
        if self.failed:
            return codegen.once(self, "iter(())")
        if list(self.container.items) != self.keys:   # where CPython's raises depends on its table layout
            raise Unsupported("resume", "pdyn cannot carry an iterator over a dict changed since across a break")
        made = codegen.constant(CarriedMappingIterator, "CarriedMappingIterator")
        name = codegen.once(self, f"{made}({codegen.reconstruct(self.container)}, {self.view!r}, "
                                  f"{codegen.constant(tuple(self.keys), 'keys')}, {self.what!r})")
        codegen.positioned.append(f"{name}.at({self.taken})")
        return name


def make_iterator(tx: Tracer, vt: VariableTracker) -> IteratorVariable:
    """`iter(vt)`: an iterator is itself, a list is read live, a dict or a set checks that it did
    not change, anything else is iterated now."""
    if isinstance(vt, IteratorVariable):
        return vt
    if isinstance(vt, ListVariable):
        return IteratorVariable(vt)
    make_iter = getattr(vt, "make_iter", None)
    if make_iter is not None:  # a user object: the iterator its `__iter__` returns, taken lazily
        return make_iter(tx)
    checked = checked_iterator(tx, vt)
    return checked if checked is not None else IteratorVariable(tx.iterate(vt))


def checked_iterator(tx: Tracer, vt: VariableTracker) -> CheckedIterator | None:
    """The iterator Python makes for a dict, a view of one, or a set made in the trace (None for
    anything else)."""
    if type(vt) is DictVariable:
        return _over_dict(tx, vt, "keys")
    if type(vt) is DictViewVariable:
        return _over_dict(tx, vt.mapping, vt.kind)
    if type(vt) is SetVariable:
        return CheckedIterator(tx, vt, type(iter(set())), lambda k: vt.items[k], "Set")
    return None


def _over_dict(tx: Tracer, mapping: DictVariable, kind: str) -> CheckedIterator:
    for k in mapping.items:  # a key pdyn cannot stand for (an object pinned by identity) stops it here
        key_tracker(tx, k)
    reads = {"keys": lambda k: key_tracker(tx, k), "values": lambda k: mapping.items[k],
             "items": lambda k: TupleVariable([key_tracker(tx, k), mapping.items[k]])}
    ordered = issubclass(mapping.dict_type, collections.OrderedDict)
    return CheckedIterator(tx, mapping, type(iter(getattr(collections.OrderedDict() if ordered else {}, kind)())), reads[kind],
                           "OrderedDict" if ordered else "dictionary", kind)
