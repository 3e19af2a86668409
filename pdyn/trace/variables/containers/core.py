"""Trackers for Python containers built or read during a trace: tuples, torch.Size, lists, dicts,
sets, and the iterators `for` loops walk.

Lists and dicts are mutable in the tracer exactly as in Python (aliases see each other's changes);
a mutated container that came from the frame's inputs is replayed onto the real object after the
graph runs (see OutputGraph.side_effects).
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Callable

import torch

from pdyn.base.errors import SourceLoc, Unsupported, UserException
from pdyn.sources import ItemSource, SizeSource, Source
from pdyn.trace.variables.base import VariableTracker, sizes_in
from pdyn.trace.variables.containers.dict_replay import replay_dict
from pdyn.guards.guards import IdGuard
from pdyn.trace.variables.values.constant import FIXED_KEY_TYPES, ConstantVariable, is_constant_value, is_identity_key
from pdyn.trace.variables.values.symint import SymIntVariable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer
    from pdyn.trace.frame_codegen import FrameCodegen, ResumeCodegen


def is_known(vt: VariableTracker) -> bool:
    """A value Python can have at trace time: a constant, or a symbolic int (by specializing it)."""
    return isinstance(vt, SymIntVariable) or vt.is_python_constant()


def python_value(vt: VariableTracker, why: str, loc: SourceLoc | None = None) -> Any:
    """`vt`'s Python value; a symbolic int is a value read at `loc` (specialized, TENSOR_MATCH_STATIC)."""
    if isinstance(vt, SymIntVariable):
        return vt.value_read(why, loc)
    if isinstance(vt, SequenceVariable) and any(isinstance(i, SymIntVariable) for i in vt.items):
        return vt.python_type()(python_value(i, why, loc) for i in vt.items)
    return vt.as_python_constant()


def key_tracker(tx: Tracer, key: Any) -> VariableTracker:
    """The tracker of a dict key met by iterating: a constant, or a class/function/module (fixed for
    the program's life); another object is pinned only by identity, so its attributes are unknown."""
    if is_constant_value(key):
        return ConstantVariable(key)
    if isinstance(key, FIXED_KEY_TYPES):
        return tx.wrap_constant(key)
    raise Unsupported("dict_keys", f"pdyn cannot iterate over a dict key that is a {type(key).__name__} object")


def _key(tx: Tracer, vt: VariableTracker) -> Any:
    """A dict key's Python value: a constant, or an object read from the frame that the dict finds by
    identity (`table.get(tp.__origin__)` with typing.Union): pinned by an IdGuard."""
    value = getattr(vt, "value", None)
    if not is_known(vt) and vt.source is not None and value is not None and is_identity_key(value):
        tx.ctx.add_guard(IdGuard(vt.source, value, loc=tx.loc()))
        return value
    return hashable(vt, "dict key")


def unhashable_type(vt: VariableTracker) -> None:
    """Python's TypeError for a dict key or set element whose type cannot hash (a list, whatever
    it holds): its type decides it, so it is raised before its value is needed."""
    try:
        kind = vt.python_type()
    except Unsupported:
        return
    if getattr(kind, "__hash__", None) is None:
        raise UserException(TypeError(f"unhashable type: '{kind.__name__}'"), catchable=True)


def hashable(vt: VariableTracker, what: str) -> Any:
    """A dict key's or set element's constant value; an unhashable one raises Python's TypeError
    (the value is a constant: its guards decide that it raises)."""
    unhashable_type(vt)
    value = _const(vt, what)
    try:
        hash(value)
    except TypeError as e:
        raise UserException(e, catchable=True) from None
    return value


def _const(vt: VariableTracker, what: str) -> Any:
    if isinstance(vt, SliceVariable):
        return slice(*(python_value(p, f"a slice bound of a Python {what}") for p in vt.parts))
    if not is_known(vt):
        raise Unsupported("non_constant_index", f"pdyn needs a constant {what}, got {vt}")
    return python_value(vt, f"a Python {what}")


def _index_error(seq: SequenceVariable, index: Any) -> Exception:
    """The error indexing the real value raises (a tuple's says "tuple index", a str index says
    what it is): the same index on a builtin sequence of its kind and length."""
    stand_in = (tuple if issubclass(seq.python_type(), tuple) else list)(range(len(seq.items)))
    try:
        stand_in[index]
    except (IndexError, TypeError, ValueError) as e:   # ValueError: a slice step of 0
        return e
    raise AssertionError(f"indexing {seq} with {index!r} failed, but not on a {type(stand_in).__name__}")


def _compares_by_identity(vt: VariableTracker) -> bool:
    """`==` on this value is object's (identity): a function, a module, a plain user object."""
    return vt.python_type().__eq__ is object.__eq__


class SliceVariable(VariableTracker):
    """A slice with a symbolic bound (`x[:n]`): symbolic in a tensor index, a value read elsewhere."""

    def __init__(self, parts: list[VariableTracker]):
        self.parts = parts

    def python_type(self) -> type:
        return slice

    def as_python_constant(self) -> slice:
        """The slice itself, where Python needs it (a module list, a Python list): its symbolic
        bounds are value reads, so they are guarded."""
        return slice(*(p.as_python_constant() for p in self.parts))


class ContainerMethodVariable(VariableTracker):
    """A method of a container the trace knows (`items.append`, `d.get`): calling it runs the
    container's `call_method`, which mutates the tracker as Python would mutate the object."""

    def __init__(self, obj: VariableTracker, name: str):
        self.obj = obj
        self.name = name

    def python_type(self) -> type:
        return type([].append)

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.obj.call_method(tx, self.name, args, kwargs)

    def reconstruct(self, codegen: FrameCodegen) -> str:
        return f"{codegen.reconstruct(self.obj)}.{self.name}"

    def __repr__(self) -> str:
        return f"ContainerMethodVariable({self.obj!r}.{self.name})"


def container_getattr(vt: VariableTracker, name: str) -> VariableTracker:
    """`vt.name` for a container tracker: a bound method, or the AttributeError Python raises."""
    kind = vt.python_type()
    if not callable(getattr(kind, name, None)):
        raise UserException(AttributeError(f"'{kind.__name__}' object has no attribute '{name}'"))
    return ContainerMethodVariable(vt, name)


class SequenceVariable(VariableTracker):
    """Shared behaviour of tuples and lists: indexing, iteration, length, `in`, `+`, `*`."""

    def __init__(self, items: list[VariableTracker], source: Source | None = None):
        self.items = list(items)
        self.source = source

    def is_python_constant(self) -> bool:
        return all(i.is_python_constant() for i in self.items)

    def as_python_constant(self) -> Any:
        return self.python_type()(i.as_python_constant() for i in self.items)

    def iterate(self, tx: Tracer) -> list[VariableTracker]:
        return list(self.items)

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        return container_getattr(self, name)

    def getitem(self, tx: Tracer, key: VariableTracker) -> VariableTracker:
        index = _const(key, "index")
        try:
            if isinstance(index, slice):
                return type(self)(self.items[index])  # type: ignore[call-arg]
            return self.items[operator.index(index)]
        except (IndexError, TypeError, ValueError):  # the length is known (made here, or guarded): catchable
            raise UserException(_index_error(self, index), catchable=True) from None

    def binary_op(self, tx: Tracer, fn: Callable[[Any, Any], Any], other: VariableTracker) -> VariableTracker:
        in_place = fn in (operator.iadd, operator.imul) and isinstance(self, ListVariable)
        if in_place and fn is operator.iadd:  # list += iterable extends the same list
            self.call_method(tx, "extend", [other], {})
            return self
        if fn in (operator.add, operator.iadd) and isinstance(other, SequenceVariable) \
                and other.python_type() is self.python_type():
            return type(self)(self.items + other.items)  # type: ignore[call-arg]
        if fn in (operator.add, operator.iadd) and isinstance(other, SizeVariable) and type(self) is TupleVariable:
            return other.radd(tx, self)  # tuple + Size is a Size
        if fn in (operator.mul, operator.imul) and other.is_python_constant() \
                and type(other.as_python_constant()) in (int, bool):
            repeated = self.items * other.as_python_constant()
            if in_place:
                self.items[:] = repeated
                self._mutate(tx)  # type: ignore[attr-defined]
                return self
            return type(self)(repeated)  # type: ignore[call-arg]
        if fn in (operator.eq, operator.ne) and self.is_python_constant() and other.is_python_constant():
            return ConstantVariable(fn(self.as_python_constant(), other.as_python_constant()))
        return super().binary_op(tx, fn, other)

    def contains(self, tx: Tracer, item: VariableTracker) -> bool:
        if item.is_python_constant() and self.is_python_constant():
            return item.as_python_constant() in self.as_python_constant()
        for i in self.items:  # Python's `in`: identity, then `==` (on sizes, a guarded comparison)
            if i is item or tx.binary(operator.eq, i, item).truth(tx):
                return True
        return False

    def truth(self, tx: Tracer) -> bool:
        return bool(self.items)

    def length(self, tx: Tracer) -> VariableTracker:
        return ConstantVariable(len(self.items))

    def _method(self, tx: Tracer, name: str, args: list[VariableTracker]) -> VariableTracker | None:
        if name == "index" and len(args) == 1:
            return ConstantVariable(self._find(args[0], "index"))
        if name == "count" and len(args) == 1 and args[0].is_python_constant() and self.is_python_constant():
            return ConstantVariable(self.as_python_constant().count(args[0].as_python_constant()))
        return None

    def _find(self, value: VariableTracker, method: str) -> int:
        """Where `value` first is, compared as Python compares (identity, then `==`): decided at
        trace time only where every comparison is (constants, or objects compared by identity)."""
        known = value.is_python_constant()
        for i, item in enumerate(self.items):
            if item is value:
                return i
            if known and item.is_python_constant():
                if item.as_python_constant() == value.as_python_constant():
                    return i
            elif not (_compares_by_identity(item) and (known or _compares_by_identity(value))):
                raise Unsupported("list_method", f"pdyn cannot decide whether {item} == {value} at trace time")
        kind = self.python_type().__name__
        if kind in ("list", "tuple") and (method == "remove" or kind == "tuple"):
            raise UserException(ValueError(f"{kind}.{method}(x): x not in {kind}"), catchable=True)
        if not known:
            raise Unsupported("list_method", f"pdyn cannot spell the error of {kind}.{method}({value})")
        raise UserException(ValueError(f"{value.as_python_constant()!r} is not in {kind}"), catchable=True)

    def _reconstruct_items(self, codegen: FrameCodegen) -> list[str]:
        return [codegen.reconstruct(i) for i in self.items]


class TupleVariable(SequenceVariable):
    """A tuple: from the inputs (rebuilt by its source) or made in the trace."""

    def python_type(self) -> type:
        return tuple

    def sizes_held(self, source: Source, depth: int) -> list[tuple[SizeSource, Any]]:
        return sizes_in(((ItemSource(source, i), item) for i, item in enumerate(self.items)), depth)

    def call_method(self, tx: Tracer, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        result = self._method(tx, name, args)
        if result is None:
            raise Unsupported("tuple_method", f"pdyn cannot trace tuple.{name}()")
        return result

    def reconstruct(self, codegen: FrameCodegen) -> str:
        if self.source is not None:
            return codegen.source_expr(self.source)
        items = self._reconstruct_items(codegen)
        return "(" + "".join(f"{i}, " for i in items) + ")"

    def __repr__(self) -> str:
        return f"TupleVariable({self.items})"


class SizeVariable(TupleVariable):
    """A torch.Size: the sizes of a tensor (static ints today; symbolic ints with dynamic shapes)."""

    def python_type(self) -> type:
        return torch.Size

    def as_python_constant(self) -> Any:
        return torch.Size([i.as_python_constant() for i in self.items])

    def getitem(self, tx: Tracer, key: VariableTracker) -> VariableTracker:
        result = super().getitem(tx, key)
        return SizeVariable(result.items) if isinstance(result, TupleVariable) else result

    def call_method(self, tx: Tracer, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name == "numel" and not args and not kwargs:  # symbolic where the sizes are
            total: VariableTracker = ConstantVariable(1)
            for item in self.items:
                total = tx.binary(operator.mul, total, item)
            return total
        return super().call_method(tx, name, args, kwargs)

    def binary_op(self, tx: Tracer, fn: Callable[[Any, Any], Any], other: VariableTracker) -> VariableTracker:
        if fn in (operator.add, operator.iadd):  # Size + tuple is a Size
            return SizeVariable(self.items + _size_items(tx, other))
        return super().binary_op(tx, fn, other)

    def radd(self, tx: Tracer, other: VariableTracker) -> VariableTracker:
        """`other + self` where `other` is a tuple: a Size."""
        return SizeVariable(_size_items(tx, other) + self.items)

    def reconstruct(self, codegen: FrameCodegen) -> str:
        return f"{codegen.constant(torch.Size, 'Size')}({super().reconstruct(codegen)})"


def _size_items(tx: Tracer, other: VariableTracker) -> list[VariableTracker]:
    """The items of a tuple joined to a torch.Size: ints (symbolic or not), as torch.Size requires."""
    if isinstance(other, ConstantVariable) and type(other.value) is tuple:
        items: list[VariableTracker] = [ConstantVariable(v) for v in other.value]
    elif isinstance(other, SequenceVariable) and other.python_type() in (tuple, torch.Size):
        items = list(other.items)
    else:
        raise UserException(TypeError(f"can only concatenate tuple (not \"{other.python_type().__name__}\") to tuple"))
    for item in items:
        kind = item.python_type()
        if not (kind is int or (isinstance(item, SymIntVariable) and item.pytype is int)):
            raise Unsupported("size_item", f"pdyn cannot put a {kind.__name__} in a torch.Size", loc=tx.loc())
    return items


class ListVariable(SequenceVariable):
    """A list. Mutations of a list read from the inputs are replayed on it after the graph."""

    def python_type(self) -> type:
        return list

    def sizes_held(self, source: Source, depth: int) -> list[tuple[SizeSource, Any]]:
        return sizes_in(((ItemSource(source, i), item) for i, item in enumerate(self.items)), depth)

    def replay_contents(self, codegen: FrameCodegen, target: str, name: str) -> str:
        codegen.lines.append(f"{name} = [{', '.join(codegen.reconstruct(v) for v in self.items)}]")
        return f"{target}[:] = {name}"

    def _mutate(self, tx: Tracer) -> None:
        if self.source is not None:
            tx.ctx.side_effects.mutated(self)

    def call_method(self, tx: Tracer, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        result = self._method(tx, name, args)
        if result is not None:
            return result
        if kwargs and name != "sort":
            raise Unsupported("list_method", f"pdyn cannot trace list.{name}() with keywords")
        try:
            if name == "append":
                self.items.append(args[0])
            elif name == "extend":
                self.items.extend(tx.iterate(args[0]))
            elif name == "insert":
                self.items.insert(_const(args[0], "index"), args[1])
            elif name == "pop":
                value = self.items.pop(*[_const(a, "index") for a in args])
                self._mutate(tx)
                return value
            elif name == "clear":
                self.items.clear()
            elif name == "reverse":
                self.items.reverse()
            elif name == "copy":
                return ListVariable(self.items)
            elif name == "remove":
                del self.items[self._find(args[0], "remove")]
            elif name == "sort" and self.is_python_constant():
                opts = {k: _const(v, k) for k, v in kwargs.items()}
                values = sorted(self.as_python_constant(), **opts)
                self.items = [ConstantVariable(v) for v in values]
            elif name == "__setitem__":
                self.setitem(tx, args[0], args[1])
                return ConstantVariable(None)
            else:
                raise Unsupported("list_method", f"pdyn cannot trace list.{name}()")
        except (IndexError, ValueError, TypeError) as e:
            raise UserException(e) from None
        self._mutate(tx)
        return ConstantVariable(None)

    def setitem(self, tx: Tracer, key: VariableTracker, value: VariableTracker) -> None:
        index = _const(key, "index")
        try:
            if isinstance(index, slice):
                self.items[index] = tx.iterate(value)
            else:
                self.items[operator.index(index)] = value
        except (IndexError, TypeError, ValueError) as e:
            raise UserException(e) from None
        self._mutate(tx)

    def delitem(self, tx: Tracer, key: VariableTracker) -> None:
        try:
            del self.items[_const(key, "index")]
        except (IndexError, TypeError) as e:
            raise UserException(e) from None
        self._mutate(tx)

    def reconstruct(self, codegen: FrameCodegen) -> str:
        if self.source is not None:
            return codegen.source_expr(self.source)
        return codegen.once(self, "[" + ", ".join(self._reconstruct_items(codegen)) + "]")

    def __repr__(self) -> str:
        return f"ListVariable({self.items})"


class DictVariable(VariableTracker):
    """A dict whose keys are constants known at trace time; values are any trackers."""

    def __init__(self, items: dict[Any, VariableTracker], source: Source | None = None, dict_type: type = dict):
        self.items = dict(items)
        self.source = source
        self.dict_type = dict_type

    def python_type(self) -> type:
        return self.dict_type

    def sizes_held(self, source: Source, depth: int) -> list[tuple[SizeSource, Any]]:
        return sizes_in(((ItemSource(source, k), v) for k, v in self.items.items() if is_constant_value(k)), depth)

    def replay_contents(self, codegen: FrameCodegen, target: str, name: str) -> str:
        items = ", ".join(f"{codegen.constant(k)}: {codegen.reconstruct(v)}" for k, v in self.items.items())
        codegen.lines.append(f"{name} = {{{items}}}")
        return f"{codegen.constant(replay_dict, 'replay_dict')}({target}, {name})"

    def is_python_constant(self) -> bool:
        return all(v.is_python_constant() for v in self.items.values())

    def as_python_constant(self) -> Any:
        return self.dict_type((k, v.as_python_constant()) for k, v in self.items.items())

    def _mutate(self, tx: Tracer) -> None:
        if self.source is not None:
            tx.ctx.side_effects.mutated(self)

    def iterate(self, tx: Tracer) -> list[VariableTracker]:
        return [key_tracker(tx, k) for k in self.items]

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        return container_getattr(self, name)

    def truth(self, tx: Tracer) -> bool:
        return bool(self.items)

    def length(self, tx: Tracer) -> VariableTracker:
        return ConstantVariable(len(self.items))

    def contains(self, tx: Tracer, item: VariableTracker) -> bool:
        return _key(tx, item) in self.items

    def getitem(self, tx: Tracer, key: VariableTracker) -> VariableTracker:
        k = _key(tx, key)
        if k not in self.items:
            if hasattr(self.dict_type, "__missing__"):
                raise Unsupported("dict_missing", f"pdyn cannot trace {self.dict_type.__name__}.__missing__")
            # the keys are known: made in the trace, or guarded (DictKeysGuard), so handlers may catch it
            raise UserException(KeyError(k), catchable=True)
        return self.items[k]

    def setitem(self, tx: Tracer, key: VariableTracker, value: VariableTracker) -> None:
        self.items[_key(tx, key)] = value
        self._mutate(tx)

    def delitem(self, tx: Tracer, key: VariableTracker) -> None:
        k = _key(tx, key)
        if k not in self.items:
            raise UserException(KeyError(k))
        del self.items[k]
        self._mutate(tx)

    def call_method(self, tx: Tracer, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name in ("keys", "values", "items"):
            return DictViewVariable(self, name)
        if name == "get":
            k = _key(tx, args[0])
            return self.items.get(k, args[1] if len(args) > 1 else ConstantVariable(None))
        if name == "copy":
            return DictVariable(self.items, dict_type=self.dict_type)
        if name == "__getitem__":
            return self.getitem(tx, args[0])
        if name == "__contains__":
            return ConstantVariable(self.contains(tx, args[0]))
        return self._mutating_method(tx, name, args, kwargs)

    def _mutating_method(self, tx: Tracer, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name in ("__setitem__",):
            self.setitem(tx, args[0], args[1])
            return ConstantVariable(None)
        if name == "setdefault":
            k = _key(tx, args[0])
            if k not in self.items:
                self.setitem(tx, args[0], args[1] if len(args) > 1 else ConstantVariable(None))
            return self.items[k]
        if name == "pop":
            k = _key(tx, args[0])
            if k not in self.items and len(args) < 2:
                raise UserException(KeyError(k))
            value = self.items.pop(k) if k in self.items else args[1]
            self._mutate(tx)
            return value
        if name == "update":
            for a in args:
                if not isinstance(a, DictVariable):
                    raise Unsupported("dict_update", "pdyn traces dict.update() only with a dict argument")
                self.items.update(a.items)
            for k, v in kwargs.items():
                self.items[k] = v
            self._mutate(tx)
            return ConstantVariable(None)
        if name == "clear":
            self.items.clear()
            self._mutate(tx)
            return ConstantVariable(None)
        raise Unsupported("dict_method", f"pdyn cannot trace dict.{name}()")

    def reconstruct(self, codegen: FrameCodegen) -> str:
        if self.source is not None:
            return codegen.source_expr(self.source)
        body = ", ".join(f"{codegen.constant(k)}: {codegen.reconstruct(v)}" for k, v in self.items.items())
        expr = "{" + body + "}"
        if self.dict_type is not dict:
            expr = f"{codegen.constant(self.dict_type, self.dict_type.__name__)}({expr})"
        return codegen.once(self, expr)

    def __repr__(self) -> str:
        return f"DictVariable({self.items})"


class DictViewVariable(VariableTracker):
    """`d.keys()`, `d.values()` or `d.items()`: a live view, so it reads the dict tracker each time."""

    def __init__(self, mapping: DictVariable, kind: str):
        self.mapping = mapping
        self.kind = kind

    def python_type(self) -> type:
        return type(getattr({}, self.kind)())

    def iterate(self, tx: Tracer) -> list[VariableTracker]:
        items = self.mapping.items
        if self.kind == "keys":
            return [key_tracker(tx, k) for k in items]
        if self.kind == "values":
            return list(items.values())
        return [TupleVariable([key_tracker(tx, k), v]) for k, v in items.items()]

    def length(self, tx: Tracer) -> VariableTracker:
        return ConstantVariable(len(self.mapping.items))

    def truth(self, tx: Tracer) -> bool:
        return bool(self.mapping.items)

    def contains(self, tx: Tracer, item: VariableTracker) -> bool:
        if self.kind == "keys":
            return self.mapping.contains(tx, item)
        return ListVariable(self.iterate(tx)).contains(tx, item)

    def reconstruct(self, codegen: FrameCodegen) -> str:
        return f"{codegen.reconstruct(self.mapping)}.{self.kind}()"


class IteratorVariable(VariableTracker):
    """An iterator over a known sequence (`iter(list)`, `zip`, `enumerate`, a loop's GET_ITER).

    Over a ListVariable it reads the list live, as Python's list iterator does.
    """

    def __init__(self, items: list[VariableTracker] | ListVariable):
        self.items = items
        self.index = 0

    def crossing(self, held: bool) -> str:
        """Made in the trace and held by no local: a real iterator over the live containers."""
        return "iter" if not held and self.source is None else "value"

    def reconstruct_resumed(self, codegen: ResumeCodegen) -> str:
        return codegen.iterator(self)   # an input iterator is itself (advanced after the graph)

    def python_type(self) -> type:
        return type(iter([]))

    def next(self) -> VariableTracker | None:
        items = self.items.items if isinstance(self.items, ListVariable) else self.items
        if self.index >= len(items):
            return None
        self.index += 1
        return items[self.index - 1]

    def iterate(self, tx: Tracer) -> list[VariableTracker]:
        rest = []
        while (item := self.next()) is not None:
            rest.append(item)
        return rest
