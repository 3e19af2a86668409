"""`operator.itemgetter` / `attrgetter` / `methodcaller` objects, made in the trace or read from the
frame: a call reads the item, attribute or method it names."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

from pdyn.base.errors import UserException
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.registry import Rule, register
from pdyn.trace.variables.containers.core import TupleVariable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer



class OperatorGetterVariable(VariableTracker):
    """An itemgetter, attrgetter or methodcaller: `kind` and what it was made with."""

    def __init__(self, kind: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker]):
        self.kind = kind
        self.args = args
        self.kwargs = kwargs

    def python_type(self) -> type:
        return self.kind

    def is_python_constant(self) -> bool:
        return all(a.is_python_constant() for a in [*self.args, *self.kwargs.values()])

    def as_python_constant(self) -> Any:
        return self.kind(*(a.as_python_constant() for a in self.args),
                         **{k: v.as_python_constant() for k, v in self.kwargs.items()})

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if len(args) != 1 or kwargs:
            raise UserException(TypeError(f"{self.kind.__name__} expected 1 argument, got {len(args)}"), tx.loc())
        obj = args[0]
        if self.kind is operator.methodcaller:
            return obj.getattr(tx, self.args[0].as_python_constant()).call(tx, self.args[1:], self.kwargs)
        if self.kind is operator.itemgetter:
            found = [obj.getitem(tx, key) for key in self.args]
        else:
            found = [self._attr(tx, obj, name.as_python_constant()) for name in self.args]
        return found[0] if len(found) == 1 else TupleVariable(found)

    @staticmethod
    def _attr(tx: Tracer, obj: VariableTracker, dotted: str) -> VariableTracker:
        for name in dotted.split("."):
            obj = obj.getattr(tx, name)
        return obj

    def __repr__(self) -> str:
        return f"OperatorGetterVariable({self.kind.__name__}, {self.args})"


def _getter(kind: type) -> Rule:
    def build(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        try:  # the constructor's own checks (argument count, names that are strings)
            if kind is operator.methodcaller:
                kind(args[0].as_python_constant() if args else None)
            else:
                kind(*(a.as_python_constant() if a.is_python_constant() else 0 for a in args), **kwargs)
        except TypeError as e:
            raise UserException(e, tx.loc()) from None
        return OperatorGetterVariable(kind, list(args), dict(kwargs))

    return build


GETTER_TYPES = (operator.itemgetter, operator.attrgetter, operator.methodcaller)


def getter_of(tx: Tracer, value: Any) -> VariableTracker:
    """The tracker of a getter made before the trace (immutable: its identity is guarded by the
    caller), from what it pickles as."""
    maker, args = value.__reduce__()
    kwargs = dict(maker.keywords) if hasattr(maker, "keywords") else {}
    args = (*getattr(maker, "args", ()), *args)
    return OperatorGetterVariable(type(value), [tx.wrap_constant(a) for a in args],
                                  {k: tx.wrap_constant(v) for k, v in kwargs.items()})


for _kind in GETTER_TYPES:
    register(_kind, _getter(_kind))
