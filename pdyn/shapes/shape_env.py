"""ShapeEnv: the symbolic sizes of one trace, on sympy.

One symbol per dynamic input dimension (or int argument), with this call's value as its hint and a
value range; the guards the trace's decisions imply (expressions, and dims pinned to a value);
unification of sizes an op assumed equal. Python reads of sizes come here: a bool read records a
guard on the expression, a value read specializes the symbols in it (or, per the recompile
policy, is refused with `Unsupported`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import sympy

from pdyn.shapes import size_arith, size_bounds, steps, validation
from pdyn.shapes.exprs import CeilDiv, FloorDiv, evaluate, substitute, to_python  # noqa: F401  (re-exported)
from pdyn.base.errors import SourceLoc, Unsupported
from pdyn.sources import SizeSource

Expr = sympy.Expr
INF = math.inf


@dataclass
class Specialization:
    """A symbol pinned to its value: why (a value read, or an expression that pins it) and where."""

    value: int
    loc: SourceLoc | None
    why: str
    by_value_read: bool = True   # False: an equality that held (`x.size(1) == 10`) pinned it


@dataclass
class ShapeGuard:
    """A boolean expression over symbols that must hold, with the user line whose read made it."""

    expr: sympy.Basic
    loc: SourceLoc | None


@dataclass
class RuntimeAssert:
    """A fact about data-dependent sizes the trace assumed; the compiled code checks it and raises
    `error(message)` (what eager raises there) when it fails. `expr` keeps the symbols as made."""

    expr: sympy.Basic
    loc: SourceLoc | None
    error: type[Exception]
    message: str


class DataDependentRead(Unsupported):
    """Python needs a value or a decision that depends on tensor data (an unbacked symbol)."""

    def __init__(self, message: str, loc: SourceLoc | None = None):
        super().__init__("data_dependent", message, loc=loc,
                         hint="keep the value in tensor ops, or state what you know with pdyn.check(...)")


@dataclass
class ReadPolicy:
    """How reads resolve in this trace (the TracePlan's part the ShapeEnv needs).

    `on_value_read(origin)` returns "specialize" or "break"; `on_bool_read(origin)` returns
    "guard" or "specialize".
    """

    on_value_read: Callable[[SizeSource], str] = lambda origin: "specialize"
    on_bool_read: Callable[[SizeSource], str] = lambda origin: "guard"


@dataclass
class ShapeEnv:
    policy: ReadPolicy = field(default_factory=ReadPolicy)
    hints: dict[sympy.Symbol, int] = field(default_factory=dict)
    origins: dict[sympy.Symbol, list[SizeSource]] = field(default_factory=dict)
    ranges: dict[sympy.Symbol, tuple[float, float]] = field(default_factory=dict)
    replacements: dict[sympy.Symbol, Expr] = field(default_factory=dict)
    specialized: dict[sympy.Symbol, Specialization] = field(default_factory=dict)
    guards: list[ShapeGuard] = field(default_factory=list)
    unified: set[sympy.Symbol] = field(default_factory=set)   # symbols replaced by an equal one
    events: list[str] = field(default_factory=list)   # for PDYN_LOGS=dynamic and explain
    _bool_cache: dict[sympy.Basic, bool] = field(default_factory=dict)
    unbacked: dict[sympy.Symbol, str] = field(default_factory=dict)   # symbol -> what made it
    vehicles: dict[sympy.Symbol, Any] = field(default_factory=dict)   # symbol -> the fake run's SymInt
    runtime_asserts: list[RuntimeAssert] = field(default_factory=list)
    size_like: set[sympy.Symbol] = field(default_factory=set)         # check_is_size: no 0/1 decisions
    validator: Any = None   # shapes/validation.Validator under pdyn.config.translation_validation
    initial_ranges: dict[sympy.Symbol, tuple[float, float]] = field(default_factory=dict)  # size-like ints
    upper_bounds: dict[sympy.Symbol, sympy.Expr] = field(default_factory=dict)  # u0 <= x.numel(), symbolic
    # size-oblivious symbols: reasoned about in [2, inf), bound by a guard of [1, inf) until a
    # decision needs them >= 2 (`oblivious_check`); then their guard is 2 <= s, as any symbol's
    oblivious: set[sympy.Symbol] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.validator is None and steps.ACTIVE is not None:   # under bisect: steps name user lines
            self.validator = steps.LineTracker(steps.ACTIVE)

    # -- symbols ---------------------------------------------------------------------------------
    def create_symbol(self, hint: int, origin: SizeSource, size_like: bool = False) -> Expr:
        """A new symbol for `hint`. A value >= 2 is size-oblivious (see `oblivious_check`). A value
        of 1 is a symbol in [1, inf) (`ones_first`): nothing in its range says it is 1, so each
        question whose answer depends on it (a broadcast that happens, squeeze, a branch) is a
        guard from the hint, `s == 1` where it pins it, and the entry serves every other size
        where no question did. 0 stays a constant (an empty tensor changes too much: strides,
        reductions' identities), except for a `size_like` value (an element of a list of ints,
        such as split lengths, or a `mark_unbacked` dim): a symbol in [0, inf) whatever its value."""
        if hint == 0 and not size_like:
            return sympy.Integer(hint)
        sym = sympy.Symbol(f"s{len(self.hints)}", integer=True)
        self.hints[sym] = hint
        self.origins[sym] = [origin]
        if hint >= 0 and (size_like or hint == 1):
            self.ranges[sym] = (0 if size_like else 1, INF)
            self.initial_ranges[sym] = self.ranges[sym]
        else:
            self.ranges[sym] = (2, INF) if hint >= 2 else (-INF, -1)
            if hint >= 2:
                self.oblivious.add(sym)
        if self.validator is not None:
            self.validator.on_symbol(sym, *self.initial_range(sym), str(origin))
        return sym

    def initial_range(self, sym: sympy.Symbol) -> tuple[float, float]:
        """The range a backed symbol starts with (what its binding guard checks): a size-oblivious
        symbol's includes 1, since no decision of the trace needed it >= 2."""
        if sym in self.oblivious:
            return (1, INF)
        return self.initial_ranges.get(sym) or ((2, INF) if self.hints[sym] >= 2 else (-INF, -1))

    def ones_first(self) -> list[sympy.Symbol]:
        """Live backed symbols whose hint is 0 or 1 (first seen at that size): facts the fake run
        learned at this hint, and no shape rule states, may not hold at other sizes."""
        return [s for s, h in self.hints.items() if h in (0, 1) and s not in self.replacements]

    def oblivious_check(self, cond: sympy.Basic, decided: bool | None,
                         decide: Callable[[dict[sympy.Symbol, tuple[float, float]]], bool | None]) -> bool | None:
        """`decided`, reached with the size-oblivious symbols of `cond` in [2, inf) (torch's
        guard_size_oblivious): where `decide` over their ranges relaxed to [1, inf) does not reach
        it too, the decision needs them >= 2 (a broadcast, a squeeze, a branch on `s > 1`), so they
        leave the oblivious set and their guard says so. Elsewhere size 1 shares the entry."""
        if decided is None or not self.oblivious:
            return decided
        syms = sympy.sympify(cond).free_symbols & self.oblivious
        if not syms:
            return decided
        relaxed = dict(self.ranges)
        for sym in syms:
            lo, hi = self.ranges[sym]
            if lo == 2:  # NOTE: a higher bound came from a guard, which already excludes 1
                relaxed[sym] = (1, hi)
        if decide(relaxed) != decided:
            for sym in sorted(syms, key=lambda s: s.name):
                self.needs_two(sym, f"{cond} decided as {decided}")
        return decided

    def needs_two(self, sym: sympy.Symbol, why: str) -> None:
        """A decision holds only for `sym >= 2`: its binding guard checks that (a size of 1 recompiles)."""
        if sym not in self.oblivious:
            return
        self.oblivious.discard(sym)
        self.events.append(f"{', '.join(map(str, self.origins[sym]))} >= 2 needed: {why}")
        if self.validator is not None:
            self.validator.assume(sympy.Ge(sym, 2), None, f"{sym} >= 2 ({why})", given=True)

    def create_unbacked(self, lo: float, hi: float, why: str) -> sympy.Symbol:
        """A fresh symbol for a size or value only the data decides (`nonzero`, `.item()`): a
        range and no hint; Python reading it breaks the graph."""
        sym = sympy.Symbol(f"u{len(self.unbacked)}", integer=True)
        self.unbacked[sym] = why
        self.ranges[sym] = (lo, hi)
        self.origins[sym] = []
        self.events.append(f"{sym} = {why}, in [{lo}, {hi}]")
        if self.validator is not None:
            self.validator.on_symbol(sym, lo, hi, f"{sym} ({why})", given=True)
        return sym

    def unbacked_in(self, expr: Any) -> list[sympy.Symbol]:
        """The unbacked symbols `expr` still depends on."""
        if not self.unbacked or not isinstance(expr, sympy.Basic):
            return []
        return sorted(self.simplify(expr).free_symbols & self.unbacked.keys(), key=lambda s: s.name)

    def fake_value(self, expr: sympy.Basic) -> Any:
        """`expr` for the fake run: hints for backed symbols, torch's SymInts for unbacked ones."""
        return evaluate(self.simplify(sympy.sympify(expr)), {**self.hints, **self.vehicles})

    def known(self, cond: sympy.Basic) -> bool | None:
        """The truth of `cond` for every value the ranges allow, or None (`size_bounds.decide`:
        interval arithmetic after shifting each symbol by its range's bound; no sympy assumptions)."""
        cond = self.simplify(cond)
        return self.oblivious_check(cond, self._known_in(cond, self.ranges),
                                     lambda ranges: self._known_in(cond, ranges))

    def _known_in(self, cond: sympy.Basic, ranges: dict[sympy.Symbol, tuple[float, float]]) -> bool | None:
        if isinstance(cond, sympy.logic.boolalg.BooleanAtom):
            return bool(cond)
        if isinstance(cond, (sympy.And, sympy.Or, sympy.Not)):
            parts = [self._known_in(a, ranges) for a in cond.args]
            if isinstance(cond, sympy.Not):
                return None if parts[0] is None else not parts[0]
            if isinstance(cond, sympy.And):
                return False if False in parts else (True if all(p is True for p in parts) else None)
            return True if True in parts else (False if all(p is False for p in parts) else None)
        if type(cond) not in size_bounds.RELATIONS:
            return None
        diff = cond.lhs - cond.rhs
        decided = size_bounds.decide(type(cond), diff, ranges)   # interval arithmetic: sound, fast
        if decided is not None:
            return decided
        return True if self._holds_at_upper_bounds(type(cond), size_arith.expand(diff), ranges) else None

    def bound_above(self, sym: sympy.Symbol, bound: sympy.Expr) -> None:
        """`sym <= bound` by construction (a count never exceeds the numel counted): no assert."""
        self.upper_bounds[sym] = bound
        if self.validator is not None:
            self.validator.assume(sympy.Le(sym, bound), None, f"{sym} counts at most {bound} elements", given=True)

    def _holds_at_upper_bounds(self, kind: type, diff: sympy.Expr,
                               ranges: dict[sympy.Symbol, tuple[float, float]]) -> bool:
        """`diff <= 0` (or `>= 0`) at its worst: each bounded symbol, linear in `diff` with the sign
        that makes its bound the worst case, put at that bound. Only ever concludes True."""
        rising = kind in (sympy.Le, sympy.Lt)
        worst = diff
        for sym in diff.free_symbols & self.upper_bounds.keys():
            coeff = worst.coeff(sym)
            if not coeff.is_number or coeff == 0 or sym in (worst - coeff * sym).free_symbols \
                    or (coeff > 0) != rising:
                return False
            worst = size_arith.expand(substitute(worst, {sym: self.upper_bounds[sym]}))
        return worst is not diff and self._known_in(kind(worst, 0), ranges) is True

    def assume(self, fact: sympy.Basic, loc: SourceLoc | None, error: type[Exception], message: str) -> None:
        """Take `fact` (over unbacked symbols) as true for the rest of the trace and have the
        compiled code check it: failing, it raises `error(message)` as eager would there."""
        fact = sympy.sympify(fact)
        if self.known(fact) is True and steps.take("assert", fact, "dropped (the ranges imply it)", loc):
            if self.validator is not None:
                self.validator.check_implied("a runtime assert dropped as known", fact, loc)
            return
        self.runtime_asserts.append(RuntimeAssert(fact, loc, error, message))
        if self.validator is not None:
            self.validator.assume(fact, loc, f"the runtime assert {fact}")
        self.events.append(f"runtime assert {fact} ({message})" + (f" at {loc}" if loc else ""))
        for part in fact.args if isinstance(fact, sympy.And) else (fact,):  # each conjunct holds
            self._take(part)

    def _take(self, fact: sympy.Basic) -> None:
        """Use an assumed fact: an unbacked symbol equal to an expression is replaced by it; a
        bound refines its range."""
        simple = symbol_first(self.simplify(fact))
        if isinstance(simple, sympy.Eq):
            lhs, rhs = simple.args
            if rhs in self.unbacked and lhs not in self.unbacked:
                lhs, rhs = rhs, lhs
            if lhs in self.unbacked and lhs not in rhs.free_symbols \
                    and steps.take("replacement", lhs, rhs, None):  # u0 == s1: u0 is s1 from now on
                self.replacements[lhs] = rhs
                self._normalize()
                self._bool_cache.clear()
                return
        self._refine_range(simple)

    def simplify(self, expr: sympy.Basic) -> sympy.Basic:
        """`expr` with unified and pinned symbols replaced (comparisons of numbers decided)."""
        if not self.replacements or not isinstance(expr, sympy.Basic) or not expr.free_symbols:
            return expr
        out = substitute(expr, self.replacements)
        if self.validator is not None:
            self.validator.check_equal("a simplification (substituting pinned and unified sizes)", expr, out)
        return out

    def hint(self, expr: sympy.Basic) -> int | float | bool:
        """The value of `expr` in this call; one that depends on tensor data has none (a read of it
        breaks the graph)."""
        expr = sympy.sympify(expr)
        if self.unbacked and expr.free_symbols & self.unbacked.keys():
            expr = self.simplify(expr)
            missing = self.unbacked_in(expr)
            if missing:
                raise DataDependentRead(f"Python needs the value of {expr}, which depends on tensor data "
                                        f"({'; '.join(f'{u} = {self.unbacked[u]}' for u in missing)})")
        return evaluate(expr, self.hints)

    def free(self, expr: sympy.Basic) -> list[sympy.Symbol]:
        return sorted(self.simplify(expr).free_symbols, key=lambda s: s.name)

    # -- reads -----------------------------------------------------------------------------------
    def specialize(self, expr: sympy.Basic, loc: SourceLoc | None, why: str) -> int | float:
        """A value read: pin every symbol in `expr` to its hint and return the value."""
        value = self.hint(expr)
        for sym in self.free(expr):
            origin = self.origins[sym][0]
            if self.policy.on_value_read(origin) == "break":
                raise Unsupported(
                    "dynamic_size_read", f"Python needs the value of {origin}, which has changed between "
                    f"compiles ({why})", hint="keep the size in tensor ops, or pass it as a tensor", loc=loc)
            self._pin(sym, self.hints[sym], loc, why)
        return value

    def _pin(self, sym: sympy.Symbol, value: int, loc: SourceLoc | None, why: str, by_value_read: bool = True) -> None:
        if self.validator is not None:
            self.validator.assume(sympy.Eq(sym, value, evaluate=False), loc, f"{sym} == {value} ({why})")
        self.specialized[sym] = Specialization(value, loc, why, by_value_read)
        self.replacements[sym] = sympy.Integer(value)
        self._normalize()
        self.events.append(f"{', '.join(map(str, self.origins[sym]))} specialized to {value} by {why}"
                           + (f" at {loc}" if loc else ""))

    def evaluate_bool(self, expr: sympy.Basic, loc: SourceLoc | None, why: str = "a comparison") -> bool:
        """A bool read: the truth of `expr` in this call, with the guard that keeps it true."""
        expr = self.simplify(expr)
        if isinstance(expr, sympy.logic.boolalg.BooleanAtom):
            return bool(expr)
        if isinstance(expr, sympy.Rel) and expr.lhs == expr.rhs:
            return isinstance(expr, (sympy.Eq, sympy.Ge, sympy.Le))
        decided = self._decide_from_ranges(expr)
        if decided is None and self.unbacked_in(expr):
            decided = self.known(expr)
            if decided is None:
                self.hint(expr)  # raises DataDependentRead, naming the symbols
        if decided is not None and not steps.take("decision", expr, sympy.true if decided else sympy.false, loc):
            decided = None   # undone: guarded like any other comparison (an unbacked one breaks the graph)
        if decided is not None:
            if self.validator is not None:
                self.validator.check_implied(f"{why} decided without a guard", expr if decided else sympy.Not(expr),
                                             loc)
            return bool(decided)
        if expr in self._bool_cache:
            return self._bool_cache[expr]
        value = self.hint(expr)
        syms = self.free(expr)
        if any(self.policy.on_bool_read(self.origins[s][0]) == "specialize" for s in syms):
            self.specialize(expr, loc, why)
            return bool(value)
        fact = expr if value else sympy.Not(expr)
        self._record(fact, loc, why)
        self._bool_cache[expr] = bool(value)
        return bool(value)

    def _record(self, fact: sympy.Basic, loc: SourceLoc | None, why: str) -> None:
        """Keep `fact` as a guard; an equality with a constant pins the symbol (a static dim)."""
        if isinstance(fact, sympy.Eq):
            lhs, rhs = fact.args
            if isinstance(rhs, sympy.Symbol) and not isinstance(lhs, sympy.Symbol):
                lhs, rhs = rhs, lhs
            if isinstance(lhs, sympy.Symbol) and rhs.is_Integer and steps.take("replacement", lhs, rhs, loc):
                self._pin(lhs, int(rhs), loc, why, by_value_read=False)
                return
            if isinstance(lhs, sympy.Symbol) and isinstance(rhs, sympy.Symbol) \
                    and steps.take("replacement", lhs, rhs, loc):
                self._unify(lhs, rhs, loc)
                return
        if steps.ACTIVE is not None and self._guard_undone(fact, loc, why):
            return
        self.guards.append(ShapeGuard(fact, loc))
        if self.validator is not None:
            self.validator.assume(fact, loc, f"the guard {fact} ({why})")
        self._refine_range(fact)

    def _guard_undone(self, fact: sympy.Basic, loc: SourceLoc | None, why: str) -> bool:
        """Under bisect, a guard step it undoes: the sizes the fact reads are pinned instead (sound,
        less general). Not for a fact over data-dependent sizes (no value to pin)."""
        syms = self.free(fact)
        if not all(s in self.hints for s in syms) or steps.take("guard", fact, "guarded", loc):
            return False
        for sym in syms:
            self._pin(sym, self.hints[sym], loc, f"{why} (a guard bisect undid)", by_value_read=False)
        return True

    def guard_equal(self, a: Expr, b: Expr, loc: SourceLoc | None) -> Expr:
        """An op assumed `a == b` (a broadcast, a matmul's inner dim): guard it, return one size."""
        a, b = self.simplify(a), self.simplify(b)
        if a == b:
            return a
        if not self.evaluate_bool(sympy.Eq(a, b, evaluate=False), loc, "an op that needs equal sizes"):
            raise AssertionError(f"guard_equal({a}, {b}) is false in this call")
        return self.simplify(a)

    def _unify(self, keep: sympy.Symbol, drop: sympy.Symbol, loc: SourceLoc | None) -> None:
        if keep.name > drop.name:
            keep, drop = drop, keep
        if self.validator is not None:
            self.validator.assume(sympy.Eq(keep, drop, evaluate=False), loc, f"{keep} == {drop} (an equality that held)")
        self.replacements[drop] = keep
        self.unified.add(drop)
        self.origins[keep] += self.origins[drop]
        lo1, hi1 = self.ranges[keep]
        lo2, hi2 = self.ranges[drop]
        self.ranges[keep] = (max(lo1, lo2), min(hi1, hi2))
        for one, other in ((keep, drop), (drop, keep)):  # a size bound to be >= 2 binds its equal too
            if self.initial_range(other)[0] >= 2:
                self.needs_two(one, f"equal to {other}")
        self._normalize()
        self.events.append(f"{self.origins[drop][0]} == {self.origins[keep][0]} (assumed at {loc})")

    def _normalize(self) -> None:
        for sym, target in list(self.replacements.items()):
            self.replacements[sym] = substitute(target, self.replacements) if target.free_symbols else target

    def _decide_from_ranges(self, expr: sympy.Basic) -> bool | None:
        """Comparisons of one symbol with a constant that its range already settles (s0 >= 2)."""
        return self.oblivious_check(expr, _decide_in(expr, self.ranges), lambda ranges: _decide_in(expr, ranges))

    def _refine_range(self, fact: sympy.Basic) -> None:
        fact = symbol_first(fact)
        if not isinstance(fact, sympy.Rel) or not isinstance(fact.lhs, sympy.Symbol) or not fact.rhs.is_Integer \
                or fact.lhs not in self.ranges:
            return
        lo, hi = self.ranges[fact.lhs]
        c = int(fact.rhs)
        if isinstance(fact, sympy.Ge):
            lo = max(lo, c)
        elif isinstance(fact, sympy.Gt):
            lo = max(lo, c + 1)
        elif isinstance(fact, sympy.Le):
            hi = min(hi, c)
        elif isinstance(fact, sympy.Lt):
            hi = min(hi, c - 1)
        if (lo, hi) != self.ranges[fact.lhs] \
                and not steps.take("refinement", f"{fact.lhs} in {list(self.ranges[fact.lhs])}", f"[{lo}, {hi}]", None):
            return
        if self.validator is not None:
            claim_lo = 1 if fact.lhs in self.oblivious and lo == 2 else lo   # its guard admits 1
            self.validator.check_implied(f"a range refinement from {fact}", validation.range_claim(fact.lhs, claim_lo, hi))
        self.ranges[fact.lhs] = (lo, hi)

    # -- what the guard function checks ----------------------------------------------------------
    def live_symbols(self) -> list[sympy.Symbol]:
        """Symbols still free (not pinned, not unified into another), in creation order."""
        return [s for s in self.hints if s not in self.replacements]

    def all_origins(self) -> Iterable[tuple[SizeSource, sympy.Basic]]:
        """Every read dimension and what it must equal: a live symbol, or a pinned integer."""
        for sym, origins in self.origins.items():
            if sym in self.unified:
                continue  # unified: its origins were moved to the symbol it equals
            for origin in origins:
                yield origin, self.simplify(sym)


_FLIPPED = {sympy.Lt: sympy.Gt, sympy.Gt: sympy.Lt, sympy.Le: sympy.Ge, sympy.Ge: sympy.Le,
            sympy.Eq: sympy.Eq, sympy.Ne: sympy.Ne}


def symbol_first(expr: sympy.Basic) -> sympy.Basic:
    """`1 < s0` as `s0 > 1`: the form the range reasoning reads."""
    if isinstance(expr, sympy.Rel) and expr.lhs.is_Number and isinstance(expr.rhs, sympy.Symbol):
        return _FLIPPED[type(expr)](expr.rhs, expr.lhs, evaluate=False)
    return expr


def _decide_in(expr: sympy.Basic, ranges: dict[sympy.Symbol, tuple[float, float]]) -> bool | None:
    """Comparisons of one symbol with a constant that `ranges` settle."""
    expr = symbol_first(expr)
    if not isinstance(expr, sympy.Rel) or not isinstance(expr.lhs, sympy.Symbol) or not expr.rhs.is_Number:
        return None
    lo, hi = ranges.get(expr.lhs, (-INF, INF))
    c = float(expr.rhs)
    checks = {
        sympy.Ge: ((lo >= c), (hi < c)), sympy.Gt: ((lo > c), (hi <= c)),
        sympy.Le: ((hi <= c), (lo > c)), sympy.Lt: ((hi < c), (lo >= c)),
        sympy.Eq: (False, (c < lo or c > hi)), sympy.Ne: ((c < lo or c > hi), False),
    }.get(type(expr))
    if checks is None:
        return None
    if checks[0]:
        return True
    if checks[1]:
        return False
    return None
