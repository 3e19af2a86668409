"""Rules for `object`'s and `tuple`'s own methods called explicitly on user objects, as the hooks
and constructors of user classes call them: `object.__getattribute__(self, n)`,
`super().__setattr__(n, v)`, `object.__new__(cls)`, `tuple.__new__(cls, items)`."""

from __future__ import annotations

import collections
import typing
from typing import TYPE_CHECKING

from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.functions.unruled import call_unruled, fold_object
from pdyn.trace.variables.registry import rule
from pdyn.trace.variables.containers.core import is_known
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.objects.user_objects import UserObjectVariable, python_hook
from pdyn.trace.variables.objects.user_tuples import make_tuple

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

Args = list[VariableTracker]
Kwargs = dict[str, VariableTracker]


@rule(object.__getattribute__)
def _object_getattribute(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    obj, name = args
    if isinstance(obj, UserObjectVariable):
        return obj.generic_getattr(tx, name.as_python_constant())
    return obj.getattr(tx, name.as_python_constant())


@rule(object.__setattr__)
def _object_setattr(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    obj, name, value = args
    if not isinstance(obj, UserObjectVariable):
        raise Unsupported("object_setattr", f"pdyn cannot trace object.__setattr__ on {obj}", loc=tx.loc())
    obj.generic_setattr(tx, name.as_python_constant(), value)
    return ConstantVariable(None)


@rule(object.__init__)
def _object_init(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    return ConstantVariable(None)


@rule(object.__new__)
def _object_new(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    cls = args[0].as_python_constant()
    if not isinstance(cls, type) or cls.__new__ is not object.__new__ and not isinstance(
            cls.__dict__.get("__new__"), staticmethod):
        raise Unsupported("object_new", f"pdyn cannot trace object.__new__({cls})", loc=tx.loc())
    return UserObjectVariable.new(tx, cls)


@rule(tuple.__new__)
def _tuple_new(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    cls = args[0].as_python_constant()
    if not isinstance(cls, type) or not issubclass(cls, tuple):
        raise UserException(TypeError(f"tuple.__new__(X): X is not a subtype of tuple"), tx.loc())
    return make_tuple(cls, tx.iterate(args[1]) if len(args) > 1 else [])


@rule(collections.namedtuple)
def _namedtuple(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    """A namedtuple class defined in the traced code: made once, at trace time, in the user's module
    (each compiled call gets that one class, where eager makes a new one per call)."""
    if not all(is_known(a) for a in [*args, *kwargs.values()]):
        raise Unsupported("namedtuple", "pdyn defines namedtuple classes from constants only", loc=tx.loc())
    if "module" not in kwargs:
        kwargs = {**kwargs, "module": ConstantVariable(tx.f_globals.get("__name__"))}
    return fold_object(tx, collections.namedtuple, args, kwargs)  # type: ignore[arg-type]


@rule(typing.NamedTuple)
def _typing_namedtuple(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    """`typing.NamedTuple("Q", [("a", int)])`: made once at trace time, as `collections.namedtuple`.
    typing names the module from its caller's frame, which at trace time is pdyn's: the class gets
    the traced code's module, as eager's does."""
    if not all(is_known(a) for a in [*args, *kwargs.values()]):
        raise Unsupported("namedtuple", "pdyn defines NamedTuple classes from constants only", loc=tx.loc())
    made = fold_object(tx, typing.NamedTuple, args, kwargs)  # type: ignore[arg-type]
    made.as_python_constant().__module__ = tx.f_globals.get("__name__", "__main__")
    return made


@rule(vars)
def _vars(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    """`vars(obj)` of a user object: its `__dict__`, looked up as `obj.__dict__` is."""
    if len(args) != 1 or kwargs or not isinstance(args[0], UserObjectVariable):
        return call_unruled(tx, vars, args, kwargs)   # a break, as any builtin pdyn does not know
    cls = args[0].cls
    if "__dict__" not in dir(cls) and python_hook(tx, cls, "__getattr__") is None \
            and python_hook(tx, cls, "__getattribute__") is None:  # its class (guarded) decides: catchable
        raise UserException(TypeError("vars() argument must have __dict__ attribute"), tx.loc(), catchable=True)
    return args[0].getattr(tx, "__dict__")
