"""NNModuleVariable: an nn.Module read from the frame, identified by its Source.

Attribute reads follow nn.Module's lookup (parameters, buffers, submodules, instance dict, then
class attributes); calling it inlines its `forward`; ModuleList/Sequential/ModuleDict iterate
and index. Parameters and buffers become graph inputs read through their Sources.
"""

from __future__ import annotations

import inspect
import types
from typing import TYPE_CHECKING, Any, Callable

import torch

from pdyn.base.errors import Unsupported, UserException
from pdyn.base.untraced import untraced
from pdyn.guards.guards import DictKeysGuard, HasAttrGuard, IdGuard, KeyPresenceGuard, LenGuard
from pdyn.guards.module_guards import NoGlobalHooksGuard, NoHooksGuard
from pdyn.sources import AttrSource, ItemSource, ModuleMemberSource, Source
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.deleted import is_deleted
from pdyn.trace.variables.values.constant import ConstantVariable, is_constant_value
from pdyn.trace.variables.containers.core import DictVariable, IteratorVariable, ListVariable, TupleVariable
from pdyn.trace.variables.functions.user_functions import UserMethodVariable
from pdyn.trace.variables.objects.module_slices import slice_of
from pdyn.trace.variables.values.symint import SymIntVariable
from pdyn.trace.variables.torch.tensor import TensorVariable
from pdyn.trace.variables.objects.user_objects import MISSING, UserObjectVariable, class_attr, mro_lookup, pin_identity  # noqa: F401

if TYPE_CHECKING:
    from pdyn.trace.breaks.callees import BreakCallee
    from pdyn.trace.translator import InstructionTranslator as Tracer

SEQUENTIAL = (torch.nn.ModuleList, torch.nn.Sequential)
# nn.Module methods that list members (the table they read; None: the module tree itself).
MEMBER_METHODS = {"children": "_modules", "named_children": "_modules", "modules": None, "named_modules": None,
                  "parameters": "_parameters", "named_parameters": "_parameters", "buffers": "_buffers",
                  "named_buffers": "_buffers"}
DICT_METHODS = ("keys", "values", "items")  # of ModuleDict


def lookup_class_attr(tx: Tracer, owner: VariableTracker, cls: type, name: str) -> VariableTracker | None:
    """A class attribute seen through an instance: methods bind, properties run, constants wrap.
    Of a user's class the lookup is guarded (ClassAttrGuard: `Model.helper = other` recompiles);
    torch's own classes are not checked on each call."""
    # absent is MISSING: a class attribute set to None (nn.Module's `_compiled_call_impl`) is found
    attr = class_attr(tx, cls, name, MISSING) if not cls.__module__.startswith("torch.") \
        else mro_lookup(cls, name, MISSING)
    if attr is MISSING:
        return None
    if isinstance(attr, staticmethod):
        return tx.wrap_constant(attr.__func__)
    if isinstance(attr, classmethod):
        return UserMethodVariable(tx.wrap_constant(attr.__func__), tx.wrap_constant(cls))
    if isinstance(attr, property) and isinstance(attr.fget, types.FunctionType):
        return tx.wrap_constant(attr.fget).call(tx, [owner], {})
    if isinstance(attr, types.FunctionType):
        return UserMethodVariable(tx.wrap_constant(attr), owner)
    if owner.source is not None and not hasattr(attr, "__get__"):
        return tx.wrap(getattr(owner.value, name), AttrSource(owner.source, name))  # type: ignore[attr-defined]
    if owner.source is None and is_constant_value(attr):  # of a module the trace made, from torch.nn
        return tx.wrap_constant(attr)
    raise Unsupported("class_attr", f"pdyn cannot read {cls.__qualname__}.{name} ({type(attr).__name__})",
                      loc=tx.loc())


# What `_call_impl` reads to run forward hooks: guarded by keys where a module has forward hooks.
HOOK_TABLES = ("_forward_pre_hooks", "_forward_hooks", "_forward_pre_hooks_with_kwargs",
               "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_backward_hooks",
               "_backward_pre_hooks")


GLOBAL_HOOK_TABLES = ("_global_forward_pre_hooks", "_global_forward_hooks", "_global_forward_hooks_with_kwargs",
                      "_global_forward_hooks_always_called", "_global_backward_hooks", "_global_backward_pre_hooks")


def _changed_in_trace(tx: Tracer, table: Any) -> bool:
    """Whether the trace changed this real dict (a change replayed only after the graph)."""
    seen = tx.ctx.objects_by_id.get(id(table)) if table is not None else None
    return seen is not None and seen.value is table and id(seen.tracker) in tx.ctx.side_effects.containers


def _no_hook_changes_in_trace(tx: Tracer, m: torch.nn.Module) -> None:
    """The hooks a call runs are read from the real tables; a table the trace changed (a handle's
    `remove()`) would be read stale, so the call is a break."""
    hooks = torch.nn.modules.module
    tables = [getattr(m, t, None) for t in HOOK_TABLES] + [getattr(hooks, t, None) for t in GLOBAL_HOOK_TABLES]
    if any(_changed_in_trace(tx, table) for table in tables):
        raise Unsupported("module_hooks", f"pdyn cannot trace calling {type(m).__name__} after its hooks "
                          "changed in the same graph", loc=tx.loc())


def made_hooks(tx: Tracer, m: torch.nn.Module) -> list[Any]:
    """The hooks the trace registered on `m` and has not removed (module_hooks_made.py's MadeHook)."""
    return [h for h in tx.ctx.module_hooks.get(id(m), ()) if not h.removed]


def ordered_hooks(tx: Tracer, m: torch.nn.Module, table: str) -> list[tuple[Any, Any]]:
    """The hooks of `table` in the order `_call_impl` runs them: (real id, None) for a hook of the
    real table, (None, made) for one the trace registered (prepended ones first, the latest first)."""
    made = [h for h in made_hooks(tx, m) if h.table == table]
    front = [(None, h) for h in reversed([h for h in made if h.options.get("prepend")])]
    back = [(None, h) for h in made if not h.options.get("prepend")]
    return front + [(hook_id, None) for hook_id in getattr(m, table)] + back


def _untraced_hook(m: torch.nn.Module) -> str | None:
    """The library of a hook of `m` pdyn does not trace (FSDP2's), else None."""
    for table in HOOK_TABLES:
        for hook in (getattr(m, table, None) or {}).values():
            library = untraced(hook)
            if library is not None:
                return library
    return None


MEMBER_TABLES = ("_parameters", "_buffers", "_modules")


def _is_member_store(m: torch.nn.Module, name: str, value: VariableTracker) -> bool:
    if any(name in m.__dict__.get(t, ()) for t in MEMBER_TABLES):
        return True   # a member replaced or deleted
    try:
        return not is_deleted(value) and issubclass(value.python_type(), (torch.nn.Module, torch.nn.Parameter))
    except Unsupported:
        return False


def _no_member_changes_in_trace(tx: Tracer, vt: NNModuleVariable, stores: bool = True) -> None:
    """Members are read from the real tables; after the trace changed them (`add_module`,
    `ModuleList.append`, `register_buffer`, or with `stores` a submodule or buffer assigned, which a
    read by name finds), a read of the tables would be stale, so it is a break."""
    m = vt.value
    if any(_changed_in_trace(tx, m.__dict__.get(t)) for t in MEMBER_TABLES) or \
            stores and any(obj is vt and _is_member_store(m, name, value)
                for (_, name), (obj, value) in tx.ctx.side_effects.attrs.items()):
        raise Unsupported("module_members", f"pdyn cannot trace reading the members of {type(m).__name__} after "
                          "they changed in the same graph", loc=tx.loc())


def _args_and_kwargs(tx: Tracer, changed: VariableTracker) -> tuple[TupleVariable, DictVariable]:
    """What a forward pre-hook registered with_kwargs returned: (new args, new kwargs), else eager's error."""
    pair = tx.iterate(changed) if isinstance(changed, TupleVariable) else None
    if pair is None or len(pair) != 2:
        if not changed.is_python_constant():
            raise Unsupported("module_hooks", f"a forward pre-hook returned {changed}", loc=tx.loc())
        raise UserException(RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                         f"but got {changed.as_python_constant()}."), tx.loc())
    new_args, new_kwargs = pair
    if not isinstance(new_args, TupleVariable):
        new_args = TupleVariable(tx.iterate(new_args))
    if not isinstance(new_kwargs, DictVariable):
        raise Unsupported("module_hooks", f"pdyn cannot trace a pre-hook returning kwargs {new_kwargs}", loc=tx.loc())
    return new_args, new_kwargs


def _str_keyed(tx: Tracer, named: DictVariable) -> dict[str, VariableTracker]:
    if not all(type(k) is str for k in named.items):
        raise UserException(TypeError("keywords must be strings"), tx.loc())
    return dict(named.items)


def _is_none(vt: VariableTracker) -> bool:
    return vt.is_python_constant() and vt.as_python_constant() is None


def _model_constant(vt: VariableTracker) -> VariableTracker:
    """An int attribute of a module (a head count, a head size) is a constant of the model: pinned
    to its value as if Python had read it, until the recompile policy sees it change (then it is a
    size like any other). Left symbolic, it would put divisions by a symbol into every index."""
    if isinstance(vt, SymIntVariable) and vt.pytype is int:
        env = vt.env
        origins = [env.origins[sym][0] for sym in env.free(vt.expr)]
        if origins and all(env.policy.on_value_read(o) == "specialize" for o in origins):
            vt.value_read("an int attribute of a module (a model constant)")
    return vt


class NNModuleVariable(VariableTracker):
    """An nn.Module instance from the inputs, guarded by its class and what the trace reads of it
    (not by identity: one entry serves every layer of one structure; an `is` pins it)."""

    guarded_by_type = True

    def __init__(self, value: torch.nn.Module, source: Source):
        self.value = value
        self.source = source

    def callee_at_break(self, callee: BreakCallee, method_of: VariableTracker | None = None) -> str | None:
        return callee.module(self, self.value, method_of)

    @property
    def is_fresh(self) -> bool:
        """Made in the trace (no source): no input object, nothing to pin."""
        return self.source is None

    def python_type(self) -> type:
        return type(self.value)

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        stored = tx.ctx.side_effects.load_attr(self, name)
        if stored is not None and not is_deleted(stored):
            return stored
        m = self.value
        if name not in MEMBER_TABLES and name not in HOOK_TABLES:
            _no_member_changes_in_trace(tx, self, stores=False)
        if name in HOOK_TABLES and made_hooks(tx, m):   # the real table lacks the trace's hooks
            raise Unsupported("module_hooks", f"pdyn cannot read {type(m).__name__}.{name} after registering a "
                              "hook on it in the same graph", loc=tx.loc())
        for table in MEMBER_TABLES:
            members = m.__dict__.get(table, {})
            if name in members:
                return self._read(tx, members[name], lambda s: ModuleMemberSource(s, name, table))
        if name in m.__dict__ and stored is None:  # not deleted earlier in the trace
            return _model_constant(self._read(tx, m.__dict__[name], lambda s: AttrSource(s, name)))
        if name == "__class__":  # the module's class is guarded: a constant with it
            return tx.wrap_constant(type(m))
        found = self._member_method(name) or lookup_class_attr(tx, self, type(m), name)
        if found is not None and self.source is not None:  # an instance attribute set later shadows it
            tx.ctx.add_guard(KeyPresenceGuard(AttrSource(self.source, "__dict__"), key_name=name, present=False,
                                              loc=tx.loc()))
        if found is None:
            _no_custom_getattr(tx, type(m), torch.nn.Module.__getattr__)
            if self.source is not None:   # another module of the class may have it
                plain = type(m).__getattribute__ is object.__getattribute__   # (and Module's __getattr__)
                tx.ctx.add_guard(HasAttrGuard(self.source, name=name, present=False, loc=tx.loc(),
                                              module_class=type(m) if plain else None))
            raise UserException(AttributeError(f"'{type(m).__name__}' object has no attribute '{name}'"), tx.loc())
        return found

    def _read(self, tx: Tracer, value: Any, source: Callable[[Source], Source]) -> VariableTracker:
        """A member read through its source; of a module the trace made, a constant."""
        return tx.wrap_constant(value) if self.source is None else tx.wrap(value, source(self.source))

    def store_attr(self, tx: Tracer, name: str, value: VariableTracker) -> None:
        if name in ("_parameters", "_buffers", "_modules", "forward", "training") or \
                name in self.value._parameters or name in self.value._modules:
            raise Unsupported("module_setattr", f"pdyn cannot trace assigning {type(self.value).__name__}.{name}",
                              loc=tx.loc())
        if name in self.value._buffers and not isinstance(value, TensorVariable):
            raise Unsupported("module_setattr", f"pdyn cannot replace buffer {name!r} with a non-tensor", loc=tx.loc())
        if self.source is not None:   # what Module.__setattr__ does with the name depends on the tables
            for table in MEMBER_TABLES:
                tx.ctx.add_guard(KeyPresenceGuard(AttrSource(self.source, table), key_name=name,
                                                  present=name in self.value.__dict__[table], loc=tx.loc()))
        tx.ctx.side_effects.store_attr(self, name, value)

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        m = self.value
        override = mro_lookup(type(m), "__call__")
        if override is not torch.nn.Module.__call__:
            if isinstance(override, types.FunctionType):  # a Python `__call__` (transformers'
                class_attr(tx, type(m), "__call__")       # GradientCheckpointingLayer): inlined;
                return UserMethodVariable(tx.wrap_constant(override), self).call(tx, args, kwargs)
            raise Unsupported("module_call", f"{type(m).__name__} overrides __call__", loc=tx.loc())
        return self.call_as_module(tx, args, kwargs)

    def call_as_module(self, tx: Tracer, args: list[VariableTracker],
                       kwargs: dict[str, VariableTracker]) -> VariableTracker:
        """nn.Module's own `__call__`: no hooks (guarded), then forward. An overriding `__call__`
        reaches it through `super().__call__(...)`."""
        m = self.value
        _no_hook_changes_in_trace(tx, m)
        e = self._hooks_run_for_real(tx)
        if e is not None:
            forward = mro_lookup(type(m), "forward")
            if isinstance(forward, types.FunctionType):
                e.in_call = forward.__code__  # the frame code calls it through its hooks (ModuleCall)
            raise e
        tx.ctx.add_guard(NoGlobalHooksGuard(None, loc=tx.loc()))  # a hook registered later runs
        if m._forward_hooks or m._forward_pre_hooks or made_hooks(tx, m):
            return self._call_with_forward_hooks(tx, args, kwargs)
        if self.source is not None:  # a module the trace made has no hooks, and nothing else holds it
            tx.ctx.add_guard(NoHooksGuard(self.source, loc=tx.loc()))
        return self.call_method(tx, "forward", args, kwargs)

    def _hooks_run_for_real(self, tx: Tracer) -> Unsupported | None:
        """The break of a call whose hooks pdyn does not trace (the module runs with them, its
        forward optimized on its own), else None."""
        m, hooks = self.value, torch.nn.modules.module
        library = _untraced_hook(m)
        if library is not None:   # FSDP2's sharding hooks run as torch runs them (pdyn/base/untraced.py)
            return Unsupported("module_hooks", f"{type(m).__name__} has hooks of {library}, which pdyn does not "
                               "trace: the module runs with them, its forward optimized on its own", loc=tx.loc())
        if m._backward_hooks or m._backward_pre_hooks or hooks._global_forward_hooks or \
                hooks._global_forward_pre_hooks or hooks._global_backward_hooks or hooks._global_backward_pre_hooks \
                or (m._forward_hooks or m._forward_pre_hooks or made_hooks(tx, m)) and self.source is None:
            return Unsupported("module_hooks", f"pdyn cannot trace {type(m).__name__} with backward or global "
                               "module hooks yet: the module runs with them, its forward optimized on its own",
                               hint="remove the hook, or optimize the module's submodules separately", loc=tx.loc())
        return None

    def _call_with_forward_hooks(self, tx: Tracer, args: list[VariableTracker],
                                 kwargs: dict[str, VariableTracker]) -> VariableTracker:
        """Forward pre-hooks, forward, forward hooks, as nn.Module's `_call_impl` runs them; each
        hook table is guarded by its keys and each hook by identity."""
        m = self.value
        for table in HOOK_TABLES:
            found = getattr(m, table, None)
            if found is not None:
                tx.ctx.add_guard(DictKeysGuard(AttrSource(self.source, table), type(found), tuple(found), loc=tx.loc()))
        if not any(hook_id in m._forward_hooks_always_called for hook_id in m._forward_hooks):
            return self._run_forward_hooks(tx, args, kwargs)
        try:
            return self._run_forward_hooks(tx, args, kwargs)
        except UserException:  # eager runs the always_call hooks before raising: the call runs for real
            raise Unsupported("module_hooks", f"{type(m).__name__}'s call raised and it has always_call forward "
                              "hooks", loc=tx.loc()) from None

    def _run_forward_hooks(self, tx: Tracer, args: list[VariableTracker],
                           kwargs: dict[str, VariableTracker]) -> VariableTracker:
        m = self.value

        def hooks(table: str, kwargs_table: str) -> list[tuple[VariableTracker, bool]]:
            """(hook, registered with_kwargs) in the order they run: the real ones and the trace's."""
            return [(made.hook, made.with_kwargs) if made is not None else
                    (tx.wrap(getattr(m, table)[hook_id], ItemSource(AttrSource(self.source, table), hook_id)),
                     hook_id in getattr(m, kwargs_table)) for hook_id, made in ordered_hooks(tx, m, table)]

        inputs = TupleVariable(list(args))
        named = DictVariable(dict(kwargs))   # the one dict hooks registered with_kwargs get (and may change)
        for pre_hook, with_kwargs in hooks("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs"):
            if with_kwargs:
                changed = pre_hook.call(tx, [self, inputs, named], {})
                if not _is_none(changed):
                    inputs, named = _args_and_kwargs(tx, changed)
                continue
            changed = pre_hook.call(tx, [self, inputs], {})
            if not _is_none(changed):
                inputs = changed if isinstance(changed, TupleVariable) else TupleVariable([changed])
        out = self.call_method(tx, "forward", list(inputs.items), _str_keyed(tx, named))
        for hook, with_kwargs in hooks("_forward_hooks", "_forward_hooks_with_kwargs"):
            changed = hook.call(tx, [self, inputs, named, out] if with_kwargs else [self, inputs, out], {})
            if not _is_none(changed):
                out = changed
        return out

    def call_method(self, tx: Tracer, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name == "forward":
            fn = self.value.__dict__.get("forward")
            original = getattr(fn, "_pdyn_original", None)
            if original is not None:  # a submodule optimized on its own: inline its plain forward
                if self.source is not None:   # this very override (another module of the class has its own)
                    tx.ctx.add_guard(IdGuard(AttrSource(self.source, "forward"), fn, loc=tx.loc()))
                return UserMethodVariable(tx.wrap_constant(original), self).call(tx, args, kwargs)
        return self.getattr(tx, name).call(tx, args, kwargs)

    def _member_method(self, name: str) -> VariableTracker | None:
        """`m.parameters` and friends, when the class uses nn.Module's (or ModuleDict's) own."""
        owner = torch.nn.ModuleDict if name in DICT_METHODS else torch.nn.Module
        if name not in MEMBER_METHODS and name not in DICT_METHODS:
            return None
        if isinstance(self.value, owner) and mro_lookup(type(self.value), name) is owner.__dict__[name]:
            return ModuleMemberMethodVariable(self, name)
        return None

    def members(self, tx: Tracer, name: str, args: list[VariableTracker],
                kwargs: dict[str, VariableTracker]) -> VariableTracker:
        """The value of `m.<name>(*args, **kwargs)` for a member method: children, parameters, ..."""
        owner = torch.nn.ModuleDict if name in DICT_METHODS else torch.nn.Module
        try:
            bound = inspect.signature(getattr(owner, name)).bind(None, *args, **kwargs)
        except TypeError as e:
            raise UserException(e, tx.loc()) from None
        options = {k: v.as_python_constant() for k, v in bound.arguments.items() if k != "self"}
        if options.get("memo") is not None:
            raise Unsupported("module_method", f"pdyn cannot trace Module.{name}(memo=...)", loc=tx.loc())
        prefix, recurse = options.get("prefix", ""), options.get("recurse", True)
        remove_duplicate = options.get("remove_duplicate", True)
        if name in DICT_METHODS or name in ("children", "named_children"):
            found = [(k, v) for k, v in self._table(tx, self, "_modules", "") if v is not None]
            remove_duplicate = name in ("children", "named_children")
        elif name in ("modules", "named_modules"):
            found = [(p, vt) for p, vt in self._walk(tx, prefix)]
        else:
            table = MEMBER_METHODS[name]
            modules = self._walk(tx, prefix) if recurse else [(prefix, self)]
            found = [pair for p, vt in modules for pair in self._table(tx, vt, table, p)]
        found = _dedup(found, remove_duplicate)
        named = name.startswith("named") or name == "items"
        items = [TupleVariable([ConstantVariable(k), v]) if named else ConstantVariable(k) if name == "keys"
                 else v for k, v in found]
        return ListVariable(items) if name in DICT_METHODS else IteratorVariable(items)

    def _walk(self, tx: Tracer, prefix: str) -> list[tuple[str, NNModuleVariable]]:
        """(qualified name, module) for this module and every submodule, depth first, as
        `named_modules` lists them; the module tree's keys are guarded on the way."""
        out: list[tuple[str, NNModuleVariable]] = [(prefix, self)]
        for name, sub in self._table(tx, self, "_modules", prefix):
            if isinstance(sub, NNModuleVariable):
                out += sub._walk(tx, name)
        return out

    @staticmethod
    def _table(tx: Tracer, vt: NNModuleVariable, table: str, prefix: str) -> list[tuple[str, Any]]:
        """The entries of `vt.<table>` (a dict of members) as (qualified name, tracker), keys guarded."""
        _no_member_changes_in_trace(tx, vt)
        members = getattr(vt.value, table)
        if vt.source is not None:
            tx.ctx.add_guard(DictKeysGuard(AttrSource(vt.source, table), type(members), tuple(members),
                                           loc=tx.loc()))
        return [(f"{prefix}.{k}" if prefix else k,
                 None if v is None else vt._read(tx, v, lambda s: AttrSource(s, k)))
                for k, v in members.items() if v is not None or table == "_modules"]

    def _guard_length(self, tx: Tracer) -> int:
        _no_member_changes_in_trace(tx, self)
        if self.source is not None:
            tx.ctx.add_guard(LenGuard(self.source, type(self.value), len(self.value), loc=tx.loc()))  # type: ignore[arg-type]
        return len(self.value)  # type: ignore[arg-type]

    def length(self, tx: Tracer) -> VariableTracker:
        if not isinstance(self.value, (*SEQUENTIAL, torch.nn.ModuleDict, torch.nn.ParameterList)):
            raise UserException(TypeError(f"object of type '{type(self.value).__name__}' has no len()"))
        return ConstantVariable(self._guard_length(tx))

    def _item_source(self, index: int) -> Source:
        """The i-th submodule of a ModuleList/Sequential, read from `_modules` by its key."""
        if isinstance(self.value, SEQUENTIAL):
            return ModuleMemberSource(self.source, list(self.value._modules)[index], "_modules")
        return ItemSource(self.source, index)

    def iterate(self, tx: Tracer) -> list[VariableTracker]:
        if isinstance(self.value, (*SEQUENTIAL, torch.nn.ParameterList)):
            n = self._guard_length(tx)
            return [tx.wrap(self.value[i], self._item_source(i)) for i in range(n)]
        if isinstance(self.value, torch.nn.ModuleDict):
            self._guard_length(tx)
            return [ConstantVariable(k) for k in self.value.keys()]
        raise UserException(TypeError(f"'{type(self.value).__name__}' object is not iterable"))

    def getitem(self, tx: Tracer, key: VariableTracker) -> VariableTracker:
        _no_member_changes_in_trace(tx, self)
        index = key.as_python_constant()
        if isinstance(self.value, (*SEQUENTIAL, torch.nn.ParameterList)) and isinstance(index, int):
            n = self._guard_length(tx)
            if not -n <= index < n:
                raise UserException(IndexError(f"index {index} is out of range"))
            return tx.wrap(self.value[index], self._item_source(index % n))
        if isinstance(self.value, SEQUENTIAL) and isinstance(index, slice):  # a new container of the class
            return slice_of(self, self.value, index, self.iterate(tx))
        if isinstance(self.value, torch.nn.ModuleDict) and isinstance(index, str):
            if index not in self.value:
                raise UserException(KeyError(index))
            return tx.wrap(self.value[index], ModuleMemberSource(self.source, index, "_modules"))
        raise Unsupported("module_getitem", f"pdyn cannot index {type(self.value).__name__} with {index!r}",
                          loc=tx.loc())

    def contains(self, tx: Tracer, item: VariableTracker) -> bool:
        if isinstance(self.value, torch.nn.ModuleDict):
            _no_member_changes_in_trace(tx, self)
            key, table = item.as_python_constant(), self.value._modules
            if self.source is not None:   # the answer holds while the key stays (or stays away)
                source = AttrSource(self.source, "_modules")
                tx.ctx.add_guard(KeyPresenceGuard(source, key_name=key, present=key in table, loc=tx.loc())
                                 if type(key) is str else DictKeysGuard(source, type(table), tuple(table), loc=tx.loc()))
            return key in self.value
        raise Unsupported("contains", f"pdyn cannot trace `in` on {type(self.value).__name__}", loc=tx.loc())


class ModuleMemberMethodVariable(VariableTracker):
    """A bound member method of a module (`m.parameters`), run at trace time over its trackers."""

    def __init__(self, module: NNModuleVariable, name: str):
        self.module = module
        self.name = name

    def python_type(self) -> type:
        return types.MethodType

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.module.members(tx, self.name, args, kwargs)


def _dedup(found: list[tuple[str, Any]], remove_duplicate: bool) -> list[tuple[str, Any]]:
    """Drop None entries, and later entries of an object already listed, as nn.Module does."""
    seen: set[int] = set()
    out = []
    for key, vt in found:
        if vt is None:
            continue
        ident = id(getattr(vt, "value", None) if isinstance(vt, NNModuleVariable) else getattr(vt, "node", vt))
        if remove_duplicate and ident in seen:
            continue
        seen.add(ident)
        out.append((key, vt))
    return out


def _no_custom_getattr(tx: Tracer, cls: type, default: Any) -> None:
    """An attribute that normal lookup misses goes to `cls.__getattr__`, which pdyn does not run."""
    if mro_lookup(cls, "__getattr__") is not default:
        raise Unsupported("getattr_hook", f"{cls.__name__} defines __getattr__; pdyn cannot trace a lookup it "
                          "answers", loc=tx.loc())
