"""`delattr(obj, name)` on a user object made in the trace: a Python `__delattr__` inlined, else
`object.__delattr__` (a property's deleter, else the entry removed from the instance dict). An
object read from the frame is not changed by a trace (a graph break), nor is any other tracker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.constant import ConstantVariable
from pdyn.trace.variables.functions import UserFunctionVariable
from pdyn.trace.variables.user_objects import UserObjectVariable, class_attr, is_data_descriptor, python_hook

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer


def delete_attr(tx: Tracer, obj: VariableTracker, name: str) -> None:
    if type(obj) is not UserObjectVariable:
        raise Unsupported("delattr", f"pdyn cannot trace deleting attribute {name!r} of {obj}", loc=tx.loc())
    hook = python_hook(tx, obj.cls, "__delattr__")
    if hook is not None:
        UserFunctionVariable(hook).call(tx, [obj, ConstantVariable(name)], {})
        return
    if obj.cls.__delattr__ is not object.__delattr__ or not obj.is_fresh:
        raise Unsupported("delattr", f"pdyn traces deleting attributes only of {obj.cls.__name__} objects made "
                          "in the trace, with object's own __delattr__", loc=tx.loc())
    attr = class_attr(tx, obj.cls, name)
    if is_data_descriptor(attr):
        if isinstance(attr, property) and attr.fdel is not None:
            tx.wrap_constant(attr.fdel).call(tx, [obj], {})
            return
        raise Unsupported("descriptor", f"pdyn cannot delete {obj.cls.__qualname__}.{name} "
                          f"({type(attr).__name__})", loc=tx.loc())
    if name not in obj.fields:  # the fields of an object made in the trace are all known: catchable
        raise UserException(AttributeError(f"'{obj.cls.__name__}' object has no attribute '{name}'"), tx.loc(),
                            catchable=True)
    del obj.fields[name]
