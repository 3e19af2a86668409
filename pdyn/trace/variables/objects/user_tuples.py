"""TupleSubclassVariable: an instance of a tuple subclass (a namedtuple, a `class P(tuple)`), read from
the frame or made in the trace. Its items are a tuple's; its fields and methods are its class's.
"""

from __future__ import annotations

import collections
import inspect
import types
from typing import TYPE_CHECKING, Any, Callable

from pdyn.base.errors import Unsupported, UserException
from pdyn.sources import Source
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.containers.core import ContainerMethodVariable, DictVariable, TupleVariable
from pdyn.trace.variables.functions.user_functions import UserFunctionVariable
from pdyn.trace.variables.objects.user_objects import MISSING, bind_class_attr, check_init_result, class_attr, mro_lookup

if TYPE_CHECKING:
    from pdyn.trace.frame_codegen import FrameCodegen
    from pdyn.trace.translator import InstructionTranslator as Tracer

_STOCK = collections.namedtuple("_STOCK", "a")
TUPLE_GETTER = type(_STOCK.a)  # namedtuple's field descriptor
# namedtuple's own methods, by code object (each namedtuple class has its own function objects)
STOCK_CODE = {name: getattr(_STOCK, name).__code__ for name in ("_replace", "_asdict")}


def is_namedtuple_class(cls: type) -> bool:
    return issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple) and hasattr(cls, "_make")


class TupleSubclassVariable(TupleVariable):
    """A tuple of class `cls`. Slicing or `+` gives a plain tuple, as in Python."""

    def __init__(self, items: list[VariableTracker], source: Source | None = None, cls: type = tuple):
        super().__init__(items, source)
        self.cls = cls

    def python_type(self) -> type:
        return self.cls

    def as_python_constant(self) -> Any:
        return tuple.__new__(self.cls, [i.as_python_constant() for i in self.items])

    def getitem(self, tx: Tracer, key: VariableTracker) -> VariableTracker:
        return _plain(super().getitem(tx, key))

    def binary_op(self, tx: Tracer, fn: Callable[[Any, Any], Any], other: VariableTracker) -> VariableTracker:
        if self.cls is not tuple and isinstance(other, TupleVariable):
            return _plain(TupleVariable(self.items).binary_op(tx, fn, TupleVariable(other.items)))
        return _plain(super().binary_op(tx, fn, other))

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        attr = class_attr(tx, self.cls, name, MISSING)  # a class attribute may be None
        if name in STOCK_CODE and getattr(attr, "__code__", None) is STOCK_CODE[name]:
            return ContainerMethodVariable(self, name)
        if isinstance(attr, TUPLE_GETTER):
            return self.items[attr.__reduce__()[1][0]]  # type: ignore[index]
        if attr is MISSING or (attr is tuple.__dict__.get(name) and not callable(attr)):
            raise UserException(AttributeError(f"{self.cls.__name__!r} object has no attribute {name!r}"), tx.loc())
        if attr is tuple.__dict__.get(name):
            return super().getattr(tx, name)
        return bind_class_attr(tx, self, self.cls, name, attr)

    def call_method(self, tx: Tracer, name: str, args: list[VariableTracker],
                    kwargs: dict[str, VariableTracker]) -> VariableTracker:
        attr = class_attr(tx, self.cls, name)
        if name in STOCK_CODE and getattr(attr, "__code__", None) is STOCK_CODE[name]:
            fields = list(self.cls._fields)  # type: ignore[attr-defined]
            if name == "_asdict" and not args and not kwargs:
                return DictVariable(dict(zip(fields, self.items)))
            if name == "_replace" and not args:
                unknown = [k for k in kwargs if k not in fields]
                if unknown:
                    raise UserException(ValueError(f"Got unexpected field names: {unknown!r}"), tx.loc())
                items = [kwargs.get(f, item) for f, item in zip(fields, self.items)]
                return TupleSubclassVariable(items, cls=self.cls)
        if class_attr(tx, self.cls, name) is tuple.__dict__.get(name):
            return super().call_method(tx, name, args, kwargs)
        return self.getattr(tx, name).call(tx, args, kwargs)

    def reconstruct(self, codegen: FrameCodegen) -> str:
        if self.source is not None:
            return codegen.source_expr(self.source)
        items = "".join(f"{codegen.reconstruct(i)}, " for i in self.items)
        return f"{codegen.constant(tuple.__new__, 'tuple_new')}({codegen.constant(self.cls, self.cls.__name__)}, " \
               f"({items}))"

    def __repr__(self) -> str:
        return f"TupleSubclassVariable({self.cls.__qualname__}, {self.items})"


def _plain(vt: VariableTracker) -> VariableTracker:
    return TupleVariable(vt.items) if isinstance(vt, TupleSubclassVariable) else vt  # type: ignore[attr-defined]


def make_tuple(cls: type, items: list[VariableTracker]) -> VariableTracker:
    """`tuple.__new__(cls, items)`."""
    return TupleVariable(items) if cls is tuple else TupleSubclassVariable(items, cls=cls)


def construct_namedtuple(tx: Tracer, cls: type, args: list[VariableTracker],
                         kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`Point(x, y=...)`: the fields bound as namedtuple's `__new__` binds them (defaults too)."""
    try:
        bound = inspect.signature(cls.__new__).bind(cls, *args, **kwargs)
    except TypeError as e:
        raise UserException(TypeError(f"{cls.__name__}.__new__() {e}"), tx.loc()) from None
    bound.apply_defaults()
    values = [bound.arguments[f] for f in cls._fields]  # type: ignore[attr-defined]
    return TupleSubclassVariable([v if isinstance(v, VariableTracker) else tx.wrap_constant(v) for v in values],
                                 cls=cls)


def construct_with_new(tx: Tracer, cls: type, args: list[VariableTracker],
                       kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`cls(*args)` for a class with a `__new__` written in Python: it is inlined, then `__init__`
    (where written in Python) on what it returned, if that is an instance of `cls`."""
    if is_namedtuple_class(cls) and mro_lookup(cls, "_make") is not None and \
            "_tuple_new" in getattr(cls.__new__, "__globals__", {}):
        return construct_namedtuple(tx, cls, args, kwargs)
    new = mro_lookup(cls, "__new__")
    fn = new.__func__ if isinstance(new, staticmethod) else None
    if not isinstance(fn, types.FunctionType):
        raise Unsupported("construct", f"pdyn cannot trace constructing a {cls.__qualname__}", loc=tx.loc())
    obj = UserFunctionVariable(fn).call(tx, [tx.wrap_constant(cls), *args], kwargs)
    init = class_attr(tx, cls, "__init__")
    try:
        made = issubclass(obj.python_type(), cls)
    except Unsupported:
        made = False
    if made and isinstance(init, types.FunctionType):
        check_init_result(tx, bind_class_attr(tx, obj, cls, "__init__", init).call(tx, args, kwargs))
    return obj
