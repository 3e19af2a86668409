"""A `functools.lru_cache` / `functools.cache` function called in the trace.

With constant arguments the call is a read of the cache: it is made at trace time (a hit, or the
miss eager's first call would make) and its answer is a constant, guarded by calling the cached
function again before each run (CallResultGuard): eager calls it on every call too, so the cache is
filled and read as eager fills and reads it, and `cache_clear()` or an eviction shows as a changed
answer. With symbolic sizes among the arguments, `__wrapped__` is traced inline when it changes no
Python state (its answer is then the same function of the arguments the cache would give).
Tensor arguments are keys by identity, which the trace cannot keep: a graph break.
"""

from __future__ import annotations

import functools
import types
from typing import TYPE_CHECKING, Any

import torch

from pdyn.base.errors import Unsupported, UserException
from pdyn.guards.guards import CallResultGuard
from pdyn.sources import AttrSource, Source
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import is_constant_value
from pdyn.trace.variables.values.symint import SymIntVariable
from pdyn.trace.variables.torch.tensor import TensorVariable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

CACHE_WRAPPER = functools._lru_cache_wrapper
WRAPPER_ATTRS = frozenset({"__wrapped__", "__name__", "__qualname__", "__module__", "__doc__"})


def _immutable_result(value: Any) -> bool:
    """A cached answer the trace may treat as a constant: nothing it holds can change under it."""
    if is_constant_value(value) or isinstance(value, (type, types.FunctionType, types.ModuleType, torch.dtype,
                                                     torch.device)):
        return True
    return type(value).__module__ == "typing"  # typing.Optional[int] and the like


class LruCacheVariable(VariableTracker):
    """A function wrapped by `functools.lru_cache` (pinned by identity where it was read)."""

    def __init__(self, value: Any, source: Source | None = None):
        self.value = value
        self.source = source

    def python_type(self) -> type:
        return CACHE_WRAPPER

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return self.value

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        if name not in WRAPPER_ATTRS or not hasattr(self.value, name):
            raise Unsupported("getattr", f"pdyn cannot read {name!r} of an lru_cache function", loc=tx.loc())
        attr = getattr(self.value, name)
        if self.source is not None:
            return tx.wrap(attr, AttrSource(self.source, name))
        return tx.wrap_constant(attr)

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        values = [*args, *kwargs.values()]
        if any(isinstance(v, TensorVariable) for v in values):
            raise Unsupported("lru_cache", f"pdyn cannot trace {self._name()}() on a tensor: the cache keys it by "
                              "identity", loc=tx.loc())
        if all(v.is_python_constant() and not isinstance(v, SymIntVariable) for v in values):
            return self._read(tx, [a.as_python_constant() for a in args],
                              {k: v.as_python_constant() for k, v in kwargs.items()})
        return self._inline(tx, args, kwargs)

    def _name(self) -> str:
        return getattr(self.value, "__qualname__", None) or repr(self.value)

    def _read(self, tx: Tracer, args: list[Any], kwargs: dict[str, Any]) -> VariableTracker:
        try:
            result = self.value(*args, **kwargs)
        except TypeError as e:  # an unhashable argument, a wrong call: eager raises the same
            raise UserException(e, tx.loc()) from None
        except Exception as e:
            raise UserException(e, tx.loc()) from None
        if not _immutable_result(result):
            raise Unsupported("lru_cache", f"pdyn cannot trace {self._name()}(): its cached answer, a "
                              f"{type(result).__name__}, may change", loc=tx.loc())
        fn = functools.partial(self.value, **kwargs) if kwargs else self.value
        tx.ctx.add_guard(CallResultGuard(None, fn=fn, args=tuple(args), expected=result, loc=tx.loc()))
        return tx.wrap_constant(result)

    def _inline(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        wrapped = getattr(self.value, "__wrapped__", None)
        if not isinstance(wrapped, types.FunctionType):
            raise Unsupported("lru_cache", f"pdyn cannot trace {self._name()}(): it wraps no Python function",
                              loc=tx.loc())
        effects = tx.ctx.side_effects
        before = len(effects.order), len(effects.containers), len(effects.calls)
        result = tx.wrap_constant(wrapped).call(tx, args, kwargs)
        if (len(effects.order), len(effects.containers), len(effects.calls)) != before:
            raise Unsupported("lru_cache", f"pdyn cannot trace {self._name()}() on symbolic sizes: it changes "
                              "Python state, which a cache hit would not", loc=tx.loc())
        if isinstance(result, TensorVariable) or result.python_type() in (list, dict, set):
            raise Unsupported("lru_cache", f"pdyn cannot trace {self._name()}() on symbolic sizes: eager returns "
                              "the one cached object, which the trace would make anew", loc=tx.loc())
        return result

    def __repr__(self) -> str:
        return f"LruCacheVariable({self._name()})"
