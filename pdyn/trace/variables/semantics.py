"""Python semantics over trackers that handlers and builtin rules share: binary operators (which
tracker answers `a + b`), identity (`is`) and membership (`in`)."""

from __future__ import annotations

import operator
import types
from typing import TYPE_CHECKING, Any, Callable

import torch

from pdyn.base.errors import Unsupported
from pdyn.guards.guards import AliasGuard, IdGuard
from pdyn.ops import is_in_place_operator, plain_operator
from pdyn.trace.variables.base import VariableTracker, fold
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.functions.user_functions import UserFunctionVariable
from pdyn.trace.variables.containers.core import DictVariable, ListVariable, SequenceVariable, SizeVariable
from pdyn.trace.variables.containers.sets import SetVariable
from pdyn.trace.variables.values.symint import SymIntVariable, sym_binary
from pdyn.trace.variables.objects.user_objects import UserObjectVariable, pin_identity, user_binary
from pdyn.trace.variables.torch.numpy_arrays import NdarrayVariable, numpy_operator
from pdyn.trace.variables.torch.tensor import TensorVariable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

MUTABLE = (ListVariable, DictVariable, SetVariable)


def binary(tx: Tracer, fn: Callable[[Any, Any], Any], lhs: VariableTracker, rhs: VariableTracker) -> VariableTracker:
    if isinstance(lhs, NdarrayVariable) or isinstance(rhs, NdarrayVariable):
        return numpy_operator(tx, fn, [lhs, rhs])   # NumPy's operator, whichever side the array is on
    if isinstance(lhs, TensorVariable) or isinstance(rhs, TensorVariable):
        if isinstance(lhs, (ConstantVariable, SymIntVariable)):
            fn = plain_operator(fn)  # `n += t` on a number: Python falls back to `n + t`
        return tx.output.call("call_function", fn, [lhs, rhs], {}, loc=tx.loc())
    if fn in (operator.mul, operator.imul) and (_repeated(lhs, rhs) or _repeated(rhs, lhs)):
        seq, times = (lhs, rhs) if isinstance(lhs, SequenceVariable) else (rhs, lhs)
        count = ConstantVariable(times.value_read("the count of a list or tuple repetition", tx.loc()))
        return seq.binary_op(tx, fn if seq is lhs else operator.mul, count)
    if isinstance(lhs, SymIntVariable) or isinstance(rhs, SymIntVariable):
        return sym_binary(tx, fn, lhs, rhs)
    if fn in (operator.eq, operator.ne) and isinstance(lhs, SequenceVariable) and isinstance(rhs, SequenceVariable) \
            and any(isinstance(i, SymIntVariable) for i in [*lhs.items, *rhs.items]):
        return _sequence_equal(tx, fn, lhs, rhs)
    if fn in ORDERINGS and _comparable_sequences(lhs, rhs) and not (lhs.is_python_constant() and rhs.is_python_constant()):
        return _sequence_order(tx, fn, lhs, rhs)
    if is_in_place_operator(fn) and isinstance(lhs, MUTABLE):
        return lhs.binary_op(tx, fn, rhs)
    if isinstance(lhs, UserObjectVariable) or isinstance(rhs, UserObjectVariable):
        return user_binary(tx, fn, lhs, rhs)
    repeats = fn in (operator.add, operator.mul) and (isinstance(lhs, SequenceVariable) or isinstance(rhs, SequenceVariable))
    if lhs.is_python_constant() and rhs.is_python_constant() and not repeats:
        # NOTE: `[[]] * 3` repeats one inner list: folded, its three copies would be three trackers
        return fold(tx, fn, lhs.as_python_constant(), rhs.as_python_constant())
    if fn in (operator.add, operator.iadd) and isinstance(rhs, SizeVariable) and lhs.python_type() is tuple:
        return rhs.radd(tx, lhs)  # `(n,) + x.shape` is a Size
    if fn in (operator.mul, operator.imul) and isinstance(lhs, ConstantVariable) and isinstance(rhs, SequenceVariable):
        return rhs.binary_op(tx, operator.mul, lhs)  # `n * [x]` repeats the list, as `[x] * n` does
    return lhs.binary_op(tx, fn, rhs)


def _repeated(seq: VariableTracker, times: VariableTracker) -> bool:
    """`[x] * n` with a symbolic int `n`: the length is Python's to know, so `n` is a value read."""
    return isinstance(seq, SequenceVariable) and isinstance(times, SymIntVariable) and times.pytype is int


def _sequence_equal(tx: Tracer, fn: Callable[[Any, Any], Any], lhs: SequenceVariable,
                    rhs: SequenceVariable) -> VariableTracker:
    """`x.shape == (1, 2, 3)`: element by element, each a bool read (an equality pins its dim)."""
    equal = len(lhs.items) == len(rhs.items) and (
        lhs.python_type() is rhs.python_type() or {lhs.python_type(), rhs.python_type()} <= {tuple, torch.Size})
    for a, b in zip(lhs.items, rhs.items):
        if not equal:
            break
        equal = binary(tx, operator.eq, a, b).truth(tx)
    return ConstantVariable(equal if fn is operator.eq else not equal)


ORDERINGS = (operator.lt, operator.le, operator.gt, operator.ge)


def _comparable_sequences(lhs: VariableTracker, rhs: VariableTracker) -> bool:
    """Two lists, or two tuples (torch.Size is one), which Python orders item by item."""
    if not isinstance(lhs, SequenceVariable) or not isinstance(rhs, SequenceVariable):
        return False
    kinds = {lhs.python_type(), rhs.python_type()}
    return kinds == {list} or kinds <= {tuple, torch.Size}


def _sequence_order(tx: Tracer, fn: Callable[[Any, Any], Any], lhs: SequenceVariable,
                    rhs: SequenceVariable) -> VariableTracker:
    """`(n, "a") < (m, "b")`: Python's order of sequences: the first items that differ (identity,
    then `==`, each a bool read) decide by `fn`, else the lengths do."""
    for a, b in zip(lhs.items, rhs.items):
        if a is b or binary(tx, operator.eq, a, b).truth(tx):
            continue
        return binary(tx, fn, a, b)
    return ConstantVariable(fn(len(lhs.items), len(rhs.items)))


def identity(vt: VariableTracker) -> Any:
    """What `is` compares: the underlying object where pdyn knows it, else None."""
    if isinstance(vt, ConstantVariable):
        return ("const", vt.value) if vt.value is None or isinstance(vt.value, bool) or vt.value is ... else None
    if isinstance(vt, TensorVariable):
        return ("node", vt.node)
    value = getattr(vt, "value", None)
    return ("obj", id(value)) if value is not None else ("vt", id(vt))


def is_same(tx: Tracer, lhs: VariableTracker, rhs: VariableTracker) -> bool:
    if lhs is rhs:
        return True
    if isinstance(lhs, SymIntVariable) or isinstance(rhs, SymIntVariable):  # an int's identity is no size's
        try:
            if lhs.python_type() is not rhs.python_type():   # `n is None`: objects of two types
                return False
        except Unsupported:
            pass
        raise Unsupported("is", f"pdyn cannot decide `{lhs} is {rhs}` of a symbolic int at trace time", loc=tx.loc())
    a, b = identity(lhs), identity(rhs)
    for vt, other in ((lhs, rhs), (rhs, lhs)):   # a function guarded by its code, against another function
        if isinstance(vt, UserFunctionVariable) and _may_be_function(other):
            vt.pin_identity(tx)
    if a is not None and b is not None:
        pin_identity(tx, lhs, rhs, a == b)
        return a == b
    try:
        if lhs.python_type() is not rhs.python_type():
            return False
    except Unsupported:
        pass
    if lhs.is_python_constant() and rhs.is_python_constant():
        same = lhs.as_python_constant() is rhs.as_python_constant()
        _pin_constant_identity(tx, lhs, rhs, same)
        return same
    raise Unsupported("is", f"pdyn cannot decide `{lhs} is {rhs}` at trace time", loc=tx.loc())


def _pin_constant_identity(tx: Tracer, lhs: VariableTracker, rhs: VariableTracker, same: bool) -> None:
    """`a is b` of two equal-typed constants read from the frame: their EqualsGuards pin values, not
    objects (two equal strings or big ints may be one object or two), so identity is guarded too."""
    value = lhs.as_python_constant()
    if value is None or value is ... or isinstance(value, bool) or not same and value != rhs.as_python_constant():
        return  # a singleton, or unequal values: never one object
    sources = [getattr(vt, "source", None) for vt in (lhs, rhs)]
    if all(sources):
        tx.ctx.add_guard(AliasGuard(sources[0], other=sources[1], same=same, loc=tx.loc()))
    elif same and any(sources):  # NOTE: `arg is "lit"` found False is not guarded (no guard says "is not")
        sourced = lhs if sources[0] else rhs
        tx.ctx.add_guard(IdGuard(sourced.source, sourced.as_python_constant(), loc=tx.loc()))


def _may_be_function(vt: VariableTracker) -> bool:
    try:
        return vt.python_type() is types.FunctionType
    except Unsupported:
        return True


def contains(tx: Tracer, item: VariableTracker, container: VariableTracker) -> bool:
    """`item in container`: a symbolic item is a value read; the container's tracker decides."""
    if isinstance(item, SymIntVariable) and not isinstance(container, SequenceVariable):  # a sequence compares
        item = ConstantVariable(item.value_read("an `in` test", tx.loc()))
    return bool(container.contains(tx, item))
