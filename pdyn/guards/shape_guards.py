"""Guards on sizes: binding each symbol once, pinned (TENSOR_MATCH_STATIC) dims, dims assumed
equal to a symbol, and boolean expressions over symbols. Built from a finished ShapeEnv.

Symbols are bound in the guard function with `:=`, so later checks and expressions read them as
plain names (`s0`, `s1`), as DESIGN.md's example shows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import sympy

from pdyn.base.errors import SourceLoc
from pdyn.guards.guards import Guard, Hoist
from pdyn.sources import SizeSource
from pdyn.shapes.shape_env import ShapeEnv, to_python

INF = math.inf


def _read(v: str, dim: int | None) -> str:
    return f"{v}.shape[{dim}]" if dim is not None else v  # .shape[i] reads faster than .size(i)


@dataclass(frozen=True, eq=False)
class SymbolGuard(Guard):
    """Binds symbol `name` to a dim (or an int input) and checks its value range (`s0 >= 2`)."""

    dim: int | None = None
    name: str = ""
    low: float = 2
    high: float = INF

    def key(self) -> tuple[Any, ...]:
        return (type(self), self.name)

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        bind = f"({self.name} := {_read(v, self.dim)})"
        if self.high == INF:
            return f"{bind} < {int(self.low)}"
        if self.low == -INF:
            return f"{bind} > {int(self.high)}"
        return f"not {int(self.low)} <= {bind} <= {int(self.high)}"

    def sentence(self) -> str:
        what = SizeSource(self.source, self.dim).expr()  # type: ignore[arg-type]
        low = "" if self.low == -INF else f"{int(self.low)} <= "
        high = "" if self.high == INF else f" <= {int(self.high)}"
        return f"{low}{what}{high}"


@dataclass(frozen=True, eq=False)
class StaticDimGuard(Guard):
    """TENSOR_MATCH_STATIC on one dim (or an int input pinned to its value)."""

    dim: int | None = None
    value: int = 0

    def key(self) -> tuple[Any, ...]:
        return (type(self), self.source, self.dim)

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return f"{_read(v, self.dim)} != {self.value}"

    def sentence(self) -> str:
        return f"{SizeSource(self.source, self.dim).expr()} == {self.value}"  # type: ignore[arg-type]


@dataclass(frozen=True, eq=False)
class SameSizeGuard(Guard):
    """A dim an op assumed equal to an already bound symbol (a broadcast, a matmul)."""

    dim: int | None = None
    name: str = ""
    equals: str = ""   # the first origin of the symbol, for the sentence

    def key(self) -> tuple[Any, ...]:
        return (type(self), self.source, self.dim)

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return f"{_read(v, self.dim)} != {self.name}"

    def sentence(self) -> str:
        return f"{SizeSource(self.source, self.dim).expr()} == {self.equals}"  # type: ignore[arg-type]


@dataclass(frozen=True, eq=False)
class ExprGuard(Guard):
    """A boolean expression over bound symbols that Python's control flow relied on."""

    expr: sympy.Basic = sympy.true
    text: str = ""   # the expression with sources for symbols, for the sentence

    def key(self) -> tuple[Any, ...]:
        return (type(self), self.expr)

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        code = to_python(self.expr)
        if "math." in code:
            code = code.replace("math.", hoist(math, "math") + ".")
        return f"not ({code})"

    def sentence(self) -> str:
        return self.text


def shape_guards(env: ShapeEnv) -> list[Guard]:
    """Every size guard of a finished trace, in an order where each symbol is bound before use."""
    out: list[Guard] = []
    names = {origin: sym for origin, sym in env.all_origins()}
    bound: dict[sympy.Symbol, SizeSource] = {}
    pinned_at = _pin_locs(env)
    for origin, expr in env.all_origins():
        loc = pinned_at.get(origin)
        if expr.is_Integer:
            out.append(StaticDimGuard(origin.base, dim=origin.dim, value=int(expr), loc=loc))
        elif expr in bound:
            out.append(SameSizeGuard(origin.base, dim=origin.dim, name=expr.name, equals=bound[expr].expr(), loc=loc))
        else:  # the range every symbol starts with; refinements are the expression guards below
            low, high = env.initial_range(expr)
            out.append(SymbolGuard(origin.base, dim=origin.dim, name=expr.name, low=low, high=high, loc=loc))
            bound[expr] = origin
    by_symbol = {sym: origin for origin, sym in names.items() if isinstance(sym, sympy.Symbol)}
    for guard in env.guards:
        expr = env.simplify(guard.expr)
        if isinstance(expr, sympy.logic.boolalg.BooleanAtom):
            continue
        text = to_python(expr)
        for sym in sorted(expr.free_symbols, key=lambda s: -len(s.name)):
            text = text.replace(sym.name, by_symbol[sym].expr()) if sym in by_symbol else text
        out.append(ExprGuard(None, expr=expr, text=text, loc=guard.loc))
    return out


def _pin_locs(env: ShapeEnv) -> dict[SizeSource, SourceLoc | None]:
    """Each read size of a pinned symbol -> where it was pinned (one pass: a search per origin was
    quadratic in the number of sizes read)."""
    out: dict[SizeSource, SourceLoc | None] = {}
    for sym, origins in env.origins.items():
        if sym in env.specialized:
            for origin in origins:
                out.setdefault(origin, env.specialized[sym].loc)
    return out
