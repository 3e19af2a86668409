"""Integer-exact rewrites of size expressions that hold for every integer value of their symbols.

The shape rules need three things sympy offers only unsoundly or slowly: whether two sizes are the
same expression, whether one size divides another, and the exact quotient. sympy's `cancel`,
`gcd`, `simplify` and `fraction` treat `Mod(...)` as an unknown of a rational function (so `cancel`
rewrites `Mod(4 - Mod(s, 4), 4)` as `3*Mod(s, 4)`), leave quotients with rational coefficients
(`s0/3 + Mod(2*s0, 3)/3`, which Python then evaluates in floating point), and can take seconds
over nested `Mod`. sympy's own `Mod` evaluation is not safe either (`Mod(Max(0, 2*s0), 6)` comes
back as 0). So nothing here calls them, and nothing here rebuilds a function application:

- `poly` expands sums and products into a polynomial over *atoms* (symbols and function
  applications such as `Mod`, `FloorDiv`, `Min`, `Max`, kept exactly as written): the ring laws of
  the integers, so an expanded form equals the original for all values. Its size is bounded
  (`MAX_TERMS`); past the bound the answer is "unknown", which every caller treats soundly (a
  guard, or no grouping), never "equal". This bound is the time budget of the shape rules.
- `congruent_zero(expr, k)`: `k` divides `expr` for all integer values, proved by reducing modulo
  `k`: `Mod(x, m)` with `k | m` is congruent to `x` modulo `k` (`Mod(x, m) = x - m*floor(x/m)`), and
  a polynomial with integer coefficients all divisible by `k` is a multiple of `k`.
- `split_common`: a factor of both a numerator and a nonzero denominator cancels
  (`f*a / (f*b) = a/b` and `f*b | f*a <=> b | a` for integer `f != 0`), as does the gcd of their
  integer coefficients.

Every result is checked by z3 over random size expressions in tests/shapes/test_size_arith.py.
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction
from typing import Iterable

import sympy

from pdyn.shapes.exprs import FloorDiv

MAX_TERMS = 256   # a polynomial larger than this is "unknown": the time budget of a shape rule
Monomial = frozenset   # of (atom, exponent) pairs
Poly = dict


class TooLarge(Exception):
    """The expansion passed MAX_TERMS terms (or a number is not rational): no answer, soundly."""


def poly(expr: sympy.Basic) -> Poly:
    """`expr` as {monomial: coefficient}; atoms (symbols, function applications) are opaque.
    Raises TooLarge past MAX_TERMS terms or on a float."""
    if expr.is_Integer:
        return {frozenset(): int(expr)} if expr != 0 else {}
    if expr.is_Rational:
        return {frozenset(): Fraction(int(expr.p), int(expr.q))}
    if expr.is_Number:
        raise TooLarge(f"a float {expr}")
    if expr.is_Add:
        out: Poly = {}
        for arg in expr.args:
            _add_into(out, poly(arg))
        return out
    if expr.is_Mul:
        out = {frozenset(): 1}
        for arg in expr.args:
            out = _times(out, poly(arg))
        return out
    if expr.is_Pow and expr.exp.is_Integer and 0 < int(expr.exp) <= 16:
        base, out = poly(expr.base), {frozenset(): 1}
        for _ in range(int(expr.exp)):
            out = _times(out, base)
        return out
    return {frozenset({(expr, 1)}): 1}


def _add_into(acc: Poly, other: Poly) -> None:
    for mono, coeff in other.items():
        total = acc.get(mono, 0) + coeff
        if total:
            acc[mono] = total
        else:
            acc.pop(mono, None)
    if len(acc) > MAX_TERMS:
        raise TooLarge("too many terms")


def _times(a: Poly, b: Poly) -> Poly:
    if len(a) * len(b) > 4 * MAX_TERMS:
        raise TooLarge("too many terms")
    out: Poly = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            powers = Counter(dict(ma))
            for atom, n in mb:
                powers[atom] += n
            _add_into(out, {frozenset(powers.items()): ca * cb})
    return out


def same(a: sympy.Basic, b: sympy.Basic) -> bool:
    """`a == b` for all integer values, by expansion; False also means "not shown" (sound for a
    caller that then guards, or does not rely on it)."""
    a, b = sympy.sympify(a), sympy.sympify(b)
    if a == b:
        return True
    try:
        diff = poly(a)
        _add_into(diff, {m: -c for m, c in poly(b).items()})
    except TooLarge:
        return False
    return not diff


def reduce_mod(expr: sympy.Basic, k: int) -> sympy.Basic:
    """An expression congruent to `expr` modulo `k`: each `Mod(x, m)` with `k | m` is `x` there."""
    if not expr.args:
        return expr
    if isinstance(expr, sympy.Mod) and expr.args[1].is_Integer and int(expr.args[1]) % k == 0:
        return reduce_mod(expr.args[0], k)
    if expr.is_Add or expr.is_Mul or (expr.is_Pow and expr.exp.is_Integer and expr.exp > 0):
        return expr.func(*(reduce_mod(a, k) for a in expr.args))
    return expr   # another function: an opaque integer atom


def congruent_zero(expr: sympy.Basic, k: int) -> bool:
    """`k` divides `expr` for every integer value of its symbols (False: not shown). A product
    may also be shown factor by factor: `d1 | f1` and `d2 | f2` give `d1*d2 | f1*f2`."""
    k = abs(k)
    if k == 1 or _multiple(expr, k):
        return True
    if not expr.is_Mul:
        return False
    left = k
    for factor in expr.args:
        for d in sorted((d for d in range(2, left + 1) if left % d == 0), reverse=True):
            if _multiple(factor, d):
                left //= d
                break
        if left == 1:
            return True
    return False


def _multiple(expr: sympy.Basic, k: int) -> bool:
    """Every coefficient of `expr`, reduced modulo `k`, is a multiple of `k`."""
    try:
        coeffs = poly(reduce_mod(sympy.sympify(expr), k)).values()
    except TooLarge:
        return False
    return all(isinstance(c, int) and c % k == 0 for c in coeffs)


def _factors(expr: sympy.Basic) -> tuple[int, Counter] | None:
    """`expr` as an integer coefficient times a multiset of factors (None: a rational coefficient)."""
    coeff, parts = 1, Counter()
    for f in sympy.Mul.make_args(expr):
        if f.is_Integer:
            coeff *= int(f)
        elif f.is_Number:
            return None
        elif f.is_Pow and f.exp.is_Integer and f.exp > 0:
            parts[f.base] += int(f.exp)
        else:
            parts[f] += 1
    return coeff, parts


def _product(coeff: int, parts: Counter) -> sympy.Expr:
    return sympy.Mul(sympy.Integer(coeff), *(f**n for f, n in parts.items()))


def split_common(numel: sympy.Expr, part: sympy.Expr) -> tuple[sympy.Expr, sympy.Expr]:
    """`(numel/g, part/g)` for `g` the factors both share and the gcd of their integer
    coefficients; valid where `part != 0` (the caller's premise)."""
    fn, fp = _factors(sympy.sympify(numel)), _factors(sympy.sympify(part))
    if fn is None or fp is None:
        return numel, part
    (cn, pn), (cp, pp) = fn, fp
    common = pn & pp
    g = math.gcd(cn, cp) or 1
    if cp < 0:
        g = -g   # the denominator keeps a positive coefficient
    return _product(cn // g, pn - common), _product(cp // g, pp - common)


def divides(numel: sympy.Expr, part: sympy.Expr) -> bool:
    """`part` divides `numel` for every integer value (False: not shown; the caller guards)."""
    numel, part = split_common(numel, part)
    return part.is_Integer and congruent_zero(numel, int(part))


def exact_quotient(numel: sympy.Expr, part: sympy.Expr) -> sympy.Expr:
    """`numel / part` as an integer expression, given that `part` divides `numel` and is not 0 (the
    caller proved or guarded both): common factors cancel, an integer divisor that divides every
    coefficient divides them, and anything else is `FloorDiv`, exact for a divisor that divides."""
    numel, part = split_common(numel, part)
    if part == 1:
        return numel
    if part == -1:
        return -numel
    if part.is_Integer:
        k = int(part)
        try:
            terms = poly(numel)
        except TooLarge:
            terms = None
        if terms is not None and len(terms) <= 16 and all(isinstance(c, int) and c % k == 0 for c in terms.values()):
            return from_poly({m: c // k for m, c in terms.items()})
    return FloorDiv(numel, part)


def from_poly(p: Poly) -> sympy.Expr:
    """The sympy sum of a polynomial `poly` made (its atoms as they were)."""
    return sympy.Add(*(sympy.Mul(sympy.Integer(c) if isinstance(c, int) else sympy.Rational(c.numerator, c.denominator),
                                 *(atom**n for atom, n in mono)) for mono, c in p.items()))


def expand(expr: sympy.Basic) -> sympy.Basic:
    """`expr` with sums and products multiplied out (atoms as written), or `expr` itself past
    the budget. Sound: only the ring laws of the integers."""
    try:
        return from_poly(poly(sympy.sympify(expr)))
    except TooLarge:
        return expr


def has_fraction(exprs: Iterable[sympy.Basic]) -> bool:
    """A non-integer rational or a float anywhere in `exprs` (a size must have neither)."""
    return any(isinstance(a, sympy.Number) and not a.is_Integer
               for e in exprs for a in sympy.preorder_traversal(sympy.sympify(e)))
