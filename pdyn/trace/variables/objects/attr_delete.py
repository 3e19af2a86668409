"""`del obj.name` and `delattr(obj, name)`: on a user object, a Python `__delattr__` inlined, else
`object.__delattr__` (a property's deleter, else the entry removed from the instance dict); on an
nn.Module, an attribute of its instance dict (not a parameter, buffer or submodule). An object the
trace made loses the field; one that outlives the trace (an input) records the deletion as the
attribute's last store: later reads in the trace see it gone, the frame replays it after the graph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from pdyn.base.errors import Unsupported, UserException
from pdyn.guards.guards import MODULE_TABLES, KeyPresenceGuard
from pdyn.sources import AttrSource
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.values.deleted import DeletedAttrVariable, is_deleted
from pdyn.trace.variables.functions.user_functions import UserFunctionVariable
from pdyn.trace.variables.objects.nn_module import NNModuleVariable
from pdyn.trace.variables.objects.user_objects import UserObjectVariable, class_attr, is_data_descriptor, python_hook

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer


def delete_attr(tx: Tracer, obj: VariableTracker, name: str) -> None:
    if type(obj) is NNModuleVariable:
        _delete_module_attr(tx, obj, name)
        return
    if type(obj) is not UserObjectVariable:
        raise Unsupported("delattr", f"pdyn cannot trace deleting attribute {name!r} of {obj}", loc=tx.loc())
    hook = python_hook(tx, obj.cls, "__delattr__")
    if hook is not None:
        UserFunctionVariable(hook).call(tx, [obj, ConstantVariable(name)], {})
        return
    if obj.cls.__delattr__ is not object.__delattr__:
        raise Unsupported("delattr", f"pdyn traces deleting attributes of {obj.cls.__name__} objects only with "
                          "object's own __delattr__", loc=tx.loc())
    object_delattr(tx, obj, name)


def object_delattr(tx: Tracer, obj: UserObjectVariable, name: str) -> None:
    """`object.__delattr__(obj, name)`."""
    attr = class_attr(tx, obj.cls, name)
    if is_data_descriptor(attr):
        if isinstance(attr, property) and attr.fdel is not None:
            tx.wrap_constant(attr.fdel).call(tx, [obj], {})
            return
        raise Unsupported("descriptor", f"pdyn cannot delete {obj.cls.__qualname__}.{name} "
                          f"({type(attr).__name__})", loc=tx.loc())
    if obj.is_fresh:
        if name not in obj.fields:  # the fields of an object made in the trace are all known: catchable
            raise _missing(tx, obj.cls.__name__, name)
        del obj.fields[name]
        return
    stored = tx.ctx.side_effects.load_attr(obj, name)
    if stored is None:  # only its presence is guarded, not its value
        instance_dict = getattr(obj.value, "__dict__", None)
        if not isinstance(instance_dict, dict):
            raise Unsupported("delattr", f"pdyn cannot trace deleting {name!r} of a {obj.cls.__name__} without "
                              "an instance dict", loc=tx.loc())
        present = name in instance_dict
        tx.ctx.add_guard(KeyPresenceGuard(AttrSource(obj.source, "__dict__"), key_name=name, present=present,
                                          loc=tx.loc()))
    else:
        present = not is_deleted(stored)
    if not present:
        raise _missing(tx, obj.cls.__name__, name)
    tx.ctx.side_effects.store_attr(obj, name, DeletedAttrVariable())


def _delete_module_attr(tx: Tracer, module: NNModuleVariable, name: str) -> None:
    """Module.__delattr__ of a plain attribute: one the module's dict holds or the trace stored."""
    m = module.value
    if any(name in m.__dict__.get(table, {}) for table in MODULE_TABLES) or name in MODULE_TABLES:
        raise Unsupported("module_delattr", f"pdyn cannot trace deleting {type(m).__name__}.{name} (a parameter, "
                          "buffer or submodule)", loc=tx.loc())
    if type(m).__delattr__ is not torch.nn.Module.__delattr__:
        raise Unsupported("module_delattr", f"{type(m).__name__} customizes attribute deletion", loc=tx.loc())
    stored = tx.ctx.side_effects.load_attr(module, name)
    present = (name in m.__dict__) if stored is None else not is_deleted(stored)
    if stored is None and module.source is not None:
        module.getattr(tx, name) if present else None  # reading it guards the entry it read
    if not present:  # NOTE: not catchable: the absence of an input module's attribute is not guarded
        raise UserException(AttributeError(f"'{type(m).__name__}' object has no attribute '{name}'"), tx.loc())
    tx.ctx.side_effects.store_attr(module, name, DeletedAttrVariable())


def _missing(tx: Tracer, cls_name: str, name: str) -> UserException:
    return UserException(AttributeError(f"'{cls_name}' object has no attribute '{name}'"), tx.loc(), catchable=True)
