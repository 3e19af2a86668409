"""Rules for Python builtins and pure library functions called during a trace.

A builtin with a rule here works on any trackers (`len` of a list of tensors, `zip` of two lists,
`isinstance` of a tensor); the rest of the pure ones (math, operator, methods of constants) are
folded when every argument is a constant (`functions/unruled.py`). Anything else (print, open, ...)
is a graph break. Each rule is declared with `@rule` (`registry.py`).
"""

from __future__ import annotations

import abc
import enum
import functools
import inspect
import operator
import types
from typing import TYPE_CHECKING, Any, Callable

import torch

from pdyn.base.errors import Unsupported, UserException
from pdyn.guards.guards import CallResultGuard, HasAttrGuard
from pdyn.sources import AttrSource
from pdyn.trace.variables.base import VariableTracker, fold
from pdyn.trace.variables.functions.unruled import PURE_BUILTINS, call_unruled, fold_object
from pdyn.trace.variables.registry import Rule, register, rule, rule_of
from pdyn.trace.variables.semantics import contains
from pdyn.trace.variables.containers.collections_types import dict_items
from pdyn.trace.variables.values.symint import SymIntVariable, sym_binary
from pdyn.trace.variables.values.deleted import is_deleted
from pdyn.trace.variables.values.constant import CONSTANT_TYPES, ConstantVariable, ObjectConstantVariable, is_constant_value
from pdyn.trace.variables.functions.user_functions import PartialVariable, UserFunctionVariable, UserMethodVariable
from pdyn.trace.variables.objects.nn_module import NNModuleVariable
from pdyn.trace.variables.values.ranges import RangeVariable
from pdyn.trace.variables.objects.nn_module_made import construct_module
from pdyn.trace.variables.objects.nn_module_traced import MODULE_INIT, construct_traced_module, is_module_init
from pdyn.trace.variables.objects.user_objects import (bind_class_attr, class_attr, construct_object, mro_lookup,
                                                 shared_class_value, traces_lookup)
from pdyn.trace.variables.objects.user_tuples import construct_with_new
from pdyn.trace.variables.objects.user_dicts import construct_user_dict, is_user_dict_class
from pdyn.trace.variables.objects.user_lists import construct_user_list, is_user_list_class
from pdyn.trace.variables.torch.tensor import TensorMethodVariable, TensorVariable
from pdyn.trace.variables.torch.torch_functions import TorchFunctionVariable
from pdyn.trace.variables.containers.core import (DictVariable, IteratorVariable, ListVariable, SizeVariable, TupleVariable,
                                             is_known, python_value)
from pdyn.trace.variables.containers.sets import SetVariable
from pdyn.trace.variables.iterators.live_iterators import EnumerateIterator, ReversedListIterator, ZipIterator, make_iterator

LEGACY_TENSOR_TYPE = type(torch.LongTensor)   # torch.FloatTensor, torch.LongTensor, ...

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer
    from pdyn.trace.breaks.callees import BreakCallee
    from pdyn.trace.frame_codegen import ResumeCodegen

def call_builtin(tx: Tracer, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    r = rule_of(fn)
    if r is not None:
        return r(tx, args, kwargs)
    return call_unruled(tx, fn, args, kwargs)


def _constants(args: list[VariableTracker]) -> bool:
    return all(a.is_python_constant() for a in args)


@rule(range)
def _range(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """A range over symbolic ints stays lazy (RangeVariable): a loop over it pins its count."""
    if not kwargs and 1 <= len(args) <= 3 and all(is_known(a) for a in args) \
            and any(isinstance(a, SymIntVariable) and a.pytype is int for a in args):
        return RangeVariable.make(tx, args)
    return fold(tx, range, *[python_value(a, "range()", tx.loc()) for a in args],
                **{k: python_value(v, "range()", tx.loc()) for k, v in kwargs.items()})


@rule(len)
def _len(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    (obj,) = args
    return obj.length(tx)


@rule(isinstance)
def _isinstance(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    obj, classes = args
    target = classes.as_python_constant()
    for cls in _classes_in(target):
        _answer_depends_on_type_only(tx, cls)
    return fold(tx, issubclass, obj.python_type(), target)


def _classes_in(target: Any) -> list[Any]:
    """The classes `isinstance` tests against: tuples nest, `A | B` is a union of its arguments."""
    if isinstance(target, tuple):
        return [c for t in target for c in _classes_in(t)]
    if isinstance(target, types.UnionType):
        return list(target.__args__)
    return [target]


def _answer_depends_on_type_only(tx: Tracer, cls: Any) -> None:
    """The object's type is guarded, so its answer may be folded where the metaclass asks nothing
    else: `type`'s own check, torch's metaclasses, or an ABC's registry (guarded by the token
    `register` changes). A metaclass's own `__instancecheck__` may read the instance: not folded."""
    meta = type(cls)
    own = mro_lookup(meta, "__instancecheck__"), mro_lookup(meta, "__subclasscheck__")
    if own == (type.__instancecheck__, type.__subclasscheck__) or meta.__module__.startswith("torch"):
        return
    if isinstance(cls, abc.ABCMeta) and own == (abc.ABCMeta.__instancecheck__, abc.ABCMeta.__subclasscheck__):
        tx.ctx.add_guard(CallResultGuard(None, fn=abc.get_cache_token, args=(), expected=abc.get_cache_token(),
                                         loc=tx.loc()))
        return
    raise Unsupported("isinstance", f"pdyn cannot fold isinstance(..., {getattr(cls, '__qualname__', cls)}): its "
                      f"metaclass {meta.__qualname__} decides it", loc=tx.loc())


@rule(type)
def _type(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    if len(args) != 1:
        raise Unsupported("type", "pdyn cannot create classes with type(name, bases, dict)", loc=tx.loc())
    return tx.wrap_constant(args[0].python_type())


@rule(getattr)
def _getattr(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    if len(args) != 3:
        return args[0].getattr(tx, args[1].as_python_constant())
    found = _lookup(tx, args[0], args[1].as_python_constant())
    return args[2] if found is None else found


@rule(hasattr)
def _hasattr(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    return ConstantVariable(_lookup(tx, args[0], args[1].as_python_constant()) is not None)


def _lookup(tx: Tracer, obj: VariableTracker, name: str) -> VariableTracker | None:
    """`obj.name`, or None where it is missing; either answer is guarded (see `_guard_presence`)."""
    try:
        found = obj.getattr(tx, name)
    except UserException as e:
        if not isinstance(e.exc, AttributeError):
            raise
        _guard_presence(tx, obj, name, None)
        return None
    _guard_presence(tx, obj, name, found)
    return found


def _guard_presence(tx: Tracer, obj: VariableTracker, name: str, found: VariableTracker | None) -> None:
    """The answer depended on `obj.name` being there (or missing): set later, on the instance or its
    class (or deleted), the entry must not apply. A value read through its own source is already
    guarded by reading it; an immutable constant cannot change."""
    if obj.source is None or (isinstance(obj, ConstantVariable) and type(obj.value) in CONSTANT_TYPES):
        return
    if traces_lookup(obj):
        return  # each step of the lookup was guarded as it was traced: the same steps give the same answer
    if found is not None:
        read = found.source
        if isinstance(read, AttrSource) and read.base == obj.source and read.attr == name:
            return
        if tx.ctx.side_effects.load_attr(obj, name) is found:
            return  # the trace set it itself
    elif is_deleted(tx.ctx.side_effects.load_attr(obj, name)):
        return  # the trace deleted it itself
    tx.ctx.add_guard(HasAttrGuard(obj.source, name=name, present=found is not None, loc=tx.loc(),
                                  module_class=_plain_module_class(obj)))


def _plain_module_class(obj: VariableTracker) -> type | None:
    """The class of a module whose attribute lookup is object's, then torch's `Module.__getattr__`
    (its identity is guarded with the module's), or None."""
    if not isinstance(obj, NNModuleVariable):
        return None
    cls = type(obj.value)
    plain = cls.__getattribute__ is object.__getattribute__ and cls.__getattr__ is torch.nn.Module.__getattr__
    return cls if plain else None


@rule(setattr)
def _setattr(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    obj, name, value = args
    obj.store_attr(tx, name.as_python_constant(), value)
    return ConstantVariable(None)


@rule(iter)
def _iter(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    return make_iterator(tx, args[0])


@rule(next)
def _next(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    it = args[0]
    if not isinstance(it, IteratorVariable):
        raise Unsupported("next", f"pdyn cannot call next() on {it}", loc=tx.loc())
    item = it.next()
    if item is None:
        if len(args) > 1:
            return args[1]
        raise UserException(StopIteration())
    return item


@rule(enumerate)
def _enumerate(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    start = (args[1] if len(args) > 1 else kwargs.get("start", ConstantVariable(0))).as_python_constant()
    return EnumerateIterator(make_iterator(tx, args[0]), start)


@rule(zip)
def _zip(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    strict = kwargs.get("strict", ConstantVariable(False)).as_python_constant()
    return ZipIterator(tx, [make_iterator(tx, a) for a in args], bool(strict))


@rule(reversed)
def _reversed(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    if isinstance(args[0], (DictVariable, SetVariable, IteratorVariable)):
        raise Unsupported("reversed", f"pdyn cannot reverse {args[0]}", loc=tx.loc())
    if isinstance(args[0], ListVariable):
        return ReversedListIterator(args[0])
    return IteratorVariable(list(reversed(tx.iterate(args[0]))))


@rule(list)
def _list(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    return ListVariable(tx.iterate(args[0]) if args else [])


@rule(tuple)
def _tuple(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    if args and isinstance(args[0], TupleVariable) and type(args[0]) is TupleVariable:
        return args[0]
    return TupleVariable(tx.iterate(args[0]) if args else [])


@rule(dict)
def _dict(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    return DictVariable(dict_items(tx, args, kwargs))


@rule(set)
def _set(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    return SetVariable(tx.iterate(args[0]) if args else [])


@rule(frozenset)
def _frozenset(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    return ConstantVariable(frozenset(SetVariable(tx.iterate(args[0]) if args else []).items))


@rule(functools.partial)
def _partial(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    if not args:
        raise UserException(TypeError("type 'partial' takes at least one argument"))
    inner = args[0]
    if isinstance(inner, PartialVariable):  # partial(partial(f, a), b) flattens, as CPython does
        return PartialVariable(inner.fn, [*inner.args, *args[1:]], {**inner.keywords, **kwargs})
    return PartialVariable(inner, list(args[1:]), dict(kwargs))


@rule(super)
def _super(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    if not args:  # zero-argument form: the frame's __class__ cell and its first argument
        cell = tx.cells.get("__class__")
        first = tx.code.co_varnames[0] if tx.code.co_argcount else None
        if cell is None or cell.contents is None or first not in tx.locals:
            raise Unsupported("super", "pdyn traces super() only in a method whose first argument is a plain local",
                              loc=tx.loc())
        args = [cell.contents, tx.locals[first]]
    if len(args) != 2 or kwargs:
        raise Unsupported("super", "pdyn traces super() and super(cls, obj) only", loc=tx.loc())
    return SuperVariable(args[0].as_python_constant(), args[1])


@rule(sorted)
def _sorted(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    items = tx.iterate(args[0])
    key = kwargs.get("key")
    if key is not None and key.is_python_constant() and key.as_python_constant() is None:
        key = None
    keys = items if key is None else [key.call(tx, [i], {}) for i in items]  # once each, in order
    if set(kwargs) - {"reverse", "key"}:
        raise Unsupported("sorted", "pdyn sorts only with key= and reverse=", loc=tx.loc())
    reverse = bool(kwargs["reverse"].as_python_constant()) if "reverse" in kwargs else False
    if all(is_known(k) for k in keys):
        values: list[Any] = [python_value(k, "sorted()", tx.loc()) for k in keys]  # the order is a value read
    else:   # tuples of sizes: Python's own sort, each `<` it asks a comparison the trace reads (and guards)
        values = [_OrderedBy(tx, k) for k in keys]
    try:
        order = sorted(range(len(items)), key=lambda i: values[i], reverse=reverse)
    except TypeError as e:
        raise UserException(e) from None
    return ListVariable([items[i] for i in order])


class _OrderedBy:
    """A sort key whose `<` is the traced `<` of its tracker (a bool read, guarded where symbolic)."""

    def __init__(self, tx: Tracer, vt: VariableTracker):
        self.tx, self.vt = tx, vt

    def __lt__(self, other: _OrderedBy) -> bool:
        return self.tx.binary(operator.lt, self.vt, other.vt).truth(self.tx)


@rule(sum)
def _sum(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    total = args[1] if len(args) > 1 else kwargs.get("start", ConstantVariable(0))
    for item in tx.iterate(args[0]):
        total = tx.binary(operator.add, total, item)
    return total


def _minmax(pick_left: Callable[[Any, Any], Any]) -> Rule:
    def run(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if set(kwargs) - {"key", "default"} or (len(args) > 1 and "default" in kwargs):
            raise Unsupported("minmax_kwargs", "pdyn traces min()/max() with key= and default= only",
                              loc=tx.loc())
        items = tx.iterate(args[0]) if len(args) == 1 else list(args)
        key = kwargs.get("key")
        key = None if key is not None and key.is_python_constant() and key.as_python_constant() is None else key
        if not items:
            if "default" in kwargs:
                return kwargs["default"]
            raise UserException(ValueError("min()/max() arg is an empty sequence"))
        if key is not None:  # the first item with the least (greatest) key, keys compared as Python does
            keys = [key.call(tx, [i], {}) for i in items]
            best_at = 0
            for at in range(1, len(items)):
                if tx.binary(pick_left, keys[at], keys[best_at]).truth(tx):
                    best_at = at
            return items[best_at]
        if any(isinstance(i, SymIntVariable) for i in items) and all(  # ints only: min(n, 2.5) has n's or 2.5's type
                i.pytype is int if isinstance(i, SymIntVariable) else type(i.as_python_constant()) is int for i in items):
            best = items[0]  # sizes: min(n, 4) stays symbolic (sympy Min), no guard
            for item in items[1:]:
                best = sym_binary(tx, min if pick_left is operator.lt else max, best, item)
            return best
        best = items[0]
        for item in items[1:]:
            if tx.binary(pick_left, item, best).truth(tx):
                best = item
        return best

    return run


register(min, _minmax(operator.lt))
register(max, _minmax(operator.gt))


def _any_all(want: bool) -> Rule:
    def run(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        it = make_iterator(tx, args[0])  # lazily: a generator stops where any()/all() stop
        while (item := it.next()) is not None:
            if item.truth(tx) == want:
                return ConstantVariable(want)
        return ConstantVariable(not want)

    return run


register(any, _any_all(True))
register(all, _any_all(False))


@rule(abs)
def _abs(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    if args[0].is_python_constant():
        return fold(tx, abs, args[0].as_python_constant())
    return args[0].unary_op(tx, abs)


@rule(bool)
def _bool(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    return ConstantVariable(args[0].truth(tx) if args else False)


@rule(callable)
def _callable(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    kinds = (BuiltinVariable, ClassVariable, UserFunctionVariable, UserMethodVariable, TorchFunctionVariable,
             NNModuleVariable, TensorMethodVariable)
    if isinstance(args[0], kinds):
        return ConstantVariable(True)
    return fold(tx, callable, args[0].as_python_constant())


for _op in (operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
            operator.pow, operator.matmul, operator.and_, operator.or_, operator.xor, operator.lshift,
            operator.rshift, operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge,
            operator.iadd, operator.isub, operator.imul, operator.itruediv):
    register(_op, functools.partial(lambda fn, tx, args, kwargs: tx.binary(fn, *args), _op))

register(operator.neg, lambda tx, args, kwargs: (fold(tx, operator.neg, args[0].as_python_constant())
                                                 if args[0].is_python_constant() else args[0].unary_op(tx, operator.neg)))


@rule(operator.getitem)
def _getitem(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    return args[0].getitem(tx, args[1])


@rule(operator.contains)
def _contains(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    return ConstantVariable(contains(tx, args[1], args[0]))


def construct(tx: Tracer, cls: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`cls(*args, **kwargs)` for the classes pdyn can build at trace time."""
    if rule_of(cls) is not None or cls in PURE_BUILTINS:
        return call_builtin(tx, cls, args, kwargs)
    if cls is torch.Size:
        return SizeVariable(tx.iterate(args[0]) if args else [])
    if type(cls) is LEGACY_TENSOR_TYPE and not cls.is_cuda and len(args) == 1 and not kwargs \
            and isinstance(args[0], (ListVariable, TupleVariable)) \
            and not any(isinstance(i, TensorVariable) for i in args[0].items):
        # `torch.LongTensor([1, n])`: torch.tensor of the values in the type's dtype
        return TorchFunctionVariable(torch.tensor).call(tx, [args[0]], {"dtype": ConstantVariable(cls.dtype)})
    if all(is_known(a) for a in [*args, *kwargs.values()]) and (
            cls in (torch.device, torch.finfo, torch.iinfo) or issubclass(cls, BaseException)):
        return fold_object(tx, cls, args, kwargs)
    if issubclass(cls, torch.nn.Parameter):  # as nn.Linear's weights: eager makes a new leaf per call
        raise Unsupported("module_construction", "pdyn cannot trace making an nn.Parameter inside a compiled "
                          "function", hint="build modules and their parameters in __init__", loc=tx.loc())
    if issubclass(cls, torch.nn.Module) and cls.__module__.startswith("torch.nn."):
        return construct_module(tx, cls, args, kwargs)  # a loss or an activation; weights are a break
    if issubclass(cls, torch.nn.Module):
        return construct_traced_module(tx, cls, args, kwargs)  # a user's or library's: __init__ traced
    if issubclass(cls, enum.Enum) and all(is_known(a) for a in [*args, *kwargs.values()]):
        return fold_object(tx, cls, args, kwargs)  # `Color(1)` looks a member up
    if cls.__new__ is object.__new__ and type(cls).__call__ is type.__call__:
        return construct_object(tx, cls, args, kwargs)
    if is_user_dict_class(cls) and type(cls).__call__ is type.__call__:
        return construct_user_dict(tx, cls, args, kwargs)  # a ModelOutput: a dataclass and an OrderedDict
    if is_user_list_class(cls) and type(cls).__call__ is type.__call__:
        return construct_user_list(tx, cls, args, kwargs)  # a LogitsProcessorList
    if isinstance(mro_lookup(cls, "__new__"), staticmethod) and type(cls).__call__ is type.__call__:
        return construct_with_new(tx, cls, args, kwargs)  # a namedtuple, a tuple subclass
    raise Unsupported("construct", f"pdyn cannot trace constructing a {cls.__qualname__}", loc=tx.loc())


class BuiltinVariable(ObjectConstantVariable):
    """A builtin function or type (`len`, `range`, `math.sqrt`, `operator.add`, `str.upper` of a
    constant): its rule in `pdyn.trace.variables.registry`, or folded when pure and given constants."""

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return call_builtin(tx, self.value, args, kwargs)

    def __repr__(self) -> str:
        return f"BuiltinVariable({getattr(self.value, '__qualname__', self.value)})"


class ClassVariable(ObjectConstantVariable):
    """A class: for isinstance checks, class attributes, and constructing the few classes pdyn
    knows how to build (torch.Size, torch.device, exceptions)."""

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return construct(tx, self.value, args, kwargs)

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        if isinstance(self.value, type) and type(self.value) is type:
            class_attr(tx, self.value, name)  # `Cls.name` replaced later: the entry does not apply
        if self.value is torch.nn.Module and is_module_init(torch.nn.Module.__dict__.get(name)):
            return BuiltinVariable(MODULE_INIT)  # `nn.Module.__init__(self)`: its rule, even wrapped
        try:
            attr = inspect.getattr_static(self.value, name)
        except AttributeError as e:
            raise UserException(e) from None
        if isinstance(attr, staticmethod):
            attr = attr.__func__
        elif isinstance(attr, classmethod):
            return UserMethodVariable(tx.wrap_constant(attr.__func__), self)
        elif not isinstance(attr, types.FunctionType):
            attr = getattr(self.value, name)
            if self.source is not None and is_constant_value(attr) and not isinstance(self.value, enum.EnumMeta):
                return tx.wrap(attr, AttrSource(self.source, name))  # a class attribute can be reassigned
            if isinstance(self.value, type):
                return shared_class_value(tx, self.value, name, attr, self.source)
        return tx.wrap_constant(attr)

    def __repr__(self) -> str:
        return f"ClassVariable({self.value.__qualname__})"


class ModuleCallVariable(VariableTracker):
    """`super().__call__` of a module whose class overrides `__call__`: nn.Module's own call."""

    def __init__(self, module: NNModuleVariable):
        self.module = module

    def python_type(self) -> type:
        return types.MethodType

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.module.call_as_module(tx, args, kwargs)

    def callee_at_break(self, callee: BreakCallee, method_of: VariableTracker | None = None) -> str | None:
        return None if method_of is not None else callee.nn_module_call(self.module, self.module.value)

    def reconstruct_resumed(self, codegen: ResumeCodegen) -> str:
        """At a break inside the call (`return super().__call__(*args, **kwargs)` of a wrapper's
        `__call__`): nn.Module's call bound to the module, which the frame code then calls."""
        method = codegen.constant(types.MethodType, "MethodType")
        return f"{method}({codegen.constant(torch.nn.Module.__call__, 'module_call')}, {codegen.reconstruct(self.module)})"


class SuperVariable(VariableTracker):
    """`super(cls, obj)`: attribute reads look in type(obj)'s MRO after `cls` and bind to `obj`."""

    def __init__(self, cls: type, obj: VariableTracker):
        self.cls = cls
        self.obj = obj

    def python_type(self) -> type:
        return super

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        if isinstance(self.obj, ClassVariable) and isinstance(self.obj.value, type) \
                and issubclass(self.obj.value, self.cls):
            return self._class_getattr(tx, name)
        mro = self.obj.python_type().__mro__
        if self.cls not in mro:
            raise UserException(TypeError("super(type, obj): obj must be an instance or subtype of type"))
        for klass in mro[mro.index(self.cls) + 1:]:
            if name not in klass.__dict__:
                continue
            start = mro[mro.index(self.cls) + 1]  # the base class's method, as traced (in each MRO)
            for searched in {start, klass}:
                class_attr(tx, searched, name)
            attr = klass.__dict__[name]
            if attr is torch.nn.Module.__call__ and isinstance(self.obj, NNModuleVariable):
                return ModuleCallVariable(self.obj)  # an overriding __call__ calling nn.Module's
            if is_module_init(attr):
                return UserMethodVariable(BuiltinVariable(MODULE_INIT), self.obj)  # its rule, even wrapped
            if not hasattr(type(attr), "__get__"):
                return shared_class_value(tx, klass, name, attr, None)  # a plain class attribute: the base class's own
            return bind_class_attr(tx, self.obj, self.obj.python_type(), name, attr)
        raise UserException(AttributeError(f"'super' object has no attribute '{name}'"), tx.loc())

    def _class_getattr(self, tx: Tracer, name: str) -> VariableTracker:
        """`super(cls, klass).name` with a class second (`super().build(n)` in a classmethod): a
        classmethod binds to `klass`, a function or staticmethod is the plain function."""
        owner = self.obj.value   # type: ignore[attr-defined]
        mro = owner.__mro__
        for klass in mro[mro.index(self.cls) + 1:]:
            if name not in klass.__dict__:
                continue
            for searched in {mro[mro.index(self.cls) + 1], klass}:
                class_attr(tx, searched, name)
            attr = klass.__dict__[name]
            if isinstance(attr, classmethod):
                return UserMethodVariable(tx.wrap_constant(attr.__func__), self.obj)
            if isinstance(attr, staticmethod):
                return tx.wrap_constant(attr.__func__)
            if isinstance(attr, types.FunctionType) or not hasattr(type(attr), "__get__"):
                return tx.wrap_constant(attr)
            raise Unsupported("super", f"pdyn cannot trace super().{name} of class {owner.__qualname__}",
                              loc=tx.loc())
        raise UserException(AttributeError(f"'super' object has no attribute '{name}'"), tx.loc())
