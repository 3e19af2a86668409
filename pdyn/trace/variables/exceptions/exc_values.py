"""Exceptions as values: `str`/`repr` of an input exception (an argument, or the exception a resume
function's handler re-enters with), made from its guarded `args` as BaseException's methods make
them, and `sys.exc_info()` (the trace's handled exception, or none at frame start, guarded)."""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from pdyn.base.errors import Unsupported
from pdyn.sources import AttrSource
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.functions.unruled import call_unruled
from pdyn.trace.variables.registry import rule
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.containers.core import TupleVariable, is_known, python_value
from pdyn.trace.variables.exceptions.exc_fields import assume_none_handled_at_start
from pdyn.trace.variables.objects.user_objects import UserObjectVariable, class_attr

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

Args = list[VariableTracker]
Kwargs = dict[str, VariableTracker]


def _is_input_exception(vt: VariableTracker) -> bool:
    return isinstance(vt, UserObjectVariable) and vt.source is not None and issubclass(vt.cls, BaseException)


def _args_of(tx: Tracer, exc: UserObjectVariable) -> tuple[Any, ...]:
    """The values of `exc.args` (read through its source, each one guarded: a size is specialized)."""
    args = exc.getattr(tx, "args")
    if not isinstance(args, TupleVariable) or not all(is_known(a) for a in args.items):
        raise Unsupported("exception_str", f"pdyn cannot format an exception whose args are {args}", loc=tx.loc())
    return tuple(python_value(a, "str() of an exception", tx.loc()) for a in args.items)


def exception_str(tx: Tracer, exc: UserObjectVariable) -> VariableTracker:
    """`str(exc)` as BaseException's (and KeyError's) `__str__` make it from `args`."""
    method = class_attr(tx, exc.cls, "__str__")
    if method is BaseException.__dict__["__str__"] or method is KeyError.__dict__["__str__"]:
        args = _args_of(tx, exc)
        if method is KeyError.__dict__["__str__"] and len(args) == 1:
            return ConstantVariable(repr(args[0]))
        return ConstantVariable("" if not args else str(args[0]) if len(args) == 1 else str(args))
    if isinstance(method, types.FunctionType):
        return _checked(tx, exc.dunder(tx, "__str__", []), "__str__")
    raise Unsupported("exception_str", f"pdyn cannot trace str() of {exc.cls.__name__}", loc=tx.loc())


def exception_repr(tx: Tracer, exc: UserObjectVariable) -> VariableTracker:
    """`repr(exc)` as BaseException's `__repr__` makes it: the class name and the args."""
    method = class_attr(tx, exc.cls, "__repr__")
    if method is BaseException.__dict__["__repr__"]:
        args = _args_of(tx, exc)
        return ConstantVariable(exc.cls.__name__ + (f"({args[0]!r})" if len(args) == 1 else repr(args)))
    if isinstance(method, types.FunctionType):
        return _checked(tx, exc.dunder(tx, "__repr__", []), "__repr__")
    raise Unsupported("exception_str", f"pdyn cannot trace repr() of {exc.cls.__name__}", loc=tx.loc())


def _checked(tx: Tracer, result: VariableTracker | None, method: str) -> VariableTracker:
    if result is None or not result.is_python_constant() or type(result.as_python_constant()) is not str:
        raise Unsupported("exception_str", f"pdyn cannot trace a {method} that returns {result}", loc=tx.loc())
    return result


@rule(str)
def _str(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    if len(args) == 1 and not kwargs and _is_input_exception(args[0]):
        return exception_str(tx, args[0])  # type: ignore[arg-type]
    return call_unruled(tx, str, args, kwargs)


@rule(repr)
def _repr(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    if len(args) == 1 and not kwargs and _is_input_exception(args[0]):
        return exception_repr(tx, args[0])  # type: ignore[arg-type]
    return call_unruled(tx, repr, args, kwargs)


@rule(sys.exc_info)
def _exc_info(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    """The trace's handled exception where it is an input one (its traceback read from it), none
    where the trace handles none and none is handled at frame start (guarded)."""
    handled = tx.handled_exc
    if handled is None:
        assume_none_handled_at_start(tx, "sys.exc_info()")
        return TupleVariable([ConstantVariable(None)] * 3)
    if not _is_input_exception(handled):
        raise Unsupported("exc_info", "pdyn cannot trace sys.exc_info() of an exception it raised (its "
                          "traceback is Python's)", loc=tx.loc())
    tb = tx.wrap(handled.value.__traceback__, AttrSource(handled.source, "__traceback__"))  # type: ignore[attr-defined]
    return TupleVariable([tx.wrap_constant(handled.python_type()), handled, tb])


def format_exception(tx: Tracer, value: VariableTracker, conversion: Any, spec: str) -> VariableTracker | None:
    """`f"{e}"` / `f"{e!r}"` of an input exception: its str or repr (an empty spec formats with
    object's `__format__`, which is str), else None (not an input exception, or another format)."""
    if not _is_input_exception(value) or spec or conversion not in (None, str, repr):
        return None
    if conversion is None and class_attr(tx, value.cls, "__format__") is not object.__dict__["__format__"]:  # type: ignore[attr-defined]
        return None
    return exception_repr(tx, value) if conversion is repr else exception_str(tx, value)  # type: ignore[arg-type]
