"""`copy.copy` and `copy.deepcopy` over trackers, structurally: immutable values are themselves,
lists, tuples, dicts and sets are new containers of copied items, and an instance of a plain user
class (no copy hook of its own: `__copy__`, `__deepcopy__`, `__reduce__`, `__getstate__`, ...) is a
new object made in the trace with its attributes copied, as `copy`'s `__reduce_ex__` path makes it
(`cls.__new__`, then the instance dict updated past `__setattr__`). Anything else (tensors,
modules, classes with hooks) is a graph break. The rules of `copy.copy`/`copy.deepcopy` are in
`stdlib/helpers.py`.
"""

from __future__ import annotations

import copy
import copyreg
from typing import TYPE_CHECKING, Any

from pdyn.base.errors import Unsupported, UserException
from pdyn.guards.guards import DictKeysGuard
from pdyn.sources import AttrSource
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ConstantVariable, ObjectConstantVariable
from pdyn.trace.variables.containers.core import DictVariable, ListVariable, TupleVariable
from pdyn.trace.variables.containers.sets import SetVariable
from pdyn.trace.variables.objects.user_objects import InstanceDictVariable, UserObjectVariable, class_attr

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

# Python values `copy` returns as they are, at any depth.
IMMUTABLE_TYPES = (type(None), bool, int, float, complex, str, bytes)
# What `copy` looks up on the instance, which `object` lacks: any of them is a hook of the class.
HOOKS = {"copy": ("__copy__", "__getnewargs_ex__", "__getnewargs__", "__setstate__"),
         "deepcopy": ("__deepcopy__", "__getnewargs_ex__", "__getnewargs__", "__setstate__")}
# What `object` has, which a class may override.
OBJECT_DEFAULTS = ("__reduce_ex__", "__reduce__", "__getstate__", "__new__")


def _refuse(tx: Tracer, kind: str, value: VariableTracker) -> Unsupported:
    return Unsupported(kind, f"pdyn cannot trace copy.{kind}() of {value}", loc=tx.loc())


def _is_immutable(value: VariableTracker) -> bool:
    """A value `copy` and `deepcopy` return as it is: numbers, strings, None (symbolic sizes too),
    and the constants `copy` treats as atomic (classes, functions, ...)."""
    try:
        kind = value.python_type()
    except Unsupported:
        return False
    if kind in IMMUTABLE_TYPES:
        return True
    if isinstance(value, ObjectConstantVariable):
        v = value.value
        return isinstance(v, type) or copy._deepcopy_dispatch.get(type(v)) is copy._deepcopy_atomic  # type: ignore[attr-defined]
    return False


def _copy_constant(value: ConstantVariable, copier: Any) -> VariableTracker:
    """A constant copied at trace time: itself where `copy` returns it (`is` sees the same object),
    else an equal new constant (a slice, a tuple holding one)."""
    out = copier(value.value)
    return value if out is value.value else ConstantVariable(out)


def shallow_copy(tx: Tracer, value: VariableTracker) -> VariableTracker:
    """`copy.copy(value)`."""
    kind = type(value)
    if kind is ListVariable:
        return ListVariable(list(value.items))
    if kind is DictVariable:
        return DictVariable(value.items, dict_type=value.dict_type)
    if kind is SetVariable:
        return SetVariable(list(value.items.values()))
    if isinstance(value, ConstantVariable):
        return _copy_constant(value, copy.copy)
    if kind is TupleVariable or _is_immutable(value):
        return value
    if kind is UserObjectVariable:
        return _copy_object(tx, value, "copy", lambda v: v)
    raise _refuse(tx, "copy", value)


def deep_copy(tx: Tracer, value: VariableTracker, memo: dict[int, VariableTracker]) -> VariableTracker:
    """`copy.deepcopy(value)`; `memo` maps a tracker already copied to its copy (shared objects stay
    shared in the copy, cycles end), as `copy`'s memo does by `id`."""
    done = memo.get(id(value))
    if done is not None:
        return done
    kind = type(value)
    if isinstance(value, ConstantVariable):
        return _copy_constant(value, copy.deepcopy)
    if _is_immutable(value):
        return value
    if kind is ListVariable:
        out = memo[id(value)] = ListVariable([])
        out.items = [deep_copy(tx, item, memo) for item in value.items]
        return out
    if kind is TupleVariable:
        items = [deep_copy(tx, item, memo) for item in value.items]
        same = all(a is b for a, b in zip(items, value.items))  # `copy` keeps a tuple of atoms
        return memo.setdefault(id(value), value if same else TupleVariable(items))
    if kind is DictVariable:
        out = memo[id(value)] = DictVariable({}, dict_type=value.dict_type)
        out.items = {k: deep_copy(tx, v, memo) for k, v in value.items.items()}
        return out
    if kind is SetVariable and all(_is_immutable(i) for i in value.items.values()):
        return SetVariable(list(value.items.values()))
    if kind is InstanceDictVariable:  # `deepcopy(obj.__dict__)`: a plain dict of the attributes
        out = memo[id(value)] = DictVariable({})
        out.items = {k: deep_copy(tx, v, memo) for k, v in instance_attrs(tx, value.obj).items()}
        return out
    if kind is UserObjectVariable:
        return _copy_object(tx, value, "deepcopy", lambda v: deep_copy(tx, v, memo), memo)
    raise _refuse(tx, "deepcopy", value)


def _copy_object(tx: Tracer, obj: UserObjectVariable, kind: str, copy_value: Any,
                 memo: dict[int, VariableTracker] | None = None) -> VariableTracker:
    """A new instance of `obj`'s class whose attributes are `copy_value` of `obj`'s."""
    cls = obj.cls
    plain = ("__dict__" in dir(cls) and not any("__slots__" in k.__dict__ for k in cls.__mro__)
             and cls not in copyreg.dispatch_table and not issubclass(cls, type))
    if not plain:
        raise _refuse(tx, kind, obj)
    for name in OBJECT_DEFAULTS:  # the class keeps object's own (guarded), the instance adds none
        attr = class_attr(tx, cls, name)
        if attr is not object.__dict__.get(name) or obj.dict_read(tx, name) is not None:
            raise _refuse(tx, kind, obj)
    for name in HOOKS[kind]:  # looked up on the instance, as `copy` does (a `__getattr__` included)
        try:
            obj.getattr(tx, name)
        except UserException as e:
            if isinstance(e.exc, AttributeError):
                continue
            raise
        raise _refuse(tx, kind, obj)
    out = UserObjectVariable.fresh(cls)
    if memo is not None:
        memo[id(obj)] = out
    out.fields = {name: copy_value(v) for name, v in instance_attrs(tx, obj).items()}
    return out


def instance_attrs(tx: Tracer, obj: UserObjectVariable) -> dict[str, VariableTracker]:
    """Every entry of `obj.__dict__`, in order, as the trace now sees it. Read from the frame, the
    dict's keys are guarded, and the trace's own stores come after (or replace) them."""
    if obj.is_fresh:
        return dict(obj.fields)
    real = obj.value.__dict__
    if type(real) is not dict or not all(type(k) is str for k in real):
        raise _refuse(tx, "deepcopy", obj)
    tx.ctx.add_guard(DictKeysGuard(AttrSource(obj.source, "__dict__"), dict, tuple(real),  # type: ignore[arg-type]
                                   loc=tx.loc()))
    stored = [name for (owner, name) in tx.ctx.side_effects.attrs if owner == id(obj)]
    out: dict[str, VariableTracker] = {}
    for name in [*real, *(n for n in stored if n not in real)]:
        found = obj.dict_read(tx, name)
        assert found is not None, f"{obj}.__dict__[{name!r}]"
        out[name] = found
    return out
