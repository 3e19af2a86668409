"""Guards: the facts about a call's inputs that a cache entry assumed, and the GuardSet of one trace.

Each guard knows the condition under which it fails, as Python source over a bound local name,
and the sentence that names it. `guard_codegen` turns a GuardSet into one function. The guards of
a tensor input's metadata and layout are `tensor_guards.py`.
"""

from __future__ import annotations

import enum
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from pdyn.base.errors import SourceLoc
from pdyn.guards.class_dicts import class_dict
from pdyn.sources import AttrSource, Const, Source

Hoist = Const  # (object, name hint) -> name of a constant in the guard's scope


@dataclass(frozen=True, eq=False)
class Guard(ABC):
    """One assumption about the value at `source`; `loc` is the user line that made it."""

    source: Source | None
    loc: SourceLoc | None = field(default=None, kw_only=True)

    def key(self) -> tuple[Any, ...]:
        return (type(self), self.source)

    @abstractmethod
    def fail_expr(self, v: str, hoist: Hoist) -> str:
        """Python source that is true when the guard fails, over the bound name `v`."""

    @abstractmethod
    def sentence(self) -> str:
        """What the guard asserts, as the recompile log and the guard source show it."""

    def checks(self, v: str, hoist: Hoist) -> list[tuple[str, str]]:
        """(condition under which it fails, the sentence that then failed), cheapest first."""
        return [(self.fail_expr(v, hoist), self.sentence())]

    def bound_checks(self, bind: Callable[[Source], str], hoist: Hoist) -> list[tuple[str, str]]:
        """`checks` with every source this guard reads bound to a name by `bind` (guard_codegen
        binds each source once per check function)."""
        return self.checks(bind(self.source) if self.source is not None else "", hoist)


def type_name(t: type) -> str:
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


@dataclass(frozen=True, eq=False)
class TypeGuard(Guard):
    """The value's exact type: objects whose attributes the trace read but did not need by identity."""

    type: type

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return f"type({v}) is not {hoist(self.type, self.type.__name__)}"

    def sentence(self) -> str:
        return f"type({self.source}) is {type_name(self.type)}"


@dataclass(frozen=True, eq=False)
class IdGuard(Guard):
    """The very same object: modules, functions, classes, Python modules, Enum members, and
    objects whose identity an `is` decided (ID_MATCH)."""

    obj: Any

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return f"{v} is not {hoist(self.obj, getattr(self.obj, '__name__', type(self.obj).__name__))}"

    def sentence(self) -> str:
        if isinstance(self.obj, enum.Enum):
            return f"{self.source} is {type(self.obj).__qualname__}.{self.obj.name}"
        name = getattr(self.obj, "__qualname__", None) or type(self.obj).__qualname__
        kind = "class" if isinstance(self.obj, type) else f"{type(self.obj).__name__} object"
        return f"{self.source} is the same {kind} ({name})"


@dataclass(frozen=True, eq=False)
class EqualsGuard(Guard):
    """A constant: same type and same value (None, bools, ints, floats, strings, dtypes, ...);
    -0.0 is not 0.0 and NaN is NaN, as `same_constant` says."""

    value: Any

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return constant_differs(v, self.value, hoist)

    def sentence(self) -> str:
        return f"{self.source} == {self.value!r}"


# Types whose `==` within the type is sameness: the guard compares type and value, inline.
EXACT_BY_EQUALS = (torch.dtype, torch.device, torch.layout, torch.memory_format, torch.Size)


def constant_differs(v: str, value: Any, hoist: Hoist) -> str:
    """Python source, true when the value bound to `v` is not the very constant `value`."""
    kind = type(value)
    if value is None or kind is bool:
        return f"{v} is not {value!r}"
    if kind is float:
        return _float_differs(v, value, hoist)
    if kind in (int, str, bytes):
        return f"type({v}) is not {kind.__name__} or {v} != {value!r}"
    if kind in EXACT_BY_EQUALS:
        return f"type({v}) is not {hoist(kind, kind.__name__)} or {v} != {hoist(value, kind.__name__)}"
    # tuples, complex numbers, slices, ranges: item by item (1 == True == 1.0, 0.0 == -0.0)
    return f"not {hoist(same_constant, 'same_constant')}({v}, {hoist(value, 'value')})"


def _float_differs(v: str, value: float, hoist: Hoist) -> str:
    if value != value:
        return f"type({v}) is not float or {v} == {v}"  # NaN: the one float unequal to itself
    lit = repr(value) if math.isfinite(value) else hoist(value, "inf")
    differs = f"type({v}) is not float or {v} != {lit}"
    if value == 0:  # 0.0 == -0.0, but 1 / 0.0 is inf where 1 / -0.0 is -inf
        differs += f" or {hoist(math.copysign, 'copysign')}(1.0, {v}) {'>' if _negative(value) else '<'} 0"
    return differs


def _negative(value: float) -> bool:
    return math.copysign(1.0, value) < 0


def same_constant(a: Any, b: Any) -> bool:
    """`a` and `b` are one constant: same types all the way down, equal values, -0.0 apart from
    0.0 and NaN equal to NaN. (`==` says 1 == True == 1.0 and 0.0 == -0.0.)"""
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is float:
        return (a == b and _negative(a) == _negative(b)) or (a != a and b != b)
    if kind is complex:
        return same_constant(a.real, b.real) and same_constant(a.imag, b.imag)
    if kind in (tuple, list):
        return len(a) == len(b) and all(same_constant(x, y) for x, y in zip(a, b))
    if kind is frozenset:
        return len(a) == len(b) and all(any(same_constant(x, y) for y in b) for x in a)
    if kind in (slice, range):
        return all(same_constant(getattr(a, f), getattr(b, f)) for f in ("start", "stop", "step"))
    return bool(a == b)


@dataclass(frozen=True, eq=False)
class LenGuard(Guard):
    """A list, tuple or nn container of the same type and length."""

    type: type
    length: int

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return f"type({v}) is not {hoist(self.type, self.type.__name__)} or len({v}) != {self.length}"

    def sentence(self) -> str:
        return f"{self.source} is a {self.type.__name__} of length {self.length}"


@dataclass(frozen=True, eq=False)
class IteratorLeftGuard(Guard):
    """A list or tuple iterator has at least (`exact`: exactly) `count` items left: a loop traced
    from wherever it stands, its position data (the items it takes are read relative to it)."""

    count: int = 0
    exact: bool = False

    def key(self) -> tuple[Any, ...]:
        return (type(self), self.source, self.count, self.exact)

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return f"{v}.__length_hint__() {'!=' if self.exact else '<'} {self.count}"

    def sentence(self) -> str:
        return f"{self.source} has {'exactly' if self.exact else 'at least'} {self.count} items left"


@dataclass(frozen=True, eq=False)
class DictKeysGuard(Guard):
    """A dict with the same keys in the same order (iteration order is part of what was traced),
    each of the same type ({1: t} is not {True: t}), a float key of the same sign."""

    type: type
    keys: tuple[Any, ...]

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        differs = f"type({v}) is not {hoist(self.type, self.type.__name__)} or tuple({v}) != {hoist(self.keys, 'keys')}"
        if not self.keys:
            return differs
        if all(type(k) in (str, int, bytes) for k in self.keys):
            types = tuple(type(k) for k in self.keys)
            return f"{differs} or tuple(map(type, {v})) != {hoist(types, 'key_types')}"
        return f"{differs} or not {hoist(same_constant, 'same_constant')}(tuple({v}), {hoist(self.keys, 'keys')})"

    def sentence(self) -> str:
        return f"{self.source} is a {self.type.__name__} with keys {list(self.keys)!r}"


# Where `Module.__getattr__` looks, in order, for a name the instance `__dict__` lacks.
MODULE_TABLES = ("_parameters", "_buffers", "_modules")

@dataclass(frozen=True, eq=False)
class HasAttrGuard(Guard):
    """`hasattr(value, name)` is what it was when traced: an attribute the trace found missing (a
    `getattr` default, `hasattr`, a caught AttributeError) stays missing, on the instance and on
    its class; one it found stays there (its value is guarded by the guards of its own source)."""

    name: str = ""
    present: bool = False
    # an nn.Module's class (guarded by identity) whose lookup is object's and `Module.__getattr__`:
    # a missing name is then checked where that lookup looks, without the AttributeError that
    # `hasattr` makes `Module.__getattr__` raise (a microsecond each)
    module_class: type | None = None

    def key(self) -> tuple[Any, ...]:
        return (type(self), self.source, self.name)

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return f"{'not ' if self.present else ''}hasattr({v}, {self.name!r})"

    def bound_checks(self, bind: Callable[[Source], str], hoist: Hoist) -> list[tuple[str, str]]:
        if self.module_class is None or self.present:
            return super().bound_checks(bind, hoist)
        name = repr(self.name)
        d = bind(AttrSource(self.source, "__dict__"))  # type: ignore[arg-type]
        where = [f"{name} in {class_dict(klass, hoist)}" for klass in self.module_class.__mro__]
        where += [f"{name} in {d}"] + [f"{name} in {d}[{table!r}]" for table in MODULE_TABLES]
        return [(" or ".join(where), self.sentence())]

    def sentence(self) -> str:
        return f"{self.source} {'has' if self.present else 'has no'} attribute {self.name!r}"


IMMUTABLE_TYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: builtin classes, whose attributes cannot be set
_ABSENT = object()


def class_may_change(cls: type) -> bool:
    return not cls.__flags__ & IMMUTABLE_TYPE


@dataclass(frozen=True, eq=False)
class ClassAttrGuard(Guard):
    """What instances of `cls` find as `name` in their class is what the trace found: `attr` in the
    `__dict__` of `owner` and in no class before it in the MRO (with `owner` None: in none of them).
    Replacing `Cls.method` after compiling recompiles. Builtin classes cannot change: not checked."""

    cls: type = object
    name: str = ""
    owner: type | None = None
    attr: Any = None

    def key(self) -> tuple[Any, ...]:
        return (type(self), id(self.cls), self.name)

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return " or ".join(self.conditions(hoist)) or "False"

    def conditions(self, hoist: Hoist) -> list[str]:
        parts = []
        for klass in self.cls.__mro__:
            if klass is self.owner:
                if class_may_change(klass):
                    parts.append(f"{class_dict(klass, hoist)}.get({self.name!r}, "
                                 f"{hoist(_ABSENT, 'absent')}) is not {hoist(self.attr, self.name)}")
                break
            if class_may_change(klass):
                parts.append(f"{self.name!r} in {class_dict(klass, hoist)}")
        return parts

    def sentence(self) -> str:
        where = f"{self.owner.__qualname__}'s" if self.owner is not None else "no class's"
        return f"{self.cls.__qualname__}.{self.name} is {where} (as traced)"


@dataclass(frozen=True, eq=False)
class UserDictKeysGuard(Guard):
    """An instance of a user dict class (a ModelOutput) whose items are the same keys in the same
    order, read with its builtin base's own `keys` (`OrderedDict.keys(v)`), past any Python method."""

    type: type = dict
    keys: tuple[Any, ...] = ()
    base: type = dict

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        keys = f"{hoist(self.base.keys, 'base_keys')}({v})"
        types = tuple(type(k) for k in self.keys)
        return (f"type({v}) is not {hoist(self.type, self.type.__name__)} or tuple({keys}) != {hoist(self.keys, 'keys')}"
                f" or tuple(map(type, {keys})) != {hoist(types, 'key_types')}")

    def sentence(self) -> str:
        return f"{self.source} is a {self.type.__name__} with items {list(self.keys)!r}"


@dataclass(frozen=True, eq=False)
class UserListLenGuard(Guard):
    """An instance of a user list class of the same length, read with list's own `__len__`, past
    any Python one."""

    type: type = list
    length: int = 0

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return (f"type({v}) is not {hoist(self.type, self.type.__name__)} or "
                f"{hoist(list.__len__, 'list_len')}({v}) != {self.length}")

    def sentence(self) -> str:
        return f"{self.source} is a {self.type.__name__} of {self.length} items"


@dataclass(frozen=True, eq=False)
class MembershipGuard(Guard):
    """`item in value` is what it was when traced (a registry set a library consults: `cls in
    _registered`); the item is hoisted, compared as `in` compares it."""

    item: Any = None
    present: bool = False

    def key(self) -> tuple[Any, ...]:
        return (type(self), self.source, id(self.item))

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        item = hoist(self.item, getattr(self.item, "__name__", "item"))
        return f"{item} {'not in' if self.present else 'in'} {v}"

    def sentence(self) -> str:
        shown = getattr(self.item, "__qualname__", None) or repr(self.item)
        return f"{shown} {'in' if self.present else 'not in'} {self.source}"


@dataclass(frozen=True, eq=False)
class KeyPresenceGuard(Guard):
    """A string key is (or is not) in a dict: an object's `__dict__` holds (or lacks) an attribute
    the trace looked up there, so a class attribute it found is not shadowed later, nor gone."""

    key_name: str = ""
    present: bool = False

    def key(self) -> tuple[Any, ...]:
        return (type(self), self.source, self.key_name)

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return f"{self.key_name!r} {'not in' if self.present else 'in'} {v}"

    def sentence(self) -> str:
        return f"{self.key_name!r} {'in' if self.present else 'not in'} {self.source}"


@dataclass(frozen=True, eq=False)
class AliasGuard(Guard):
    """Two sources are (or are not) the same object, as they were when traced."""

    other: Source = None  # type: ignore[assignment]  # always given; dataclass order needs a default
    same: bool = True

    def key(self) -> tuple[Any, ...]:
        return (type(self), self.source, self.other)

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return self._fail(v, self.other.code(hoist))

    def bound_checks(self, bind: Callable[[Source], str], hoist: Hoist) -> list[tuple[str, str]]:
        return [(self._fail(bind(self.source), bind(self.other)), self.sentence())]  # type: ignore[arg-type]

    def _fail(self, v: str, other: str) -> str:
        return f"{v} {'is not' if self.same else 'is'} {other}"

    def sentence(self) -> str:
        return f"{self.source} is {'' if self.same else 'not '}{self.other}"


@dataclass(frozen=True, eq=False)
class DistinctGuard(Guard):
    """Several sources are pairwise different objects, as they were when traced (one check for a
    group: objects of one type the trace changed, where any two being one would change reads)."""

    others: tuple[Source, ...] = ()

    def key(self) -> tuple[Any, ...]:
        return (type(self), self.source, self.others)

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return self._fail([v, *(o.code(hoist) for o in self.others)])

    def bound_checks(self, bind: Callable[[Source], str], hoist: Hoist) -> list[tuple[str, str]]:
        return [(self._fail([bind(s) for s in (self.source, *self.others)]), self.sentence())]  # type: ignore[arg-type]

    @staticmethod
    def _fail(names: list[str]) -> str:
        if len(names) == 2:
            return f"{names[0]} is {names[1]}"
        return f"len({{{', '.join(f'id({n})' for n in names)}}}) != {len(names)}"

    def sentence(self) -> str:
        return f"{', '.join(map(str, (self.source, *self.others)))} are different objects"


@dataclass(frozen=True, eq=False)
class GlobalNameGuard(Guard):
    """A builtin the trace used is not shadowed by a module global of the same name."""

    name: str = ""

    def key(self) -> tuple[Any, ...]:
        return (type(self), self.name)

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return f"{self.name!r} in G"

    def sentence(self) -> str:
        return f"no global named {self.name!r} shadows the builtin"


@dataclass(frozen=True, eq=False)
class GradModeGuard(Guard):
    """torch's grad mode is what it was when traced."""

    enabled: bool = True

    def key(self) -> tuple[Any, ...]:
        return (type(self),)

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return f"{hoist(torch.is_grad_enabled, 'is_grad_enabled')}() is not {self.enabled}"

    def sentence(self) -> str:
        return f"torch.is_grad_enabled() is {self.enabled}"


@dataclass(frozen=True, eq=False)
class CallResultGuard(Guard):
    """A read-only query of torch's global state (`torch.backends.mha.get_fastpath_enabled()`,
    `torch.is_autocast_enabled()`) answers what it answered when traced: it is called again."""

    fn: Callable[..., Any] = None  # type: ignore[assignment]  # always given
    args: tuple[Any, ...] = ()
    expected: Any = None

    def key(self) -> tuple[Any, ...]:
        return (type(self), self.fn, self.args)

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        call = f"{hoist(self.fn, getattr(self.fn, '__name__', 'query'))}(*{hoist(self.args, 'args')})"
        return f"not {hoist(same_constant, 'same_constant')}({call}, {hoist(self.expected, 'expected')})"

    def sentence(self) -> str:
        module = getattr(self.fn, "__module__", None) or ""
        args = ", ".join(map(repr, self.args))
        return f"{module}.{getattr(self.fn, '__name__', self.fn)}({args}) == {self.expected!r}"


class GuardSet:
    """The guards of one trace, deduplicated, in the order they were made."""

    def __init__(self) -> None:
        self._guards: dict[tuple[Any, ...], Guard] = {}

    def add(self, guard: Guard) -> None:
        self._guards.setdefault(guard.key(), guard)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._guards.values())

    def __len__(self) -> int:
        return len(self._guards)

