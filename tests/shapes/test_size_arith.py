"""Every rewrite pdyn keeps on integer size expressions, proved with z3 over random expressions.

The expressions are built from + - * // % min max of symbols in their ranges and of the shapes
padding, windowing, chunking and reshape(-1) programs make (`s + (k - s % k) % k`, `s // k`,
`-(-s // k)`, products of those). Each rewrite's output is checked equal to its input (or the
claim it makes checked true) for every integer value the ranges allow, by
`pdyn.shapes.validation.ToZ3`; a reference term built from the generation tree, not from sympy,
checks sympy's own evaluation when the expression is constructed (Add/Mul flattening, Min/Max,
FloorDiv/CeilDiv folding). z3 is a test dependency (pdyn[validate])."""

from __future__ import annotations

import ast
import itertools
import pathlib
import random
import time

import pytest
import sympy

from pdyn.shapes import size_arith, size_bounds
from pdyn.shapes.exprs import CeilDiv, FloorDiv, substitute
from pdyn.shapes.validation import ToZ3

z3 = pytest.importorskip("z3")

SYMS = [sympy.Symbol(f"s{i}", integer=True) for i in range(3)]
RANGES = {SYMS[0]: (2, float("inf")), SYMS[1]: (0, float("inf")), SYMS[2]: (2, 40)}
to_z3 = ToZ3(z3)


def _solver() -> z3.Solver:
    solver = z3.Solver()
    solver.set("timeout", 5000)
    for sym, (lo, hi) in RANGES.items():
        solver.add(to_z3(sym) >= lo)
        if hi != float("inf"):
            solver.add(to_z3(sym) <= hi)
    return solver


def proved(claim, *premises) -> bool:
    """z3 finds no integer values in the ranges where the premises hold and `claim` fails. Where z3
    gives up (nonlinear integer arithmetic is undecidable), every value up to 10 is tried instead."""
    solver = _solver()
    solver.add(*premises, z3.Not(claim))
    result = solver.check()
    if result != z3.unknown:
        return result == z3.unsat
    UNKNOWN.append(claim)
    names = [to_z3(s) for s in SYMS]
    for values in itertools.product(range(11), repeat=len(SYMS)):
        if any(not (lo <= v <= hi) for v, (lo, hi) in zip(values, RANGES.values())):
            continue
        at = list(zip(names, (z3.IntVal(v) for v in values)))
        if all(z3.is_true(z3.simplify(z3.substitute(p, *at))) for p in premises) \
                and not z3.is_true(z3.simplify(z3.substitute(claim, *at))):
            return False
    return True


UNKNOWN: list = []


def _fdiv(a, b):
    return z3.If(b > 0, a / b, (-a) / (-b))


def _zmod(a, b):
    return a - b * _fdiv(a, b)


def mod(a: sympy.Expr, k: int) -> sympy.Expr:
    """`a % k` as the trace records it: unevaluated, except of a number."""
    return sympy.Mod(a, k) if sympy.sympify(a).is_Number else sympy.Mod(a, k, evaluate=False)


def random_size(rng: random.Random, depth: int = 3) -> tuple[sympy.Expr, object]:
    """A size expression (as pdyn builds it) and its reference z3 term (built without sympy)."""
    if depth == 0 or rng.random() < 0.25:
        if rng.random() < 0.3:
            k = rng.randint(-3, 7)
            return sympy.Integer(k), z3.IntVal(k)
        s = rng.choice(SYMS)
        return s, to_z3(s)
    a, za = random_size(rng, depth - 1)
    k = rng.randint(2, 6)
    kind = rng.choice(["add", "sub", "mul", "floordiv", "mod", "min", "max", "pad", "ceil", "window", "mulk"])
    if kind in ("add", "sub", "mul", "min", "max"):
        b, zb = random_size(rng, depth - 1)
        return {"add": (a + b, za + zb), "sub": (a - b, za - zb), "mul": (a * b, za * zb),
                "min": (sympy.Min(a, b), z3.If(za < zb, za, zb)),
                "max": (sympy.Max(a, b), z3.If(za > zb, za, zb))}[kind]
    if kind == "floordiv":
        return FloorDiv(a, k), _fdiv(za, k)
    if kind == "mod":   # as the trace records `n % k`
        return mod(a, k), _zmod(za, k)
    if kind == "pad":   # n + (k - n % k) % k
        return a + mod(k - mod(a, k), k), za + _zmod(k - _zmod(za, k), k)
    if kind == "ceil":  # chunk sizes
        return CeilDiv(a, k), -_fdiv(-za, k)
    if kind == "window":  # -(-n // k) * k: the padded length
        return -FloorDiv(-a, k) * k, -_fdiv(-za, k) * k
    return a * k, za * k


def expressions(count: int, seed: int) -> list[tuple[sympy.Expr, object]]:
    rng = random.Random(seed)
    return [random_size(rng) for _ in range(count)]


def test_construction_keeps_the_value():
    """sympy's evaluation as pdyn builds sizes (Add/Mul, Min/Max, FloorDiv/CeilDiv folds)."""
    for expr, ref in expressions(80, 1):
        assert proved(to_z3(expr) == ref), expr


def test_expand_keeps_the_value():
    for expr, _ in expressions(80, 2):
        assert proved(to_z3(size_arith.expand(expr)) == to_z3(expr)), expr


def test_same_only_for_equal_expressions():
    pairs = [(e, size_arith.expand(e)) for e, _ in expressions(40, 3)]
    pairs += list(zip((e for e, _ in expressions(40, 4)), (e for e, _ in expressions(40, 5))))
    for a, b in pairs:
        if size_arith.same(a, b):
            assert proved(to_z3(a) == to_z3(b)), (a, b)
    assert sum(size_arith.same(a, b) for a, b in pairs[:40]) == 40   # an expansion is always recognized


def padded(rng: random.Random) -> sympy.Expr:
    """A product of padded, windowed and plain sizes: what reshape(-1) divides."""
    out = sympy.Integer(rng.choice([1, 2, 3, 4, 6]))
    for _ in range(rng.randint(1, 3)):
        e, _ = random_size(rng, 1)
        k = rng.randint(2, 6)
        pick = rng.random()
        out *= (e + mod(k - mod(e, k), k)) if pick < 0.5 else \
            (-FloorDiv(-e, k) * k if pick < 0.7 else e)
    return out


def _parts(rng: random.Random, numel: sympy.Expr) -> sympy.Expr:
    factors = [f for f in sympy.Mul.make_args(numel) if not f.is_Number]
    part = sympy.Integer(rng.choice([1, 2, 3, 4, 5, 6, 8, 12, -2]))
    return part * sympy.Mul(*rng.sample(factors, k=rng.randint(0, len(factors))))


def test_divides_and_exact_quotient():
    rng = random.Random(6)
    shown = 0
    for _ in range(60):
        numel = padded(rng)
        part = _parts(rng, numel)
        zn, zp = to_z3(numel), to_z3(part)
        n2, p2 = size_arith.split_common(numel, part)
        assert proved(zn * to_z3(p2) == to_z3(n2) * zp, zp != 0), (numel, part)   # the same ratio
        if size_arith.divides(numel, part):
            shown += 1
            assert proved(_zmod(zn, zp) == 0, zp != 0), (numel, part)
        q = size_arith.exact_quotient(numel, part)
        assert not size_arith.has_fraction([q]), q   # never a rational coefficient
        assert proved(to_z3(q) * zp == zn, zp != 0, _zmod(zn, zp) == 0), (numel, part, q)
    assert shown > 20   # the padded shapes are recognized as multiples


def test_bounds_decide_only_what_holds():
    rng = random.Random(7)
    decided = 0
    for expr, _ in expressions(120, 8):
        rel = rng.choice([sympy.Ge, sympy.Gt, sympy.Eq, sympy.Le, sympy.Lt, sympy.Ne])
        c = rng.randint(-2, 6)
        answer = size_bounds.decide(rel, expr - c, RANGES)
        if answer is None:
            continue
        decided += 1
        claim = to_z3(rel(expr, c, evaluate=False))
        assert proved(claim if answer else z3.Not(claim)), (rel, expr, c, answer)
    assert decided > 25


def test_substitution_of_equal_sizes():
    rng = random.Random(9)
    for expr, _ in expressions(60, 10):
        target = rng.choice([sympy.Integer(rng.randint(2, 9)), SYMS[2], SYMS[2] * 2 + 1])
        out = substitute(expr, {SYMS[0]: target})
        assert proved(to_z3(out) == to_z3(expr), to_z3(SYMS[0]) == to_z3(target)), (expr, target)


def test_the_budget_bounds_the_time():
    """A product of many sums is "unknown" (a guard), decided in milliseconds, not expanded."""
    big = sympy.Mul(*(s + mod(k - mod(s, k), k)
                      for s in SYMS for k in (3, 4, 5)))
    start = time.process_time()
    assert not size_arith.same(big, big + 1)
    assert size_arith.divides(big, 3 * 4 * 5)   # the congruence does not need the expansion
    assert size_bounds.decide(sympy.Ge, big, RANGES) is not False
    assert time.process_time() - start < 1.0


UNSOUND = {"cancel", "simplify", "gcd", "fraction", "factor", "together", "powsimp", "nsimplify", "expand",
           "factor_terms", "ratsimp", "trigsimp", "radsimp"}
ALLOWED = {("pdyn/shapes/exprs.py", "together"), ("pdyn/shapes/exprs.py", "fraction")}   # the floor printer


def test_no_sympy_rewrite_outside_the_proved_ones():
    """No module calls sympy's cancel/gcd/simplify/expand... on sizes: size_arith has the sound ones.
    (The guard printer's floor(a/b) -> a // b is sound: together/fraction of an integer-valued
    rational expression give integer numerator and denominator.)"""
    root = pathlib.Path(__file__).resolve().parents[1]
    found = []
    for path in sorted((root / "pdyn").rglob("*.py")):
        rel = str(path.relative_to(root))
        if rel.startswith("pdyn/backends/"):
            continue   # kernel index arithmetic: tests/backends
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in UNSOUND and isinstance(node.value, ast.Name) \
                    and node.value.id == "sympy" and (rel, node.attr) not in ALLOWED:
                found.append(f"{rel}:{node.lineno} sympy.{node.attr}")
    assert not found, found
