"""Integer-exact sympy functions and what reads them: `FloorDiv`/`CeilDiv` (each rewrite they
apply is a step that `pdyn.debug.bisect` can undo), `evaluate` on concrete sizes, `substitute`, and the
Python printer of guards. The ShapeEnv's reasoning lives in shape_env.py."""

from __future__ import annotations

import fractions
import math
import operator
from typing import Any, Callable

import sympy
import torch
from sympy.printing.pycode import PythonCodePrinter

from pdyn.shapes import steps, sym_float


class _RoundedDiv(sympy.Function):
    """Integer division kept as written. (sympy's own floor(a / b) can drop the floor when it
    wrongly takes a / b for an integer: floor(Max(0, 2*s0) / 6) comes back as Max(0, 2*s0) / 6.)"""

    is_integer = True
    rounding: Callable[[fractions.Fraction], int] = math.floor

    def __new__(cls, *args: Any, **options: Any) -> sympy.Basic:
        out = super().__new__(cls, *args, **options)
        if steps.ACTIVE is None or options.get("evaluate") is False:
            return out
        args = tuple(sympy.sympify(a) for a in args)
        if all(a.is_Number for a in args) or (type(out) is cls and out.args == args):
            return out   # a fold of numbers, or no rewrite
        kept = super().__new__(cls, *args, evaluate=False)
        return out if steps.take("rewrite", kept, out) else kept   # undone: kept as written

    @classmethod
    def eval(cls, a: sympy.Basic, b: sympy.Basic) -> sympy.Basic | None:
        if a.is_Number and b.is_Number:
            return sympy.Integer(cls.rounding(fractions.Fraction(str(a)) / fractions.Fraction(str(b))))
        return a if b == 1 else None


class FloorDiv(_RoundedDiv):
    """`a // b`."""

    rounding = staticmethod(math.floor)


class CeilDiv(_RoundedDiv):
    """`-(-a // b)`: the ceiling of a / b."""

    rounding = staticmethod(math.ceil)


def _extremum(fn: Callable[..., Any], args: list[Any]) -> Any:
    """min/max of numbers, or of torch SymInts for the fake run: torch.sym_min/sym_max keep an
    unbacked u0 symbolic where min/max would compare it (a guard torch refuses)."""
    if not any(isinstance(a, torch.SymInt) for a in args):
        return fn(args)
    pick = torch.sym_min if fn is min else torch.sym_max
    result = args[0]
    for a in args[1:]:
        result = pick(result, a)
    return result


_RELATIONS = {sympy.Gt: operator.gt, sympy.Lt: operator.lt, sympy.Ge: operator.ge, sympy.Le: operator.le,
              sympy.Eq: operator.eq, sympy.Ne: operator.ne}
_NUMERIC = {
    sympy.Mod: lambda a, b: a % b, FloorDiv: lambda a, b: a // b, CeilDiv: lambda a, b: -(-a // b),
    sympy.floor: math.floor, sympy.ceiling: math.ceil, sympy.Min: lambda *xs: _extremum(min, xs),
    sympy.Max: lambda *xs: _extremum(max, xs), sympy.Abs: abs, sympy.Not: operator.not_,
    sympy.And: lambda *xs: all(xs), sympy.Or: lambda *xs: any(xs),
    sym_float.TruncToInt: int, **{op: op.op for op in sym_float.OPS},
}


def _sympy_number(value: sympy.Basic, expr: sympy.Basic) -> Any:
    """A numeric sympy value as the Python number `evaluate` returns."""
    if isinstance(value, sympy.logic.boolalg.BooleanAtom):
        return bool(value)
    if value.is_Integer:
        return int(value)
    if value.is_Rational:
        return int(value) if value.q == 1 else float(value)
    if value.is_number and value.is_real:
        return float(value)
    raise TypeError(f"pdyn: {expr} is not a real number at these sizes ({value})")


def evaluate(expr: sympy.Basic, values: dict[sympy.Symbol, int]) -> Any:
    """`expr`'s Python value with `values` for its symbols; exact on integers, fast (no sympy calls)."""
    if expr.is_Symbol:
        return values[expr]
    if expr.is_Integer:
        return int(expr)
    if expr.is_Rational:
        return fractions.Fraction(int(expr.p), int(expr.q))
    if expr.is_Float:
        return float(expr)
    if isinstance(expr, sympy.logic.boolalg.BooleanAtom):
        return bool(expr)
    func = expr.func
    args = [evaluate(a, values) for a in expr.args]
    if func is sympy.Add:
        result = sum(args)
    elif func is sympy.Mul:
        result = math.prod(args)
    elif func is sympy.Pow:  # an integer to a negative power is a fraction until the end
        base = fractions.Fraction(args[0]) if isinstance(args[0], int) and args[1] < 0 else args[0]
        result = base ** args[1]
    elif func in _RELATIONS:
        return _RELATIONS[func](args[0], args[1])
    elif func in _NUMERIC:
        result = _NUMERIC[func](*args)
    else:  # no fast rule: sympy evaluates it exactly once every symbol is a number (rare, slow)
        return _sympy_number(expr.xreplace({s: sympy.Integer(values[s]) for s in expr.free_symbols}), expr)
    if isinstance(result, fractions.Fraction):
        return int(result) if result.denominator == 1 else float(result)
    return result


def substitute(expr: sympy.Basic, mapping: dict[sympy.Symbol, sympy.Basic]) -> sympy.Basic:
    """`expr.xreplace(mapping)`, but comparisons and Mod are rebuilt unevaluated (sympy's own
    evaluation of them is slow), and a comparison of two numbers is decided."""
    if expr in mapping:
        return mapping[expr]
    if not expr.args or not (expr.free_symbols & mapping.keys()):
        return expr
    args = [substitute(a, mapping) for a in expr.args]
    if expr.func in _RELATIONS:
        if args[0].is_Number and args[1].is_Number:
            return sympy.true if _RELATIONS[expr.func](args[0], args[1]) else sympy.false
        return expr.func(*args, evaluate=False)
    if expr.func is sympy.Mod:
        return sympy.Mod(*args) if all(a.is_Number for a in args) else sympy.Mod(*args, evaluate=False)
    return expr.func(*args)


class _PythonPrinter(PythonCodePrinter):
    """sympy -> Python source for guards: integer division stays exact (`a // b`)."""

    def _print_floor(self, expr: sympy.Basic) -> str:
        num, den = sympy.fraction(sympy.together(expr.args[0]))
        if den != 1:
            return f"(({self._print(num)}) // ({self._print(den)}))"
        return f"math.floor({self._print(expr.args[0])})"

    def _print_ceiling(self, expr: sympy.Basic) -> str:
        num, den = sympy.fraction(sympy.together(expr.args[0]))
        if den != 1:
            return f"(-((-({self._print(num)})) // ({self._print(den)})))"
        return f"math.ceil({self._print(expr.args[0])})"

    def _print_Float(self, expr: sympy.Float) -> str:
        return repr(float(expr))  # every bit of the float (sympy prints 15 digits)

    def _print_Symbol(self, expr: sympy.Symbol) -> str:
        return expr.name

    def _print_FloorDiv(self, expr: sympy.Basic) -> str:
        return f"(({self._print(expr.args[0])}) // ({self._print(expr.args[1])}))"

    def _print_CeilDiv(self, expr: sympy.Basic) -> str:
        return f"(-((-({self._print(expr.args[0])})) // ({self._print(expr.args[1])})))"

    def _print_TruncToInt(self, expr: sympy.Basic) -> str:
        return f"int({self._print(expr.args[0])})"

    def _print_Mod(self, expr: sympy.Basic) -> str:
        # parenthesized: inside a product `-2*Mod(s0, 2)` must not print as `-2*s0 % 2`
        return f"(({self._print(expr.args[0])}) % ({self._print(expr.args[1])}))"


def to_python(expr: sympy.Basic) -> str:
    """`expr` as a Python expression over the symbol names (and `math`)."""
    return _PythonPrinter({"fully_qualified_modules": True, "standard": "python3"}).doprint(expr)
