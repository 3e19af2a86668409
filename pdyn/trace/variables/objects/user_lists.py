"""UserListVariable: an instance of a user subclass of list (transformers' `LogitsProcessorList`,
`StoppingCriteriaList`): its list contents are a ListVariable, its instance attributes are
`fields`, as a user object's. Its class's Python methods are inlined; list's own methods (found in
its MRO, or called as `list.append(self, x)`, `super().append(x)`) are the rules in `list_rules`.
Made in the trace, it is rebuilt after the graph with its items and its `__dict__`; read from the
frame, its length and type are guarded and its items are read past any Python `__getitem__`
(such an input's items are read-only in the trace: a store is a graph break).
"""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING, Any

from pdyn.guards.guards import UserListLenGuard
from pdyn.sources import Source
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.containers.core import ListVariable
from pdyn.trace.variables.objects.user_dicts import DictItemSource
from pdyn.trace.variables.objects.user_objects import UserObjectVariable, mro_lookup, run_init

if TYPE_CHECKING:
    from pdyn.trace.frame_codegen import FrameCodegen
    from pdyn.trace.translator import InstructionTranslator as Tracer


def is_user_list_class(cls: type) -> bool:
    """A Python subclass of list whose instances list's own `__new__` makes (its C layout)."""
    return isinstance(cls, type) and issubclass(cls, list) and cls is not list \
        and mro_lookup(cls, "__new__") is list.__new__ and all(
            klass.__flags__ & (1 << 9) or klass in (list, object, typing.Generic) for klass in cls.__mro__)


def rebuild_list(cls: type, items: list[Any], attrs: dict[str, Any]) -> Any:
    """A user list made in the trace, rebuilt after the graph: items stored past any Python
    `__init__`/`extend` (as the trace stored them), then its attributes past any `__setattr__`."""
    obj = list.__new__(cls)
    list.extend(obj, items)
    for name, value in attrs.items():
        object.__setattr__(obj, name, value)
    return obj


class UserListVariable(UserObjectVariable):
    """A user list subclass instance: `entries` holds its items (in order)."""

    def __init__(self, value: Any, source: Any, cls: type | None = None):
        super().__init__(value, source, cls)
        self.entries = ListVariable([])

    def reconstruct(self, codegen: FrameCodegen) -> str:
        if self.source is not None:
            return codegen.source_expr(self.source)
        items = ", ".join(codegen.reconstruct(v) for v in self.entries.items)
        return self.rebuilt(codegen, rebuild_list, f"[{items}]")

    def __repr__(self) -> str:
        return f"UserListVariable({self.cls.__qualname__}, {len(self.entries.items)} items)"


def construct_user_list(tx: Tracer, cls: type, args: list[VariableTracker],
                        kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`cls(*args, **kwargs)` for a user list class: list's `__new__` (empty), then its `__init__`
    (a Python one inlined, list's own a rule)."""
    return run_init(tx, UserListVariable.fresh(cls), args, kwargs)


def wrap_user_list(tx: Tracer, value: Any, source: Source) -> VariableTracker:
    """A user list read from the frame: its type and length guarded, its items read by source."""
    tx.ctx.add_guard(UserListLenGuard(source, type=type(value), length=list.__len__(value), loc=tx.loc()))
    vt = UserListVariable(value, source)
    vt.entries.items = [tx.wrap(list.__getitem__(value, i), DictItemSource(source, i, list))
                        for i in range(list.__len__(value))]
    return vt
