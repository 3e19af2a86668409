"""Float arithmetic on symbolic sizes, computed exactly as Python computes it.

sympy would rewrite `s0 / 3` as `s0 * 3**-1` and reorder a sum of floats; either changes the last
bit of a float that Python computes in the written order, and sympy's Float drops the sign of -0.0.
So a float-valued operation on sizes is one opaque sympy function per Python operator: sympy never
rearranges it, `evaluate` and the generated guard and frame code compute it with the very Python
operator it stands for, and it folds to a number only where that number is exact in sympy.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable

import sympy


class PyFloatOp(sympy.Function):
    """A float-valued Python operation: `op` computes it, `template` prints it as Python source."""

    is_real = True
    op: Callable[..., Any] = staticmethod(operator.truediv)
    template = "({0} / {1})"

    @classmethod
    def eval(cls, *args: sympy.Basic) -> sympy.Basic | None:
        if not all(a.is_Number for a in args):
            return None
        try:
            value = cls.op(*(python_number(a) for a in args))
        except (ArithmeticError, ValueError):
            return None  # Python raises here: left for the run-time code to raise
        if isinstance(value, float) and math.isfinite(value) and (value != 0 or math.copysign(1, value) > 0):
            return sympy.Float(value)
        return None  # -0.0, inf, nan or a complex: no sympy number holds it exactly

    def _pythoncode(self, printer: Any) -> str:  # sympy's Python printers call this
        return self.template.format(*(f"({printer._print(a)})" for a in self.args))  # `1 / (s0 + 1)`


def number(value: int | float | bool) -> sympy.Basic:
    """A Python number as sympy holds it exactly: -0.0 keeps its sign (as `-(0.0)`); a bool is the
    int it is in arithmetic (sympy's `true` refuses `+`)."""
    if type(value) is bool:
        return sympy.Integer(int(value))
    if type(value) is float and value == 0 and math.copysign(1, value) < 0:
        return FloatNeg(sympy.Float(0.0))
    return sympy.sympify(value)


def python_number(value: sympy.Basic) -> int | float:
    return int(value) if value.is_Integer else float(value)


def _op(name: str, fn: Callable[..., Any], template: str) -> type[PyFloatOp]:
    return type(name, (PyFloatOp,), {"op": staticmethod(fn), "template": template})


TrueDiv = _op("TrueDiv", operator.truediv, "({0} / {1})")
FloatAdd = _op("FloatAdd", operator.add, "({0} + {1})")
FloatSub = _op("FloatSub", operator.sub, "({0} - {1})")
FloatMul = _op("FloatMul", operator.mul, "({0} * {1})")
FloatFloorDiv = _op("FloatFloorDiv", operator.floordiv, "({0} // {1})")
FloatMod = _op("FloatMod", operator.mod, "({0} % {1})")
FloatPow = _op("FloatPow", operator.pow, "({0} ** {1})")
FloatNeg = _op("FloatNeg", operator.neg, "(-{0})")
FloatAbs = _op("FloatAbs", abs, "abs({0})")
ToFloat = _op("ToFloat", float, "float({0})")
Sqrt = _op("Sqrt", math.sqrt, "math.sqrt({0})")

BINARY = {operator.truediv: TrueDiv, operator.add: FloatAdd, operator.sub: FloatSub, operator.mul: FloatMul,
          operator.floordiv: FloatFloorDiv, operator.mod: FloatMod, operator.pow: FloatPow}
UNARY = {operator.neg: FloatNeg, abs: FloatAbs, float: ToFloat, math.sqrt: Sqrt}
OPS: tuple[type[PyFloatOp], ...] = (*BINARY.values(), *UNARY.values())


class TruncToInt(sympy.Function):
    """`int(f)` of a float: rounds toward zero (sympy's floor would round -2.5 to -3)."""

    is_integer = True

    @classmethod
    def eval(cls, a: sympy.Basic) -> sympy.Basic | None:
        return sympy.Integer(int(python_number(a))) if a.is_Number and math.isfinite(python_number(a)) else None
