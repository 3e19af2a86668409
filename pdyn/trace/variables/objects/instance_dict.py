"""`obj.__dict__` (and `vars(obj)`) of a user object: a view whose reads are the object's own
attribute reads, whose writes are attribute stores, and whose keys are the instance dict's (guarded
by keys and order) changed by the trace's own stores and deletions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdyn.base.errors import Unsupported, UserException
from pdyn.guards.guards import DictKeysGuard
from pdyn.sources import AttrSource
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.containers.core import DictVariable
from pdyn.trace.variables.values.deleted import is_deleted

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer
    from pdyn.trace.variables.objects.user_objects import UserObjectVariable


class InstanceDictVariable(VariableTracker):
    """`obj.__dict__` of a user object: a view whose reads are the object's own attribute reads
    (each key's presence guarded), whose writes are attribute stores."""

    def __init__(self, obj: UserObjectVariable):
        self.obj = obj

    def python_type(self) -> type:
        return dict

    def getitem(self, tx: Tracer, key: VariableTracker) -> VariableTracker:
        found = self.obj.dict_read(tx, key.as_python_constant())
        if found is None:
            raise UserException(KeyError(key.as_python_constant()), tx.loc())
        return found

    def setitem(self, tx: Tracer, key: VariableTracker, value: VariableTracker) -> None:
        name = key.as_python_constant()
        if self.obj.is_fresh:
            self.obj.fields[name] = value
        else:
            tx.ctx.side_effects.store_attr(self.obj, name, value)

    def contains(self, tx: Tracer, item: VariableTracker) -> bool:
        return self.obj.dict_read(tx, item.as_python_constant()) is not None

    def call_method(self, tx: Tracer, name: str, args: list[VariableTracker],
                    kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name == "get" and not kwargs and 1 <= len(args) <= 2:
            found = self.obj.dict_read(tx, args[0].as_python_constant())
            return found if found is not None else args[1] if len(args) > 1 else ConstantVariable(None)
        if name in ("__getitem__", "__contains__", "__setitem__"):
            if name == "__setitem__":
                self.setitem(tx, args[0], args[1])
                return ConstantVariable(None)
            return self.getitem(tx, args[0]) if name == "__getitem__" else ConstantVariable(self.contains(tx, args[0]))
        if name in ("keys", "values", "items", "copy") and not args and not kwargs:
            view = self.as_dict(tx)   # read now: a later store is not seen (a live view would be)
            return view if name == "copy" else view.call_method(tx, name, [], {})
        if name == "__len__":
            return self.length(tx)
        raise Unsupported("instance_dict", f"pdyn cannot trace {self.obj.cls.__name__}.__dict__.{name}()",
                          loc=tx.loc())

    def names(self, tx: Tracer) -> list[str]:
        """The object's own attribute names in `__dict__` order: an input object's keys guarded (as
        stored before the trace), then the trace's own stores and deletions."""
        obj = self.obj
        if obj.is_fresh:
            return [k for k, v in obj.fields.items() if not is_deleted(v)]
        instance_dict = object.__getattribute__(obj.value, "__dict__")
        tx.ctx.add_guard(DictKeysGuard(AttrSource(obj.source, "__dict__"), type(instance_dict),  # type: ignore[arg-type]
                                       tuple(instance_dict), loc=tx.loc()))
        names = list(instance_dict)
        for (owner, name), (_, value) in tx.ctx.side_effects.attrs.items():
            if owner != id(obj):
                continue
            if is_deleted(value):
                names = [n for n in names if n != name]
            elif name not in names:
                names.append(name)
        return names

    def iterate(self, tx: Tracer) -> list[VariableTracker]:
        return [ConstantVariable(n) for n in self.names(tx)]

    def length(self, tx: Tracer) -> VariableTracker:
        return ConstantVariable(len(self.names(tx)))

    def as_dict(self, tx: Tracer) -> DictVariable:
        """A snapshot of the attributes as a plain dict (what `dict(vars(obj))` makes)."""
        return DictVariable({n: self.getitem(tx, ConstantVariable(n)) for n in self.names(tx)})

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        return _BoundDictMethod(self, name)


class _BoundDictMethod(VariableTracker):
    def __init__(self, view: InstanceDictVariable, name: str):
        self.view = view
        self.name = name

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.view.call_method(tx, self.name, args, kwargs)
