"""The iterators a graph break hands to its resume function, at run time.

A loop over `d.items()`, `enumerate(xs)` or `zip(a, b)` that breaks goes on in the resume function
with the same iteration: it must read the live containers there, as Python's iterators do (a value
written after the break is seen, a key added raises). CPython's dict iterators cannot be made at a
position or read back, and an `enumerate` cannot be told its count, so pdyn hands over these plain
Python stand-ins, whose state the resume function's trace reads (`iterator_inputs.py`).
"""

from __future__ import annotations

from typing import Any


def mutation_error(what: str, same_size: bool) -> RuntimeError:
    """The RuntimeError of CPython's iterator over a dict (`what` "dictionary"), an OrderedDict or a
    set whose keys changed under it."""
    if what == "OrderedDict":
        return RuntimeError("OrderedDict mutated during iteration")
    if same_size and what == "dictionary":
        return RuntimeError("dictionary keys changed during iteration")
    return RuntimeError(f"{what} changed size during iteration")


class CarriedMappingIterator:
    """A dict's keys/values/items iterator at a position. `keys` are the keys when the loop began:
    a dict changed since raises on the next item, as CPython's iterator does."""

    def __init__(self, mapping: Any, kind: str, keys: tuple[Any, ...], what: str) -> None:
        self.mapping, self.kind, self.keys, self.what = mapping, kind, keys, what
        self.taken = 0
        self.failed = False   # spent by the error, as CPython's iterator is
        self.error: RuntimeError | None = None   # found by `at`: raised by the next step
        self._it: Any = None

    def at(self, taken: int) -> None:
        """Move to `taken` items in; run after the frame code replayed the trace's writes. `_it`,
        CPython's own iterator there, decides once the keys change at the same size (where it
        raises depends on its table layout)."""
        self.taken = taken
        self._it = iter(getattr(self.mapping, self.kind)())
        self._step_cpython(taken)

    def _step_cpython(self, n: int) -> None:
        try:
            for _ in range(n):
                next(self._it)
        except (StopIteration, RuntimeError):
            self._it = None

    def __iter__(self) -> CarriedMappingIterator:
        return self

    def __next__(self) -> Any:
        """As the trace's model steps it (`live_iterators.CheckedIterator`): the keys are compared
        with those the loop began with and the item is read at its index, so the real iterator and
        the trace's never part (a CPython iterator inside would go by table slot, not by key)."""
        if self.failed:
            raise StopIteration
        if self.error is not None:
            self.failed = True
            raise self.error
        keys = tuple(self.mapping)
        if keys != self.keys and len(keys) == len(self.keys) and self.what == "dictionary" \
                and self._it is not None:
            try:
                return next(self._it)
            except BaseException:
                self.failed = True
                raise
        if keys != self.keys:
            self.failed = True
            raise mutation_error(self.what, len(keys) == len(self.keys))
        if self.taken >= len(keys):
            self.failed = True   # spent for good, as CPython's is once it ended
            raise StopIteration
        key = keys[self.taken]
        self.taken += 1
        if self._it is not None:
            self._step_cpython(1)
        if self.kind == "keys":
            return key
        value = dict.__getitem__(self.mapping, key)
        return value if self.kind == "values" else (key, value)

    def __length_hint__(self) -> int:
        return 0 if self.failed or self.error is not None else len(self.keys) - self.taken


class CarriedEnumerate:
    """`enumerate(inner, start)` whose count the resume function's frame code can set."""

    def __init__(self, inner: Any, count: int) -> None:
        self.inner, self.count = inner, count

    def __iter__(self) -> CarriedEnumerate:
        return self

    def __next__(self) -> tuple[int, Any]:
        item = next(self.inner)
        self.count += 1
        return self.count - 1, item


class CarriedZip:
    """`zip(*inners, strict=strict)` with its iterators readable (`inners`); Python's zip steps it."""

    def __init__(self, inners: tuple[Any, ...], strict: bool) -> None:
        self.inners, self.strict = inners, strict
        self._zip = zip(*inners, strict=strict)

    def __iter__(self) -> CarriedZip:
        return self

    def __next__(self) -> tuple[Any, ...]:
        return next(self._zip)


class CarriedChain:
    """`itertools.chain` part-way: the iterator it is in (or None) and the iterables still to come."""

    def __init__(self, current: Any, pending: tuple[Any, ...]) -> None:
        self.current, self.pending = current, pending

    def __iter__(self) -> CarriedChain:
        return self

    def __next__(self) -> Any:
        while True:
            if self.current is None:
                if not self.pending:
                    raise StopIteration
                self.current, self.pending = iter(self.pending[0]), self.pending[1:]
            try:
                return next(self.current)
            except StopIteration:
                self.current = None


def set_count(it: CarriedEnumerate, count: int) -> None:
    """A replayed step of a traced `enumerate` whose inner iterator advances by its own replays."""
    it.count = count


def place_reversed(it: Any, seq: list[Any], position: int) -> None:
    """`reversed(seq)` moved to `position`, which may lie past the list's end (a list shortened
    under it: CPython's goes on if it grows back before the next step); `__setstate__` clamps to
    the end, so the list is padded for the call and cut back."""
    n = len(seq)
    list.extend(seq, [None] * (position + 1 - n))
    try:
        it.__setstate__(position)
    finally:
        list.__delitem__(seq, slice(n, None))


CARRIED_TYPES = (CarriedMappingIterator, CarriedEnumerate, CarriedZip, CarriedChain)
