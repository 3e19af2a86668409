"""UserDictVariable: an instance of a user subclass of dict or OrderedDict made in the trace (a
transformers `ModelOutput`): its dict contents are a DictVariable, its instance attributes are
`fields`, as a user object's. Its class's Python methods are inlined; dict's own methods (found in
its MRO, or called as `dict.__setitem__(self, k, v)`, `super().__setitem__`) are the rules in
`dict_rules`. Rebuilt after the graph with both its items and its `__dict__`.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pdyn.guards.guards import TypeGuard, UserDictKeysGuard
from pdyn.sources import Const, Source, literal
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.containers.core import DictVariable
from pdyn.trace.variables.objects.user_objects import UserObjectVariable, mro_lookup, run_init

if TYPE_CHECKING:
    from pdyn.trace.frame_codegen import FrameCodegen
    from pdyn.trace.translator import InstructionTranslator as Tracer

# the builtin dict types whose subclasses pdyn builds (defaultdict's factory is not modelled)
DICT_BASES = (collections.OrderedDict, dict)


def dict_base(cls: type) -> type | None:
    """The builtin dict type `cls` stores its items as (OrderedDict or dict), or None."""
    for klass in cls.__mro__:
        if klass in DICT_BASES:
            return klass
        if klass.__flags__ & (1 << 9) == 0 and klass is not cls and issubclass(klass, dict):
            return None  # another builtin dict type (defaultdict, Counter's C parts)
    return None


def is_user_dict_class(cls: type) -> bool:
    """A Python subclass of dict or OrderedDict whose instances dict's own `__new__` makes."""
    return isinstance(cls, type) and issubclass(cls, dict) and cls not in DICT_BASES \
        and dict_base(cls) is not None and mro_lookup(cls, "__new__") is dict.__new__


def rebuild_dict(cls: type, items: dict[Any, Any], attrs: dict[str, Any]) -> Any:
    """A user dict made in the trace, rebuilt after the graph: items stored past any Python
    `__setitem__` (as the trace stored them), then its instance attributes past any `__setattr__`."""
    base = dict_base(cls)
    obj = base.__new__(cls)  # type: ignore[union-attr]
    for key, value in items.items():
        base.__setitem__(obj, key, value)  # type: ignore[union-attr]
    for name, value in attrs.items():
        object.__setattr__(obj, name, value)
    return obj


@dataclass(frozen=True)
class DictItemSource(Source):
    """An item of a user dict read with its builtin base's own `__getitem__`, past any Python one
    (`OrderedDict.__getitem__(L['out'], 'logits')`)."""

    base: Source
    key: object
    kind: type = dict

    def _code(self, const: Const, bound: Mapping[Source, str]) -> str:
        getitem = const(self.kind.__getitem__, f"{self.kind.__name__}_getitem")
        base, key = self.base.code(const, bound), literal(self.key, const)
        # shown to people (`expr()`, no named constants): the item as `[]` reads it
        return f"{getitem}({base}, {key})" if getitem.isidentifier() else f"{base}[{key}]"

    def read(self, L: Mapping[str, Any], G: Mapping[str, Any]) -> Any:
        return self.kind.__getitem__(self.base.read(L, G), self.key)

    def root(self) -> Source:
        return self.base.root()


class UserDictVariable(UserObjectVariable):
    """A user dict subclass instance: `entries` are its items (in order). Made in the trace, they
    are its own; read from the frame, each is read through a DictItemSource, and the keys are
    guarded (such an input's items are read-only in the trace: a store is a graph break)."""

    def __init__(self, value: Any, source: Any, cls: type | None = None):
        super().__init__(value, source, cls)
        self.entries = DictVariable({}, dict_type=dict_base(self.cls) or dict)

    def reconstruct(self, codegen: FrameCodegen) -> str:
        if self.source is not None:
            return codegen.source_expr(self.source)
        items = ", ".join(f"{codegen.constant(k)}: {codegen.reconstruct(v)}" for k, v in self.entries.items.items())
        return self.rebuilt(codegen, rebuild_dict, f"{{{items}}}")

    def __repr__(self) -> str:
        return f"UserDictVariable({self.cls.__qualname__}, {list(self.entries.items)})"


def construct_user_dict(tx: Tracer, cls: type, args: list[VariableTracker],
                        kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`cls(*args, **kwargs)` for a user dict class: dict's `__new__` (empty), then its `__init__`
    (a Python one inlined, dict's or OrderedDict's own a rule)."""
    return run_init(tx, UserDictVariable.fresh(cls), args, kwargs)


def wrap_user_dict(tx: Tracer, value: Any, source: Source) -> VariableTracker:
    """A user dict read from the frame: its type and keys guarded, its items read by source."""
    base = dict_base(type(value))
    keys = tuple(base.keys(value))  # type: ignore[union-attr]
    if not all(type(k) in (str, int) for k in keys):
        tx.ctx.add_guard(TypeGuard(source, type(value), loc=tx.loc()))
        return UserObjectVariable(value, source)
    tx.ctx.add_guard(UserDictKeysGuard(source, type=type(value), keys=keys, base=base, loc=tx.loc()))
    vt = UserDictVariable(value, source)
    vt.entries.items = {k: tx.wrap(base.__getitem__(value, k), DictItemSource(source, k, base))  # type: ignore[union-attr]
                        for k in keys}
    return vt
