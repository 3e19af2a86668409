"""EnvironVariable: `os.environ` (any `os._Environ`) read during a trace. Reads are answered at
trace time from the real environment, each answer guarded (EnvVarGuard per variable read,
EnvSnapshotGuard where the whole environment was listed), so changing a variable recompiles.
Writes (`os.environ[k] = v`, `setdefault`, `pop`) change the process: they break the graph.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from pdyn.base.errors import Unsupported, UserException
from pdyn.guards.env_guards import EnvSnapshotGuard, EnvVarGuard
from pdyn.sources import Source
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.containers.core import ContainerMethodVariable, DictVariable, IteratorVariable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

READS = frozenset({"get", "__getitem__", "__contains__", "keys", "values", "items", "copy", "__len__",
                   "__iter__"})
LISTINGS = frozenset({"keys", "values", "items"})


class EnvironVariable(VariableTracker):
    def __init__(self, value: os._Environ[Any], source: Source | None = None):
        self.value = value
        self.source = source

    def python_type(self) -> type:
        return type(self.value)

    def _lookup(self, tx: Tracer, key: VariableTracker) -> Any:
        """The variable's value now, None if unset, guarded to stay so."""
        if not key.is_python_constant():
            raise Unsupported("environ_key", f"pdyn reads os.environ with constant names only, not {key}",
                              loc=tx.loc())
        name = key.as_python_constant()
        try:
            value = self.value.get(name)
        except Exception as e:  # a name of the wrong type: the error os.environ raises
            raise UserException(e, tx.loc()) from None
        tx.ctx.add_guard(EnvVarGuard(None, environ=self.value, name=name, value=value, loc=tx.loc()))
        return value

    def _snapshot(self, tx: Tracer) -> DictVariable:
        """The whole environment as a dict of constants, guarded whole."""
        items = tuple(self.value.items())
        tx.ctx.add_guard(EnvSnapshotGuard(None, environ=self.value, items=items, loc=tx.loc()))
        return DictVariable({k: ConstantVariable(v) for k, v in items})

    def getitem(self, tx: Tracer, key: VariableTracker) -> VariableTracker:
        value = self._lookup(tx, key)
        if value is None:  # the guard decides that it is unset: a handler may catch it
            raise UserException(KeyError(key.as_python_constant()), tx.loc(), catchable=True)
        return ConstantVariable(value)

    def contains(self, tx: Tracer, item: VariableTracker) -> bool:
        return self._lookup(tx, item) is not None

    def length(self, tx: Tracer) -> VariableTracker:
        return ConstantVariable(len(self._snapshot(tx).items))

    def truth(self, tx: Tracer) -> bool:
        return bool(self._snapshot(tx).items)

    def iterate(self, tx: Tracer) -> list[VariableTracker]:
        return self._snapshot(tx).iterate(tx)

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        if name in READS:
            return ContainerMethodVariable(self, name)
        raise Unsupported("environ_write", f"pdyn does not trace os.environ.{name} (only reads of the "
                          "environment are traced)", loc=tx.loc())

    def call_method(self, tx: Tracer, name: str, args: list[VariableTracker],
                    kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name not in READS or kwargs:
            return super().call_method(tx, name, args, kwargs)
        if name == "get":
            if not 1 <= len(args) <= 2:
                raise UserException(TypeError(f"get expected 1 or 2 arguments, got {len(args)}"), tx.loc())
            value = self._lookup(tx, args[0])
            return ConstantVariable(value) if value is not None else (args[1] if len(args) > 1 else ConstantVariable(None))
        if name == "__getitem__":
            return self.getitem(tx, args[0])
        if name == "__contains__":
            return ConstantVariable(self.contains(tx, args[0]))
        if name == "__len__":
            return self.length(tx)
        if name == "__iter__":
            return IteratorVariable(self.iterate(tx))
        snapshot = self._snapshot(tx)
        return snapshot if name == "copy" else snapshot.call_method(tx, name, [], {})

    def __repr__(self) -> str:
        return "EnvironVariable(os.environ)"
