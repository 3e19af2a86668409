"""Translation validation: z3 checks each symbolic step of a trace for every size, not only this call's.

With `pdyn.config.translation_validation` (PDYN_TRANSLATION_VALIDATION=1) each ShapeEnv gets a
`Validator`. It keeps what the trace assumed so far (the symbols' starting ranges, the guards it
recorded, the dims it pinned or unified, the runtime asserts) in a z3 solver, and checks every step
that claims to follow from them: a simplification (`before == after`), a range refinement, a
comparison decided without a guard, a shape rule's size against the op's closed-form definition, and
at the end that the emitted guard set (with the runtime asserts) implies every fact the trace relied
on. A step that does not follow raises `ValidationError` with concrete sizes that show it.

z3 is an optional extra: `pip install pdyn[validate]`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable

import sympy

from pdyn.base.errors import InternalError, SourceLoc, UserError
from pdyn.shapes import sym_float
from pdyn.shapes.exprs import substitute

TIMEOUT_MS = 2000


def require_z3() -> Any:
    try:
        import z3  # noqa: PLC0415  # an optional extra: imported only when validation is on
    except ImportError:
        raise UserError("pdyn.config.translation_validation needs z3: pip install pdyn[validate] "
                        "(or pip install z3-solver)") from None
    return z3


class Untranslatable(Exception):
    """An expression z3 is not given: the step is not checked (counted as skipped). Floats and every
    sym_float op (ToFloat, TrueDiv, TruncToInt, floor of a float...) are not: z3's Float64 gives
    `unknown` within TIMEOUT_MS once an int size becomes a double or is divided (tests/
    test_validation_floats.py), and exact Reals would check something other than what Python computes."""


class ValidationFailure(InternalError):
    """A check of pdyn's own reasoning failed: raised to the caller, never a silent eager fallback."""

    loc: SourceLoc | None = None   # the user line of the op or step that failed, where known

    @classmethod
    def at(cls, message: str, loc: SourceLoc | None) -> ValidationFailure:
        failure = cls(message)
        failure.loc = loc
        return failure


class ValidationError(ValidationFailure):
    """A symbolic step of the trace is not valid for every size its assumptions allow."""

    def __init__(self, step: str, before: Any, after: Any, loc: SourceLoc | None, counterexample: dict[str, int]):
        self.step, self.before, self.after, self.loc = step, before, after, loc
        self.counterexample = counterexample
        sizes = ", ".join(f"{k} = {v}" for k, v in counterexample.items()) or "(any sizes)"
        lines = [f"translation validation: {step} is not valid", f"  before: {before}", f"  after:  {after}",
                 f"  counterexample: {sizes}"]
        if loc is not None:
            lines.insert(1, loc.render())
        super().__init__("\n".join(lines))


def _floordiv(z3: Any, a: Any, b: Any) -> Any:
    # z3's Int division is Euclidean; Python's rounds toward -inf (equal for b > 0)
    return z3.If(b > 0, a / b, (-a) / (-b))


class ToZ3:
    """sympy -> z3: integers, symbols (Int), + * ** (integer exponent), FloorDiv/CeilDiv/Mod,
    floor/ceiling, Min/Max/Abs, comparisons, And/Or/Not, Piecewise. Rationals become Reals."""

    def __init__(self, z3: Any, names: dict[sympy.Symbol, str] | None = None):
        self.z3 = z3
        self.names = names or {}
        self.vars: dict[str, Any] = {}

    def var(self, name: str) -> Any:
        if name not in self.vars:
            self.vars[name] = self.z3.Int(name)
        return self.vars[name]

    def __call__(self, expr: Any) -> Any:
        z3 = self.z3
        expr = sympy.sympify(expr)
        if isinstance(expr, sympy.logic.boolalg.BooleanAtom):
            return z3.BoolVal(bool(expr))
        if expr.is_Symbol:
            return self.var(self.names.get(expr, expr.name))
        if expr.is_Integer:
            return z3.IntVal(int(expr))
        if expr.is_Rational:
            return z3.RealVal(f"{expr.p}/{expr.q}")
        if expr.is_Number:
            raise Untranslatable(f"a float {expr}")
        name = type(expr).__name__
        if expr.func is sympy.Piecewise:
            return self._piecewise(expr)
        args = [self(a) for a in expr.args]
        if expr.func is sympy.Add:
            return sum(args[1:], args[0])
        if expr.func is sympy.Mul:
            out = args[0]
            for a in args[1:]:
                out = out * a
            return out
        if expr.func is sympy.Pow:
            if not expr.args[1].is_Integer:
                raise Untranslatable(f"a power {expr}")
            n, base = int(expr.args[1]), args[0]
            out = z3.IntVal(1) if n >= 0 else z3.RealVal(1)
            for _ in range(abs(n)):
                out = out * base
            return out if n >= 0 else 1 / z3.ToReal(out) if z3.is_int(out) else 1 / out
        if name == "FloorDiv":
            return _floordiv(z3, *args)
        if name == "CeilDiv":
            return -_floordiv(z3, -args[0], args[1])
        if expr.func is sympy.Mod:
            return args[0] - args[1] * _floordiv(z3, args[0], args[1])
        if expr.func is sympy.floor:
            return args[0] if z3.is_int(args[0]) else z3.ToInt(args[0])
        if expr.func is sympy.ceiling:
            return args[0] if z3.is_int(args[0]) else -z3.ToInt(-args[0])
        if expr.func in (sympy.Min, sympy.Max):
            out = args[0]
            for a in args[1:]:
                out = z3.If(a < out, a, out) if expr.func is sympy.Min else z3.If(a > out, a, out)
            return out
        if expr.func is sympy.Abs:
            return z3.If(args[0] >= 0, args[0], -args[0])
        relations = {sympy.Eq: lambda a, b: a == b, sympy.Ne: lambda a, b: a != b, sympy.Lt: lambda a, b: a < b,
                     sympy.Le: lambda a, b: a <= b, sympy.Gt: lambda a, b: a > b, sympy.Ge: lambda a, b: a >= b}
        if expr.func in relations:
            return relations[expr.func](*args)
        if expr.func is sympy.And:
            return z3.And(*args)
        if expr.func is sympy.Or:
            return z3.Or(*args)
        if expr.func is sympy.Not:
            return z3.Not(args[0])
        if isinstance(expr, sym_float.TruncToInt) or type(expr) in sym_float.OPS:
            raise Untranslatable(f"a float op {name}")
        raise Untranslatable(f"no z3 rule for {name}")

    def _piecewise(self, expr: sympy.Piecewise) -> Any:
        out = None
        for pair in reversed(expr.args):
            value, cond = self(pair.expr), self(pair.cond)
            out = value if out is None else self.z3.If(cond, value, out)
        return out


@dataclass
class Fact:
    expr: sympy.Basic
    loc: SourceLoc | None
    why: str
    given: bool = False   # true by construction (a data-dependent size's range), not by a guard


@dataclass
class Validator:
    """One trace's assumptions in z3 and the checks of its steps (see the module docstring)."""

    origins: dict[sympy.Symbol, str] = field(default_factory=dict)   # symbol -> what the user passes
    facts: list[Fact] = field(default_factory=list)
    checked: int = 0
    skipped: int = 0
    loc: SourceLoc | None = None   # the user line of the op being recorded (set by the OutputGraph)

    def __post_init__(self) -> None:
        self.z3 = require_z3()
        self.to_z3 = ToZ3(self.z3)
        self.solver = self.z3.Solver()
        self.solver.set("timeout", TIMEOUT_MS)
        self._valid: set[tuple[int, Any]] = set()

    # -- what the trace assumes ---------------------------------------------------------------------

    def on_symbol(self, sym: sympy.Symbol, lo: float, hi: float, origin: str, given: bool = False) -> None:
        """A new symbol; `given`: its range holds by construction (a data-dependent size), no guard
        checks it."""
        self.origins[sym] = origin
        for bound in _range_facts(sym, lo, hi):
            self.assume(bound, None, f"the starting range of {sym}", given)

    def assume(self, fact: sympy.Basic, loc: SourceLoc | None, why: str, given: bool = False) -> None:
        self.facts.append(Fact(fact, loc, why, given))
        try:
            self.solver.add(self.to_z3(fact))
        except Untranslatable:
            self.skipped += 1

    # -- the checks -----------------------------------------------------------------------------

    def check_equal(self, step: str, before: Any, after: Any, loc: SourceLoc | None = None) -> None:
        if before is after or before == after:
            return
        self._check(step, before, after, lambda b, a: b == a, loc)

    def check_implied(self, step: str, claim: sympy.Basic, loc: SourceLoc | None = None) -> None:
        if claim is sympy.true:
            return
        self._check(step, claim, "follows from the assumptions", lambda c, _: c, loc, claim_only=True)

    def _check(self, step: str, before: Any, after: Any, relate: Any, loc: SourceLoc | None,
               claim_only: bool = False) -> None:
        key = (len(self.facts), before, None if claim_only else after)
        if key in self._valid:
            return
        try:
            claim = relate(self.to_z3(before), None if claim_only else self.to_z3(after))
        except Untranslatable:
            self.skipped += 1
            return
        self.checked += 1
        self.solver.push()
        try:
            self.solver.add(self.z3.Not(claim))
            result = self.solver.check()
            model = self.solver.model() if result == self.z3.sat else None
        finally:
            self.solver.pop()
        if result == self.z3.unknown:
            self.skipped += 1
            return
        if model is not None:
            raise ValidationError(step, before, after, loc or self.loc, self._counterexample(model))
        self._valid.add(key)

    def _counterexample(self, model: Any) -> dict[str, int]:
        out: dict[str, int] = {}
        for decl in sorted(model.decls(), key=lambda d: d.name()):
            value = model[decl]
            if self.z3.is_int_value(value):
                sym = sympy.Symbol(decl.name(), integer=True)
                out[self.origins.get(sym, decl.name())] = value.as_long()
        return out

    # -- the emitted guard set ------------------------------------------------------------------

    def check_guard_set(self, emitted: Iterable[sympy.Basic], asserts: Iterable[sympy.Basic]) -> None:
        """Every fact the trace relied on (over the sizes the user passes) follows from the guards
        the entry checks and the runtime asserts its graph checks. `emitted` is over origin names."""
        z3 = self.z3
        by_origin = {sym: sympy.Symbol(name, integer=True) for sym, name in self.origins.items()}
        translate = ToZ3(z3)
        solver = z3.Solver()
        solver.set("timeout", TIMEOUT_MS)
        try:
            for expr in emitted:
                solver.add(translate(expr))
            for expr in [*asserts, *(f.expr for f in self.facts if f.given)]:
                solver.add(translate(substitute(sympy.sympify(expr), by_origin)))
        except Untranslatable:
            self.skipped += 1
            return
        for fact in self.facts:
            try:
                claim = translate(substitute(sympy.sympify(fact.expr), by_origin))
            except Untranslatable:
                self.skipped += 1
                continue
            self.checked += 1
            solver.push()
            solver.add(z3.Not(claim))
            result = solver.check()
            model = solver.model() if result == z3.sat else None
            solver.pop()
            if model is not None:
                values = {d.name(): model[d].as_long() for d in model.decls() if z3.is_int_value(model[d])}
                raise ValidationError(f"the final guard set (it does not imply {fact.why})", fact.expr,
                                      "not checked by any guard", fact.loc, dict(sorted(values.items())))


def _range_facts(sym: sympy.Symbol, lo: float, hi: float) -> list[sympy.Basic]:
    out = []
    if lo > -math.inf:
        out.append(sympy.Ge(sym, int(lo), evaluate=False))
    if hi < math.inf:
        out.append(sympy.Le(sym, int(hi), evaluate=False))
    return out


def range_claim(sym: sympy.Symbol, lo: float, hi: float) -> sympy.Basic:
    """`lo <= sym <= hi` (the finite bounds) as one claim."""
    return sympy.And(*_range_facts(sym, lo, hi)) if (lo > -math.inf or hi < math.inf) else sympy.true


@dataclass
class TraceFacts:
    """What a finished trace relied on about the sizes it was given (pins, equalities, guards), over
    its symbols; each symbol's first origin; and the value each read size had in the trace (what a
    replay of the trace by `pdyn.debug.bisect` passes)."""

    facts: list[Fact]
    origins: dict[sympy.Symbol, Any]
    sizes: dict[Any, int]


def trace_facts(env: Any) -> TraceFacts:
    facts = [Fact(sympy.Eq(s, spec.value, evaluate=False), spec.loc, f"{s} == {spec.value} ({spec.why})")
             for s, spec in env.specialized.items()]
    facts += [Fact(sympy.Eq(s, env.replacements[s], evaluate=False), None, f"{s} == {env.replacements[s]}")
              for s in env.unified]
    facts += [Fact(g.expr, g.loc, f"the guard {g.expr}") for g in env.guards]
    sizes = {origin: hint for s, hint in env.hints.items() for origin in env.origins[s]}
    return TraceFacts(facts, {s: origins[0] for s, origins in env.origins.items() if origins}, sizes)
