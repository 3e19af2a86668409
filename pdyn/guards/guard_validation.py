"""The size guards an entry checks, as facts over the sizes the user passes, for translation
validation: do they (with the runtime asserts) imply every fact the trace relied on?"""

from __future__ import annotations

import math
from typing import Iterable

import sympy

from pdyn.guards.guards import Guard
from pdyn.guards.shape_guards import ExprGuard, SameSizeGuard, StaticDimGuard, SymbolGuard
from pdyn.shapes.shape_env import ShapeEnv
from pdyn.sources import SizeSource


def guard_facts(guards: Iterable[Guard]) -> list[sympy.Basic]:
    """Each size guard as a fact: a read dim is the symbol `L['x'].size(0)`; a bound name (`s0`) is
    its own symbol, tied to the dim that binds it."""
    out: list[sympy.Basic] = []
    for g in guards:
        if not isinstance(g, (SymbolGuard, StaticDimGuard, SameSizeGuard, ExprGuard)):
            continue
        if isinstance(g, ExprGuard):
            out.append(g.expr)
            continue
        read = sympy.Symbol(str(SizeSource(g.source, g.dim)), integer=True)
        if isinstance(g, StaticDimGuard):
            out.append(sympy.Eq(read, g.value, evaluate=False))
            continue
        name = sympy.Symbol(g.name, integer=True)
        out.append(sympy.Eq(read, name, evaluate=False))
        if isinstance(g, SymbolGuard):
            if g.low > -math.inf:
                out.append(sympy.Ge(name, int(g.low), evaluate=False))
            if g.high < math.inf:
                out.append(sympy.Le(name, int(g.high), evaluate=False))
    return out


def validate_guards(env: ShapeEnv, guards: list[Guard]) -> None:
    """Raise ValidationError naming a fact of the trace that the guards and asserts do not imply."""
    env.validator.check_guard_set(guard_facts(guards), [a.expr for a in env.runtime_asserts])
