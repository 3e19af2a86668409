"""0-d integer tensors computed from Python ints (`torch.div(n, k, rounding_mode="floor")`, as
size code written for TorchScript does): the tensor is a graph node, as eager makes one, and its
value is kept as size arithmetic beside it, so `int()` of it is `n // k` (symbolic where `n` is),
not a value read. The value holds while the fake tensor's version counter says nothing wrote it
(an in-place op, through any view, bumps it); after a write, `int()` reads the tensor's data (an
unbacked symbol, as `item()`)."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Callable

import sympy
import torch

from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.values.symint import SymIntVariable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer
    from pdyn.trace.variables.torch.tensor import TensorVariable


def _trunc_div(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b > 0) else -quotient


def _python_int(vt: VariableTracker) -> bool:
    if isinstance(vt, SymIntVariable):
        return vt.pytype is int
    return vt.is_python_constant() and type(vt.as_python_constant()) is int


def _sign_known(tx: Tracer, vt: VariableTracker, relation: Callable[[Any, int], Any]) -> bool:
    """Whether `relation(vt, 0)` holds for every value the guards allow (nothing guarded)."""
    if not isinstance(vt, SymIntVariable):
        return bool(relation(vt.as_python_constant(), 0))
    return tx.ctx.shape_env.known(relation(vt.expr, sympy.Integer(0))) is True


def _division(tx: Tracer, a: VariableTracker, b: VariableTracker, mode: str | None) -> VariableTracker | None:
    """`a // b` rounded as `mode` says: floor is Python's `//`; trunc is `//` of the magnitudes with
    the quotient's sign, the operands' signs decided (and guarded) where the ranges leave them open."""
    if not _sign_known(tx, b, operator.ne) or mode not in ("floor", "trunc"):   # a zero divisor raises
        return None
    if mode == "floor" or _sign_known(tx, a, operator.ge) and _sign_known(tx, b, operator.gt):
        return tx.binary(operator.floordiv, a, b)
    if a.is_python_constant() and b.is_python_constant():
        return ConstantVariable(_trunc_div(a.as_python_constant(), b.as_python_constant()))
    sign_a = 1 if _nonnegative(tx, a) else -1
    sign_b = 1 if _nonnegative(tx, b) else -1
    magnitude = tx.binary(operator.floordiv, tx.binary(operator.mul, ConstantVariable(sign_a), a),
                          tx.binary(operator.mul, ConstantVariable(sign_b), b))
    return tx.binary(operator.mul, ConstantVariable(sign_a * sign_b), magnitude)


def _nonnegative(tx: Tracer, vt: VariableTracker) -> bool:
    if isinstance(vt, SymIntVariable):
        return tx.ctx.shape_env.evaluate_bool(sympy.Ge(vt.expr, 0), tx.loc(), "the sign of a truncating division")
    return vt.as_python_constant() >= 0


def _value_of(tx: Tracer, fn: Any, args: list[VariableTracker],
              kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
    """The Python int `fn(*args, **kwargs)`'s 0-d tensor holds, where the op is int arithmetic."""
    if len(args) != 2 or not all(_python_int(a) for a in args):
        return None
    a, b = args
    if fn is torch.div and set(kwargs) <= {"rounding_mode"}:
        mode = kwargs["rounding_mode"].as_python_constant() if kwargs else None
        return _division(tx, a, b, mode)
    if kwargs:
        return None
    # (torch.add, remainder, ... take no two numbers: eager raises before a value is asked)
    return _division(tx, a, b, "floor") if fn is torch.floor_divide else None


def note_int_value(tx: Tracer, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker],
                   result: TensorVariable) -> None:
    """Remember, on the 0-d int64 tensor `fn` made of Python ints, the int it holds."""
    if result.example.dim() != 0 or result.example.dtype != torch.int64:
        return
    value = _value_of(tx, fn, args, kwargs)
    if value is not None:
        result.int_value = (value, result.example._version)


def int_of(tx: Tracer, x: TensorVariable) -> VariableTracker | None:
    """`int(x)` / `operator.index(x)` of a 0-d integer tensor: the int it was computed as while
    nothing wrote it, else its data read in the graph (an unbacked symbol); None for other tensors."""
    example = x.example
    if example.dim() != 0 or example.dtype.is_floating_point or example.dtype.is_complex \
            or example.dtype == torch.bool:
        return None
    if x.int_value is not None and x.int_value[1] == example._version:
        return x.int_value[0]
    return tx.output.data_values(x, "item", tx.loc())
