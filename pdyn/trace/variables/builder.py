"""Wrapping Python values as trackers: `wrap` for values read from the frame (with a Source, and
the guards that pin what the trace assumed about them), `wrap_constant_result` for values made at
trace time (no source, no guard). Trackers reach both through the translator (`tx.wrap(value,
source)`, `tx.wrap_constant(value)`): this module sits above every tracker module it builds.
"""

from __future__ import annotations

import collections
import enum
import functools
import inspect
import os
import types
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import torch
from torch._library.custom_ops import CustomOpDef

from pdyn.base.errors import Unsupported
from pdyn.guards.guards import AliasGuard, DictKeysGuard, EqualsGuard, IdGuard, LenGuard, TypeGuard
from pdyn.guards.tensor_guards import TensorGuard
from pdyn.sources import AttrSource, ItemSource, Source
from pdyn.trace.context import TrackedObject
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.registry import load_every_rule, rule_of
from pdyn.trace.variables.builtins import BuiltinVariable, ClassVariable
from pdyn.trace.variables.values.constant import (CONSTANT_TYPES, ConstantVariable, ObjectConstantVariable, is_constant_value,
                                           is_identity_key)
from pdyn.trace.variables.contexts.amp_modes import AUTOCAST_TYPES, amp_object
from pdyn.trace.variables.contexts.amp_resume import ResumedExitVariable, is_resumed_exit
from pdyn.trace.variables.torch.autograd_function import (AutogradApplyVariable, AutogradFunctionClassVariable,
                                                    is_autograd_function, is_function_apply)
from pdyn.trace.variables.stdlib.cached_functions import CACHE_WRAPPER, LruCacheVariable
from pdyn.trace.variables.containers.collections_types import wrap_defaultdict, wrap_deque
from pdyn.trace.variables.values.numpy_values import is_numpy
from pdyn.trace.variables.torch.numpy_functions import numpy_made, wrap_numpy_value
from pdyn.trace.variables.stdlib.operator_getters import GETTER_TYPES, getter_of
from pdyn.trace.variables.contexts.context_managers import (ContextClassVariable, RealGeneratorHook, context_object,
                                                   is_context_class, is_context_object, is_real_generator_hook)
from pdyn.trace.variables.stdlib.environ import EnvironVariable
from pdyn.trace.variables.containers.core import DictVariable, ListVariable, SizeVariable, TupleVariable
from pdyn.trace.variables.containers.sets import SetVariable
from pdyn.trace.variables.functions.user_functions import PartialVariable, UserFunctionVariable, UserMethodVariable
from pdyn.trace.variables.objects.nn_module import NNModuleVariable
from pdyn.trace.variables.containers.input_sets import SetInputVariable
from pdyn.trace.variables.objects.user_dicts import is_user_dict_class, wrap_user_dict
from pdyn.trace.variables.objects.user_lists import is_user_list_class, wrap_user_list
from pdyn.trace.variables.objects.user_objects import UserObjectVariable
from pdyn.trace.variables.objects.user_tuples import TupleSubclassVariable
from pdyn.trace.variables.values.ranges import wrap_range
from pdyn.trace.variables.iterators.iterator_inputs import CARRIED_WRAPS, ITERATOR_TYPES, wrap_iterator
from pdyn.trace.variables.torch.tensor import TensorUnboundMethodVariable, is_tensor_method
from pdyn.trace.variables.torch.torch_functions import PythonModuleVariable, TorchFunctionVariable, is_torch_function, op_function

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)
CALLABLE_TYPES = (types.BuiltinFunctionType, types.MethodWrapperType, types.MethodDescriptorType,
                  types.WrapperDescriptorType, types.ClassMethodDescriptorType, types.BuiltinMethodType)


def wrap(tx: Tracer, value: Any, source: Source) -> VariableTracker:
    """The tracker for `value`, read from `source`, with its guards; one tracker per source."""
    memo = tx.ctx.wrapped
    if source not in memo:
        if type(value) in MUTABLE_CONTAINERS or type(value) is np.ndarray:   # an array: one graph input too
            memo[source] = one_per_object(tx, value, source, lambda: _wrap(tx, value, source))
        else:
            memo[source] = _wrap(tx, value, source)
    return memo[source]


def one_per_object(tx: Tracer, value: Any, source: Source, make: Callable[[], VariableTracker],
                   pinned: bool = False) -> VariableTracker:
    """One tracker per mutable object however it is reached (`self.config` and
    `self.layer[0].config`, a global and an argument), so a change made through one path shows
    through the others. A further path is guarded to be the same object; `pinned` objects are
    identity-guarded on every path already. Objects the trace changed are guarded distinct from the
    others of their type when the guards are built (`TraceContext.distinct_object_guards`)."""
    seen = tx.ctx.objects_by_id.get(id(value))
    if seen is not None and seen.value is value:
        if not pinned:
            _guard(tx, AliasGuard, source, seen.tracker.source, True)
        return seen.tracker
    vt = make()
    tx.ctx.objects_by_id[id(value)] = TrackedObject(value, vt, pinned)
    return vt


def _guard(tx: Tracer, guard_type: Callable[..., Any], source: Source, *args: Any) -> None:
    tx.ctx.add_guard(guard_type(source, *args, loc=tx.loc()))


def _wrap(tx: Tracer, value: Any, source: Source) -> VariableTracker:
    """Dispatch on the value's exact type, then on the first base class listed, else a user object."""
    kind = type(value)
    if kind is torch.jit.ScriptFunction and hasattr(value, "_torchdynamo_inline"):
        # torch.jit.script keeps the Python function it compiled for frontends to trace instead
        _guard(tx, IdGuard, source, value)
        return wrap(tx, value._torchdynamo_inline, AttrSource(source, "_torchdynamo_inline"))
    fn = WRAP_BY_TYPE.get(kind)
    if fn is None and is_numpy(value):
        fn = wrap_numpy_value
    if fn is None:
        fn = next((fn for base, fn in WRAP_BY_BASE if isinstance(value, base)), _wrap_object)
    return fn(tx, value, source)


def _wrap_tensor(tx: Tracer, value: torch.Tensor, source: Source) -> VariableTracker:
    kind = type(value)
    if kind not in TENSOR_TYPES:
        raise Unsupported("tensor_subclass", f"pdyn cannot trace tensor subclass {kind.__name__} ({source})",
                          loc=tx.loc())
    if value.is_nested:  # (a nested_tensor from torch's fast paths, crossing a break): FakeTensor has no sizes for it
        raise Unsupported("tensor_subclass", f"pdyn cannot trace a nested tensor ({source})", loc=tx.loc())
    vt = tx.output.add_input(value, source, tx.loc())
    # TENSOR_MATCH_DYNAMIC: static dims here; symbolic dims are bound and checked by the size guards
    sizes = tuple(int(e) if e.is_Integer else None for e in vt.sizes)
    static = all(s is not None for s in sizes)
    tx.ctx.add_guard(TensorGuard(source, kind, value.dtype, value.device, value.requires_grad, sizes,
                                    tuple(value.stride()) if static else None,
                                    None if static else value.is_contiguous(), value.is_conj(), value.is_neg(),
                                    loc=tx.loc()))
    vt._python_type = kind
    return vt


def _wrap_size(tx: Tracer, value: torch.Size, source: Source) -> VariableTracker:
    """A torch.Size is a tuple of sizes: each an int input, symbolic until Python reads it (a size
    that crossed a graph break stays a size)."""
    _guard(tx, LenGuard, source, torch.Size, len(value))
    return SizeVariable([_wrap_size_item(tx, v, ItemSource(source, i)) for i, v in enumerate(value)], source)


def _wrap_size_item(tx: Tracer, value: int, source: Source) -> VariableTracker:
    """A size of 1 is a symbol in [1, inf), as a tensor's dim first seen as 1 (ShapeEnv.create_symbol)."""
    if value != 1 or type(value) is not int or tx.ctx.plan.static_inputs:
        return wrap(tx, value, source)
    _guard(tx, TypeGuard, source, int)
    return tx.output.add_int_input(value, source, tx.loc())


def _wrap_int(tx: Tracer, value: int, source: Source) -> VariableTracker:
    if value in (0, 1) or tx.ctx.plan.static_inputs:
        return _wrap_constant(tx, value, source)
    _guard(tx, TypeGuard, source, int)  # an int is a size: symbolic until Python reads it
    return tx.output.add_int_input(value, source, tx.loc())


def _wrap_list_int(tx: Tracer, value: int, source: Source) -> VariableTracker:
    """An element of a list of ints (`lengths: list[int]`): a size symbol with its value as hint,
    0 and 1 included, so that each distinct list is no recompile (a 0/1 question is a guard)."""
    _guard(tx, TypeGuard, source, int)
    return tx.output.add_int_input(value, source, tx.loc(), size_like=True)


def _wrap_enum(tx: Tracer, value: enum.Enum, source: Source) -> VariableTracker:
    _guard(tx, IdGuard, source, value)  # a member decides control flow by identity: pin which one
    return ConstantVariable(value, source)


def _wrap_constant(tx: Tracer, value: Any, source: Source) -> VariableTracker:
    if not is_constant_value(value):  # a slice of non-constants
        return _wrap_object(tx, value, source)
    _guard(tx, EqualsGuard, source, value)
    return ConstantVariable(value, source)


def _wrap_sequence(tx: Tracer, value: tuple[Any, ...] | list[Any], source: Source) -> VariableTracker:
    kind = type(value)
    _guard(tx, LenGuard, source, kind, len(value))
    if kind is list and value and all(type(v) is int and v >= 0 for v in value) and not tx.ctx.plan.static_inputs:
        items = [_wrap_list_int(tx, v, ItemSource(source, i)) for i, v in enumerate(value)]
        return ListVariable(items, source)
    items = [wrap(tx, v, ItemSource(source, i)) for i, v in enumerate(value)]
    return TupleVariable(items, source) if kind is tuple else ListVariable(items, source)


def _wrap_dict(tx: Tracer, value: dict[Any, Any], source: Source) -> VariableTracker:
    if not all(is_constant_value(k) or is_identity_key(k) for k in value):
        raise Unsupported("dict_keys", f"pdyn needs constant keys or keys compared by identity in dict {source}",
                          loc=tx.loc())
    _guard(tx, DictKeysGuard, source, type(value), tuple(value))
    return DictVariable({k: wrap(tx, v, ItemSource(source, k)) for k, v in value.items()}, source, type(value))


def _wrap_module(tx: Tracer, value: torch.nn.Module, source: Source) -> VariableTracker:
    """A module is guarded by its class and by what the trace reads of it (attribute values, the
    member tables' keys, each parameter's and buffer's metadata: they are graph inputs), not by its
    identity: one entry serves every layer of the same structure. An `is` that decides by identity
    pins it then (`pin_identity`); two paths to one module are guarded as aliases."""
    _guard(tx, TypeGuard, source, type(value))
    return one_per_object(tx, value, source, lambda: NNModuleVariable(value, source))


def _wrap_method(tx: Tracer, value: types.MethodType, source: Source) -> VariableTracker:
    if is_function_apply(value):  # `gelu = GeluFunction.apply`: which Function is pinned
        _guard(tx, IdGuard, AttrSource(source, "__self__"), value.__self__)
        _guard(tx, IdGuard, AttrSource(source, "__func__"), value.__func__)
        return AutogradApplyVariable(value.__self__, source)
    if is_resumed_exit(value):  # an autocast or inference_mode block a break's frame code entered
        return ResumedExitVariable.wrap(tx, value, source)
    if is_real_generator_hook(value):  # a @contextmanager block a break's frame code entered
        _guard(tx, IdGuard, AttrSource(source, "__func__"), value.__func__)
        _guard(tx, TypeGuard, AttrSource(source, "__self__"), type(value.__self__))
        return RealGeneratorHook(source)
    fn = wrap(tx, value.__func__, AttrSource(source, "__func__"))
    return UserMethodVariable(fn, wrap(tx, value.__self__, AttrSource(source, "__self__")))


def _wrap_by_identity(tx: Tracer, value: Any, source: Source) -> VariableTracker:
    """A module, function, class or builtin: pinned by identity, then what it is made at trace time."""
    _guard(tx, IdGuard, source, value)
    vt = wrap_constant_result(value)
    vt.source = source
    return vt


def _wrap_function(tx: Tracer, value: types.FunctionType, source: Source) -> VariableTracker:
    """A function made per call (a lambda, a nested def) is guarded by what Python's behaviour
    depends on, not its identity (a new object each call would recompile each call): its code and
    globals by identity, the shape of its defaults; the defaults' and closure cells' values are
    read, and guarded, through their sources when a call binds them (`identity_guard` pins the
    object itself where `is` decides by it). Any other function is pinned by identity (its code, once
    it is called: `UserFunctionVariable.guard_code`)."""
    vt = wrap_constant_result(value)
    code = value.__code__
    if type(vt) is not UserFunctionVariable or not (code.co_flags & inspect.CO_NESTED or code.co_name == "<lambda>"):
        return _wrap_by_identity(tx, value, source)
    _guard(tx, TypeGuard, source, types.FunctionType)
    _guard(tx, IdGuard, AttrSource(source, "__code__"), code)
    _guard(tx, IdGuard, AttrSource(source, "__globals__"), value.__globals__)
    defaults, kwdefaults = AttrSource(source, "__defaults__"), AttrSource(source, "__kwdefaults__")
    if value.__defaults__ is None:
        _guard(tx, EqualsGuard, defaults, None)
    else:
        _guard(tx, LenGuard, defaults, tuple, len(value.__defaults__))
    if value.__kwdefaults__ is None:
        _guard(tx, EqualsGuard, kwdefaults, None)
    else:
        _guard(tx, DictKeysGuard, kwdefaults, dict, tuple(value.__kwdefaults__))
    vt.source = source
    vt.identity_guard = IdGuard(source, value, loc=tx.loc())
    return vt


def _wrap_partial(tx: Tracer, value: functools.partial[Any], source: Source) -> VariableTracker:
    _guard(tx, TypeGuard, source, functools.partial)
    return PartialVariable.from_input(tx, value, source)


def _wrap_environ(tx: Tracer, value: os._Environ[Any], source: Source) -> VariableTracker:
    _guard(tx, IdGuard, source, value)  # each read then guards the variable it read
    return EnvironVariable(value, source)


def _wrap_autocast(tx: Tracer, value: Any, source: Source) -> VariableTracker:
    """The autocast object a decorator's closure holds: its arguments, fixed when it was made."""
    _guard(tx, IdGuard, source, value)
    vt = amp_object(value)
    vt.source = source
    return vt


def _wrap_lru_cache(tx: Tracer, value: Any, source: Source) -> VariableTracker:
    _guard(tx, IdGuard, source, value)  # which cached function; its answers are guarded per call
    return LruCacheVariable(value, source)


def _wrap_getter(tx: Tracer, value: Any, source: Source) -> VariableTracker:
    _guard(tx, IdGuard, source, value)  # an operator getter is immutable: which one is all there is
    vt = getter_of(tx, value)
    vt.source = source
    return vt


def _wrap_op(tx: Tracer, value: Any, source: Source) -> VariableTracker:
    """An op packet or a custom op object read from the frame: which one is pinned by identity."""
    _guard(tx, IdGuard, source, value)
    vt = op_function(value)
    assert vt is not None
    vt.source = source
    return vt


def _refuse(tx: Tracer, value: Any, source: Source) -> VariableTracker:
    raise Unsupported("input_type", f"pdyn cannot guard a {type(value).__name__} input ({source}) yet",
                      loc=tx.loc())


def _wrap_tuple_subclass(tx: Tracer, value: tuple[Any, ...], source: Source) -> VariableTracker:
    """A named tuple of constants is a constant; any other tuple subclass is read item by item."""
    if is_constant_value(value):
        return _wrap_constant(tx, value, source)
    _guard(tx, LenGuard, source, type(value), len(value))
    items = [wrap(tx, v, ItemSource(source, i)) for i, v in enumerate(value)]
    return TupleSubclassVariable(items, source, type(value))


def _wrap_set(tx: Tracer, value: set[Any], source: Source) -> VariableTracker:
    _guard(tx, TypeGuard, source, type(value))
    return SetInputVariable(value, source)


def _wrap_object(tx: Tracer, value: Any, source: Source) -> VariableTracker:
    return one_per_object(tx, value, source, lambda: _wrap_new_object(tx, value, source))


def _wrap_new_object(tx: Tracer, value: Any, source: Source) -> VariableTracker:
    if is_user_dict_class(type(value)):
        return wrap_user_dict(tx, value, source)  # a ModelOutput: its items and its attributes
    if is_user_list_class(type(value)):
        return wrap_user_list(tx, value, source)
    _guard(tx, TypeGuard, source, type(value))
    return UserObjectVariable(value, source)


WrapFn = Callable[["Tracer", Any, Source], VariableTracker]
# NOTE: exact types first: `int` is a size but `bool` and an IntEnum member are not, and a
# torch.Size is a tuple whose guard is its value.
WRAP_BY_TYPE: dict[type, WrapFn] = {
    **{kind: _wrap_constant for kind in CONSTANT_TYPES},
    int: _wrap_int, range: wrap_range, **{kind: wrap_iterator for kind in ITERATOR_TYPES}, torch.Size: _wrap_size, tuple: _wrap_sequence, list: _wrap_sequence,
    dict: _wrap_dict, collections.OrderedDict: _wrap_dict, functools.partial: _wrap_partial,
    types.CodeType: _wrap_by_identity,   # immutable: which code object is all there is to know
    set: _wrap_set, frozenset: _wrap_set, os._Environ: _wrap_environ, **{kind: _wrap_autocast for kind in AUTOCAST_TYPES},
    collections.defaultdict: wrap_defaultdict, collections.deque: wrap_deque,
    **{kind: _wrap_getter for kind in GETTER_TYPES}, CACHE_WRAPPER: _wrap_lru_cache,
    **{kind: _refuse for kind in (torch.finfo, torch.iinfo)}, **CARRIED_WRAPS,
    torch._ops.OpOverloadPacket: _wrap_op, CustomOpDef: _wrap_op,
}
# containers whose contents a trace may change: one tracker per object (`one_per_object`)
MUTABLE_CONTAINERS = (list, dict, collections.OrderedDict, collections.defaultdict, collections.deque, set,
                      *ITERATOR_TYPES, *CARRIED_WRAPS)
# then the first base class that matches, in this order
WRAP_BY_BASE: list[tuple[type | tuple[type, ...], WrapFn]] = [
    (torch.Tensor, _wrap_tensor),
    (enum.Enum, _wrap_enum),
    (torch.nn.Module, _wrap_module),
    (types.MethodType, _wrap_method),
    (types.FunctionType, _wrap_function),
    ((types.ModuleType, type, *CALLABLE_TYPES), _wrap_by_identity),
    (tuple, _wrap_tuple_subclass),
]


def _has_rule(value: Any) -> bool:
    return isinstance(value, (types.FunctionType, *CALLABLE_TYPES)) and rule_of(value) is not None


def wrap_constant_result(value: Any) -> VariableTracker:
    """The tracker for a value made during the trace, which needs no guard."""
    kind = type(value)
    if kind is torch.jit.ScriptFunction and hasattr(value, "_torchdynamo_inline"):
        return wrap_constant_result(value._torchdynamo_inline)
    if kind is torch.Size:
        return SizeVariable([ConstantVariable(v) for v in value])
    if (is_constant_value(value) and kind not in (tuple, frozenset)) or kind is types.CodeType:
        return ConstantVariable(value)
    if kind is tuple:
        return TupleVariable([wrap_constant_result(v) for v in value])
    if kind is list:
        return ListVariable([wrap_constant_result(v) for v in value])
    if kind is dict:
        return DictVariable({k: wrap_constant_result(v) for k, v in value.items()})
    if kind in (set, frozenset):
        vt = SetVariable([wrap_constant_result(v) for v in value])
        return vt if kind is set else ConstantVariable(value)
    if is_numpy(value):
        return numpy_made(value)
    if isinstance(value, types.ModuleType):
        return PythonModuleVariable(value)
    if kind is os._Environ:
        return EnvironVariable(value)
    if _has_rule(value):  # object.__setattr__ is also Tensor's; collections.namedtuple is Python
        return BuiltinVariable(value)
    if is_tensor_method(value):
        return TensorUnboundMethodVariable(value)
    if (op := op_function(value)) is not None:
        return op
    if is_torch_function(value):
        return TorchFunctionVariable(value)
    if isinstance(value, types.FunctionType):
        return UserFunctionVariable(value)
    if isinstance(value, CALLABLE_TYPES):
        return BuiltinVariable(value)
    if is_context_class(value):
        return ContextClassVariable(value)
    if is_context_object(value):
        return context_object(value)
    if kind is CACHE_WRAPPER:
        return LruCacheVariable(value)
    if is_autograd_function(value):
        return AutogradFunctionClassVariable(value)
    if is_function_apply(value):
        return AutogradApplyVariable(value.__self__)
    if isinstance(value, type):
        return ClassVariable(value)
    if isinstance(value, (torch.Tensor, torch.nn.Module)):
        raise Unsupported("sourceless", f"pdyn cannot trace a {kind.__name__} it cannot read from the frame")
    return ObjectConstantVariable(value)


# NOTE: every rule module is loaded before the first wrap: a rule declared anywhere in
# pdyn.trace.variables is in the table, and a second rule for one callable raises here, at import.
load_every_rule()
