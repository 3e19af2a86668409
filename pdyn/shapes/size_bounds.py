"""Bounds of size expressions over the symbols' ranges, and the comparisons they decide.

`decide(rel, diff, ranges)` says whether `diff <rel> 0` holds for every integer value the ranges
allow (True), for none (False), or neither (None). It replaces sympy's sign assumptions
(`is_nonnegative` and friends), which are slow on nested `Mod` and rest on `Mul._eval_is_integer`,
which is wrong for `Max(0, 2*s0)/6`. Everything here is interval arithmetic, sound by construction:

- each symbol is shifted to `lo + t` (or `hi - t`) with `t >= 0`, and the difference is expanded by
  `size_arith.poly` (ring laws only); a monomial's bounds are the product of its atoms' bounds, so
  `s0*s1 - s0 - s1` with both `>= 2` is `t0*t1 + t0 + t1 >= 0` rather than an interval's guess;
- an atom's bounds: `Mod(x, m)` in `[0, m - 1]` for `m >= 1` (and `x`'s own bounds when those
  already lie there), `FloorDiv`/`CeilDiv` by a positive constant rounds `x`'s bounds, `Min`,
  `Max` and `Abs` act on their arguments' bounds; any other atom is unbounded.

The budget is `size_arith.MAX_TERMS`; past it, or on a float, the answer is None.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable

import sympy

from pdyn.shapes import size_arith
from pdyn.shapes.exprs import substitute

INF = math.inf
Bounds = tuple[float, float]


def _mul(a: float, b: float) -> float:
    return 0 if a == 0 or b == 0 else a * b   # 0 * inf is 0 here: a zero factor is exactly 0


def times(a: Bounds, b: Bounds) -> Bounds:
    ends = [_mul(x, y) for x in a for y in b]
    return (min(ends), max(ends))


def bounds(expr: sympy.Basic, ranges: dict[sympy.Symbol, Bounds]) -> Bounds:
    """Sound bounds of an integer-valued `expr` (possibly (-inf, inf))."""
    try:
        return _poly_bounds(size_arith.poly(expr), ranges)
    except size_arith.TooLarge:
        return (-INF, INF)


def _poly_bounds(p: size_arith.Poly, ranges: dict[sympy.Symbol, Bounds]) -> Bounds:
    lo = hi = 0.0
    for mono, coeff in p.items():
        part: Bounds = (coeff, coeff)
        for atom, n in mono:
            b = atom_bounds(atom, ranges)
            for _ in range(n):
                part = times(part, b)
        lo, hi = lo + part[0], hi + part[1]
    return (lo, hi)


def atom_bounds(atom: sympy.Basic, ranges: dict[sympy.Symbol, Bounds]) -> Bounds:
    if atom.is_Symbol:
        return ranges.get(atom, (-INF, INF))
    name = type(atom).__name__
    if isinstance(atom, sympy.Mod):
        return _mod_bounds(atom, ranges)
    if name in ("FloorDiv", "CeilDiv") and atom.args[1].is_Integer and atom.args[1] > 0:
        k, (lo, hi) = int(atom.args[1]), bounds(atom.args[0], ranges)
        rnd: Callable[[Fraction], int] = math.floor if name == "FloorDiv" else math.ceil
        return (lo if lo in (-INF, INF) else rnd(Fraction(lo) / k), hi if hi in (-INF, INF) else rnd(Fraction(hi) / k))
    if atom.func in (sympy.Min, sympy.Max):
        parts = [bounds(a, ranges) for a in atom.args]
        pick = min if atom.func is sympy.Min else max
        return (pick(p[0] for p in parts), pick(p[1] for p in parts))
    if atom.func is sympy.Abs:
        lo, hi = bounds(atom.args[0], ranges)
        return (0 if lo <= 0 <= hi else min(abs(lo), abs(hi)), max(abs(lo), abs(hi)))
    return (-INF, INF)


def _mod_bounds(atom: sympy.Basic, ranges: dict[sympy.Symbol, Bounds]) -> Bounds:
    """`Mod(x, m)` (Python's %: the sign of m) for a divisor known to be at least 1."""
    m_lo, m_hi = bounds(atom.args[1], ranges)
    if m_lo < 1:
        return (-INF, INF)
    x_lo, x_hi = bounds(atom.args[0], ranges)
    if x_lo >= 0 and x_hi < m_lo:
        return (x_lo, x_hi)     # x already below the divisor: Mod(x, m) is x
    return (0, m_hi - 1 if x_lo < 0 else min(m_hi - 1, x_hi))


def shifted(diff: sympy.Basic, ranges: dict[sympy.Symbol, Bounds]) -> tuple[sympy.Basic, dict]:
    """`diff` over `t >= 0` where each symbol with a finite bound is `lo + t` (or `hi - t`)."""
    mapping: dict[sympy.Symbol, sympy.Expr] = {}
    new_ranges: dict[sympy.Symbol, Bounds] = {}
    for sym in diff.free_symbols:
        lo, hi = ranges.get(sym, (-INF, INF))
        t = sympy.Symbol(f"_{sym.name}", integer=True)
        if lo > -INF:
            mapping[sym], new_ranges[t] = int(lo) + t, (0, hi - lo)
        elif hi < INF:
            mapping[sym], new_ranges[t] = int(hi) - t, (0, INF)
    return substitute(diff, mapping), {**ranges, **new_ranges}


def decide(rel: type, diff: sympy.Basic, ranges: dict[sympy.Symbol, Bounds]) -> bool | None:
    """Whether `diff <rel> 0` for every value the ranges allow (True), none (False), or neither."""
    lo, hi = bounds(diff, ranges)
    out = _decide(rel, lo, hi)
    if out is None and diff.free_symbols:
        lo, hi = bounds(*shifted(diff, ranges))
        out = _decide(rel, lo, hi)
    return out


# relation -> (holds for all of [lo, hi], holds for none of it)
RELATIONS: dict[type, Callable[[float, float], tuple[bool, bool]]] = {
    sympy.Ge: lambda lo, hi: (lo >= 0, hi < 0), sympy.Gt: lambda lo, hi: (lo > 0, hi <= 0),
    sympy.Le: lambda lo, hi: (hi <= 0, lo > 0), sympy.Lt: lambda lo, hi: (hi < 0, lo >= 0),
    sympy.Eq: lambda lo, hi: (lo == hi == 0, lo > 0 or hi < 0), sympy.Ne: lambda lo, hi: (lo > 0 or hi < 0, lo == hi == 0),
}


def _decide(rel: type, lo: float, hi: float) -> bool | None:
    if math.isnan(lo) or math.isnan(hi) or lo > hi:
        return None
    always, never = RELATIONS[rel](lo, hi)
    return True if always else (False if never else None)
