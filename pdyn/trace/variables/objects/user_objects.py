"""UserObjectVariable: an instance of a user class, read from the frame or created in the trace.

Attribute access follows CPython's `object.__getattribute__` (data descriptors, then the instance
dict, then other class attributes, then `__getattr__`); a `__getattribute__`, `__getattr__` or
`__setattr__` written in Python is inlined. Operators and protocols (`+`, `==`, `[]`, `len`, `in`,
iteration, truth, calls) run the class's dunder methods. An object made in the trace lives in
`fields` and is rebuilt after the graph if it escapes; stores to an input object are replayed.
"""

from __future__ import annotations

import abc
import operator
import types
from typing import TYPE_CHECKING, Any, Callable

from pdyn.base.errors import Unsupported, UserException
from pdyn.guards.guards import AliasGuard, ClassAttrGuard, HasAttrGuard, IdGuard, KeyPresenceGuard, class_may_change
from pdyn.sources import AttrSource, ItemSource, PinnedSource, SizeSource, Source
from pdyn.trace.variables.base import VariableTracker, sizes_in
from pdyn.trace.variables.values.constant import ConstantVariable, is_constant_value
from pdyn.trace.variables.values.deleted import is_deleted
from pdyn.trace.variables.exceptions.exc_fields import is_exception_field, read_exception_field
from pdyn.trace.variables.functions.user_functions import UserFunctionVariable, UserMethodVariable
from pdyn.trace.variables.objects.instance_dict import InstanceDictVariable
from pdyn.trace.variables.objects.loggers import LoggerCallVariable, writes_log
from pdyn.trace.variables.iterators.user_iterators import GetitemIterator, user_iterator

if TYPE_CHECKING:
    from pdyn.trace.breaks.callees import BreakCallee
    from pdyn.trace.frame_codegen import FrameCodegen
    from pdyn.trace.variables.containers.core import IteratorVariable
    from pdyn.trace.translator import InstructionTranslator as Tracer

MISSING = object()
# operator -> (method, reflected method); an in-place operator falls back to its plain one
BINARY_DUNDERS: dict[Any, tuple[str, str | None]] = {
    operator.add: ("__add__", "__radd__"), operator.sub: ("__sub__", "__rsub__"),
    operator.mul: ("__mul__", "__rmul__"), operator.truediv: ("__truediv__", "__rtruediv__"),
    operator.floordiv: ("__floordiv__", "__rfloordiv__"), operator.mod: ("__mod__", "__rmod__"),
    operator.pow: ("__pow__", "__rpow__"), operator.matmul: ("__matmul__", "__rmatmul__"),
    operator.and_: ("__and__", "__rand__"), operator.or_: ("__or__", "__ror__"),
    operator.xor: ("__xor__", "__rxor__"), operator.lshift: ("__lshift__", "__rlshift__"),
    operator.rshift: ("__rshift__", "__rrshift__"),
    operator.eq: ("__eq__", "__eq__"), operator.ne: ("__ne__", "__ne__"), operator.lt: ("__lt__", "__gt__"),
    operator.le: ("__le__", "__ge__"), operator.gt: ("__gt__", "__lt__"), operator.ge: ("__ge__", "__le__"),
}
IN_PLACE = {operator.iadd: ("__iadd__", operator.add), operator.isub: ("__isub__", operator.sub),
            operator.imul: ("__imul__", operator.mul), operator.itruediv: ("__itruediv__", operator.truediv),
            operator.ifloordiv: ("__ifloordiv__", operator.floordiv), operator.imod: ("__imod__", operator.mod),
            operator.ipow: ("__ipow__", operator.pow), operator.imatmul: ("__imatmul__", operator.matmul),
            operator.iand: ("__iand__", operator.and_), operator.ior: ("__ior__", operator.or_),
            operator.ixor: ("__ixor__", operator.xor)}
SYMBOLS = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
           operator.floordiv: "//", operator.mod: "%", operator.pow: "** or pow()", operator.matmul: "@",
           operator.and_: "&", operator.or_: "|", operator.xor: "^", operator.lshift: "<<", operator.rshift: ">>",
           operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">="}
UNARY_DUNDERS = {operator.neg: "__neg__", operator.pos: "__pos__", operator.invert: "__invert__", abs: "__abs__"}


def mro_lookup(cls: type, name: str, missing: Any = None) -> Any:
    """`name` as instances of `cls` find it in their class (not the metaclass), or `missing`. Where
    a class attribute may be None (`_compiled_call_impl = None`), pass `missing=MISSING`."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return missing


def class_attr(tx: Tracer, cls: type, name: str, missing: Any = None) -> Any:
    """`mro_lookup(cls, name, missing)`, guarded: replacing (or adding, or deleting) what instances
    of `cls` find as `name` in their classes makes the entry not apply. One check per user class
    searched. Absent, it is `missing`: None by default, which a class attribute set to None is too."""
    owner = next((klass for klass in cls.__mro__ if name in klass.__dict__), None)
    attr = owner.__dict__[name] if owner is not None else missing
    searched = cls.__mro__[:cls.__mro__.index(owner) + 1] if owner is not None else cls.__mro__
    if any(class_may_change(klass) for klass in searched):
        tx.ctx.add_guard(ClassAttrGuard(None, cls=cls, name=name, owner=owner, attr=attr, loc=tx.loc()))
    return attr


def _class_value(tx: Tracer, cls: type, name: str, attr: Any) -> VariableTracker:
    """A plain class attribute's value (`class_attr` guarded which one it is): a constant only."""
    if not is_constant_value(attr):
        raise Unsupported("class_attr", f"pdyn cannot read {cls.__qualname__}.{name} through an instance whose "
                          "own attribute the trace deleted", loc=tx.loc())
    return tx.wrap_constant(attr)


def holds_mutable(value: Any) -> bool:
    """A value whose state can change (a list, a dict, an object, a tensor, a tuple holding one):
    `wrap_constant` would copy it, or fold its attributes without guards."""
    if type(value) is tuple:
        return any(holds_mutable(v) for v in value)
    return not is_constant_value(value) and not isinstance(value, FIXED_KINDS)


# fixed for the program's life (pinned by identity where they are read): a plain class attribute of
# these kinds is the object itself
FIXED_KINDS = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType, types.ModuleType)


def shared_class_value(tx: Tracer, cls: type, name: str, value: Any, source: Source | None) -> VariableTracker:
    """A plain class attribute's value, read through the class: a list or dict there is the one
    every instance shares, so it is read through a source (`source`, or the class pinned by
    identity) and its writes are replayed on it, not on a copy the trace made."""
    if holds_mutable(value):
        return tx.wrap(value, AttrSource(source if source is not None else PinnedSource(id(cls), cls), name))
    return tx.wrap_constant(value)


def is_data_descriptor(attr: Any) -> bool:
    return attr is not None and (hasattr(type(attr), "__set__") or hasattr(type(attr), "__delete__"))


def python_hook(tx: Tracer, cls: type, name: str) -> types.FunctionType | None:
    """`cls.<name>` where it is a function written in Python (a hook pdyn inlines), else None."""
    attr = class_attr(tx, cls, name)
    return attr if isinstance(attr, types.FunctionType) else None


def rebuild_object(cls: type, fields: dict[str, Any]) -> Any:
    """An object made in the trace, rebuilt after the graph: its class's plain `__new__`, then its
    attributes set past any `__setattr__` (as the trace stored them)."""
    obj = object.__new__(cls)
    for name, value in fields.items():
        object.__setattr__(obj, name, value)
    return obj


def traces_lookup(obj: VariableTracker) -> bool:
    """Whether `obj.name` on this input object is traced step by step, each step guarded (the class
    attributes searched, the instance dict's entry or its absence, an unset slot, a Python
    `__getattribute__` or `__getattr__` inlined), so no `hasattr` check need repeat the lookup."""
    return isinstance(obj, UserObjectVariable) and not obj.is_fresh and \
        type(obj).getattr is UserObjectVariable.getattr and type(obj).generic_getattr is UserObjectVariable.generic_getattr


def _instance_dict(value: Any) -> dict[str, Any]:
    try:
        return object.__getattribute__(value, "__dict__")
    except AttributeError:
        return {}


class UserObjectVariable(VariableTracker):
    """An instance of a user class. From the inputs (`value`, `source`): guarded by type, its
    attributes read through their own sources. Made in the trace (`value` None): its attributes
    are `fields`, and its identity is this tracker's."""

    def __init__(self, value: Any, source: Source | None, cls: type | None = None):
        self.value = value
        self.source = source
        self.cls: type = cls if cls is not None else type(value)
        self.fields: dict[str, VariableTracker] = {}

    @classmethod
    def fresh(cls, kind: type) -> UserObjectVariable:
        return cls(None, None, kind)

    @classmethod
    def new(cls, tx: Tracer, kind: type) -> UserObjectVariable:
        """`object.__new__(kind)`: it raises for an abstract class (its own `__abstractmethods__`
        not empty, guarded), with CPython's message."""
        if isinstance(kind, abc.ABCMeta) and class_attr(tx, kind, "__abstractmethods__") and \
                kind.__dict__.get("__abstractmethods__"):  # ABCMeta sets it on each class it makes
            try:
                object.__new__(kind)
            except TypeError as e:
                raise UserException(e, tx.loc(), catchable=True) from None  # the guards decide it
        return cls.fresh(kind)

    @property
    def is_fresh(self) -> bool:
        return self.source is None

    def sizes_held(self, source: Source, depth: int) -> list[tuple[SizeSource, Any]]:
        fields = ((AttrSource(source, attr), item) for attr, item in self.fields.items())
        return sizes_in(fields, depth) if self.is_fresh else []

    def callee_at_break(self, callee: BreakCallee, method_of: VariableTracker | None = None) -> str | None:
        if self.is_fresh or self.source is None:
            return None
        return callee.function(mro_lookup(self.cls, "__call__"), self)  # `obj(...)` runs `type(obj).__call__(obj, ...)`

    def own_setattr_ran(self) -> bool:
        return True   # a user object's own `__setattr__` ran in the trace: the replay stores raw

    def python_type(self) -> type:
        return self.cls

    # -- attributes --------------------------------------------------------------------------------

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        """`self.name`: a Python `__getattribute__` inlined, else the generic lookup; an
        AttributeError from either goes to a Python `__getattr__`, as CPython's slot does."""
        hook = python_hook(tx, self.cls, "__getattribute__")
        fallback = python_hook(tx, self.cls, "__getattr__")
        try:
            if hook is not None:
                return UserFunctionVariable(hook).call(tx, [self, ConstantVariable(name)], {})
            return self.generic_getattr(tx, name)
        except UserException as e:
            if fallback is None or not isinstance(e.exc, AttributeError):
                raise
        return UserFunctionVariable(fallback).call(tx, [self, ConstantVariable(name)], {})

    def generic_getattr(self, tx: Tracer, name: str) -> VariableTracker:
        """`object.__getattribute__(self, name)`: data descriptors, instance dict, class attributes."""
        stored = self._stored(tx, name)
        deleted = is_deleted(stored)  # `del self.name` earlier in the trace: the class's, if any
        stored = None if deleted else stored
        attr = class_attr(tx, self.cls, name, MISSING)  # a class attribute may be None
        if is_data_descriptor(attr):
            if isinstance(attr, property):
                if attr.fget is None:
                    raise self._error(tx, f"property {name!r} of {self.cls.__name__!r} object has no getter")
                return tx.wrap_constant(attr.fget).call(tx, [self], {})
            if name == "__dict__" and isinstance(attr, types.GetSetDescriptorType):
                return InstanceDictVariable(self)
            if name == "__class__" and attr is object.__dict__["__class__"]:
                return tx.wrap_constant(self.cls)  # the type is guarded (or made in the trace)
            if isinstance(attr, types.MemberDescriptorType):  # a __slots__ field
                if stored is not None:
                    return stored
                return self._instance_attr(tx, name, slot=True)
            get = getattr(type(attr), "__get__", None)
            if isinstance(get, types.FunctionType):
                return UserFunctionVariable(get).call(tx, [tx.wrap_constant(attr), self, tx.wrap_constant(self.cls)],
                                                      {})
            if is_exception_field(self.cls, attr):  # `e.args`, `e.__cause__`: builtin state, no code runs
                return read_exception_field(tx, self, name)
            raise Unsupported("descriptor", f"pdyn cannot read {self.cls.__qualname__}.{name} "
                              f"({type(attr).__name__})", loc=tx.loc())
        if stored is not None:
            return stored
        found = None if deleted else self._instance_attr(tx, name, slot=False)
        if found is not None:
            return found
        if deleted and attr is not MISSING and not hasattr(type(attr), "__get__"):
            return _class_value(tx, self.cls, name, attr)  # not through the instance: its own is gone
        if attr is not MISSING:
            return bind_class_attr(tx, self, self.cls, name, attr)
        raise self._missing(tx, name)

    def _stored(self, tx: Tracer, name: str) -> VariableTracker | None:
        if self.is_fresh:
            return self.fields.get(name)
        return tx.ctx.side_effects.load_attr(self, name)

    def _instance_attr(self, tx: Tracer, name: str, slot: bool) -> VariableTracker | None:
        """An attribute stored on the object itself (its `__dict__` or a slot), or None."""
        if self.is_fresh:
            if slot:
                raise self._missing(tx, name)
            return None
        if slot:
            try:
                value = object.__getattribute__(self.value, name)
            except AttributeError:
                # an unset slot: setting it later must make the entry not apply
                tx.ctx.add_guard(HasAttrGuard(self.source, name=name, present=False, loc=tx.loc()))
                raise self._missing(tx, name) from None
            return tx.wrap(value, AttrSource(self.source, name))  # type: ignore[arg-type]
        return self.dict_read(tx, name)

    def dict_read(self, tx: Tracer, name: Any) -> VariableTracker | None:
        """`self.__dict__.get(name)`: read through the dict itself, its presence (or absence) guarded."""
        stored = self._stored(tx, name)
        if stored is not None or self.is_fresh:
            return None if is_deleted(stored) else stored
        instance_dict = _instance_dict(self.value)
        if not isinstance(instance_dict, dict) or type(name) is not str:
            raise Unsupported("instance_dict", f"pdyn cannot read {self.cls.__name__}.__dict__[{name!r}]",
                              loc=tx.loc())
        dict_source = AttrSource(self.source, "__dict__")  # type: ignore[arg-type]
        if name not in instance_dict:
            if "__dict__" in dir(self.cls):
                tx.ctx.add_guard(KeyPresenceGuard(dict_source, key_name=name, present=False, loc=tx.loc()))
            return None
        # `obj.name` reads the same entry unless a Python `__getattribute__` stands between
        plain = self.cls.__getattribute__ is object.__getattribute__ and name.isidentifier()
        return tx.wrap(instance_dict[name], AttrSource(self.source, name) if plain  # type: ignore[arg-type]
                       else ItemSource(dict_source, name))

    def _missing(self, tx: Tracer, name: str) -> UserException:
        return self._error(tx, f"{self.cls.__name__!r} object has no attribute {name!r}")

    @staticmethod
    def _error(tx: Tracer, message: str) -> UserException:
        return UserException(AttributeError(message), tx.loc())

    def store_attr(self, tx: Tracer, name: str, value: VariableTracker) -> None:
        hook = python_hook(tx, self.cls, "__setattr__")
        if hook is not None:
            UserFunctionVariable(hook).call(tx, [self, ConstantVariable(name), value], {})
            return
        if self.cls.__setattr__ is not object.__setattr__:
            raise Unsupported("setattr", f"{self.cls.__name__} customizes attribute assignment", loc=tx.loc())
        self.generic_setattr(tx, name, value)

    def generic_setattr(self, tx: Tracer, name: str, value: VariableTracker) -> None:
        """`object.__setattr__(self, name, value)`: a data descriptor's setter, else a plain store."""
        attr = class_attr(tx, self.cls, name)
        if is_data_descriptor(attr):
            if isinstance(attr, property):
                if attr.fset is None:
                    raise self._error(tx, f"property {name!r} of {self.cls.__name__!r} object has no setter")
                tx.wrap_constant(attr.fset).call(tx, [self, value], {})
                return
            if not isinstance(attr, types.MemberDescriptorType):
                raise Unsupported("descriptor", f"pdyn cannot assign {self.cls.__qualname__}.{name} "
                                  f"({type(attr).__name__})", loc=tx.loc())
        elif "__dict__" not in dir(self.cls):
            raise self._missing(tx, name)
        if self.is_fresh:
            self.fields[name] = value
        else:
            tx.ctx.side_effects.store_attr(self, name, value)

    # -- protocols ---------------------------------------------------------------------------------

    def dunder(self, tx: Tracer, name: str, args: list[VariableTracker]) -> VariableTracker | None:
        """`type(self).<name>(self, *args)` where the class defines it in Python (or a descriptor
        pdyn binds), else None: CPython looks special methods up on the type, never the instance."""
        attr = class_attr(tx, self.cls, name)
        if attr is None or _is_object_slot(attr, name):
            return None
        return bind_class_attr(tx, self, self.cls, name, attr).call(tx, args, {})

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        attr = class_attr(tx, self.cls, "__call__")
        if attr is None:
            raise UserException(TypeError(f"'{self.cls.__name__}' object is not callable"), tx.loc())
        return bind_class_attr(tx, self, self.cls, "__call__", attr).call(tx, args, kwargs)

    def getitem(self, tx: Tracer, key: VariableTracker) -> VariableTracker:
        found = self.dunder(tx, "__getitem__", [key])
        if found is None:
            raise UserException(TypeError(f"'{self.cls.__name__}' object is not subscriptable"), tx.loc())
        return found

    def setitem(self, tx: Tracer, key: VariableTracker, value: VariableTracker) -> None:
        if self.dunder(tx, "__setitem__", [key, value]) is None:
            raise UserException(TypeError(f"'{self.cls.__name__}' object does not support item assignment"),
                                tx.loc())

    def delitem(self, tx: Tracer, key: VariableTracker) -> None:
        if self.dunder(tx, "__delitem__", [key]) is None:
            raise UserException(TypeError(f"'{self.cls.__name__}' object doesn't support item deletion"), tx.loc())

    def length(self, tx: Tracer) -> VariableTracker:
        found = self.dunder(tx, "__len__", [])
        if found is None:
            raise UserException(TypeError(f"object of type '{self.cls.__name__}' has no len()"), tx.loc())
        return _checked_length(tx, found)

    def truth(self, tx: Tracer) -> bool:
        found = self.dunder(tx, "__bool__", [])
        if found is not None:
            if found.python_type() is not bool:  # Python checks what `__bool__` returned
                raise UserException(TypeError(f"__bool__ should return bool, returned "
                                              f"{found.python_type().__name__}"), tx.loc())
            return found.truth(tx)
        found = self.dunder(tx, "__len__", [])
        return True if found is None else _checked_length(tx, found).truth(tx)

    def make_iter(self, tx: Tracer) -> IteratorVariable:
        """`iter(self)`: what `__iter__` returned, advanced one item at a time (user_iterators.py)."""
        it = self.dunder(tx, "__iter__", [])
        if it is None:
            if class_attr(tx, self.cls, "__getitem__") is not None:
                return GetitemIterator(tx, self)   # the old protocol: obj[0], obj[1], ... to IndexError
            raise UserException(TypeError(f"'{self.cls.__name__}' object is not iterable"), tx.loc())
        return user_iterator(tx, it)

    def iterate(self, tx: Tracer) -> list[VariableTracker]:
        return self.make_iter(tx).iterate(tx)

    def contains(self, tx: Tracer, item: VariableTracker) -> bool:
        found = self.dunder(tx, "__contains__", [item])
        if found is not None:
            return found.truth(tx)
        for value in self.iterate(tx):
            if value is item or tx.binary(operator.eq, value, item).truth(tx):
                return True
        return False

    def unary_op(self, tx: Tracer, fn: Callable[[Any], Any]) -> VariableTracker:
        name = UNARY_DUNDERS.get(fn)
        found = self.dunder(tx, name, []) if name is not None else None
        if found is None:
            raise UserException(TypeError(f"bad operand type for unary op: '{self.cls.__name__}'"), tx.loc())
        return found

    def binary_op(self, tx: Tracer, fn: Callable[[Any, Any], Any], other: VariableTracker) -> VariableTracker:
        return user_binary(tx, fn, self, other)

    # -- after the graph ---------------------------------------------------------------------------

    def reconstruct(self, codegen: FrameCodegen) -> str:
        if self.source is not None:
            return codegen.source_expr(self.source)
        fields = ", ".join(f"{name!r}: {codegen.reconstruct(v)}" for name, v in self.fields.items())
        return codegen.once(self, f"{codegen.constant(rebuild_object, 'rebuild_object')}("
                                  f"{codegen.constant(self.cls, self.cls.__name__)}, {{{fields}}})")

    def rebuilt(self, codegen: FrameCodegen, rebuild: Callable[..., Any], contents: str) -> str:
        """The frame code's `rebuild(cls, contents, {fields})` for a container subclass made in
        the trace (its items, then its instance attributes), once per frame code."""
        fields = ", ".join(f"{name!r}: {codegen.reconstruct(v)}" for name, v in self.fields.items())
        return codegen.once(self, f"{codegen.constant(rebuild, rebuild.__name__)}("
                                  f"{codegen.constant(self.cls, self.cls.__name__)}, {contents}, {{{fields}}})")

    def __repr__(self) -> str:
        where = f" from {self.source}" if self.source is not None else " (new)"
        return f"UserObjectVariable({self.cls.__qualname__}{where})"


def _is_object_slot(attr: Any, name: str) -> bool:
    """`object`'s own default of a special method (its `__eq__`, `__init__`, ...)."""
    return object.__dict__.get(name) is attr


def bind_class_attr(tx: Tracer, owner: VariableTracker, cls: type, name: str, attr: Any) -> VariableTracker:
    """A class attribute seen through an instance (`owner`): functions bind, static and class
    methods unwrap, descriptors written in Python run their `__get__`, builtin methods bind (a
    rule answers them), plain values are read through the instance's source (guarded)."""
    if isinstance(attr, types.FunctionType):
        return UserMethodVariable(UserFunctionVariable(attr), owner)
    if isinstance(attr, staticmethod):
        return tx.wrap_constant(attr.__func__)
    if isinstance(attr, classmethod):
        return UserMethodVariable(tx.wrap_constant(attr.__func__), tx.wrap_constant(cls))
    if isinstance(attr, property):
        if attr.fget is None:
            raise UserException(AttributeError(f"property {name!r} of {cls.__name__!r} object has no getter"),
                                tx.loc())
        return tx.wrap_constant(attr.fget).call(tx, [owner], {})
    if isinstance(attr, (types.WrapperDescriptorType, types.MethodDescriptorType)):
        return UserMethodVariable(tx.wrap_constant(attr), owner)
    if isinstance(owner, UserObjectVariable) and writes_log(cls, name, attr) and owner.source is not None:
        return LoggerCallVariable(owner, name)
    get = getattr(type(attr), "__get__", None)
    if get is None:
        if owner.source is not None:
            return tx.wrap(getattr(owner.value, name), AttrSource(owner.source, name))  # type: ignore[attr-defined]
        return shared_class_value(tx, cls, name, attr, None)
    if isinstance(get, types.FunctionType):
        return UserFunctionVariable(get).call(tx, [tx.wrap_constant(attr), owner, tx.wrap_constant(cls)], {})
    raise Unsupported("class_attr", f"pdyn cannot read {cls.__qualname__}.{name} ({type(attr).__name__})",
                      loc=tx.loc())


def _user_side(vt: VariableTracker) -> UserObjectVariable | None:
    return vt if isinstance(vt, UserObjectVariable) else None


def user_binary(tx: Tracer, fn: Callable[[Any, Any], Any], lhs: VariableTracker,
                rhs: VariableTracker) -> VariableTracker:
    """`lhs <op> rhs` where either side is a user object: CPython's protocol (in-place method,
    then the method, then the reflected one of the right operand, NotImplemented falling through;
    `==`/`!=` default to identity)."""
    if fn in IN_PLACE:
        name, fn = IN_PLACE[fn]
        if (left := _user_side(lhs)) is not None and (found := left.dunder(tx, name, [rhs])) is not None \
                and not _not_implemented(found):
            return found
    name, reflected = BINARY_DUNDERS.get(fn, (None, None))
    if name is None:
        raise Unsupported("binary_op", f"pdyn cannot trace `{fn.__name__}` on a user object", loc=tx.loc())
    left, right = _user_side(lhs), _user_side(rhs)
    # a right operand of a proper subclass (with its own reflected method) goes first
    order: list[tuple[UserObjectVariable | None, str | None, VariableTracker]] = [(left, name, rhs),
                                                                                  (right, reflected, lhs)]
    if left is not None and right is not None and right.cls is not left.cls and issubclass(right.cls, left.cls):
        order.reverse()
    for side, method, arg in order:
        if side is None or method is None:
            continue
        found = side.dunder(tx, method, [arg])
        if found is not None and not _not_implemented(found):
            return found
        if method == "__ne__" and found is None:  # object.__ne__ inverts a Python __eq__
            eq = side.dunder(tx, "__eq__", [arg])
            if eq is not None and not _not_implemented(eq):
                return ConstantVariable(not eq.truth(tx))
    if fn in (operator.eq, operator.ne):  # object's default: identity
        same = _same_object(tx, lhs, rhs)
        return ConstantVariable(same if fn is operator.eq else not same)
    other = rhs if left is not None else lhs
    if not isinstance(other, UserObjectVariable) and not other.is_python_constant():
        raise Unsupported("binary_op", f"pdyn cannot trace `{fn.__name__}` on {lhs} and {rhs}", loc=tx.loc())
    if other.is_python_constant() and type(other.as_python_constant()) is str and fn is operator.mod:
        raise Unsupported("binary_op", "pdyn cannot format a user object with %", loc=tx.loc())
    names = f"'{lhs.python_type().__name__}' and '{rhs.python_type().__name__}'"
    if fn in (operator.lt, operator.le, operator.gt, operator.ge):
        raise UserException(TypeError(f"'{SYMBOLS[fn]}' not supported between instances of {names}"), tx.loc())
    raise UserException(TypeError(f"unsupported operand type(s) for {SYMBOLS.get(fn, fn.__name__)}: {names}"),
                        tx.loc())


def _same_object(tx: Tracer, lhs: VariableTracker, rhs: VariableTracker) -> bool:
    """`lhs is rhs` for `==`'s default; two input objects are pinned as (not) one object."""
    if lhs is rhs:
        return True
    if isinstance(lhs, UserObjectVariable) and isinstance(rhs, UserObjectVariable) and not lhs.is_fresh \
            and not rhs.is_fresh:
        same = lhs.value is rhs.value
        pin_identity(tx, lhs, rhs, same)
        return same
    return False


def _not_implemented(vt: VariableTracker) -> bool:
    return vt.is_python_constant() and vt.as_python_constant() is NotImplemented


def pin_identity(tx: Tracer, lhs: VariableTracker, rhs: VariableTracker, same: bool) -> None:
    """`lhs is rhs` was decided by which objects they are at trace time: an input object pinned only
    by its type (a UserObjectVariable, an nn.Module) is pinned by identity (or by aliasing, for two of them). An
    object made in the trace is no input object: nothing to guard."""
    users = [vt for vt in (lhs, rhs) if isinstance(vt, UserObjectVariable) or getattr(vt, "guarded_by_type", False)]
    if any(vt.is_fresh for vt in users):
        return
    try:
        if not users or lhs.python_type() is not rhs.python_type():
            return  # objects of two exact types are never one object
    except Unsupported:
        pass
    if len(users) == 2:
        tx.ctx.add_guard(AliasGuard(lhs.source, other=rhs.source, same=same, loc=tx.loc()))
    else:
        tx.ctx.add_guard(IdGuard(users[0].source, users[0].value, loc=tx.loc()))


def run_init(tx: Tracer, obj: UserObjectVariable, args: list[VariableTracker],
             kwargs: dict[str, VariableTracker]) -> UserObjectVariable:
    """`type(obj).__init__(obj, *args, **kwargs)` for an object the trace just made: a Python
    `__init__` inlined, a builtin base's own a rule."""
    init = class_attr(tx, obj.cls, "__init__")
    if init is None:
        raise Unsupported("construct", f"pdyn cannot trace constructing a {obj.cls.__qualname__}", loc=tx.loc())
    check_init_result(tx, bind_class_attr(tx, obj, obj.cls, "__init__", init).call(tx, args, kwargs))
    return obj


def construct_object(tx: Tracer, cls: type, args: list[VariableTracker],
                     kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`cls(*args, **kwargs)` for a user class with object's `__new__`: a fresh object, its
    `__init__` inlined."""
    obj = UserObjectVariable.new(tx, cls)
    init = class_attr(tx, cls, "__init__")
    if _is_object_slot(init, "__init__"):
        if args or kwargs:
            raise UserException(TypeError(f"{cls.__name__}() takes no arguments"), tx.loc())
        return obj
    check_init_result(tx, bind_class_attr(tx, obj, cls, "__init__", init).call(tx, args, kwargs))
    return obj


def check_init_result(tx: Tracer, result: VariableTracker) -> None:
    """`type.__call__` raises where `__init__` returned anything but None."""
    if result.is_python_constant() and result.as_python_constant() is None:
        return
    raise UserException(TypeError(f"__init__() should return None, not '{result.python_type().__name__}'"),
                        tx.loc(), catchable=True)  # what the inlined __init__ returned is traced, guarded


def _checked_length(tx: Tracer, found: VariableTracker) -> VariableTracker:
    """What `len()` makes of `__len__`'s result: an int (a bool or an `__index__` converted), never
    negative; anything else raises as Python does."""
    if found.is_python_constant():
        value = found.as_python_constant()
        try:
            n = operator.index(value)
        except TypeError:
            raise UserException(TypeError(f"'{type(value).__name__}' object cannot be interpreted as an integer"),
                                tx.loc()) from None
        if n < 0:
            raise UserException(ValueError("__len__() should return >= 0"), tx.loc())
        return ConstantVariable(int(n))
    if found.python_type() is not int:
        raise Unsupported("len", f"pdyn cannot check a __len__ result of type {found.python_type().__name__}",
                          loc=tx.loc())
    if tx.binary(operator.lt, found, ConstantVariable(0)).truth(tx):
        raise UserException(ValueError("__len__() should return >= 0"), tx.loc())
    return found
