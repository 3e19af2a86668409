"""Rules for list's own methods called on a list tracker: as a user list class finds them in its
MRO (`self.append(x)`, `len(self)`, `for f in self`, where the class leaves them alone), or as a
program calls them explicitly (`list.append(self, x)`, `super().__init__(items)`).
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.registry import rule
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.containers.core import IteratorVariable, ListVariable
from pdyn.trace.variables.objects.user_lists import UserListVariable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

Args = list[VariableTracker]
Kwargs = dict[str, VariableTracker]


def _entries(tx: Tracer, vt: VariableTracker, what: str, mutate: bool = False) -> ListVariable:
    """The list contents of `vt`: a list tracker itself, or a user list's items (those of an input
    only to read: its mutations are not replayed)."""
    if isinstance(vt, UserListVariable) and (vt.is_fresh or not mutate):
        return vt.entries
    if isinstance(vt, ListVariable):
        return vt
    if isinstance(vt, UserListVariable):
        raise Unsupported("list_method", f"pdyn cannot trace {what} on a {vt.cls.__name__} read from the "
                          "frame (only lists made in the trace are changed in it)", loc=tx.loc())
    raise UserException(TypeError(f"descriptor '{what}' requires a 'list' object but received a "
                                  f"'{vt.python_type().__name__}'"), tx.loc())


def _receiver(tx: Tracer, args: Args, name: str) -> VariableTracker:
    if not args:
        raise UserException(TypeError(f"unbound method list.{name}() needs an argument"), tx.loc())
    return args[0]


def _forward(name: str, mutate: bool) -> object:
    def run(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
        entries = _entries(tx, _receiver(tx, args, name), name, mutate)
        return entries.call_method(tx, name, list(args[1:]), kwargs)
    return run


for _name in ("index", "count", "copy"):
    rule(getattr(list, _name))(_forward(_name, False))
for _name in ("append", "extend", "insert", "pop", "remove", "clear", "reverse", "sort"):
    rule(getattr(list, _name))(_forward(_name, True))


@rule(list.__len__)
def _len(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    return _entries(tx, _receiver(tx, args, "__len__"), "__len__").length(tx)


@rule(list.__iter__)
def _iter(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    return IteratorVariable(_entries(tx, _receiver(tx, args, "__iter__"), "__iter__"))


@rule(list.__reversed__)
def _reversed(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    return IteratorVariable(list(reversed(_entries(tx, _receiver(tx, args, "__reversed__"), "__reversed__").items)))


@rule(list.__getitem__)
def _getitem(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    obj, key = args
    return _entries(tx, obj, "__getitem__").getitem(tx, key)  # a slice is a plain list, as list's


@rule(list.__setitem__)
def _setitem(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    obj, key, value = args
    _entries(tx, obj, "__setitem__", True).setitem(tx, key, value)
    return ConstantVariable(None)


@rule(list.__delitem__)
def _delitem(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    obj, key = args
    _entries(tx, obj, "__delitem__", True).delitem(tx, key)
    return ConstantVariable(None)


@rule(list.__contains__)
def _contains(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    obj, item = args
    return ConstantVariable(_entries(tx, obj, "__contains__").contains(tx, item))


@rule(list.__init__)
def _init(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    """list's own init empties the list, then stores the iterable's items past any Python `extend`."""
    if kwargs or len(args) > 2:
        raise UserException(TypeError("list expected at most 1 argument"), tx.loc())
    entries = _entries(tx, _receiver(tx, args, "__init__"), "__init__", True)
    items = tx.iterate(args[1]) if len(args) == 2 else []
    entries.call_method(tx, "clear", [], {})
    entries.items.extend(items)
    return ConstantVariable(None)


def _items_of(tx: Tracer, other: VariableTracker) -> list[VariableTracker] | None:
    if isinstance(other, (ListVariable, UserListVariable)):
        return list(_entries(tx, other, "__add__").items)
    return None


@rule(list.__add__)
def _add(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    """`a + b` with a user list on either side: a plain list (list's `+` needs a list on the right)."""
    obj, other = args
    items = _items_of(tx, other)
    if items is None:
        raise UserException(TypeError(f'can only concatenate list (not "{other.python_type().__name__}") to list'),
                            tx.loc())
    return ListVariable(_entries(tx, obj, "__add__").items + items)


@rule(list.__iadd__)
def _iadd(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    obj, other = args
    _entries(tx, obj, "__iadd__", True).call_method(tx, "extend", [other], {})
    return obj


@rule(list.__mul__, list.__rmul__)
def _mul(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    obj, times = args
    return ListVariable(_entries(tx, obj, "__mul__").items).binary_op(tx, operator.mul, times)


def _comparison(equal: bool) -> object:
    def run(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
        obj, other = args
        items = _items_of(tx, other)
        if items is None:
            return ConstantVariable(NotImplemented)
        mine = _entries(tx, obj, "__eq__").items
        same = len(mine) == len(items) and all(a is b or tx.binary(operator.eq, a, b).truth(tx)
                                               for a, b in zip(mine, items))
        return ConstantVariable(same == equal)
    return run


rule(list.__eq__)(_comparison(True))
rule(list.__ne__)(_comparison(False))
