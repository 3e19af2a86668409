"""`collections.defaultdict` and `collections.deque`, made in the trace (rebuilt after the graph
when they escape) or read from the inputs.

A defaultdict is a dict tracker whose missing-key read calls the factory and inserts its result,
as `__missing__` does; an input's mutations are replayed like a dict's. A deque is a sequence
with an optional `maxlen` (appends past it drop from the other end); an input deque is read-only
in the trace: a mutation is a graph break, since the frame replays list and dict changes only.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Any

from pdyn.base.errors import Unsupported, UserException
from pdyn.guards.guards import DictKeysGuard, EqualsGuard, LenGuard
from pdyn.sources import AttrSource, ItemSource, Source
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.registry import rule
from pdyn.trace.variables.values.constant import ConstantVariable, is_constant_value
from pdyn.trace.variables.containers.core import DictVariable, SequenceVariable, python_value

if TYPE_CHECKING:
    from pdyn.trace.frame_codegen import FrameCodegen
    from pdyn.trace.translator import InstructionTranslator as Tracer

NONE = ConstantVariable(None)


def _is_none(vt: VariableTracker) -> bool:
    return vt.is_python_constant() and vt.as_python_constant() is None


class DefaultDictVariable(DictVariable):
    """A defaultdict: `factory` is the tracker of its `default_factory` (None: a plain KeyError)."""

    def __init__(self, factory: VariableTracker, items: dict[Any, VariableTracker], source: Any = None):
        super().__init__(items, source, collections.defaultdict)
        self.factory = factory

    def is_python_constant(self) -> bool:
        return False  # the factory is behaviour, not data

    def getitem(self, tx: Tracer, key: VariableTracker) -> VariableTracker:
        if self.contains(tx, key) or _is_none(self.factory):
            return super().getitem(tx, key)
        value = self.factory.call(tx, [], {})  # `__missing__`: the factory's value is stored
        self.setitem(tx, key, value)
        return value

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        if name == "default_factory":
            return self.factory
        return super().getattr(tx, name)

    def call_method(self, tx: Tracer, name: str, args: list[VariableTracker],
                    kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name == "copy":
            return DefaultDictVariable(self.factory, self.items)
        if name == "__missing__":
            raise Unsupported("defaultdict", "pdyn cannot trace defaultdict.__missing__() called directly",
                              loc=tx.loc())
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen: FrameCodegen) -> str:
        if self.source is not None:
            return codegen.source_expr(self.source)
        body = ", ".join(f"{codegen.constant(k)}: {codegen.reconstruct(v)}" for k, v in self.items.items())
        kind = codegen.constant(collections.defaultdict, "defaultdict")
        factory = codegen.constant(self.factory.as_python_constant(), "factory") \
            if self.factory.source is None and self.factory.is_python_constant() else codegen.reconstruct(self.factory)
        return codegen.once(self, f"{kind}({factory}, {{{body}}})")

    def __repr__(self) -> str:
        return f"DefaultDictVariable({self.factory}, {self.items})"


class DequeVariable(SequenceVariable):
    """A deque, with its `maxlen` (None: unbounded)."""

    def __init__(self, items: list[VariableTracker], source: Any = None, maxlen: int | None = None):
        super().__init__(items[len(items) - maxlen:] if maxlen is not None and len(items) > maxlen else items, source)
        self.maxlen = maxlen

    def python_type(self) -> type:
        return collections.deque

    def as_python_constant(self) -> Any:
        return collections.deque((i.as_python_constant() for i in self.items), self.maxlen)

    def _mutate(self, tx: Tracer) -> None:
        if self.source is not None:
            raise Unsupported("deque_input", "pdyn cannot trace changing a deque read from the inputs", loc=tx.loc())

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        if name == "maxlen":
            return ConstantVariable(self.maxlen)
        return super().getattr(tx, name)

    def getitem(self, tx: Tracer, key: VariableTracker) -> VariableTracker:
        index = python_value(key, "a deque index", tx.loc())
        if isinstance(index, slice):
            raise UserException(TypeError("sequence index must be integer, not 'slice'"), tx.loc())
        return super().getitem(tx, key)

    def setitem(self, tx: Tracer, key: VariableTracker, value: VariableTracker) -> None:
        self._mutate(tx)
        index = python_value(key, "a deque index", tx.loc())
        try:
            self.items[index] = value
        except (IndexError, TypeError) as e:
            raise UserException(e, tx.loc()) from None

    def binary_op(self, tx: Tracer, fn: Any, other: VariableTracker) -> VariableTracker:
        raise Unsupported("deque_op", f"pdyn cannot trace `{fn.__name__}` on a deque", loc=tx.loc())

    def _push(self, item: VariableTracker, left: bool) -> None:
        if self.maxlen == 0:
            return
        if left:
            self.items.insert(0, item)
            if self.maxlen is not None and len(self.items) > self.maxlen:
                self.items.pop()
        else:
            self.items.append(item)
            if self.maxlen is not None and len(self.items) > self.maxlen:
                self.items.pop(0)

    def call_method(self, tx: Tracer, name: str, args: list[VariableTracker],
                    kwargs: dict[str, VariableTracker]) -> VariableTracker:
        found = self._method(tx, name, args) if name in ("index", "count") and not kwargs else None
        if found is not None:
            return found
        if kwargs:
            raise Unsupported("deque_method", f"pdyn cannot trace deque.{name}() with keywords", loc=tx.loc())
        if name == "copy":
            return DequeVariable(list(self.items), maxlen=self.maxlen)
        if name in ("__len__", "__getitem__", "__contains__"):
            return {"__len__": lambda: self.length(tx), "__getitem__": lambda: self.getitem(tx, args[0]),
                    "__contains__": lambda: ConstantVariable(self.contains(tx, args[0]))}[name]()
        self._mutate(tx)
        if name in ("append", "appendleft"):
            self._push(args[0], left=name == "appendleft")
        elif name in ("extend", "extendleft"):
            for item in tx.iterate(args[0]):
                self._push(item, left=name == "extendleft")
        elif name in ("pop", "popleft"):
            if args:
                raise UserException(TypeError(f"deque.{name}() takes no arguments ({len(args)} given)"), tx.loc())
            if not self.items:
                raise UserException(IndexError(f"{name} from an empty deque"), tx.loc())
            return self.items.pop(0 if name == "popleft" else -1)
        elif name == "clear":
            self.items.clear()
        elif name == "rotate":
            n = python_value(args[0], "deque.rotate()", tx.loc()) if args else 1
            if self.items:
                n %= len(self.items)
                self.items[:] = self.items[-n:] + self.items[:-n] if n else self.items
        elif name == "reverse":
            self.items.reverse()
        elif name == "insert" and len(args) == 2:
            if self.maxlen is not None and len(self.items) >= self.maxlen:
                raise UserException(IndexError("deque already at its maximum size"), tx.loc())
            self.items.insert(python_value(args[0], "deque.insert()'s index", tx.loc()), args[1])
        elif name == "remove":
            index = self._method(tx, "index", args)
            del self.items[index.as_python_constant()]  # type: ignore[union-attr]
        else:
            raise Unsupported("deque_method", f"pdyn cannot trace deque.{name}()", loc=tx.loc())
        return NONE

    def delitem(self, tx: Tracer, key: VariableTracker) -> None:
        self._mutate(tx)
        try:
            del self.items[python_value(key, "a deque index", tx.loc())]
        except (IndexError, TypeError) as e:
            raise UserException(e, tx.loc()) from None

    def reconstruct(self, codegen: FrameCodegen) -> str:
        if self.source is not None:
            return codegen.source_expr(self.source)
        kind = codegen.constant(collections.deque, "deque")
        items = ", ".join(self._reconstruct_items(codegen))
        return codegen.once(self, f"{kind}([{items}], {self.maxlen!r})")

    def __repr__(self) -> str:
        return f"DequeVariable({self.items}, maxlen={self.maxlen})"


def dict_items(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> dict[Any, VariableTracker]:
    """The items `dict(*args, **kwargs)` would hold: a dict, or an iterable of pairs, then kwargs."""
    items: dict[Any, VariableTracker] = {}
    if args:
        source = args[0]
        if hasattr(source, "as_dict"):  # a mapping view (`obj.__dict__`): its items, not its keys as pairs
            source = source.as_dict(tx)
        if isinstance(source, DictVariable):
            items.update(source.items)
        else:
            for pair in tx.iterate(source):
                k, v = tx.iterate(pair)
                items[python_value(k, "a dict key", tx.loc())] = v
    items.update(kwargs)
    return items


@rule(collections.defaultdict)
def build_defaultdict(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`defaultdict(factory, *dict_args, **kwargs)`."""
    factory = args[0] if args else NONE
    if len(args) > 2:
        raise UserException(TypeError(f"defaultdict expected at most 2 arguments, got {len(args)}"), tx.loc())
    return DefaultDictVariable(factory, dict_items(tx, args[1:], kwargs))


@rule(collections.deque)
def build_deque(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`deque(iterable=(), maxlen=None)`."""
    if len(args) > 2 or set(kwargs) - {"iterable", "maxlen"}:
        raise Unsupported("deque", "pdyn traces deque(iterable, maxlen) only", loc=tx.loc())
    iterable = args[0] if args else kwargs.get("iterable")
    maxlen_vt = args[1] if len(args) > 1 else kwargs.get("maxlen", NONE)
    maxlen = python_value(maxlen_vt, "deque(maxlen=)", tx.loc())
    if maxlen is not None and (type(maxlen) is not int or maxlen < 0):
        raise UserException(ValueError("maxlen must be non-negative") if type(maxlen) is int
                            else TypeError("an integer is required"), tx.loc())
    return DequeVariable(tx.iterate(iterable) if iterable is not None else [], maxlen=maxlen)


def wrap_defaultdict(tx: Tracer, value: collections.defaultdict[Any, Any], source: Source) -> VariableTracker:
    """An input defaultdict: its keys guarded as a dict's, its factory by identity."""
    if not all(is_constant_value(k) for k in value):
        raise Unsupported("dict_keys", f"pdyn needs constant keys in dict {source}", loc=tx.loc())
    tx.ctx.add_guard(DictKeysGuard(source, type(value), tuple(value), loc=tx.loc()))
    factory = tx.wrap(value.default_factory, AttrSource(source, "default_factory"))
    return DefaultDictVariable(factory, {k: tx.wrap(v, ItemSource(source, k)) for k, v in value.items()}, source)


def wrap_deque(tx: Tracer, value: collections.deque[Any], source: Source) -> VariableTracker:
    """An input deque: its length and maxlen guarded, its items read by index."""
    tx.ctx.add_guard(LenGuard(source, type(value), len(value), loc=tx.loc()))
    tx.ctx.add_guard(EqualsGuard(AttrSource(source, "maxlen"), value.maxlen, loc=tx.loc()))
    return DequeVariable([tx.wrap(v, ItemSource(source, i)) for i, v in enumerate(value)], source, value.maxlen)

