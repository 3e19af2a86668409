"""`inspect.signature(fn)` folded at trace time, and read-only mapping views.

Library code asks a function which parameters it takes (`"logits_to_keep" in
set(inspect.signature(self.forward).parameters)`). The answer depends only on the function object,
which the trace already holds (a function by identity, a method through its class attribute's
guard), so the rule asks Python at trace time and hands back a constant Signature; its
`parameters` is a MappingProxyVariable: a live, read-only view of a dict tracker, as
`types.MappingProxyType` is.
"""

from __future__ import annotations

import inspect
import types
from typing import TYPE_CHECKING, Any

from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.registry import rule
from pdyn.trace.variables.values.constant import ObjectConstantVariable
from pdyn.trace.variables.containers.core import ContainerMethodVariable, DictVariable, IteratorVariable
from pdyn.trace.variables.functions.user_functions import UserFunctionVariable, UserMethodVariable

if TYPE_CHECKING:
    from pdyn.trace.frame_codegen import FrameCodegen
    from pdyn.trace.translator import InstructionTranslator as Tracer

_READS = ("keys", "values", "items", "get", "copy", "__getitem__", "__contains__", "__len__", "__iter__")


class MappingProxyVariable(VariableTracker):
    """`types.MappingProxyType(mapping)`: reads go to the dict tracker (live), stores raise."""

    def __init__(self, mapping: DictVariable):
        self.mapping = mapping

    def python_type(self) -> type:
        return types.MappingProxyType

    def is_python_constant(self) -> bool:
        return self.mapping.is_python_constant()

    def as_python_constant(self) -> Any:
        return types.MappingProxyType(self.mapping.as_python_constant())

    def iterate(self, tx: Tracer) -> list[VariableTracker]:
        return self.mapping.iterate(tx)

    def length(self, tx: Tracer) -> VariableTracker:
        return self.mapping.length(tx)

    def truth(self, tx: Tracer) -> bool:
        return self.mapping.truth(tx)

    def contains(self, tx: Tracer, item: VariableTracker) -> bool:
        return self.mapping.contains(tx, item)

    def getitem(self, tx: Tracer, key: VariableTracker) -> VariableTracker:
        return self.mapping.getitem(tx, key)

    def setitem(self, tx: Tracer, key: VariableTracker, value: VariableTracker) -> None:
        raise UserException(TypeError("'mappingproxy' object does not support item assignment"), tx.loc(),
                            catchable=True)

    def delitem(self, tx: Tracer, key: VariableTracker) -> None:
        raise UserException(TypeError("'mappingproxy' object does not support item deletion"), tx.loc(),
                            catchable=True)

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        if name not in _READS:
            raise UserException(AttributeError(f"'mappingproxy' object has no attribute '{name}'"), tx.loc())
        return ContainerMethodVariable(self, name)

    def call_method(self, tx: Tracer, name: str, args: list[VariableTracker],
                    kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name == "__iter__":
            return IteratorVariable(self.mapping.iterate(tx))
        if name == "__len__":
            return self.mapping.length(tx)
        return self.mapping.call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen: FrameCodegen) -> str:
        return f"{codegen.constant(types.MappingProxyType, 'mappingproxy')}({codegen.reconstruct(self.mapping)})"

    def __repr__(self) -> str:
        return f"MappingProxyVariable({self.mapping!r})"


class SignatureVariable(ObjectConstantVariable):
    """An `inspect.Signature` computed at trace time; `parameters` is a read-only view of
    name -> Parameter (constants)."""

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        if name == "parameters":
            params = {k: tx.wrap_constant(p) for k, p in self.value.parameters.items()}
            return MappingProxyVariable(DictVariable(params))
        return super().getattr(tx, name)


class _Bound:
    """Stands for the instance a method is bound to: a signature never reads it."""


def _real_callable(vt: VariableTracker) -> Any:
    """The Python callable `vt` stands for, where the trace holds it (a function the trace
    guarded, a method of one, a constant), else None."""
    if isinstance(vt, UserFunctionVariable):
        return vt.value
    if isinstance(vt, UserMethodVariable):
        fn = _real_callable(vt.fn)
        return None if fn is None else types.MethodType(fn, _Bound())
    if isinstance(vt, ObjectConstantVariable) and callable(vt.value):
        return vt.value
    value = getattr(vt, "value", None)
    return value if getattr(vt, "source", None) is not None and callable(value) else None


@rule(inspect.signature)
def _signature(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    fn = _real_callable(args[0]) if len(args) == 1 else None
    if fn is None or not all(v.is_python_constant() for v in kwargs.values()):
        return UserFunctionVariable(inspect.signature).call(tx, args, kwargs)  # Python's own code, traced
    try:
        return SignatureVariable(inspect.signature(fn, **{k: v.as_python_constant() for k, v in kwargs.items()}))
    except (TypeError, ValueError) as e:
        raise UserException(e, tx.loc()) from None


@rule(types.MappingProxyType)
def _mapping_proxy(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    if len(args) == 1 and not kwargs and isinstance(args[0], DictVariable):
        return MappingProxyVariable(args[0])
    if len(args) == 1 and isinstance(args[0], MappingProxyVariable):
        return MappingProxyVariable(args[0].mapping)
    raise Unsupported("mappingproxy", f"pdyn cannot trace types.MappingProxyType of {args}", loc=tx.loc())
