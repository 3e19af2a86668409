"""Rules for dict's and OrderedDict's own methods called on a dict tracker: as a user dict class
finds them in its MRO (`self.keys()`, `len(self)`, `self[k]` where the class leaves them alone),
or as its Python methods call them explicitly (`dict.__setitem__(self, k, v)`,
`super().__setitem__(k, v)`, `OrderedDict.__init__(self, ...)`). Also `dataclasses.fields`.
"""

from __future__ import annotations

import collections
import dataclasses
from typing import TYPE_CHECKING, Any

from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.registry import rule
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.containers.core import DictVariable, IteratorVariable, TupleVariable
from pdyn.trace.variables.iterators.live_iterators import make_iterator
from pdyn.trace.variables.objects.user_dicts import UserDictVariable
from pdyn.trace.variables.objects.user_objects import UserFunctionVariable, class_attr, python_hook

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

Args = list[VariableTracker]
Kwargs = dict[str, VariableTracker]
ODict = collections.OrderedDict


def _entries(tx: Tracer, vt: VariableTracker, what: str, mutate: bool = False) -> DictVariable:
    """The dict contents of `vt`: a dict tracker itself, or a user dict's items (those of an input
    only to read: its mutations are not replayed)."""
    if isinstance(vt, UserDictVariable) and (vt.is_fresh or not mutate):
        return vt.entries
    if isinstance(vt, DictVariable) and not isinstance(vt, UserDictVariable):
        return vt
    raise Unsupported("dict_method", f"pdyn cannot trace {what} on {vt}", loc=tx.loc())


def _forward(name: str, mutate: bool) -> Any:
    def run(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
        if not args:
            raise UserException(TypeError(f"descriptor '{name}' of 'dict' object needs an argument"), tx.loc())
        return _entries(tx, args[0], f"dict.{name}()", mutate).call_method(tx, name, list(args[1:]), kwargs)
    return run


for _name in ("keys", "values", "items", "get", "__contains__"):
    rule(getattr(dict, _name), getattr(ODict, _name))(_forward(_name, False))
for _name in ("pop", "setdefault", "clear"):
    rule(getattr(dict, _name), getattr(ODict, _name))(_forward(_name, True))


@rule(dict.__getitem__)
def _getitem(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    """`dict.__getitem__`: a missing key goes to the class's `__missing__`, as dict's does."""
    obj, key = args
    entries = _entries(tx, obj, "dict.__getitem__()")
    if entries.contains(tx, key):
        return entries.getitem(tx, key)
    missing = python_hook(tx, obj.python_type(), "__missing__") if isinstance(obj, UserDictVariable) else None
    if missing is not None:
        return UserFunctionVariable(missing).call(tx, [obj, key], {})
    return entries.getitem(tx, key)  # raises the KeyError


@rule(dict.__setitem__, ODict.__setitem__)
def _setitem(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    obj, key, value = args
    _entries(tx, obj, "dict.__setitem__()", True).setitem(tx, key, value)
    return ConstantVariable(None)


@rule(dict.__delitem__, ODict.__delitem__)
def _delitem(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    obj, key = args
    _entries(tx, obj, "dict.__delitem__()", True).delitem(tx, key)
    return ConstantVariable(None)


@rule(dict.__len__)
def _len(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    return _entries(tx, args[0], "dict.__len__()").length(tx)


@rule(dict.__iter__, ODict.__iter__)
def _iter(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    return make_iterator(tx, _entries(tx, args[0], "dict.__iter__()"))


def _pairs(tx: Tracer, args: Args, kwargs: Kwargs) -> list[tuple[VariableTracker, VariableTracker]]:
    """The (key, value) pairs of `dict(*args, **kwargs)`'s arguments, in order."""
    if len(args) > 1:
        raise UserException(TypeError(f"update expected at most 1 argument, got {len(args)}"), tx.loc())
    pairs: list[tuple[VariableTracker, VariableTracker]] = []
    if args:
        src = args[0]
        if isinstance(src, (DictVariable, UserDictVariable)):
            entries = _entries(tx, src, "dict.update()")
            pairs += [(ConstantVariable(k), v) for k, v in entries.items.items()]
        else:
            for pair in tx.iterate(src):
                items = tx.iterate(pair)
                if len(items) != 2:
                    raise UserException(ValueError(f"dictionary update sequence element has length {len(items)}; "
                                                   "2 is required"), tx.loc())
                pairs.append((items[0], items[1]))
    pairs += [(ConstantVariable(k), v) for k, v in kwargs.items()]
    return pairs


@rule(dict.__init__, dict.update)
def _dict_update(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    """dict's own init and update store directly, past any Python `__setitem__`."""
    entries = _entries(tx, args[0], "dict.update()", True)
    for key, value in _pairs(tx, args[1:], kwargs):
        entries.setitem(tx, key, value)
    return ConstantVariable(None)


@rule(ODict.__init__, ODict.update)
def _odict_update(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    """OrderedDict's init and update (MutableMapping's) store with `self[k] = v`: a Python
    `__setitem__` of the subclass runs."""
    obj = args[0]
    _entries(tx, obj, "OrderedDict.update()", True)
    for key, value in _pairs(tx, args[1:], kwargs):
        obj.setitem(tx, key, value)
    return ConstantVariable(None)


@rule(dataclasses.fields)
def _fields(tx: Tracer, args: Args, kwargs: Kwargs) -> VariableTracker:
    """`fields(obj_or_class)`: the class's Field objects (read at trace time; the class's
    `__dataclass_fields__` is a class attribute, guarded as the others)."""
    (arg,) = args
    cls = arg.as_python_constant() if arg.is_python_constant() and isinstance(arg.as_python_constant(), type) \
        else arg.python_type()
    if isinstance(cls, type):
        class_attr(tx, cls, "__dataclass_fields__")
    try:
        found = dataclasses.fields(cls)
    except TypeError as e:
        raise UserException(e, tx.loc()) from None
    return TupleVariable([tx.wrap_constant(f) for f in found])
