"""NNModuleVariable: an nn.Module read from the frame, identified by its Source.

Attribute reads follow nn.Module's lookup (parameters, buffers, submodules, instance dict, then
class attributes); calling it inlines its `forward`; ModuleList/Sequential/ModuleDict iterate
and index. Parameters and buffers become graph inputs read through their Sources.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

import torch

from pdyn.errors import Unsupported, UserException
from pdyn.guards import LenGuard, NoHooksGuard
from pdyn.sources import AttrSource, ItemSource, Source
from pdyn.variables.base import VariableTracker
from pdyn.variables.constant import ConstantVariable
from pdyn.variables.containers import ListVariable, TupleVariable

if TYPE_CHECKING:
    from pdyn.bytecode_tracer import InstructionTranslator as Tracer

SEQUENTIAL = (torch.nn.ModuleList, torch.nn.Sequential)


def lookup_class_attr(tx: Tracer, owner: VariableTracker, cls: type, name: str) -> VariableTracker | None:
    """A class attribute seen through an instance: methods bind, properties run, constants wrap."""
    from pdyn.variables.builder import wrap, wrap_constant_result
    from pdyn.variables.functions import UserMethodVariable

    attr = mro_lookup(cls, name)
    if attr is None:
        return None
    if isinstance(attr, staticmethod):
        return wrap_constant_result(attr.__func__)
    if isinstance(attr, classmethod):
        return UserMethodVariable(wrap_constant_result(attr.__func__), wrap_constant_result(cls))
    if isinstance(attr, property) and isinstance(attr.fget, types.FunctionType):
        return wrap_constant_result(attr.fget).call(tx, [owner], {})
    if isinstance(attr, types.FunctionType):
        return UserMethodVariable(wrap_constant_result(attr), owner)
    if owner.source is not None and not hasattr(attr, "__get__"):
        return wrap(tx, getattr(owner.value, name), AttrSource(owner.source, name))  # type: ignore[attr-defined]
    raise Unsupported("class_attr", f"pdyn cannot read {cls.__qualname__}.{name} ({type(attr).__name__})",
                      loc=tx.loc())


class NNModuleVariable(VariableTracker):
    """An nn.Module instance from the inputs (guarded by identity)."""

    def __init__(self, value: torch.nn.Module, source: Source):
        self.value = value
        self.source = source

    def python_type(self) -> type:
        return type(self.value)

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        from pdyn.variables.builder import wrap

        stored = tx.output.side_effects.load_attr(self, name)
        if stored is not None:
            return stored
        m = self.value
        src = AttrSource(self.source, name)
        for table in ("_parameters", "_buffers", "_modules"):
            members = m.__dict__.get(table, {})
            if name in members:
                return wrap(tx, members[name], src)
        if name in m.__dict__:
            return wrap(tx, m.__dict__[name], src)
        found = lookup_class_attr(tx, self, type(m), name)
        if found is None:
            raise UserException(AttributeError(f"'{type(m).__name__}' object has no attribute '{name}'"), tx.loc())
        return found

    def store_attr(self, tx: Tracer, name: str, value: VariableTracker) -> None:
        if name in ("_parameters", "_buffers", "_modules", "forward", "training") or \
                name in self.value._parameters or name in self.value._modules:
            raise Unsupported("module_setattr", f"pdyn cannot trace assigning {type(self.value).__name__}.{name}",
                              loc=tx.loc())
        from pdyn.variables.tensor import TensorVariable

        if name in self.value._buffers and not isinstance(value, TensorVariable):
            raise Unsupported("module_setattr", f"pdyn cannot replace buffer {name!r} with a non-tensor", loc=tx.loc())
        tx.output.side_effects.store_attr(self, name, value)

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        m = self.value
        hooks = torch.nn.modules.module
        if m._forward_hooks or m._forward_pre_hooks or hooks._global_forward_hooks or \
                hooks._global_forward_pre_hooks:
            raise Unsupported("module_hooks", f"pdyn cannot trace {type(m).__name__} with forward hooks yet",
                              loc=tx.loc())
        if type(m).__call__ is not torch.nn.Module.__call__:
            raise Unsupported("module_call", f"{type(m).__name__} overrides __call__", loc=tx.loc())
        tx.output.add_guard(NoHooksGuard(self.source, loc=tx.loc()))
        return self.call_method(tx, "forward", args, kwargs)

    def call_method(self, tx: Tracer, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        from pdyn.variables.builder import wrap_constant_result
        from pdyn.variables.functions import UserMethodVariable

        if name == "forward":
            fn = self.value.__dict__.get("forward")
            original = getattr(fn, "_pdyn_original", None)
            if original is not None:  # a submodule optimized on its own: inline its plain forward
                return UserMethodVariable(wrap_constant_result(original), self).call(tx, args, kwargs)
        if name in ("children", "parameters", "buffers", "named_children", "named_parameters",
                    "named_buffers", "keys", "values", "items", "modules"):
            return self._members(tx, name, args, kwargs)
        return self.getattr(tx, name).call(tx, args, kwargs)

    def _members(self, tx: Tracer, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        from pdyn.variables.builder import wrap

        if args or kwargs or name == "modules":
            raise Unsupported("module_method", f"pdyn cannot trace Module.{name}() with arguments", loc=tx.loc())
        table = {"children": "_modules", "named_children": "_modules", "keys": "_modules", "values": "_modules",
                 "items": "_modules", "parameters": "_parameters", "named_parameters": "_parameters",
                 "buffers": "_buffers", "named_buffers": "_buffers"}[name]
        if name in ("parameters", "named_parameters", "buffers", "named_buffers") and self.value._modules:
            raise Unsupported("module_method", f"pdyn traces Module.{name}() only on leaf modules", loc=tx.loc())
        members = getattr(self.value, table)
        tx.output.add_guard(LenGuard(AttrSource(self.source, table), type(members), len(members), loc=tx.loc()))
        out: list[VariableTracker] = []
        for key, value in members.items():
            if value is None:
                continue
            vt = wrap(tx, value, AttrSource(self.source, key))
            out.append(TupleVariable([ConstantVariable(key), vt]) if name.startswith("named") or name == "items"
                       else ConstantVariable(key) if name == "keys" else vt)
        return ListVariable(out)

    def _guard_length(self, tx: Tracer) -> int:
        tx.output.add_guard(LenGuard(self.source, type(self.value), len(self.value), loc=tx.loc()))  # type: ignore[arg-type]
        return len(self.value)  # type: ignore[arg-type]

    def length(self, tx: Tracer) -> int:
        if not isinstance(self.value, (*SEQUENTIAL, torch.nn.ModuleDict, torch.nn.ParameterList)):
            raise UserException(TypeError(f"object of type '{type(self.value).__name__}' has no len()"))
        return self._guard_length(tx)

    def iterate(self, tx: Tracer) -> list[VariableTracker]:
        from pdyn.variables.builder import wrap

        if isinstance(self.value, (*SEQUENTIAL, torch.nn.ParameterList)):
            n = self._guard_length(tx)
            return [wrap(tx, self.value[i], ItemSource(self.source, i)) for i in range(n)]
        if isinstance(self.value, torch.nn.ModuleDict):
            self._guard_length(tx)
            return [ConstantVariable(k) for k in self.value.keys()]
        raise UserException(TypeError(f"'{type(self.value).__name__}' object is not iterable"))

    def getitem(self, tx: Tracer, key: VariableTracker) -> VariableTracker:
        from pdyn.variables.builder import wrap

        index = key.as_python_constant()
        if isinstance(self.value, (*SEQUENTIAL, torch.nn.ParameterList)) and isinstance(index, int):
            n = self._guard_length(tx)
            if not -n <= index < n:
                raise UserException(IndexError(f"index {index} is out of range"))
            return wrap(tx, self.value[index], ItemSource(self.source, index % n))
        if isinstance(self.value, SEQUENTIAL) and isinstance(index, slice):
            return ListVariable(self.iterate(tx)[index])
        if isinstance(self.value, torch.nn.ModuleDict) and isinstance(index, str):
            if index not in self.value:
                raise UserException(KeyError(index))
            return wrap(tx, self.value[index], ItemSource(self.source, index))
        raise Unsupported("module_getitem", f"pdyn cannot index {type(self.value).__name__} with {index!r}",
                          loc=tx.loc())

    def contains(self, tx: Tracer, item: VariableTracker) -> bool:
        if isinstance(self.value, torch.nn.ModuleDict):
            return item.as_python_constant() in self.value
        raise Unsupported("contains", f"pdyn cannot trace `in` on {type(self.value).__name__}", loc=tx.loc())


class UserObjectVariable(VariableTracker):
    """Any other object from the inputs (a config, a dataclass): guarded by type; its attributes
    are read through their own sources and guarded as they are read."""

    def __init__(self, value: Any, source: Source):
        self.value = value
        self.source = source

    def python_type(self) -> type:
        return type(self.value)

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        from pdyn.variables.builder import wrap

        stored = tx.output.side_effects.load_attr(self, name)
        if stored is not None:
            return stored
        if type(self.value).__getattribute__ is not object.__getattribute__:
            raise Unsupported("getattribute", f"{type(self.value).__name__} customizes attribute access",
                              loc=tx.loc())
        instance_dict = getattr(self.value, "__dict__", {})
        if name in instance_dict and not _is_data_descriptor(type(self.value), name):
            return wrap(tx, instance_dict[name], AttrSource(self.source, name))
        found = lookup_class_attr(tx, self, type(self.value), name)
        if found is None:
            raise UserException(AttributeError(f"'{type(self.value).__name__}' object has no attribute '{name}'"),
                                tx.loc())
        return found

    def store_attr(self, tx: Tracer, name: str, value: VariableTracker) -> None:
        if type(self.value).__setattr__ is not object.__setattr__ or _is_data_descriptor(type(self.value), name):
            raise Unsupported("setattr", f"{type(self.value).__name__} customizes attribute assignment", loc=tx.loc())
        tx.output.side_effects.store_attr(self, name, value)

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        call = lookup_class_attr(tx, self, type(self.value), "__call__")
        if call is None:
            raise UserException(TypeError(f"'{type(self.value).__name__}' object is not callable"), tx.loc())
        return call.call(tx, args, kwargs)


def mro_lookup(cls: type, name: str) -> Any:
    """`name` as instances of `cls` find it in their class (not the metaclass), or None."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


def _is_data_descriptor(cls: type, name: str) -> bool:
    attr = mro_lookup(cls, name)
    return attr is not None and (hasattr(attr, "__set__") or hasattr(attr, "__delete__"))
