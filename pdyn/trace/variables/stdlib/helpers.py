"""Rules for the standard library's iteration and reduction helpers over trackers: itertools,
functools.reduce, math.prod, dict.fromkeys, collections.OrderedDict, `copy.copy`/`copy.deepcopy`
(the copying itself is `objects/copying.py`), `delattr` and `id`. defaultdict and deque are
`containers/collections_types.py`, map/filter/starmap `iterators/lazy_iterators.py`, operator's
getters `operator_getters.py`. Like `zip`, the iterators here read finite inputs when made.
"""

from __future__ import annotations

import collections
import copy
import functools
import itertools
import math
import operator
from typing import TYPE_CHECKING, Any, Callable

from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.objects.attr_delete import delete_attr
from pdyn.trace.variables.containers.collections_types import dict_items
from pdyn.trace.variables.registry import rule
from pdyn.trace.variables.objects.copying import deep_copy, shallow_copy
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.containers.core import DictVariable, IteratorVariable, TupleVariable, python_value
from pdyn.trace.variables.iterators.live_iterators import make_iterator
from pdyn.trace.variables.iterators.itertools_live import ChainIterator, IsliceIterator, PairwiseIterator, ZipLongestIterator
from pdyn.trace.variables.semantics import is_same
from pdyn.trace.variables.torch.tensor import TensorVariable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

NONE = ConstantVariable(None)


class ObjectIdVariable(VariableTracker):
    """`id(obj)`: usable only to compare identities (`id(a) == id(b)`), decided as `a is b` is."""

    def __init__(self, obj: VariableTracker):
        self.obj = obj

    def python_type(self) -> type:
        return int

    def binary_op(self, tx: Tracer, fn: Callable[[Any, Any], Any], other: VariableTracker) -> VariableTracker:
        if fn in (operator.eq, operator.ne) and isinstance(other, ObjectIdVariable):
            same = is_same(tx, self.obj, other.obj)
            return ConstantVariable(same if fn is operator.eq else not same)
        raise Unsupported("id_value", "pdyn traces id() only to compare two ids", loc=tx.loc())


@rule(id)
def _id(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    return ObjectIdVariable(args[0])


@rule(itertools.chain)
def _chain(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    return ChainIterator(tx, list(args))


@rule(itertools.chain.from_iterable)
def _chain_from(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    return _chain(tx, tx.iterate(args[0]), {})


@rule(itertools.islice)
def _islice(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    bounds = [python_value(a, "islice()", tx.loc()) for a in args[1:]]
    try:
        window = slice(*bounds) if len(bounds) > 1 else slice(bounds[0])
        list(itertools.islice((), *bounds))  # the errors islice raises on bad bounds
    except (TypeError, ValueError, IndexError) as e:
        raise UserException(e, tx.loc()) from None
    # pulled one item at a time, only as far as the slice reaches, as islice does
    return IsliceIterator(make_iterator(tx, args[0]), window.start or 0, window.stop, window.step or 1)


@rule(itertools.zip_longest)
def _zip_longest(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    fill = kwargs.get("fillvalue", NONE)
    return ZipLongestIterator([make_iterator(tx, a) for a in args], fill)


@rule(itertools.product)
def _product(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    repeat = python_value(kwargs.get("repeat", ConstantVariable(1)), "product(repeat=)", tx.loc())
    pools = [tx.iterate(a) for a in args] * repeat
    return IteratorVariable([TupleVariable(list(row)) for row in itertools.product(*pools)])


@rule(itertools.pairwise)
def _pairwise(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    return PairwiseIterator(make_iterator(tx, args[0]))


@rule(itertools.repeat)
def _repeat(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    times = args[1] if len(args) > 1 else kwargs.get("times")
    if times is None:
        raise Unsupported("infinite_iterator", "pdyn traces itertools.repeat() with a count only", loc=tx.loc())
    return IteratorVariable([args[0]] * python_value(times, "repeat()", tx.loc()))


@rule(itertools.groupby)
def _groupby(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """Runs of equal keys, each a (key, iterator over the run) pair; keys compared with `==` as
    groupby does (a guarded comparison on sizes)."""
    items = tx.iterate(args[0] if args else kwargs["iterable"])
    key_fn = args[1] if len(args) > 1 else kwargs.get("key", NONE)
    plain = key_fn.is_python_constant() and key_fn.as_python_constant() is None
    groups: list[VariableTracker] = []
    current: list[VariableTracker] = []
    current_key: VariableTracker | None = None
    for item in items:
        key = item if plain else key_fn.call(tx, [item], {})
        if current_key is not None and tx.binary(operator.eq, current_key, key).truth(tx):
            current.append(item)
            continue
        if current_key is not None:
            groups.append(TupleVariable([current_key, IteratorVariable(current)]))
        current_key, current = key, [item]
    if current_key is not None:
        groups.append(TupleVariable([current_key, IteratorVariable(current)]))
    return IteratorVariable(groups)


def _fold_with(tx: Tracer, fn: VariableTracker | None, acc: VariableTracker, item: VariableTracker) -> VariableTracker:
    return tx.binary(operator.add, acc, item) if fn is None else fn.call(tx, [acc, item], {})


@rule(itertools.accumulate)
def _accumulate(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    items = tx.iterate(args[0])
    fn = args[1] if len(args) > 1 else kwargs.get("func")
    fn = None if fn is not None and fn.is_python_constant() and fn.as_python_constant() is None else fn
    initial = kwargs.get("initial", NONE)
    # computed now, not as the loop pulls: only where the order cannot matter (no tensors)
    if any(isinstance(i, TensorVariable) for i in [*items, initial]):
        raise Unsupported("accumulate", "pdyn traces itertools.accumulate() over sizes and constants only",
                          loc=tx.loc())
    out = [] if initial is NONE else [initial]
    for item in items:
        out.append(item if not out else _fold_with(tx, fn, out[-1], item))
    return IteratorVariable(out)


@rule(functools.reduce)
def _reduce(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    fn, iterable = args[0], args[1]
    items = tx.iterate(iterable)
    if len(args) > 2:
        items = [args[2], *items]
    if not items:
        raise UserException(TypeError("reduce() of empty iterable with no initial value"), tx.loc())
    acc = items[0]
    for item in items[1:]:
        acc = fn.call(tx, [acc, item], {})
    return acc


@rule(math.prod)
def _prod(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    total = kwargs.get("start", ConstantVariable(1))
    for item in tx.iterate(args[0]):  # symbolic where the sizes are: math.prod(x.shape)
        total = tx.binary(operator.mul, total, item)
    return total


@rule(dict.fromkeys)
def _fromkeys(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    value = args[1] if len(args) > 1 else NONE  # one object under every key, as in Python
    keys = [python_value(k, "a dict key", tx.loc()) for k in tx.iterate(args[0])]
    return DictVariable({k: value for k in keys})


@rule(collections.OrderedDict)
def _ordered_dict(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    return DictVariable(dict_items(tx, args, kwargs), dict_type=collections.OrderedDict)


@rule(copy.copy)
def _copy(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    if len(args) != 1 or kwargs:
        raise Unsupported("copy", "pdyn traces copy.copy(x) with one argument", loc=tx.loc())
    return shallow_copy(tx, args[0])


@rule(copy.deepcopy)
def _deepcopy(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    memo = args[1] if len(args) > 1 else kwargs.get("memo", NONE)
    if not 1 <= len(args) <= 2 or set(kwargs) - {"memo"} or not (memo.is_python_constant() and
                                                                 memo.as_python_constant() is None):
        raise Unsupported("deepcopy", "pdyn traces copy.deepcopy(x) without a memo", loc=tx.loc())
    return deep_copy(tx, args[0], {})


@rule(delattr)
def _delattr(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    if len(args) != 2 or kwargs:
        raise UserException(TypeError(f"delattr expected 2 arguments, got {len(args)}"), tx.loc())
    name = python_value(args[1], "delattr()", tx.loc())
    if type(name) is not str:
        raise UserException(TypeError(f"attribute name must be string, not '{type(name).__name__}'"), tx.loc())
    delete_attr(tx, args[0], name)
    return NONE
